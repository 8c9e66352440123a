#include "../heap/heap_counter.hpp"
#include "tracked.hpp"

#include <lfcore/unbounded_spsc_queue.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

using lfcore::unbounded_spsc_queue;

TEST(UnboundedSpscQueue, RejectsBadRingCapacity) {
  EXPECT_THROW(unbounded_spsc_queue<int>(0), std::invalid_argument);
  EXPECT_THROW(unbounded_spsc_queue<int>(12), std::invalid_argument);
}

TEST(UnboundedSpscQueue, GrowsAcrossRingsInFifoOrder) {
  unbounded_spsc_queue<int> q(2);
  for (int i = 0; i < 1000; ++i) q.push(i);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(q.try_pop(), i);
  EXPECT_FALSE(q.try_pop().has_value());
  q.push(7); // the queue keeps working after it drained across rings
  int v = 0;
  EXPECT_TRUE(q.try_pop(v));
  EXPECT_EQ(v, 7);
}

TEST(UnboundedSpscQueue, InterleavedPushPopAcrossRingBoundaries) {
  unbounded_spsc_queue<int> q(4);
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 500; ++round) {
    for (int k = 0; k < round % 11; ++k) q.push(next_in++);
    for (int k = 0; k < round % 7; ++k) {
      if (auto v = q.try_pop()) {
        ASSERT_EQ(*v, next_out++);
      }
    }
  }
  while (auto v = q.try_pop()) ASSERT_EQ(*v, next_out++);
  EXPECT_EQ(next_out, next_in);
}

TEST(UnboundedSpscQueue, MoveOnlyValues) {
  unbounded_spsc_queue<test::move_only> q(1);
  for (long i = 0; i < 10; ++i) q.emplace(i);
  for (long i = 0; i < 10; ++i) ASSERT_EQ(*q.try_pop()->p, i);
}

TEST(UnboundedSpscQueue, DestructorDestroysRemainingElements) {
  test::tracked::live = 0;
  {
    unbounded_spsc_queue<test::tracked> q(2);
    for (int i = 0; i < 9; ++i) q.emplace(i);
    q.try_pop();
    EXPECT_EQ(test::tracked::live.load(), 8);
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

using test::throws_on_copy;

TEST(UnboundedSpscQueue, ThrowingConstructionLeavesQueueUnchanged) {
  unbounded_spsc_queue<throws_on_copy> q(2);
  const throws_on_copy bad(-1);
  q.push(throws_on_copy(1));
  EXPECT_THROW(q.push(bad), std::runtime_error); // in the current ring
  q.push(throws_on_copy(2));
  EXPECT_THROW(q.push(bad), std::runtime_error); // in a fresh ring
  q.push(throws_on_copy(3));
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(q.try_pop()->v, i);
  EXPECT_FALSE(q.try_pop().has_value());
}

TEST(UnboundedSpscQueue, MemoryReturnsAfterABurst) {
  const long long before = test::live_heap_bytes();
  {
    unbounded_spsc_queue<long> q(64);
    for (int round = 0; round < 3; ++round) {
      for (long i = 0; i < 100'000; ++i) q.push(i);
      EXPECT_GT(test::live_heap_bytes() - before, 100'000LL * 8) << "the burst must be held";
      for (long i = 0; i < 100'000; ++i) ASSERT_EQ(q.try_pop(), i);
      // One ring in use and at most spare_rings kept: 64 slots of at most 16
      // bytes and a ring object below 1 KiB each.
      const long long ring_bytes = 64 * 16 + 1024;
      EXPECT_LE(test::live_heap_bytes() - before,
                ring_bytes * (1 + static_cast<long long>(q.spare_rings)) + 1024);
    }
  }
  EXPECT_EQ(test::live_heap_bytes(), before);
}

TEST(UnboundedSpscQueue, ProducerConsumerThreads) {
  unbounded_spsc_queue<long> q(4);
  constexpr long n = 200'000;
  std::thread producer([&] {
    for (long i = 0; i < n; ++i) q.push(i);
  });
  for (long expected = 0; expected < n;) {
    if (auto v = q.try_pop()) {
      ASSERT_EQ(*v, expected++);
    }
  }
  producer.join();
  EXPECT_FALSE(q.try_pop().has_value());
}
