// Times atom_table::intern of new and of present texts, one thread
// (bench/results/try_emplace_and_visit/README.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <lfcore/atom_table.hpp>
#include <random>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 100000;
  std::mt19937_64 rng(1);
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < n; ++i) {
    std::string s(5 + rng() % 16, 'a');
    for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
    texts.push_back(s + std::to_string(i));
  }
  std::vector<double> hits, misses;
  for (int round = 0; round < 7; ++round) {
    lfcore::atom_table t(n);
    auto t0 = std::chrono::steady_clock::now();
    std::uintptr_t sink = 0;
    for (auto& s : texts) sink += t.intern(s).bits();
    auto t1 = std::chrono::steady_clock::now();
    for (int pass = 0; pass < 5; ++pass)
      for (auto& s : texts) sink += t.intern(s).bits();
    auto t2 = std::chrono::steady_clock::now();
    misses.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    hits.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count() / (5.0 * n));
    if (sink == 42) std::puts("");
  }
  std::sort(hits.begin(), hits.end());
  std::sort(misses.begin(), misses.end());
  std::printf("insert %.1f ns  hit %.1f ns (medians of 7)\n", misses[3], hits[3]);
}
