// bench/runner/sweeps_pool.cpp - lfcore::work_stealing_pool against oneTBB's
// task_group, OpenMP tasks (GCC's libgomp) and std::async.
//
// Every point builds its scheduler with the point's thread count (lfcore: a
// pool of p workers, the work submitted to it and the caller blocked on the
// future; oneTBB: a task_arena of p, which the caller joins;
// OpenMP: a parallel region of p threads, one of which spawns) and runs:
//   pool_fib_spawn  fib(n) with a task per call: pure spawn/steal/join cost;
//                   one operation = one task
//   pool_fib_cutoff fib(n) with tasks only above n - 12, sequential below:
//                   speedup of coarse tasks; one operation = one fib call
//   pool_uts        an unbalanced tree (fixed seed, UTS-like geometric
//                   fan-out): one operation = one node visited
//   pool_for        parallel_for over --items * 100 cheap iterations (grain
//                   8192); one operation = one iteration
// std::async (a thread per task) is the floor, for the cutoff fib only.
#include "harness.hpp"

#include <lfcore/work_stealing_pool.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>

#if defined(LFCORE_HAVE_TBB)
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

// OpenMP lives in its own translation unit (compiled with -fopenmp).
namespace runner::omp {
bool available();
long fib(int threads, int n, int cutoff);
long uts(int threads, std::uint64_t roots);
std::uint64_t sum_for(int threads, std::uint64_t n, std::uint64_t grain);
} // namespace runner::omp

namespace runner {
namespace {

constexpr int fib_n = 30;        // 2.7 million tasks with a task per call
constexpr int fib_cutoff_n = 36; // coarse: tasks only in the top 12 levels
constexpr int cutoff_levels = 12;
constexpr std::uint64_t uts_roots = 100000;

long fib_seq(int n) {
  return n < 2 ? n : fib_seq(n - 1) + fib_seq(n - 2);
}
long fib_calls(int n) {
  return 2 * fib_seq(n + 1) - 1;
}

// --------------------------------------------------------------- lfcore
long lf_fib(lfcore::work_stealing_pool& pool, int n, int cutoff) {
  if (n < 2) return n;
  if (n <= cutoff) return lf_fib(pool, n - 1, cutoff) + lf_fib(pool, n - 2, cutoff);
  long a = 0;
  lfcore::task_group g(pool);
  g.run([&] { a = lf_fib(pool, n - 1, cutoff); });
  const long b = lf_fib(pool, n - 2, cutoff);
  g.wait();
  return a + b;
}

} // namespace

// The tree of pool_uts, shared by every contender.
int uts_children(std::uint64_t id, int depth) {
  std::uint64_t x = id * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  if (depth > 40) return 0;
  return (x % 1000) < 230 ? 4 : 0; // binomial tree: expected 0.92 children per node
}
std::uint64_t uts_child(std::uint64_t id, int k) {
  return id * 4 + static_cast<std::uint64_t>(k) + 1;
}

namespace {

void lf_uts(lfcore::work_stealing_pool& pool, std::uint64_t id, int depth,
            std::atomic<long>& nodes) {
  nodes.fetch_add(1, std::memory_order_relaxed);
  lfcore::task_group g(pool);
  const int c = uts_children(id, depth);
  for (int k = 0; k < c; ++k)
    g.run([&pool, &nodes, id, depth, k] { lf_uts(pool, uts_child(id, k), depth + 1, nodes); });
  g.wait();
}

#if defined(LFCORE_HAVE_TBB)
long tbb_fib(int n, int cutoff) {
  if (n < 2) return n;
  if (n <= cutoff) return tbb_fib(n - 1, cutoff) + tbb_fib(n - 2, cutoff);
  long a = 0;
  tbb::task_group g;
  g.run([&] { a = tbb_fib(n - 1, cutoff); });
  const long b = tbb_fib(n - 2, cutoff);
  g.wait();
  return a + b;
}
void tbb_uts(std::uint64_t id, int depth, std::atomic<long>& nodes) {
  nodes.fetch_add(1, std::memory_order_relaxed);
  tbb::task_group g;
  const int c = uts_children(id, depth);
  for (int k = 0; k < c; ++k)
    g.run([&nodes, id, depth, k] { tbb_uts(uts_child(id, k), depth + 1, nodes); });
  g.wait();
}
#endif

long async_fib(int n, int cutoff) {
  if (n < 2) return n;
  if (n <= cutoff) return async_fib(n - 1, cutoff) + async_fib(n - 2, cutoff);
  auto a = std::async(std::launch::async, [=] { return async_fib(n - 1, cutoff); });
  const long b = async_fib(n - 2, cutoff);
  return a.get() + b;
}

template <class F>
double per_second(double work, F run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return work / s;
}

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("pool sweep: wrong result from ") + what);
}

} // namespace

std::vector<sweep> pool_sweeps(const options& opt) {
  const int spawn_n = opt.quick ? 22 : fib_n;
  const int coarse_n = opt.quick ? 30 : fib_cutoff_n;
  const std::uint64_t for_n = static_cast<std::uint64_t>(opt.items) * 100;
  const std::uint64_t roots = opt.quick ? 2000 : uts_roots;
  std::vector<sweep> out;

  // Expected results, computed once.
  const long spawn_expect = fib_seq(spawn_n);
  const long coarse_expect = fib_seq(coarse_n);

  sweep spawn{"pool_fib_spawn",
              "Pool: fib(" + std::to_string(spawn_n) + "), a task per call",
              "one task (spawn, run, join)",
              {}};
  spawn.unit_name = "M tasks/s";
  sweep coarse{"pool_fib_cutoff",
               "Pool: fib(" + std::to_string(coarse_n) + "), tasks in the top " +
                   std::to_string(cutoff_levels) + " levels",
               "one fib call",
               {}};
  coarse.unit_name = "M calls/s";
  sweep uts{"pool_uts",
            "Pool: unbalanced tree search, " + std::to_string(roots) + " roots",
            "one tree node",
            {}};
  uts.unit_name = "M nodes/s";
  sweep loop{"pool_for",
             "Pool: parallel_for over " + std::to_string(for_n) + " iterations",
             "one loop iteration (a multiply-add)",
             {}};

  const int cutoff = coarse_n - cutoff_levels;
  spawn.contenders.push_back({"lfcore work_stealing_pool", true, [=](const point& p) {
                                lfcore::work_stealing_pool pool(static_cast<unsigned>(p.threads));
                                long r = 0;
                                const double ops = per_second(double(fib_calls(spawn_n)), [&] {
                                  pool.submit([&] { r = lf_fib(pool, spawn_n, 1); }).get();
                                });
                                check(r == spawn_expect, "lfcore fib");
                                return ops;
                              }});
  coarse.contenders.push_back({"lfcore work_stealing_pool", true, [=](const point& p) {
                                 lfcore::work_stealing_pool pool(static_cast<unsigned>(p.threads));
                                 long r = 0;
                                 const double ops = per_second(double(fib_calls(coarse_n)), [&] {
                                   pool.submit([&] { r = lf_fib(pool, coarse_n, cutoff); }).get();
                                 });
                                 check(r == coarse_expect, "lfcore fib");
                                 return ops;
                               }});
  uts.contenders.push_back(
      {"lfcore work_stealing_pool", true, [=](const point& p) {
         lfcore::work_stealing_pool pool(static_cast<unsigned>(p.threads));
         std::atomic<long> nodes{0};
         const auto start = std::chrono::steady_clock::now();
         pool.submit([&] {
               lfcore::task_group g(pool);
               for (std::uint64_t r = 1; r <= roots; ++r)
                 g.run([&, r] { lf_uts(pool, r, 0, nodes); });
               g.wait();
             })
             .get();
         return double(nodes.load()) /
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
       }});
  loop.contenders.push_back(
      {"lfcore work_stealing_pool", true, [=](const point& p) {
         lfcore::work_stealing_pool pool(static_cast<unsigned>(p.threads));
         std::atomic<std::uint64_t> sum{0};
         const double ops = per_second(double(for_n), [&] {
           pool.submit([&] {
                 lfcore::parallel_for(pool, 0, for_n, 8192, [&](std::size_t lo, std::size_t hi) {
                   std::uint64_t s = 0;
                   for (std::size_t i = lo; i < hi; ++i) s += i * 3 + 1;
                   sum.fetch_add(s, std::memory_order_relaxed);
                 });
               })
               .get();
         });
         check(sum.load() == for_n * (for_n - 1) / 2 * 3 + for_n, "lfcore for");
         return ops;
       }});
#if defined(LFCORE_HAVE_TBB)
  spawn.contenders.push_back({"oneTBB task_group", false, [=](const point& p) {
                                tbb::task_arena arena(p.threads);
                                long r = 0;
                                const double ops = per_second(double(fib_calls(spawn_n)), [&] {
                                  arena.execute([&] { r = tbb_fib(spawn_n, 1); });
                                });
                                check(r == spawn_expect, "oneTBB fib");
                                return ops;
                              }});
  coarse.contenders.push_back({"oneTBB task_group", false, [=](const point& p) {
                                 tbb::task_arena arena(p.threads);
                                 long r = 0;
                                 const double ops = per_second(double(fib_calls(coarse_n)), [&] {
                                   arena.execute([&] { r = tbb_fib(coarse_n, cutoff); });
                                 });
                                 check(r == coarse_expect, "oneTBB fib");
                                 return ops;
                               }});
  uts.contenders.push_back(
      {"oneTBB task_group", false, [=](const point& p) {
         tbb::task_arena arena(p.threads);
         std::atomic<long> nodes{0};
         const auto start = std::chrono::steady_clock::now();
         arena.execute([&] {
           tbb::task_group g;
           for (std::uint64_t r = 1; r <= roots; ++r) g.run([&, r] { tbb_uts(r, 0, nodes); });
           g.wait();
         });
         return double(nodes.load()) /
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
       }});
  loop.contenders.push_back(
      {"oneTBB parallel_for", false, [=](const point& p) {
         tbb::task_arena arena(p.threads);
         std::atomic<std::uint64_t> sum{0};
         const double ops = per_second(double(for_n), [&] {
           arena.execute([&] {
             tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, for_n, 8192),
                               [&](const tbb::blocked_range<std::uint64_t>& r) {
                                 std::uint64_t s = 0;
                                 for (std::uint64_t i = r.begin(); i < r.end(); ++i) s += i * 3 + 1;
                                 sum.fetch_add(s, std::memory_order_relaxed);
                               });
           });
         });
         check(sum.load() == for_n * (for_n - 1) / 2 * 3 + for_n, "oneTBB for");
         return ops;
       }});
#endif
  if (omp::available()) {
    spawn.contenders.push_back({"OpenMP tasks (libgomp)", false, [=](const point& p) {
                                  long r = 0;
                                  const double ops = per_second(double(fib_calls(spawn_n)), [&] {
                                    r = omp::fib(p.threads, spawn_n, 1);
                                  });
                                  check(r == spawn_expect, "OpenMP fib");
                                  return ops;
                                }});
    coarse.contenders.push_back({"OpenMP tasks (libgomp)", false, [=](const point& p) {
                                   long r = 0;
                                   const double ops = per_second(double(fib_calls(coarse_n)), [&] {
                                     r = omp::fib(p.threads, coarse_n, cutoff);
                                   });
                                   check(r == coarse_expect, "OpenMP fib");
                                   return ops;
                                 }});
    uts.contenders.push_back(
        {"OpenMP tasks (libgomp)", false, [=](const point& p) {
           long nodes = 0;
           const auto start = std::chrono::steady_clock::now();
           nodes = omp::uts(p.threads, roots);
           return double(nodes) /
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
         }});
    loop.contenders.push_back({"OpenMP parallel for", false, [=](const point& p) {
                                 std::uint64_t sum = 0;
                                 const double ops = per_second(double(for_n), [&] {
                                   sum = omp::sum_for(p.threads, for_n, 8192);
                                 });
                                 check(sum == for_n * (for_n - 1) / 2 * 3 + for_n, "OpenMP for");
                                 return ops;
                               }});
  }
  coarse.contenders.push_back({"std::async (floor)", false, [=](const point&) {
                                 long r = 0;
                                 const double ops = per_second(double(fib_calls(coarse_n)), [&] {
                                   r = async_fib(coarse_n, cutoff);
                                 });
                                 check(r == coarse_expect, "std::async fib");
                                 return ops;
                               }});
  out.push_back(std::move(spawn));
  out.push_back(std::move(coarse));
  out.push_back(std::move(uts));
  out.push_back(std::move(loop));
  return out;
}

} // namespace runner
