// lfcore/unbounded_spsc_queue.hpp - unbounded single-producer single-consumer
// queue: a list of bounded rings.
//
// The design of FastFlow's uSPSC (Aldinucci, Danelutto, Kilpatrick, Meneghin,
// Torquati, "An Efficient Unbounded Lock-Free Queue for Multi-core Systems",
// Euro-Par 2012): the producer pushes into the ring at the tail of a list of
// spsc_queue rings; when that ring is full it links a fresh one after it and
// continues there, so nothing is ever copied. The consumer pops from the ring
// at the head; when it is empty and a next ring exists, it moves on and hands
// the drained ring back to the producer through a small SPSC pool of spare
// rings (at most `spare_rings` kept; the rest are freed, so memory returns
// after a burst).
//
// Invariants: the producer writes only the tail ring; a ring's `next` is
// written once (null -> the following ring) by the producer, after the last
// element it will ever push to that ring. So a consumer that sees `next` set
// and then finds the ring empty knows it is drained for good. Model-checked
// under release/acquire (tests/model/spsc_queue.pml, scenario 3): with
// [uspsc.link] or [uspsc.observe-link] relaxed, or without the second look
// in pop_with(), an element is skipped.
//
// Who may call what: one producer thread calls push/try_push/emplace, one
// consumer thread calls try_pop; the roles may change hands if the hand-over is
// synchronised (e.g. a join).
// Progress: try_pop is wait-free; push is wait-free except when it allocates a
// ring (when the tail ring is full and the pool has no spare).
// Ordering: FIFO; a pop sees everything the producer did before the push.
// Exceptions: if allocating a ring or constructing the element throws, push has
// no effect (strong guarantee) and the exception propagates. If moving an
// element out throws, try_pop has no effect.
// Ring capacity 0 or not a power of two: std::invalid_argument.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/uninitialized.hpp"
#include "lfcore/spsc_queue.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

namespace lfcore {

template <class T>
class unbounded_spsc_queue {
public:
  using value_type = T;
  static constexpr std::size_t spare_rings = 4;

  /// `ring_capacity`: elements per ring (a power of two).
  explicit unbounded_spsc_queue(std::size_t ring_capacity = 1024)
      : ring_capacity_(
            detail::checked_ring_capacity(ring_capacity, 1, "unbounded_spsc_queue ring")),
        spares_(spare_rings) {
    producer_->tail = consumer_->head = new ring(ring_capacity_);
  }

  /// Destroys the elements still queued. No concurrent calls.
  ~unbounded_spsc_queue() {
    for (ring* r = consumer_->head; r != nullptr;)
      delete std::exchange(r, r->next.load(std::memory_order_relaxed));
    while (std::optional<ring*> r = spares_.try_pop()) delete *r;
  }
  unbounded_spsc_queue(const unbounded_spsc_queue&) = delete;
  unbounded_spsc_queue& operator=(const unbounded_spsc_queue&) = delete;

  /// Producer only. Always succeeds (or throws, see the header).
  template <class... Args>
  void emplace(Args&&... args) {
    ring* tail = producer_->tail;
    // Forwarding twice is safe: a try_emplace that fails constructs nothing,
    // so nothing was moved from args.
    if (tail->elements.try_emplace(std::forward<Args>(args)...)) return;
    std::unique_ptr<ring> fresh(take_spare());
    fresh->elements.try_emplace(std::forward<Args>(args)...); // an empty ring has room
    // [uspsc.link] release: the element just pushed into `fresh` (and every
    // element pushed into `tail`) happens before a consumer that sees the link.
    tail->next.store(fresh.get(), std::memory_order_release);
    producer_->tail = fresh.release();
  }
  void push(const T& v) { emplace(v); }
  void push(T&& v) { emplace(std::move(v)); }
  /// For code written against the bounded queues: always true.
  bool try_push(const T& v) {
    emplace(v);
    return true;
  }
  bool try_push(T&& v) {
    emplace(std::move(v));
    return true;
  }

  /// Consumer only. False when empty.
  bool try_pop(T& out) {
    return pop_with([&](spsc_queue<T>& q) { return q.try_pop(out); });
  }
  std::optional<T> try_pop() {
    std::optional<T> out;
    pop_with([&](spsc_queue<T>& q) { return (out = q.try_pop()).has_value(); });
    return out;
  }

  std::size_t ring_capacity() const noexcept { return ring_capacity_; }

private:
  struct ring {
    explicit ring(std::size_t capacity) : elements(capacity) {}
    spsc_queue<T> elements;
    std::atomic<ring*> next{nullptr};
  };

  template <class Pop>
  bool pop_with(Pop pop) {
    ring* head = consumer_->head;
    if (pop(head->elements)) return true;
    // [uspsc.observe-link] acquire: pairs with [uspsc.link].
    ring* next = head->next.load(std::memory_order_acquire);
    if (next == nullptr) return false;
    // The producer is done with `head`; whatever it pushed there before
    // linking `next` is visible now, so look once more before leaving it.
    if (pop(head->elements)) return true;
    consumer_->head = next;
    give_back(head);
    return pop(next->elements); // holds at least the element pushed with the link
  }

  // Consumer side: offer a drained ring to the producer, or free it.
  void give_back(ring* r) noexcept {
    // relaxed: the pool's release push publishes it to the producer.
    r->next.store(nullptr, std::memory_order_relaxed);
    if (!spares_.try_push(r)) delete r;
  }

  // Producer side: a spare ring from the consumer, or a new one.
  ring* take_spare() {
    if (std::optional<ring*> r = spares_.try_pop()) return *r;
    return new ring(ring_capacity_);
  }

  struct producer_side {
    ring* tail;
  };
  struct consumer_side {
    ring* head;
  };

  const std::size_t ring_capacity_;
  cache_padded<producer_side> producer_;
  cache_padded<consumer_side> consumer_;
  spsc_queue<ring*> spares_; // the consumer pushes drained rings, the producer pops them
};

} // namespace lfcore
