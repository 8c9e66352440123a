// Times hash_trie_map inserts through insert() or try_emplace_and_visit(), one thread
// (bench/results/try_emplace_and_visit/README.md).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <lfcore/hash_trie_map.hpp>
#include <random>
#include <string>
#include <vector>
using u64 = std::uint64_t;
int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  const bool visit = argc > 2 && argv[2][0] == 'v';
  std::mt19937_64 rng(1);
  std::vector<u64> keys(n);
  for (auto& k : keys) k = rng();
  std::vector<double> ins, present;
  for (int round = 0; round < 7; ++round) {
    lfcore::hash_trie_map<u64, u64> m(lfcore::hash_trie_config::for_expected_size(n));
    u64 sink = 0;
    auto put = [&](u64 k) {
      if (visit)
        sink += m.try_emplace_and_visit(
            k, [](const auto&, bool) {}, k);
      else
        sink += m.insert({k, k}).second;
    };
    auto t0 = std::chrono::steady_clock::now();
    for (u64 k : keys) put(k);
    auto t1 = std::chrono::steady_clock::now();
    for (u64 k : keys) put(k);
    auto t2 = std::chrono::steady_clock::now();
    ins.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    present.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
    if (sink == 42) std::puts("");
  }
  std::sort(ins.begin(), ins.end());
  std::sort(present.begin(), present.end());
  std::printf("%s insert-new %.1f ns  insert-present %.1f ns\n",
              visit ? "try_emplace_and_visit" : "insert               ", ins[3], present[3]);
}
