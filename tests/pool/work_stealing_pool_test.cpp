#include <lfcore/work_stealing_pool.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

using lfcore::task_group;
using lfcore::work_stealing_pool;

namespace {

// fib with a task per call; counts the calls (2 fib(n+1) - 1 of them).
long fib(work_stealing_pool& pool, int n, std::atomic<long>& calls) {
  calls.fetch_add(1, std::memory_order_relaxed);
  if (n < 2) return n;
  long a = 0;
  task_group g(pool);
  g.run([&] { a = fib(pool, n - 1, calls); });
  const long b = fib(pool, n - 2, calls);
  g.wait();
  return a + b;
}
long fib_sequential(int n) {
  return n < 2 ? n : fib_sequential(n - 1) + fib_sequential(n - 2);
}

// N-queens: a task per placement of the first rows.
int queens(work_stealing_pool& pool, int n, int row, std::uint32_t cols, std::uint32_t d1,
           std::uint32_t d2) {
  if (row == n) return 1;
  std::vector<int> counts(static_cast<std::size_t>(n), 0);
  task_group g(pool);
  for (int c = 0; c < n; ++c) {
    const std::uint32_t bit = 1u << c, a = 1u << (row + c), b = 1u << (row - c + n);
    if ((cols & bit) || (d1 & a) || (d2 & b)) continue;
    auto place = [&, c, bit, a, b] {
      counts[static_cast<std::size_t>(c)] = queens(pool, n, row + 1, cols | bit, d1 | a, d2 | b);
    };
    if (row < 3)
      g.run(place);
    else
      place();
  }
  g.wait();
  return std::accumulate(counts.begin(), counts.end(), 0);
}

// An unbalanced tree (UTS-like): a node's child count comes from a hash of
// its id, most nodes are leaves and a few have many children.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}
int children(std::uint64_t id, int depth) {
  if (depth > 12) return 0;
  const std::uint64_t h = mix(id);
  return (h % 100) < 30 ? static_cast<int>(h % 7) + 1 : 0;
}
long tree_size_sequential(std::uint64_t id, int depth) {
  long n = 1;
  for (int k = 0; k < children(id, depth); ++k)
    n += tree_size_sequential(id * 8 + k + 1, depth + 1);
  return n;
}
void tree_walk(work_stealing_pool& pool, std::uint64_t id, int depth, std::atomic<long>& nodes) {
  nodes.fetch_add(1, std::memory_order_relaxed);
  task_group g(pool);
  for (int k = 0; k < children(id, depth); ++k)
    g.run([&pool, &nodes, id, depth, k] { tree_walk(pool, id * 8 + k + 1, depth + 1, nodes); });
  g.wait();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

} // namespace

class PoolSizes : public ::testing::TestWithParam<unsigned> {};
INSTANTIATE_TEST_SUITE_P(Workers, PoolSizes, ::testing::Values(1u, 2u, 4u, 8u));

TEST_P(PoolSizes, FibRunsEveryTaskOnce) {
  work_stealing_pool pool(GetParam());
  EXPECT_EQ(pool.size(), GetParam());
  const int n = lfcore::stress_build ? 16 : 22;
  std::atomic<long> calls{0};
  long result = 0;
  pool.submit([&] { result = fib(pool, n, calls); }).get();
  EXPECT_EQ(result, fib_sequential(n));
  EXPECT_EQ(calls.load(), 2 * fib_sequential(n + 1) - 1);
}

TEST_P(PoolSizes, NQueensFromOutsideThePool) {
  work_stealing_pool pool(GetParam());
  EXPECT_EQ(queens(pool, 8, 0, 0, 0, 0), 92); // the caller waits (and helps) from outside
}

TEST_P(PoolSizes, UnbalancedTree) {
  work_stealing_pool pool(GetParam());
  std::atomic<long> nodes{0};
  task_group g(pool);
  for (std::uint64_t root = 1; root <= 64; ++root)
    g.run([&, root] { tree_walk(pool, root * 1000003, 0, nodes); });
  g.wait();
  long expected = 0;
  for (std::uint64_t root = 1; root <= 64; ++root)
    expected += tree_size_sequential(root * 1000003, 0);
  EXPECT_EQ(nodes.load(), expected);
  EXPECT_GT(expected, 64); // the tree is not trivial
}

TEST_P(PoolSizes, ParallelForAndReduce) {
  work_stealing_pool pool(GetParam());
  const std::size_t n = lfcore::stress_build ? 20'000 : 1'000'000;
  std::vector<std::atomic<int>> hits(n);
  lfcore::parallel_for(pool, 0, n, 1000, [&](std::size_t i) { hits[i].fetch_add(1); });
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  // The chunk form, from inside the pool (lazy splitting): pieces tile the range.
  std::atomic<std::size_t> covered{0}, too_big{0};
  pool.submit([&] {
        lfcore::parallel_for(pool, 3, n, 777, [&](std::size_t lo, std::size_t hi) {
          for (std::size_t i = lo; i < hi; ++i) hits[i].fetch_add(1);
          covered += hi - lo;
          if (hi - lo > 777) too_big += 1;
        });
      })
      .get();
  EXPECT_EQ(covered.load(), n - 3);
  EXPECT_EQ(too_big.load(), 0u);
  for (std::size_t i = 3; i < n; ++i) ASSERT_EQ(hits[i].load(), 2) << i;
  const std::uint64_t sum = lfcore::parallel_reduce(
      pool, 0, n, 1000, std::uint64_t(0),
      [](std::size_t lo, std::size_t hi) {
        std::uint64_t s = 0;
        for (std::size_t i = lo; i < hi; ++i) s += i;
        return s;
      },
      [](std::uint64_t a, std::uint64_t b) { return a + b; });
  EXPECT_EQ(sum, std::uint64_t(n) * (n - 1) / 2);
  EXPECT_EQ(lfcore::parallel_reduce(
                pool, 5, 5, 1, 17, [](std::size_t, std::size_t) { return 0; },
                [](int a, int b) { return a + b; }),
            17); // empty range: the identity
}

// An exception from f leaves parallel_for (or parallel_reduce) only after
// every task it spawned has finished: none may call f, or use the loop's own
// state, afterwards. Index 0 throws in the caller's own piece (from outside
// the pool the caller keeps the lowest piece after offering the upper
// halves), index 9,999 in a piece a worker took.
TEST_P(PoolSizes, ParallelLoopsRethrowOnlyAfterTheirTasksFinish) {
  for (const bool reduce : {false, true})
    for (const std::size_t throwing_index : {std::size_t(0), std::size_t(9'999)}) {
      std::atomic<bool> returned{false};
      std::atomic<int> calls_after_return{0};
      auto visit = [&](std::size_t i) {
        if (returned.load()) calls_after_return.fetch_add(1);
        if (i == throwing_index) throw std::runtime_error("f");
        if (i % 10 == 5) std::this_thread::yield();
      };
      {
        work_stealing_pool pool(GetParam());
        if (reduce)
          EXPECT_THROW(lfcore::parallel_reduce(
                           pool, 0, 10'000, 10, 0,
                           [&](std::size_t lo, std::size_t hi) {
                             for (std::size_t i = lo; i < hi; ++i) visit(i);
                             return 0;
                           },
                           [](int a, int b) { return a + b; }),
                       std::runtime_error);
        else
          EXPECT_THROW(lfcore::parallel_for(pool, 0, 10'000, 10, visit), std::runtime_error);
        returned.store(true);
      } // ~work_stealing_pool runs whatever is still queued
      EXPECT_EQ(calls_after_return.load(), 0) << reduce << " " << throwing_index;
    }
}

TEST(WorkStealingPool, SubmitReturnsValuesAndExceptions) {
  work_stealing_pool pool(2);
  auto f = pool.submit([] { return 6 * 7; });
  auto g = pool.submit([]() -> int { throw std::runtime_error("task failed"); });
  EXPECT_EQ(f.get(), 42);
  EXPECT_THROW(g.get(), std::runtime_error);
  EXPECT_EQ(work_stealing_pool::current(), nullptr);
  EXPECT_EQ(pool.submit([] { return work_stealing_pool::current(); }).get(), &pool);
}

TEST(WorkStealingPool, TaskGroupRethrowsAndStillRunsTheRest) {
  work_stealing_pool pool(2);
  std::atomic<int> ran{0};
  task_group g(pool);
  for (int i = 0; i < 100; ++i)
    g.run([&, i] {
      ran.fetch_add(1);
      if (i == 37) throw std::logic_error("37");
    });
  EXPECT_THROW(g.wait(), std::logic_error);
  EXPECT_EQ(ran.load(), 100);
  g.run([&] { ran.fetch_add(1); }); // reusable, error cleared
  EXPECT_NO_THROW(g.wait());
  EXPECT_EQ(ran.load(), 101);
}

// A group destroyed without wait() waits for its tasks and drops what one
// threw: a destructor must not throw.
TEST(WorkStealingPool, TaskGroupDestructorWaitsAndDropsTheException) {
  work_stealing_pool pool(2);
  std::atomic<int> ran{0};
  {
    task_group g(pool);
    for (int i = 0; i < 100; ++i)
      g.run([&, i] {
        std::this_thread::yield();
        ran.fetch_add(1);
        if (i % 10 == 0) throw std::logic_error("dropped");
      });
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(WorkStealingPool, ManyExternalSubmitters) {
  work_stealing_pool pool(2);
  std::atomic<long> sum{0};
  std::vector<std::thread> submitters;
  constexpr int per_thread = lfcore::stress_build ? 500 : 5000;
  for (int t = 0; t < 4; ++t)
    submitters.emplace_back([&] {
      std::vector<std::future<void>> fs;
      for (int i = 1; i <= per_thread; ++i) fs.push_back(pool.submit([&, i] { sum.fetch_add(i); }));
      for (auto& f : fs) f.get();
    });
  for (auto& t : submitters) t.join();
  EXPECT_EQ(sum.load(), 4L * per_thread * (per_thread + 1) / 2);
}

TEST(WorkStealingPool, ShutdownRunsEverythingPending) {
  std::atomic<int> ran{0};
  constexpr int tasks = 2000;
  {
    work_stealing_pool pool(2);
    for (int i = 0; i < tasks; ++i)
      (void)pool.submit([&] {
        ran.fetch_add(1);
        task_group g(*work_stealing_pool::current()); // and what they spawn
        g.run([&] { ran.fetch_add(1); });
        g.wait();
      });
  } // destructor while busy
  EXPECT_EQ(ran.load(), 2 * tasks);
}

// Tasks that keep submitting while the pool is destroyed: workers reach the
// stopping check with work still arriving in the others' deques, and one
// that takes a task there must run it (dropping it lost a task and, with a
// task group waiting for it, hung the destructor). Submitted tasks are
// detached, so a lost one shows as a short count, not a hang.
namespace {
void submit_tree(work_stealing_pool& pool, int depth, std::atomic<long>& ran) {
  ran.fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) return;
  for (int child = 0; child < 2; ++child)
    (void)pool.submit([&pool, depth, &ran] { submit_tree(pool, depth - 1, ran); });
}
} // namespace

TEST(WorkStealingPool, ShutdownRunsWhatWorkersTakeOnTheWayOut) {
  for (int round = 0; round < 300; ++round) {
    std::atomic<long> ran{0};
    {
      work_stealing_pool pool(static_cast<unsigned>(2 + round % 3));
      for (int i = 0; i < 4; ++i) (void)pool.submit([&pool, &ran] { submit_tree(pool, 5, ran); });
    } // destroyed at once: most of each tree is submitted during shutdown
    ASSERT_EQ(ran.load(), 4L * 63) << "round " << round;
  }
}

TEST(WorkStealingPool, IdlePoolUsesNoCpu) {
  work_stealing_pool pool(2);
  pool.submit([] {}).get();
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // past the idle spins
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double used = process_cpu_seconds() - before;
  std::printf("idle pool of 2 workers: %.3f ms of CPU in 1 s\n", used * 1e3);
  EXPECT_LT(used, 0.01);                             // under 1% of one core
  EXPECT_EQ(pool.submit([] { return 1; }).get(), 1); // and it still wakes up
}
