// bench/runner/harness.hpp - how the runner times a point.
#pragma once

#include "runner.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <latch>
#include <thread>
#include <utility>
#include <vector>

namespace runner {

/// --pin: timed() and run_to_completion() pin their thread t to CPU t mod
/// the CPU count. On the 2-vCPU guest one vCPU ran memory-bound lookups 1.6x
/// as fast as the other, and an unpinned one-thread point lands on either
/// (bench/results/README.md, "Two unequal vCPUs").
inline bool pin_threads = false;
inline void pin_if_asked(int t) {
  if (!pin_threads) return;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(t) % cpus, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) // e.g. outside our cpuset
    std::fprintf(stderr, "lfcore_scalability: --pin: thread %d runs unpinned\n", t);
}

/// Runs body(thread_index, stop) on p.threads threads for p.seconds; body
/// returns its operation count. Returns operations per second.
template <class Body>
double timed(const point& p, Body body) {
  std::atomic<bool> stop{false};
  std::atomic<long long> ops{0};
  std::latch ready(p.threads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < p.threads; ++t)
    threads.emplace_back([&, t] {
      pin_if_asked(t);
      ready.arrive_and_wait();
      ops.fetch_add(body(t, stop), std::memory_order_relaxed);
    });
  ready.arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(p.seconds));
  stop.store(true, std::memory_order_relaxed);
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(ops.load()) / elapsed;
}

/// Runs body(thread_index) on `threads` threads released together. Returns
/// the seconds from the release to the end of the last one.
template <class Body>
double run_to_completion(int threads, Body body) {
  std::latch ready(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin_if_asked(t);
      ready.arrive_and_wait();
      body(t);
    });
  ready.arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  for (auto& t : pool) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// CPU time of the whole process in seconds: user + system, every thread,
/// exited ones included (getrusage(RUSAGE_SELF); Linux sums the scheduler's
/// exact run times, so the total is not tick-rounded).
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

/// A fixed-work run may report what it cost in CPU time per operation; the
/// runner takes the value after each run (NaN: the run reported nothing).
/// Beside throughput it shows what a contender burns per operation, idle
/// spinning and helper threads included, which wall time on a shared
/// machine cannot separate from the machine's noise.
inline double reported_cpu_ns_per_op = NAN;
inline void report_cpu_ns_per_op(double ns) {
  reported_cpu_ns_per_op = ns;
}
inline double take_cpu_ns_per_op() {
  return std::exchange(reported_cpu_ns_per_op, NAN);
}

} // namespace runner
