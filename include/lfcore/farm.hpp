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
// Exceptions from the source, a worker, the sink or on_result stop the
// farm: every thread stops at its next step, run_and_wait() (or
// run_with_feedback()) joins them, destroys the tasks and results still in
// the channels and the tasks submitted but not sent (nothing leaks), and
// rethrows the first exception. Later ones are dropped. A thread the OS
// refuses is such an exception (std::system_error): the farm stops the
// threads it started and can run again.
//
// Waiting (farm_base::wait_until_ready, in farm_base.hpp with spinner and
// wakers): a thread with nothing to do yields for a while (while its yields
// hand the core to others, or on a free core while that pays), then parks on
// an eventcount (announce, fence, re-check, sleep; see eventcount.hpp).
// Wake-ups are few, because on a VM each costs the waker microseconds: the
// emitter's push wakes its worker ([farm.light], a compiler barrier and a
// load, paired with membarrier(2) when the worker parks: [farm.heavy]); a pop
// wakes the producer, who may wait for room, every half ring (see
// pops_per_room_notify); results reach the collector in batches, and while
// they flow the collector polls instead of being woken (see result_batch,
// gather_results). Those once-per-batch wake-ups pay a full fence, so that
// nobody parks with membarrier for them (see wakers).
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

#include "lfcore/farm_base.hpp"
#include "lfcore/spsc_queue.hpp"
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
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace lfcore {

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
  // rings (on-demand): every pop. Spin checks this on rings of four slots
  // (tests/model/farm.pml): no producer is left asleep, and waking it once a
  // ring instead of every half ring does leave one.
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
  // waits for ever (model-checked in tests/model/farm.pml, where a worker
  // that waits without announcing stops a feedback loop). Only a task that
  // blocks until the sink has seen an earlier result of its own worker can
  // wait on a result that missed the parked flag, until the batch rules above
  // announce it: tasks should not wait on the sink. Measured on 2 vCPUs
  // against a collector woken per batch (32 results or 200 us): 10 us tasks
  // at nw = 1 went from 0.95-0.97 to 0.99 of the sequential loop's rate
  // (bench/results/README.md, task farm).
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
      // its fence. It announces the batch as [farm.announce] would - which
      // a ring shorter than results_per_wake (capacity under 32) needs: it
      // fills before the batch rule announces (tests/model/farm.pml).
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
    // [farm.park] prepare_wait's full fence pairs with [ec.notify] of a
    // worker whose ring is full: either it sees us waiting, or we see its
    // ring here.
    const eventcount::key_type key = collector_wake_.prepare_wait();
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
