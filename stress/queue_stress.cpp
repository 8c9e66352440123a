// Stress tests of lfcore's queues: exactly-once delivery, per-producer FIFO and
// element lifetimes over many items, with the smallest rings in stress builds
// (constant wrap-around and full/empty transitions).
#include "../tests/heap/heap_counter.hpp"
#include "../tests/queues/tracked.hpp"

#include "scale.hpp"
#include <lfcore/backoff.hpp>
#include <lfcore/blocking_queue.hpp>
#include <lfcore/config.hpp>
#include <lfcore/mpmc_queue.hpp>
#include <lfcore/spsc_queue.hpp>
#include <lfcore/unbounded_mpmc_queue.hpp>
#include <lfcore/unbounded_spsc_queue.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

long scaled(long n) {
  return lfcore_stress::scaled(n, 20, 1000); // tiny rings and sanitizers: far slower
}

constexpr std::size_t ring = lfcore::stress_build ? 2 : 1024;

// Items encode (producer, sequence number); consumers check per-producer order,
// count every item and sum them, so a loss, a duplicate or a torn value fails.
template <class Queue>
void exactly_once_fifo(Queue& q, int producers, int consumers, long total) {
  const long per_producer = total / producers;
  std::vector<std::atomic<std::uint8_t>> seen(static_cast<std::size_t>(per_producer * producers));
  std::atomic<long> popped{0}, order_errors{0}, duplicates{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      lfcore::backoff wait;
      for (long i = 0; i < per_producer;) {
        if (q.try_push(std::uint64_t(p) << 40 | std::uint64_t(i))) {
          ++i;
          wait.reset();
        } else {
          wait.pause();
        }
      }
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      std::vector<long> last(static_cast<std::size_t>(producers), -1);
      lfcore::backoff wait;
      while (popped.load(std::memory_order_relaxed) < per_producer * producers) {
        auto v = q.try_pop();
        if (!v) {
          wait.pause();
          continue;
        }
        wait.reset();
        const auto p = static_cast<std::size_t>(*v >> 40);
        const auto i = static_cast<long>(*v & ((std::uint64_t(1) << 40) - 1));
        order_errors += i <= last[p];
        last[p] = i;
        duplicates +=
            seen[p * static_cast<std::size_t>(per_producer) + static_cast<std::size_t>(i)]++ != 0;
        popped++;
      }
    });
  for (auto& t : threads) t.join();
  long missing = 0;
  for (auto& s : seen) missing += s.load() == 0;
  EXPECT_EQ(missing, 0) << "lost items";
  EXPECT_EQ(duplicates.load(), 0) << "duplicated items";
  EXPECT_EQ(order_errors.load(), 0) << "a consumer saw one producer's items out of order";
  EXPECT_FALSE(q.try_pop().has_value());
}

TEST(QueueStress, SpscFifo1x1) {
  lfcore::spsc_queue<std::uint64_t> q(ring);
  exactly_once_fifo(q, 1, 1, scaled(10'000'000));
}

TEST(QueueStress, UnboundedSpscFifo1x1) {
  lfcore::unbounded_spsc_queue<std::uint64_t> q(ring);
  exactly_once_fifo(q, 1, 1, scaled(10'000'000));
}

class MpmcStress : public ::testing::TestWithParam<int> {};
TEST_P(MpmcStress, ExactlyOncePerProducerFifo) {
  lfcore::mpmc_queue<std::uint64_t> q(ring);
  exactly_once_fifo(q, GetParam(), GetParam(), scaled(10'000'000));
}
TEST_P(MpmcStress, UnboundedExactlyOncePerProducerFifo) {
  lfcore::unbounded_mpmc_queue<std::uint64_t> q; // segments of 2 slots in stress builds
  exactly_once_fifo(q, GetParam(), GetParam(), scaled(10'000'000));
}
INSTANTIATE_TEST_SUITE_P(Threads, MpmcStress, ::testing::Values(1, 2, 4, 8), [](const auto& p) {
  return std::to_string(p.param) + "x" + std::to_string(p.param);
});

TEST(QueueStress, ElementLifetimesBalance) {
  test::tracked::live = 0;
  {
    lfcore::mpmc_queue<test::tracked> q(ring);
    std::vector<std::thread> threads;
    const long per_producer = scaled(200'000);
    const long to_pop = 2 * per_producer - static_cast<long>(ring / 2); // half a ring stays
    std::atomic<long> popped{0};
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&] {
        for (long i = 0; i < per_producer;)
          if (q.try_emplace(i)) ++i;
      });
    threads.emplace_back([&] {
      while (popped.load() < to_pop)
        if (q.try_pop()) popped++;
    });
    for (auto& t : threads) t.join();
    EXPECT_EQ(static_cast<long>(q.size_approx()), static_cast<long>(ring / 2));
    EXPECT_EQ(test::tracked::live.load(), static_cast<long>(ring / 2));
  }
  EXPECT_EQ(test::tracked::live.load(), 0) << "the destructor must destroy what is left";
}

// A soak: bursts of pushes with no consumer, then a drain by other threads.
// After each drain (and a reclaim() that adopts the exited threads' retired
// segments) the heap is back where it was before the burst.
TEST(QueueStress, UnboundedMpmcMemoryReturnsAfterEachBurst) {
  using queue = lfcore::unbounded_mpmc_queue<std::uint64_t>;
  const long per_thread = scaled(1'000'000) / 4;
  queue q;
  auto burst_then_drain = [&] {
    std::vector<std::thread> threads;
    for (int p = 0; p < 4; ++p)
      threads.emplace_back([&] {
        for (long i = 0; i < per_thread; ++i) q.push(std::uint64_t(i));
      });
    for (auto& t : threads) t.join();
    const long long held = test::live_heap_bytes();
    threads.clear();
    std::atomic<long> popped{0};
    for (int c = 0; c < 4; ++c)
      threads.emplace_back([&] {
        while (popped.load(std::memory_order_relaxed) < 4 * per_thread)
          if (q.try_pop()) popped.fetch_add(1, std::memory_order_relaxed);
      });
    for (auto& t : threads) t.join();
    lfcore::detail::queue_segment_domain().reclaim();
    return held;
  };
  burst_then_drain(); // warm-up: thread states, hazard records, retired-entry blocks
  const long long baseline = test::live_heap_bytes();
  for (int round = 0; round < 10; ++round) {
    const long long held = burst_then_drain();
    EXPECT_GT(held - baseline, 4 * per_thread * 8) << "round " << round << ": the burst is held";
    EXPECT_LT(test::live_heap_bytes() - baseline, 4 * 1024)
        << "round " << round << ": the drained segments must go back to the allocator";
    std::printf("round %d: %lld bytes held after the burst, %lld after the drain (vs baseline)\n",
                round, held - baseline, test::live_heap_bytes() - baseline);
  }
  EXPECT_FALSE(q.try_pop().has_value());
}

TEST(QueueStress, BlockingQueueCloseRaces) {
  for (int round = 0; round < (lfcore::stress_build ? 20 : 200); ++round) {
    lfcore::blocking_queue<lfcore::mpmc_queue<long>> q(ring);
    std::atomic<long> pushed{0}, popped{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < 3; ++p)
      threads.emplace_back([&] {
        for (long i = 1; q.push(long(i)); ++i) pushed += i;
      });
    for (int c = 0; c < 2; ++c)
      threads.emplace_back([&] {
        while (auto v = q.pop()) popped += *v;
      });
    std::this_thread::sleep_for(std::chrono::microseconds(50 * (round % 7)));
    q.close();
    for (auto& t : threads) t.join();
    ASSERT_EQ(popped.load(), pushed.load()) << "round " << round;
  }
}

} // namespace
