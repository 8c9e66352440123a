// lib/work_stealing_pool.cpp - the workers' loop, stealing and waiting
// (design: work_stealing_pool.hpp).
#include "lfcore/work_stealing_pool.hpp"

#include "lfcore/detail/asymmetric_fence.hpp"
#include "lfcore/detail/fence.hpp"

namespace lfcore {

struct work_stealing_pool::worker {
  worker(work_stealing_pool& p, unsigned i) : pool(p), index(i) {}
  work_stealing_pool& pool;
  const unsigned index;
  chase_lev_deque<detail::pool_task*> deque;
  hazard_pointer steal_hp = make_hazard_pointer(); // for steals by this worker
  std::thread thread;
};

thread_local work_stealing_pool::worker* work_stealing_pool::current_worker_ = nullptr;

namespace {

// Spins of an idle worker (each a full search) before it parks.
constexpr int idle_spins = stress_build ? 1 : 64;

// Victim choice: a per-thread xorshift32.
std::uint32_t next_random() noexcept {
  static thread_local std::uint32_t x =
      0x9E3779B9u ^ static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&x) >> 4);
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}
} // namespace

work_stealing_pool::work_stealing_pool(unsigned threads, pin_policy pin) : pin_(std::move(pin)) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  detail::asymmetric_fence::init(); // task groups pair light() with heavy()
  (void)cpu_for_worker(pin_, 0); // throws now, not in a worker, for a list without CPUs
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.push_back(std::make_unique<worker>(*this, i));
  // Threads start only once every worker exists: they steal from each other.
  try {
    for (auto& w : workers_) w->thread = std::thread([this, &w = *w] { worker_main(w); });
  } catch (...) { // std::system_error: the OS refused a thread
    stop_and_join();
    throw;
  }
}

work_stealing_pool::~work_stealing_pool() {
  stop_and_join();
}

void work_stealing_pool::stop_and_join() noexcept {
  // [pool.stop] release: pairs with the workers' acquire; a worker exits only
  // after a search that found nothing, so everything queued before runs.
  stopping_.store(true, std::memory_order_release);
  idle_.notify_all();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

work_stealing_pool* work_stealing_pool::current() noexcept {
  return current_worker_ != nullptr ? &current_worker_->pool : nullptr;
}

std::size_t work_stealing_pool::local_backlog() const noexcept {
  const worker* self = current_worker_;
  return self != nullptr && &self->pool == this ? self->deque.size_approx() : 0;
}

void work_stealing_pool::spawn(detail::pool_task* t) {
  worker* self = current_worker_;
  if (self != nullptr && &self->pool == this) {
    try {
      self->deque.push(t);
    } catch (...) { // growth failed: the task was not queued
      t->drop(t);
      throw;
    }
    // Only a hint: see the header (the spawning worker runs t if nobody wakes).
    if (idle_.may_have_waiters()) idle_.notify_one();
  } else {
    try {
      injection_.push(t);
    } catch (...) {
      t->drop(t);
      throw;
    }
    injected_.fetch_add(1, std::memory_order_relaxed); // relaxed: ordered by notify's fence
    idle_.notify_one(); // nobody in the pool may know about t: always wake one
  }
}

detail::pool_task* work_stealing_pool::find_task(worker* w) {
  if (w != nullptr)
    if (std::optional<detail::pool_task*> own = w->deque.pop()) return *own;
  detail::pool_task* t = nullptr;
  // relaxed: a hint; a task pushed meanwhile is found by the next search.
  if (injected_.load(std::memory_order_relaxed) > 0 && injection_.try_pop(t)) {
    injected_.fetch_sub(1, std::memory_order_relaxed); // relaxed: a count, read as a hint
    return t;
  }
  const std::size_t n = workers_.size();
  if (n == 0 || (n == 1 && w != nullptr)) return nullptr;
  // One round over the other workers from a random start; a lost race means
  // work was there: go round again.
  hazard_pointer local;
  hazard_pointer& hp = w != nullptr ? w->steal_hp : (local = make_hazard_pointer());
  for (bool retry = true; retry;) {
    retry = false;
    const std::size_t start = next_random() % n;
    for (std::size_t k = 0; k < n; ++k) {
      worker& victim = *workers_[(start + k) % n];
      if (&victim == w) continue;
      const steal_result<detail::pool_task*> r = victim.deque.steal(hp);
      if (r.status == steal_status::success) return r.value;
      if (r.status == steal_status::lost_race) retry = true;
    }
  }
  return nullptr;
}

bool work_stealing_pool::work_visible() const noexcept {
  if (injected_.load(std::memory_order_relaxed) > 0) return true; // relaxed: after a fence
  for (const auto& w : workers_)
    if (!w->deque.empty_approx()) return true;
  return false;
}

bool work_stealing_pool::run_one() {
  worker* self = current_worker_;
  detail::pool_task* t = find_task(self != nullptr && &self->pool == this ? self : nullptr);
  if (t == nullptr) return false;
  t->run_and_delete(t);
  return true;
}

void work_stealing_pool::worker_main(worker& w) {
  current_worker_ = &w;
  if (const std::optional<unsigned> cpu = cpu_for_worker(pin_, w.index))
    pin_current_thread(*cpu); // refused: run unpinned (documented)
  for (;;) {
    detail::pool_task* t = find_task(&w);
    for (int spin = 0; t == nullptr && spin < idle_spins; ++spin) {
      std::this_thread::yield(); // two cores, more workers: let the others run
      t = find_task(&w);
    }
    if (t != nullptr) {
      t->run_and_delete(t);
      continue;
    }
    // A full fence: the checks below read after the announcement ([ec.announce]).
    const eventcount::key_type key = idle_.prepare_wait();
    if (work_visible()) {
      idle_.cancel_wait();
      continue;
    }
    // acquire: pairs with [pool.stop].
    if (stopping_.load(std::memory_order_acquire)) {
      idle_.cancel_wait();
      // A task taken here is ours to run: it is in no deque any more, and a
      // group may be waiting for it (dropping it hung the destructor).
      if (detail::pool_task* last = find_task(&w)) {
        last->run_and_delete(last);
        continue;
      }
      if (!work_visible()) break;
      continue; // something is still queued: search again
    }
    idle_.wait(key);
  }
  current_worker_ = nullptr;
}

// ------------------------------------------------------------- task_group

void task_group::record(std::exception_ptr e) noexcept {
  // The first failure wins; the exchange orders error_ before pending_'s
  // decrement in finish() (release), which wait() acquires.
  if (!failed_.exchange(true, std::memory_order_relaxed)) error_ = std::move(e);
}

void task_group::finish() noexcept {
  // Read before the decrement: once pending_ is 0, wait() may return and the
  // group be destroyed under us (TSan found this); the pool outlives it.
  work_stealing_pool& pool = pool_;
  // [group.done] acq_rel: release publishes the task's effects (and error_) to
  // wait(); the last one wakes a waiter parked on the pool's eventcount.
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // [group.light] pairs with [group.heavy]: either the waiter's check sees
    // pending_ at 0, or this load sees the waiter announced. A group ends on
    // every fork, a waiter parks rarely: the fence cost goes to the waiter.
    detail::asymmetric_fence::light();
    if (pool.idle_.may_have_waiters()) pool.idle_.notify_all();
  }
}

void task_group::wait() {
  backoff pause;
  // acquire: pairs with [group.done].
  while (pending_.load(std::memory_order_acquire) != 0) {
    if (pool_.run_one()) {
      pause.reset();
      continue;
    }
    if (!pause.is_yielding()) {
      pause.pause();
      continue;
    }
    const eventcount::key_type key = pool_.idle_.prepare_wait();
    detail::asymmetric_fence::heavy(); // [group.heavy]: the announce before the checks
    if (pending_.load(std::memory_order_acquire) == 0 || pool_.work_visible()) {
      pool_.idle_.cancel_wait();
      continue;
    }
    pool_.idle_.wait(key); // woken by the last finish() (notify_all) or new work
  }
  if (failed_.load(std::memory_order_relaxed)) { // relaxed: ordered by the acquire above
    std::exception_ptr e = std::move(error_);
    error_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    std::rethrow_exception(e);
  }
}

} // namespace lfcore
