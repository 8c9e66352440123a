#include <lfcore/topology.hpp>
#include <lfcore/work_stealing_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

using lfcore::pin_policy;
using lfcore::pinning;

TEST(Topology, DiscoversTheMachine) {
  const lfcore::topology_info& t = lfcore::topology();
  std::printf("topology: %s\n", t.describe().c_str());
  EXPECT_GE(t.hardware_threads, t.cores);
  EXPECT_GE(t.cores, t.packages);
  ASSERT_EQ(t.compact_order.size(), t.hardware_threads);
  // Both orders are the same set of CPUs, each once.
  std::vector<unsigned> a = t.compact_order, b = t.scatter_order;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::set<unsigned>(a.begin(), a.end()).size(), a.size());
#if defined(LFCORE_EXPECT_HWLOC)
  EXPECT_TRUE(t.from_hwloc);
#elif defined(LFCORE_EXPECT_NO_HWLOC)
  // The fallback: the CPUs this process may use, in number order, each a core.
  EXPECT_FALSE(t.from_hwloc);
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  std::vector<unsigned> cpus;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  EXPECT_EQ(t.compact_order, cpus);
  EXPECT_EQ(t.scatter_order, cpus);
  EXPECT_EQ(t.cores, t.hardware_threads);
  EXPECT_NE(t.describe().find("(OS: no hwloc)"), std::string::npos);
#endif
  EXPECT_EQ(&lfcore::topology(), &t); // discovered once
}

TEST(Topology, WorkersWrapAroundTheCpus) {
  const auto& order = lfcore::topology().compact_order;
  const pin_policy compact{pinning::compact, {}};
  for (unsigned w = 0; w < 3 * order.size(); ++w)
    EXPECT_EQ(lfcore::cpu_for_worker(compact, w), order[w % order.size()]);
  EXPECT_EQ(lfcore::cpu_for_worker(pin_policy{}, 5), std::nullopt);
  EXPECT_EQ(lfcore::cpu_for_worker(pin_policy{pinning::list, {7, 3}}, 3), 3u);
  EXPECT_THROW(lfcore::cpu_for_worker(pin_policy{pinning::list, {}}, 0), std::invalid_argument);
  EXPECT_THROW(lfcore::work_stealing_pool(2, pin_policy{pinning::list, {}}), std::invalid_argument);
}

TEST(Topology, PinningMovesTheThread) {
  const unsigned cpu = lfcore::topology().compact_order.back();
  int seen = -1;
  std::thread([&] {
    if (lfcore::pin_current_thread(cpu)) seen = sched_getcpu();
  }).join();
  EXPECT_EQ(seen, static_cast<int>(cpu));
  EXPECT_FALSE(lfcore::pin_current_thread(1u << 20)); // no such CPU
}

// Every worker pinned to one CPU: every task runs there, and oversubscribed
// workers (4 on one CPU) still finish the work.
TEST(Topology, PoolWorkersRunWherePinned) {
  const unsigned cpu = lfcore::topology().compact_order.front();
  lfcore::work_stealing_pool pool(4, pin_policy{pinning::list, {cpu}});
  std::mutex m;
  std::set<int> cpus;
  pool.submit([&] { // inside the pool: the submitting thread (not pinned) does not help
        lfcore::parallel_for(pool, 0, 10'000, 10, [&](std::size_t) {
          const int c = sched_getcpu();
          std::lock_guard<std::mutex> lock(m);
          cpus.insert(c);
        });
      })
      .get();
  EXPECT_EQ(cpus, std::set<int>{static_cast<int>(cpu)});
  lfcore::work_stealing_pool scattered(3, pin_policy{pinning::scatter, {}});
  EXPECT_EQ(scattered.submit([] { return 1; }).get(), 1);
}
