#include "tracked.hpp"

#include <lfcore/mpmc_queue.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

using lfcore::mpmc_queue;

TEST(MpmcQueue, RejectsBadCapacity) {
  EXPECT_THROW(mpmc_queue<int>(0), std::invalid_argument);
  EXPECT_THROW(mpmc_queue<int>(1), std::invalid_argument);
  EXPECT_THROW(mpmc_queue<int>(6), std::invalid_argument);
}

TEST(MpmcQueue, FifoFullEmpty) {
  mpmc_queue<int> q(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push(i));
  EXPECT_FALSE(q.try_push(4));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.try_pop(), i);
  EXPECT_FALSE(q.try_pop().has_value());
}

TEST(MpmcQueue, CapacityTwoWrapsAround) {
  mpmc_queue<int> q(2);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(q.try_push(i));
    ASSERT_TRUE(q.try_push(-i));
    ASSERT_FALSE(q.try_push(0));
    int a = -1, b = -1;
    ASSERT_TRUE(q.try_pop(a));
    ASSERT_TRUE(q.try_pop(b));
    ASSERT_FALSE(q.try_pop().has_value());
    ASSERT_EQ(a, i);
    ASSERT_EQ(b, -i);
  }
}

TEST(MpmcQueue, MoveOnlyValuesAndFailedPushKeepsValue) {
  mpmc_queue<test::move_only> q(2);
  test::move_only a(1), a2(1), b(2);
  EXPECT_TRUE(q.try_push(std::move(a)));
  EXPECT_TRUE(q.try_push(std::move(a2)));
  EXPECT_FALSE(q.try_push(std::move(b)));
  ASSERT_NE(b.p, nullptr) << "a failed push must not move from its argument";
  EXPECT_EQ(*q.try_pop()->p, 1);
}

TEST(MpmcQueue, DestructorDestroysRemainingElements) {
  test::tracked::live = 0;
  {
    mpmc_queue<test::tracked> q(8);
    for (int i = 0; i < 6; ++i) q.try_emplace(i);
    q.try_pop();
    EXPECT_EQ(test::tracked::live.load(), 5);
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

using test::throws_on_copy;

TEST(MpmcQueue, ThrowingCopyClaimsNothing) {
  mpmc_queue<throws_on_copy> q(2);
  const throws_on_copy bad(-1);
  EXPECT_THROW(q.try_push(bad), std::runtime_error);
  EXPECT_EQ(q.size_approx(), 0u);
  EXPECT_TRUE(q.try_push(throws_on_copy(3)));
  EXPECT_EQ(q.try_pop()->v, 3);
}

// try_pop(T&) pops before it assigns: an assignment that throws loses that
// element (as the header says) and leaves the queue consistent and usable.
TEST(MpmcQueue, ThrowingAssignmentInTryPopLosesOnlyThatElement) {
  struct throws_on_assign {
    int v;
    explicit throws_on_assign(int x) : v(x) {}
    throws_on_assign(throws_on_assign&&) noexcept = default;
    throws_on_assign& operator=(throws_on_assign&& o) {
      if (o.v < 0) throw std::runtime_error("assign");
      v = o.v;
      return *this;
    }
  };
  mpmc_queue<throws_on_assign> q(4);
  EXPECT_TRUE(q.try_emplace(-1));
  EXPECT_TRUE(q.try_emplace(2));
  throws_on_assign out(0);
  EXPECT_THROW(q.try_pop(out), std::runtime_error);
  EXPECT_EQ(out.v, 0);
  EXPECT_EQ(q.size_approx(), 1u);
  EXPECT_TRUE(q.try_pop(out));
  EXPECT_EQ(out.v, 2);
  EXPECT_FALSE(q.try_pop(out));
}

TEST(MpmcQueue, ManyThreadsExactlyOnce) {
  constexpr int producers = 3, consumers = 3;
  constexpr long per_producer = 50'000;
  mpmc_queue<long> q(16);
  std::vector<std::atomic<int>> seen(producers * per_producer);
  std::atomic<long> popped{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (long i = 0; i < per_producer;)
        if (q.try_push(p * per_producer + i)) ++i;
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      while (popped.load() < producers * per_producer)
        if (auto v = q.try_pop()) {
          seen[*v]++;
          popped++;
        }
    });
  for (auto& t : threads) t.join();
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);
}
