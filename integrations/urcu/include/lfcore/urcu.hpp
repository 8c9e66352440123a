// lfcore/urcu.hpp - userspace RCU (liburcu) as the Reclamation policy of
// lfcore's containers (see lfcore/reclamation.hpp for the policy concept).
//
//   lfcore::urcu::hash_trie_map<std::string, int> m;  // hash_trie_map<..., urcu::memb>
//   lfcore::unbounded_mpmc_queue<int, 1024, lfcore::urcu::memb> q;
//
// Two of liburcu's flavours:
// * memb (the default): read-side sections are a per-thread counter update and
//   a compiler barrier (sys_membarrier makes the updaters pay). lfcore
//   registers a thread with liburcu on its first section, unless the
//   application did, and then unregisters it at thread exit. A thread the
//   application registered must stay registered while it uses a container.
// * qsbr: read-side sections cost nothing at all; instead every thread that
//   touches a container must be registered (urcu_qsbr_register_thread) and
//   online, and must report quiescent states (urcu_qsbr_quiescent_state, or go
//   offline) while it holds no element or iterator - else grace periods, and
//   so all reclamation, stop. lfcore registers no thread for qsbr.
//
// Trade-off against hazard pointers (numbers: bench/results/qsbr/ and
// memb_tls/): a reader writes nothing per node it passes, so lookups are
// cheaper. On 1e6 keys qsbr's hits ran 1.15x-1.29x hazard pointers', memb's
// 1.13x-1.16x (its read lock and unlock are most of the difference); memb's
// grace periods interrupt every reader (membarrier), about a hundred times
// each while readers keep entering sections, so its update mixes ran
// 0.82x-0.98x past one thread, where qsbr's ran 1.10x-1.20x. The price: a
// retired node waits for every read-side section that began before its
// retirement. A reader stalled inside a section - a preempted thread, an
// iterator kept alive - holds back every node retired meanwhile, without bound;
// under hazard pointers it holds only the nodes it protects
// (tests/urcu_test.cpp shows both). Iterators of an RCU container are
// read-side sections: they must be destroyed on the thread that made them.
//
// Retirement: each thread gathers retired nodes in a batch of `batch_capacity`
// and hands a full batch to call_rcu (one rcu_head per batch, so nodes carry
// no rcu_head and retiring allocates once per batch). Callbacks run on
// liburcu's call_rcu thread, which therefore runs the element destructors.
// At thread exit a partial batch goes to an orphan list that the next full
// batch (of any thread) or reclaim() hands on. Garbage: fewer than
// batch_capacity nodes per thread plus everything waiting for a grace period.
//
// Memory orders: liburcu's grace period orders a reader's accesses before the
// callback that frees what it read (that is the whole contract of call_rcu);
// the unlink that precedes retire is the container's own release CAS.
// ThreadSanitizer sees neither liburcu's membarrier nor its futexes, so TSan
// builds annotate the same edges: every section end releases, and each
// callback acquires, one token.
//
// Performance: liburcu's read_lock/read_unlock are calls into the library
// unless the including file defines _LGPL_SOURCE before any liburcu header,
// which inlines them (liburcu's fast path; LGPL terms apply - see liburcu).
// lfcore's benchmarks define it.
#pragma once

#include "lfcore/config.hpp"
#include "lfcore/detail/at_thread_exit.hpp"
#include "lfcore/hash_trie_map.hpp"
#include "lfcore/hazard_pointer.hpp" // detail::retired_entry

#include <urcu/urcu-memb.h>
#include <urcu/urcu-qsbr.h>
// For the memb reader's `registered` bit only (urcu-memb.h includes this
// header itself when _LGPL_SOURCE is defined).
#include <urcu/static/urcu-memb.h>

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#if defined(LFCORE_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

// Declared here as well as in <urcu/flavor.h>: that header declares only the
// flavour of the first liburcu header a file includes.
extern "C" {
extern const struct rcu_flavor_struct urcu_memb_flavor;
extern const struct rcu_flavor_struct urcu_qsbr_flavor;
}

// liburcu declares its per-thread reader state `thread_local` when compiled
// as C++, and C++ must assume that an extern thread_local defined elsewhere
// has a dynamic initializer: every access first tests for (and may call) a
// TLS init function. memb's read_lock/read_unlock touch the reader three to
// five times, so each section carried those tests and the spills around
// their possible calls. The variable is a C `__thread` in liburcu, which has
// no initializer to run; redeclared `__thread`, GCC drops the tests (clang
// rejects the redeclaration and keeps them). A memb hit: 101 -> 91
// instructions (bench/results/memb_tls/). Without CONFIG_RCU_TLS liburcu
// keeps the reader behind pthread keys, and there is nothing to redeclare.
#if defined(CONFIG_RCU_TLS) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wredundant-decls"
extern "C" {
extern __thread struct urcu_reader urcu_memb_reader;
}
#pragma GCC diagnostic pop
#endif

namespace lfcore::urcu {

namespace detail {

/// liburcu's memb flavour, as the policy uses it.
struct memb_api {
  static void read_lock() noexcept { urcu_memb_read_lock(); }
  static void read_unlock() noexcept { urcu_memb_read_unlock(); }
  static const rcu_flavor_struct& flavor() noexcept { return urcu_memb_flavor; }
  static constexpr bool lfcore_registers_threads = true;
  static bool registered() noexcept { return URCU_TLS(urcu_memb_reader).registered; }
};

/// liburcu's qsbr flavour: the application registers threads and reports
/// quiescent states.
struct qsbr_api {
  static void read_lock() noexcept {
    assert(urcu_qsbr_read_ongoing() &&
           "lfcore::urcu::qsbr: the thread must be registered and online");
    urcu_qsbr_read_lock();
  }
  static void read_unlock() noexcept { urcu_qsbr_read_unlock(); }
  static const rcu_flavor_struct& flavor() noexcept { return urcu_qsbr_flavor; }
  static constexpr bool lfcore_registers_threads = false;
};

// ThreadSanitizer annotations (see the header); nothing in other builds.
inline void tsan_release([[maybe_unused]] const void* address) noexcept {
#if defined(LFCORE_TSAN)
  __tsan_release(const_cast<void*>(address));
#endif
}
inline void tsan_acquire([[maybe_unused]] const void* address) noexcept {
#if defined(LFCORE_TSAN)
  __tsan_acquire(const_cast<void*>(address));
#endif
}
inline const char grace_token = 0; // what section ends release, callbacks acquire

} // namespace detail

struct domain_stats {
  std::uint64_t retired = 0;   ///< objects handed to call_rcu (full batches and orphans)
  std::uint64_t reclaimed = 0; ///< of those, deleted
  std::uint64_t pending() const noexcept { return retired - reclaimed; }
};

/// The retire side of one liburcu flavour. One per flavour (liburcu's state is
/// process-wide): Policy::default_domain(). Never destroyed, because
/// callbacks may still run while the program exits.
template <class Api>
class domain {
public:
  static constexpr std::size_t batch_capacity = stress_build ? 2 : 64;

  /// deleter(p) runs on liburcu's call_rcu thread after a grace period that
  /// begins after this call. A deleter with state is moved to a heap box.
  /// Precondition: p is unreachable for new readers; the thread is
  /// registered (memb: lfcore does it; qsbr: the application, and online).
  /// Throws std::bad_alloc when a new batch cannot be allocated (p is then
  /// not retired).
  template <class T, class D = std::default_delete<T>>
  void retire(T* p, D deleter = D()) {
    batch*& current = local().current;
    if (current == nullptr) current = new batch;
    current->entries[current->count++] = lfcore::detail::make_retired_entry(p, std::move(deleter));
    if (current->count == batch_capacity) submit(std::exchange(current, nullptr));
  }

  /// Makes the calling thread's next retire() with a stateless deleter
  /// allocate nothing (see hazard_pointer_domain::reserve_retire). May throw
  /// std::bad_alloc, and then nothing changed.
  void reserve_retire() {
    batch*& current = local().current;
    if (current == nullptr) current = new batch;
  }

  /// Hands on the caller's partial batch and the orphans, then waits until
  /// every callback submitted so far ran (rcu_barrier). Returns how many
  /// objects were deleted meanwhile (by any thread's batches). Must not be
  /// called inside a read-side section (it would wait for itself): not while
  /// the calling thread holds an iterator.
  std::size_t reclaim() {
    ensure_registered();
    thread_state& ts = local();
    if (ts.current != nullptr && ts.current->count != 0) submit(std::exchange(ts.current, nullptr));
    submit_orphans();
    // relaxed: rcu_barrier orders the callbacks' counting before its return.
    const std::uint64_t before = reclaimed_.load(std::memory_order_relaxed);
    Api::flavor().barrier();
    return static_cast<std::size_t>(reclaimed_.load(std::memory_order_relaxed) - before);
  }

  domain_stats stats() const noexcept {
    // Read reclaimed first: pending() never underflows.
    const std::uint64_t reclaimed = reclaimed_.load(std::memory_order_acquire);
    return {retired_.load(std::memory_order_acquire), reclaimed};
  }

  static domain& instance() {
    static domain* d = new domain;
    return *d;
  }

  /// memb: registers the calling thread with liburcu unless it is (undone
  /// at thread exit). qsbr: nothing.
  static void ensure_registered() {
    if constexpr (Api::lfcore_registers_threads) {
      if (!known_registered) [[unlikely]] {
        if (!Api::registered()) {
          local().unregister_at_exit = true;
          Api::flavor().register_thread();
        }
        known_registered = true;
      }
    }
  }

private:
  struct batch {
    rcu_head head; // first member: the callback gets the batch back from it
    batch* next_orphan = nullptr;
    std::size_t count = 0;
    lfcore::detail::retired_entry entries[batch_capacity];
  };

  // The calling thread's partial batch and registration. Trivially
  // destructible and constant-initialized, so it stays usable while the
  // thread's thread_local destructors run: one that uses a container after
  // leave_thread ran hooks it again (see detail/at_thread_exit.hpp).
  struct thread_state {
    batch* current = nullptr;
    bool unregister_at_exit = false; // lfcore registered the thread
    bool leave_hooked = false;       // leave_thread will run at thread exit
  };
  static constinit inline thread_local thread_state state_{};
  static thread_state& local() {
    thread_state& ts = state_;
    if (!ts.leave_hooked) [[unlikely]] {
      lfcore::detail::at_thread_exit(&leave_thread, nullptr); // may throw std::bad_alloc
      ts.leave_hooked = true;
    }
    return ts;
  }
  // At thread exit: the partial batch to the orphans, and unregisters the
  // thread if lfcore registered it.
  static void leave_thread(void*) {
    thread_state& ts = state_;
    ts.leave_hooked = false;
    if (ts.current != nullptr && ts.current->count != 0)
      instance().adopt(ts.current);
    else
      delete ts.current;
    ts.current = nullptr;
    if (ts.unregister_at_exit) {
      Api::flavor().unregister_thread();
      ts.unregister_at_exit = false;
      known_registered = false;
    }
  }
  // Trivially destructible, so the check on every section is a plain TLS read.
  static inline thread_local bool known_registered = false;

  domain() = default;

  void submit(batch* b) {
    ensure_registered(); // call_rcu needs a registered thread
    submit_orphans();
    hand_to_call_rcu(b);
  }
  void hand_to_call_rcu(batch* b) {
    // relaxed: a statistic, ordered for stats() by the callback's release.
    retired_.fetch_add(b->count, std::memory_order_relaxed);
    detail::tsan_release(b);
    Api::flavor().update_call_rcu(&b->head, &run_batch);
  }

  static void run_batch(rcu_head* head) {
    batch* b = reinterpret_cast<batch*>(head); // head is b's first member
    detail::tsan_acquire(b);
    detail::tsan_acquire(&detail::grace_token);
    for (std::size_t i = 0; i < b->count; ++i)
      b->entries[i].reclaim(b->entries[i].address, b->entries[i].context);
    // release: pairs with stats()' acquire.
    instance().reclaimed_.fetch_add(b->count, std::memory_order_release);
    delete b;
  }

  // A thread that exits leaves its partial batch here (it may no longer be
  // registered, so it cannot call call_rcu itself).
  void adopt(batch* b) noexcept {
    b->next_orphan = orphans_.load(std::memory_order_relaxed);
    // release: the batch's entries are visible to whoever takes the list.
    // Lock-free (a Treiber push): the CAS fails only when another push or the
    // taking exchange changed the head, and then reloads it into next_orphan.
    while (!orphans_.compare_exchange_weak(b->next_orphan, b, std::memory_order_release,
                                           std::memory_order_relaxed)) {
    }
  }
  void submit_orphans() {
    // relaxed check first: orphans are rare; acquire pairs with adopt().
    if (orphans_.load(std::memory_order_relaxed) == nullptr) return;
    // The exchange takes the whole list at once: no ABA on the head.
    for (batch* b = orphans_.exchange(nullptr, std::memory_order_acquire); b != nullptr;)
      hand_to_call_rcu(std::exchange(b, b->next_orphan));
  }

  std::atomic<std::uint64_t> retired_{0};
  std::atomic<std::uint64_t> reclaimed_{0};
  std::atomic<batch*> orphans_{nullptr};
};

/// The Reclamation policy over one liburcu flavour.
template <class Api>
struct reclamation {
  using domain_type = domain<Api>;

  /// Does nothing: inside a section every reachable node stays allocated.
  class guard {
  public:
    template <class T>
    T* protect(const std::atomic<T*>& src) const noexcept {
      // acquire: rcu_dereference - the node's contents, published by the
      // release that stored it in src.
      return src.load(std::memory_order_acquire);
    }
    template <class U, class ToPointer>
    U protect(const std::atomic<U>& src, ToPointer) const noexcept {
      return src.load(std::memory_order_acquire); // acquire: as above
    }
    // The guess may have been read before the section began: read again.
    template <class U, class ToPointer>
    U protect(const std::atomic<U>& src, U, ToPointer) const noexcept {
      return src.load(std::memory_order_acquire); // acquire: as above
    }
    template <class T, class Predicate>
    bool try_protect_if(const T*, Predicate&&) const noexcept {
      return true; // the pointer was reachable during this section: valid until it ends
    }
    template <class T>
    void reset_protection(const T*) const noexcept {}
    void reset_protection(std::nullptr_t = nullptr) const noexcept {}
    void swap(guard&) noexcept {}
  };

  /// An RCU read-side critical section (they nest). Default-constructed:
  /// outside. Must end on the thread that entered it.
  class section {
  public:
    section() noexcept = default;
    section(section&& o) noexcept : active_(std::exchange(o.active_, false)) {}
    section& operator=(section&& o) noexcept {
      if (this != &o) {
        leave();
        active_ = std::exchange(o.active_, false);
      }
      return *this;
    }
    ~section() { leave(); }

  private:
    friend struct reclamation;
    explicit section(bool) : active_(true) {
      domain_type::ensure_registered();
      Api::read_lock();
    }
    void leave() noexcept {
      if (!std::exchange(active_, false)) return;
      detail::tsan_release(&detail::grace_token);
      Api::read_unlock();
    }
    bool active_ = false;
  };

  static domain_type& default_domain() { return domain_type::instance(); }
  static guard make_guard(domain_type&) noexcept { return {}; }
  static section read_section() { return section(true); }
  static constexpr bool bounded_garbage = false;
};

/// liburcu's memb flavour; lfcore registers threads itself.
using memb = reclamation<detail::memb_api>;
/// liburcu's qsbr flavour; the application registers threads and reports
/// quiescent states (see the header).
using qsbr = reclamation<detail::qsbr_api>;

/// hash_trie_map under RCU (memb).
template <class Key, class T, class Hash = std::hash<Key>, class KeyEqual = std::equal_to<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>>
using hash_trie_map = lfcore::hash_trie_map<Key, T, Hash, KeyEqual, Allocator, memb>;

} // namespace lfcore::urcu
