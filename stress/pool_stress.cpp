// Stress for work_stealing_pool: many short-lived task groups on the stack
// (the pattern whose last-decrement race TSan found), nested waits from
// workers and from outside, and pools created and destroyed while busy.
// Every task must run exactly once. LFCORE_STRESS_SCALE=N multiplies the work.
#include "scale.hpp"
#include <lfcore/work_stealing_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

long scaled(long n) {
  return lfcore_stress::scaled(n, 10);
}

// A binary tree of task groups, each on the stack of the task that waits.
void tree(lfcore::work_stealing_pool& pool, int depth, std::atomic<long>& ran) {
  ran.fetch_add(1, std::memory_order_relaxed);
  if (depth == 0) return;
  lfcore::task_group g(pool);
  g.run([&pool, depth, &ran] { tree(pool, depth - 1, ran); });
  g.run([&pool, depth, &ran] { tree(pool, depth - 1, ran); });
  g.wait();
}

} // namespace

TEST(PoolStress, ShortLivedGroupsExactlyOnce) {
  lfcore::work_stealing_pool pool(8);
  const long rounds = scaled(3000);
  for (long r = 0; r < rounds; ++r) {
    std::atomic<long> ran{0};
    const int depth = 8 + static_cast<int>(r % 4);
    if (r % 2 == 0)
      pool.submit([&] { tree(pool, depth, ran); }).get(); // waits inside the pool
    else
      tree(pool, depth, ran); // waits from outside, helping
    ASSERT_EQ(ran.load(), (2L << depth) - 1) << "round " << r;
  }
}

TEST(PoolStress, ExternalThreadsAndPoolChurn) {
  const long rounds = scaled(300);
  for (long r = 0; r < rounds; ++r) {
    std::atomic<long> ran{0};
    {
      lfcore::work_stealing_pool pool(static_cast<unsigned>(1 + r % 4));
      std::vector<std::thread> outside;
      for (int t = 0; t < 3; ++t)
        outside.emplace_back([&] {
          for (int k = 0; k < 20; ++k) (void)pool.submit([&] { tree(pool, 5, ran); });
        });
      for (auto& t : outside) t.join();
    } // destroyed while busy: drains
    ASSERT_EQ(ran.load(), 3L * 20 * 63) << "round " << r;
  }
}
