// Thread registry: a bitmap of ids plus the exit hook. See thread_registry.hpp.
#include "lfcore/thread_registry.hpp"

#include "lfcore/detail/at_thread_exit.hpp"
#include "lfcore/detail/fork_guard.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

namespace lfcore {
namespace {

constexpr std::size_t word_bits = 64;
constexpr std::size_t words = thread_registry::capacity / word_bits;

// Immortal state: threads may exit (and release ids) during static destruction.
struct registry_state {
  std::atomic<std::uint64_t> used[words]{};
  std::atomic<thread_registry::id_type> high_water{0};
  std::atomic<thread_registry::id_type> live{0};
  std::mutex listeners_mutex; // held at thread exit: fork() must not split it
  std::vector<thread_registry::exit_listener*> listeners;
  detail::fork_guard::lock_node fork_node{&listeners_mutex};
};

registry_state& state() {
  static registry_state* s = [] {
    auto* fresh = new registry_state; // never destroyed, on purpose
    detail::fork_guard::add_forever(fresh->fork_node, detail::fork_guard::rank::registry);
    return fresh;
  }();
  return *s;
}

thread_registry::id_type claim_lowest_free_id() {
  registry_state& s = state();
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t bits = s.used[w].load(std::memory_order_relaxed); // relaxed: CAS below decides
    while (bits != ~std::uint64_t{0}) {
      const unsigned bit = static_cast<unsigned>(std::countr_one(bits));
      // acquire: pairs with the release in release_id, so the previous owner's
      // per-thread state (written before it released the id) is visible to us.
      if (s.used[w].compare_exchange_weak(bits, bits | (std::uint64_t{1} << bit),
                                          std::memory_order_acquire, std::memory_order_relaxed)) {
        const auto id = static_cast<thread_registry::id_type>(w * word_bits + bit);
        auto hw = s.high_water.load(std::memory_order_relaxed);
        while (hw < id + 1 && // relaxed: monotonic counter, readers only need an upper bound
               !s.high_water.compare_exchange_weak(hw, id + 1, std::memory_order_relaxed)) {
        }
        s.live.fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
        return id;
      }
    }
  }
  throw std::length_error("lfcore::thread_registry: more than 65536 threads alive at once");
}

void release_id(thread_registry::id_type id) {
  registry_state& s = state();
  s.live.fetch_sub(1, std::memory_order_relaxed); // relaxed: statistic
  // release: pairs with the acquire in claim_lowest_free_id.
  s.used[id / word_bits].fetch_and(~(std::uint64_t{1} << (id % word_bits)),
                                   std::memory_order_release);
}

} // namespace

namespace {
// Set once this thread's exit guard has run: an id claimed after that (by a
// thread_local destructor that runs later) needs an exit hook of its own.
thread_local bool tls_exit_guard_done = false;
} // namespace

// Constructed on a thread's first current_id(); its destructor runs at thread
// exit and hands the id back.
struct thread_exit_guard {
  thread_registry::id_type id;
  ~thread_exit_guard() { leave(id); }

  // Tells the listeners that the calling thread is done with id, then frees it.
  static void leave(thread_registry::id_type id) {
    registry_state& s = state();
    {
      std::lock_guard lock(s.listeners_mutex);
      for (auto* l : s.listeners) l->on_thread_exit(id);
    }
    tls_exit_guard_done = true;
    thread_registry::tls_id = thread_registry::unassigned;
    ++thread_registry::tls_exits; // what the listeners kept for id is gone
    release_id(id);
  }
  static void leave_late(void* id) {
    leave(static_cast<thread_registry::id_type>(reinterpret_cast<std::uintptr_t>(id)));
  }
};

thread_registry::id_type thread_registry::acquire_slow() {
  const id_type id = claim_lowest_free_id();
  tls_id = id;
  if (!tls_exit_guard_done) {
    static thread_local thread_exit_guard guard{id}; // constructed once per thread
  } else {
    // Claimed by a thread_local destructor that runs after the guard's (a
    // thread_local is constructed once per thread): its own exit hook.
    try {
      detail::at_thread_exit(&thread_exit_guard::leave_late,
                             reinterpret_cast<void*>(std::uintptr_t{id}));
    } catch (const std::bad_alloc&) {
      // The id stays claimed, with what the listeners would have taken over.
    }
  }
  return id;
}

thread_registry::id_type thread_registry::high_water() noexcept {
  return state().high_water.load(std::memory_order_relaxed); // relaxed: an upper bound only
}

thread_registry::id_type thread_registry::live_threads() noexcept {
  return state().live.load(std::memory_order_relaxed); // relaxed: statistic
}

void thread_registry::add_exit_listener(exit_listener* l) {
  registry_state& s = state();
  std::lock_guard lock(s.listeners_mutex);
  s.listeners.push_back(l);
}

void thread_registry::remove_exit_listener(exit_listener* l) {
  registry_state& s = state();
  std::lock_guard lock(s.listeners_mutex);
  s.listeners.erase(std::remove(s.listeners.begin(), s.listeners.end(), l), s.listeners.end());
}

} // namespace lfcore
