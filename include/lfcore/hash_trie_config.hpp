// lfcore/hash_trie_config.hpp - the shape of a hash_trie_map: root and level
// widths, when a chain closes, and what a sized map changes (the choices and
// their measurements are in each member's comment).
#pragma once

#include "lfcore/config.hpp"

#include <cstddef>

namespace lfcore {

/// Shape of a hash_trie_map; chosen by measurement (bench/results/README.md).
/// Stress builds use the smallest values so that expansions happen constantly.
struct hash_trie_config {
  unsigned root_bits = stress_build ? 1 : 16; ///< the root has 2^root_bits buckets
  unsigned level_bits = stress_build ? 1 : 4; ///< a level just below it, 2^level_bits
  /// Live leaves before a chain closes; inserts that skip the walk (head
  /// inserts, see "Bucket summaries") can take a chain to twice that.
  unsigned chain_threshold = stress_build ? 1 : 4;
  /// Remove a level below the root once its last key is erased (see
  /// "Compression" in the header): an erase that empties a bucket then reads
  /// the level's buckets to see whether all are empty.
  bool compress_empty_levels = true;
  /// Levels further down have 2^deep_level_bits buckets. Such a level opens
  /// where a bucket of the level above it filled, and takes few keys - under
  /// the default root, at 6.8 million keys, 2.5 on average besides the chain
  /// it closed - so 16 buckets there were mostly empty. With 4 buckets, a
  /// map grown to 4e6 keys costs 41.0 instead of 48.3 bytes per key in all,
  /// and an atom table told nothing 47.7 instead of 58.4 bytes per atom,
  /// with lookups as fast (bench/results/README.md, "Narrower deep levels").
  /// Far past that, the narrow levels fill too and add depth: at 16e6 keys
  /// under the 2^16 root hits took 1.3x and misses 1.6x as long as with 16
  /// buckets (for 3 bytes per key less); such a map wants a sized root, or
  /// deep_level_bits = 4.
  /// Last in the struct, so that a config written {r, l, t, c} keeps its meaning.
  unsigned deep_level_bits = stress_build ? 1 : 2;
  /// Let an insert whose key its bucket's summary rules out link at the
  /// chain's head without walking it ("Head inserts" at summary_mask). New
  /// keys then cost no leaf misses, but they sit in front of older ones.
  /// for_expected_size turns it on for a sized root: there a map's inserts
  /// ran 1.30x-1.43x as fast (an atom table's interns 1.13x), its hits,
  /// misses and 90/5/5 mixes, uniform and zipfian, the same within noise
  /// (bench/results/head_insert_sized/). It loses where the oldest keys stay
  /// the most used and new ones are cold: the zipfian mix with popularity in
  /// insertion order (the runner's before it scrambled its ranks) ran 0.79x
  /// at one thread, a cold new key in front of a hot one. Off under the
  /// default root: a map far past it keeps its chains in short levels below,
  /// where a growing atom table gained nothing (bench/results/head_insert/).
  /// No effect where buckets keep no summary (bucket_summaries false).
  bool head_inserts = false;

  /// A root with at least one bucket per expected key (at most 2^max_root_bits
  /// buckets; 2^24, the largest root, is 128 MiB): lookups then mostly read
  /// one bucket and one leaf. The root's size is fixed for the map's life, so
  /// this is the map's `reserve`, and a map that outgrows its root pays on
  /// every lookup (hits at 4e6 keys under the default 2^16 root took 2.2-2.7x
  /// as long as with a sized root: bench/results/trie_growth/). Pass a smaller
  /// max_root_bits to trade lookup speed for memory (at 1e7 keys a cap of 2^22
  /// saved 4.5 bytes per key and cost 41-46% of the hits:
  /// bench/results/README.md). Stress builds keep their tiny shape.
  ///
  /// Such a root also takes head inserts (head_inserts, above) and closes
  /// chains later (sized_chain_threshold): with at
  /// most one expected key per bucket, a chain of 4 is an outlier (Poisson(1):
  /// 2% of the buckets at any moment), and closing it leaves a level under
  /// that bucket until the level's last key goes. Under churn - keys replaced
  /// while their count holds - fresh outliers keep appearing: 30 replacements
  /// of 1e6 keys took a map closing at 4 from 40.9 to 43.2 bytes per key
  /// (to 81 before levels were compressed); closing at 8 (0.001% of the
  /// buckets) kept it at 40.4, lookups the same within noise
  /// (bench/results/trie_churn/report.md). The price is paid by a
  /// map that outgrows n: a lookup reads up to 7 other leaves of the chain
  /// its key is in instead of 3 (4x past n, lookups after churn took 2x as
  /// long - measured before closed chains were hoisted, when it also read
  /// the closed chains above), so overestimate n rather than under. When max_root_bits
  /// leaves fewer buckets than n, chains are long by design and close at 4.
  ///
  /// For memory over speed, ask for half as many buckets: for_expected_size(n / 2)
  /// gives a bucket per two keys, chains twice as long, still closing at 8
  /// (Poisson(2): 0.1% of the buckets reach it). At 1e6 <uint64_t, uint64_t>
  /// keys with leaves from pool_allocator that is 28.4 bytes per key instead
  /// of 32.5 (40.6 with std::allocator), and hits take 1.2x-1.4x as long as
  /// the sized map's, misses 1.6x (one thread, both maps in the same probe;
  /// the runner's figures beside the peers: bench/results/README.md). A
  /// caller that prefetches batches of keys (prefetch(first, last)) hides
  /// most of that: at two threads such a map ran hits, misses and the
  /// uniform 90/5/5 mix 1.02x-1.29x as fast as the fastest peer measured.
  static constexpr unsigned sized_chain_threshold = 8;
  static hash_trie_config for_expected_size(std::size_t n, unsigned max_root_bits = 24) noexcept {
    hash_trie_config c;
    if (stress_build) return c;
    unsigned bits = 4;
    while (bits < max_root_bits && bits < 24 && (std::size_t(1) << bits) < n) ++bits;
    c.root_bits = bits;
    if ((std::size_t(1) << bits) >= n) {
      c.chain_threshold = sized_chain_threshold;
      c.head_inserts = true;
    }
    return c;
  }
};

} // namespace lfcore
