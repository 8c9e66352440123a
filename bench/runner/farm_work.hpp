// bench/runner/farm_work.hpp - the task of the farm benchmarks: a given
// number of microseconds of computation, as a dependent chain of
// multiply-adds (so that a task descheduled past the core count still costs
// its full work, where a task that watches the clock would not).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace runner {

/// `iterations` steps of a linear congruential chain the compiler cannot shorten.
inline std::uint64_t farm_work(std::uint64_t seed, std::uint64_t iterations) {
  std::uint64_t x = seed | 1;
  for (std::uint64_t i = 0; i < iterations; ++i)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x >> 40;
}

/// Iterations of farm_work per microsecond on this machine (median of 5
/// measurements, taken once per process).
inline double iterations_per_us() {
  static const double rate = [] {
    std::vector<double> r;
    for (int k = 0; k < 5; ++k) {
      const auto start = std::chrono::steady_clock::now();
      volatile std::uint64_t sink = farm_work(7, 20'000'000);
      (void)sink;
      r.push_back(
          20e6 / std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
    }
    std::sort(r.begin(), r.end());
    return r[2];
  }();
  return rate;
}

} // namespace runner
