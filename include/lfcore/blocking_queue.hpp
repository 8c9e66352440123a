// lfcore/blocking_queue.hpp - sleep instead of spinning on a lock-free queue,
// and close it.
//
// blocking_queue<Q> wraps any lfcore queue (spsc_queue, mpmc_queue, ...) with
// try_push(T&&) -> bool that moves only on success and try_pop() ->
// std::optional<T>. push() sleeps on an eventcount while the queue is full,
// pop() while it is empty; close() wakes every sleeper.
//
// After close(): push, try_push and their timed variants fail (return false;
// the value is not moved from); pop drains what is left and then returns
// std::nullopt. close() is idempotent. A push that completed before close()
// began is always popped (nothing is lost); a push racing with close() either
// completes (and is popped) or fails (and the caller keeps the value).
//
// Who may call what: what Q allows (one producer / one consumer for an SPSC
// queue), plus close() and is_closed() from any thread.
// Progress: try_* as Q's; push/pop block by design. Cost added to a push: two
// uncontended RMWs on pushers_ (per producer they touch the same line, so many
// producers contend on it) and, like a pop, one fence and one load to notify.
// Model-checked by Spin (tests/model/blocking_queue.pml): close() racing with
// pushes and pops, timed calls, any sleeper woken by a notify; and the reads
// and wake-ups below that it shows are needed ([bq.quiet], the wake-up of a
// push that finds the queue closed, close()'s two notify_all()s).
#pragma once

#include "lfcore/eventcount.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <utility>

namespace lfcore {

template <class Q>
class blocking_queue {
public:
  using value_type = typename Q::value_type;
  using clock = std::chrono::steady_clock;

  template <class... Args>
  explicit blocking_queue(Args&&... args) : queue_(std::forward<Args>(args)...) {}

  /// Fails when full or closed; v is moved from only on success.
  bool try_push(value_type&& v) { return attempt_push(v) == done::succeeded; }
  std::optional<value_type> try_pop() {
    std::optional<value_type> v = queue_.try_pop();
    if (v) not_full_.notify_one();
    return v;
  }

  /// Sleeps while full. False (v untouched) once the queue is closed.
  bool push(value_type&& v) { return push_until(std::move(v), clock::time_point::max()); }
  template <class Rep, class Period>
  bool push_for(value_type&& v, std::chrono::duration<Rep, Period> timeout) {
    return push_until(std::move(v), clock::now() + timeout);
  }
  /// False on time-out or when closed; v is moved from only on success.
  bool push_until(value_type&& v, clock::time_point deadline) {
    return wait_for_room(not_full_, deadline, [&] { return attempt_push(v); });
  }

  /// Sleeps while empty. std::nullopt once closed and drained.
  std::optional<value_type> pop() { return pop_until(clock::time_point::max()); }
  template <class Rep, class Period>
  std::optional<value_type> pop_for(std::chrono::duration<Rep, Period> timeout) {
    return pop_until(clock::now() + timeout);
  }
  /// std::nullopt on time-out, or once closed and drained.
  std::optional<value_type> pop_until(clock::time_point deadline) {
    std::optional<value_type> out;
    wait_for_room(not_empty_, deadline, [&] {
      // closed, then no pusher, then empty (all seq_cst): a push that had
      // started is finished and visible to the try_pop; a later one fails.
      const bool final_if_empty =
          is_closed() && pushers_.load(std::memory_order_seq_cst) == 0; // [bq.quiet]
      out = queue_.try_pop();
      if (out) {
        not_full_.notify_one();
        return done::succeeded;
      }
      return final_if_empty ? done::failed : done::not_yet;
    });
    return out;
  }

  /// Makes later pushes fail and wakes every sleeping thread.
  void close() noexcept {
    closed_.store(true, std::memory_order_seq_cst); // [bq.close] seen by sleepers' re-checks
    not_empty_.notify_all();
    not_full_.notify_all();
  }
  /// seq_cst: takes part in the [bq.enter]/[bq.quiet] order with pushers_.
  bool is_closed() const noexcept { return closed_.load(std::memory_order_seq_cst); }

  Q& underlying() noexcept { return queue_; }

private:
  enum class done { succeeded, failed, not_yet };

  done attempt_push(value_type& v) {
    pushers_.fetch_add(1, std::memory_order_seq_cst); // [bq.enter] ordered against [bq.quiet]
    done d = done::failed;
    if (!is_closed()) d = queue_.try_push(std::move(v)) ? done::succeeded : done::not_yet;
    // seq_cst (so also release): our element is visible to a pop that reads 0.
    pushers_.fetch_sub(1, std::memory_order_seq_cst);
    if (d == done::succeeded) not_empty_.notify_one();
    // A pop may be asleep waiting for in-flight pushes to end after close().
    if (is_closed()) not_empty_.notify_all();
    return d;
  }

  // Runs attempt() until it succeeds or fails, sleeping on `ec` in between
  // (the eventcount protocol: announce, re-check, then sleep).
  template <class Attempt>
  bool wait_for_room(eventcount& ec, clock::time_point deadline, Attempt attempt) {
    for (;;) {
      if (const done d = attempt(); d != done::not_yet) return d == done::succeeded;
      const auto key = ec.prepare_wait();
      if (const done d = attempt(); d != done::not_yet) {
        ec.cancel_wait();
        return d == done::succeeded;
      }
      if (deadline == clock::time_point::max())
        ec.wait(key);
      else if (!ec.wait_until(key, deadline))
        return attempt() == done::succeeded; // one last try at the deadline
    }
  }

  Q queue_;
  std::atomic<bool> closed_{false};
  std::atomic<std::size_t> pushers_{0}; // pushes between [bq.enter] and their end
  eventcount not_empty_;
  eventcount not_full_;
};

} // namespace lfcore
