// Stress tests of lfcore's hazard pointers. Each asserts an outcome: no reader
// ever sees a freed object, the garbage bound holds with a stalled protector,
// nothing leaks across thread churn, a queue built on top delivers exactly once.
#include "michael_scott_queue.hpp"

#include "scale.hpp"
#include <lfcore/hazard_pointer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using lfcore::hazard_pointer_domain;

// LFCORE_STRESS_SCALE multiplies the work (soak runs). Stress builds scan on
// every retire and TSan slows everything ~10x: they run a quarter / an eighth.
long scaled(long n) {
  return lfcore_stress::scaled(n, lfcore::tsan_build ? 8 : 4);
}

constexpr std::uint64_t alive_magic = 0xA11CE5EEDC0FFEE1u;
constexpr std::uint64_t poison = 0xDEADDEADDEADDEADu;

// Poisons before freeing, so that a read after free in a build without ASan
// still sees a broken checksum with high probability. The fields are atomic
// (relaxed) because a buggy reclaimer would write them while a reader reads:
// the test must report that as a bad read, not as a data race of its own.
struct payload;
struct poison_delete {
  void operator()(payload* p) const;
};
struct payload : lfcore::hazard_pointer_obj_base<payload, poison_delete> {
  explicit payload(std::uint64_t v) : value(v), check(v ^ alive_magic) {}
  std::atomic<std::uint64_t> value;
  std::atomic<std::uint64_t> check;
};
void poison_delete::operator()(payload* p) const {
  p->value.store(poison, std::memory_order_relaxed);
  p->check.store(poison, std::memory_order_relaxed);
  delete p;
}

TEST(HazardPointerStress, ReadersNeverSeeReclaimedObjects) {
  hazard_pointer_domain domain;
  constexpr int slots = 8, readers = 4, writers = 2;
  const long writes = scaled(1'000'000);
  std::vector<std::atomic<payload*>> slot(slots);
  for (int i = 0; i < slots; ++i) slot[i].store(new payload(static_cast<std::uint64_t>(i)));
  std::atomic<bool> stop{false};
  std::atomic<long> bad_reads{0}, reads{0};

  std::vector<std::thread> threads;
  for (int r = 0; r < readers; ++r)
    threads.emplace_back([&, r] {
      lfcore::hazard_pointer hp = lfcore::make_hazard_pointer(domain);
      long local_reads = 0, local_bad = 0;
      for (unsigned i = static_cast<unsigned>(r); !stop.load(std::memory_order_relaxed); ++i) {
        payload* p = hp.protect(slot[i % slots]);
        const auto v = p->value.load(std::memory_order_relaxed);
        const auto c = p->check.load(std::memory_order_relaxed);
        local_bad += (v ^ alive_magic) != c;
        ++local_reads;
        hp.reset_protection();
      }
      reads += local_reads;
      bad_reads += local_bad;
    });
  std::vector<std::thread> writer_threads;
  for (int w = 0; w < writers; ++w)
    writer_threads.emplace_back([&, w] {
      for (long i = 0; i < writes; ++i) {
        auto* fresh = new payload(static_cast<std::uint64_t>(i * writers + w));
        payload* old =
            slot[static_cast<std::size_t>(i) % slots].exchange(fresh, std::memory_order_acq_rel);
        old->retire({}, domain);
      }
    });
  for (auto& t : writer_threads) t.join();
  stop = true;
  for (auto& t : threads) t.join();

  EXPECT_EQ(bad_reads.load(), 0) << "a reader saw a reclaimed object";
  EXPECT_GT(reads.load(), 0);
  const auto s = domain.stats();
  EXPECT_EQ(s.retired, static_cast<std::uint64_t>(writes * writers));
  domain.reclaim();
  EXPECT_EQ(domain.stats().pending(), 0u) << "after every thread left, all is reclaimable";
  for (auto& p : slot) delete p.load();
}

// One thread protects an object and then stalls forever (until the end of the
// test). Writers keep retiring; at checkpoints where no scan is running, the
// pending count must stay within the documented bound, and the protected object
// must still be intact.
TEST(HazardPointerStress, StalledProtectorKeepsGarbageBounded) {
  hazard_pointer_domain domain;
  constexpr int writers = 3;
  const long rounds = scaled(200);
  // Round sizes prime to R and different per writer, so that checkpoints fall
  // between scans, where each writer holds up to R - 1 entries.
  auto per_round = [](int w) { return 4'999L + 131L * w; };
  std::atomic<payload*> victim{new payload(77)};
  std::atomic<bool> protected_now{false}, release{false};

  std::thread stalled([&] {
    lfcore::hazard_pointer hp = lfcore::make_hazard_pointer(domain);
    payload* p = hp.protect(victim);
    protected_now = true;
    while (!release.load()) std::this_thread::yield(); // the stall
    EXPECT_EQ(p->value.load() ^ alive_magic, p->check.load()) << "a protected object was reclaimed";
  });
  while (!protected_now.load()) std::this_thread::yield();
  victim.exchange(nullptr)->retire({}, domain);

  std::uint64_t worst = 0;
  std::size_t bound = 0;
  std::barrier checkpoint(writers + 1);
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      lfcore::hazard_pointer hp = lfcore::make_hazard_pointer(domain); // counts in H
      for (long r = 0; r < rounds; ++r) {
        for (long i = 0; i < per_round(w); ++i)
          (new payload(static_cast<std::uint64_t>(i)))->retire({}, domain);
        checkpoint.arrive_and_wait(); // quiescent: no scan in progress
        checkpoint.arrive_and_wait(); // main thread has measured
      }
    });
  for (long r = 0; r < rounds; ++r) {
    checkpoint.arrive_and_wait();
    worst = std::max(worst, domain.stats().pending());
    bound = domain.garbage_bound();
    checkpoint.arrive_and_wait();
  }
  for (auto& t : threads) t.join();
  const auto s = domain.stats();
  EXPECT_LE(worst, bound) << "pending objects exceeded the documented bound";
  EXPECT_GE(s.retired, static_cast<std::uint64_t>(writers * rounds * per_round(0)));
  // Garbage stays bounded, not merely counted: far fewer pending than retired.
  EXPECT_LT(worst * 10, s.retired);
  domain.reclaim();
  EXPECT_GE(domain.stats().pending(), 1u) << "the stalled thread's object must survive";
  release = true;
  stalled.join();
  domain.reclaim();
  EXPECT_EQ(domain.stats().pending(), 0u);
  std::printf("stalled protector: worst pending %llu, bound %zu, retired %llu\n",
              static_cast<unsigned long long>(worst), bound,
              static_cast<unsigned long long>(s.retired));
}

TEST(HazardPointerStress, ThreadChurnLeavesNothingBehind) {
  hazard_pointer_domain domain;
  const long generations = scaled(400);
  std::atomic<payload*> shared{new payload(0)};
  for (long g = 0; g < generations; ++g) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        lfcore::hazard_pointer hp = lfcore::make_hazard_pointer(domain);
        for (int i = 0; i < 50; ++i) {
          payload* p = hp.protect(shared);
          EXPECT_EQ(p->value.load() ^ alive_magic, p->check.load());
          hp.reset_protection();
          auto* fresh = new payload(static_cast<std::uint64_t>(t * 1000 + i));
          shared.exchange(fresh)->retire({}, domain);
        }
      });
    for (auto& t : threads) t.join();
  }
  domain.reclaim();
  EXPECT_EQ(domain.stats().pending(), 0u);
  EXPECT_LE(domain.stats().hazard_records, 4u + 1u) << "records of exited threads are reused";
  delete shared.load();
}

// The example queue: every item delivered exactly once, per-producer FIFO.
void queue_exactly_once(int producers, int consumers) {
  const long per_producer = scaled(1'000'000) / producers;
  example::michael_scott_queue<std::uint64_t> queue;
  std::vector<std::atomic<int>> seen(static_cast<std::size_t>(per_producer * producers));
  std::atomic<long> popped{0};
  std::atomic<long> order_errors{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (long i = 0; i < per_producer; ++i)
        queue.push(static_cast<std::uint64_t>(p) << 32 | static_cast<std::uint64_t>(i));
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      std::vector<long> last(static_cast<std::size_t>(producers), -1);
      while (popped.load(std::memory_order_relaxed) < per_producer * producers) {
        auto v = queue.try_pop();
        if (!v) continue;
        const auto p = static_cast<std::size_t>(*v >> 32);
        const auto i = static_cast<long>(*v & 0xFFFFFFFFu);
        order_errors += i <= last[p];
        last[p] = i;
        seen[p * static_cast<std::size_t>(per_producer) + static_cast<std::size_t>(i)]++;
        popped++;
      }
    });
  for (auto& t : threads) t.join();
  long wrong = 0;
  for (auto& s : seen) wrong += s.load() != 1;
  EXPECT_EQ(wrong, 0) << "items lost or duplicated";
  EXPECT_EQ(order_errors.load(), 0) << "a consumer saw a producer's items out of order";
  EXPECT_FALSE(queue.try_pop().has_value());
}

TEST(HazardPointerStress, QueueExactlyOnce1x1) {
  queue_exactly_once(1, 1);
}
TEST(HazardPointerStress, QueueExactlyOnce2x2) {
  queue_exactly_once(2, 2);
}
TEST(HazardPointerStress, QueueExactlyOnce4x4) {
  queue_exactly_once(4, 4);
}

} // namespace
