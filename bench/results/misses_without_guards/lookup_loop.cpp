// One thread, a sized map of n keys: ns per visit() of present keys, of absent
// keys, and of a random half-and-half sequence; 5 passes each, medians.
#include <lfcore/hash_trie_map.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
using u64 = std::uint64_t;
int main(int argc, char** argv) {
  std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::mt19937_64 rng(42);
  std::vector<u64> keys(n);
  for (auto& k : keys) k = rng() | 1;
  lfcore::hash_trie_map<u64, u64> m(lfcore::hash_trie_config::for_expected_size(n));
  for (auto k : keys) m.try_emplace(k, k + 1);
  std::vector<u64> hits = keys, misses(n), half(n);
  std::shuffle(hits.begin(), hits.end(), rng);
  for (auto& k : misses) k = rng() | 1;
  for (std::size_t i = 0; i < n; ++i) half[i] = (rng() & 1) ? hits[i] : misses[i];
  u64 sink = 0;
  auto pass = [&](const std::vector<u64>& q) {
    auto t0 = std::chrono::steady_clock::now();
    for (u64 k : q) { u64 v = 0; m.visit(k, [&](const auto& e) { v = e.second; }); sink += v; }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
  };
  const char* names[3] = {"hit", "miss", "half"};
  const std::vector<u64>* qs[3] = {&hits, &misses, &half};
  std::vector<double> r[3];
  for (int i = 0; i < 5; ++i) for (int w = 0; w < 3; ++w) r[w].push_back(pass(*qs[w]));
  for (int w = 0; w < 3; ++w) { std::sort(r[w].begin(), r[w].end()); std::printf("%s %.1f\n", names[w], r[w][2]); }
  return int(sink & 0);
}
