// Lookups in the third of three hash_trie_map types a thread uses in the
// default domain (bench/results/shared_trie_guards/README.md).
#include <lfcore/hash_trie_map.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>
template <class Map>
double ns_per_find(Map& m, long n) {
  std::vector<double> t;
  long sink = 0;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long k = 0; k < n; ++k) sink += m.contains(static_cast<typename Map::key_type>(k));
    t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
  }
  if (sink == 42) std::puts("");
  std::sort(t.begin(), t.end());
  return t[3];
}
int main() {
  constexpr long n = 4096;
  lfcore::hash_trie_map<long, long> a;
  lfcore::hash_trie_map<long, int> b;
  lfcore::hash_trie_map<int, int> c;
  for (long k = 0; k < n; ++k) {
    a.try_emplace(k, k);
    b.try_emplace(k, 1);
    c.try_emplace(static_cast<int>(k), 1);
  }
  const double first = ns_per_find(a, n), second = ns_per_find(b, n), third = ns_per_find(c, n);
  std::printf("find, 4096 keys: first map type %.1f ns, second %.1f ns, third %.1f ns\n", first, second, third);
}
