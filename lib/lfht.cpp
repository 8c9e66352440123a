// lib/lfht.cpp - the C interface (include/lfht.h) over lfcore::hash_trie_map.
#include "lfht.h"

#include <lfcore/hash_trie_map.hpp>

#include <atomic>
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
struct c_key {
  void* key;
  const callbacks* cb;
  std::size_t hash() const {
    return cb->hash != nullptr ? cb->hash(key) : reinterpret_cast<std::uintptr_t>(key);
  }
  friend bool operator==(const c_key& a, const c_key& b) {
    return a.cb->compare != nullptr ? a.cb->compare(a.key, b.key) == 0 : a.hash() == b.hash();
  }
  friend bool operator<(const c_key& a, const c_key& b) { // only for equal hashes
    return a.cb->compare != nullptr && a.cb->compare(a.key, b.key) < 0;
  }
};
struct c_key_hash {
  std::size_t operator()(const c_key& k) const { return k.hash(); }
};

// The map's value. Once its insertion succeeded (own_key()), it owns the
// table's key and frees it when the element is destroyed: at reclamation, or
// in lfht_free. A value built for an insert that lost a race is destroyed
// without owning anything, so the caller's key is left alone. It keeps its
// own copy of key_free: a removed element may be reclaimed after lfht_free
// has freed the table and its callbacks.
class c_value {
public:
  c_value(void* value, void* key, const callbacks* cb) noexcept
      : value_(value), key_(key), free_key_(cb->free_key) {}
  c_value(const c_value&) = delete;
  c_value& operator=(const c_value&) = delete;
  ~c_value() {
    // relaxed: the reclaiming scan's acquire of our releasing hazard pointer,
    // or the join before lfht_free, orders own_key() before us.
    if (owns_.load(std::memory_order_relaxed) && free_key_ != nullptr) free_key_(key_);
  }
  void* value() const noexcept { return value_; }
  void own_key() const noexcept { owns_.store(true, std::memory_order_relaxed); }

private:
  void* const value_;
  void* const key_;
  void (*const free_key_)(void*);
  mutable std::atomic<bool> owns_{false};
};

using table = lfcore::hash_trie_map<c_key, c_value, c_key_hash>;

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
  try {
    auto* head = new lfht_head{{hash_func, key_cmp, key_free}, table()};
    return head;
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
    head->map.visit(c_key{key, &head->cb},
                    [&](const table::value_type& kv) { found = kv.second.value(); });
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
          if (inserted) kv.second.own_key();
          held = kv.second.value();
        },
        value, key, &head->cb);
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
      removed = kv.second.value();
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
    return it == head->map.end() ? nullptr : it->first.key;
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
      if (const int stop = fn(key.key, value.value(), arg); stop != 0) return stop;
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
