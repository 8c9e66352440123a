#include <lfcore/chase_lev_deque.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

using lfcore::chase_lev_deque;
using lfcore::steal_status;

TEST(ChaseLevDeque, OwnerIsLifoThievesAreFifo) {
  chase_lev_deque<std::uintptr_t> d(2);
  for (std::uintptr_t i = 1; i <= 100; ++i) d.push(i); // grows from 2 to 128
  EXPECT_GE(d.capacity(), 100u);
  EXPECT_EQ(d.size_approx(), 100u);
  for (std::uintptr_t i = 1; i <= 10; ++i) {
    auto r = d.steal();
    ASSERT_EQ(r.status, steal_status::success);
    EXPECT_EQ(r.value, i); // oldest first
  }
  for (std::uintptr_t i = 100; i > 10; --i) EXPECT_EQ(d.pop(), i); // newest first
  EXPECT_EQ(d.pop(), std::nullopt);
  EXPECT_EQ(d.steal().status, steal_status::empty);
  d.push(7); // usable after running empty
  EXPECT_EQ(d.pop(), 7u);
}

TEST(ChaseLevDeque, RejectsBadCapacity) {
  EXPECT_THROW(chase_lev_deque<int>(0), std::invalid_argument);
  EXPECT_THROW(chase_lev_deque<int>(1), std::invalid_argument);
  EXPECT_THROW(chase_lev_deque<int>(6), std::invalid_argument);
}

// The owner pushes (growing from 2 slots) and pops while thieves steal: each
// value is taken exactly once, by the owner or one thief.
TEST(ChaseLevDeque, EveryValueTakenExactlyOnce) {
  constexpr std::uintptr_t n = lfcore::stress_build ? 20'000 : 400'000;
  chase_lev_deque<std::uintptr_t> d(2);
  std::vector<std::atomic<int>> taken(n + 1);
  std::atomic<bool> done{false};
  std::vector<std::thread> thieves;
  for (int k = 0; k < 3; ++k)
    thieves.emplace_back([&] {
      lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
      while (!done.load()) {
        auto r = d.steal(hp);
        if (r.status == steal_status::success) taken[r.value].fetch_add(1);
      }
      for (auto r = d.steal(hp); r.status != steal_status::empty; r = d.steal(hp))
        if (r.status == steal_status::success) taken[r.value].fetch_add(1);
    });
  for (std::uintptr_t i = 1; i <= n; ++i) {
    d.push(i);
    if (i % 3 == 0) // pop often: the last-element race with thieves happens constantly
      if (auto v = d.pop()) taken[*v].fetch_add(1);
  }
  while (auto v = d.pop()) taken[*v].fetch_add(1);
  done = true;
  for (auto& t : thieves) t.join();
  for (std::uintptr_t i = 1; i <= n; ++i) ASSERT_EQ(taken[i].load(), 1) << "value " << i;
}

// One element at a time: push one, then owner and thieves race for it.
TEST(ChaseLevDeque, LastElementRace) {
  constexpr int rounds = lfcore::stress_build ? 5'000 : 100'000;
  chase_lev_deque<std::uintptr_t> d(2);
  std::atomic<int> stolen{0};
  std::atomic<bool> done{false};
  std::thread thief([&] {
    lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
    while (!done.load())
      if (d.steal(hp).status == steal_status::success) stolen.fetch_add(1);
  });
  int popped = 0;
  for (int i = 0; i < rounds; ++i) {
    d.push(static_cast<std::uintptr_t>(i) + 1);
    if (d.pop()) ++popped;
  }
  done = true;
  thief.join();
  while (d.pop()) ++popped;
  EXPECT_EQ(popped + stolen.load(), rounds);
}
