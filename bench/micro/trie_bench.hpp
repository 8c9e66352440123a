// bench/micro/trie_bench.hpp - what the trie micro-benchmarks share: their
// keys, the heap they measure, the median of their rounds.
#pragma once

#include <lfcore/hash_trie_map.hpp>

#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trie_bench {

using u64 = std::uint64_t;

/// Bytes glibc's main arena and its mmapped blocks hold now (mallinfo2).
inline double heap_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
}

/// Key i: distinct for distinct i (mix_hash is a bijection), spread over the root.
inline u64 key(u64 i) {
  return lfcore::detail::mix_hash(i + 1);
}

/// The median of a round's values (the upper one of an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace trie_bench
