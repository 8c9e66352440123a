// lfcore/farm_base.hpp - what a task farm is apart from its task types:
// options, sensors, throttling, waiting, pinning and errors.
//
// farm<In, Out> (farm.hpp) derives from farm_base; the autonomic manager
// (farm_manager.hpp) drives any farm through it, so it needs only this
// header. The farm's design (channels, scheduling, throttling, waiting, end
// of stream, exceptions, who may call what) is described in farm.hpp.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/detail/asymmetric_fence.hpp"
#include "lfcore/detail/stress.hpp"
#include "lfcore/eventcount.hpp"
#include "lfcore/topology.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace lfcore {

enum class scheduling { round_robin, on_demand };

struct farm_options {
  unsigned workers = std::thread::hardware_concurrency(); ///< nw, at least 1
  /// Round-robin is the default: on a machine where the emitter and the
  /// collector share cores with the workers, on-demand's short queues make
  /// the emitter wait (and yield its core) every few tasks - 0.4-0.9x the
  /// throughput of round-robin for 1-10 us tasks on the 2-core reference
  /// machine (bench/results/farm). There the emitter runs only when the
  /// worker beside it on its core runs dry, and both workers then wait for
  /// it in step: 0.8 involuntary context switches per task (getrusage, 10 us
  /// tasks, nw = 2, 2026-11-28), against 0.007 with round-robin. An emitter
  /// that parks instead of yielding while it waits for room costs a futex
  /// wake-up per refill: 0.33x that throughput with 10 us tasks, 0.17x with
  /// 1 us. On-demand pays off when task costs vary.
  scheduling policy = scheduling::round_robin;
  std::size_t prefetch = 2;   ///< on_demand: tasks waiting per worker, at least 1
  std::size_t capacity = 512; ///< slots of each channel, at least 1 (rounded up to 2^k)
  bool ordered = false;       ///< deliver results in input order
  /// How long a result may wait before the collector hands it to the sink
  /// while results flow (the collector naps up to this long between drains;
  /// see "Results reach the collector in batches" below), at least 1 us; 5 us
  /// in stress builds. Longer saves CPU where each nap gathers few results
  /// (one worker with a collector of its own and tasks of 10 us or more: 2 ms
  /// cut the farm's CPU per task 2.8x, bench/results/farm), at the cost of
  /// latency. A farm of one worker has no collector by default (see below);
  /// then this does not apply. The nap is cut to the time half a ring takes
  /// to fill at the rate results have been arriving, so a long latency does
  /// not make workers wait for room; with short tasks, a larger `capacity`
  /// lets the nap grow.
  std::chrono::microseconds result_latency{stress_build ? 5 : 200};
  /// With one worker (workers == 1), that worker calls the sink itself after
  /// each task, and the farm starts no collector thread (FastFlow calls this
  /// fusing two nodes; oneTBB's parallel_pipeline runs a serial filter on
  /// the thread that carries the item, always). One worker's results need
  /// no merging, and a collector beside it costs a channel hand-over per
  /// result and a timed nap per batch: on the 2-vCPU reference machine, in
  /// rounds alternating the two builds, the farm's CPU per 10 us task beyond
  /// the work fell from 824 to 191 ns without it (oneTBB parallel_pipeline:
  /// 45-82 ns in the same rounds; bench/results/README.md, task farm). The
  /// sink's time then adds to the worker's (its service time is T_w + t_C,
  /// not max{T_w, t_C}) and counts as its busy time; result_latency does not
  /// apply (each result reaches the sink at once). Set false for a sink slow
  /// enough to deserve a thread of its own. Ignored with two or more workers.
  bool fuse_collector_with_one_worker = true;
  /// With one worker whose collector is fused too (above), or that has no
  /// sink, the worker's thread also calls the source: the farm is then a
  /// loop, source -> worker -> sink, on one thread, as oneTBB's
  /// parallel_pipeline is in an arena of one thread. An emitter thread
  /// beside one worker would only hand it tasks, and it waits for room in
  /// the channel, a park and a wake-up (~20 us of CPU on a VM) per half
  /// ring: on the 2-vCPU reference machine, its CPU per 1 us task beyond
  /// the work was 107-118 ns with the default capacity and 35-40 ns with
  /// 32768 slots, against 9-16 ns for the loop (oneTBB's parallel_pipeline
  /// in a one-thread arena: 49-54; bench/results/README.md, task farm).
  /// The source's time then adds to the worker's (T_w + t_E + t_C) and
  /// counts as its busy time, as the sink's does. Set false for a source
  /// slow enough to deserve a thread of its own (one that parses or reads
  /// its input); a larger `capacity` then makes its waits for room rarer.
  /// Ignored with two or more workers.
  bool fuse_emitter_with_one_worker = true;
  /// Where threads run: the emitter takes slot 0, worker i slot i + 1, the
  /// collector slot nw + 1 of the policy (cpu_for_worker); a farm on one
  /// thread takes slot 1.
  pin_policy pinning{};
};

/// One worker's counters (see the header). `queued` counts tasks sent to it
/// and not yet finished, the one it is running included.
struct farm_worker_sensors {
  std::uint64_t sent = 0; ///< tasks the emitter sent to it
  std::uint64_t tasks = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t queued = 0;
  bool active = false;
};

/// A snapshot of the farm's counters. Counters are cumulative over the
/// farm's life (every run); the manager works with differences.
struct farm_sensors {
  std::chrono::steady_clock::time_point time;
  std::uint64_t arrivals = 0;           ///< items taken from the source
  std::uint64_t emitter_blocked_ns = 0; ///< time the emitter waited for room
  std::uint64_t completed = 0;          ///< results delivered (without a collector: tasks done)
  unsigned active_workers = 0;
  bool running = false;
  std::vector<farm_worker_sensors> workers;
};

/// What does not depend on the task types: control, counters, waiting,
/// pinning and errors. The autonomic manager (farm_manager.hpp) drives a farm
/// through this class.
class farm_base {
public:
  farm_base(const farm_base&) = delete;
  farm_base& operator=(const farm_base&) = delete;

  unsigned max_workers() const noexcept { return max_workers_; }
  unsigned active_workers() const noexcept {
    return active_.load(std::memory_order_relaxed); // relaxed: an estimate, orders nothing
  }
  /// Freezes or thaws workers: 0..n-1 active. n is clamped to [1, max_workers()].
  /// Returns the number now active.
  unsigned set_active_workers(unsigned n) noexcept;
  /// Moves every thread of a running farm (and of later runs) to `policy`:
  /// each thread re-pins itself at its next step. Throws std::invalid_argument
  /// for pinning::list without CPUs.
  void repin(const pin_policy& policy);
  farm_sensors sensors() const;
  const farm_options& options() const noexcept { return options_; }

protected:
  using clock = std::chrono::steady_clock;

  explicit farm_base(const farm_options& options);
  ~farm_base() = default;

  /// Spins of an idle thread (each a yield) before it parks.
  static constexpr int idle_spins = stress_build ? 1 : 64;
  // Yields pay off while other threads want the core: each hands it to one
  // of them for a scheduler slice (a millisecond or more), and the waiter
  // looks again when the slice ends - on 2 cores with nw = 2 that is how the
  // emitter and the collector poll, about once per slice, without a wake-up.
  // Yields that come back at once (under free_yield each, about 0.5 us on
  // the 2-vCPU guest) found nobody else wanting the core: the waiter spins on
  // a free core. That pays while the wait is shorter than parking costs (a
  // futex sleep and wake-up, about 20 us of CPU there): spinning park_cost and
  // then parking is within 2x of the better choice whatever the wait turns
  // out to be (Karlin, Li, Manasse & Owicki, "Empirical studies of competitive
  // spinning for a shared-memory multiprocessor", SOSP 1991). A waiter
  // whose waits are long pays that 2x on every one, so each waiter learns
  // (see spinner) whether to spin park_cost or park once 4 free yields show
  // the core is free. Waits are long for room in a long ring (half a ring of
  // tasks): the emitter beside one worker, never parking, used 0.8 of a core
  // with 1 us tasks (schedstat); short for on-demand's emitter (a task's
  // time): parking on every one cut its rate with 1 us tasks at nw = 1 to
  // 0.4x.
  static constexpr clock::duration free_yield = std::chrono::microseconds(10);
  static constexpr clock::duration park_cost = std::chrono::microseconds(20);
  /// One waiter's choice (one thread, one kind of wait): spin park_cost while
  /// spinning finds what it waits for; after a spin that ended in parking,
  /// park at once, and spin again only for one wait in probe_every (if that
  /// one succeeds, spinning resumes).
  struct spinner {
    static constexpr unsigned probe_every = 16;
    bool spins = true;
    unsigned waits = 0;
    clock::duration budget() noexcept {
      return spins || ++waits % probe_every == 0 ? park_cost : clock::duration::zero();
    }
  };

  // One line per writer: the emitter bumps `sent` and the worker its
  // counters once per task, and on a shared line the two cores would trade
  // it for every task. The eventcount is written only when the worker parks
  // or is notified, so the emitter's look at it per task stays a cache hit.
  struct worker_control {
    eventcount wake; // the worker sleeps here: for a task, for output room
    // Counters, each with one writer (relaxed: read as estimates only).
    alignas(cache_line_size) std::atomic<std::uint64_t> sent{0};  // by the emitter
    alignas(cache_line_size) std::atomic<std::uint64_t> tasks{0}; // by the worker
    std::atomic<std::uint64_t> busy_ns{0};                        // by the worker
    spinner task_waits, room_waits;                               // the worker's own
  };
  worker_control& control(unsigned i) noexcept { return *controls_[i]; }

  bool stopped() const noexcept { return stop_.load(std::memory_order_relaxed); } // a hint, re-read
  /// Records the first exception and stops every thread.
  void fail(std::exception_ptr e) noexcept;
  /// Wakes every sleeper (stop, end of a run).
  void wake_all() noexcept;
  /// Marks the start of a run (throws if one is in progress) and its end
  /// (rethrows the run's first exception).
  void begin_run(bool collecting);
  void end_run();
  /// Pins the calling thread to its slot under the current policy and
  /// remembers which policy it applied; repin_if_changed() re-applies.
  void pin_self(unsigned slot, unsigned& epoch);
  void repin_if_changed(unsigned slot, unsigned& epoch) {
    if (pin_epoch_.load(std::memory_order_relaxed) != epoch)
      pin_self(slot, epoch); // relaxed: a hint
  }
  // Two ways to wake a thread that may sleep on an eventcount, and the two
  // ways of parking that pair with them:
  // * wake(ec), for hand-overs made once per task (a task pushed to a worker,
  //   a result fed back to the emitter): [farm.light], a compiler barrier
  //   where membarrier(2) is available, and a relaxed look at the waiters.
  //   A thread waiting for such a hand-over parks with [farm.heavy],
  //   membarrier(2), which interrupts every CPU running a thread of ours.
  // * ec.notify_one(), for wake-ups made once per batch (room in a ring,
  //   results announced to the collector): eventcount's full fence. A thread
  //   waiting only for those parks with a full fence, and interrupts nobody.
  //   On the 2-vCPU KVM guest a membarrier cost the busy worker several
  //   microseconds; with the collector and the emitter parking with it
  //   (8,000 times a second for 10 us tasks at nw = 1) the one worker ran at
  //   0.87-0.90 of the sequential loop's rate, 0.95-0.97 without them.
  // Both pairings are model-checked on x86-TSO store buffers (tests/model/
  // eventcount.pml, scenarios 1 and 2): no wake-up is lost, and one is if
  // the per-task park leaves out membarrier.
  enum class wakers { per_task, per_batch };
  static void wake(eventcount& ec) noexcept {
    detail::asymmetric_fence::light();
    if (ec.may_have_waiters()) ec.notify_one();
  }
  // Runs `ready` (which may act: pop, push) until it returns true or the farm
  // stops; returns whether `ready` succeeded. Yields up to `spins` times (on
  // a free core as `waiter` chose), then parks on `ec`: announce, fence,
  // re-check, sleep. `from` says who wakes us, hence which fence pairs with
  // theirs.
  template <class Ready>
  bool wait_until_ready(eventcount& ec, spinner& waiter, wakers from, Ready ready,
                        int spins = idle_spins) {
    const clock::time_point spin_start = spins > 0 ? clock::now() : clock::time_point{};
    const clock::duration budget = waiter.budget();
    for (int spin = 0; spin < spins; ++spin) {
      if (ready()) {
        waiter.spins = true;
        return true;
      }
      if (stopped()) return false;
      std::this_thread::yield(); // two cores, more threads: let the others run
      if (spin % 4 == 3) {
        const clock::duration spun = clock::now() - spin_start;
        if (spun < (spin + 1) * free_yield && spun >= budget) { // free yields, spun enough
          if (budget > clock::duration::zero()) waiter.spins = false;
          break;
        }
      }
    }
    for (;;) {
      if (ready()) return true;
      if (stopped()) return false;
      const eventcount::key_type key = ec.prepare_wait();
      detail::stress_point(); // a waker may act between our announcement and our re-check
      // Either the waker sees us counted as a waiter and wakes us, or our
      // re-check below sees its change (a push, a pop, a close, stop_,
      // active_). [farm.park], prepare_wait's full fence, pairs with full
      // fences: eventcount's [ec.notify] and [farm.announce]; [farm.heavy]
      // with [farm.light] in wake(), which is no full fence.
      if (from == wakers::per_task) detail::asymmetric_fence::heavy(); // [farm.heavy]
      bool ok = false;
      try {
        ok = ready(); // once: ready() may act (and, with feedback, run user code)
      } catch (...) {
        ec.cancel_wait();
        throw;
      }
      if (ok || stopped()) {
        ec.cancel_wait();
        return ok;
      }
      ec.wait(key);
    }
  }

  const farm_options options_;
  const unsigned max_workers_;
  std::atomic<unsigned> active_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> collecting_{false}; // this run has a collector
  std::exception_ptr error_;            // written once, by the thread that set failed_

  std::vector<std::unique_ptr<worker_control>> controls_;
  struct emitter_counters {
    std::atomic<std::uint64_t> arrivals{0};
    std::atomic<std::uint64_t> blocked_ns{0};
    spinner room_waits, feedback_waits; // the emitter's own
  };
  cache_padded<emitter_counters> emitter_;
  cache_padded<std::atomic<std::uint64_t>> completed_; // by the collector (or workers)
  eventcount emitter_wake_;   // the emitter sleeps here: for room, for feedback
  eventcount collector_wake_; // the collector sleeps here: for results

  mutable std::mutex pin_mutex_; // guards pinning_; taken only to (re)pin
  pin_policy pinning_;
  std::atomic<unsigned> pin_epoch_{0};
};

} // namespace lfcore
