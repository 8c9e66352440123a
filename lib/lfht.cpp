// lib/lfht.cpp - the C interface (include/lfht.h) over lfcore::hash_trie_map.
#include "lfht.h"

#include <lfcore/hash_trie_map.hpp>

#include <cerrno>
#include <cstdint>
#include <new>
#include <utility>

namespace {

struct callbacks {
  std::size_t (*hash)(void*);
  int (*compare)(void*, void*);
  void (*free_key)(void*);
};

// The map's key: the user's pointer and the table's callbacks, which give it
// hashing, equality and the order among equal hashes.
//
// An element's key owns the user's key once its insertion succeeded (own())
// and frees it when the element is destroyed: at reclamation, or in
// lfht_free. A key built for an insert that lost a race is destroyed without
// owning anything, so the caller's key is left alone, and copies (an
// iterator's position) never own. The owner keeps its own copy of key_free:
// a removed element may be reclaimed after lfht_free has freed the table and
// its callbacks. An element is this key and the value pointer: with its link
// and hash, a leaf takes 48 bytes.
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
    return cb_->hash != nullptr ? cb_->hash(key_) : reinterpret_cast<std::uintptr_t>(key_);
  }
  /// Called once, by the insert that linked this element, while it protects
  /// the element. A plain write: no other thread reads free_key_, and the
  /// destructor runs after that protection ended (the reclaiming scan's
  /// acquire of the releasing hazard pointer), or after a join (lfht_free).
  void own() const noexcept { free_key_ = cb_->free_key; }

  friend bool operator==(const c_key& a, const c_key& b) {
    if (a.cb_->compare != nullptr) return a.cb_->compare(a.key_, b.key_) == 0;
    // Equal exactly when the hashes are; one pointer has one hash, and a
    // search by the stored pointer (every integer key) needs no callback.
    return a.key_ == b.key_ || a.hash() == b.hash();
  }
  friend bool operator<(const c_key& a, const c_key& b) { // only for equal hashes
    return a.cb_->compare != nullptr && a.cb_->compare(a.key_, b.key_) < 0;
  }

private:
  void* key_;
  const callbacks* cb_;
  mutable void (*free_key_)(void*) = nullptr; // set: this key owns key_
};
struct c_key_hash {
  std::size_t operator()(const c_key& k) const { return k.hash(); }
};

using table = lfcore::hash_trie_map<c_key, void*, c_key_hash>;
static_assert(sizeof(table::value_type) == 4 * sizeof(void*));

} // namespace

struct lfht_head {
  callbacks cb;
  table map;
};

namespace {
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
    return new lfht_head{{hash_func, key_cmp, key_free}, table(config)};
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
    head->map.visit(c_key{key, &head->cb}, [&](const table::value_type& kv) { found = kv.second; });
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
    head->map.try_emplace_and_visit(
        c_key{key, &head->cb},
        [&](const table::value_type& kv, bool inserted) { // kv is protected meanwhile
          if (inserted) kv.first.own();
          held = kv.second;
        },
        value);
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
    const bool erased = head->map.erase_if(c_key{key, &head->cb}, [&](const table::value_type& kv) {
      removed = kv.second;
      return true;
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
    table::const_iterator it =
        key == nullptr ? head->map.begin() : head->map.successor(c_key{key, &head->cb});
    return it == head->map.end() ? nullptr : it->first.get();
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
    for (const auto& [key, value] : head->map)
      if (const int stop = fn(key.get(), value, arg); stop != 0) return stop;
    return 0;
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
  return head->map.size(); // noexcept: sums the map's per-thread counters
}

void lfht_free(lfht_head* head) {
  delete head;
}

} // extern "C"
