// lfcore/farm.hpp - a task farm: an emitter, nw workers and a collector
// connected by single-producer single-consumer channels.
//
// The stream-parallel farm of the course notes (../shared/seeds/
// parallel-programming-notes.txt, sections 1.2-1.3 and 1.7, FastFlow's
// ff_farm): the emitter takes items from a source and sends each to one
// worker, every worker applies the user's function, the collector hands the
// results to a sink. Every thread owns its end of its channels:
//
//   source -> emitter --spsc--> worker i --spsc--> collector -> sink
//               ^                                      |
//               +--------- feedback (optional) --------+
//
// A farm of one worker runs on one thread by default: the worker calls the
// source and the sink itself (farm_options::fuse_emitter_with_one_worker,
// fuse_collector_with_one_worker).
//
// Scheduling (farm_options::policy):
// * round_robin (the default): each task goes to the next active worker in
//   turn, skipping workers whose channel (farm_options::capacity slots) is full.
// * on_demand: as round_robin, but a worker takes a task only while fewer than
//   `prefetch` wait in its channel (FastFlow's on-demand: short queues, so a
//   slow worker does not hoard work).
// Ordered mode tags each task with its sequence number; the collector
// delivers results in that order. Each worker's results are already in
// order (channels are FIFO), so the collector holds at most one result per
// worker (the head of its channel) and merges: the reorder buffer is nw
// results; results behind a slow one wait in the workers' output channels
// (bounded by `capacity` each), and a worker whose channel is full waits.
//
// Throttling: set_active_workers(n) makes workers 0..n-1 active and the rest
// frozen. The emitter reads n before every send, so the change is seen by
// the next task (at most one send that already read the old n is in flight).
// A frozen worker finishes what is already in its channel - nothing is lost,
// and ordered mode stays ordered - then sleeps on its eventcount: no CPU.
// Thawing needs no hand-shake: the next task sent wakes the worker.
//
// End of stream: when the source returns std::nullopt the emitter closes
// every worker's channel; a worker that finds its channel closed and empty
// closes its output channel; the collector ends when every output is closed
// and empty. run_and_wait() returns after every thread has joined.
//
// Exceptions from the source, a worker or the sink stop the farm: every
// thread stops at its next step, run_and_wait() joins them, destroys the
// tasks and results still in the channels (nothing leaks), and rethrows the
// first exception. Later ones are dropped.
//
// Waiting: a thread with nothing to do yields for a while (while its yields
// hand the core to others, or on a free core while that pays; see spinner),
// then parks on an eventcount (announce, fence, re-check, sleep; see
// eventcount.hpp). Wake-ups are few, because on a VM each costs the waker
// microseconds: the emitter's push wakes its worker ([farm.light], a compiler
// barrier and a load, paired with membarrier(2) when the worker parks:
// [farm.heavy]); a pop wakes the producer, who may wait for room, every half
// ring (see pops_per_room_notify); results reach the collector in batches,
// and while they flow the collector polls instead of being woken (see
// result_batch, gather_results). Those once-per-batch wake-ups pay a full
// fence, so that nobody parks with membarrier for them (see wakers).
//
// Sensors (farm_base::sensors()) are counters each written by one thread with
// relaxed stores and read by the autonomic manager at its own pace: items
// arrived, time the emitter spent blocked on full channels, tasks done and
// busy time per worker, results delivered. Busy time costs a clock read per
// task, or per 16 tasks shorter than 2 us (see busy_clock).
//
// Who may call what: run_and_wait (one at a time, from any thread; a second
// concurrent call throws std::logic_error), and from any thread at any time
// set_active_workers, active_workers, repin and sensors.
// Progress: channels are wait-free; the farm blocks by design when idle.
#pragma once

#include "lfcore/cache_padded.hpp"
#include "lfcore/config.hpp"
#include "lfcore/detail/asymmetric_fence.hpp"
#include "lfcore/eventcount.hpp"
#include "lfcore/spsc_queue.hpp"
#include "lfcore/topology.hpp"
#include "lfcore/unbounded_spsc_queue.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
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
      // Either the waker sees us counted as a waiter and wakes us, or our
      // re-check below sees its change (a push, a pop, a close, stop_,
      // active_). [farm.heavy] pairs with [farm.light] in wake() and with
      // every full fence; [farm.park] pairs with full fences only:
      // eventcount's [ec.notify] and [farm.announce].
      if (from == wakers::per_task)
        detail::asymmetric_fence::heavy(); // [farm.heavy]
      else
        detail::full_fence(); // [farm.park]
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

/// A farm of workers computing `Out f(In)`; Out = void for workers that
/// produce nothing (no collector then).
template <class In, class Out = In>
class farm : public farm_base {
  using result_value = std::conditional_t<std::is_void_v<Out>, std::monostate, Out>;

public:
  using input_type = In;
  using output_type = Out;
  using worker_function = std::function<Out(In)>;

  /// Throws std::invalid_argument for zero workers, capacity or prefetch, a
  /// result_latency under 1 us, or an empty worker function.
  farm(worker_function worker, const farm_options& options = {})
      : farm_base(options), worker_(std::move(worker)) {
    if (!worker_) throw std::invalid_argument("lfcore::farm: empty worker function");
  }

  /// Streams every item of `source` (a callable returning std::optional<In>;
  /// std::nullopt ends the stream), called on the emitter thread, through the
  /// workers into `sink` (a callable taking Out&&), called on the collector
  /// thread in completion order, or in input order if options().ordered.
  /// With one worker both are called on that worker's thread, the sink in
  /// input order (see farm_options::fuse_emitter_with_one_worker). Neither is
  /// ever called concurrently with itself. Returns when all is done.
  template <class Source, class Sink>
  void run_and_wait(Source&& source, Sink&& sink) {
    static_assert(!std::is_void_v<Out>, "a farm of void workers has no results to collect");
    run(source, &sink, static_cast<feedback_hook*>(nullptr));
  }

  /// Without a collector: results (if any) are dropped by the workers.
  template <class Source>
  void run_and_wait(Source&& source) {
    run(source, static_cast<int*>(nullptr), static_cast<feedback_hook*>(nullptr));
  }

  /// Master-worker: results travel from the collector back to the emitter,
  /// which calls on_result(Out&&, submit) on its own thread (with one worker
  /// on one thread, that thread calls it after each task); submit(In) sends
  /// a new task. The stream ends when the source is exhausted and no task
  /// is in flight. The feedback channel is unbounded, so the collector
  /// never blocks on it and the loop cannot deadlock.
  template <class Source, class OnResult>
  void run_with_feedback(Source&& source, OnResult&& on_result) {
    static_assert(!std::is_void_v<Out>, "feedback needs results");
    feedback_hook hook;
    hook.on_result = [&on_result](result_value&& r, const std::function<void(In)>& submit) {
      on_result(std::move(r), submit);
    };
    auto to_feedback = [&hook, this](Out&& r) {
      hook.results.push(std::move(r));
      wake(emitter_wake_); // the emitter may sleep waiting for results
    };
    run(source, &to_feedback, &hook);
  }

private:
  struct task_item {
    std::uint64_t seq;
    In value;
  };
  struct result_item {
    std::uint64_t seq;
    result_value value;
  };
  // One worker's two channels, allocated per run (so a stopped run leaves
  // nothing behind: the queues' destructors destroy what is left).
  struct lane {
    lane(std::size_t in_capacity, std::size_t out_capacity)
        : input(in_capacity), output(out_capacity) {}
    spsc_queue<task_item> input;    // emitter -> worker
    spsc_queue<result_item> output; // worker -> collector
    // [farm.close] release stores after the last push; acquire loads before
    // the final try_pop: a consumer that sees the flag sees every push.
    std::atomic<bool> input_closed{false};
    std::atomic<bool> output_closed{false};
  };
  struct feedback_hook {
    unbounded_spsc_queue<result_value> results; // collector -> emitter
    std::function<void(result_value&&, const std::function<void(In)>&)> on_result;
  };

  static std::size_t ring_size(std::size_t n) { return std::bit_ceil(n < 2 ? std::size_t{2} : n); }

  // The consumer of a channel wakes its producer (who may wait for room)
  // after every k-th pop only: each wake-up of a parked thread is a futex
  // call and, on a VM, an interrupt of the CPU it sleeps on. A producer that
  // found a ring of spsc_queue::refill_min_capacity slots or more full pushes
  // again only once refill_batch slots are free. With k = capacity / 2 (at
  // least 128 > refill_batch): a producer that failed with f < refill_batch
  // slots free, so with at least capacity - f = 2k - f results queued, sees
  // two multiples of k pass before the ring is empty, and at the second at
  // least k + 1 slots are free - it is always woken with room, and it then
  // refills half a ring at once. Measured against k = refill_batch (2 vCPUs,
  // one worker, 1 us tasks): 0.89-0.91 -> 0.92 of the sequential rate. Smaller
  // rings (on-demand): every pop.
  using element_queue = spsc_queue<task_item>;
  static std::uint64_t pops_per_room_notify(std::size_t capacity) {
    return capacity >= element_queue::refill_min_capacity ? capacity / 2 : 1;
  }

  // Results reach the collector in batches, because each wake-up of a
  // sleeping thread costs the waker a futex call and, on a VM, an
  // inter-processor interrupt: several microseconds of a worker's time.
  // * While results flow, the collector polls: it sleeps up to
  //   farm_options::result_latency at a time (a timed futex wait; less if
  //   half a ring would fill sooner) and drains what arrived; no worker
  //   wakes it.
  // * After poll_limit polls found nothing, it parks and sets
  //   collector_parked_. A worker that pushes a result and sees the flag
  //   wakes it at once; as the look is relaxed (no fence per result) and may
  //   be stale, a worker also announces its results, with a fence
  //   ([farm.announce]), when it has pushed results_per_wake since its last
  //   announcement, when the oldest would wait longer than result_latency if
  //   it ran one more task as long as the last one, and before it waits for
  //   anything or finishes.
  // So a result reaches the sink within about result_latency while results
  // flow, at once after a pause, and never sits unannounced while its worker
  // waits in the farm: in ordered mode the collector may wait for exactly
  // that result, and no worker waits without announcing first, so nobody
  // waits for ever. (Only a task that blocks until the sink has seen an
  // earlier result of its own worker can wait on a result that missed the
  // parked flag, until the batch rules above announce it: tasks should not
  // wait on the sink.) Measured on 2 vCPUs against a collector woken per
  // batch (32 results or 200 us): 10 us tasks at nw = 1 went from 0.95-0.97
  // to 0.99 of the sequential loop's rate (bench/results/README.md, task farm).
  static constexpr std::uint64_t results_per_wake = stress_build ? 2 : 32;
  static constexpr int poll_limit = 2;
  // Between polls the collector yields a few times instead of idle_spins:
  // spinning for results that come in batches only takes a core from a worker.
  static constexpr int collector_spins = stress_build ? 1 : 4;
  struct result_batch {
    std::uint64_t pending = 0;
    clock::time_point oldest{};
  };
  void announce(result_batch& b) noexcept {
    if (b.pending == 0) return;
    b.pending = 0;
    // [farm.announce] pairs with [farm.park]: either we see the flag (and
    // notify_one sees the collector counted as a waiter), or the collector's
    // re-check after its fence sees our pushes.
    detail::full_fence();
    if (collector_parked_.load(std::memory_order_relaxed)) collector_wake_.notify_one();
  }
  // Written by the collector around a park, read by every worker per result.
  alignas(cache_line_size) std::atomic<bool> collector_parked_{false};

  // Where a worker's results go.
  enum class results_to {
    nowhere,   // no sink: results are dropped
    collector, // over the worker's output channel
    sink,      // straight into the sink (fuse_collector_with_one_worker)
  };

  template <class Source, class Sink>
  void run(Source& source, Sink* sink, feedback_hook* feedback) {
    constexpr bool has_sink = !std::is_same_v<Sink, int>;
    const unsigned nw = max_workers_;
    const bool sink_on_worker = has_sink && nw == 1 && options_.fuse_collector_with_one_worker;
    const bool collect = has_sink && !sink_on_worker;
    const bool one_thread = nw == 1 && !collect && options_.fuse_emitter_with_one_worker;
    begin_run(collect);
    if (one_thread) {
      try {
        std::thread([this, &source, sink, feedback] {
          loop_on_one_thread(source, sink, feedback);
        }).join();
      } catch (...) {
        fail(std::current_exception()); // std::system_error creating the thread
      }
      end_run();
      return;
    }
    std::vector<std::unique_ptr<lane>> lanes;
    std::vector<std::thread> threads;
    try {
      const std::size_t in_cap = options_.policy == scheduling::on_demand
                                     ? ring_size(options_.prefetch)
                                     : ring_size(options_.capacity);
      for (unsigned i = 0; i < nw; ++i)
        lanes.push_back(std::make_unique<lane>(in_cap, collect ? ring_size(options_.capacity) : 2));
      threads.reserve(nw + 2);
      if constexpr (!has_sink)
        start_workers<results_to::nowhere>(threads, lanes, sink);
      else if (sink_on_worker)
        start_workers<results_to::sink>(threads, lanes, sink);
      else
        start_workers<results_to::collector>(threads, lanes, sink);
      if constexpr (has_sink)
        if (collect) threads.emplace_back([this, sink, &lanes] { collector_loop(*sink, lanes); });
      threads.emplace_back(
          [this, &source, &lanes, feedback] { emitter_loop(source, lanes, feedback); });
    } catch (...) {
      fail(std::current_exception()); // e.g. std::system_error creating a thread
    }
    for (std::thread& t : threads) t.join();
    lanes.clear(); // destroys what a stopped run left in the channels
    end_run();
  }

  template <results_to output, class Sink>
  void start_workers(std::vector<std::thread>& threads, std::vector<std::unique_ptr<lane>>& lanes,
                     Sink* sink) {
    for (unsigned i = 0; i < max_workers_; ++i)
      threads.emplace_back([this, i, &lanes, sink] { worker_loop<output>(i, *lanes[i], sink); });
  }

  // ------------------------------------------------------------- one thread
  // A farm of one worker with its emitter and collector fused
  // (farm_options::fuse_emitter_with_one_worker): source, worker and sink in
  // a loop on the worker's thread (slot 1). Its counters are the emitter's
  // and worker 0's, as if the two threads ran; nothing is shared per task.
  template <class Source, class Sink>
  void loop_on_one_thread(Source& source, Sink* sink, feedback_hook* feedback) {
    constexpr bool has_sink = !std::is_same_v<Sink, int>;
    worker_control& c = control(0);
    unsigned epoch = 0;
    pin_self(1, epoch);
    // Our own counters (one writer per run: this thread).
    std::uint64_t arrived = emitter_->arrivals.load(std::memory_order_relaxed);
    std::uint64_t sent = c.sent.load(std::memory_order_relaxed);
    std::uint64_t done = c.tasks.load(std::memory_order_relaxed);
    busy_clock timer{c.busy_ns.load(std::memory_order_relaxed)};
    std::deque<In> submitted; // feedback mode: tasks from on_result, run first
    const std::function<void(In)> submit = [&submitted](In v) {
      submitted.push_back(std::move(v));
    };
    try {
      while (!stopped()) {
        repin_if_changed(1, epoch);
        std::optional<In> item;
        if (!submitted.empty()) {
          item.emplace(std::move(submitted.front()));
          submitted.pop_front();
        } else if (!(item = source())) {
          break; // end of stream: nothing can be in flight
        }
        emitter_->arrivals.store(++arrived, std::memory_order_relaxed);
        c.sent.store(++sent, std::memory_order_relaxed);
        if constexpr (std::is_void_v<Out> || !has_sink)
          (void)worker_(std::move(*item));
        else if (feedback != nullptr)
          feedback->on_result(worker_(std::move(*item)), submit);
        else
          (*sink)(worker_(std::move(*item)));
        timer.tick();
        c.busy_ns.store(timer.busy_ns, std::memory_order_relaxed);
        c.tasks.store(++done, std::memory_order_relaxed);
      }
    } catch (...) {
      fail(std::current_exception());
    }
    timer.charge(clock::now());
    c.busy_ns.store(timer.busy_ns, std::memory_order_relaxed);
  }

  // ---------------------------------------------------------------- emitter
  template <class Source>
  void emitter_loop(Source& source, std::vector<std::unique_ptr<lane>>& lanes,
                    feedback_hook* feedback) {
    unsigned epoch = 0;
    pin_self(0, epoch);
    unsigned next = 0;
    std::uint64_t seq = 0;
    std::uint64_t arrived = emitter_->arrivals.load(std::memory_order_relaxed);
    std::deque<In> submitted; // feedback mode: tasks from on_result, sent first
    std::uint64_t in_flight = 0;
    bool source_done = false;
    const std::function<void(In)> submit = [&submitted](In v) {
      submitted.push_back(std::move(v));
    };
    try {
      while (!stopped()) {
        repin_if_changed(0, epoch);
        if (feedback != nullptr) {
          while (std::optional<result_value> r = feedback->results.try_pop()) {
            --in_flight;
            feedback->on_result(std::move(*r), submit);
          }
        }
        std::optional<In> item;
        if (!submitted.empty()) {
          item.emplace(std::move(submitted.front()));
          submitted.pop_front();
        } else if (!source_done) {
          item = source();
          if (!item) source_done = true;
        }
        if (!item) {
          if (feedback == nullptr || in_flight == 0) break; // end of stream
          wait_until_ready(emitter_wake_, emitter_->feedback_waits, wakers::per_task,
                           [&] { // for a result to come back
                             std::optional<result_value> r = feedback->results.try_pop();
                             if (!r) return false;
                             --in_flight;
                             feedback->on_result(std::move(*r), submit);
                             return true;
                           });
          continue;
        }
        emitter_->arrivals.store(++arrived, std::memory_order_relaxed); // one writer
        if (!send(lanes, task_item{seq++, std::move(*item)}, next)) break;
        ++in_flight;
      }
    } catch (...) {
      fail(std::current_exception());
    }
    for (auto& l : lanes) l->input_closed.store(true, std::memory_order_release); // [farm.close]
    for (unsigned i = 0; i < max_workers_; ++i) control(i).wake.notify_one();
  }

  // Sends t to an active worker with room; false if the farm stopped first.
  bool send(std::vector<std::unique_ptr<lane>>& lanes, task_item&& t, unsigned& next) {
    if (try_send(lanes, t, next)) return true;
    const clock::time_point start = clock::now();
    const bool sent = wait_until_ready(emitter_wake_, emitter_->room_waits, wakers::per_batch,
                                       [&] { return try_send(lanes, t, next); });
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start);
    emitter_->blocked_ns.store(emitter_->blocked_ns.load(std::memory_order_relaxed) +
                                   waited.count(),
                               std::memory_order_relaxed); // one writer
    return sent;
  }

  bool try_send(std::vector<std::unique_ptr<lane>>& lanes, task_item& t, unsigned& next) {
    // relaxed: a freeze seen late sends one more task to a worker that
    // processes it anyway; a thaw seen late is re-read on the next attempt,
    // and set_active_workers notifies us if we sleep.
    const unsigned nw = active_.load(std::memory_order_relaxed);
    if (next >= nw) next = 0;
    for (unsigned k = 0; k < nw; ++k) {
      const unsigned i = next + k < nw ? next + k : next + k - nw;
      spsc_queue<task_item>& q = lanes[i]->input;
      if (options_.policy == scheduling::on_demand && q.size_approx() >= options_.prefetch)
        continue;
      if (q.try_push(std::move(t))) { // moves only on success
        worker_control& c = control(i);
        c.sent.store(c.sent.load(std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed); // one writer (us); read as an estimate
        wake(c.wake);
        next = i + 1;
        return true;
      }
    }
    return false;
  }

  // ----------------------------------------------------------------- worker
  // A worker's busy time (the sensors' T_w) with few clock reads: a read
  // costs 20-35 ns (24 on the AMD guest), 3% of a 1 us task and 0.25% of a
  // 10 us one, which is a fifth of the farm's own cost per task there. The
  // worker reads the clock once per `stride` tasks, chosen so that it still
  // reads at least once per read_interval of work (16 tasks of 2 us or less,
  // 3 of 10 us, every task from 32 us up), and charges the interval to all
  // of them. Waiting for a task is not busy time (waiting for output room is).
  struct busy_clock {
    static constexpr clock::duration read_interval = std::chrono::microseconds(32);
    static constexpr unsigned max_stride = stress_build ? 2 : 16;
    std::uint64_t busy_ns;
    clock::time_point last = clock::now(); // the last read, or the end of the last wait
    clock::duration per_task{};            // measured at the last read
    unsigned since = 0;                    // tasks finished since `last`
    unsigned stride = 1;

    /// After a task: reads the clock if due; true if it did (then `last` is
    /// the task's end and `per_task` the recent time per task).
    bool tick() {
      if (++since < stride) return false;
      const clock::time_point now = clock::now();
      per_task = (now - last) / since;
      stride = per_task * max_stride <= read_interval
                   ? max_stride
                   : std::max(1u, static_cast<unsigned>(read_interval / per_task));
      charge(now);
      return true;
    }
    void charge(clock::time_point now) { // busy until now
      busy_ns += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count());
      last = now;
      since = 0;
    }
  };

  template <results_to output, class Sink>
  void worker_loop(unsigned i, lane& l, Sink* sink) {
    constexpr bool collect = output == results_to::collector;
    worker_control& c = control(i);
    unsigned epoch = 0;
    pin_self(i + 1, epoch);
    const std::uint64_t room_every = pops_per_room_notify(l.input.capacity());
    std::uint64_t popped = 0;
    // Our own counters (one writer: the worker of slot i, in every run).
    std::uint64_t done = c.tasks.load(std::memory_order_relaxed);
    busy_clock timer{c.busy_ns.load(std::memory_order_relaxed)};
    result_batch batch;
    try {
      for (;;) {
        std::optional<task_item> t = l.input.try_pop();
        if (!t) {
          if constexpr (collect) announce(batch); // before waiting (see result_batch)
          timer.charge(clock::now());
          c.busy_ns.store(timer.busy_ns, std::memory_order_relaxed); // one writer
          if (!wait_for_task(c, l, t)) break;
          timer.last = clock::now(); // idle time is not busy time
        }
        // Before the task, not after: a worker parked since repin() must
        // not run its first task on the old CPU. The relaxed epoch load is
        // enough for a task sent after repin() returned: the hand-over that
        // brought it (the ring's release push, our acquire pop) orders the
        // epoch's bump before this load.
        repin_if_changed(i + 1, epoch);
        if (++popped % room_every == 0) emitter_wake_.notify_one(); // it may wait for room
        if (stopped()) break;
        if constexpr (std::is_void_v<Out>) {
          worker_(std::move(t->value));
        } else if constexpr (output == results_to::nowhere) {
          (void)worker_(std::move(t->value));
        } else if constexpr (output == results_to::sink) {
          (*sink)(worker_(std::move(t->value))); // in input order: one worker, a FIFO channel
        } else {
          result_item r{t->seq, worker_(std::move(t->value))};
          const bool timed = timer.tick();
          if (!deliver(c, l, std::move(r), batch, timer, timed)) break;
        }
        if constexpr (!collect) timer.tick();
        c.busy_ns.store(timer.busy_ns, std::memory_order_relaxed); // one writer
        c.tasks.store(++done, std::memory_order_relaxed);          // one writer
      }
    } catch (...) {
      fail(std::current_exception());
    }
    timer.charge(clock::now());
    c.busy_ns.store(timer.busy_ns, std::memory_order_relaxed);
    if constexpr (collect) {
      l.output_closed.store(true, std::memory_order_release); // [farm.close]
      collector_wake_.notify_one();
    }
  }

  // Waits for a task; false at end of stream or stop.
  bool wait_for_task(worker_control& c, lane& l, std::optional<task_item>& t) {
    bool end = false;
    wait_until_ready(c.wake, c.task_waits, wakers::per_task, [&] {
      if ((t = l.input.try_pop())) return true;
      if (!l.input_closed.load(std::memory_order_acquire)) return false; // [farm.close]
      t = l.input.try_pop();                                             // a push before the close
      end = !t;
      return true;
    });
    return t.has_value() && !end;
  }

  // Pushes a result to the collector, waiting for room, and announces the
  // batch when it is due (see result_batch). `timed`: the clock was read
  // after this task, so the latency rule can be judged. False on stop.
  bool deliver(worker_control& c, lane& l, result_item&& r, result_batch& batch,
               const busy_clock& timer, bool timed) {
    if (!l.output.try_push(std::move(r))) {
      // Before waiting: the collector makes the room. notify_one wakes it
      // parked or gathering (gather_results); a full ring is rare, so is
      // its fence. It announces the batch as [farm.announce] would.
      batch.pending = 0;
      collector_wake_.notify_one();
      if (!wait_until_ready(c.wake, c.room_waits, wakers::per_batch,
                            [&] { return l.output.try_push(std::move(r)); }))
        return false;
    }
    // Without a fresh read, `last` is at most read_interval of tasks old:
    // the batch then looks older than it is, and is announced early.
    if (batch.pending++ == 0) batch.oldest = timer.last;
    // relaxed: a hint, read per result; [farm.announce] is the guarantee.
    if (collector_parked_.load(std::memory_order_relaxed) || batch.pending >= results_per_wake ||
        (timed && timer.last - batch.oldest + timer.per_task >= options_.result_latency))
      announce(batch);
    return true;
  }

  // -------------------------------------------------------------- collector
  template <class Sink>
  void collector_loop(Sink& sink, std::vector<std::unique_ptr<lane>>& lanes) {
    const unsigned nw = max_workers_;
    unsigned epoch = 0;
    pin_self(nw + 1, epoch);
    // head[i]: the oldest result of worker i taken off its channel, not yet
    // delivered (ordered mode merges on these).
    std::vector<std::optional<result_item>> head(nw);
    std::vector<bool> finished(nw, false);
    unsigned open = nw;
    std::uint64_t next_seq = 0;
    std::uint64_t completed = completed_->load(std::memory_order_relaxed);
    unsigned hint = 0;

    // Takes worker i's next result into head[i] if there is none; true if it
    // changed anything (a result arrived or the worker finished).
    auto refill = [&](unsigned i) {
      if (head[i] || finished[i]) return false;
      if ((head[i] = lanes[i]->output.try_pop())) return true;
      if (!lanes[i]->output_closed.load(std::memory_order_acquire)) return false; // [farm.close]
      if ((head[i] = lanes[i]->output.try_pop())) return true;
      finished[i] = true;
      --open;
      return true;
    };
    const std::uint64_t room_every = pops_per_room_notify(lanes[0]->output.capacity());
    std::vector<std::uint64_t> taken(nw, 0);
    auto hand_over = [&](unsigned i) {
      result_item r = std::move(*head[i]);
      head[i].reset();
      if (++taken[i] % room_every == 0) control(i).wake.notify_one(); // it may wait for room
      sink(std::move(r.value));
      completed_->store(++completed, std::memory_order_relaxed); // one writer
    };
    // Delivers what can be delivered now; returns how many results it did.
    auto drain = [&] {
      std::size_t delivered = 0;
      if (!options_.ordered) {
        for (unsigned i = 0; i < nw; ++i)
          for (int batch = 0; batch < 64 && (refill(i), head[i]); ++batch) {
            hand_over(i);
            ++delivered;
          }
        return delivered;
      }
      for (;;) {
        unsigned found = nw;
        for (unsigned k = 0; k < nw && found == nw; ++k) {
          const unsigned i = (hint + k) % nw;
          refill(i);
          if (head[i] && head[i]->seq == next_seq) found = i;
        }
        if (found == nw) return delivered;
        hand_over(found);
        ++next_seq;
        hint = found + 1;
        ++delivered;
      }
    };
    auto changed = [&] {
      bool any = false;
      for (unsigned i = 0; i < nw; ++i) any = refill(i) || any;
      return any;
    };
    const std::size_t ring = lanes[0]->output.capacity();
    const bool nap = ring >= gather_min_capacity;
    // How long the collector naps: options_.result_latency, cut to the time
    // half a ring (of one worker, or of all together) takes to fill at the
    // rate results came in over the last cycle (from one nap to the next).
    // With the default latency the cut matters only for tasks under 1 us;
    // with a long one it keeps workers from filling their rings and waking
    // us (rings too small to nap on fill at once anyway).
    const clock::duration latency = options_.result_latency;
    clock::duration nap_length = latency;
    clock::time_point cycle_start = clock::now();
    std::size_t cycle_results = 0;
    auto next_nap = [&] {
      const clock::time_point now = clock::now();
      if (nap && cycle_results > 0)
        nap_length = std::min(latency, (now - cycle_start) * static_cast<clock::rep>(ring / 2) /
                                           static_cast<clock::rep>(cycle_results));
      cycle_start = now;
      cycle_results = 0;
      return nap_length;
    };
    int empty_polls = 0;
    try {
      while (open > 0 && !stopped()) {
        repin_if_changed(nw + 1, epoch);
        if (const std::size_t delivered = drain(); delivered > 0) {
          empty_polls = 0;
          cycle_results += delivered;
          if (nap && delivered < results_per_wake) gather_results(lanes, next_nap());
        } else if (open > 0 && empty_polls < poll_limit) {
          ++empty_polls;
          poll_for_results(changed, next_nap());
        } else if (open > 0) {
          collector_parked_.store(true, std::memory_order_relaxed); // read after [farm.park]
          spinner never;                                            // spins = 0: parks at once
          wait_until_ready(collector_wake_, never, wakers::per_batch, changed, 0);
          collector_parked_.store(false, std::memory_order_relaxed);
          cycle_start = clock::now(); // a pause is no measure of the rate
          cycle_results = 0;
        }
      }
    } catch (...) {
      fail(std::current_exception());
    }
    collector_parked_.store(false, std::memory_order_relaxed); // the next run starts polling
  }

  // Yields collector_spins times, then sleeps until `changed` reports a
  // result or `nap` passed; a worker's end or a stop wakes it sooner
  // (eventcount's notify counts timed waiters too).
  template <class Changed>
  void poll_for_results(Changed& changed, clock::duration nap) {
    for (int spin = 0; spin < collector_spins; ++spin) {
      if (changed() || stopped()) return;
      std::this_thread::yield();
    }
    const eventcount::key_type key = collector_wake_.prepare_wait();
    if (changed() || stopped()) {
      collector_wake_.cancel_wait();
      return;
    }
    collector_wake_.wait_until(key, clock::now() + nap);
  }

  // Results that trickle in (a drain found fewer than results_per_wake) are
  // left to gather rather than taken one by one. First we yield: on a busy
  // core that hands it to a worker for a slice, and results gather at no
  // cost. A yield that comes back at once means a core of our own: there the
  // collector took each 1 us task's result as it came and used 0.8 of a core
  // doing it (schedstat, 2 vCPUs, one worker), so it naps `nap` (see
  // collector_loop) instead (a timed nap on a busy core would preempt a
  // worker 5,000 times a second: on-demand with 100 us tasks at nw = 2 lost
  // 6% to it). A worker whose output ring fills wakes us early (see
  // deliver), and so does a ring half full when we look, so the nap never
  // holds a worker back; a worker's end or a stop wakes us too. Rings under
  // gather_min_capacity fill too soon for either.
  static constexpr std::size_t gather_min_capacity = element_queue::refill_min_capacity;
  void gather_results(const std::vector<std::unique_ptr<lane>>& lanes, clock::duration nap) {
    const clock::time_point before = clock::now();
    std::this_thread::yield();
    if (clock::now() - before >= free_yield) return; // a worker ran meanwhile
    const eventcount::key_type key = collector_wake_.prepare_wait();
    // [farm.park] pairs with [ec.notify] of a worker whose ring is full:
    // either it sees us waiting, or we see its ring here.
    detail::full_fence();
    const bool filling = std::any_of(lanes.begin(), lanes.end(), [](const auto& l) {
      return l->output.size_approx() >= l->output.capacity() / 2;
    });
    if (filling || stopped()) {
      collector_wake_.cancel_wait();
      return;
    }
    collector_wake_.wait_until(key, clock::now() + nap);
  }

  worker_function worker_;
};

/// A farm source over [first, last): yields copies of the elements in order.
template <class It>
auto from_range(It first, It last) {
  return [first, last]() mutable -> std::optional<typename std::iterator_traits<It>::value_type> {
    if (first == last) return std::nullopt;
    return *first++;
  };
}

} // namespace lfcore
