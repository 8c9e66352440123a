#include "tracked.hpp"

#include <lfcore/blocking_queue.hpp>
#include <lfcore/mpmc_queue.hpp>
#include <lfcore/spsc_queue.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using mpmc = lfcore::blocking_queue<lfcore::mpmc_queue<long>>;

TEST(BlockingQueue, PopSleepsUntilAPush) {
  mpmc q(4);
  std::atomic<bool> got{false};
  std::thread consumer([&] {
    EXPECT_EQ(q.pop(), 42);
    got = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(got.load());
  EXPECT_TRUE(q.push(42));
  consumer.join();
  EXPECT_TRUE(got.load());
}

TEST(BlockingQueue, PushSleepsWhileFull) {
  mpmc q(2);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(1));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(q.push(2));
    pushed = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(pushed.load());
  EXPECT_EQ(q.pop(), 1);
  producer.join();
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), 2);
}

TEST(BlockingQueue, CloseWakesSleepersAndFailsPushes) {
  mpmc q(2);
  std::thread consumer([&] { EXPECT_FALSE(q.pop().has_value()); });
  std::this_thread::sleep_for(20ms);
  q.close();
  consumer.join();
  EXPECT_TRUE(q.is_closed());
  EXPECT_FALSE(q.push(7));
  EXPECT_FALSE(q.try_push(7));
}

TEST(BlockingQueue, PopDrainsAfterClose) {
  lfcore::blocking_queue<lfcore::spsc_queue<test::move_only>> q(4);
  ASSERT_TRUE(q.push(test::move_only(1)));
  ASSERT_TRUE(q.push(test::move_only(2)));
  q.close();
  test::move_only kept(3);
  EXPECT_FALSE(q.push(std::move(kept)));
  EXPECT_NE(kept.p, nullptr) << "a failed push keeps the caller's value";
  EXPECT_EQ(*q.pop()->p, 1);
  EXPECT_EQ(*q.pop()->p, 2);
  EXPECT_FALSE(q.pop().has_value());
}

TEST(BlockingQueue, TimedVariantsTimeOut) {
  mpmc q(2);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(q.pop_for(30ms).has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(1));
  long v = 2;
  EXPECT_FALSE(q.push_for(std::move(v), 30ms));
  EXPECT_EQ(v, 2);
  EXPECT_EQ(q.pop_for(1s), 1);
}

TEST(BlockingQueue, TimedPopIsWokenByAPush) {
  mpmc q(2);
  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    q.push(5);
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(q.pop_for(10s), 5);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "woken by the push, not by the time-out";
  producer.join();
}

// Producers push until close(); every push that returned true must be popped
// exactly once, however close() interleaves with the pushes.
TEST(BlockingQueue, CloseRacesLoseNothing) {
  for (int round = 0; round < 50; ++round) {
    mpmc q(8);
    constexpr int producers = 3, consumers = 2;
    std::atomic<long> pushed_sum{0}, popped_sum{0}, pushed{0}, popped{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p)
      threads.emplace_back([&, p] {
        for (long i = 1;; ++i) {
          const long v = i * producers + p;
          if (!q.push(long(v))) break;
          pushed_sum += v;
          pushed++;
        }
      });
    for (int c = 0; c < consumers; ++c)
      threads.emplace_back([&] {
        while (auto v = q.pop()) {
          popped_sum += *v;
          popped++;
        }
      });
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 5)));
    q.close();
    for (auto& t : threads) t.join();
    ASSERT_EQ(popped.load(), pushed.load()) << "round " << round;
    ASSERT_EQ(popped_sum.load(), pushed_sum.load()) << "round " << round;
  }
}
