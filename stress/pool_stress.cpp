// Stress for work_stealing_pool: many short-lived task groups on the stack
// (the pattern whose last-decrement race TSan found), nested waits from
// workers and from outside, and pools created and destroyed while busy.
// Every task must run exactly once. And short histories of the Chase-Lev
// deque checked for linearizability. LFCORE_STRESS_SCALE=N multiplies the work.
#include "../tests/linearizability.hpp"

#include "scale.hpp"
#include <lfcore/chase_lev_deque.hpp>
#include <lfcore/work_stealing_pool.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
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

namespace {

// A double-ended queue as a sequential object: the owner pushes and pops at
// the back, thieves steal at the front. An empty pop or steal must find it
// empty; a steal that lost a race changes nothing and may happen any time.
struct deque_spec {
  using state = std::vector<std::uint64_t>; // front (oldest) first
  using state_hash = test::sequence_hash;
  enum kind { push, pop, steal };
  struct op {
    kind what;
    lfcore::steal_status status; // pop: success or empty
    std::uint64_t value;         // pushed, popped or stolen
  };
  static std::optional<state> apply(state d, const op& o) {
    if (o.what == push) {
      d.push_back(o.value);
      return d;
    }
    switch (o.status) {
    case lfcore::steal_status::lost_race:
      return d;
    case lfcore::steal_status::empty:
      return d.empty() ? std::optional<state>(d) : std::nullopt;
    case lfcore::steal_status::success:
      if (d.empty()) return std::nullopt;
      if (o.what == pop) {
        if (d.back() != o.value) return std::nullopt;
        d.pop_back();
      } else {
        if (d.front() != o.value) return std::nullopt;
        d.erase(d.begin());
      }
      return d;
    }
    return std::nullopt;
  }
  static std::string describe(const op& o) {
    char s[64];
    const char* names[] = {"push", "pop", "steal"};
    const char* outcome = o.status == lfcore::steal_status::success ? ""
                          : o.status == lfcore::steal_status::empty ? " -> empty"
                                                                    : " -> lost a race";
    std::snprintf(s, sizeof s, "%s %llu%s", names[o.what],
                  static_cast<unsigned long long>(o.value), outcome);
    return s;
  }
};

} // namespace

// The owner pushes and pops on a deque of 2 slots (so it grows, and thieves
// read arrays the owner retires) while three thieves steal; each history must
// be linearizable.
TEST(PoolStress, ChaseLevDequeHistoriesAreLinearizable) {
  constexpr int thieves = 3, owner_ops = 16, steals = 12;
  const long rounds = lfcore_stress::scaled(2000, 4);
  for (long round = 0; round < rounds; ++round) {
    lfcore::chase_lev_deque<std::uint64_t> d(2);
    test::recorder<deque_spec::op> log(thieves + 1);
    std::vector<std::thread> pool;
    pool.emplace_back([&] { // the owner
      std::mt19937 rng(static_cast<unsigned>(round));
      log.start();
      for (std::uint64_t i = 1; i <= owner_ops; ++i)
        log.record(0, [&]() -> deque_spec::op {
          if (rng() % 5 < 3) {
            d.push(i);
            return {deque_spec::push, lfcore::steal_status::success, i};
          }
          const std::optional<std::uint64_t> v = d.pop();
          return {deque_spec::pop, v ? lfcore::steal_status::success : lfcore::steal_status::empty,
                  v.value_or(0)};
        });
    });
    for (int t = 1; t <= thieves; ++t)
      pool.emplace_back([&, t] {
        lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
        log.start();
        for (int i = 0; i < steals; ++i)
          log.record(t, [&]() -> deque_spec::op {
            const lfcore::steal_result<std::uint64_t> r = d.steal(hp);
            return {deque_spec::steal, r.status, r.value};
          });
      });
    for (auto& th : pool) th.join();
    std::string why;
    if (!test::linearizability_checker<deque_spec>::check(log.history(), {}, &why))
      FAIL() << "round " << round << ": " << why;
  }
}
