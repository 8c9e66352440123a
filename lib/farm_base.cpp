// lib/farm_base.cpp - the type-independent half of lfcore::farm.
#include "lfcore/farm_base.hpp"

#include <stdexcept>

namespace lfcore {

farm_base::farm_base(const farm_options& options)
    : options_(options), max_workers_(options.workers), active_(options.workers),
      pinning_(options.pinning) {
  if (options.workers == 0) throw std::invalid_argument("lfcore::farm: workers must be at least 1");
  if (options.capacity == 0)
    throw std::invalid_argument("lfcore::farm: capacity must be at least 1");
  if (options.prefetch == 0)
    throw std::invalid_argument("lfcore::farm: prefetch must be at least 1");
  if (options.result_latency < std::chrono::microseconds(1))
    throw std::invalid_argument("lfcore::farm: result_latency must be at least 1 us");
  (void)cpu_for_worker(pinning_, 0); // throws now for a list without CPUs
  detail::asymmetric_fence::init();  // wake() and wait_until_ready() pair light() with heavy()
  controls_.reserve(max_workers_);
  for (unsigned i = 0; i < max_workers_; ++i)
    controls_.push_back(std::make_unique<worker_control>());
}

unsigned farm_base::set_active_workers(unsigned n) noexcept {
  if (n < 1) n = 1;
  if (n > max_workers_) n = max_workers_;
  // relaxed: the emitter re-reads it before every send; the notify below
  // (a fence) reaches it if it sleeps waiting for room among the old set.
  active_.store(n, std::memory_order_relaxed);
  emitter_wake_.notify_all();
  return n;
}

void farm_base::repin(const pin_policy& policy) {
  (void)cpu_for_worker(policy, 0); // validate before changing anything
  {
    const std::lock_guard<std::mutex> lock(pin_mutex_);
    pinning_ = policy;
  }
  pin_epoch_.fetch_add(1, std::memory_order_relaxed); // threads re-pin under pin_mutex_
  wake_all();                                         // sleepers re-pin when they wake
}

void farm_base::pin_self(unsigned slot, unsigned& epoch) {
  const std::lock_guard<std::mutex> lock(pin_mutex_);
  // relaxed: repin() bumps the epoch after it changed the policy, so an old
  // epoch read here with the new policy only makes us re-pin once more.
  epoch = pin_epoch_.load(std::memory_order_relaxed);
  if (const std::optional<unsigned> cpu = cpu_for_worker(pinning_, slot))
    pin_current_thread(*cpu); // refused (e.g. a CPU outside our set): run unpinned
}

farm_sensors farm_base::sensors() const {
  farm_sensors s;
  s.time = clock::now();
  // relaxed throughout: each counter is an estimate; they are not a consistent cut.
  s.arrivals = emitter_->arrivals.load(std::memory_order_relaxed);
  s.emitter_blocked_ns = emitter_->blocked_ns.load(std::memory_order_relaxed);
  s.active_workers = active_.load(std::memory_order_relaxed);
  s.running = running_.load(std::memory_order_relaxed);
  s.workers.resize(max_workers_);
  std::uint64_t tasks = 0;
  for (unsigned i = 0; i < max_workers_; ++i) {
    const worker_control& c = *controls_[i];
    farm_worker_sensors& w = s.workers[i];
    w.tasks = c.tasks.load(std::memory_order_relaxed);
    w.busy_ns = c.busy_ns.load(std::memory_order_relaxed);
    w.sent = c.sent.load(std::memory_order_relaxed);
    w.queued = w.sent > w.tasks ? w.sent - w.tasks : 0;
    w.active = i < s.active_workers;
    tasks += w.tasks;
  }
  s.completed = collecting_.load(std::memory_order_relaxed)
                    ? completed_->load(std::memory_order_relaxed)
                    : tasks;
  return s;
}

void farm_base::fail(std::exception_ptr e) noexcept {
  if (!failed_.exchange(true, std::memory_order_acq_rel)) error_ = std::move(e); // first one wins
  stop_.store(true, std::memory_order_relaxed); // the notifies below fence it
  // Every sleeper, workers included: a worker may wait for room in its
  // output after the emitter ended, and the collector, its only other
  // waker, has just thrown (tests/model/farm.pml, scenario 7, mutant 9).
  wake_all();
}

void farm_base::wake_all() noexcept {
  emitter_wake_.notify_all();
  collector_wake_.notify_all();
  for (auto& c : controls_) c->wake.notify_all();
}

void farm_base::begin_run(bool collecting) {
  if (running_.exchange(true, std::memory_order_acquire))
    throw std::logic_error("lfcore::farm: run_and_wait called while the farm runs");
  stop_.store(false, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  collecting_.store(collecting, std::memory_order_relaxed);
  // The threads start after this: std::thread's constructor orders these stores.
}

void farm_base::end_run() {
  // The threads have joined: their writes are visible.
  std::exception_ptr e = std::move(error_);
  error_ = nullptr;
  running_.store(false, std::memory_order_release);
  if (e) std::rethrow_exception(e);
}

} // namespace lfcore
