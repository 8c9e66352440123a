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
// Why no wake-up is lost: prepare_wait() increments waiters_ (seq_cst) and then
// reads epoch_; notify() issues a seq_cst fence after the condition's store and
// then reads waiters_. By the single total order of seq_cst operations either
// the notifier sees the waiter (and bumps epoch_, so wait(key) returns or is
// woken by the futex) or the waiter's later condition() check sees the store.
//
// Sleeping uses std::atomic<uint32_t>::wait, a futex on Linux: a parked thread
// uses no CPU. Spurious returns from wait() are possible; callers re-check.
// Progress: notify is lock-free (wait-free when nobody waits: a fence and a
// load); wait() blocks by design.
#pragma once

#include "lfcore/detail/fence.hpp"

#include <atomic>
#include <cstdint>

namespace lfcore {

class eventcount {
public:
  using key_type = std::uint32_t;

  /// Announces that the caller is about to check its condition and maybe wait.
  key_type prepare_wait() noexcept {
    waiters_.fetch_add(1, std::memory_order_seq_cst); // [ec.announce] pairs with [ec.notify]
    return epoch_.load(std::memory_order_seq_cst);    // [ec.key] reads after announce in S
  }

  /// The condition held after prepare_wait(): withdraw without sleeping.
  void cancel_wait() noexcept {
    waiters_.fetch_sub(1, std::memory_order_relaxed);
  } // relaxed: count only

  /// Sleeps until a notify after prepare_wait() returned `key` (or spuriously).
  void wait(key_type key) noexcept {
    while (epoch_.load(std::memory_order_acquire) == key) // acquire: see the notifier's condition
      epoch_.wait(key, std::memory_order_acquire);
    waiters_.fetch_sub(1, std::memory_order_relaxed); // relaxed: count only
  }

  /// Wakes at least one thread waiting with a key older than this call.
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
    if (all)
      epoch_.notify_all();
    else
      epoch_.notify_one();
  }

  std::atomic<key_type> epoch_{0};
  std::atomic<key_type> waiters_{0};
};

} // namespace lfcore
