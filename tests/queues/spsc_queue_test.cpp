#include "tracked.hpp"

#include <lfcore/spsc_queue.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>
#include <vector>

using lfcore::spsc_queue;

TEST(SpscQueue, RejectsBadCapacity) {
  EXPECT_THROW(spsc_queue<int>(0), std::invalid_argument);
  EXPECT_THROW(spsc_queue<int>(3), std::invalid_argument);
  EXPECT_NO_THROW(spsc_queue<int>(1));
}

TEST(SpscQueue, FifoUpToCapacityThenFull) {
  spsc_queue<int> q(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push(i));
  EXPECT_FALSE(q.try_push(99));
  EXPECT_EQ(q.size_approx(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.try_pop(), i);
  EXPECT_FALSE(q.try_pop().has_value());
  EXPECT_TRUE(q.empty_approx());
}

TEST(SpscQueue, WrapsAroundWithCapacityTwo) {
  spsc_queue<int> q(2);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(q.try_push(i));
    ASSERT_TRUE(q.try_push(-i));
    ASSERT_FALSE(q.try_push(0));
    int a = 0, b = 0;
    ASSERT_TRUE(q.try_pop(a));
    ASSERT_TRUE(q.try_pop(b));
    ASSERT_EQ(a, i);
    ASSERT_EQ(b, -i);
  }
}

TEST(SpscQueue, MoveOnlyValues) {
  spsc_queue<test::move_only> q(2);
  EXPECT_TRUE(q.try_emplace(5));
  EXPECT_TRUE(q.try_push(test::move_only(6)));
  EXPECT_EQ(*q.try_pop()->p, 5);
  EXPECT_EQ(*q.try_pop()->p, 6);
}

TEST(SpscQueue, DestructorDestroysRemainingElements) {
  test::tracked::live = 0;
  {
    spsc_queue<test::tracked> q(8);
    for (int i = 0; i < 5; ++i) q.try_emplace(i);
    q.try_pop();
    EXPECT_EQ(test::tracked::live.load(), 4);
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

TEST(SpscQueue, BatchedPushAndPop) {
  spsc_queue<int> q(8);
  std::vector<int> in{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(q.try_push_n(in.begin(), in.size()), 8u); // capacity
  std::vector<int> out;
  EXPECT_EQ(q.try_pop_n(std::back_inserter(out), 5), 5u);
  EXPECT_EQ(q.try_push_n(in.begin() + 8, 2), 2u);
  EXPECT_EQ(q.try_pop_n(std::back_inserter(out), 100), 5u);
  EXPECT_EQ(out, in);
}

namespace {
struct throws_on_copy {
  int v;
  explicit throws_on_copy(int x) : v(x) {}
  throws_on_copy(const throws_on_copy& o) : v(o.v) {
    if (o.v < 0) throw std::runtime_error("copy");
  }
  throws_on_copy& operator=(const throws_on_copy& o) {
    if (o.v < 0) throw std::runtime_error("copy");
    v = o.v;
    return *this;
  }
};
} // namespace

TEST(SpscQueue, ThrowingCopyLosesNothing) {
  spsc_queue<throws_on_copy> q(4);
  const throws_on_copy bad(-1), good(1);
  EXPECT_THROW(q.try_push(bad), std::runtime_error);
  EXPECT_TRUE(q.empty_approx());
  EXPECT_TRUE(q.try_push(good));
  EXPECT_TRUE(q.try_emplace(-2));
  throws_on_copy out(0);
  EXPECT_TRUE(q.try_pop(out));
  EXPECT_EQ(out.v, 1);
  EXPECT_THROW(q.try_pop(out), std::runtime_error); // assigning -2 throws ...
  EXPECT_EQ(q.size_approx(), 1u);                   // ... and the element stays queued
}

// A batch whose k-th element throws as it moves (this type's moves copy):
// the elements before it are pushed or popped, the rest stay where they were.
TEST(SpscQueue, ABatchThatThrowsKeepsWhatCameBeforeIt) {
  spsc_queue<throws_on_copy> q(8);
  std::vector<throws_on_copy> in;
  in.reserve(4);
  for (int v : {1, 2, -3, 4}) in.emplace_back(v);
  EXPECT_THROW(q.try_push_n(in.begin(), in.size()), std::runtime_error);
  EXPECT_EQ(q.size_approx(), 2u); // 1 and 2
  EXPECT_TRUE(q.try_emplace(-5));
  EXPECT_TRUE(q.try_emplace(6));
  std::vector<throws_on_copy> out;
  out.reserve(8);
  EXPECT_THROW(q.try_pop_n(std::back_inserter(out), 8), std::runtime_error);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].v, 1);
  EXPECT_EQ(out[1].v, 2);
  EXPECT_EQ(q.size_approx(), 2u); // -5, whose move threw, and 6 stay queued
  EXPECT_TRUE(q.try_emplace(7));
  EXPECT_EQ(q.size_approx(), 3u); // the destructor destroys them (ASan: no leak)
}

TEST(SpscQueue, TwoThreadsFifo) {
  constexpr long n = 200'000;
  spsc_queue<long> q(64);
  std::thread producer([&] {
    for (long i = 0; i < n;)
      if (q.try_push(i)) ++i;
  });
  long expected = 0;
  while (expected < n)
    if (auto v = q.try_pop()) {
      ASSERT_EQ(*v, expected++);
    }
  producer.join();
}

TEST(SpscQueue, AfterFullResumesOnlyOnceARefillBatchIsFree) {
  using queue = spsc_queue<int>;
  queue q(queue::refill_min_capacity);
  for (int i = 0; i < static_cast<int>(q.capacity()); ++i) ASSERT_TRUE(q.try_push(i));
  EXPECT_FALSE(q.try_push(-1));
  for (std::size_t i = 1; i < queue::refill_batch; ++i) {
    ASSERT_TRUE(q.try_pop().has_value());
    ASSERT_FALSE(q.try_push(-1)) << i << " free slots";
  }
  ASSERT_TRUE(q.try_pop().has_value());
  for (std::size_t i = 0; i < queue::refill_batch; ++i) ASSERT_TRUE(q.try_push(-1));
  EXPECT_FALSE(q.try_push(-1));
  // try_push_n is exact: one free slot takes one element.
  ASSERT_TRUE(q.try_pop().has_value());
  int one = 7;
  EXPECT_EQ(q.try_push_n(&one, 1), 1u);
}
