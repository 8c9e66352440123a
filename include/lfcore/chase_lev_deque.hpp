// lfcore/chase_lev_deque.hpp - the Chase-Lev work-stealing deque.
//
// Chase and Lev, "Dynamic Circular Work-Stealing Deque" (SPAA 2005), in the
// C11 formulation of Le, Pop, Cohen and Zappa Nardelli, "Correct and
// Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013), whose proof
// fixes the memory orders used below.
//
// One owner thread pushes and pops at the bottom (LIFO: the task it made
// last is still in its cache); any thread steals at the top (FIFO: the
// oldest, usually largest, task). Elements live in a circular array indexed
// by top and bottom (64-bit, never wrap in practice); the owner grows the
// array when full, copying [top, bottom) into one twice as large.
//
// Invariants: top only increases, by a CAS (a steal, or the owner taking the
// last element); only the owner writes bottom and the array pointer; every
// index in [top, bottom) holds a value in the current array, and also in any
// older array a thief may still read (growth copies, it never clears).
// Progress: push and pop are wait-free except for growth (an allocation);
// steal is lock-free: it fails (lost_race) only when another steal or a pop
// of the last element succeeded.
// Reclamation: a thief reads the array under a hazard pointer; the owner
// retires the old array after growing, so it is freed once no thief reads it.
// T must be trivially copyable with lock-free atomics (a task pointer,
// typically): a slot may be read by a thief whose CAS then fails.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/detail/fence.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/hazard_pointer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>

namespace lfcore {

enum class steal_status { success, empty, lost_race };

template <class T>
struct steal_result {
  steal_status status;
  T value{}; // meaningful on success only
};

template <class T>
class chase_lev_deque {
  static_assert(std::is_trivially_copyable_v<T> && std::atomic<T>::is_always_lock_free,
                "chase_lev_deque: T must be trivially copyable with lock-free atomics");

public:
  /// capacity: the first array's size, a power of two of at least 2 (else
  /// std::invalid_argument); the deque grows past it.
  explicit chase_lev_deque(std::size_t capacity = stress_build ? 2 : 256)
      : array_(make_array(checked(capacity))) {}
  /// No concurrent calls. Elements still inside are dropped (T is trivial).
  ~chase_lev_deque() { free_array(array_.load(std::memory_order_relaxed)); }
  chase_lev_deque(const chase_lev_deque&) = delete;
  chase_lev_deque& operator=(const chase_lev_deque&) = delete;

  /// Owner only. Wait-free unless it grows the array (then may throw bad_alloc,
  /// leaving the deque unchanged).
  void push(T value) {
    const std::int64_t b = bottom_->load(std::memory_order_relaxed); // relaxed: owner's own
    // acquire: pairs with the thieves' CAS on top ([cl.steal]): the slots
    // they emptied may be overwritten now.
    const std::int64_t t = top_->load(std::memory_order_acquire);
    array* a = array_.load(std::memory_order_relaxed); // relaxed: only the owner stores it
    if (b - t > static_cast<std::int64_t>(a->mask)) a = grow(a, t, b);
    a->slot(b).store(value, std::memory_order_relaxed); // published by the release below
    // [cl.publish] release: the slot's value (and the task it points to) is
    // visible to a thief that reads this bottom ([cl.bottom]).
    bottom_->store(b + 1, std::memory_order_release);
  }

  /// Owner only: the newest element, or nullopt if empty. Wait-free.
  std::optional<T> pop() {
    const std::int64_t b = bottom_->load(std::memory_order_relaxed) - 1; // relaxed: owner's own
    array* a = array_.load(std::memory_order_relaxed);
    // [cl.bottom-again] release, as every store of bottom here: a thief
    // whose acquire load ([cl.bottom]) reads it must see the slots pushed
    // before. The paper stores relaxed and relies on C11's release
    // sequences (a release store heads the same thread's later stores);
    // C++20 dropped those (P0982R1), and under release/acquire a thief then
    // takes a slot's old content (tests/model/chase_lev_deque.pml, mutant
    // 6). Free on x86 (a plain store either way); on Arm an STLR for an
    // STR, next to the full fence below.
    bottom_->store(b, std::memory_order_release);
    // [cl.take] seq_cst fence: orders the bottom store before the top load,
    // against [cl.steal.fence] - a thief and the owner cannot both miss each
    // other's claim on the last element (the Dekker pattern of the paper).
    // Without it, on x86-TSO store buffers, both take that element
    // (tests/model/chase_lev_deque.pml; under release/acquire too).
    detail::full_fence();
    std::int64_t t = top_->load(std::memory_order_relaxed);
    if (t > b) { // empty
      bottom_->store(b + 1, std::memory_order_release); // [cl.bottom-again]
      return std::nullopt;
    }
    T value = a->slot(b).load(std::memory_order_relaxed);
    if (t == b) { // the last element: race the thieves for it with their CAS
      // [cl.last] seq_cst, as the paper: totally ordered with [cl.steal].
      const bool won = top_->compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                                     std::memory_order_relaxed);
      bottom_->store(b + 1, std::memory_order_release); // [cl.bottom-again]
      if (!won) return std::nullopt;
    }
    return value;
  }

  /// Any thread: the oldest element. hp is the caller's hazard pointer (kept
  /// by the caller across calls: taking one per steal costs more than the
  /// steal); it protects nothing when this returns.
  steal_result<T> steal(hazard_pointer& hp) {
    // acquire: pairs with [cl.last]/[cl.steal] of earlier claims.
    std::int64_t t = top_->load(std::memory_order_acquire);
    // [cl.steal.fence] pairs with [cl.take]. x86 needs none (it keeps loads
    // in order); under release/acquire, without it a thief can read the top
    // an earlier steal wrote and a bottom from before the owner's pop, and
    // take the element pop() took (tests/model/chase_lev_deque.pml, mutant 4).
    detail::full_fence();
    // [cl.bottom] acquire: pairs with [cl.publish] and [cl.bottom-again].
    const std::int64_t b = bottom_->load(std::memory_order_acquire);
    if (t >= b) return {steal_status::empty};
    // The array is read under a hazard pointer: the owner may grow and retire
    // it meanwhile. Any array current after the top load holds index t.
    const array* a = hp.protect(array_);
    detail::stress_point();
    const T value = a->slot(t).load(std::memory_order_relaxed);
    hp.reset_protection();
    // [cl.steal] seq_cst: the claim; fails if another thief or the owner's
    // [cl.last] took index t first, and then the value read is not ours.
    if (!top_->compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                       std::memory_order_relaxed))
      return {steal_status::lost_race};
    return {steal_status::success, value};
  }
  steal_result<T> steal() {
    hazard_pointer hp = make_hazard_pointer();
    return steal(hp);
  }

  /// An estimate (exact when quiescent); any thread.
  std::size_t size_approx() const noexcept {
    // relaxed: an estimate, used to decide whether to look closer.
    const std::int64_t b = bottom_->load(std::memory_order_relaxed);
    const std::int64_t t = top_->load(std::memory_order_relaxed);
    return b > t ? static_cast<std::size_t>(b - t) : 0;
  }
  bool empty_approx() const noexcept { return size_approx() == 0; }
  /// The current array's capacity (owner, or when quiescent).
  std::size_t capacity() const noexcept { return array_.load(std::memory_order_relaxed)->mask + 1; }

private:
  struct array {
    std::size_t mask;
    std::atomic<T>* slots() noexcept { return reinterpret_cast<std::atomic<T>*>(this + 1); }
    const std::atomic<T>* slots() const noexcept {
      return reinterpret_cast<const std::atomic<T>*>(this + 1);
    }
    std::atomic<T>& slot(std::int64_t i) noexcept {
      return slots()[static_cast<std::size_t>(i) & mask];
    }
    const std::atomic<T>& slot(std::int64_t i) const noexcept {
      return slots()[static_cast<std::size_t>(i) & mask];
    }
  };
  struct array_deleter { // stateless: the hazard-pointer domain calls it
    void operator()(array* a) const noexcept { free_array(a); }
  };
  static_assert(alignof(array) >= alignof(std::atomic<T>));

  static std::size_t checked(std::size_t capacity) {
    if (capacity < 2 || (capacity & (capacity - 1)) != 0)
      throw std::invalid_argument("chase_lev_deque: capacity must be a power of two, at least 2");
    return capacity;
  }
  static array* make_array(std::size_t capacity) {
    void* raw = ::operator new(sizeof(array) + capacity * sizeof(std::atomic<T>));
    auto* a = ::new (raw) array{capacity - 1};
    for (std::size_t i = 0; i < capacity; ++i)
      ::new (static_cast<void*>(a->slots() + i)) std::atomic<T>();
    return a;
  }
  static void free_array(array* a) noexcept { ::operator delete(static_cast<void*>(a)); }

  // Owner only: a twice larger array holding [t, b).
  array* grow(array* old, std::int64_t t, std::int64_t b) {
    array* bigger = make_array(2 * (old->mask + 1));
    try {
      hazard_pointer_default_domain().reserve_retire(); // retiring old cannot fail below
    } catch (...) {
      free_array(bigger);
      throw;
    }
    for (std::int64_t i = t; i < b; ++i)
      bigger->slot(i).store(old->slot(i).load(std::memory_order_relaxed),
                            std::memory_order_relaxed);
    // [cl.grow] release: the copied slots are visible to a thief that
    // protects (acquires) the new array.
    array_.store(bigger, std::memory_order_release);
    hazard_pointer_default_domain().retire(old, array_deleter());
    return bigger;
  }

  cache_padded<std::atomic<std::int64_t>> top_;    // thieves' end (C++20 atomics start at 0)
  cache_padded<std::atomic<std::int64_t>> bottom_; // owner's end
  std::atomic<array*> array_;
};

} // namespace lfcore
