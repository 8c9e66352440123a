// lfcore/unbounded_mpmc_queue.hpp - unbounded multi-producer multi-consumer
// queue: a list of segments whose slots are claimed with fetch-and-add.
//
// The algorithm is Ramalhete and Correia's FAAArrayQueue (concurrencyfreaks,
// 2016; the simplest member of the LCRQ family of Morrison and Afek, PPoPP
// 2013), with values stored in place instead of as pointers:
//
// * A segment holds `SegmentSize` slots and two counters. A producer takes
//   position i = enqueued++ (FAA) of the tail segment and publishes its element
//   in slot i; a consumer takes position i = dequeued++ of the head segment and
//   takes the element of slot i. Each position has exactly one producer and one
//   consumer, so the only race on a slot is between those two.
// * Slot states: empty -> full (its producer published) -> taken (its
//   consumer took the element), or empty -> taken when the consumer came first.
//   The producer writes its element into the slot and then CASes empty -> full;
//   if the consumer has already marked the slot taken, the CAS fails, the
//   producer moves its element back out (the consumer never reads a slot it
//   marked taken) and retries at a fresh position. No one ever waits for
//   another thread to finish a step: lock-free.
// * A producer that finds the tail segment full links a new segment holding its
//   element (CAS on next) and swings tail_; others help swing tail_. A consumer
//   that finds the head segment drained swings head_ to the next segment and
//   retires the old one to the Reclamation policy's domain (hazard pointers
//   by default, RCU through integrations/urcu; see lfcore/reclamation.hpp).
// * Invariant: head_ never passes tail_. A consumer first helps tail_ off the
//   segment it is about to retire. (The published FAAArrayQueue swings head_
//   without this step; then tail_ can still point to a retired segment, and a
//   producer's hazard pointer validated against tail_ would not protect it.)
//   tests/model/unbounded_mpmc_queue.pml shows both: Spin finds that
//   execution in the published algorithm and none in this one. The memory
//   orders below are checked under release/acquire, as Arm needs them, by
//   tests/model/unbounded_mpmc_ra.pml (each one weakened is caught).
//
// Who may call what: any thread, any member but the destructor.
// Progress: push and try_pop are lock-free. A producer whose slot a consumer
// took retries; some operation completed meanwhile (the consumer's).
// Ordering: linearizable FIFO. A push linearizes at its successful CAS of the
// slot state, a successful pop at its exchange of the slot state, an empty pop
// at its reading of the counters or of a null next. Elements of one producer
// are popped in the order it pushed them. A pop sees everything the element's
// producer did before the push.
// Memory: elements live in segments of SegmentSize slots; a drained segment is
// retired to the domain given at construction. With hazard pointers that is by
// default one shared by every unbounded_mpmc_queue, with a low scan threshold
// because segments are large, so after a burst the memory goes back to the
// allocator except for at most max(64, 2H) segments per thread still waiting
// for a scan (H: the domain's hazard pointers); with RCU, segments wait for a
// grace period. reclaim() on the domain frees the caller's at once. A thread
// keeps the hazard pointer of its operations in the domain between them (one
// for every queue of the domain, whatever its element type), until it ends or
// the domain goes.
// Exceptions: T must be nothrow move-constructible and move-assignable (an
// element moves back out of a slot a consumer gave up on). If allocating a
// segment throws (std::bad_alloc), push has no effect and the argument is
// untouched. Consumers never allocate.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/detail/guard_lease.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/detail/uninitialized.hpp"
#include "lfcore/reclamation.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace lfcore {

namespace detail {
/// The default domain of unbounded_mpmc_queue segments. With hazard pointers,
/// a domain of its own with a low scan threshold, never destroyed (like the
/// default domain), so threads still running at exit may use it.
template <class Reclamation = hazard_pointer_reclamation>
typename Reclamation::domain_type& queue_segment_domain() {
  if constexpr (std::is_same_v<Reclamation, hazard_pointer_reclamation>) {
    static hazard_pointer_domain* domain = new hazard_pointer_domain(
        hazard_pointer_domain_config{.scan_threshold = stress_build ? 0 : 64});
    return *domain;
  } else {
    return Reclamation::default_domain();
  }
}

/// The one guard of a queue operation. One type for every queue of a
/// Reclamation, so a thread keeps one in a domain however many element types
/// its queues have (guard_lease).
template <class Reclamation>
struct queue_guard {
  explicit queue_guard(typename Reclamation::domain_type& d) : hp(Reclamation::make_guard(d)) {}
  typename Reclamation::guard hp;
  void reset() noexcept { hp.reset_protection(); }
};
} // namespace detail

template <class T, std::size_t SegmentSize = stress_build ? 2 : 1024,
          class Reclamation = hazard_pointer_reclamation>
class unbounded_mpmc_queue {
  static_assert(SegmentSize >= 1);
  static_assert(std::is_nothrow_move_constructible_v<T> && std::is_nothrow_move_assignable_v<T>,
                "unbounded_mpmc_queue<T>: T must be nothrow move-constructible and "
                "move-assignable (see the header)");

public:
  using value_type = T;
  static constexpr std::size_t segment_size = SegmentSize;

  using reclamation = Reclamation;
  using domain_type = typename Reclamation::domain_type;

  explicit unbounded_mpmc_queue(domain_type& domain = detail::queue_segment_domain<Reclamation>())
      : domain_(&domain) {
    segment* first = new segment;
    head_->store(first, std::memory_order_relaxed);
    tail_->store(first, std::memory_order_relaxed);
  }

  /// Destroys the elements still queued. No concurrent calls; segments retired
  /// earlier are freed by the domain, not here.
  ~unbounded_mpmc_queue() {
    for (segment* s = head_->load(std::memory_order_relaxed); s != nullptr;) {
      for (slot& sl : s->slots)
        if (sl.state.load(std::memory_order_relaxed) == slot_state::full) sl.value.destroy();
      delete std::exchange(s, s->next.load(std::memory_order_relaxed));
    }
  }
  unbounded_mpmc_queue(const unbounded_mpmc_queue&) = delete;
  unbounded_mpmc_queue& operator=(const unbounded_mpmc_queue&) = delete;

  /// Always succeeds, or throws std::bad_alloc with v untouched.
  void push(T&& v) {
    lease g(*domain_);
    for (;;) {
      segment* tail = g->hp.protect(*tail_);
      // relaxed: the FAA only hands out positions; the slot state orders the element.
      detail::stress_point();
      const std::size_t i = tail->enqueued->fetch_add(1, std::memory_order_relaxed);
      if (i < SegmentSize) {
        detail::stress_point(); // claimed, not yet published: consumers of later slots run
        if (publish(tail->slots[i], v)) return;
        continue; // our consumer gave up on slot i; take another position
      }
      // The tail segment is full: link a new one holding v, or help whoever did.
      segment* next = tail->next.load(std::memory_order_acquire); // pairs with [umpmc.link]
      if (next == nullptr) {
        if (tail != tail_->load(std::memory_order_relaxed)) continue; // stale: avoid allocating
        if (link_new_segment(tail, v)) return;
        continue;
      }
      // release: pairs with protect()'s acquire, so the segment's contents are visible.
      tail_->compare_exchange_strong(tail, next, std::memory_order_release,
                                     std::memory_order_relaxed);
    }
  }
  void push(const T& v) {
    T copy(v); // may throw: nothing is claimed yet
    push(std::move(copy));
  }
  template <class... Args>
  void emplace(Args&&... args) {
    push(T(std::forward<Args>(args)...));
  }
  /// For code written against the bounded queues: always true.
  bool try_push(T&& v) {
    push(std::move(v));
    return true;
  }
  bool try_push(const T& v) {
    push(v);
    return true;
  }

  /// False when empty. Throws only std::bad_alloc, when the calling thread
  /// needs its first hazard record of the domain (as push may).
  bool try_pop(T& out) {
    std::optional<T> v = try_pop();
    if (!v) return false;
    out = std::move(*v);
    return true;
  }
  std::optional<T> try_pop() {
    lease g(*domain_);
    for (;;) {
      segment* head = g->hp.protect(*head_);
      // Empty check first, so that polling an empty queue burns no positions.
      // relaxed: a stale value only costs a wasted position (or one more turn);
      // a push that happened before this call is seen by coherence.
      if (head->dequeued->load(std::memory_order_relaxed) >=
              head->enqueued->load(std::memory_order_relaxed) &&
          head->next.load(std::memory_order_relaxed) == nullptr)
        return std::nullopt;
      const std::size_t i = head->dequeued->fetch_add(1, std::memory_order_relaxed);
      if (i < SegmentSize) {
        slot& s = head->slots[i];
        // [umpmc.take] acquire: pairs with [umpmc.publish]; the element is
        // visible. If the slot was empty, its producer will see `taken` and go
        // elsewhere: we never touch the slot's value then.
        // One exchange, measured: a load first (to skip the RMW on full slots)
        // costs a second transfer of the contended line and ran 4x slower at
        // 1 producer / 1 consumer; spinning for an unpublished slot first (as
        // xenium does) was slower and bimodal on this 2-core machine.
        if (s.state.exchange(slot_state::taken, std::memory_order_acquire) == slot_state::full) {
          std::optional<T> out(std::move(*s.value.get()));
          s.value.destroy();
          return out;
        }
        continue;
      }
      // The head segment is drained.
      segment* next = head->next.load(std::memory_order_acquire); // pairs with [umpmc.link]
      if (next == nullptr) return std::nullopt;
      // Keep head_ from passing tail_ (see the header): after this, tail_ is
      // past `head` because tail_ only moves forward.
      segment* tail = tail_->load(std::memory_order_relaxed); // relaxed: the CAS decides
      if (tail == head)
        tail_->compare_exchange_strong(tail, next, std::memory_order_release,
                                       std::memory_order_relaxed);
      domain_->reserve_retire(); // retiring head after the CAS cannot fail then
      // release: pairs with protect()'s acquire on head_.
      if (head_->compare_exchange_strong(head, next, std::memory_order_release,
                                         std::memory_order_relaxed)) {
        g->hp.reset_protection();
        domain_->retire(head); // unreachable from head_ and tail_ now
        // Stress builds free it as early as possible (hazard pointers only: an
        // RCU domain's reclaim() waits for readers, this section among them).
        if constexpr (stress_build && std::is_same_v<Reclamation, hazard_pointer_reclamation>)
          domain_->reclaim();
      }
    }
  }

private:
  // The section and the guard of one operation: the guard the calling thread
  // keeps in the domain (one hazard pointer per push cost more than the push
  // at 2 threads), or a fresh one when a move constructor or destructor of T
  // run by the operation calls into another queue.
  using lease = detail::guard_lease<Reclamation, detail::queue_guard<Reclamation>>;

  enum class slot_state : std::uint8_t { empty, full, taken };

  struct slot {
    std::atomic<slot_state> state{slot_state::empty};
    detail::uninitialized<T> value;
  };

  // Counters on their own lines: producers hammer one, consumers the other.
  struct segment {
    cache_padded<std::atomic<std::size_t>> enqueued{};
    cache_padded<std::atomic<std::size_t>> dequeued{};
    std::atomic<segment*> next{nullptr};
    slot slots[SegmentSize];
  };

  // Producer of slot s: writes v into it, then tries to publish. On failure
  // (the slot's consumer marked it taken) moves v back out and returns false.
  static bool publish(slot& s, T& v) noexcept {
    s.value.construct(std::move(v));
    slot_state expected = slot_state::empty;
    // [umpmc.publish] release: the element is written before a consumer can see `full`.
    if (s.state.compare_exchange_strong(expected, slot_state::full, std::memory_order_release,
                                        std::memory_order_relaxed))
      return true;
    v = std::move(*s.value.get());
    s.value.destroy();
    return false;
  }

  // Links a new segment holding v after `tail`. False if another producer
  // linked one first (v is back in place and nothing is allocated then).
  bool link_new_segment(segment* tail, T& v) {
    auto fresh = std::make_unique<segment>(); // may throw; nothing has changed yet
    fresh->enqueued->store(1, std::memory_order_relaxed);
    fresh->slots[0].value.construct(std::move(v));
    fresh->slots[0].state.store(slot_state::full, std::memory_order_relaxed);
    segment* expected = nullptr;
    // [umpmc.link] release: the new segment's contents are written before it is reachable.
    if (tail->next.compare_exchange_strong(expected, fresh.get(), std::memory_order_release,
                                           std::memory_order_relaxed)) {
      detail::stress_point(); // tail_ lags here: consumers may drain `tail` meanwhile
      tail_->compare_exchange_strong(tail, fresh.release(), std::memory_order_release,
                                     std::memory_order_relaxed);
      return true;
    }
    v = std::move(*fresh->slots[0].value.get());
    fresh->slots[0].value.destroy();
    return false;
  }

  domain_type* const domain_;
  cache_padded<std::atomic<segment*>> head_{};
  cache_padded<std::atomic<segment*>> tail_{};
};

} // namespace lfcore
