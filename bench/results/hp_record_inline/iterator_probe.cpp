// bench/results/hp_record_inline/iterator_probe.cpp - what one thread pays
// for the lookups that hand out an iterator (find, insert of a present key:
// each takes a hazard pointer for the iterator and gives it back) against
// one that does not (contains), in ns per operation over the same random
// sequence of the map's own keys, after one warm-up pass. Pinned to CPU 0.
//
//   g++ -O3 -DNDEBUG -mcx16 -std=c++20 -Iinclude -Ibuild/release/include
//       bench/results/hp_record_inline/iterator_probe.cpp -o iterator_probe
//       build/release/liblfcore.a -lpthread          (one command)
//   ./iterator_probe [keys = 4096] [operations = 4000000]
// prints: find ns, present insert ns, contains ns, a checksum.
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
  u64 sum = 0;
  for (u64 k : order) sum += m.contains(k); // warm-up
  const auto t0 = std::chrono::steady_clock::now();
  for (u64 k : order) sum += m.find(k)->second;
  const auto t1 = std::chrono::steady_clock::now();
  for (u64 k : order) sum += m.insert({k, k}).first->second;
  const auto t2 = std::chrono::steady_clock::now();
  for (u64 k : order) sum += m.contains(k);
  const auto t3 = std::chrono::steady_clock::now();
  const auto ns = [&](auto a, auto b) {
    return std::chrono::duration<double, std::nano>(b - a).count() / static_cast<double>(ops);
  };
  std::printf("%.1f %.1f %.1f %llu\n", ns(t0, t1), ns(t1, t2), ns(t2, t3),
              static_cast<unsigned long long>(sum));
}
