#include <lfcore/eventcount.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

// Ping-pong through two flags, each side sleeping on the eventcount when the
// other has not moved yet. A lost wake-up leaves both asleep: the test hangs
// and CTest's timeout fails it.
TEST(Eventcount, PingPongLosesNoWakeUp) {
  constexpr int rounds = 20'000;
  lfcore::eventcount ec;
  std::atomic<int> turn{0}; // even: ping's turn, odd: pong's

  auto player = [&](int parity) {
    for (int i = 0; i < rounds; ++i) {
      auto my_turn = [&] { return (turn.load(std::memory_order_acquire) & 1) == parity; };
      while (!my_turn()) {
        const auto key = ec.prepare_wait();
        if (my_turn()) {
          ec.cancel_wait();
          break;
        }
        ec.wait(key);
      }
      turn.fetch_add(1, std::memory_order_release);
      ec.notify_all();
    }
  };
  std::thread ping(player, 0), pong(player, 1);
  ping.join();
  pong.join();
  EXPECT_EQ(turn.load(), 2 * rounds);
}

TEST(Eventcount, NotifyOneWakesASleeper) {
  lfcore::eventcount ec;
  std::atomic<bool> ready{false};
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    while (!ready.load()) {
      const auto key = ec.prepare_wait();
      if (ready.load()) {
        ec.cancel_wait();
        break;
      }
      ec.wait(key);
    }
    woke = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(woke.load());
  ready.store(true);
  ec.notify_one();
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(Eventcount, ManyWaitersAllWoken) {
  lfcore::eventcount ec;
  std::atomic<bool> go{false};
  std::atomic<int> awake{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 8; ++i)
    waiters.emplace_back([&] {
      while (!go.load()) {
        const auto key = ec.prepare_wait();
        if (go.load()) {
          ec.cancel_wait();
          break;
        }
        ec.wait(key);
      }
      awake.fetch_add(1);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  go.store(true);
  ec.notify_all();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(awake.load(), 8);
}
