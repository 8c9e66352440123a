// bench/runner/harness.hpp - how the runner times a point.
#pragma once

#include "runner.hpp"

#include <atomic>
#include <chrono>
#include <latch>
#include <thread>
#include <vector>

namespace runner {

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
      ready.arrive_and_wait();
      body(t);
    });
  ready.arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  for (auto& t : pool) t.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace runner
