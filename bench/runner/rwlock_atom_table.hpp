// bench/runner/rwlock_atom_table.hpp - the atom table YAP had before the LFHT
// (the paper's section 2.1, Fig. 2), as the baseline of the atom benchmark:
// one bucket array of chained entries, doubled when there are more entries
// than buckets, the whole table behind one readers-writer lock. Lookups take
// the lock shared; a miss retakes it exclusive, searches again and prepends.
// Entries never move (the doubling relinks them), so a handle is the entry.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string_view>
#include <vector>

namespace runner {

class rwlock_atom_table {
public:
  explicit rwlock_atom_table(std::size_t expected = 0)
      : buckets_(std::max<std::size_t>(64, std::bit_ceil(expected)), nullptr) {}
  ~rwlock_atom_table() {
    for (entry* e : buckets_)
      while (e != nullptr) {
        entry* next = e->next;
        ::operator delete(static_cast<void*>(e));
        e = next;
      }
  }
  rwlock_atom_table(const rwlock_atom_table&) = delete;
  rwlock_atom_table& operator=(const rwlock_atom_table&) = delete;

  /// The entry for text, created if absent.
  const void* intern(std::string_view text) {
    const std::size_t h = std::hash<std::string_view>()(text);
    {
      std::shared_lock<std::shared_mutex> read(lock_);
      if (const entry* e = find(h, text)) return e;
    }
    std::unique_lock<std::shared_mutex> write(lock_);
    if (const entry* e = find(h, text)) return e; // inserted meanwhile
    entry* e = static_cast<entry*>(::operator new(sizeof(entry) + text.size() + 1));
    e->hash = h;
    e->size = text.size();
    std::memcpy(e->text(), text.data(), text.size());
    e->text()[text.size()] = '\0';
    entry*& head = buckets_[h & (buckets_.size() - 1)];
    e->next = head;
    head = e;
    if (++count_ > buckets_.size()) grow(); // saturated: double
    return e;
  }

  /// Starts loading the buckets of these texts, then the first entry of
  /// each chain, in groups of 16 under one shared lock (as lfcore's
  /// hash_trie_map::prefetch does for its trie).
  void prefetch(const std::vector<std::string_view>& texts) const {
    std::shared_lock<std::shared_mutex> read(lock_);
    entry* const* heads[16];
    for (std::size_t first = 0; first < texts.size(); first += 16) {
      const std::size_t n = std::min<std::size_t>(16, texts.size() - first);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t h = std::hash<std::string_view>()(texts[first + i]);
        heads[i] = &buckets_[h & (buckets_.size() - 1)];
        __builtin_prefetch(heads[i]);
      }
      for (std::size_t i = 0; i < n; ++i) __builtin_prefetch(*heads[i]);
    }
  }

  std::size_t size() const {
    std::shared_lock<std::shared_mutex> read(lock_);
    return count_;
  }

private:
  struct entry {
    entry* next;
    std::size_t hash;
    std::size_t size;
    char* text() noexcept { return reinterpret_cast<char*>(this + 1); }
    const char* text() const noexcept { return reinterpret_cast<const char*>(this + 1); }
  };

  const entry* find(std::size_t h, std::string_view text) const {
    for (const entry* e = buckets_[h & (buckets_.size() - 1)]; e != nullptr; e = e->next)
      if (e->hash == h && std::string_view(e->text(), e->size) == text) return e;
    return nullptr;
  }

  void grow() {
    std::vector<entry*> bigger(buckets_.size() * 2, nullptr);
    for (entry* e : buckets_)
      while (e != nullptr) {
        entry* next = e->next;
        entry*& head = bigger[e->hash & (bigger.size() - 1)];
        e->next = head;
        head = e;
        e = next;
      }
    buckets_.swap(bigger);
  }

  mutable std::shared_mutex lock_;
  std::vector<entry*> buckets_;
  std::size_t count_ = 0;
};

} // namespace runner
