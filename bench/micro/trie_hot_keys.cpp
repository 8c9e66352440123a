// bench/micro/trie_hot_keys.cpp - what a chain's order and its leaves' places
// cost a hot key.
//
// An insert appends its leaf at the end of the key's chain, so a key that is
// erased and inserted again goes behind every other key of its chain, and a
// lookup of it reads their leaves first. Under a mix that churns its hot keys
// (the runner's zipfian 90/5/5), the hot keys end up behind cold ones.
//
// A map sized for n keys is filled in key order; `hot` keys spread evenly over
// that order (every n/hot-th) are then looked up at random, one thread:
//   before - right after the fill (a hot key anywhere in its chain),
//   churned - after each hot key was erased and inserted again (last in its
//             chain; its leaf now also sits among the other hot leaves),
//   control - after every cold key was erased and inserted again too (hot
//             keys first again, leaves where `churned` had them).
// `churned` over `before` is the order's cost net of what the hot leaves' new
// places gain; `control` has those places without the order's cost, so
// `churned` over `control` is the order's cost alone.
//
// usage: trie_hot_keys [n = 1000000] [hot = 100000] [lookups = 20000000]
// [key set = 0] (key set k uses keys n*k .. n*k + n - 1: another set of chains
// and leaf places); exits 1 if a present key was not found or the map's size
// is not n at the end.
#include "trie_bench.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

using trie_bench::key;
using trie_bench::u64;
using map = lfcore::hash_trie_map<u64, u64>;

// Nanoseconds per lookup of the given keys, in order; false in `found_all` if one was absent.
double lookup_ns(const map& m, const std::vector<u64>& keys, bool& found_all) {
  u64 found = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const u64 k : keys) found += m.contains(k);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  found_all = found_all && found == keys.size();
  return took.count() / static_cast<double>(keys.size());
}

u64 key_set = 0;
u64 nth_key(u64 i, u64 n) {
  return key(key_set * n + i);
}

void reinsert(map& m, u64 i, u64 n) {
  m.erase(nth_key(i, n));
  m.insert({nth_key(i, n), i});
}

} // namespace

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const u64 hot = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
  const u64 lookups = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20000000;
  key_set = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 0;
  if (hot == 0 || hot > n || lookups == 0) {
    std::fprintf(stderr, "usage: trie_hot_keys [n] [hot <= n, > 0] [lookups > 0] [key set]\n");
    return 2;
  }
  const u64 stride = n / hot;
  std::mt19937_64 rng(2026);
  std::vector<u64> probes(lookups);
  for (u64& k : probes) k = nth_key(rng() % hot * stride, n);

  map m(lfcore::hash_trie_config::for_expected_size(n));
  for (u64 i = 0; i < n; ++i) m.insert({nth_key(i, n), i});
  bool found_all = true;
  const double before = lookup_ns(m, probes, found_all);
  for (u64 j = 0; j < hot; ++j) reinsert(m, j * stride, n);
  const double churned = lookup_ns(m, probes, found_all);
  for (u64 i = 0; i < n; ++i)
    if (i % stride != 0 || i / stride >= hot) reinsert(m, i, n);
  const double control = lookup_ns(m, probes, found_all);
  found_all = found_all && m.size() == n; // nothing lost or doubled by the re-inserts

  std::printf(
      "n %llu, hot %llu, key set %llu: ns per hot lookup: before %.1f, churned %.1f (%.2fx), "
      "control %.1f (%.2fx)\n",
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(hot),
      static_cast<unsigned long long>(key_set), before, churned, churned / before, control,
      control / before);
  if (!found_all) std::fprintf(stderr, "a present key was not found, or the size is not n\n");
  return found_all ? 0 : 1;
}
