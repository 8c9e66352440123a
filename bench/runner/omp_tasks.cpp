// bench/runner/omp_tasks.cpp - the OpenMP contenders of sweeps_pool.cpp,
// compiled with -fopenmp (GCC's libgomp). Without OpenMP, available() is false.
#include "farm_work.hpp"

#include <atomic>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace runner {
int uts_children(std::uint64_t id, int depth);
std::uint64_t uts_child(std::uint64_t id, int k);
} // namespace runner

namespace runner::omp {
namespace {
long fib_task(int n, int cutoff) {
  if (n < 2) return n;
  if (n <= cutoff) return fib_task(n - 1, cutoff) + fib_task(n - 2, cutoff);
  long a = 0;
#pragma omp task shared(a) firstprivate(n, cutoff)
  a = fib_task(n - 1, cutoff);
  const long b = fib_task(n - 2, cutoff);
#pragma omp taskwait
  return a + b;
}
void uts_task(std::uint64_t id, int depth, std::atomic<long>& nodes) {
  nodes.fetch_add(1, std::memory_order_relaxed);
  const int c = uts_children(id, depth);
  for (int k = 0; k < c; ++k) {
#pragma omp task firstprivate(id, depth, k) shared(nodes)
    uts_task(uts_child(id, k), depth + 1, nodes);
  }
#pragma omp taskwait
}
} // namespace

#if defined(_OPENMP)
bool available() {
  return true;
}
#else
bool available() {
  return false;
}
#endif

long fib(int threads, int n, int cutoff) {
  long r = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  r = fib_task(n, cutoff);
  return r;
}

long uts(int threads, std::uint64_t roots) {
  std::atomic<long> nodes{0};
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    for (std::uint64_t r = 1; r <= roots; ++r) {
#pragma omp task firstprivate(r) shared(nodes)
      uts_task(r, 0, nodes);
    }
#pragma omp taskwait
  }
  return nodes.load();
}

std::uint64_t sum_for(int threads, std::uint64_t n, std::uint64_t grain) {
  std::uint64_t sum = 0;
  const long long count = static_cast<long long>(n);
#pragma omp parallel for num_threads(threads) schedule(dynamic, grain) reduction(+ : sum)
  for (long long i = 0; i < count; ++i) sum += static_cast<std::uint64_t>(i) * 3 + 1;
  return sum;
}

// The farm sweep's OpenMP contender: one thread creates a task per item.
std::uint64_t farm(int threads, std::uint64_t tasks, std::uint64_t iterations) {
  std::uint64_t sum = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
  {
    for (std::uint64_t i = 0; i < tasks; ++i) {
#pragma omp task firstprivate(i) shared(sum)
      {
        const std::uint64_t r = farm_work(i, iterations);
#pragma omp atomic
        sum += r;
      }
    }
#pragma omp taskwait
  }
  return sum;
}

} // namespace runner::omp
