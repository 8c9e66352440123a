// lfcore/spsc_queue.hpp - bounded single-producer single-consumer ring.
//
// Each direction of the hand-off is signalled where it is cheapest:
// * Producer -> consumer, "slot p holds the element of position p": the slot
//   itself carries a sequence number, seq == p + 1 (the slot-as-signal idea of
//   FastForward, Giacomoni, Moseley and Vachharajani, PPoPP 2008, and of
//   FastFlow's SWSR buffer, with a sequence instead of a NULL test so that T
//   can be anything). The consumer polls only the slot it is about to read,
//   so a message moves one cache line from producer to consumer.
// * Consumer -> producer, "positions before t are free": the consumer's index.
//   The producer keeps a private copy and re-reads the shared one only when
//   its copy says the ring is full (the cached index of FastFlow and
//   folly::ProducerConsumerQueue). The consumer never writes a slot.
// Measured against the two pure designs on this project's machine
// (bench/results/README.md): index-only rings lose round trips (two lines per
// message), flag-only rings lose throughput (the consumer writes every slot
// line back, and a producer waiting on a full ring chases it slot by slot).
//
// Hysteresis when full: a producer that found the ring full resumes only once
// refill_batch slots are free (rings of refill_min_capacity or more; smaller
// rings resume at one). Resuming at one free slot makes the producer write
// the line the consumer is reading, slot after slot: 0.8x the throughput in
// the runner's SPSC sweep. The idea is B-Queue's (Wang et al., "B-Queue:
// Efficient and Practical Queuing for Fast Core-to-Core Communication",
// IJPP 2013). So try_push may fail while up to refill_batch - 1 slots are
// free, but only after the ring was full and until the consumer frees them;
// try_push_n is exact.
//
// Positions count pushes and pops since construction (64-bit: they never wrap
// in practice); slot = position & (capacity - 1). All `capacity` slots are
// usable. Invariant: the producer publishes positions in order, so if slot
// p + k - 1 holds position p + k - 1, positions p .. p + k - 1 are all ready
// (one load answers for a batch in try_pop_n).
//
// Who may call what: exactly one producer thread calls try_push/try_emplace/
// try_push_n, exactly one consumer thread calls try_pop/try_pop_n; the two may
// change over time if the hand-over is synchronised (e.g. a thread join).
// size_approx/empty_approx/capacity from any thread.
// Progress: wait-free for both sides (no loops but over a batch).
// Ordering: FIFO; a pop that returns an element sees everything the producer
// did before pushing it ([spsc.publish] release / [spsc.observe] acquire).
// Model-checked under release/acquire, where a load may read a stale value
// as on Arm (tests/model/spsc_queue.pml): both orders are needed, and so is
// publishing positions in order, which try_pop_n's one load per prefix
// relies on. ([spsc.free]/[spsc.observe-free] order a slot's read before
// its next write, which only load buffering could undo; the model has none.)
// Exceptions: if constructing the element throws, try_push has no effect; if
// moving it out throws, try_pop has no effect (the element stays queued).
// Capacity 0 or not a power of two: std::invalid_argument.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/uninitialized.hpp"

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
  /// After try_push found the ring full, it fails until this many slots are
  /// free again, in rings of at least refill_min_capacity slots (see the header).
  static constexpr std::size_t refill_batch = 32;
  static constexpr std::size_t refill_min_capacity = 256;

  explicit spsc_queue(std::size_t capacity)
      : mask_(detail::checked_ring_capacity(capacity, 1, "spsc_queue") - 1),
        refill_(mask_ + 1 >= refill_min_capacity ? refill_batch : 1),
        slots_(std::make_unique<slot[]>(mask_ + 1)) {}

  /// Destroys the elements still queued. No concurrent calls (relaxed loads:
  /// the caller's synchronisation already ordered both sides before us).
  ~spsc_queue() {
    for (std::size_t p = consumer_->position.load(std::memory_order_relaxed),
                     end = producer_->position.load(std::memory_order_relaxed);
         p != end; ++p)
      at(p).value.destroy();
  }
  spsc_queue(const spsc_queue&) = delete;
  spsc_queue& operator=(const spsc_queue&) = delete;

  /// Producer only. False when full.
  template <class... Args>
  bool try_emplace(Args&&... args) {
    const std::size_t head = producer_->position.load(std::memory_order_relaxed); // own index
    if (head - producer_->cached_consumer == capacity() && !refill(head)) return false;
    publish(head, std::forward<Args>(args)...);
    producer_->position.store(head + 1, std::memory_order_relaxed); // for size_approx only
    return true;
  }
  bool try_push(const T& v) { return try_emplace(v); }
  bool try_push(T&& v) { return try_emplace(std::move(v)); }

  /// Producer only: moves up to n elements from `first` (an input iterator);
  /// returns how many. If a construction throws, the elements constructed
  /// before it are pushed and the exception propagates.
  template <class It>
  std::size_t try_push_n(It first, std::size_t n) {
    const std::size_t head = producer_->position.load(std::memory_order_relaxed); // own index
    n = room(head, n);
    std::size_t done = 0;
    try {
      for (; done < n; ++done, ++first) publish(head + done, std::move(*first));
    } catch (...) {
      producer_->position.store(head + done, std::memory_order_relaxed); // size_approx only
      throw;
    }
    producer_->position.store(head + n, std::memory_order_relaxed); // size_approx only
    return n;
  }

  /// Consumer only. False when empty.
  bool try_pop(T& out) {
    const std::size_t tail = consumer_->position.load(std::memory_order_relaxed); // own index
    if (!ready(tail)) return false;
    out = std::move(*at(tail).value.get());
    release(tail);
    return true;
  }
  std::optional<T> try_pop() {
    const std::size_t tail = consumer_->position.load(std::memory_order_relaxed); // own index
    if (!ready(tail)) return std::nullopt;
    std::optional<T> out(std::move(*at(tail).value.get()));
    release(tail);
    return out;
  }

  /// Consumer only: moves up to n elements to `out` (an output iterator) and
  /// frees their slots with one store; returns how many. If a move throws,
  /// the elements before it are popped and the exception propagates (that
  /// element stays queued).
  template <class OutIt>
  std::size_t try_pop_n(OutIt out, std::size_t n) {
    const std::size_t tail = consumer_->position.load(std::memory_order_relaxed); // own index
    n = ready_run(tail, n);
    std::size_t done = 0;
    try {
      for (; done < n; ++done, ++out) {
        *out = std::move(*at(tail + done).value.get());
        at(tail + done).value.destroy();
      }
    } catch (...) {
      free_up_to(tail + done);
      throw;
    }
    free_up_to(tail + n);
    return n;
  }

  std::size_t capacity() const noexcept { return mask_ + 1; }
  /// Pushes minus pops, each as published at about one instant; 0 if negative.
  std::size_t size_approx() const noexcept {
    // relaxed: an estimate; it orders nothing.
    const std::size_t tail = consumer_->position.load(std::memory_order_relaxed);
    const std::size_t head = producer_->position.load(std::memory_order_relaxed);
    return head >= tail ? head - tail : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }

private:
  struct slot {
    std::atomic<std::size_t> seq{0}; // p + 1 once position p's element is in
    detail::uninitialized<T> value;
  };

  slot& at(std::size_t position) noexcept { return slots_[position & mask_]; }

  // Producer: fills the slot of `position` (free, by room()) and signals it.
  template <class... Args>
  void publish(std::size_t position, Args&&... args) {
    slot& s = at(position);
    s.value.construct(std::forward<Args>(args)...);
    // [spsc.publish] release: the element is written before the consumer sees the sequence.
    s.seq.store(position + 1, std::memory_order_release);
  }

  // Producer: how many of `wanted` slots from `head` are free, refreshing the
  // copy of the consumer's position only when the copy says too few.
  std::size_t room(std::size_t head, std::size_t wanted) noexcept {
    std::size_t free = capacity() - (head - producer_->cached_consumer);
    if (free < wanted) {
      // [spsc.observe-free] acquire: pairs with [spsc.free]; the consumer is
      // done with the slots before that position.
      producer_->cached_consumer = consumer_->position.load(std::memory_order_acquire);
      free = capacity() - (head - producer_->cached_consumer);
    }
    return free < wanted ? free : wanted;
  }

  // Producer, when its copy says full: re-reads the consumer's position and
  // resumes only if at least refill_ slots are free (see the header).
  bool refill(std::size_t head) noexcept {
    // [spsc.observe-free] acquire: pairs with [spsc.free].
    const std::size_t tail = consumer_->position.load(std::memory_order_acquire);
    if (capacity() - (head - tail) < refill_) return false; // copy stays "full"
    producer_->cached_consumer = tail;
    return true;
  }

  // Consumer: is position `tail`'s element in?
  bool ready(std::size_t tail) noexcept {
    // [spsc.observe] acquire: pairs with [spsc.publish].
    return at(tail).seq.load(std::memory_order_acquire) == tail + 1;
  }
  // Consumer: how many of `wanted` positions from `tail` are ready. Positions
  // are published in order, so readiness holds for a prefix (which the
  // producer can only lengthen meanwhile): binary search for its length.
  std::size_t ready_run(std::size_t tail, std::size_t wanted) noexcept {
    std::size_t lo = 0, hi = wanted < capacity() ? wanted : capacity();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      if (ready(tail + mid - 1))
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }

  void release(std::size_t tail) noexcept {
    at(tail).value.destroy();
    free_up_to(tail + 1);
  }
  void free_up_to(std::size_t position) noexcept {
    // [spsc.free] release: our reads of the freed slots happen before the
    // producer writes them again.
    consumer_->position.store(position, std::memory_order_release);
  }

  struct producer_side {
    std::atomic<std::size_t> position{0}; // next to push; read by size_approx only
    std::size_t cached_consumer = 0;      // the consumer's position when last read
  };
  struct consumer_side {
    std::atomic<std::size_t> position{0}; // next to pop; read by the producer when full
  };

  const std::size_t mask_;
  const std::size_t refill_;
  const std::unique_ptr<slot[]> slots_;
  cache_padded<producer_side> producer_;
  cache_padded<consumer_side> consumer_;
};

} // namespace lfcore
