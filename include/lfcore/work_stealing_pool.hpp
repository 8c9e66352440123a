// lfcore/work_stealing_pool.hpp - a work-stealing thread pool, task groups
// and fork-join loops.
//
// Design (Blumofe and Leiserson's work stealing, as in Cilk, oneTBB and the
// course notes' "job stealing", ../shared/seeds/parallel-programming-notes.txt
// section 1.3.6):
// * Each worker owns a chase_lev_deque of tasks. A task spawned by a worker
//   goes to the bottom of its own deque, and the worker takes from there
//   (newest first: depth-first, cache-warm). Tasks from threads outside the
//   pool go to an injection queue (unbounded_mpmc_queue, FIFO).
// * A worker with nothing of its own looks at the injection queue, then
//   steals the oldest task of random victims (xorshift), trying each other
//   worker once per round.
// * Idle workers spin briefly, then park on an eventcount. Submissions from
//   outside always notify (a fence and a load when nobody sleeps). A worker's
//   own spawn notifies only when the eventcount shows a waiter (a relaxed
//   hint): if that hint is stale, a sleeper misses one spawn - harmless,
//   because the spawning worker is awake and runs the task itself - and the
//   next spawn wakes it. So an idle pool uses no CPU and a busy one pays no
//   fence per spawn. (Spin checks these rules, the group wake-up below and
//   the destructor's last search: tests/model/work_stealing_pool.pml.)
// * task_group::wait() helps: it runs other tasks (its own first) until its
//   group is done, so nested parallelism cannot deadlock; with nothing to run
//   it parks on the same eventcount, woken when its group finishes. That
//   wake-up is a Dekker pair made asymmetric (detail/asymmetric_fence.hpp):
//   the task finishing a group pays a compiler barrier, the rare waiter that
//   parks pays membarrier(2) - a group ends on every fork (+17-21% fib
//   throughput against a fence per group end, bench/results/README.md).
// Progress: spawning and stealing are lock-free; waiting blocks by design.
// Pinning: none, compact, scatter or an explicit CPU list (topology.hpp,
// hwloc when available); each worker pins itself when it starts.
// Shutdown: the destructor runs every task submitted or spawned before it
// (including the ones those spawn), then joins the workers. Submitting to a
// pool whose destructor has started is undefined.
// Exceptions: submit() puts them in the future; a task_group's wait()
// rethrows the first one its tasks threw (the others are dropped).
#pragma once

#include "lfcore/backoff.hpp"
#include "lfcore/cache_padded.hpp"
#include "lfcore/chase_lev_deque.hpp"
#include "lfcore/eventcount.hpp"
#include "lfcore/hazard_pointer.hpp"
#include "lfcore/topology.hpp"
#include "lfcore/unbounded_mpmc_queue.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace lfcore {

namespace detail {
/// A unit of work: runs once, then frees itself, or is dropped unrun (when it
/// could not be queued). Never throws: the wrappers catch and hand exceptions
/// to a future or a task group.
struct pool_task {
  void (*run_and_delete)(pool_task*) noexcept;
  void (*drop)(pool_task*) noexcept;
};
template <class F>
struct pool_task_of final : pool_task {
  explicit pool_task_of(F&& fn) : pool_task{&invoke, &discard}, f(std::move(fn)) {}
  static void invoke(pool_task* t) noexcept {
    std::unique_ptr<pool_task_of> self(static_cast<pool_task_of*>(t));
    self->f();
  }
  static void discard(pool_task* t) noexcept { delete static_cast<pool_task_of*>(t); }
  F f;
};
template <class F>
pool_task* make_pool_task(F&& f) {
  return new pool_task_of<std::decay_t<F>>(std::forward<F>(f));
}
} // namespace detail

class task_group;

class work_stealing_pool {
public:
  /// Starts `threads` workers (0: std::thread::hardware_concurrency()), each
  /// pinned by `pin` (topology.hpp) as it starts; a CPU the OS refuses leaves
  /// that worker unpinned. More workers than CPUs is allowed (they then
  /// share). Throws std::invalid_argument for pinning::list without CPUs,
  /// and std::system_error if the OS refuses a thread (after joining the
  /// workers it had started).
  explicit work_stealing_pool(unsigned threads = 0, pin_policy pin = {});
  /// Runs everything already submitted or spawned, then joins the workers.
  ~work_stealing_pool();
  work_stealing_pool(const work_stealing_pool&) = delete;
  work_stealing_pool& operator=(const work_stealing_pool&) = delete;

  unsigned size() const noexcept { return static_cast<unsigned>(workers_.size()); }

  /// Runs f() on the pool; the future has its result or its exception. Any
  /// thread may call it, workers included. Lock-free (may allocate).
  template <class F>
  auto submit(F&& f) -> std::future<std::invoke_result_t<std::decay_t<F>&>> {
    using R = std::invoke_result_t<std::decay_t<F>&>;
    auto job = std::make_shared<std::packaged_task<R()>>(std::forward<F>(f));
    std::future<R> result = job->get_future();
    spawn(detail::make_pool_task([job] { (*job)(); }));
    return result;
  }

  /// The pool whose worker is calling, or null on any other thread.
  static work_stealing_pool* current() noexcept;
  /// Tasks waiting on the calling worker's own deque (0 on any other thread):
  /// a hint for splitting work lazily.
  std::size_t local_backlog() const noexcept;

private:
  friend class task_group;
  struct worker;

  /// Queues t: on the calling worker's deque, or the injection queue.
  void spawn(detail::pool_task* t);
  /// Runs one task if the caller can find one; true if it did.
  bool run_one();
  /// A task for w (null: w is not a worker of this pool), or null if none seen.
  detail::pool_task* find_task(worker* w);
  /// Whether any queue of the pool looks non-empty.
  bool work_visible() const noexcept;
  void worker_main(worker& w);
  /// Lets the workers finish what is queued, then joins every started one.
  void stop_and_join() noexcept;

  const pin_policy pin_;
  static thread_local worker* current_worker_; // the calling thread's, if it is a worker

  std::vector<std::unique_ptr<worker>> workers_;
  unbounded_mpmc_queue<detail::pool_task*> injection_;
  std::atomic<std::ptrdiff_t> injected_{0}; // tasks in injection_, roughly: skips empty polls
  eventcount idle_;                         // parked workers and waiting task groups
  std::atomic<bool> stopping_{false};
};

/// A set of tasks to wait for together. run() from any thread; wait() from
/// one thread at a time. The destructor waits too (dropping any exception).
class task_group {
public:
  explicit task_group(work_stealing_pool& pool) noexcept : pool_(pool) {}
  ~task_group() {
    try {
      wait();
    } catch (...) { // wait() was not called: nobody asked for the exception
    }
  }
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  /// Spawns f() as a task of this group (may allocate: std::bad_alloc).
  template <class F>
  void run(F&& f) {
    // relaxed: the task's own completion (acq_rel) orders it; wait() reads
    // pending_ only after this call returned on the same or a synchronized thread.
    pending_.fetch_add(1, std::memory_order_relaxed);
    try {
      pool_.spawn(detail::make_pool_task([this, fn = std::forward<F>(f)]() mutable {
        try {
          fn();
        } catch (...) {
          record(std::current_exception());
        }
        finish();
      }));
    } catch (...) {
      finish();
      throw;
    }
  }

  /// Returns once every task run() so far has finished, running pool tasks
  /// meanwhile; rethrows the first exception one of them threw. The group
  /// can be used again afterwards.
  void wait();

private:
  void record(std::exception_ptr e) noexcept;
  void finish() noexcept;

  work_stealing_pool& pool_;
  std::atomic<std::size_t> pending_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_; // written by the first failing task, read after pending_ is 0
};

/// f(i) for every i in [first, last) - or f(lo, hi) for sub-ranges, if f
/// takes two indices - in pieces of at most `grain` indices (0 is taken as 1).
/// Lazy binary splitting (Tzannes, Caragea, Barua and Vishkin, PPoPP 2010): a
/// worker halves its range and offers the upper half to thieves only while
/// its own deque is empty - while others took what it offered before;
/// otherwise it runs `grain` indices and looks again. A loop thus makes about
/// as many tasks as there are steals, not (last - first) / grain. Called from
/// outside the pool it splits eagerly. If f throws, parallel_for rethrows
/// one exception f threw (the calling thread's own if it threw one, else the
/// first a task threw), and only once every task the loop spawned has
/// finished: the pieces handed out before still run, the rest of the piece
/// that threw does not.
template <class F>
void parallel_for(work_stealing_pool& pool, std::size_t first, std::size_t last, std::size_t grain,
                  F f) {
  if (grain == 0) grain = 1;
  auto run_piece = [&f](std::size_t lo, std::size_t hi) {
    if constexpr (std::is_invocable_v<F&, std::size_t, std::size_t>)
      f(lo, hi);
    else
      for (std::size_t i = lo; i < hi; ++i) f(i);
  };
  // Declared before the group: should the caller's own piece throw, the
  // group's destructor waits for the tasks, which call split, before split dies.
  std::function<void(std::size_t, std::size_t)> split;
  task_group group(pool);
  split = [&](std::size_t lo, std::size_t hi) {
    while (hi - lo > grain) {
      if (pool.local_backlog() == 0) { // what we offered was taken: offer the upper half
        const std::size_t mid = lo + (hi - lo) / 2;
        group.run([&split, mid, hi] { split(mid, hi); });
        hi = mid;
      } else {
        run_piece(lo, lo + grain);
        lo += grain;
      }
    }
    run_piece(lo, hi);
  };
  if (first < last) split(first, last);
  group.wait();
}

/// combine over map(lo, hi) of pieces of at most `grain` indices of [first,
/// last); identity for an empty range. combine must be associative. If map
/// or combine throws, one of their exceptions is rethrown once every task
/// the reduction spawned has finished.
template <class T, class Map, class Combine>
T parallel_reduce(work_stealing_pool& pool, std::size_t first, std::size_t last, std::size_t grain,
                  T identity, Map map, Combine combine) {
  if (grain == 0) grain = 1;
  if (first >= last) return identity;
  std::function<T(std::size_t, std::size_t)> reduce = [&](std::size_t lo, std::size_t hi) -> T {
    if (hi - lo <= grain) return map(lo, hi);
    const std::size_t mid = lo + (hi - lo) / 2;
    T right = identity;
    task_group group(pool);
    group.run([&] { right = reduce(mid, hi); });
    T left = reduce(lo, mid);
    group.wait();
    return combine(std::move(left), std::move(right));
  };
  return reduce(first, last);
}

} // namespace lfcore
