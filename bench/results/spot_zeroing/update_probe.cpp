// bench/results/spot_zeroing/update_probe.cpp - what one thread's updates of
// present keys cost: an erase and an insert again of the same key, an insert
// of a present key (try_emplace_and_visit, as the scalability runner inserts),
// and a lookup (contains), in ns per operation, each over the same random
// sequence of the map's own keys. Pinned to CPU 0.
//
//   g++ -O3 -DNDEBUG -mcx16 -std=c++20 -Iinclude -Ibuild/release/include
//       bench/results/spot_zeroing/update_probe.cpp -o update_probe
//       build/release/liblfcore.a -lpthread          (one command)
//   ./update_probe [keys = 4096] [operations = 4000000]
// prints: erase+insert ns, present insert ns, contains ns, a checksum.
#include <lfcore/hash_trie_map.hpp>

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  using u64 = std::uint64_t;
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
  const u64 ops = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4000000;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
  lfcore::hash_trie_map<u64, u64> m(lfcore::hash_trie_config::for_expected_size(n));
  std::vector<u64> keys(n);
  std::mt19937_64 rng(7);
  for (u64& k : keys) {
    k = rng();
    m.insert({k, k});
  }
  std::vector<u64> order(ops);
  for (u64& k : order) k = keys[rng() % n];
  const auto keep = [](const auto&, bool) {};
  u64 sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (u64 k : order) {
    sum += m.erase(k);
    sum += m.try_emplace_and_visit(k, keep, k);
  }
  const auto t1 = std::chrono::steady_clock::now();
  for (u64 k : order) sum += m.try_emplace_and_visit(k, keep, k);
  const auto t2 = std::chrono::steady_clock::now();
  for (u64 k : order) sum += m.contains(k);
  const auto t3 = std::chrono::steady_clock::now();
  const auto ns = [&](auto a, auto b) {
    return std::chrono::duration<double, std::nano>(b - a).count() / static_cast<double>(ops);
  };
  std::printf("%.1f %.1f %.1f %llu\n", ns(t0, t1), ns(t1, t2), ns(t2, t3),
              static_cast<unsigned long long>(sum));
}
