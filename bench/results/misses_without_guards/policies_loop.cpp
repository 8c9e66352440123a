// One thread, a sized map of n odd keys, visit() of every key in a shuffled
// order (hits; with MISS set in the environment, of n random even keys:
// misses): ns per lookup under hazard pointers, urcu::memb and urcu::qsbr,
// median of `rounds` passes, each policy twice. (Misses added for
// ../root_peek_rcu/; hits run as before.)
// g++ -O2 -std=c++20 -DNDEBUG -I<include> -I<integrations/urcu/include> policies_loop.cpp \
//     build/release/liblfcore.a -lurcu-memb -lurcu-qsbr -lurcu-common -lpthread
#define _LGPL_SOURCE
#include <lfcore/urcu.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
using u64 = std::uint64_t;
template <class Map>
void bench(const char* name, std::size_t n, int rounds) {
  std::mt19937_64 rng(42);
  std::vector<u64> keys(n);
  for (auto& k : keys) k = rng() | 1;
  Map m(lfcore::hash_trie_config::for_expected_size(n));
  for (auto k : keys) m.try_emplace(k, k + 1);
  std::vector<u64> hits = keys;
  std::shuffle(hits.begin(), hits.end(), rng);
  if (std::getenv("MISS")) for (auto& k : hits) k = rng() & ~u64(1); // odd keys only were inserted
  std::vector<double> r;
  u64 sink = 0;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    for (u64 k : hits) { u64 v = 0; m.visit(k, [&](const auto& e) { v = e.second; }); sink += v; }
    auto t1 = std::chrono::steady_clock::now();
    r.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(r.begin(), r.end());
  std::printf("%-6s visit %s: median %.1f ns (min %.1f max %.1f) %llu\n", name, std::getenv("MISS") ? "miss" : "hit", r[r.size()/2], r.front(), r.back(), (unsigned long long)(sink & 1));
}
int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  urcu_qsbr_register_thread();
  for (int i = 0; i < 2; ++i) {
    bench<lfcore::hash_trie_map<u64, u64>>("hp", n, rounds);
    bench<lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>, std::allocator<std::pair<const u64, u64>>, lfcore::urcu::memb>>("memb", n, rounds);
    bench<lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>, std::allocator<std::pair<const u64, u64>>, lfcore::urcu::qsbr>>("qsbr", n, rounds);
  }
  urcu_qsbr_unregister_thread();
}
