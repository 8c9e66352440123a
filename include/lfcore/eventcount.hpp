// lfcore/eventcount.hpp - park a thread until a condition may have changed.
//
// The eventcount (Vyukov; the same idea as folly::EventCount and Dmitry's
// "eventcount" on comp.programming.threads) turns any lock-free condition into
// something a thread can sleep on without a lock and without losing a wake-up:
//
//   waiter                                  notifier
//   -------                                 --------
//   auto key = ec.prepare_wait();           make the condition true (any store)
//   if (condition()) { ec.cancel_wait(); }  ec.notify_one() / notify_all()
//   else ec.wait(key);
//
// Why no wake-up is lost: prepare_wait() increments waiters_ and then issues a
// seq_cst fence (on x86 the locked increment is one); notify() issues one
// after the condition's store and then reads waiters_. Of two seq_cst fences
// one comes first in their single total order: either the notifier sees the
// waiter (and bumps epoch_, so wait(key) returns or is woken by the futex) or
// the waiter's later condition() check sees the store (the store-buffering
// pattern, a fence on each side).
//
// Model-checked on x86-TSO store buffers and under release/acquire with
// seq_cst fences (tests/model/eventcount.pml): with two producers and two
// sleeping consumers no wake-up is lost; without either fence one is.
// Sleeping is a futex on epoch_ on Linux (std::atomic::wait elsewhere, with
// timed waits polling): a parked thread uses no CPU. lfcore calls the futex
// itself because libstdc++'s notify skips the wake-up system call unless its
// own waiter table counts a waiter, which a timed futex wait would not be.
// Spurious returns from wait() are possible; callers re-check.
// Progress: notify is lock-free (wait-free when nobody waits: a fence and a
// load); wait() blocks by design.
#pragma once

#include "lfcore/detail/fence.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lfcore {

class eventcount {
public:
  using key_type = std::uint32_t;

  /// Announces that the caller is about to check its condition and maybe wait.
  /// A full fence: the caller's accesses after it are ordered after its
  /// accesses before (the pool's and the farm's parks rely on it).
  key_type prepare_wait() noexcept {
    waiters_.fetch_add(1, std::memory_order_seq_cst); // [ec.announce] pairs with [ec.notify]
    // C++ makes no read-modify-write a fence, seq_cst or not: without one
    // here the condition's re-check may read from before a notifier's store
    // while that notifier reads waiters_ == 0, and we sleep through its
    // notify (tests/model/eventcount.pml, scenario 3, mutant 5). x86's
    // locked fetch_add is a full barrier itself.
    if constexpr (!detail::rmw_is_full_fence) detail::full_fence();
    return epoch_.load(std::memory_order_seq_cst); // [ec.key] reads after announce in S
  }

  /// The condition held after prepare_wait(): withdraw without sleeping.
  void cancel_wait() noexcept {
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  } // relaxed: count only

  /// Sleeps until a notify after prepare_wait() returned `key` (or spuriously).
  void wait(key_type key) noexcept {
    while (epoch_.load(std::memory_order_acquire) == key) // acquire: see the notifier's condition
      sleep(key, nullptr);
    waiters_.fetch_sub(1, std::memory_order_relaxed); // relaxed: count only
  }

  /// Like wait(), but gives up at `deadline`: returns false on time-out (the
  /// caller is then no longer counted as a waiter), true when woken.
  bool wait_until(key_type key, std::chrono::steady_clock::time_point deadline) noexcept {
    bool woken = true;
    while (epoch_.load(std::memory_order_acquire) == key) { // acquire: as in wait()
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) {
        woken = false;
        break;
      }
      sleep(key, &left);
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed); // relaxed: count only
    return woken;
  }

  /// A hint, with no ordering: whether some thread may be between
  /// prepare_wait() and the end of its wait. A notifier that skips notify()
  /// on false may leave a waiter asleep until the next notify: only for
  /// wake-ups that are an optimization, never for ones progress depends on.
  bool may_have_waiters() const noexcept {
    return waiters_.load(std::memory_order_relaxed) != 0; // relaxed: a hint
  }

  /// Wakes at least one thread waiting with a key older than this call.
  /// (Linux wakes a futex's sleepers of equal priority in FIFO order, but
  /// does not promise to: a thread that announced after this call's epoch
  /// bump may be asleep already and take the wake-up. Its re-check then saw
  /// the caller's change and found it gone - for a hand-over such as an
  /// element or a free slot, taken by someone. blocking_queue.pml lets the
  /// futex wake any sleeper.)
  void notify_one() noexcept { notify(false); }
  /// Wakes every thread waiting with a key older than this call.
  void notify_all() noexcept { notify(true); }

private:
  void notify(bool all) noexcept {
    // [ec.notify] pairs with [ec.announce]: orders the caller's condition store
    // before the read of waiters_.
    detail::full_fence();
    if (waiters_.load(std::memory_order_relaxed) == 0) return; // relaxed: ordered by the fence
    epoch_.fetch_add(1, std::memory_order_seq_cst);            // release side of [ec.key]
#if defined(__linux__)
    syscall(SYS_futex, futex_word(), FUTEX_WAKE_PRIVATE, all ? INT32_MAX : 1, nullptr, nullptr, 0);
#else
    if (all)
      epoch_.notify_all();
    else
      epoch_.notify_one();
#endif
  }

  // Sleeps while epoch_ == key, at most *left if given (spurious returns allowed).
  void sleep(key_type key, const std::chrono::steady_clock::duration* left) noexcept {
#if defined(__linux__)
    timespec ts{};
    if (left != nullptr) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*left).count();
      ts = {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    }
    syscall(SYS_futex, futex_word(), FUTEX_WAIT_PRIVATE, key, left ? &ts : nullptr, nullptr, 0);
#else
    if (left == nullptr)
      epoch_.wait(key, std::memory_order_acquire);
    else
      std::this_thread::sleep_for(
          std::min(*left, std::chrono::steady_clock::duration(std::chrono::milliseconds(1))));
#endif
  }

#if defined(__linux__)
  key_type* futex_word() noexcept {
    static_assert(sizeof(std::atomic<key_type>) == sizeof(key_type) &&
                  std::atomic<key_type>::is_always_lock_free);
    return reinterpret_cast<key_type*>(&epoch_);
  }
#endif

  std::atomic<key_type> epoch_{0};
  std::atomic<key_type> waiters_{0};
};

} // namespace lfcore
