// lfcore/spsc_queue.hpp - bounded single-producer single-consumer ring.
//
// The classic Lamport ring with the refinements every fast SPSC queue has
// (FastFlow's SWSR buffer, folly::ProducerConsumerQueue, Rigtorp's SPSCQueue):
// the producer's and the consumer's indices live on separate cache lines, and
// each side keeps a private copy of the other side's index, re-reading the
// shared one only when its copy says the ring is full (producer) or empty
// (consumer). In the steady state a push or a pop touches no line the other
// side writes, except the slot itself.
//
// Indices count pushes and pops since construction (64-bit, never wrap in
// practice); slot = index & (capacity - 1). All `capacity` slots are usable.
//
// Who may call what: exactly one producer thread calls try_push/try_emplace/
// try_push_n, exactly one consumer thread calls try_pop/try_pop_n; the two may
// change over time if the hand-over is synchronised (e.g. a thread join).
// size_approx/empty_approx/capacity from any thread.
// Progress: wait-free for both sides (no loops).
// Ordering: FIFO; a pop that returns an element sees everything the producer
// did before pushing it ([spsc.publish] release / [spsc.observe] acquire).
// Exceptions: if constructing the element throws, try_push has no effect; if
// moving it out throws, try_pop has no effect (the element stays queued).
// Capacity 0 or not a power of two: std::invalid_argument.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/uninitialized.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

namespace lfcore {

template <class T>
class spsc_queue {
public:
  using value_type = T;

  explicit spsc_queue(std::size_t capacity)
      : mask_(detail::checked_ring_capacity(capacity, 1, "spsc_queue") - 1),
        slots_(std::make_unique<detail::uninitialized<T>[]>(capacity)) {}

  /// Destroys the elements still queued. No concurrent calls (relaxed loads:
  /// the caller's synchronisation already ordered both sides before us).
  ~spsc_queue() {
    for (std::size_t i = consumer_->index.load(std::memory_order_relaxed),
                     end = producer_->index.load(std::memory_order_relaxed);
         i != end; ++i)
      slot(i).destroy();
  }
  spsc_queue(const spsc_queue&) = delete;
  spsc_queue& operator=(const spsc_queue&) = delete;

  /// Producer only. False when full.
  template <class... Args>
  bool try_emplace(Args&&... args) {
    const std::size_t head = producer_->index.load(std::memory_order_relaxed); // relaxed: own index
    if (!has_room(head, 1)) return false;
    slot(head).construct(std::forward<Args>(args)...);
    producer_->index.store(head + 1, std::memory_order_release); // [spsc.publish]
    return true;
  }
  bool try_push(const T& v) { return try_emplace(v); }
  bool try_push(T&& v) { return try_emplace(std::move(v)); }

  /// Producer only: moves up to n elements from `first` (an input iterator)
  /// with one publication; returns how many. If a construction throws, the
  /// elements constructed before it are published and the exception propagates.
  template <class It>
  std::size_t try_push_n(It first, std::size_t n) {
    const std::size_t head = producer_->index.load(std::memory_order_relaxed); // relaxed: own index
    n = std::min(n, room(head, n));
    std::size_t done = 0;
    try {
      for (; done < n; ++done, ++first) slot(head + done).construct(std::move(*first));
    } catch (...) {
      producer_->index.store(head + done, std::memory_order_release); // [spsc.publish]
      throw;
    }
    producer_->index.store(head + n, std::memory_order_release); // [spsc.publish]
    return n;
  }

  /// Consumer only. False when empty.
  bool try_pop(T& out) {
    const std::size_t tail = consumer_->index.load(std::memory_order_relaxed); // relaxed: own index
    if (!has_items(tail, 1)) return false;
    out = std::move(*slot(tail).get());
    release_slot(tail);
    return true;
  }
  std::optional<T> try_pop() {
    const std::size_t tail = consumer_->index.load(std::memory_order_relaxed); // relaxed: own index
    if (!has_items(tail, 1)) return std::nullopt;
    std::optional<T> out(std::move(*slot(tail).get()));
    release_slot(tail);
    return out;
  }

  /// Consumer only: moves up to n elements to `out` (an output iterator) and
  /// frees their slots with one store; returns how many.
  template <class OutIt>
  std::size_t try_pop_n(OutIt out, std::size_t n) {
    const std::size_t tail = consumer_->index.load(std::memory_order_relaxed); // relaxed: own index
    n = std::min(n, available(tail, n));
    std::size_t done = 0;
    try {
      for (; done < n; ++done, ++out) {
        *out = std::move(*slot(tail + done).get());
        slot(tail + done).destroy();
      }
    } catch (...) {
      consumer_->index.store(tail + done, std::memory_order_release); // [spsc.free]
      throw;
    }
    consumer_->index.store(tail + n, std::memory_order_release); // [spsc.free]
    return n;
  }

  std::size_t capacity() const noexcept { return mask_ + 1; }
  /// A value the size had at some instant during the call (if only one side
  /// runs concurrently) or between two such values.
  std::size_t size_approx() const noexcept {
    // acquire: a caller that sees an element counted may then pop it.
    const std::size_t tail = consumer_->index.load(std::memory_order_acquire);
    const std::size_t head = producer_->index.load(std::memory_order_acquire);
    return head >= tail ? head - tail : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

private:
  detail::uninitialized<T>& slot(std::size_t i) noexcept { return slots_[i & mask_]; }

  void release_slot(std::size_t tail) {
    slot(tail).destroy();
    // [spsc.free] release: our reads of the slot happen before the producer reuses it.
    consumer_->index.store(tail + 1, std::memory_order_release);
  }

  // Producer side: free slots from `head`, refreshing the cached tail only if needed.
  std::size_t room(std::size_t head, std::size_t wanted) noexcept {
    std::size_t free = capacity() - (head - producer_->cached_other);
    if (free < wanted) {
      // [spsc.observe-free] acquire: pairs with [spsc.free].
      producer_->cached_other = consumer_->index.load(std::memory_order_acquire);
      free = capacity() - (head - producer_->cached_other);
    }
    return free;
  }
  bool has_room(std::size_t head, std::size_t n) noexcept { return room(head, n) >= n; }

  // Consumer side: queued elements from `tail`, refreshing the cached head only if needed.
  std::size_t available(std::size_t tail, std::size_t wanted) noexcept {
    std::size_t ready = consumer_->cached_other - tail;
    if (ready < wanted) {
      // [spsc.observe] acquire: pairs with [spsc.publish].
      consumer_->cached_other = producer_->index.load(std::memory_order_acquire);
      ready = consumer_->cached_other - tail;
    }
    return ready;
  }
  bool has_items(std::size_t tail, std::size_t n) noexcept { return available(tail, n) >= n; }

  struct side {
    std::atomic<std::size_t> index{0}; // written by this side, read by the other
    std::size_t cached_other = 0;      // this side's copy of the other index
  };

  const std::size_t mask_;
  const std::unique_ptr<detail::uninitialized<T>[]> slots_;
  cache_padded<side> producer_;
  cache_padded<side> consumer_;
};

} // namespace lfcore
