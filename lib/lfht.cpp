// lib/lfht.cpp - the C interface (include/lfht.h) over lfcore::hash_trie_map.
#include "lfht.h"

#include <lfcore/hash_trie_map.hpp>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <variant>

namespace {

struct callbacks {
  std::size_t (*hash)(void*);
  int (*compare)(void*, void*);
  void (*free_key)(void*);
};

// The map's key: the user's pointer and the table's callbacks, which give it
// hashing, equality and the order among equal hashes. KeyIsHash: the table
// has no hash_func, so the pointer is the hash (it has key_free: a table with
// no callback at all keys by bare pointers, see table_of).
//
// An element's key owns the user's key once its insertion succeeded (own())
// and frees it when the element is destroyed: at reclamation, or in
// lfht_free. A key built for an insert that lost a race is destroyed without
// owning anything, so the caller's key is left alone, and copies (an
// iterator's position) never own. The owner keeps its own copy of key_free:
// a removed element may be reclaimed after lfht_free has freed the table and
// its callbacks. An element is this key and the value pointer: a leaf is the
// element, its link and (see table_of) its hash.
template <bool KeyIsHash>
class c_key {
public:
  c_key(void* key, const callbacks* cb) noexcept : key_(key), cb_(cb) {}
  c_key(const c_key& other) noexcept : key_(other.key_), cb_(other.cb_) {}
  c_key& operator=(const c_key& other) noexcept { // only on copies (an element's key is const)
    key_ = other.key_;
    cb_ = other.cb_;
    return *this;
  }
  ~c_key() {
    if (free_key_ != nullptr) free_key_(key_);
  }

  void* get() const noexcept { return key_; }
  std::size_t hash() const {
    if constexpr (KeyIsHash)
      return reinterpret_cast<std::uintptr_t>(key_);
    else
      return cb_->hash(key_);
  }
  /// Called once, by the insert that linked this element, while it protects
  /// the element. A plain write: no other thread reads free_key_, and the
  /// destructor runs after that protection ended (the reclaiming scan's
  /// acquire of the releasing hazard pointer), or after a join (lfht_free).
  void own() const noexcept { free_key_ = cb_->free_key; }

  // Keys are equal when their hashes are and key_cmp, if any, says so. With
  // hash_func the map calls this only once the leaf's stored hash matched the
  // key's (hash_trie_map::hash_may_match; mix_hash is a bijection), so without
  // key_cmp the keys are equal already: no hash_func call per hit but the
  // key's own. Without hash_func, equal keys are the same pointer, whatever
  // key_cmp says of their contents, and key_cmp is never called.
  friend bool operator==(const c_key& a, const c_key& b) {
    if constexpr (KeyIsHash)
      return a.key_ == b.key_;
    else
      return a.cb_->compare == nullptr || a.cb_->compare(a.key_, b.key_) == 0;
  }
  friend bool operator<(const c_key& a, const c_key& b) { // only for equal hashes
    if constexpr (KeyIsHash)
      return false; // equal hashes: the same key
    else
      return a.cb_->compare != nullptr && a.cb_->compare(a.key_, b.key_) < 0;
  }

private:
  void* key_;
  const callbacks* cb_;
  mutable void (*free_key_)(void*) = nullptr; // set: this key owns key_
};
struct c_key_hash {
  template <bool KeyIsHash>
  std::size_t operator()(const c_key<KeyIsHash>& k) const {
    return k.hash();
  }
};

template <bool KeyIsHash>
using element = std::pair<const c_key<KeyIsHash>, void*>;
static_assert(sizeof(element<false>) == 4 * sizeof(void*));

// The three tables an lfht_head may hold, by its callbacks:
// - with hash_func: leaves store the hash (48 bytes, a 64-byte glibc block);
// - without hash_func, with key_free: the map recomputes a leaf's hash from
//   its key in a few instructions, so leaves drop it (40 bytes, 48 from glibc);
// - with neither: the key needs no callbacks nor an owner, and the table is a
//   hash_trie_map<void*, void*>, whose std::hash is the pointer's value: 24
//   bytes, a 32-byte block.
// (Heap per key and times: bench/results/lfht_c_api/README.md.)
template <bool KeyIsHash>
using table_of = lfcore::hash_trie_map<
    c_key<KeyIsHash>, void*, c_key_hash, std::equal_to<c_key<KeyIsHash>>,
    std::allocator<element<KeyIsHash>>, lfcore::hazard_pointer_reclamation,
    lfcore::detail::pair_leaf_policy<c_key<KeyIsHash>, void*, std::allocator<element<KeyIsHash>>,
                                     !KeyIsHash>>;
using hashed_table = table_of<false>;
using owning_pointer_table = table_of<true>;
using pointer_table = lfcore::hash_trie_map<void*, void*>;

} // namespace

struct lfht_head {
  callbacks cb;
  std::variant<hashed_table, owning_pointer_table, pointer_table> map;
};

namespace {
// Calls f with the head's table, whichever type it has: a branch per type,
// and f inlined into each arm (std::visit's call through a table cost an
// lfht_search hit 9 more instructions). The order is measured: with the
// hashed table tested first, lfht_remove on a pointer table took 1.5x the
// time at 1e6 keys (the same instructions, laid out worse).
template <class F>
decltype(auto) with_table(lfht_head* head, F&& f) {
  if (auto* t = std::get_if<pointer_table>(&head->map)) return f(*t);
  if (auto* t = std::get_if<hashed_table>(&head->map)) return f(*t);
  return f(*std::get_if<owning_pointer_table>(&head->map));
}
// The key a call passes to a table: the user's pointer, with the callbacks
// where the table uses them.
template <class Table>
typename Table::key_type key_of(const Table&, void* key, const lfht_head* head) {
  return {key, &head->cb};
}
void* key_of(const pointer_table&, void* key, const lfht_head*) {
  return key;
}
// The user's pointer in an element's key, and the insert's taking ownership.
template <bool KeyIsHash>
void* pointer_of(const c_key<KeyIsHash>& k) {
  return k.get();
}
void* pointer_of(void* k) {
  return k;
}
template <bool KeyIsHash>
void take_ownership(const c_key<KeyIsHash>& k) {
  k.own();
}
void take_ownership(void*) {} // without key_free nothing owns a key

bool misuse(const void* a, const void* b = reinterpret_cast<const void*>(1),
            const void* c = reinterpret_cast<const void*>(1)) {
  if (a != nullptr && b != nullptr && c != nullptr) return false;
  errno = EINVAL;
  return true;
}
} // namespace

extern "C" {

lfht_head* init_lfht(std::size_t (*hash_func)(void*), int (*key_cmp)(void*, void*),
                     void (*key_free)(void*)) {
  return init_lfht_sized(hash_func, key_cmp, key_free, 0);
}

lfht_head* init_lfht_sized(std::size_t (*hash_func)(void*), int (*key_cmp)(void*, void*),
                           void (*key_free)(void*), std::size_t expected_keys) {
  try {
    const lfcore::hash_trie_config config =
        expected_keys == 0 ? lfcore::hash_trie_config{}
                           : lfcore::hash_trie_config::for_expected_size(expected_keys);
    using tables = decltype(lfht_head::map);
    const callbacks cb{hash_func, key_cmp, key_free};
    if (hash_func != nullptr)
      return new lfht_head{cb, tables{std::in_place_type<hashed_table>, config}};
    if (key_free != nullptr)
      return new lfht_head{cb, tables{std::in_place_type<owning_pointer_table>, config}};
    return new lfht_head{cb, tables{std::in_place_type<pointer_table>, config}};
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

// Every entry point catches std::bad_alloc: a thread's first call allocates
// its hazard records, so even a lookup can run out of memory.
void* lfht_search(lfht_head* head, void* key) {
  if (misuse(head, key)) return nullptr;
  try {
    void* found = nullptr;
    with_table(head, [&](auto& map) {
      map.visit(key_of(map, key, head), [&](const auto& kv) { found = kv.second; });
    });
    return found;
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

void* lfht_insert(lfht_head* head, void* key, void* value) {
  if (misuse(head, key, value)) return nullptr;
  try {
    void* held = nullptr;
    with_table(head, [&](auto& map) {
      map.try_emplace_and_visit(
          key_of(map, key, head),
          [&](const auto& kv, bool inserted) { // kv is protected meanwhile
            if (inserted) take_ownership(kv.first);
            held = kv.second;
          },
          value);
    });
    return held;
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

void* lfht_remove(lfht_head* head, void* key) {
  if (misuse(head, key)) return nullptr;
  // The value returned is the one this call removed: erase_if erases the
  // element its predicate saw last. It throws only before taking effect.
  try {
    void* removed = nullptr;
    const bool erased = with_table(head, [&](auto& map) {
      return map.erase_if(key_of(map, key, head), [&](const auto& kv) {
        removed = kv.second;
        return true;
      });
    });
    return erased ? removed : nullptr;
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

void* lfht_next_key(lfht_head* head, void* key) {
  if (head == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  try {
    return with_table(head, [&](auto& map) -> void* {
      const auto it = key == nullptr ? map.begin() : map.successor(key_of(map, key, head));
      return it == map.end() ? nullptr : pointer_of(it->first);
    });
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return nullptr;
  }
}

int lfht_for_each(lfht_head* head, int (*fn)(void*, void*, void*), void* arg) {
  if (head == nullptr || fn == nullptr) {
    errno = EINVAL;
    return -1;
  }
  try {
    // The range-for's iterator protects the element fn is given.
    return with_table(head, [&](auto& map) {
      for (const auto& [key, value] : map)
        if (const int stop = fn(pointer_of(key), value, arg); stop != 0) return stop;
      return 0;
    });
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return -1;
  }
}

std::size_t lfht_count(lfht_head* head) {
  if (head == nullptr) {
    errno = EINVAL;
    return 0;
  }
  // noexcept: sums the map's per-thread counters
  return with_table(head, [](auto& map) { return map.size(); });
}

void lfht_free(lfht_head* head) {
  delete head;
}

} // extern "C"
