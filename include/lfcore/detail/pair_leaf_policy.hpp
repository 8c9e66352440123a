// lfcore/detail/pair_leaf_policy.hpp - how hash_trie_map stores an element
// (its LeafPolicy): the contract a policy meets, and the default policy, a
// leaf holding a std::pair<const Key, T> and, unless rehashing is cheap, the
// element's hash. atom_table has a policy of its own (lib/atom_table.cpp).
#pragma once

#include "lfcore/detail/bucket_summary.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace lfcore::detail {

/// True when a hash_trie_map recomputes an element's hash instead of storing
/// it in the leaf: std::hash of a scalar key (an integer, enum or pointer),
/// which costs a few instructions and compares no slower than the hash.
template <class Key, class Hash>
inline constexpr bool rehash_is_cheap_v = std::is_scalar_v<Key> &&
                                          (std::is_same_v<Hash, std::hash<Key>>);

/// How a hash_trie_map stores an element: its leaf type and how to make,
/// destroy and read one. The default below keeps a std::pair<const Key, T>
/// from the Allocator; atom_table's keeps an atom entry with its text in the
/// same allocation. A policy provides:
///   leaf            with `std::atomic<std::uintptr_t> next{0}`, aligned to 8,
///                   and optionally `const std::uint64_t hash` (the mixed
///                   hash; without it the map recomputes it from the key)
///   value_type      what lookups and iterators expose; value(leaf) returns it
///   position_key    a copy of a key, for iteration; key(leaf) converts to it
///                   and compares with it through std::less<>
///   position_key_borrows  whether such a copy may refer to memory of the leaf
///                   (lfht's keys are pointers the element frees): the map then
///                   keeps that leaf protected while it uses the copy
///   key(leaf)       the key, as Hash and KeyEqual take it
///   make(h, args)   allocates and constructs a leaf (nothing leaks on throw);
///                   with bucket summaries its address must be below 2^48
///                   (glibc's malloc and operator new always are; this
///                   policy checks its Allocator's: detail::check_address)
///   deleter         a stateless functor destroying and freeing a leaf (the
///                   reclamation domain may call it after the map is gone)
/// StoreHash: whether the leaf keeps the hash. Dropping it makes a
/// <uint64_t, uint64_t> leaf 24 bytes instead of 32, a 32-byte glibc chunk
/// instead of 48 (bench/results/README.md measures both).
template <class Key, class T, class Allocator, bool StoreHash = true>
struct pair_leaf_policy {
  using value_type = std::pair<const Key, T>;
  using position_key = Key;
  // A copy of a number or a std::string owns what it holds; anything else
  // (a pointer, a string_view, a user type) might not.
  static constexpr bool position_key_borrows =
      !(std::is_arithmetic_v<Key> || std::is_enum_v<Key> || std::is_same_v<Key, std::string>);
  struct stored_hash {
    explicit stored_hash(std::uint64_t h) noexcept : hash(h) {}
    const std::uint64_t hash; // mixed
  };
  struct no_stored_hash {
    explicit no_stored_hash(std::uint64_t) noexcept {}
  };
  using hash_part = std::conditional_t<StoreHash, stored_hash, no_stored_hash>;
  struct leaf : hash_part {
    template <class... Args>
    explicit leaf(std::uint64_t h, Args&&... args)
        : hash_part(h), kv(std::forward<Args>(args)...) {}
    std::atomic<std::uintptr_t> next{0};
    value_type kv;
  };
  using allocator = typename std::allocator_traits<Allocator>::template rebind_alloc<leaf>;
  using traits = std::allocator_traits<allocator>;

  static const Key& key(const leaf& l) noexcept { return l.kv.first; }
  static const value_type& value(const leaf& l) noexcept { return l.kv; }
  template <class... Args>
  static leaf* make(std::uint64_t h, Args&&... args) {
    allocator a;
    leaf* l = traits::allocate(a, 1);
    detail::check_address(a, l, 1);
    try {
      traits::construct(a, l, h, std::forward<Args>(args)...);
    } catch (...) {
      traits::deallocate(a, l, 1);
      throw;
    }
    return l;
  }
  struct deleter { // stateless: retiring allocates nothing
    void operator()(leaf* l) const noexcept {
      allocator a;
      traits::destroy(a, l);
      traits::deallocate(a, l, 1);
    }
  };
};

} // namespace lfcore::detail
