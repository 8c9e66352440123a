// lfcore/hash_trie_map.hpp - lock-free hash trie map with hazard-pointer (or
// RCU) reclamation, arbitrary keys and iteration.
//
// Structure (the LFHT of Areias and Rocha, IJPP 2016 / JPDC 2021, as used for
// YAP's atom table; see ../shared/seeds/lock-free-atom-table.txt):
// * Hash nodes hold 2^bits buckets. The root uses root_bits of the hash, the
//   level below it level_bits more and each deeper level deep_level_bits more
//   (fewer: such a level takes few keys), most significant bits first, so
//   bucket order is hash order and iteration can go in (hash, key) order.
// * A bucket holds a word: its own hash node (empty), a deeper hash node
//   (marked if it hoisted a chain, below), or the first leaf of a chain.
//   Each leaf's `next` word points to the next leaf or, at the end of the
//   chain, to a hash node: the node that owns the chain, or a deeper node
//   that continues it.
// * Expansion: an insert that finds chain_threshold live leaves in a chain
//   ending at their own node closes the chain with a new, deeper hash node
//   (one CAS on the end word); the key and every later key for that bucket go
//   one level down. Unlike LFHT, the leaves already in the chain stay where
//   they are: moving them into the new level with helping needs a step (append
//   the moved leaf to its new chain) that a slow helper can repeat after the
//   leaf was moved, deleted and unlinked (the end word it expects comes back:
//   ABA). Closing instead of moving makes expansion atomic - no expansion is
//   ever unfinished, so none needs help.
// * Hoisting: the closer then swings the bucket from the chain's first leaf
//   to the new level (tagged as hoisted), whose `overflow` link takes over
//   the chain; the level keeps 16-bit tags of the chain's hashes, and a
//   lookup reads the chain only if one is its own. The closed chain's leaves
//   thus leave almost every lookup path without moving (the chain's first
//   leaf hangs from the bucket or from the overflow, never from both, so
//   nothing is unlinked twice). Until the closer has hoisted, the chain
//   reads as before: hoisting needs no help, and it is done before the
//   insert returns. Hits at 4e6 keys under the default 2^16 root took half
//   the time they took without (460 ns against 860), still 2.2-2.7x a root
//   sized for the keys (bench/results/trie_growth/): a map that outgrows its
//   root gains levels as it grows, so size it.
// * Hashes: the user's hash is passed through MurmurHash3's 64-bit finalizer
//   (a bijection), because std::hash of an integer is the identity and would
//   put sequential keys in one top-level bucket.
//
// Erase is three stages (Harris, DISC 2001; Michael, SPAA 2002): mark the
// leaf's next word (logical removal, the linearization point); unlink it by a
// CAS on its predecessor's word (the eraser, or any later writer passing by);
// retire it to the Reclamation policy's domain, which destroys key and value
// once no reader can hold the leaf (see lfcore/reclamation.hpp). So a key
// that refers to memory it does not own (std::string_view, a pointer that
// Hash and KeyEqual follow) must keep that memory until then, not just until
// erase returns: free it from the element's destructor, as lfht does.
// insert_or_assign replaces a leaf L by a new leaf N with one CAS: N.next =
// L.next, then L.next = N | deleted, so readers passing L go on to N and
// never see the key missing. update/upsert replace the same way, with N's
// value computed from L's: the CAS expects L unmarked, and a published leaf
// is never written, so N's value is f of the value it replaces.
//
// Invariants
// * A leaf is unlinked only after its next word is marked; a marked word never
//   changes again (every CAS expects an unmarked value). So an unmarked leaf is
//   reachable from the root, and the successor of a marked leaf stays where it
//   is until that leaf is unlinked.
// * A hash node below the root is removed only when every bucket is empty
//   and frozen and its hoisted chain is empty (see "Compression"), then
//   retired like a leaf: a traversal protects the level it is in, validated
//   as for a leaf, by the link it read the level from. The root lives as
//   long as the map.
// * A level's overflow is written by its closer alone until the hoisting
//   CAS, and read only by those who came through the hoisted bucket; after
//   it, it is a link like any other. A closed chain takes no key, so once
//   the overflow is empty it stays empty.
// * A key has at most one live leaf (inserts append only after a traversal of
//   the whole chain - and of the hoisted chains above it whose tags match the
//   key; the others cannot hold it - found none, with a CAS on the chain's end
//   word that fails if anything was appended, closed or marked since; or link
//   at the chain's head when its bucket's summary rules the key out, with a
//   CAS on the bucket word that fails if that key was linked since, since
//   such an insert changes the word: its own head CAS, or its summary bits
//   added before it appends).
// * A bucket that points to a leaf has the summary bits of every key in its
//   chain (see "Bucket summaries" at summary_mask).
//
// Lookups (find, contains, visit, iteration) perform no atomic read-modify-
// write and no store but their hazard pointers: they pass marked leaves
// without unlinking them. They validate each step against the last link they
// read unmarked (its owner is then still reachable, and so is the run of marked
// leaves after it), keeping hazard pointers on that owner, on the first leaf of
// the run (no ABA on the link) and on the current and next leaf; the owner of
// a bucket link is its level. A lookup whose key its root bucket rules out
// (the bucket is empty, or its summary lacks the key) reads that word alone,
// before it takes any hazard pointer (peek_root).
// Reclamation: the policy (lfcore/reclamation.hpp) supplies those guards and a
// read-side section around each operation. Under RCU the guards do nothing and
// every validation passes at once: no leaf reachable during the section is
// freed before it ends, so a stale successor is still a valid leaf whose frozen
// (marked) next word leads back into the chain, as the validation would ensure.
//
// Progress: every operation is lock-free (a retry happens only when another
// thread changed the chain, or an insert met a level being compressed, which
// it aborts or helps to finish). find/contains/visit/size are lock-free too and
// never write shared memory but their hazard pointers.
// Ordering: insert, insert_or_assign, update, upsert and erase are
// linearizable (at the CAS that appends, replaces or marks; an update of an
// absent key as a lookup); find/contains/visit at the read of the leaf's
// next word, or of the bucket whose summary rules the key out (see "Bucket
// summaries" at summary_mask). A value found happens-after its insertion.
// Exceptions: Hash, KeyEqual, the element's constructors and the allocator
// may throw (std::bad_alloc also comes from a thread's first guards, and
// from an Allocator whose memory lies at or above 2^48, where the bucket
// summaries live: its what() says so); a call that throws has changed
// nothing and leaked nothing (the strong guarantee; tested for every fault
// position). An erase or a replacement never throws once it took effect at
// its CAS: if KeyEqual throws while it unlinks what it marked, the next
// writer passing by unlinks it. Iteration steps may throw (KeyEqual,
// std::less<> on keys with equal hashes) and leave the iterator as it was.
// Destructors must not throw: reclamation runs them in noexcept scans.
// Iteration: weakly consistent, in (hash, key) order (keys with equal hashes
// by std::less<>); every key present for the whole iteration is visited
// once, no key twice, and a key whose erase completed before the step that
// would reach it is not visited. An iterator finds the positions (hash and
// key) of the next 16 elements in one search from the root, and each step
// looks the next one up again, which protects it (and skips it if erased
// meanwhile); begin(), successor() (the paper's lfht_next_key) and keys that
// borrow from their element take one position per search. So iterating costs
// O(size * depth). The search prefetches what the buckets after the batch
// lead to (read_ahead): a sized map of 1e6 keys iterates at 60-65 ns per
// element on one thread, 1.5x-6.4x as fast as the lock-free peers and
// 0.04x-0.66x as fast as the maps whose iterators walk an array or a list in
// a few instructions a step (bench/results/README.md, "Iteration"); the same
// keys under the default root, in levels below it, at about 105 ns.
// size(): the sum of per-thread-shard counters; exact when no operation runs
// concurrently, otherwise within the number of concurrent inserts and erases.
// Memory: leaves and hash nodes come from Allocator (rebound), which must be
// stateless (the reclamation domain destroys retired nodes after the map may
// be gone); a LeafPolicy (what one provides: lfcore/detail/pair_leaf_policy.hpp)
// can replace the leaf altogether - atom_table keeps each atom's text inside
// its leaf. A leaf holds its link, the element and,
// unless the key is a scalar hashed by std::hash (then rehashing costs less
// than the 8 bytes), the element's hash. For speed the default
// std::allocator is enough: the map's cache misses hide what malloc costs
// (bench/results/pool_allocator/). For memory,
// Allocator = lfcore::pool_allocator<value_type> keeps leaves in per-thread
// magazines without malloc's 8-byte header (a uint64 -> uint64 leaf costs 24
// bytes instead of 32), but keeps what it frees for reuse (see its header).
// Domains: erased leaves and removed levels are retired to the map's domain,
// by default the policy's default domain, which is never destroyed. A map
// given a domain of its own keeps its garbage apart: a hazard_pointer_domain
// with a low scan_threshold bounds what large erased values hold (its
// garbage_bound()), its reclaim() frees them at once, and destroying it -
// after the map and its iterators - frees them all. Each thread keeps the
// hazard pointers of its operations in the map's domain between operations
// (hazard_pointer_domain::thread_cached), so a map of its own domain runs as
// fast as one of the default domain: 1.02x-1.06x the time per lookup, where
// taking them from the domain for every operation had cost 1.7x-2.1x
// (bench/results/micro/trie_domain.txt).
// Compression: erased leaves go back to the allocator, and so does a level
// (a hash node below the root) once its last key is erased: the eraser sees
// every bucket and the hoisted chain empty, freezes the buckets, and swings
// the parent's bucket back open (the protocol is at remove_if_empty). A level
// that holds a key, in a bucket or in its hoisted chain, stays. Under churn -
// 30 replacements of 1e6 keys - the default shape went from 44.1 to 45.5 bytes
// per key (66.7 without compression), and erasing every key gave every level
// back (34.1 bytes per key stayed without); bench/results/trie_churn/report.md.
// An erase that empties a bucket of a level reads all of the level's buckets,
// so very wide levels make such erases slower (config.compress_empty_levels).
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/bucket_summary.hpp"
#include "lfcore/detail/guard_lease.hpp"
#include "lfcore/detail/pair_leaf_policy.hpp"
#include "lfcore/detail/prefault.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/hash_trie_config.hpp"
#include "lfcore/reclamation.hpp"
#include "lfcore/thread_registry.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace lfcore {

namespace detail {
/// MurmurHash3's 64-bit finalizer (Appleby): a bijection with full avalanche.
constexpr std::uint64_t mix_hash(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

template <class T, class = void>
inline constexpr bool is_transparent_v = false;
template <class T>
inline constexpr bool is_transparent_v<T, std::void_t<typename T::is_transparent>> = true;
// F computes a new value from a const T& (hash_trie_map::update); false for
// T = void, where const T& could not even be named.
template <class F, class T>
inline constexpr bool is_updater_v = std::is_invocable_v<F&, std::add_lvalue_reference_t<const T>>;

// The guards of a trie operation. Types of the Reclamation alone, not of
// the map: every hash_trie_map of a domain shares the two sets a thread
// keeps there (hazard_pointer_domain keeps 4 types per thread; with a set
// per map type, the map types a thread used after the first two took their
// hazard pointers from the domain every operation, 2.7x-3x slower lookups:
// bench/results/shared_trie_guards/).
//
// A traversal hands a protection from one guard to the next by storing the
// pointer again (reset_protection while another guard holds it), never by
// swapping the guards. A swap moves their record pointers through memory;
// GCC turns the swap of two adjacent guards into one 16-byte load, shuffle
// and store, the next step's 8-byte load of a record pointer cannot be
// forwarded from that store, and waits for it to retire - behind the
// current leaf's cache miss. That serialized the misses of consecutive
// lookups: 2.4 against 3.3 Mops/s of hits at 1e7 keys (bench/results/README.md).
template <class Reclamation>
struct trie_reader_guards {
  using guard = typename Reclamation::guard;
  explicit trie_reader_guards(typename Reclamation::domain_type& d)
      : anchor(Reclamation::make_guard(d)), run(Reclamation::make_guard(d)),
        cur(Reclamation::make_guard(d)), next(Reclamation::make_guard(d)) {}
  guard anchor; // owner of the last unmarked link: a leaf, or a level
  guard run;    // the leaf that link points to
  guard cur;
  guard next;
  // Always inlined, as guard_lease's destructor that calls it: GCC 12 kept it
  // out of line in the C API's calls (lib/lfht.cpp), 2-9 instructions a search.
  [[gnu::always_inline]] void reset() noexcept {
    anchor.reset_protection();
    run.reset_protection();
    cur.reset_protection();
    next.reset_protection();
  }
};
template <class Reclamation>
struct trie_writer_guards {
  using guard = typename Reclamation::guard;
  explicit trie_writer_guards(typename Reclamation::domain_type& d)
      : prev(Reclamation::make_guard(d)), cur(Reclamation::make_guard(d)),
        next(Reclamation::make_guard(d)), level(Reclamation::make_guard(d)),
        up(Reclamation::make_guard(d)), held(Reclamation::make_guard(d)) {}
  guard prev;
  guard cur;
  guard next;
  guard level; // the hash node being searched (none for the root)
  guard up;    // the level above it, whose bucket detach() swings
  // The element the call acts on, protected for the whole call: one made to
  // be inserted, from before it is published; the one an erase marks,
  // through the search that unlinks it (which reuses cur).
  guard held;
  void reset() noexcept {
    prev.reset_protection();
    cur.reset_protection();
    next.reset_protection();
    level.reset_protection();
    up.reset_protection();
    held.reset_protection();
  }
};
} // namespace detail

template <class Key, class T, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>,
          class Reclamation = hazard_pointer_reclamation,
          class LeafPolicy =
              detail::pair_leaf_policy<Key, T, Allocator, !detail::rehash_is_cheap_v<Key, Hash>>>
class hash_trie_map {
  static_assert(std::allocator_traits<Allocator>::is_always_equal::value,
                "hash_trie_map: the allocator must be stateless (see the header)");

  // Heterogeneous lookup, as in std::unordered_map: only with transparent functors.
  static constexpr bool transparent =
      detail::is_transparent_v<Hash> && detail::is_transparent_v<KeyEqual>;

public:
  using key_type = Key;
  using mapped_type = T;
  using value_type = typename LeafPolicy::value_type;
  using size_type = std::size_t;
  using hasher = Hash;
  using key_equal = KeyEqual;
  using allocator_type = Allocator;
  using reclamation = Reclamation;
  using domain_type = typename Reclamation::domain_type;
  class const_iterator;
  using iterator = const_iterator;

  /// Throws std::invalid_argument for root_bits, level_bits or deep_level_bits
  /// outside [1, 24] or a chain_threshold of 0. Erased elements and removed
  /// levels are retired to `domain` (see "Domains" in the header), which must
  /// outlive the map and its iterators.
  explicit hash_trie_map(hash_trie_config config = {}, const Hash& hash = Hash(),
                         const KeyEqual& equal = KeyEqual(),
                         domain_type& domain = Reclamation::default_domain())
      : config_(checked(config)), hash_(hash), equal_(equal),
        root_(new_hash_node(0, config_.root_bits)), domain_(&domain) {}
  explicit hash_trie_map(domain_type& domain, hash_trie_config config = {})
      : hash_trie_map(config, Hash(), KeyEqual(), domain) {}
  /// A map holding `init` (a later duplicate of a key is ignored, as insert).
  hash_trie_map(std::initializer_list<value_type> init, hash_trie_config config = {})
      : hash_trie_map(config) {
    insert(init);
  }
  /// Destroys every element. No concurrent calls. Elements erased earlier are
  /// destroyed by the reclamation domain (already, or later).
  ~hash_trie_map() { destroy(root_); }

  // Copies, moves and swaps. Reading `other` for a copy is a concurrent
  // iteration, so other threads may go on changing it. Everything else here
  // is like destruction: no other thread may use the maps written, and no
  // iterator into them may be live.

  /// other's config, hash, equality, domain and the elements an iteration of other
  /// meets: each key present throughout the copy once, and none whose erase
  /// completed before the copy reached it. Throws what an insert throws,
  /// leaking nothing.
  hash_trie_map(const hash_trie_map& other)
      : hash_trie_map(other.config_, other.hash_, other.equal_, *other.domain_) {
    insert(other.begin(), other.end());
  }
  /// Takes other's elements, leaving other empty, with its config but a root
  /// no wider than the default's (so that a move allocates at most 512 KiB,
  /// not a sized root's up to 128 MiB). Throws std::bad_alloc, changing
  /// nothing, if that root cannot be allocated.
  hash_trie_map(hash_trie_map&& other)
      : hash_trie_map(emptied_config(other.config_), other.hash_, other.equal_, *other.domain_) {
    swap(other);
  }
  /// Copy and swap: *this keeps its elements if the copy throws.
  hash_trie_map& operator=(const hash_trie_map& other) {
    if (this != &other) {
      hash_trie_map copy(other);
      swap(copy);
    }
    return *this;
  }
  /// Destroys this map's elements and takes other's, as the move constructor.
  hash_trie_map& operator=(hash_trie_map&& other) {
    if (this != &other) {
      hash_trie_map taken(std::move(other));
      swap(taken);
    }
    return *this;
  }
  /// Exchanges the two maps' elements, configs, hashes, equalities and domains.
  void swap(hash_trie_map& other) noexcept(
      std::is_nothrow_swappable_v<Hash>&& std::is_nothrow_swappable_v<KeyEqual>) {
    using std::swap;
    swap(config_, other.config_);
    swap(hash_, other.hash_);
    swap(equal_, other.equal_);
    swap(root_, other.root_);
    swap(domain_, other.domain_);
    for (std::size_t i = 0; i < shards; ++i) { // relaxed: no operation runs on either map
      const std::ptrdiff_t mine = counts_[i]->load(std::memory_order_relaxed);
      counts_[i]->store(other.counts_[i]->load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
      other.counts_[i]->store(mine, std::memory_order_relaxed);
    }
  }
  friend void swap(hash_trie_map& a, hash_trie_map& b) noexcept(noexcept(a.swap(b))) { a.swap(b); }

  // ------------------------------------------------------------------ lookup
  // Each lookup also takes any K when Hash and KeyEqual are transparent.

  /// An iterator to the element, holding a guard that keeps it alive (its
  /// value as of the lookup), or end().
  // Always inlined with find_any, as contains() and visit() are by themselves:
  // out of line, a find() in cache cost 1.15x (bench/results/hp_record_inline/).
  [[gnu::always_inline]] const_iterator find(const Key& key) const { return find_any(key); }
  template <class K>
  requires transparent [[gnu::always_inline]] const_iterator find(const K& key) const {
    return find_any(key);
  }
  bool contains(const Key& key) const {
    return visit_any(key, [](const value_type&) {});
  }
  template <class K>
  requires transparent bool contains(const K& key) const {
    return visit_any(key, [](const value_type&) {});
  }
  /// Hints that change nothing: start loading what looking up or inserting
  /// these keys reads first, so that a caller about to work on a group of
  /// keys overlaps their cache misses instead of taking them one after
  /// another (group prefetching: Chen, Ailamaki, Gibbons and Mowry, ICDE
  /// 2004; absl's raw_hash_set::prefetch is the one-key form). For one key:
  /// its root bucket. For a range, in groups of prefetch_group keys, in
  /// rounds, each started when the one before has mostly arrived:
  ///  1. every key's root bucket;
  ///  2. the first leaf each bucket points to or, where it leads to a level
  ///     (a map that outgrew its root), the level's header and the key's
  ///     bucket in it;
  ///  3. where the first leaf has another hash, the leaf after it (at one key
  ///     per bucket a key is second in its chain 26% of the time, further
  ///     back 10%); in a level, the bucket's first leaf, or where the bucket
  ///     leads a level further down, that level's header and bucket;
  ///  4. if a third of the group had such a second leaf (long chains: a map
  ///     holding more keys than its root has buckets), where it has another
  ///     hash too, the third;
  ///  5. for keys that went two levels down, that bucket's first leaf.
  /// Measured (bench/results/README.md): rounds 1-2 made the paper's atom
  /// workload 2.6x as fast on one thread, round 3 prefetched hits and misses
  /// of a map of 1e6 integer keys 1.2x-1.4x, round 4 a map of two keys per
  /// bucket 1.07x-1.21x at two threads; following levels made the atom
  /// workload on a table given no size hint 1.76x / 1.46x as fast at 1 / 2
  /// threads (the first level), then 1.17x / 1.21x (the second). Maps
  /// that do not need rounds 4 and 5 pay nothing measurable for them.
  /// Round 2 reads a bucket word relaxed and uses it only as a prefetch
  /// address, which cannot fault even if what it points to was freed
  /// meanwhile; the later rounds read inside leaves and levels, so they
  /// protect them first, as a lookup does.
  void prefetch(const Key& key) const { prefetch_bucket(hash_of(key)); }
  template <class K>
  requires transparent void prefetch(const K& key) const { prefetch_bucket(hash_of(key)); }
  template <std::input_iterator It, std::sentinel_for<It> End>
  void prefetch(It first, End last) const {
    constexpr bool compare_keys = prefetch_compares_keys<It>;
    const std::atomic<word>* buckets[prefetch_group];
    std::uint64_t hashes[prefetch_group];
    [[maybe_unused]] std::conditional_t<compare_keys, It, char> at[prefetch_group]; // the keys
    std::size_t second[prefetch_group]; // keys whose chain goes on past a leaf not theirs
    std::size_t deeper[prefetch_group]; // keys whose level's bucket leads a level further down
    // Whether l is key i's leaf (by its hash: most likely).
    auto holds = [&](const leaf& l, std::size_t i) {
      if constexpr (compare_keys)
        return equal_(LeafPolicy::key(l), *at[i]);
      else
        return leaf_hash(l) == hashes[i];
    };
    reader g(*domain_);
    while (first != last) {
      std::size_t n = 0;
      for (; n < prefetch_group && first != last; ++n, ++first) {
        if constexpr (compare_keys) at[n] = first;
        hashes[n] = hash_of(*first);
        buckets[n] = &root_->bucket(hashes[n]);
        __builtin_prefetch(buckets[n]);
      }
      for (std::size_t i = 0; i < n; ++i) {
        // relaxed: a prefetch address, never dereferenced here. The leaf is
        // loaded even if the bucket's summary rules the key out: an insert
        // walks to the chain's end all the same (skipping it made prefetched
        // inserts 0.71x; bench/results/README.md, "Bucket summaries").
        const word w = buckets[i]->load(std::memory_order_relaxed);
        if (!is_hash(w))
          __builtin_prefetch(leaf_of(w));
        else if (const hash_node* level = level_below_root(w))
          prefetch_level_bucket(*root_, level, hashes[i]);
      }
      std::size_t m = 0, d = 0;
      for (std::size_t i = 0; i < n; ++i) {
        // protect's validating load acquires: the leaf's key and hash, or the
        // level's shape and tags, published by the release CAS that linked it
        // ([trie.link]), are readable below.
        const word w = g->cur.protect(*buckets[i], pointer_of);
        if (is_hash(w)) { // an empty bucket, or a level: g.cur keeps it readable
          if (hash_node* level = level_below_root(w))
            if (prefetch_in_level(*level, is_hoisted(w), hashes[i])) deeper[d++] = i;
          continue;
        }
        const leaf& l = *leaf_of(w);
        if (holds(l, i)) continue;
        // relaxed: g.cur keeps l readable; its next word is a prefetch address.
        const word next = unmarked(l.next.load(std::memory_order_relaxed));
        if (is_hash(next)) continue;
        __builtin_prefetch(leaf_of(next));
        second[m++] = i;
      }
      if (3 * m >= n) // the fourth round pays only where chains are long (see above)
        for (std::size_t k = 0; k < m; ++k)
          prefetch_third_leaf(g, *buckets[second[k]],
                              [&](const leaf& l) { return holds(l, second[k]); });
      for (std::size_t k = 0; k < d; ++k)
        prefetch_in_second_level(g, *buckets[deeper[k]], hashes[deeper[k]]);
    }
  }
  /// Keys per group of the range prefetch: enough misses in flight to cover
  /// a memory latency, few enough for the core's miss buffers.
  static constexpr std::size_t prefetch_group = 16;
  /// 1 if the key is present, else 0 (std::unordered_map's count).
  size_type count(const Key& key) const { return contains(key) ? 1 : 0; }
  template <class K>
  requires transparent size_type count(const K& key)
  const { return contains(key) ? 1 : 0; }
  /// Calls f(const value_type&) on the element while it is protected, and
  /// returns true; false if the key is absent. f must not keep references.
  template <class F>
  bool visit(const Key& key, F&& f) const {
    return visit_any(key, std::forward<F>(f));
  }
  template <class K, class F>
  requires transparent bool visit(const K& key, F&& f) const {
    return visit_any(key, std::forward<F>(f));
  }

  // --------------------------------------------------------------- modifiers
  /// Inserts v unless its key is present. Returns an iterator to the element
  /// with that key and whether v was inserted.
  std::pair<const_iterator, bool> insert(const value_type& v) {
    return emplace_if_absent(v.first, [&](std::uint64_t h) { return LeafPolicy::make(h, v); });
  }
  std::pair<const_iterator, bool> insert(value_type&& v) {
    return emplace_if_absent(v.first,
                             [&](std::uint64_t h) { return LeafPolicy::make(h, std::move(v)); });
  }
  /// Inserts each element whose key is absent when its turn comes. Not
  /// atomic: other threads may see some of the elements before the rest.
  template <class InputIt>
  void insert(InputIt first, InputIt last) {
    for (; first != last; ++first) insert(*first);
  }
  void insert(std::initializer_list<value_type> init) { insert(init.begin(), init.end()); }
  /// Builds a value_type from args, then inserts it as insert(value_type&&)
  /// (the key is known only once it is built: it is built even when the key
  /// is present). try_emplace builds nothing for a present key.
  template <class... Args>
  std::pair<const_iterator, bool> emplace(Args&&... args) {
    return insert(value_type(std::forward<Args>(args)...));
  }
  /// Constructs the value from args only if the key is absent. Under a race
  /// with another insert of the same key, the value may be constructed and
  /// then destroyed unused (args moved from) - unlike std::unordered_map.
  template <class... Args>
  std::pair<const_iterator, bool> try_emplace(const Key& key, Args&&... args) {
    return emplace_if_absent(key, piecewise_leaf(key, std::forward<Args>(args)...));
  }
  template <class... Args>
  std::pair<const_iterator, bool> try_emplace(Key&& key, Args&&... args) {
    return emplace_if_absent(key, piecewise_leaf(std::move(key), std::forward<Args>(args)...));
  }
  /// Heterogeneous try_emplace (as C++26's unordered_map): searches with k
  /// and constructs the Key from k only when inserting, so a present key
  /// costs no Key (e.g. no std::string built from a string_view).
  template <class K, class... Args>
  requires transparent &&(!std::is_convertible_v<K&&, const_iterator>)&&std::is_constructible_v<
      Key, K&&> std::pair<const_iterator, bool> try_emplace(K&& k, Args&&... args) {
    return emplace_if_absent(k, piecewise_leaf(std::forward<K>(k), std::forward<Args>(args)...));
  }
  /// try_emplace(key, args...) that hands out no iterator: calls
  /// f(const value_type& element, bool inserted) on the element the key
  /// holds after the call - the one it inserted or the one present - while
  /// it is protected, and returns inserted. An iterator costs a hazard
  /// pointer of its own; this call uses only those its thread keeps: 0.86x
  /// the time of try_emplace for a present key, 0.93x for a new one, at 1e5
  /// keys (bench/results/hp_record_inline/). f must not keep
  /// references. If f throws, an insertion it was told of stands.
  template <class F, class... Args>
  bool try_emplace_and_visit(const Key& key, F&& f, Args&&... args) {
    return emplace_if_absent_then(key, piecewise_leaf(key, std::forward<Args>(args)...),
                                  visit_element(f));
  }
  template <class F, class... Args>
  bool try_emplace_and_visit(Key&& key, F&& f, Args&&... args) {
    return emplace_if_absent_then(key, piecewise_leaf(std::move(key), std::forward<Args>(args)...),
                                  visit_element(f));
  }
  template <class K, class F, class... Args>
  requires transparent && std::is_constructible_v<Key, K&&>
  bool try_emplace_and_visit(K&& k, F&& f, Args&&... args) {
    return emplace_if_absent_then(
        k, piecewise_leaf(std::forward<K>(k), std::forward<Args>(args)...), visit_element(f));
  }
  /// Inserts, or atomically replaces the value of the present key (the old
  /// element is destroyed at reclamation). Returns (iterator, inserted).
  template <class M>
  std::pair<const_iterator, bool> insert_or_assign(const Key& key, M&& obj) {
    return assign(LeafPolicy::make(hash_of(key), key, std::forward<M>(obj)));
  }
  template <class M>
  std::pair<const_iterator, bool> insert_or_assign(Key&& key, M&& obj) {
    const std::uint64_t h = hash_of(key);
    return assign(LeafPolicy::make(h, std::move(key), std::forward<M>(obj)));
  }
  /// Read-copy-update of a present key's value: replaces it by f(value)
  /// (f takes a const mapped_type& and returns what mapped_type is made
  /// from; the new element copies the key) in one CAS, as insert_or_assign
  /// replaces. If another thread replaced or erased the element after f
  /// read it, that CAS fails and f runs again on what the key holds then:
  /// no update is lost, and a counter is
  /// m.update(k, [](long n) { return n + 1; }). So f may run more
  /// than once and must not keep references. Returns an iterator to the new
  /// element, or end() if the key is absent. If f, Hash, KeyEqual or the
  /// allocation throws, the map is unchanged. Lock-free, not wait-free: a
  /// key that others replace without pause can keep one update retrying.
  /// Each update allocates an element and retires one. For a count that
  /// many threads bump, a value with a mutable std::atomic member changed
  /// through visit() costs one atomic add (an element never moves while it
  /// is in the map): on the runner's map_count_zipf that ran 2.2x-4.4x as
  /// fast as upsert() (bench/results/README.md, "Counting").
  template <class F>
  requires detail::is_updater_v<F, T> const_iterator update(const Key& key, F&& f) {
    return update_or_emplace(key, f, nullptr).first;
  }
  template <class K, class F>
  requires transparent && detail::is_updater_v<F, T> const_iterator update(const K& key, F&& f) {
    return update_or_emplace(key, f, nullptr).first;
  }
  /// update(key, f) if the key is present, else try_emplace(key, args...),
  /// as one operation: an element that appears or goes meanwhile sends the
  /// call to the other branch, so it never returns without effect
  /// (libcuckoo's upsert, except that f returns the new value instead of
  /// changing it in place: a published element is never written). The
  /// element made from args, if needed, is made at most once. Returns an
  /// iterator to the element it left and whether it inserted it. Throws as
  /// update; the map is then unchanged.
  template <class F, class... Args>
  requires detail::is_updater_v<F, T> std::pair<const_iterator, bool> upsert(const Key& key, F&& f,
                                                                             Args&&... args) {
    return upsert_any(key, f, std::forward<Args>(args)...);
  }
  /// The same; key is moved from only to build the element to insert (a
  /// present key leaves it as it was; under a race with another insert of
  /// the key that element may be dropped unused, as try_emplace's value).
  template <class F, class... Args>
  requires detail::is_updater_v<F, T> std::pair<const_iterator, bool> upsert(Key&& key, F&& f,
                                                                             Args&&... args) {
    return upsert_any(std::move(key), f, std::forward<Args>(args)...);
  }
  /// Heterogeneous upsert, as try_emplace's: searches with k and constructs
  /// the Key from k only when inserting (a present key costs no Key).
  template <class K, class F, class... Args>
  requires transparent && detail::is_updater_v<F, T> && std::is_constructible_v<Key, K&&>
      std::pair<const_iterator, bool> upsert(K&& k, F&& f, Args&&... args) {
    return upsert_any(std::forward<K>(k), f, std::forward<Args>(args)...);
  }
  /// Removes the key; returns 1 if this call removed it, else 0. key may
  /// borrow from the element it erases (as the C API's keys do): the element
  /// stays protected until the call returns.
  size_type erase(const Key& key) { return erase_any(key, any_element); }
  template <class K>
  requires transparent size_type erase(const K& key) { return erase_any(key, any_element); }
  /// Removes the key's element if pred(const value_type&) returns true for
  /// it, and returns 1; 0 if the key is absent or pred said no. pred runs
  /// while the element is protected, and runs again (on what the key holds
  /// then) if another thread erased or replaced the element, or linked a leaf
  /// after it, before this call's erase took effect: the element erased is
  /// the one the last call of pred approved. So pred may run more than once
  /// and must not keep references. If pred throws, nothing is erased. As
  /// find() then erase(it), without the iterator's own hazard pointer
  /// (Boost's concurrent_flat_map::erase_if(k, f), libcuckoo's erase_fn).
  template <class Pred>
  size_type erase_if(const Key& key, Pred pred) {
    return erase_any(key, pred);
  }
  template <class K, class Pred>
  requires transparent size_type erase_if(const K& key, Pred pred) { return erase_any(key, pred); }
  /// Removes the element pos refers to if it is still in the map (not erased
  /// or replaced since pos reached it); returns 1 if this call removed it.
  /// pos stays valid. Precondition: pos is an iterator of this map, not end().
  size_type erase(const const_iterator& pos) {
    leaf* l = const_cast<leaf*>(pos.leaf_);           // protected by pos
    word w = l->next.load(std::memory_order_relaxed); // relaxed: the CAS validates it
    do {
      if (is_deleted(w)) return 0;
      // [trie.mark] as in erase(key).
    } while (!l->next.compare_exchange_weak(w, w | deleted, std::memory_order_release,
                                            std::memory_order_relaxed));
    adjust_size(-1);
    try {
      writer g(*domain_);
      tidy_after(leaf_hash(*l), LeafPolicy::key(*l), *g);
    } catch (const std::bad_alloc&) { // no guards: the next writer unlinks the leaf
    }
    return 1;
  }
  /// Erases every element present when the call reaches it (not atomic).
  void clear() {
    for (const_iterator it = begin(); it != end(); ++it) erase(it->first); // it stays valid
  }

  size_type size() const noexcept {
    std::ptrdiff_t n = 0;
    for (const auto& shard : counts_)
      n += shard->load(std::memory_order_relaxed); // relaxed: estimate
    return n > 0 ? static_cast<size_type>(n) : 0;
  }
  bool empty() const noexcept { return size() == 0; }

  const_iterator begin() const { return iterator_after(nullptr); }
  /// The first element after key in iteration order; key need not be present
  /// (the paper's lfht_next_key).
  const_iterator successor(const Key& key) const {
    const position after{hash_of(key), position_key(key)};
    return iterator_after(&after);
  }
  const_iterator end() const noexcept { return const_iterator(); }

  const hash_trie_config& config() const noexcept { return config_; }
  /// Whether buckets keep a summary of their chain's hashes, which lets most
  /// misses stop at the bucket (see "Bucket summaries" in the header): on
  /// x86-64 and AArch64, unless LFCORE_NO_BUCKET_SUMMARY is defined.
  static constexpr bool bucket_summaries = detail::bucket_summaries;
  hasher hash_function() const { return hash_; }
  key_equal key_eq() const { return equal_; }
  allocator_type get_allocator() const noexcept { return allocator_type(); } // stateless

private:
  using word = std::uintptr_t;
  static constexpr word hash_tag = 1;   // the word points to a hash node
  static constexpr word deleted = 2;    // on a leaf's next word: the leaf is erased
  static constexpr word frozen_tag = 4; // on a bucket, with hash_tag: frozen (see below)

  using leaf = typename LeafPolicy::leaf;
  using leaf_deleter = typename LeafPolicy::deleter;
  static_assert(alignof(leaf) >= 8, "hash_trie_map: the low 3 bits of a leaf's address are tags");

  // Tags of a hoisted chain: 16 low bits of each hash (the levels index by
  // the high bits). A chain closes at chain_threshold live leaves; a longer
  // one (a larger threshold) is not filtered.
  static constexpr std::size_t max_tags = 8;
  static std::uint16_t tag_of(std::uint64_t h) noexcept { return static_cast<std::uint16_t>(h); }

  // A hash node and its buckets in one allocation (a 40-byte header: a
  // level of 16 buckets is a 176-byte glibc chunk, one of 4 an 80-byte one).
  struct hash_node {
    const std::uint8_t consumed; // hash bits the levels above use
    const std::uint8_t bits;
    // Tags of the hashes in the chain whose closing created this level, as
    // the closer saw it (written before the level is published); read by
    // lookups that come through a hoisted bucket.
    std::uint8_t tag_count = 0; // max_tags + 1: unfiltered
    std::uint16_t tags[max_tags] = {};
    // Compression (see remove_if_empty): (attempt id << 2) | phase. Ids grow
    // by one per attempt and are never reused, so a frozen bucket names the
    // attempt that froze it.
    std::atomic<std::uint64_t> compression{0};
    // That chain, once hoisted under this level (see "Expansion" and
    // hoist()): 0 until then, then its first leaf, or to_word(this) once it
    // is empty (for good: a closed chain takes no key).
    std::atomic<word> overflow{0};
    // False only if no key of the hoisted chain has hash h.
    bool overflow_may_hold(std::uint64_t h) const noexcept {
      if (tag_count > max_tags) return true;
      bool hit = false; // no early exit: a short loop GCC vectorizes
      for (std::size_t i = 0; i < tag_count; ++i) hit |= tags[i] == tag_of(h);
      return hit;
    }
    std::atomic<word>* buckets() noexcept { return reinterpret_cast<std::atomic<word>*>(this + 1); }
    std::size_t size() const noexcept { return std::size_t(1) << bits; }
    // The bucket of h in a level whose levels above use `consumed` hash bits.
    static std::size_t index(std::uint64_t h, unsigned consumed, unsigned bits) noexcept {
      return static_cast<std::size_t>((h << consumed) >> (64 - bits));
    }
    std::size_t index(std::uint64_t h) const noexcept { return index(h, consumed, bits); }
    std::atomic<word>& bucket(std::uint64_t h) noexcept { return buckets()[index(h)]; }
  };

  static word to_word(const leaf* l) noexcept { return reinterpret_cast<word>(l); }
  static word to_word(const hash_node* n) noexcept { return reinterpret_cast<word>(n) | hash_tag; }
  static bool is_hash(word w) noexcept { return (w & hash_tag) != 0; }
  // Only a bucket is ever frozen, and only while it is empty: the word holds
  // no pointer but the id of the compression attempt, (id << 3) | 5.
  static bool is_frozen(word w) noexcept { return (w & frozen_tag) != 0; }
  static word frozen_word(std::uint64_t id) noexcept {
    return static_cast<word>(id << 3) | frozen_tag | hash_tag;
  }
  static std::uint64_t frozen_id(word w) noexcept { return w >> 3; }
  // A bucket whose closed chain was hoisted under the level it leads to: the
  // deleted bit, which no bucket otherwise carries, on to_word(level).
  static word hoisted_word(const hash_node* n) noexcept { return to_word(n) | deleted; }
  static bool is_hoisted(word w) noexcept { return (w & 7) == (hash_tag | deleted); }
  static bool is_deleted(word w) noexcept { return (w & deleted) != 0; }
  static word unmarked(word w) noexcept { return w & ~deleted; }

  // Bucket summaries. A bucket that points to a leaf keeps, in the address
  // bits from 48 up (unused in user space: detail::bucket_summaries), a 16-bit Bloom filter
  // of the hashes in its chain: two bits per key, picked by hash bits 16-23
  // (the levels index by the high bits, tags use the low 16). A lookup (or an
  // erase, or an update) whose bits are not all there knows the key is absent
  // without loading a leaf:
  // at one key per bucket that halves a miss's cache misses (the bucket, not
  // the bucket and then its leaves). Folly's F14 keeps 7 bits of each key's
  // hash beside its slot for the same reason; here the filter rides in the
  // word the lookup loads anyway. Invariant: a bucket's bits cover every key in its chain.
  // * An insert ORs its bits into the bucket before the CAS that links its
  //   leaf (add_summary), or links it into an empty bucket with its bits in
  //   that CAS, so no lookup can see the leaf linked and its bits missing.
  // * Unlinking the first leaf keeps the bits; a bucket that empties or is
  //   hoisted loses them (a hash-node word carries none): stale bits of erased
  //   keys only make false positives until then.
  // * A closer first sets every bit (a chain closed but not yet hoisted may
  //   continue in the new level, which the bits do not describe), by a CAS
  //   from the bucket word its walk read: a key linked at the head since
  //   would be missing from the new level's tags.
  // * Head inserts (config.head_inserts): an insert whose key the summary
  //   rules out, into a chain whose summary has fewer than chain_threshold
  //   bits, links at the head without walking the chain (for a new key, the
  //   chain's leaves were its cache misses). Each such insert sets at least
  //   one new bit, so a chain takes at most chain_threshold - 1 of them before
  //   it empties, and holds at most 2 * chain_threshold - 1 live leaves:
  //   appends still count them. Once a closer set every bit none can come, so
  //   hoist() still meets only unlinks of the chain's first leaf.
  //   Head inserts and appends of one key exclude each other because every
  //   insert (insert_or_assign and upsert too) decides between them on the
  //   bucket word its walk read last, and a walk that unlinks the chain's
  //   first leaf starts again: the chain may have emptied and refilled since
  //   it read the bucket. An append was decided on a word whose summary
  //   holds the key's bits or chain_threshold bits; bits only grow while the
  //   chain holds a leaf, so no head insert of the key can follow until the
  //   chain empties, and then the append's CAS fails (its last leaf was
  //   marked). A head insert that came before that word is in the chain the
  //   walk read. (An atom table's interns meeting atoms being collected
  //   linked one text twice before the walk started again.)
  // Model-checked: tests/model/trie_chain.pml has appends, head inserts,
  // unlinks and lookups of one bucket's chain, and Spin searches every
  // interleaving of three threads for keys linked twice, summaries that miss
  // a key and non-linearizable results; breaking any rule above (restart,
  // add_summary first, the whole word in the head CAS, bits kept by an
  // unlink) is caught.
  // Other targets (or LFCORE_NO_BUCKET_SUMMARY, for pointers tagged in their
  // high bits) keep no summary; the filter then always says "maybe".
  static constexpr word summary_mask = detail::bucket_summaries ? ~word(0) << 48 : 0;
  static word summary_of(std::uint64_t h) noexcept {
    if constexpr (summary_mask == 0) return 0;
    return detail::summary_bits_table[(h >> 16) & 255];
  }
  // True if bucket word w heads a chain that cannot hold hash h.
  static bool summary_excludes(word w, std::uint64_t h) noexcept {
    return !is_hash(w) && (summary_of(h) & ~w) != 0;
  }
  static leaf* leaf_of(word w) noexcept {
    return reinterpret_cast<leaf*>(w & ~(word(7) | summary_mask));
  }
  static hash_node* node_of(word w) noexcept { return reinterpret_cast<hash_node*>(w & ~word(7)); }
  static const void* leaf_or_null(word w) noexcept { return is_hash(w) ? nullptr : leaf_of(w); }
  // What a hazard pointer protects for a word: its leaf or hash node.
  static const void* pointer_of(word w) noexcept {
    return is_frozen(w) ? nullptr : reinterpret_cast<const void*>(w & ~(word(7) | summary_mask));
  }

  // ------------------------------------------------------------- allocation
  static hash_trie_config emptied_config(hash_trie_config c) noexcept {
    c.root_bits = std::min(c.root_bits, hash_trie_config{}.root_bits);
    return c;
  }
  static hash_trie_config checked(hash_trie_config c) {
    auto in_range = [](unsigned bits) { return bits >= 1 && bits <= 24; };
    if (!in_range(c.root_bits) || !in_range(c.level_bits) || !in_range(c.deep_level_bits) ||
        c.chain_threshold == 0)
      throw std::invalid_argument("hash_trie_map: root_bits, level_bits and deep_level_bits "
                                  "must be in [1, 24] and chain_threshold at least 1");
    return c;
  }
  // Hash nodes come from Allocator too, rebound to words (a node is a whole
  // number of them).
  using node_allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<word>;
  using node_traits = std::allocator_traits<node_allocator>;
  static std::size_t node_words(unsigned bits) noexcept {
    static_assert(sizeof(hash_node) % sizeof(word) == 0 && alignof(hash_node) <= alignof(word));
    static_assert(sizeof(hash_node) == 40);
    return (sizeof(hash_node) + (std::size_t(1) << bits) * sizeof(std::atomic<word>)) /
           sizeof(word);
  }
  static hash_node* new_hash_node(unsigned consumed, unsigned bits) {
    node_allocator a;
    word* raw = node_traits::allocate(a, node_words(bits));
    detail::check_address(a, raw, node_words(bits));
    detail::prefault(raw, node_words(bits) * sizeof(word)); // every bucket is written below
    auto* node = ::new (static_cast<void*>(raw))
        hash_node{static_cast<std::uint8_t>(consumed), static_cast<std::uint8_t>(bits)};
    for (std::size_t i = 0; i < node->size(); ++i)
      ::new (static_cast<void*>(node->buckets() + i)) std::atomic<word>(to_word(node)); // empty
    return node;
  }
  static void free_hash_node(hash_node* node) noexcept {
    const unsigned bits = node->bits;
    node->~hash_node(); // the atomics are trivially destructible
    node_allocator a;
    node_traits::deallocate(a, reinterpret_cast<word*>(node), node_words(bits));
  }
  // Callers reserve_retire() before the CAS that unlinks the node: the
  // unlink cannot be undone, so retiring must not fail after it (a node
  // unlinked and not retired would leak).
  void reserve_retire() { domain_->reserve_retire(); }
  void retire(leaf* l) { domain_->retire(l, leaf_deleter()); }
  struct hash_node_deleter { // stateless, as leaf_deleter
    void operator()(hash_node* n) const noexcept { free_hash_node(n); }
  };
  void retire(hash_node* n) { domain_->retire(n, hash_node_deleter()); }

  // Single-threaded teardown: leaves of every chain, then the node. With no
  // operation running every closed chain is hoisted (its closer hoists it
  // before returning), so a level's overflow, if not empty, is its own.
  static void destroy(hash_node* node) noexcept {
    destroy_chain(node->overflow.load(std::memory_order_relaxed));
    for (std::size_t i = 0; i < node->size(); ++i) {
      const word w = destroy_chain(node->buckets()[i].load(std::memory_order_relaxed));
      if (hash_node* below = level_below(*node, w)) destroy(below);
    }
    free_hash_node(node);
  }
  // Frees the leaves from w on (nothing for 0: a root's overflow); returns the end word.
  static word destroy_chain(word w) noexcept {
    while (w != 0 && !is_hash(w)) {
      leaf* l = leaf_of(w);
      w = unmarked(l->next.load(std::memory_order_relaxed));
      leaf_deleter()(l);
    }
    return w;
  }

  void prefetch_bucket(std::uint64_t h) const noexcept { __builtin_prefetch(&root_->bucket(h)); }
  // The level below `node` that its bucket's word w leads to, or nullptr (a
  // leaf, node's own word for an empty bucket, a frozen bucket).
  static hash_node* level_below(const hash_node& node, word w) noexcept {
    return is_hash(w) && !is_frozen(w) && node_of(w) != &node ? node_of(w) : nullptr;
  }
  hash_node* level_below_root(word w) const noexcept { return level_below(*root_, w); }
  // A level below `node` (node's bucket pointed to it): its header, which a
  // lookup reads for the level's width and hoisted-chain tags, and the key's
  // bucket, whose place follows from the level's shape (node's bits
  // consumed, child_bits wide) without reading the level, which may already
  // be freed: both are only prefetch addresses.
  void prefetch_level_bucket(const hash_node& node, const hash_node* level,
                             std::uint64_t h) const noexcept {
    const std::size_t index = hash_node::index(h, node.consumed + node.bits, child_bits(&node));
    __builtin_prefetch(level);
    __builtin_prefetch(reinterpret_cast<const std::atomic<word>*>(level + 1) + index);
  }
  // Then, with the level protected: the first leaf of the key's bucket, or
  // the bucket in the level below if it leads there (returns true then: the
  // caller may follow it later, see prefetch_in_second_level) and, if the
  // level holds a hoisted chain that may hold the key (as a lookup decides),
  // that chain's first leaf. relaxed: the words are prefetch addresses.
  bool prefetch_in_level(hash_node& level, bool hoisted, std::uint64_t h) const noexcept {
    const word w = level.bucket(h).load(std::memory_order_relaxed);
    const hash_node* below = level_below(level, w);
    if (below != nullptr)
      prefetch_level_bucket(level, below, h);
    else if (!is_hash(w))
      __builtin_prefetch(leaf_of(w));
    if (hoisted && level.overflow_may_hold(h)) {
      const word o = level.overflow.load(std::memory_order_relaxed);
      if (o != 0 && !is_hash(o)) __builtin_prefetch(leaf_of(o));
    }
    return below != nullptr;
  }
  // A miss that the key's root bucket decides - the bucket is empty, or its
  // summary rules the key out - reads that one word and follows no pointer,
  // so lookups answer it before they take guards or enter a read-side
  // section (the root lives as long as the map, and its buckets are never
  // frozen). Taking, publishing and clearing hazard pointers had made such
  // misses take 1.75x as long in a loop of lookups at 1e6 keys
  // (bench/results/README.md, "Misses without guards").
  //
  // Only where guards cost something: under RCU they are free, and a read of
  // the bucket before the section made urcu::memb hits take 1.2x as long in
  // the same loop (its misses 0.8x; qsbr's within noise either way), so there
  // lookups read the bucket inside their section ("The root peek under RCU").
  // (Stateless guards, as detail::guard_lease tells them apart.)
  static constexpr bool peeks_before_guards = !std::is_empty_v<typename Reclamation::guard>;
  struct root_peek {
    const std::atomic<word>* bucket; // nullptr: the key is absent
    word value; // what the bucket held (lookup's guess); 0 where nothing was read
  };
  root_peek peek_root(std::uint64_t h) const noexcept {
    const std::atomic<word>& bucket = root_->bucket(h);
    // 0, no bucket's word: lookup reads and tests the bucket itself.
    if constexpr (!peeks_before_guards) return {&bucket, 0};
    // relaxed: no pointer in the word is followed, and coherence alone makes
    // this read see every insert that happens before it; linearized here, as
    // lookup()'s read of the same word.
    const word w = bucket.load(std::memory_order_relaxed);
    return {summary_excludes(w, h) || w == to_word(root_) ? nullptr : &bucket, w};
  }
  template <class K>
  [[gnu::always_inline]] const_iterator find_any(const K& key) const {
    const std::uint64_t h = hash_of(key);
    const root_peek peek = peek_root(h);
    if (peek.bucket == nullptr) return end();
    reader g(*domain_);
    const leaf* l = lookup(h, key, *g, *peek.bucket, peek.value, peek.value);
    return l != nullptr ? const_iterator(this, l) : end();
  }
  template <class K, class F>
  bool visit_any(const K& key, F&& f) const {
    const std::uint64_t h = hash_of(key);
    const root_peek peek = peek_root(h);
    if (peek.bucket == nullptr) return false;
    reader g(*domain_);
    const leaf* l = lookup(h, key, *g, *peek.bucket, peek.value, peek.value);
    if (l == nullptr) return false;
    std::forward<F>(f)(LeafPolicy::value(*l));
    return true;
  }
  static constexpr auto any_element = [](const value_type&) { return true; };
  // Lock-free: a pass ends in a retry only when the mark's CAS failed
  // because another thread changed found's next word (an erase, a
  // replacement, an append after it).
  template <class K, class Pred>
  size_type erase_any(const K& key, Pred&& pred) {
    const std::uint64_t h = hash_of(key);
    writer g(*domain_);
    for (;;) {
      const spot s = locate(h, key, *g, search_for::existing);
      if (s.found == nullptr || !pred(LeafPolicy::value(*s.found))) return 0; // g.cur protects it
      // key may borrow from the element (lfht_remove given the table's own
      // key): the element must outlive the unlinking search below, which
      // compares with key and moves g.cur on. A hand-over, not a protect: cur
      // still holds the element here, and held's release store comes before
      // cur's later ones, so no scan sees the element in neither.
      g->held.reset_protection(s.found);
      word expected = s.found_next;
      // [trie.mark] the linearization point of erase; readers test the mark
      // ([trie.read]). release: our reads of the leaf come before it.
      if (s.found->next.compare_exchange_strong(
              expected, expected | deleted, std::memory_order_release, std::memory_order_relaxed)) {
        adjust_size(-1);
        tidy_after(s, expected | deleted, h, key, *g);
        return 1;
      }
    }
  }

  template <class K>
  std::uint64_t hash_of(const K& key) const {
    return detail::mix_hash(static_cast<std::uint64_t>(hash_(key)));
  }
  // A leaf's hash: stored in it, or recomputed from its key (see the policy).
  static constexpr bool leaf_stores_hash = requires(const leaf& l) { l.hash; };
  std::uint64_t leaf_hash(const leaf& l) const {
    if constexpr (leaf_stores_hash)
      return l.hash;
    else
      return hash_of(LeafPolicy::key(l));
  }
  // Rounds 3 and 4 of prefetch(first, last) ask whether a leaf is the key's
  // own. A leaf without its hash, whose key costs more to hash than to
  // compare (an atom's text), is compared with the key, read again from the
  // range when it is a forward range: rehashing the leaves made the atom
  // workload's prefetched pieces 0.95x on one thread.
  template <class It>
  static constexpr bool prefetch_compares_keys =
      !leaf_stores_hash && !detail::rehash_is_cheap_v<Key, Hash> && std::forward_iterator<It>;
  // A cheap filter before comparing keys: false only if l's key has another hash.
  // It keeps a lookup from reading the text of the other keys in its chain:
  // std::string keys moved into a map, their text apart from their leaves,
  // had hits 0.89x-0.96x as fast without it (copied keys, whose text follows
  // the leaf, 0.96x-1.08x; bench/results/README.md, "String keys against oneTBB").
  static bool hash_may_match(const leaf& l, std::uint64_t h) noexcept {
    if constexpr (leaf_stores_hash)
      return l.hash == h;
    else
      return true;
  }
  bool can_expand(const hash_node* n) const noexcept {
    return n->consumed + n->bits + child_bits(n) <= 64;
  }
  unsigned child_bits(const hash_node* n) const noexcept {
    return n == root_ ? config_.level_bits : config_.deep_level_bits;
  }
  // A level's shape follows from its depth (child_bits): a bucket leads only
  // to a level one deeper (compression reopens the parent's bucket, it never
  // links past a level), so locate() carries the shape down and indexes a
  // level without reading its header.
  struct level_shape {
    unsigned consumed, bits;
    bool root;
    std::atomic<word>& bucket(hash_node& n, std::uint64_t h) const noexcept {
      assert(n.consumed == consumed && n.bits == bits);
      return n.buckets()[hash_node::index(h, consumed, bits)];
    }
  };
  level_shape root_shape() const noexcept { return {0, config_.root_bits, true}; }
  level_shape shape_below(level_shape s) const noexcept {
    return {s.consumed + s.bits, s.root ? config_.level_bits : config_.deep_level_bits, false};
  }

  // Threads with ids below shards - 1 each own a shard and add to it without
  // a locked instruction (two of an erase-and-insert pair's five: the pair
  // took 0.92x-0.94x the time in cache, bench/results/spot_zeroing/); the
  // rest share the last shard. An id is one live thread's at a time, and a
  // reused id's previous owner released it (release) before its next owner
  // claimed it (acquire, thread_registry), so each owned shard has one
  // writer at a time, ordered. Wait-free either way. relaxed: size() is an
  // estimate under concurrent updates.
  void adjust_size(std::ptrdiff_t d) noexcept {
    const thread_registry::id_type id = thread_registry::current_id();
    if (id < shards - 1) {
      std::atomic<std::ptrdiff_t>& owned = *counts_[id];
      const std::ptrdiff_t before = owned.load(std::memory_order_relaxed);
      detail::stress_point(); // a second writer here would lose a count
      owned.store(before + d, std::memory_order_relaxed);
    } else {
      counts_[shards - 1]->fetch_add(d, std::memory_order_relaxed);
    }
  }

  // ------------------------------------------------------- read-only search
  using guard = typename Reclamation::guard;
  using section = typename Reclamation::section;
  static guard make_guard(domain_type& d) { return Reclamation::make_guard(d); }
  guard make_guard() const { return make_guard(*domain_); }

  using reader_guards = detail::trie_reader_guards<Reclamation>;
  using writer_guards = detail::trie_writer_guards<Reclamation>;

  // The guards of one operation, inside its read-side section: the set the
  // calling thread keeps in the map's domain, or a fresh set when that one
  // is in use - a visit() callback, hash or equality that calls into a map
  // (see detail/guard_lease.hpp).
  template <class Guards>
  using lease = detail::guard_lease<Reclamation, Guards>;
  using reader = lease<reader_guards>;
  using writer = lease<writer_guards>;

  // The range prefetch's fourth round, for a key whose bucket's first leaf
  // is not its own and has a successor: if that second leaf is not the
  // key's either, prefetches the third. The first two are cached by now
  // (rounds two and three), so the walk costs two validated protections.
  template <class Holds>
  void prefetch_third_leaf(reader& g, const std::atomic<word>& bucket, Holds holds_key) const {
    const word w = g->cur.protect(bucket, leaf_or_null); // acquires, as in round three
    if (is_hash(w)) return;
    const leaf* first = leaf_of(w);
    // [trie.read] acquire, as a lookup's step: publishes the successor.
    const word nw = first->next.load(std::memory_order_acquire);
    // A marked first leaf's successor may be unlinked behind it (a lookup
    // then validates against an anchor); a hint does not follow it.
    if (is_deleted(nw) || is_hash(nw)) return;
    const leaf* second = leaf_of(nw);
    // Validated as a lookup's step from a live leaf: still its successor,
    // so still reachable when g.next took it.
    if (!g->next.try_protect_if(second,
                                [&] { return first->next.load(std::memory_order_acquire) == nw; }))
      return;
    if (!holds_key(*second)) {
      // relaxed: g.next keeps second readable; its next word is a prefetch address.
      const word third = unmarked(second->next.load(std::memory_order_relaxed));
      if (!is_hash(third)) __builtin_prefetch(leaf_of(third));
    }
    g->next.reset_protection();
  }

  // Round five, for a key whose level's bucket led a level further down (a
  // map that holds many more keys than its root has buckets): protects the
  // way there again - the level by a validated protect of the root bucket,
  // as round three, the level below by one of the level's bucket, which
  // holds while g.cur protects the level (a level leaves the trie only
  // empty and frozen, which changes that word) - and prefetches in the level
  // below as round three did in the level.
  void prefetch_in_second_level(reader& g, const std::atomic<word>& bucket, std::uint64_t h) const {
    // protect's validating loads acquire: a level's shape and tags are
    // published by the release CAS that linked it ([trie.link]).
    hash_node* level = level_below_root(g->cur.protect(bucket, pointer_of));
    if (level == nullptr) return;
    const word w = g->next.protect(level->bucket(h), pointer_of);
    if (hash_node* below = level_below(*level, w)) prefetch_in_level(*below, is_hoisted(w), h);
    g->next.reset_protection();
  }

  // One step of a read-only traversal from `cur` (protected by g.cur), whose
  // next word is nw: protects the successor leaf in g.cur and updates the
  // anchor; at the end of the chain protects nothing (see descend()). False
  // if the validation failed (start over).
  static bool step(reader_guards& g, const leaf* cur, word nw, const std::atomic<word>*& anchor,
                   word& anchor_value) {
    const word t = unmarked(nw);
    if (is_hash(t)) return true; // end of chain
    const leaf* nxt = leaf_of(t);
    detail::stress_point(); // nxt may be unlinked and reclaimed right here
    if (!is_deleted(nw)) {
      // cur is live: it becomes the anchor. Validate with its own word.
      if (!g.next.try_protect_if(nxt, [&] {
            // acquire: pairs with the release CAS that linked nxt ([trie.link]).
            return cur->next.load(std::memory_order_acquire) == nw;
          }))
        return false;
      anchor = &cur->next;
      anchor_value = nw;
      g.anchor.reset_protection(cur); // safe: g.cur protects it
      g.run.reset_protection(nxt);    // safe: g.next protects it
    } else if (!g.next.try_protect_if(nxt, [&] {
                 // The anchor unchanged and unmarked: the run after it, cur
                 // and cur's frozen successor are all still reachable.
                 return anchor->load(std::memory_order_acquire) == anchor_value;
               })) {
      return false;
    }
    g.cur.reset_protection(nxt); // safe: g.next protects it
    return true;
  }

  // At the end of a chain that continues in the level `below`: protects it
  // in g.anchor, as the owner of the next link (its bucket), validated like
  // a step to a leaf - by the last leaf's own word if that leaf is live (it
  // is then reachable, and so is its successor), else by the anchor (the
  // chain was empty, or ended in a run of marked leaves). A level leaves the
  // trie only once it is empty and frozen, which changes that word. Kept
  // apart from step(): a lookup that stays in its level pays nothing for it.
  static bool descend(reader_guards& g, const hash_node* below, const leaf* last, word last_next,
                      const std::atomic<word>* anchor, word anchor_value) {
    detail::stress_point(); // below may be removed and reclaimed right here
    if (!g.next.try_protect_if(below, [&] {
          // acquire: pairs with [trie.link] (the level was linked) and [trie.detach].
          if (last != nullptr && !is_deleted(last_next))
            return last->next.load(std::memory_order_acquire) == last_next;
          return anchor->load(std::memory_order_acquire) == anchor_value;
        }))
      return false;
    g.anchor.reset_protection(below); // safe: g.next protects it
    return true;
  }

  // The live leaf with key, protected by g.cur, or nullptr. Always inlined
  // into its callers (find, visit, contains, iteration): once compression
  // grew it, GCC 12 kept it out of line in some of them, and a program that
  // calls contains() in a loop lost 12% there (1e6 keys, one thread, half
  // hits, eight interleaved runs; the same two cache misses dominate either
  // way, so we measured this, we did not diagnose it). The scalability
  // runner's visit() had kept it inlined and does not change.
  template <class K>
  [[gnu::always_inline]] const leaf* lookup(std::uint64_t h, const K& key, reader_guards& g) const {
    const std::atomic<word>& bucket = root_->bucket(h);
    // relaxed: a guess, validated by protect; 0 is no bucket's word.
    return lookup(h, key, g, bucket, bucket.load(std::memory_order_relaxed), 0);
  }
  // root_bucket: the key's bucket in the root; guess: a value read from it
  // (protect validates it); summarized: a word whose summary the caller
  // found not to rule the key out (peek_root's): a bucket holding that same
  // word needs no second test, its summary being part of the word.
  template <class K>
  [[gnu::always_inline]] const leaf* lookup(std::uint64_t h, const K& key, reader_guards& g,
                                            const std::atomic<word>& root_bucket, word guess,
                                            word summarized) const {
    hash_node* node = root_;
    bool hoisted = false; // searching node's hoisted chain, then its bucket
    // Where the chain starts: the bucket, or node's hoisted chain. Set at
    // each step down rather than computed from `hoisted` at the loop's top,
    // where GCC 12 tested the first turn's constant false with two jumps.
    const std::atomic<word>* anchor = &root_bucket;
    for (;;) { // one chain per turn; a failed validation starts over from the root
      // g.anchor protects the anchor's owner (node).
      word anchor_value = g.cur.protect(*anchor, guess, leaf_or_null);
      // The chain cannot hold the key (an overflow keeps no summary: its
      // level's tags did that filtering). Linearized at this read.
      if (!hoisted && anchor_value != summarized && summary_excludes(anchor_value, h))
        return nullptr;
      g.run.reset_protection(leaf_or_null(anchor_value)); // safe: g.cur protects it
      word w = anchor_value;
      const leaf* last = nullptr; // the chain's last leaf and its next word
      word last_next = 0;
      bool valid = true;
      while (!is_hash(w)) {
        const leaf* cur = leaf_of(w);
        // [trie.read] acquire: pairs with [trie.link]/[trie.mark]; the mark
        // decides liveness, the link publishes the successor.
        const word nw = cur->next.load(std::memory_order_acquire);
        if (!is_deleted(nw) && hash_may_match(*cur, h) && equal_(LeafPolicy::key(*cur), key))
          return cur;
        if (!(valid = step(g, cur, nw, anchor, anchor_value))) break;
        last = cur;
        last_next = nw;
        w = unmarked(nw);
      }
      // A failed validation starts over from the root: node itself may be
      // gone (g.anchor protects it only until a live leaf takes over).
      if (!valid) {
        node = root_;
        hoisted = false;
        anchor = &node->bucket(h);
        guess = anchor->load(std::memory_order_relaxed); // relaxed: a guess
        continue;
      }
      if (is_frozen(w)) return nullptr; // an empty bucket of a level being removed
      hash_node* const below = node_of(w);
      if (below == node && !hoisted) return nullptr;
      // The chain continues one level down, or (a hoisted chain) in node's
      // bucket; either way its level needs protecting again.
      if (!descend(g, below, last, last_next, anchor, anchor_value)) {
        node = root_;
        hoisted = false;
        anchor = &node->bucket(h);
        guess = anchor->load(std::memory_order_relaxed); // relaxed: a guess
        continue;
      }
      hoisted = below != node && is_hoisted(w) && below->overflow_may_hold(h);
      node = below;
      anchor = hoisted ? &node->overflow : &node->bucket(h);
      guess = anchor->load(std::memory_order_relaxed); // relaxed: a guess
    }
  }

  // ------------------------------------------------------ updating search
  // Not an aggregate, so that `tags` is left uninitialized (only its first
  // min(live, max_tags) are ever read). Zeroing the whole spot in every
  // locate() (GCC 12 emits `rep stos` for its 96 bytes) made an insert of a
  // present key take 1.15x as long in cache and an erase-and-insert pair
  // 1.16x-1.22x at 1e6 keys (bench/results/spot_zeroing/).
  struct spot {
    explicit spot(hash_node* root) noexcept : node(root) {}
    hash_node* node;                   // the level whose chain was searched (g.level protects it)
    hash_node* parent = nullptr;       // the level above it (g.up protects it); nullptr at the root
    std::atomic<word>* link = nullptr; // the bucket or a live leaf's next: holds `found` or `end`
    leaf* found = nullptr;             // the live leaf with the key (g.cur protects it), or nullptr
    word found_next = 0;               // found->next as read (unmarked)
    word found_word = 0;               // link's word as read: found (with a bucket's summary)
    word end = 0;                      // without `found`: the chain's end word (open or frozen)
    bool at_head = false;              // not walked: the bucket's summary rules the key out
    word head = 0;                     // the bucket's word as last read (its chain's first leaf)
    std::size_t live = 0;              // live leaves before link in this chain
    std::uint16_t tags[max_tags];      // tags of the first of them (a closing chain's)
  };

  // Michael's search: returns the live leaf with key, or the end of the chain
  // at the deepest level where the key would go: to_word(node) at link, or a
  // frozen bucket (callers that insert settle_frozen() it first; for others
  // the key is absent, as for lookup). Unlinks and retires marked leaves.
  // A level reached through a hoisted bucket is searched in its hoisted chain
  // (unless the tags rule h out), then in its bucket; the spot returned for
  // an absent key is always a bucket's chain.
  // A bucket whose summary rules the key out may end the search there
  // (s.at_head), depending on what the search is for:
  // * unlink (tidy_after): never; the search must pass the leaves its caller
  //   marked, whose bits the summary keeps;
  // * existing (erase, update): always; the key is absent, linearized at the
  //   bucket's read, as for lookup(). An erase of an absent key walked its
  //   whole chain before; without that walk the 90/5/5 mixes of integer keys
  //   ran 1.05x-1.13x as fast (bench/results/README.md, "Erases of absent keys");
  // * insert: with config.head_inserts, while the summary has fewer than
  //   chain_threshold bits; the key goes in at the chain's head (link_at_head).
  enum class search_for { unlink, existing, insert };
  template <class K>
  spot locate(std::uint64_t h, const K& key, writer_guards& g, search_for purpose) {
    spot s(root_);
    bool hoisted = false;
    // s.node's shape, from its depth rather than its header, so that the
    // bucket's load need not wait for the header's: a growing atom table's
    // interns ran 1.21x (bench/results/level_shape/). lookup() keeps reading
    // the header: its hits did not gain with the same change, and a sized
    // map's hits and misses ran 0.94x / 0.91x (five rounds, one thread).
    level_shape shape = root_shape();
    // The chain to walk and the summary bits that end its walk, set at each
    // step (as in lookup(): not from `hoisted` at the loop's top).
    std::atomic<word>* first = &shape.bucket(*s.node, h);
    word unless_bits = summary_bits_that_end(purpose, h);
    for (;;) {
      if (!walk(
              s, *first,
              [&](const leaf& l) {
                return hash_may_match(l, h) && equal_(LeafPolicy::key(l), key);
              },
              g, unless_bits, summary_bits_allowed(purpose)))
        continue; // restart the chain
      if (s.found != nullptr || s.at_head) return s;
      if (hoisted) { // its end is to_word(s.node); g.level still protects s.node
        hoisted = false;
        first = &shape.bucket(*s.node, h);
        unless_bits = summary_bits_that_end(purpose, h);
        continue;
      }
      if (is_frozen(s.end) || s.end == to_word(s.node)) return s;
      hash_node* const below = node_of(s.end); // protected by g.cur (walk)
      g.up.reset_protection(s.node);           // safe: g.level protects it (or the root)
      g.level.reset_protection(below);         // safe: g.cur protects it
      s.parent = std::exchange(s.node, below);
      shape = shape_below(shape);
      hoisted = is_hoisted(s.end) && below->overflow_may_hold(h);
      first = hoisted ? &below->overflow : &shape.bucket(*below, h);
      unless_bits = hoisted ? 0 : summary_bits_that_end(purpose, h);
    }
  }

  // The bits walk() takes as unless_bits and max_summary_bits for a purpose.
  word summary_bits_that_end(search_for purpose, std::uint64_t h) const noexcept {
    const bool ends =
        purpose == search_for::existing || (purpose == search_for::insert && config_.head_inserts);
    return ends ? summary_of(h) : 0;
  }
  unsigned summary_bits_allowed(search_for purpose) const noexcept {
    return purpose == search_for::insert ? config_.chain_threshold
                                         : std::numeric_limits<unsigned>::max();
  }

  // One chain of the search: walks the chain of s.node from `first` (a
  // bucket, or the overflow), unlinking and retiring the marked leaves it
  // passes, up to the leaf `matches` accepts or the end. Fills s.link,
  // s.found and s.found_next, or s.end, s.live and s.tags; s.head is first's
  // word as last read. A deeper level at the end is left protected by g.cur.
  // A nonzero `unless_bits` (a key's summary bits) stops the walk at once,
  // with s.at_head, if first holds a chain whose summary lacks any of them
  // and has fewer than max_summary_bits bits set.
  // False if a concurrent change forces a restart of the chain.
  // Always inlined into its one caller: out of line, an erase and insert
  // again took 931.6 instructions against 805.9 (bench/results/erase_absent/).
  template <class Match>
  [[gnu::always_inline]] bool walk(spot& s, std::atomic<word>& first, Match matches,
                                   writer_guards& g, word unless_bits, unsigned max_summary_bits) {
    std::atomic<word>* link = &first;
    word w = g.cur.protect(*link, pointer_of);
    s.head = w;
    s.at_head = unless_bits != 0 && !is_hash(w) && (w & unless_bits) != unless_bits &&
                static_cast<unsigned>(std::popcount(w & summary_mask)) < max_summary_bits;
    if (s.at_head) {
      s.link = link;
      s.found = nullptr;
      s.end = w;
      s.live = 0;
      return true;
    }
    std::size_t live = 0;
    while (!is_hash(w)) {
      leaf* cur = leaf_of(w);
      const word nw = cur->next.load(std::memory_order_acquire); // [trie.read]
      // acquire: cur is still linked after its (unmarked) predecessor, so nw
      // was read while cur was in the chain.
      if (link->load(std::memory_order_acquire) != w) return false;
      if (is_deleted(nw)) {
        if (!unlink(*link, w, cur, nw)) return false;
        // An insert decides head or end again on the new first word (see
        // "Head inserts and appends of one key exclude each other"); an
        // erase reads the new word's summary. Lock-free still: this pass
        // unlinked a leaf.
        if (unless_bits != 0 && link == &first) return false;
        w = g.cur.protect(*link, pointer_of);
        if (is_deleted(w)) return false; // link's owner died meanwhile: never CAS a marked word
        if (link == &first) s.head = w;
        continue;
      }
      if (matches(*cur)) {
        s.link = link;
        s.found = cur;
        s.found_next = nw;
        s.found_word = w;
        s.live = live;
        return true;
      }
      if (live < max_tags) s.tags[live] = tag_of(leaf_hash(*cur));
      ++live;
      const word t = nw;
      const bool onward = t != to_word(s.node); // a leaf, or a deeper level
      if (onward && !g.next.try_protect_if(pointer_of(t), [&] {
            // acquire: pairs with the release CAS that linked the successor ([trie.link]).
            return cur->next.load(std::memory_order_acquire) == nw;
          }))
        return false;
      link = &cur->next;
      g.prev.reset_protection(cur); // the owner of link; safe: g.cur protects it
      if (onward) g.cur.reset_protection(pointer_of(t)); // safe: g.next protects it
      w = t;
    }
    s.link = link;
    s.found = nullptr;
    s.end = w;
    s.live = live;
    return true;
  }

  // Unlinks the marked leaf l (its next word: marked_next) from link, which
  // held w (l's word; a bucket's has the summary bits). True if this call
  // did; it retires l then. Throws only in reserve_retire, before the CAS.
  bool unlink(std::atomic<word>& link, word w, leaf* l, word marked_next) {
    reserve_retire();
    // A bucket keeps its summary while a leaf follows (a leaf's word has none).
    const word successor =
        is_hash(marked_next) ? unmarked(marked_next) : unmarked(marked_next) | (w & summary_mask);
    // [trie.unlink] release: pairs with [trie.read]; the successor was
    // published before (it was linked after l).
    if (!link.compare_exchange_strong(w, successor, std::memory_order_release,
                                      std::memory_order_relaxed))
      return false;
    retire(l); // unreachable now; only the unlinking thread retires
    return true;
  }

  // --------------------------------------------------------- compression
  // A level below the root whose buckets are all empty is removed (Areias and
  // Rocha's compression, Computing 2022, by a protocol of lfcore's own):
  // 1. the eraser that emptied a bucket sees every bucket empty and starts an
  //    attempt: compression (id, idle) -> (id + 1, freezing) ([trie.attempt]);
  // 2. it freezes each bucket: to_word(L) -> frozen_word(id) ([trie.freeze]).
  //    A frozen bucket takes no insert (every CAS on a bucket expects a leaf
  //    or to_word(L)); a bucket that is not empty ends the attempt;
  // 3. commit: (id, freezing) -> (id, committed). An insert that meets a
  //    frozen bucket first aborts a freezing attempt, (id, freezing) ->
  //    (id, idle), so a commit means every bucket stayed frozen since it was
  //    frozen: L holds nothing, for good;
  // 4. detach: the parent's chain for L's bucket ends at L; any thread swings
  //    that end back to the parent ([trie.detach]) and the one that did
  //    retires L. A thread that meets a committed level helps, so a stalled
  //    initiator blocks nobody.
  // An aborted attempt's buckets are thawed (frozen_word(id) -> to_word(L))
  // by its initiator and by anyone who meets them once the attempt is over:
  // ids are never reused, so a thaw cannot hit a later attempt's freeze (an
  // attempt stores its own id over a stale one). Lookups, erases and
  // iteration read a frozen bucket as empty: it was empty when frozen, a key
  // can enter it only after a thaw, and while L is committed but attached the
  // parent's chain is closed, so the key is in neither.
  // Progress: an attempt fails only when a key arrived or another attempt ran;
  // an insert retries only after it aborted or helped an attempt - each
  // retry follows another operation's step (lock-free).
  // Model-checked: tests/model/trie_compression.pml has these steps with
  // erases, inserts and lookups, and Spin searches every interleaving of
  // three threads for lost or doubled keys, non-linearizable results,
  // double retirement and livelock; breaking the abort, the commit's CAS or
  // the freeze's id test is caught. trie_compression_ra.pml checks the
  // memory orders below under release/acquire (stale loads, as on Arm).
  static constexpr std::uint64_t idle = 0, freezing = 1, committed = 2;
  static std::uint64_t attempt(std::uint64_t id, std::uint64_t phase) noexcept {
    return (id << 2) | phase;
  }

  // After an erase: while the level its key would go to is empty, remove it
  // (then its parent may be empty too).
  template <class K>
  void unlink_and_compress(std::uint64_t h, const K& key, writer_guards& g) {
    // Unlinks the erased leaf (and any other marked leaf on the way).
    spot s = locate(h, key, g, search_for::unlink);
    while (config_.compress_empty_levels && remove_if_empty(s, h))
      s = locate(h, key, g, search_for::unlink);
  }
  // The same, after an operation took effect at its CAS (erase, replace):
  // unlinking what it marked is help every later writer passing by also
  // gives, so if KeyEqual throws meanwhile the operation has still
  // succeeded - it returns normally and leaves the marked leaf (or an empty
  // level) to the next writer. An operation that throws changed nothing.
  template <class K>
  void tidy_after(std::uint64_t h, const K& key, writer_guards& g) noexcept {
    try {
      unlink_and_compress(h, key, g);
    } catch (...) { // KeyEqual's exception: see above
    }
  }
  // The same for s.found, which the caller just marked (its next word is now
  // marked_next) after the search that gave s. First, as Michael's delete
  // does, one CAS on s.link, expecting s.found_word: s.link's owner and
  // s.found are still protected (g.prev or g.level, and g.cur), and a leaf
  // is linked once, so a link that holds that word holds s.found (a bucket's
  // summary bits may have changed and come back: the CAS then acts on the
  // state it expects, as walk()'s does). That spares a search from the root,
  // unless the chain may now be empty below the root: then the search runs
  // anyway, for compression. A failed CAS leaves the unlinking to that
  // search, as before. On a sized map, erasing and re-inserting a cached key
  // took about 6% less time, 4% at 1e6 keys (a probe, six paired rounds).
  template <class K>
  void tidy_after(const spot& s, word marked_next, std::uint64_t h, const K& key,
                  writer_guards& g) noexcept {
    try {
      detail::stress_point(); // others change the chain before the unlink
      if (unlink(*s.link, s.found_word, s.found, marked_next) &&
          (s.parent == nullptr || !is_hash(marked_next) || !config_.compress_empty_levels))
        return;
      unlink_and_compress(h, key, g);
    } catch (...) { // KeyEqual's exception or bad_alloc: see above
    }
  }

  // Steps 1-4 above for s.node, if its chain for h is empty and so are all
  // its other buckets. True if s.node was removed.
  bool remove_if_empty(const spot& s, std::uint64_t h) {
    if (s.parent == nullptr || s.found != nullptr || s.link != &s.node->bucket(h) ||
        s.end != to_word(s.node))
      return false;
    // An attempt that fails tries again if the level still looks empty: the
    // key that made it fail may be erased meanwhile by an eraser that saw
    // the attempt running and left the level to it.
    for (;;) {
      if (!looks_empty(s.node)) return false;
      switch (try_remove(s, h)) {
      case outcome::removed:
        return true;
      case outcome::busy:
        return false; // the attempt that runs decides (and retries)
      case outcome::failed:
        continue;
      }
    }
  }

  // relaxed: a hint; the freeze decides. A frozen bucket reads as empty: it
  // may belong to an aborted attempt whose initiator has not thawed it yet.
  // The overflow needs no freeze: once empty it stays empty (hoist()), and
  // until its chain is hoisted and empty the level is not removed.
  static bool looks_empty(hash_node* level) noexcept {
    // acquire: pairs with hoist()'s release, so the detach below finds the
    // parent's bucket as the closer left it.
    if (level->overflow.load(std::memory_order_acquire) != to_word(level)) return false;
    for (std::size_t i = 0; i < level->size(); ++i) {
      const word w = level->buckets()[i].load(std::memory_order_relaxed);
      if (w != to_word(level) && !is_frozen(w)) return false;
    }
    return true;
  }

  enum class outcome { removed, busy, failed };
  outcome try_remove(const spot& s, std::uint64_t h) {
    hash_node* const level = s.node;
    std::atomic<word>* const buckets = level->buckets();
    // relaxed: the CAS below validates it.
    std::uint64_t a = level->compression.load(std::memory_order_relaxed);
    if ((a & 3) != idle) return outcome::busy; // an attempt runs, or level is going
    const std::uint64_t id = (a >> 2) + 1;
    // [trie.attempt] acq_rel, like every CAS on compression. The phases
    // need no order: a read-modify-write reads the word's last value
    // whatever its order, and the one read that may be stale, a failing CAS
    // in settle_frozen(), is bounded by [trie.freeze]
    // (trie_compression_ra.pml's MUTANT 3, these CASes relaxed, passes).
    // acq_rel is kept: this path runs once per removed level, and on x86
    // every CAS is a full barrier anyway.
    if (!level->compression.compare_exchange_strong(a, attempt(id, freezing),
                                                    std::memory_order_acq_rel))
      return outcome::busy;
    bool all_frozen = true;
    for (std::size_t i = 0; i < level->size() && all_frozen; ++i) {
      detail::stress_point(); // inserts race into the buckets not yet frozen
      word expected = to_word(level);
      // [trie.freeze] release: whoever reads frozen_word(id) (acquire) then
      // reads compression at (id, freezing) or later - even in a CAS that
      // fails, which is only a load. Relaxed, an insert's settle_frozen()
      // could read the phase before the attempt, thaw without aborting it,
      // and link a key into a level that then commits
      // (trie_compression_ra.pml, mutant 1).
      while (!buckets[i].compare_exchange_strong(
          expected, frozen_word(id), std::memory_order_release, std::memory_order_relaxed)) {
        // A stale freeze of an earlier, aborted attempt is empty: take it
        // over. Anything else - a key, a deeper level, a later attempt - ends ours.
        if (!is_frozen(expected) || frozen_id(expected) > id) {
          all_frozen = false;
          break;
        }
      }
    }
    detail::stress_point(); // an insert may abort the attempt here
    std::uint64_t expected = attempt(id, freezing);
    if (all_frozen && level->compression.compare_exchange_strong(expected, attempt(id, committed),
                                                                 std::memory_order_acq_rel)) {
      detail::stress_point(); // others meet the committed level and help detach it
      detach(s.parent, level, h);
      return outcome::removed;
    }
    expected = attempt(id, freezing); // abort, unless an insert did
    level->compression.compare_exchange_strong(expected, attempt(id, idle),
                                               std::memory_order_acq_rel);
    for (std::size_t i = 0; i < level->size(); ++i) thaw(buckets[i], level, frozen_word(id));
    return outcome::failed;
  }

  // [trie.thaw] A bucket frozen by an attempt that is over is empty again.
  // relaxed: no data is published; inserts validate with their own CAS.
  static void thaw(std::atomic<word>& bucket, const hash_node* level, word frozen) noexcept {
    bucket.compare_exchange_strong(frozen, to_word(level), std::memory_order_relaxed);
  }

  // An insert found its bucket frozen (s.end): it aborts the attempt if it is
  // still freezing and thaws the bucket, or helps a committed one detach.
  // The caller then searches again from the root.
  void settle_frozen(const spot& s, std::uint64_t h) {
    const std::uint64_t id = frozen_id(s.end);
    std::uint64_t a = attempt(id, freezing);
    // acq_rel, as [trie.attempt]: an abort here and the initiator's commit
    // both expect (id, freezing), so only one of them succeeds. If this CAS
    // fails it is a load, not a read-modify-write, but it reads at least
    // (id, freezing): the caller acquired frozen_word(id) ([trie.freeze]).
    if (s.node->compression.compare_exchange_strong(a, attempt(id, idle),
                                                    std::memory_order_acq_rel))
      a = attempt(id, idle); // else a holds the current value
    if (a == attempt(id, committed))
      detach(s.parent, s.node, h);
    else
      thaw(*s.link, s.node, s.end);
  }

  // Step 4: swings parent's bucket for h from the committed level back to
  // parent. A committed level's chain above it is hoisted and empty
  // (looks_empty), so the bucket leads straight to the level: hoisted, or
  // to_word(level) if the chain emptied before its closer hoisted it; only a
  // detach changes it then. Anything else means someone else detached level
  // already. parent is protected by the caller (g.up).
  void detach(hash_node* parent, hash_node* level, std::uint64_t h) {
    std::atomic<word>& bucket = parent->bucket(h);
    // acquire, though nothing needs it (trie_compression_ra.pml's MUTANT
    // 3, relaxed, passes): this thread reached level through this bucket,
    // so it reads that word or the detach's, and the CAS validates it.
    word w = bucket.load(std::memory_order_acquire);
    if (w != hoisted_word(level) && w != to_word(level)) return;
    reserve_retire();
    // [trie.detach] release, as [trie.link], though to_word(parent)
    // publishes nothing new (trie_compression_ra.pml's MUTANT 3,
    // relaxed, passes). The chain is open again: inserts may append to it.
    if (bucket.compare_exchange_strong(w, to_word(parent), std::memory_order_release,
                                       std::memory_order_relaxed))
      retire(level); // unreachable now; readers inside it hold hazard pointers on it
  }

  // A leaf built for an insert: freed unless it was published, so that an
  // exception before the linking CAS (KeyEqual in a search, a new level's
  // allocation) leaks nothing.
  struct unpublished_leaf {
    leaf* l;
    explicit unpublished_leaf(leaf* fresh = nullptr) noexcept : l(fresh) {}
    unpublished_leaf(const unpublished_leaf&) = delete;
    unpublished_leaf& operator=(const unpublished_leaf&) = delete;
    ~unpublished_leaf() {
      if (l != nullptr) leaf_deleter()(l);
    }
    leaf* published() noexcept { return std::exchange(l, nullptr); }
  };

  // Appends `fresh` (whose key is absent) or finds the live element with
  // its key, and returns done(element, inserted) while the element is
  // protected; fresh is allocated by make(h) only when needed and freed if
  // unused. Strong guarantee up to done: if anything else throws, the map is
  // unchanged.
  template <class K, class Make, class Done>
  decltype(auto) emplace_if_absent_then(const K& key, Make make, Done done) {
    const std::uint64_t h = hash_of(key);
    writer g(*domain_);
    unpublished_leaf fresh;
    for (;;) {
      // Once make() ran, key may have been moved from: search with fresh's.
      const spot s = fresh.l != nullptr
                         ? locate(h, LeafPolicy::key(*fresh.l), *g, search_for::insert)
                         : locate(h, key, *g, search_for::insert);
      if (s.found != nullptr) return done(s.found, false); // g.cur protects it
      if (is_frozen(s.end)) {
        settle_frozen(s, h);
        continue;
      }
      if (close_if_full(s, h)) continue;
      if (fresh.l == nullptr) {
        fresh.l = make(h);
        g->held.reset_protection(fresh.l); // before it is published
      }
      if (link(s, fresh.l, h)) {
        adjust_size(1);
        return done(fresh.published(), true);
      }
    }
  }
  // The same, returning an iterator to the element and whether it was
  // inserted. The iterator's guard is taken first: taking it may throw.
  template <class K, class Make>
  std::pair<const_iterator, bool> emplace_if_absent(const K& key, Make make) {
    guard keep = make_guard();
    return emplace_if_absent_then(key, std::move(make), [&](leaf* l, bool inserted) {
      keep.reset_protection(l); // while the lease's guard still protects it
      return std::pair<const_iterator, bool>(const_iterator(this, l, std::move(keep)), inserted);
    });
  }
  // make(h) for the calls above: the leaf of Key(key) and mapped_type(args...),
  // which it forwards (the call's arguments outlive it).
  template <class KeyArg, class... Args>
  static auto piecewise_leaf(KeyArg&& key, Args&&... args) {
    return [key = std::forward_as_tuple(std::forward<KeyArg>(key)),
            args = std::forward_as_tuple(std::forward<Args>(args)...)](std::uint64_t h) mutable {
      return LeafPolicy::make(h, std::piecewise_construct, std::move(key), std::move(args));
    };
  }
  // done() for try_emplace_and_visit.
  template <class F>
  static auto visit_element(F& f) {
    return [&f](leaf* l, bool inserted) {
      f(LeafPolicy::value(*l), inserted);
      return inserted;
    };
  }

  // insert_or_assign with a prepared leaf, which it owns from the start.
  // Strong guarantee, as emplace_if_absent.
  std::pair<const_iterator, bool> assign(leaf* prepared) {
    unpublished_leaf fresh(prepared);
    writer g(*domain_);
    guard keep = make_guard();
    keep.reset_protection(fresh.l); // before it is published
    const auto& key = LeafPolicy::key(*fresh.l);
    const std::uint64_t h = leaf_hash(*fresh.l);
    for (;;) {
      const spot s = locate(h, key, *g, search_for::insert);
      if (s.found == nullptr) {
        if (is_frozen(s.end)) {
          settle_frozen(s, h);
          continue;
        }
        if (close_if_full(s, h)) continue;
        if (link(s, fresh.l, h)) {
          adjust_size(1);
          return {const_iterator(this, fresh.published(), std::move(keep)), true};
        }
        continue;
      }
      if (leaf* l = replace_found(s, fresh, h, *g))
        return {const_iterator(this, l, std::move(keep)), false};
    }
  }

  // s.found, as the search that gave s saw it, replaced by fresh (a leaf with
  // the same key, which the caller protects): fresh takes found's place,
  // found is marked with fresh as its successor, in one CAS ([trie.mark];
  // release: fresh's construction comes before it is reachable), then found
  // is unlinked. Returns fresh, published, or nullptr if found was replaced,
  // erased or unlinked since the search (the caller searches again).
  leaf* replace_found(const spot& s, unpublished_leaf& fresh, std::uint64_t h, writer_guards& g) {
    fresh.l->next.store(s.found_next, std::memory_order_relaxed); // published by the CAS
    word expected = s.found_next;
    // relaxed on failure: the caller reads nothing through it, it searches again.
    if (!s.found->next.compare_exchange_strong(expected, to_word(fresh.l) | deleted,
                                               std::memory_order_release,
                                               std::memory_order_relaxed))
      return nullptr;
    leaf* const l = fresh.published();
    tidy_after(s, to_word(l) | deleted, h, LeafPolicy::key(*l), g); // unlinks found
    return l;
  }

  template <class K, class F, class... Args>
  std::pair<const_iterator, bool> upsert_any(K&& key, F& f, Args&&... args) {
    return update_or_emplace(key, f,
                             piecewise_leaf(std::forward<K>(key), std::forward<Args>(args)...));
  }

  // update and upsert. A live element with the key is replaced (replace_found)
  // by a leaf with its key and f(its value); f reads the element the CAS
  // expects, and leaves are never written once published, so the new value
  // is f of the value it replaces. An absent key gets make_absent(h)'s leaf,
  // linked as emplace_if_absent links, made once and kept across retries
  // (its arguments may have been moved into it); with make_absent = nullptr
  // the call returns end() instead. Strong guarantee, as emplace_if_absent.
  // Progress: a pass ends in a retry only when a CAS failed (on found's next
  // word, or at the chain's end) because another thread changed that word,
  // or after helping a close or a compression: lock-free, as the others.
  template <class K, class F, class MakeAbsent>
  std::pair<const_iterator, bool> update_or_emplace(const K& key, F& f, MakeAbsent make_absent) {
    const std::uint64_t h = hash_of(key);
    writer g(*domain_);
    unpublished_leaf absent;
    guard keep = make_guard(); // for the returned iterator
    constexpr search_for purpose =
        std::is_null_pointer_v<MakeAbsent> ? search_for::existing : search_for::insert;
    for (;;) {
      // Once make_absent ran, key may have been moved from: search with its leaf's.
      const spot s = absent.l != nullptr ? locate(h, LeafPolicy::key(*absent.l), *g, purpose)
                                         : locate(h, key, *g, purpose);
      if (s.found != nullptr) {
        const auto& old = LeafPolicy::value(*s.found); // g.cur protects it
        unpublished_leaf fresh(LeafPolicy::make(h, old.first, std::invoke(f, old.second)));
        keep.reset_protection(fresh.l); // before it is published
        if (leaf* l = replace_found(s, fresh, h, *g))
          return {const_iterator(this, l, std::move(keep)), false};
        continue;
      }
      if constexpr (std::is_null_pointer_v<MakeAbsent>) {
        return {end(), false};
      } else {
        if (is_frozen(s.end)) {
          settle_frozen(s, h);
          continue;
        }
        if (close_if_full(s, h)) continue;
        if (absent.l == nullptr) absent.l = make_absent(h);
        keep.reset_protection(absent.l); // before it is published
        if (link(s, absent.l, h)) {
          adjust_size(1);
          return {const_iterator(this, absent.published(), std::move(keep)), true};
        }
      }
    }
  }

  // At the end of a full chain (chain_threshold live leaves) of a node that can
  // expand: closes it with a new hash node one level down. True if the caller
  // must search again (closed by us or someone else).
  bool close_if_full(const spot& s, std::uint64_t h) {
    if (s.live < config_.chain_threshold || !can_expand(s.node)) return false;
    // Every summary bit first: until hoisted, the chain leads lookups on into
    // the child, whose keys its bucket's summary does not describe. From the
    // word the walk read, so that it fails if a key was linked at the head
    // since (s.tags would lack it); once every bit is set none can be. It
    // fails only when another writer changed the bucket (a link, an unlink,
    // an OR of bits), so the insert's search again is lock-free.
    if constexpr (summary_mask != 0) {
      detail::stress_point(); // a key may be linked at the chain's head here
      word expected = s.head;
      // relaxed, as add_summary (a read-modify-write: the bucket's release
      // sequence goes on); the closing CAS below publishes.
      if (!s.node->bucket(h).compare_exchange_strong(expected, s.head | summary_mask,
                                                     std::memory_order_relaxed))
        return true;
    }
    hash_node* child = new_hash_node(s.node->consumed + s.node->bits, child_bits(s.node));
    // The chain's keys: those the walk saw live (nothing was appended since,
    // or the CAS below fails; a replacement keeps its key's hash).
    child->tag_count = static_cast<std::uint8_t>(s.live <= max_tags ? s.live : max_tags + 1);
    std::copy_n(s.tags, std::min(s.live, max_tags), child->tags);
    word expected = to_word(s.node);
    // [trie.link] release: the child's buckets and tags are initialised before it is reachable.
    if (!s.link->compare_exchange_strong(expected, to_word(child), std::memory_order_release,
                                         std::memory_order_relaxed)) {
      free_hash_node(child); // never published
      return true;
    }
    hoist(s.node->bucket(h), child);
    return true;
  }

  // Closing and hoisting are model-checked with inserts, erases and lookups
  // (tests/model/trie_expansion.pml, every interleaving of three threads):
  // leaving out the closer's summary CAS, the search of a hoisted chain
  // whose tags match, or hoist()'s CAS is caught.
  // Hoisting (the closer's second step, see "Expansion"): the bucket of a
  // chain just closed by `child` is swung from the chain's first leaf to
  // hoisted_word(child), with child->overflow taking over as the link to
  // that leaf; lookups then skip the chain when its tags rule their hash
  // out. Only the closer writes a level's overflow until it is hoisted, and
  // nothing else writes this bucket meanwhile but the unlinking of the
  // chain's first leaf (the chain takes no key, at its head neither since
  // the closer set every summary bit; the level above is not empty): so a
  // failed CAS means a new first leaf, and a CAS that succeeds installs the
  // first leaf of that moment, whatever happened before (an address reused
  // by a replacement is the first leaf all the same). Lock-free: each retry
  // follows an unlink. Readers never read an overflow that is not hoisted
  // (0, or a stale first leaf): compression, which needs overflow ==
  // to_word(child), leaves such a level alone.
  static void hoist(std::atomic<word>& bucket, hash_node* child) noexcept {
    // acquire: the first leaf's link is read from the bucket as a walk would.
    word first = bucket.load(std::memory_order_acquire);
    for (;;) {
      if (is_hash(first)) { // the chain emptied: nothing to hoist (first == to_word(child))
        // release: pairs with looks_empty's acquire.
        child->overflow.store(to_word(child), std::memory_order_release);
        return;
      }
      // published by the CAS; an overflow keeps no summary (the tags filter it)
      child->overflow.store(first & ~summary_mask, std::memory_order_relaxed);
      detail::stress_point(); // the first leaf may be unlinked here
      // [trie.hoist] release: readers that see the hoisted bucket (acquire)
      // read this overflow or a later one.
      if (bucket.compare_exchange_strong(first, hoisted_word(child), std::memory_order_release,
                                         std::memory_order_acquire))
        return;
    }
  }

  // Links fresh (hash h, absent at s) where the search that gave s decided:
  // at the chain's head or at its end. Every insert takes that decision on
  // the bucket word its walk read last, so that head inserts and appends of
  // one key exclude each other (see the summary notes). False: search again.
  bool link(const spot& s, leaf* fresh, std::uint64_t h) {
    return s.at_head ? link_at_head(s, fresh, h) : link_at_end(s, fresh, h);
  }

  // Links fresh (hash h) at the end of the chain s found without its key:
  // into the empty bucket with its summary bits, or after the summary took
  // them. False if the chain changed (search again).
  bool link_at_end(const spot& s, leaf* fresh, std::uint64_t h) {
    fresh->next.store(to_word(s.node), std::memory_order_relaxed); // published by the CAS
    std::atomic<word>& bucket = s.node->bucket(h);
    const bool into_empty_bucket = s.link == &bucket;
    if (!into_empty_bucket && !add_summary(bucket, summary_of(h))) return false;
    const word linked = into_empty_bucket ? to_word(fresh) | summary_of(h) : to_word(fresh);
    word expected = to_word(s.node);
    // [trie.link] release: fresh's key, value and next are written before
    // readers can reach it (and the summary bits, for any reader that
    // acquires the link). Fails if anything was appended, closed or marked.
    return s.link->compare_exchange_strong(expected, linked, std::memory_order_release,
                                           std::memory_order_relaxed);
  }

  // Links fresh (hash h) at the head of the chain whose bucket summary ruled
  // it out (s.at_head: the bucket held s.head). The CAS expects that word, so
  // it fails if any leaf with h's key was linked into the chain since: an
  // insert of that key changes the word, at the head or by adding its bits
  // before it appends. False if the bucket changed (search again): another
  // writer's step, so the retry loop is lock-free.
  bool link_at_head(const spot& s, leaf* fresh, std::uint64_t h) {
    // The old first leaf, protected by g.cur since the walk read s.head;
    // a leaf's next word carries no summary.
    fresh->next.store(s.head & ~summary_mask, std::memory_order_relaxed); // published by the CAS
    detail::stress_point();
    word expected = s.head;
    // [trie.link] release: fresh's key, value and next are written before
    // readers can reach it, with its summary bits in the same word.
    return s.link->compare_exchange_strong(expected,
                                           (s.head & summary_mask) | to_word(fresh) | summary_of(h),
                                           std::memory_order_release, std::memory_order_relaxed);
  }

  // ORs bits into the summary of a bucket that heads a chain. False if it
  // does not any more (the chain emptied or was hoisted: search again).
  // relaxed: a lookup that reads the bucket before this OR is linearized
  // before the link that follows it; one that acquires that link finds the
  // bits by coherence. One that reads the OR's word still sees the chain's
  // first leaf: as a read-modify-write the OR continues the release sequence
  // of the link it read, which C++ keeps for read-modify-writes only (a
  // compare-and-store breaks it: tests/model/trie_publication.pml, mutant
  // 6). The bits stay until the bucket empties or is hoisted, which the
  // caller's link or close CAS then fails on (its end leaf was marked, or its
  // end word closed). Lock-free: the CAS fails when the bucket changed (a
  // link, an unlink or another OR) or spuriously, as a weak CAS may; a bucket
  // that stops changing takes the bits.
  static bool add_summary(std::atomic<word>& bucket, word bits) noexcept {
    if constexpr (summary_mask == 0) return true;
    word w = bucket.load(std::memory_order_relaxed);
    for (;;) {
      if (is_hash(w)) return false;
      if ((w & bits) == bits) return true;
      if (bucket.compare_exchange_weak(w, w | bits, std::memory_order_relaxed)) return true;
    }
  }

  // ------------------------------------------------------------- iteration
  template <class K1, class K2>
  static bool less(std::uint64_t h1, const K1& k1, std::uint64_t h2, const K2& k2) {
    return h1 != h2 ? h1 < h2 : std::less<>()(k1, k2);
  }

  // An iteration position: a mixed hash, a copy of the key and, if the copy
  // may borrow from the leaf (lfht's keys: pointers to text the element
  // frees), a guard on the leaf it was copied from. The guard is empty when
  // the caller vouches for the key, as successor() and operator++ do. Keys
  // that own their copy take none: when each step was a traversal, taking
  // and returning a guard for each candidate it copied, with operator++
  // taking a fresh one for its element, made iteration 1.05x-1.12x slower
  // (map_iterate, 1 to 8 threads, bench/results/README.md).
  using position_key = typename LeafPolicy::position_key;
  struct no_keeper {};
  struct position {
    std::uint64_t hash;
    position_key key;
    [[no_unique_address]] std::conditional_t<LeafPolicy::position_key_borrows, guard, no_keeper>
        keeper{};
  };
  // The position of leaf l, which a guard of the caller's protects now.
  position position_of(std::uint64_t h, const leaf* l) const {
    position p{h, position_key(LeafPolicy::key(*l))};
    if constexpr (LeafPolicy::position_key_borrows) {
      p.keeper = make_guard();
      p.keeper.reset_protection(l); // safe: the caller's guard protects l
    }
    return p;
  }
  // Collectors of the positions a traversal (gather_after) offers: the
  // smallest (begin, successor, and keys that borrow from their leaf), or
  // the batch_size smallest, which an iterator then hands out one by one.
  // Either ignores a position it holds already: a chain whose validation
  // failed is read again.
  struct smallest_one {
    std::optional<position> best;
    template <class K>
    bool wants(std::uint64_t h, const K& key) const {
      return !best || less(h, key, best->hash, best->key);
    }
    void add(position p) { best = std::move(p); }
    bool full() const noexcept { return best.has_value(); }
    const position& last() const noexcept { return *best; }
    static constexpr std::size_t read_ahead_buckets = 16;
  };
  // An iterator's batch: one traversal from the root gathers the positions
  // of the next batch_size elements, read ahead of the batch after it; ++
  // then only looks the next one up. A step had been a traversal of its own,
  // reading its element's bucket again to find the next: gathering made
  // iteration 1.35x-1.4x as fast (map_iterate, 1 to 8 threads,
  // bench/results/README.md).
  static constexpr std::size_t batch_size = 16;
  struct batch {
    batch() { items.reserve(batch_size + 1); }
    std::vector<position> items; // ascending; from `taken` on not handed out yet
    std::size_t taken = 0;
    bool exhausted() const noexcept { return taken == items.size(); }
    void clear() noexcept {
      items.clear();
      taken = 0;
    }
    // The collector, filling an empty batch:
    template <class K>
    bool wants(std::uint64_t h, const K& key) const {
      if (items.empty() || less(items.back().hash, items.back().key, h, key)) return !full();
      const auto at = first_not_before(h, key); // exists: back() is not before key
      return less(h, key, at->hash, at->key);   // false if at holds key already
    }
    void add(position p) {
      if (items.empty() || less(items.back().hash, items.back().key, p.hash, p.key)) {
        items.push_back(std::move(p));
      } else {
        items.insert(first_not_before(p.hash, p.key), std::move(p));
        if (items.size() > batch_size) items.pop_back();
      }
    }
    bool full() const noexcept { return items.size() == batch_size; }
    const position& last() const noexcept { return items.back(); }
    static constexpr std::size_t read_ahead_buckets = 2 * batch_size;

  private:
    template <class K>
    typename std::vector<position>::const_iterator first_not_before(std::uint64_t h,
                                                                    const K& key) const {
      return std::partition_point(items.begin(), items.end(),
                                  [&](const position& q) { return less(q.hash, q.key, h, key); });
    }
  };

  // Offers collector c every live position strictly after `after` (every
  // one if `after` is null) in node's subtree, in bucket order, and stops
  // once c is full with positions that precede every bucket not read yet: c
  // then holds the smallest. A non-null `after` means node is on after's
  // path: the traversal starts at after's bucket, and only that bucket's
  // child is on the path too; later buckets and their children hold larger
  // hashes and are read from bucket 0 (the paper's Algorithm 1 restarted
  // them at after's index). A chain hoisted under node (`hoisted`: node was
  // reached through a hoisted bucket) holds hashes of any of node's buckets:
  // it is read first. `prefix`: the hash bits the levels above node consume
  // (bucket j holds the hashes from prefix | j << shift on). The caller then
  // looks each key up, which protects its element.
  template <class Collector>
  void gather_after(hash_node* node, std::uint64_t prefix, const position* after, bool hoisted,
                    reader_guards& g, Collector& c) const {
    if (hoisted) gather_chain(node, node->overflow, after, g, c);
    const unsigned shift = 64 - node->consumed - node->bits;
    const std::size_t first = after != nullptr ? node->index(after->hash) : 0;
    for (std::size_t i = first; i < node->size(); ++i) {
      const chain_end end = gather_chain(node, node->buckets()[i], after, g, c);
      if (end.child != nullptr) {
        // The traversal below reuses g; this frame keeps child alive
        // (compression may remove it meanwhile; its buckets then read as
        // empty).
        guard keep_child = make_guard();
        keep_child.reset_protection(end.child); // safe: g.anchor protects it
        gather_after(end.child, prefix | std::uint64_t(i) << shift, i == first ? after : nullptr,
                     end.hoisted, g, c);
      }
      if (i + 1 == node->size()) break;
      if (c.full() && c.last().hash < (prefix | std::uint64_t(i + 1) << shift)) {
        read_ahead(*node, after != nullptr ? &first : nullptr, i, Collector::read_ahead_buckets, g);
        return;
      }
      // We read node's next buckets, and node may be removed meanwhile (g
      // protects deeper levels now; our caller's keep_child keeps node).
      if (end.child != nullptr) detail::stress_pause();
    }
  }

  // A leaf's first and last byte: a leaf not aligned to its size (24 bytes
  // at an address 16 past a multiple of 32, as glibc hands out half of its
  // 32-byte chunks) spans two cache lines, and the element read through the
  // iterator is in the second.
  static void prefetch_whole_leaf(const leaf* l) noexcept {
    __builtin_prefetch(l);
    __builtin_prefetch(reinterpret_cast<const char*>(l + 1) - 1);
  }
  // Iteration takes node's buckets in order, and each traversal would wait
  // for the leaves it reads. So a traversal that stopped at bucket i
  // prefetches what the buckets after it, up to i + read_ahead_buckets, lead
  // to - but for those the traversal before it did, if it stopped at this
  // node's bucket `before`: so each is prefetched once, a traversal or a few
  // steps before it is read (a batch's traversal reads about batch_size
  // buckets of a sized map, so it reads twice that far ahead). The leaves of
  // a chain are misses one after another, so nearer buckets go further in:
  // * at the full distance, a bucket's first leaf, or the level it leads to;
  // * at half of it, a bucket's second leaf (its first is cached by then:
  //   the traversal protects it and reads its link; a miss in a quarter of a
  //   sized map's buckets otherwise), or the first leaf of each chain of the
  //   level it leads to;
  // * at a quarter, an eighth, ... of it, one more leaf of such a level's
  //   hoisted chain each. A map past its root has a level under each root
  //   bucket, whose hoisted chain holds chain_threshold leaves.
  // relaxed: the words are prefetch addresses only. g's guards are free:
  // the caller is done with them. Always inlined: out of line (where its
  // level cases left it), a sized map's iteration took about 1.05x as long.
  [[gnu::always_inline]] void read_ahead(hash_node& node, const std::size_t* before, std::size_t i,
                                         std::size_t read_ahead_buckets,
                                         reader_guards& g) const noexcept {
    // The buckets that came within `distance` of i since `before`.
    const auto newly_within = [&](std::size_t distance) {
      const std::size_t from = before != nullptr ? std::max(i, *before + distance) + 1 : i + 1;
      return std::pair{from, std::min(node.size(), i + 1 + distance)};
    };
    for (auto [j, end] = newly_within(read_ahead_buckets); j < end; ++j) {
      const word w = node.buckets()[j].load(std::memory_order_relaxed);
      if (!is_hash(w))
        prefetch_whole_leaf(leaf_of(w));
      else if (const hash_node* below = level_below(node, w))
        prefetch_whole_level(below, child_bits(&node));
    }
    for (auto [j, end] = newly_within(read_ahead_buckets / 2); j < end; ++j) {
      const word w = g.next.protect(node.buckets()[j], pointer_of);
      if (!is_hash(w))
        prefetch_first_leaf(leaf_of(w)->next); // g.next protects that leaf
      else if (hash_node* below = level_below(node, w))
        prefetch_first_leaves(*below); // g.next protects below
    }
    // Levels only from here (a sized map has few): one look at each bucket
    // that came within reach of any of the nearer distances. relaxed: a
    // stale word only skips or wastes a hint; prefetch_hoisted_leaf protects
    // the bucket's level and reads the word again.
    const std::size_t near_end = newly_within(read_ahead_buckets / 4).second;
    for (std::size_t j = newly_within(1).first; j < near_end; ++j) {
      if (level_below(node, node.buckets()[j].load(std::memory_order_relaxed)) == nullptr) continue;
      std::size_t links = 1;
      for (std::size_t distance = read_ahead_buckets / 4; distance > 0; distance /= 2, ++links) {
        const auto [from, end] = newly_within(distance);
        if (from <= j && j < end) prefetch_hoisted_leaf(node, j, links, g);
      }
    }
  }
  static void prefetch_whole_level(const hash_node* level, unsigned bits) noexcept {
    constexpr std::uintptr_t line_bytes = 64; // what a prefetch loads
    const auto at = reinterpret_cast<std::uintptr_t>(level);
    const std::uintptr_t end = at + node_words(bits) * sizeof(word);
    for (std::uintptr_t line = at & ~(line_bytes - 1); line < end; line += line_bytes)
      __builtin_prefetch(reinterpret_cast<const void*>(line));
  }
  // The first leaf of each chain of a level, which a guard protects.
  [[gnu::noinline]] static void prefetch_first_leaves(hash_node& level) noexcept {
    prefetch_first_leaf(level.overflow);
    for (std::size_t k = 0; k < level.size(); ++k) prefetch_first_leaf(level.buckets()[k]);
  }
  // The leaf `links` links into the hoisted chain of the level below node's
  // bucket j.
  [[gnu::noinline]] static void prefetch_hoisted_leaf(hash_node& node, std::size_t j,
                                                      std::size_t links,
                                                      reader_guards& g) noexcept {
    if (hash_node* below = level_below(node, g.anchor.protect(node.buckets()[j], pointer_of)))
      prefetch_chain_leaf(below->overflow, links, g); // g.anchor protects below
  }
  // The first leaf of a chain (relaxed: the word is only a prefetch
  // address; an overflow is 0 until its chain is hoisted).
  static void prefetch_first_leaf(const std::atomic<word>& first) noexcept {
    const word w = first.load(std::memory_order_relaxed);
    if (w != 0 && !is_hash(w)) prefetch_whole_leaf(leaf_of(w));
  }
  // The leaf `links` links (at least 1) into the chain that starts at
  // `first`, whose owner g.anchor protects, as for a traversal. The leaves
  // before it, which earlier passes prefetched, are walked as a traversal
  // walks them (step), with g's guards; a validation that fails ends the
  // walk (another thread changed the chain; this is a hint). Progress: at
  // most `links` steps and no retry, so it ends as soon as its protects do.
  // relaxed on the overflow: it leaves 0 once, before its chain is hoisted,
  // and a stale 0 only skips the hint.
  static void prefetch_chain_leaf(const std::atomic<word>& first, std::size_t links,
                                  reader_guards& g) noexcept {
    if (first.load(std::memory_order_relaxed) == 0) return;
    const std::atomic<word>* anchor = &first;
    word anchor_value = g.cur.protect(first, leaf_or_null);
    g.run.reset_protection(leaf_or_null(anchor_value));
    word w = anchor_value;
    for (; links > 1 && !is_hash(w); --links) {
      const leaf* cur = leaf_of(w);
      const word nw = cur->next.load(std::memory_order_acquire); // [trie.read]
      if (!step(g, cur, nw, anchor, anchor_value)) return;
      w = unmarked(nw);
    }
    if (is_hash(w)) return;
    prefetch_first_leaf(leaf_of(w)->next); // g.cur protects that leaf
  }

  // Offers c the live positions after `after` in one chain of node (from a
  // bucket or the overflow); returns the level it continues in (g.anchor
  // protects it) and whether through a hoisted bucket. A failed validation
  // reads the chain again; it fails only when another thread changed the
  // chain (lock-free, as a lookup).
  struct chain_end {
    hash_node* child = nullptr;
    bool hoisted = false;
  };
  template <class Collector>
  chain_end gather_chain(const hash_node* node, const std::atomic<word>& first,
                         const position* after, reader_guards& g, Collector& c) const {
    for (;;) {
      const std::atomic<word>* anchor = &first;
      word anchor_value = g.cur.protect(*anchor, leaf_or_null);
      g.run.reset_protection(leaf_or_null(anchor_value));
      word w = anchor_value;
      const leaf* last = nullptr;
      word last_next = 0;
      bool valid = true;
      while (!is_hash(w)) {
        const leaf* cur = leaf_of(w);
        const word nw = cur->next.load(std::memory_order_acquire); // [trie.read]
        const std::uint64_t h = leaf_hash(*cur);
        if (!is_deleted(nw) &&
            (after == nullptr || less(after->hash, after->key, h, LeafPolicy::key(*cur))) &&
            c.wants(h, LeafPolicy::key(*cur)))
          c.add(position_of(h, cur)); // cur: g.cur protects it
        if (!(valid = step(g, cur, nw, anchor, anchor_value))) break;
        last = cur;
        last_next = nw;
        w = unmarked(nw);
      }
      if (!valid) continue;
      // A frozen bucket is empty; an overflow ends at node itself.
      chain_end r{level_below(*node, w)};
      if (r.child == nullptr) return r;
      r.hoisted = is_hoisted(w);
      if (descend(g, r.child, last, last_next, anchor, anchor_value)) return r;
    }
  }

  // The first live leaf after `after` (all of them if null), protected by
  // g.cur, or nullptr.
  const leaf* next_after(const position* after, reader_guards& g) const {
    std::optional<position> erased;
    for (;;) {
      smallest_one c;
      gather_after(root_, 0, after, false, g, c);
      if (!c.best) return nullptr;
      detail::stress_pause(); // others may remove and reclaim its leaf meanwhile
      if (const leaf* l = lookup(c.best->hash, c.best->key, g)) return l;
      erased = std::move(c.best); // erased meanwhile: go on after it
      after = &*erased;
    }
  }
  // The same, from the positions gathered `ahead` of `after` (ascending, all
  // after it), gathering the next batch when those run out. If a call
  // throws, every position still ahead stays there.
  // `after` may be the batch's last position (see const_iterator::operator++).
  const leaf* next_after(const position* after, batch& ahead, reader_guards& g) const {
    std::optional<position> kept; // after, out of the batch that gathering clears
    for (;;) {
      if (ahead.exhausted()) {
        if (!ahead.items.empty() && after == &ahead.items.back())
          after = &kept.emplace(std::move(ahead.items.back()));
        ahead.clear();
        try {
          gather_after(root_, 0, after, false, g, ahead);
        } catch (...) { // a partial batch may lack positions before its last
          ahead.clear();
          throw;
        }
        if (ahead.exhausted()) return nullptr;
      }
      detail::stress_pause(); // others may remove and reclaim its leaf meanwhile
      const position& p = ahead.items[ahead.taken];
      const leaf* l = lookup(p.hash, p.key, g);
      ++ahead.taken;
      if (l != nullptr) return l;
      after = &p; // erased meanwhile: go on after it
    }
  }
  const_iterator iterator_after(const position* after) const {
    reader g(*domain_);
    const leaf* l = next_after(after, *g);
    return l != nullptr ? const_iterator(this, l) : end();
  }

  static constexpr std::size_t shards = 16;

  hash_trie_config config_;
  [[no_unique_address]] Hash hash_;
  [[no_unique_address]] KeyEqual equal_;
  hash_node* root_;
  domain_type* domain_; // where erased leaves and removed levels go
  cache_padded<std::atomic<std::ptrdiff_t>> counts_[shards] = {};

public:
  /// A forward iterator over the elements (see "Iteration" in the header).
  /// It holds a guard on its element (and a read-side section), so the
  /// element it refers to stays valid (with the value it had when reached)
  /// even if it is erased or replaced meanwhile. Copying an iterator takes
  /// another guard. From its first ++ on, it also holds a heap block with
  /// the positions of up to 16 elements ahead (copies of their keys), which
  /// a copy copies. Under RCU policies an iterator is a read-side section:
  /// keep it on its thread and not for long (it holds back all reclamation).
  class const_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = hash_trie_map::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    const_iterator() noexcept = default;
    const_iterator(const const_iterator& o) : map_(o.map_), leaf_(o.leaf_) {
      if (leaf_ != nullptr) {
        section_ = Reclamation::read_section();
        hp_ = map_->make_guard();
        hp_.reset_protection(leaf_); // safe: o's guard protects it
        if constexpr (!LeafPolicy::position_key_borrows)
          if (o.ahead_) ahead_ = std::make_unique<batch>(*o.ahead_);
      }
    }
    const_iterator(const_iterator&&) noexcept = default;
    const_iterator& operator=(const const_iterator& o) {
      if (this != &o) *this = const_iterator(o);
      return *this;
    }
    const_iterator& operator=(const_iterator&&) noexcept = default;

    reference operator*() const noexcept { return LeafPolicy::value(*leaf_); }
    pointer operator->() const noexcept { return &LeafPolicy::value(*leaf_); }
    const_iterator& operator++() {
      // hp_ protects leaf_, and so the key of its position, until it takes
      // the next leaf (reused: see position).
      reader g(*map_->domain_);
      if constexpr (LeafPolicy::position_key_borrows) { // a batch would hold a guard per key
        const position here = made_position();
        leaf_ = map_->next_after(&here, *g);
      } else {
        if (!ahead_) ahead_ = std::make_unique<batch>();
        // After the first ++, go on from the batch's last position handed
        // out: leaf_'s, or one after it that next_after found erased (a
        // step that threw), with only erased keys between. No rehash and no
        // key copy (made_position hashes an atom's text again and allocates
        // for a long string key: an atom table's iteration took 1.2x as long).
        std::optional<position> made;
        const position* here =
            ahead_->taken != 0 ? &ahead_->items[ahead_->taken - 1] : &made.emplace(made_position());
        leaf_ = map_->next_after(here, *ahead_, *g);
      }
      if (leaf_ != nullptr)
        hp_.reset_protection(leaf_); // safe: g.cur protects it
      else
        *this = const_iterator(); // end: drops the guard and the section
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept {
      return a.leaf_ == b.leaf_;
    }

  private:
    friend class hash_trie_map;
    position made_position() const {
      return {map_->leaf_hash(*leaf_), position_key(LeafPolicy::key(*leaf_))};
    }
    // l must be protected by a guard of the caller's during this call.
    const_iterator(const hash_trie_map* map, const leaf* l)
        : map_(map), leaf_(l), section_(Reclamation::read_section()), hp_(map->make_guard()) {
      hp_.reset_protection(l);
    }
    const_iterator(const hash_trie_map* map, const leaf* l, guard hp)
        : map_(map), leaf_(l), section_(Reclamation::read_section()), hp_(std::move(hp)) {}

    const hash_trie_map* map_ = nullptr;
    const leaf* leaf_ = nullptr;
    [[no_unique_address]] section section_; // before hp_: outlives the protection
    guard hp_;
    // Positions gathered after this one (see batch), allocated at the first
    // ++; a copy copies them.
    std::unique_ptr<batch> ahead_;
  };
};

/// Erases every element for which pred(element) is true, as std::erase_if
/// does for std::unordered_map; returns how many this call erased. One pass
/// of weakly consistent iteration: elements inserted meanwhile may or may not
/// be seen. An element is erased only if it is still the one pred looked at:
/// one that another thread replaced (insert_or_assign) or erased since stays
/// as that thread left it. If pred throws, the exception propagates and the
/// elements erased before stay erased.
template <class K, class T, class H, class E, class A, class R, class L, class Pred>
typename hash_trie_map<K, T, H, E, A, R, L>::size_type
erase_if(hash_trie_map<K, T, H, E, A, R, L>& map, Pred pred) {
  typename hash_trie_map<K, T, H, E, A, R, L>::size_type erased = 0;
  for (auto it = map.begin(); it != map.end(); ++it)
    if (pred(*it)) erased += map.erase(it); // erase(it) leaves it valid
  return erased;
}

} // namespace lfcore
