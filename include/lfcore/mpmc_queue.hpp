// lfcore/mpmc_queue.hpp - bounded multi-producer multi-consumer ring.
//
// Dmitry Vyukov's bounded MPMC queue (1024cores.net, "Bounded MPMC queue"):
// every cell carries a sequence number that says whose turn it is. For the
// cell of position p (cell = p & mask, lap = p / capacity):
//   seq == p                 free, waiting for the producer of position p
//   seq == p + 1             full, waiting for the consumer of position p
//   seq == p + capacity      free again, for the producer of p + capacity
// A producer claims position p by a CAS on enqueue_pos_ only after it saw
// seq == p, so at most one producer and one consumer ever own a cell, and a
// cell is reused only after its consumer released it: no ABA, no reclamation.
//
// Who may call what: any thread, any member but the destructor.
// Progress: try_push/try_pop never wait and never loop except to retry a CAS
// that failed because another thread claimed the position (lock-free claims).
// The queue as a whole is not lock-free in the strict sense: a producer
// preempted between claiming a cell and publishing it makes that cell look
// empty, so consumers return false (they never block) until it resumes, and
// likewise for a preempted consumer and producers on the next lap.
// Ordering: FIFO in the order positions are claimed (linearizable at the CAS
// on enqueue_pos_ / dequeue_pos_), except that try_pop may report "empty"
// while an earlier producer is still writing its cell. A pop sees everything
// its element's producer did before the push ([mpmc.publish]/[mpmc.observe]).
// Capacity is at least 2: with one cell, "full for position p" (seq == p + 1)
// would read as "free for position p + 1". (Spin checks the queue, and finds
// that overwrite with one cell: tests/model/mpmc_queue.pml. Its second
// scenario runs under release/acquire, where a load may read a stale value
// as on Arm: each of [mpmc.publish], [mpmc.observe] and [mpmc.free] is
// needed, the last because a cell's next producer must write after the
// element its consumer read, and the counters may stay relaxed.)
// Exceptions: T must be nothrow move-constructible (a claimed cell cannot be
// given back, so a move that throws would lose or strand an element). A copy
// made by try_push(const T&) happens before any cell is claimed: if it throws,
// the queue is unchanged. try_pop(T& out) pops first and then move-assigns
// into out: if that assignment throws, the popped element is destroyed and
// the exception propagates (use try_pop() -> optional where that matters).
// Capacity below 2 or not a power of two: std::invalid_argument.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/detail/uninitialized.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace lfcore {

template <class T>
class mpmc_queue {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "mpmc_queue<T>: T must be nothrow move-constructible (see the header)");

public:
  using value_type = T;

  explicit mpmc_queue(std::size_t capacity)
      : mask_(detail::checked_ring_capacity(capacity, 2, "mpmc_queue") - 1),
        cells_(std::make_unique<cell[]>(capacity)) {
    for (std::size_t i = 0; i < capacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  /// Destroys the elements still queued. No concurrent calls (relaxed loads:
  /// the caller's synchronisation already ordered every push and pop before us).
  ~mpmc_queue() {
    for (std::size_t p = dequeue_pos_->load(std::memory_order_relaxed),
                     end = enqueue_pos_->load(std::memory_order_relaxed);
         p != end; ++p)
      cells_[p & mask_].value.destroy();
  }
  mpmc_queue(const mpmc_queue&) = delete;
  mpmc_queue& operator=(const mpmc_queue&) = delete;

  /// False when full. Moves from v only on success.
  bool try_push(T&& v) noexcept {
    std::size_t pos;
    cell* c = claim(*enqueue_pos_, 0, pos);
    if (c == nullptr) return false;
    c->value.construct(std::move(v));                 // nothrow (static_assert above)
    c->seq.store(pos + 1, std::memory_order_release); // [mpmc.publish] pairs with [mpmc.observe]
    return true;
  }
  bool try_push(const T& v) {
    T copy(v); // may throw: nothing is claimed yet
    return try_push(std::move(copy));
  }
  template <class... Args>
  bool try_emplace(Args&&... args) {
    return try_push(T(std::forward<Args>(args)...));
  }

  /// False when empty (or the next element's producer has not finished).
  bool try_pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>) {
    std::optional<T> v = try_pop();
    if (!v) return false;
    out = std::move(*v);
    return true;
  }
  std::optional<T> try_pop() noexcept {
    std::size_t pos;
    cell* c = claim(*dequeue_pos_, 1, pos);
    if (c == nullptr) return std::nullopt;
    std::optional<T> out(std::move(*c->value.get())); // nothrow
    c->value.destroy();
    // [mpmc.free] release: our reads of the cell happen before its next producer writes it.
    c->seq.store(pos + mask_ + 1, std::memory_order_release);
    return out;
  }

  std::size_t capacity() const noexcept { return mask_ + 1; }
  /// Claimed pushes minus claimed pops at about one instant; 0 when negative.
  std::size_t size_approx() const noexcept {
    const std::size_t d = dequeue_pos_->load(std::memory_order_relaxed); // relaxed: estimate
    const std::size_t e = enqueue_pos_->load(std::memory_order_relaxed);
    return e > d ? e - d : 0;
  }

private:
  // Unpadded, as in Vyukov's original: neighbouring cells are mostly written
  // one after another, and padding would multiply the ring's footprint.
  struct cell {
    std::atomic<std::size_t> seq;
    detail::uninitialized<T> value;
  };

  // Claims the next position of `pos_counter` whose cell has seq == pos + turn
  // (turn 0: producers, 1: consumers) and stores it in `pos`. Returns nullptr
  // when the cell says the queue is full (producers) or empty (consumers).
  cell* claim(std::atomic<std::size_t>& pos_counter, std::size_t turn, std::size_t& pos) noexcept {
    pos = pos_counter.load(std::memory_order_relaxed); // relaxed: validated by seq
    for (;;) {
      cell& c = cells_[pos & mask_];
      // [mpmc.observe] acquire: pairs with [mpmc.publish] (consumers) and
      // [mpmc.free] (producers): the previous owner is done with the cell.
      const std::size_t seq = c.seq.load(std::memory_order_acquire);
      const auto diff = static_cast<std::intptr_t>(seq - (pos + turn));
      if (diff == 0) {
        // relaxed: the cell's seq carries the ordering; this CAS only
        // decides which thread owns position pos. Linearizes here.
        if (pos_counter.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed,
                                              std::memory_order_relaxed))
          return &c;
      } else if (diff < 0) {
        return nullptr; // full (producer) or empty (consumer)
      } else {
        pos = pos_counter.load(std::memory_order_relaxed); // another thread got pos
      }
    }
  }

  const std::size_t mask_;
  const std::unique_ptr<cell[]> cells_;
  cache_padded<std::atomic<std::size_t>> enqueue_pos_{};
  cache_padded<std::atomic<std::size_t>> dequeue_pos_{};
};

} // namespace lfcore
