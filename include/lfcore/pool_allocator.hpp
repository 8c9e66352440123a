// lfcore/pool_allocator.hpp - a stateless allocator that carves small blocks
// from shared chunks and recycles them through per-thread magazines.
//
// Why: glibc's malloc puts an 8-byte header before every block and rounds to
// 16 bytes, so a hash_trie_map leaf of a uint64 -> uint64 map (a link and the
// pair: 24 bytes) costs 32; jemalloc's size classes round 24 to 32 as well. A
// pool of 24-byte blocks costs 24. pool_allocator is the opt-in "per-thread
// node cache in front of the Allocator": hash_trie_map<K, T, H, E,
// pool_allocator<std::pair<const K, T>>> keeps its leaves in it.
//
// When it pays (bench/results/pool_allocator/, bench/results/scan_recycling/):
// memory (no malloc header per leaf), and speed where every operation
// allocates a leaf and retires one (upsert, insert_or_assign of present
// keys). Hazard pointers keep about scan_threshold (8192) retired leaves per
// thread in circulation, more than jemalloc's thread cache holds (200 blocks
// per size class), so each leaf goes through its arena; the magazines below
// pass them on 64 at a time. Counting by upsert ran 1.36x / 1.80x / 1.26x
// faster at 1 / 2 / 8 threads on jemalloc, 0.99x / 1.89x / 1.48x on glibc
// (still 0.57x-0.83x the best peer that adds in place, in the same run).
// Lookups, inserts and the 90/5/5 mixes: no difference found.
//
// Design (the magazine layer of Bonwick and Adams, "Magazines and Vmem",
// USENIX 2001):
// * One pool per block size and alignment, process-wide: every
//   pool_allocator<T> whose T rounds to the same block shares it, and the
//   allocator is stateless (is_always_equal), as hash_trie_map requires -
//   its reclamation domain frees retired leaves after the map may be gone.
// * Each thread keeps, per pool, a loaded magazine (a list of up to
//   magazine_size free blocks it pops and pushes), one full spare, and the
//   unused tail of its current chunk. Allocation and deallocation touch only
//   that thread-local state: no atomic operation, no lock.
// * A depot, behind a mutex, holds full magazines that threads gave up and
//   the chunks' leftovers. A thread goes to it once per magazine_size
//   operations at most - only when its frees and allocations do not balance
//   (one thread inserts, another erases) - and to operator new once per
//   chunk. The mutex makes the pool blocking on those slow paths, as malloc
//   itself is; its fast paths are wait-free. fork() takes it first, so that
//   no child inherits it held (detail/fork_guard.hpp).
// * A thread that exits returns its magazines and its chunk's tail to the
//   depot. Blocks it frees after that (a destructor of a thread_local that
//   runs later) go to the depot one at a time.
//
// Ordering: a block crosses threads only through the depot's mutex, or
// through the container that hands its pointer to the thread that frees it
// (which orders the frees after the uses, as it must for malloc).
//
// Bounds: memory taken from operator new is never returned. The pool holds
// the blocks in use; per thread, up to 2 * magazine_size free blocks and the
// rest of its chunk; and in the depot the free blocks of the containers'
// past peak, for the next allocation of that size by any thread and any
// container. Use std::allocator for a container that grows once, shrinks
// and should give the memory back to the system.
//
// Only single objects (n == 1) of up to max_block_size bytes with at most
// the default new alignment are pooled; arrays and larger or over-aligned
// types go to std::allocator (hash_trie_map's hash nodes, for instance).
//
// Checking: under AddressSanitizer a free block is poisoned, so a use after
// free of a pooled block is reported as it is for malloc's. In a stress build
// magazines hold 2 blocks and chunks 8, so the depot and chunk paths run all
// the time.
#pragma once

#include "lfcore/config.hpp"
#include "lfcore/detail/fork_guard.hpp"
#include "lfcore/detail/prefault.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(LFCORE_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace lfcore {
namespace detail {

inline void poison_block(void* p, std::size_t n) noexcept {
#if defined(LFCORE_ASAN)
  __asan_poison_memory_region(p, n);
#else
  (void)p, (void)n;
#endif
}
inline void unpoison_block(void* p, std::size_t n) noexcept {
#if defined(LFCORE_ASAN)
  __asan_unpoison_memory_region(p, n);
#else
  (void)p, (void)n;
#endif
}

/// The process-wide pool of Size-byte blocks aligned to Align.
template <std::size_t Size, std::size_t Align>
class block_pool {
  static_assert(Size >= sizeof(void*) && Size % Align == 0 &&
                Align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

public:
  static constexpr std::size_t magazine_size = stress_build ? 2 : 64;
  static constexpr std::size_t blocks_per_chunk = stress_build ? 8 : (64 * 1024) / Size;

  /// A block, from this thread's magazines or chunk when they have one.
  /// Wait-free then; otherwise blocking (the depot's mutex, operator new).
  /// Throws std::bad_alloc when operator new does.
  static void* allocate() {
    thread_cache& c = cache_;
    if (block* b = c.loaded) {
      unpoison_block(b, Size);
      c.loaded = b->next;
      --c.loaded_count;
      // The next pop reads that block's link: start its miss now. Blocks freed
      // by a map come back scattered, and without this a fill that reuses
      // them waited for each link in turn (1e6 inserts into a sized map
      // reusing a freed map's blocks, with the map's group prefetch: 155-178
      // -> 131-143 ns per insert, probe of 2026-11-27).
      if (c.loaded != nullptr) __builtin_prefetch(c.loaded, 1);
      return b;
    }
    return allocate_slow(c);
  }

  /// Gives back a block from allocate(), allocated by any thread. Wait-free
  /// unless this thread's magazines are full (then the depot's mutex).
  static void deallocate(void* p) noexcept {
    thread_cache& c = cache_;
    block* b = static_cast<block*>(p);
    // A thread that is not "live" keeps loaded_count at magazine_size, so
    // this one test also sends it to the slow path (see thread_cache).
    if (c.loaded_count < magazine_size) [[likely]] {
      b->next = c.loaded;
      c.loaded = b;
      ++c.loaded_count;
      poison_block(b, Size);
      return;
    }
    deallocate_slow(c, b);
  }

  /// Bytes taken from operator new so far (never given back).
  static std::size_t reserved_bytes() {
    depot& d = the_depot();
    std::lock_guard lock(d.mutex);
    return d.chunks.size() * chunk_bytes;
  }

private:
  struct block {
    block* next;
  };
  struct magazine {
    block* head;
    std::size_t count;
  };
  static constexpr std::size_t chunk_bytes = blocks_per_chunk * Size;

  // Constant-initialized and trivially destructible, so that reaching it
  // costs no TLS wrapper call and it stays usable while other thread_local
  // destructors run. `state` says whether exit_flush is registered (live)
  // or has run (gone); outside live, loaded_count is magazine_size.
  enum class state : unsigned char { fresh, live, gone };
  struct thread_cache {
    block* loaded = nullptr;
    std::size_t loaded_count = magazine_size;
    block* spare = nullptr; // a full magazine, or null
    char* tail = nullptr;   // the unused part of this thread's chunk
    char* tail_end = nullptr;
    state st = state::fresh;
  };
  static_assert(std::is_trivially_destructible_v<thread_cache>);

  struct depot {
    std::mutex mutex;
    std::vector<magazine> magazines;            // full, except those given back at thread exit
    std::vector<std::pair<char*, char*>> tails; // chunk leftovers of exited threads
    std::vector<void*> chunks;                  // every chunk, so that none looks leaked
    detail::fork_guard::lock_node fork_node{&mutex}; // fork() waits for a refill to end
  };
  // Never destroyed: threads and static destructors may free blocks after
  // any static destructor of ours would have run.
  static depot& the_depot() {
    static depot* d = [] {
      auto* fresh = new depot;
      detail::fork_guard::add_forever(fresh->fork_node, detail::fork_guard::rank::depot);
      return fresh;
    }();
    return *d;
  }

  static constinit inline thread_local thread_cache cache_{};

  // Its destructor gives a thread's blocks to the depot when the thread ends.
  // It may run on threads that never used this pool: GCC constructs a
  // translation unit's thread_locals together, so one pool's first use
  // constructs every pool's exit_flush. With nothing to give, it leaves the
  // depot alone - it might not exist yet, and creating it here could throw
  // std::bad_alloc out of a destructor. Blocks held mean the depot exists.
  struct exit_flush {
    ~exit_flush() {
      thread_cache& c = cache_;
      if (c.loaded != nullptr || c.spare != nullptr || c.tail != c.tail_end) {
        depot& d = the_depot();
        std::lock_guard lock(d.mutex);
        try {
          if (c.loaded != nullptr) d.magazines.push_back({c.loaded, c.loaded_count});
          if (c.spare != nullptr) d.magazines.push_back({c.spare, magazine_size});
          if (c.tail != c.tail_end) d.tails.emplace_back(c.tail, c.tail_end);
        } catch (const std::bad_alloc&) {
          // what did not fit stays unused in its chunks (see leak)
        }
      }
      c = thread_cache{};
      c.st = state::gone;
    }
  };
  static inline thread_local exit_flush exit_flush_;

  static void go_live(thread_cache& c) {
    (void)&exit_flush_; // odr-use: constructs it, registering its destructor
    c.st = state::live;
    c.loaded_count = 0;
  }

  static void* carve(thread_cache& c) {
    void* p = c.tail;
    c.tail += Size;
    unpoison_block(p, Size);
    return p;
  }

  // Under the depot's mutex: a full magazine, else a leftover tail, else a
  // new chunk, into c's (empty) loaded magazine or tail.
  static void refill_locked(thread_cache& c, depot& d) {
    if (!d.magazines.empty()) {
      const magazine m = d.magazines.back();
      d.magazines.pop_back();
      c.loaded = m.head;
      c.loaded_count = m.count;
    } else if (!d.tails.empty()) {
      std::tie(c.tail, c.tail_end) = d.tails.back();
      d.tails.pop_back();
    } else {
      d.chunks.reserve(d.chunks.size() + 1); // no leak if push_back would throw
      char* chunk = static_cast<char*>(::operator new(chunk_bytes));
      detail::prefault(chunk, chunk_bytes); // carved in order: map its pages at once
      d.chunks.push_back(chunk);
      poison_block(chunk, chunk_bytes);
      c.tail = chunk;
      c.tail_end = chunk + chunk_bytes;
    }
  }

  [[gnu::noinline]] static void* allocate_slow(thread_cache& c) {
    if (c.st == state::fresh) go_live(c);
    if (c.st == state::gone) return allocate_after_exit();
    if (c.spare != nullptr) { // the spare becomes the loaded magazine
      c.loaded = std::exchange(c.spare, nullptr);
      c.loaded_count = magazine_size;
      return allocate();
    }
    if (c.tail == c.tail_end) {
      depot& d = the_depot();
      std::lock_guard lock(d.mutex);
      refill_locked(c, d);
    }
    return c.loaded != nullptr ? allocate() : carve(c);
  }

  [[gnu::noinline]] static void deallocate_slow(thread_cache& c, block* b) noexcept {
    if (c.st == state::fresh) go_live(c);
    if (c.st == state::gone) return deallocate_after_exit(b);
    if (c.loaded_count < magazine_size) return deallocate(b);
    // Loaded is full: it becomes the spare; an older spare goes to the depot.
    if (c.spare != nullptr) {
      depot& d = the_depot();
      std::lock_guard lock(d.mutex);
      try {
        d.magazines.push_back({c.spare, magazine_size});
      } catch (const std::bad_alloc&) {
        return leak(b); // cannot grow the depot's list: keep the memory, lose nothing else
      }
    }
    c.spare = c.loaded;
    c.loaded = nullptr;
    c.loaded_count = 0;
    deallocate(b);
  }

  // A thread past exit_flush: one block at a time through the depot.
  static void* allocate_after_exit() {
    thread_cache c{};
    depot& d = the_depot();
    std::lock_guard lock(d.mutex);
    refill_locked(c, d);
    if (c.loaded == nullptr) { // a tail: take one block, leave the rest
      void* p = carve(c);
      if (c.tail != c.tail_end) d.tails.emplace_back(c.tail, c.tail_end);
      return p;
    }
    block* b = c.loaded;
    unpoison_block(b, Size);
    if (b->next != nullptr) d.magazines.push_back({b->next, c.loaded_count - 1});
    return b;
  }
  static void deallocate_after_exit(block* b) noexcept {
    depot& d = the_depot();
    std::lock_guard lock(d.mutex);
    if (!d.magazines.empty() && d.magazines.back().count < magazine_size) {
      magazine& m = d.magazines.back();
      b->next = m.head;
      m.head = b;
      ++m.count;
    } else {
      try {
        d.magazines.push_back({b, 1});
        b->next = nullptr;
      } catch (const std::bad_alloc&) {
        return leak(b);
      }
    }
    poison_block(b, Size);
  }
  // Out of memory for the depot's own bookkeeping: the block stays in its
  // chunk, unused, which is still reachable through d.chunks.
  static void leak(block* b) noexcept { poison_block(b, Size); }
};

/// Which pool serves single T objects, if any (see pool_allocator).
inline constexpr std::size_t max_pooled_size = 256;

template <class T>
struct pool_for {
  static constexpr bool pooled =
      sizeof(T) <= max_pooled_size && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;
  static constexpr std::size_t align = std::max(alignof(T), alignof(void*));
  static constexpr std::size_t size =
      (std::max(sizeof(T), sizeof(void*)) + align - 1) / align * align;
  using type = block_pool<size, align>;
};

} // namespace detail

/// A stateless allocator for node-based containers: single objects of up to
/// max_block_size bytes come from a process-wide pool per block size, through
/// per-thread magazines (see the file comment: no header per block, no atomic
/// operation on the fast paths, memory kept for reuse and never returned to
/// the system). Anything else goes to std::allocator<T>.
/// Any thread may free a block another thread allocated.
template <class T>
class pool_allocator {
public:
  using value_type = T;
  using is_always_equal = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;

  static constexpr std::size_t max_block_size = detail::max_pooled_size;

  pool_allocator() noexcept = default;
  template <class U>
  pool_allocator(const pool_allocator<U>&) noexcept {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if constexpr (pool<>::pooled) {
      if (n == 1) return static_cast<T*>(pool<>::type::allocate());
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if constexpr (pool<>::pooled) {
      if (n == 1) return pool<>::type::deallocate(p);
    }
    std::allocator<T>().deallocate(p, n);
  }

  /// Bytes the pool that serves single T objects has taken from operator new
  /// (0 when T is not pooled); shared with every T of the same block size.
  static std::size_t reserved_bytes() {
    if constexpr (pool<>::pooled) return pool<>::type::reserved_bytes();
    return 0;
  }

  friend bool operator==(pool_allocator, pool_allocator) noexcept { return true; }

private:
  // Named only inside the members: containers name pool_allocator<Node>
  // before Node is complete.
  template <class U = T>
  using pool = detail::pool_for<U>;
};

} // namespace lfcore
