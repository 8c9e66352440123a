#include "../heap/heap_counter.hpp"
#include "../reclamation_policies.hpp"
#include "tracked.hpp"

#include <lfcore/unbounded_mpmc_queue.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

template <class R, class T, std::size_t SegmentSize>
using queue_for = lfcore::unbounded_mpmc_queue<T, SegmentSize, R>;

template <class R>
class UnboundedMpmcQueue : public ::testing::Test {};
TYPED_TEST_SUITE(UnboundedMpmcQueue, test::reclamation_policies);

// Under hazard pointers a private domain, so that only one queue's segments
// are counted; RCU has one domain per flavour.
template <class R>
typename R::domain_type& private_domain() {
  if constexpr (std::is_same_v<R, lfcore::hazard_pointer_reclamation>) {
    static lfcore::hazard_pointer_domain domain(
        lfcore::hazard_pointer_domain_config{.scan_threshold = 8});
    return domain;
  } else {
    return R::default_domain();
  }
}

} // namespace

TYPED_TEST(UnboundedMpmcQueue, FifoAcrossSegments) {
  queue_for<TypeParam, int, 4> q;
  for (int i = 0; i < 1000; ++i) q.push(i);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(q.try_pop(), i);
  EXPECT_FALSE(q.try_pop().has_value());
  q.push(5);
  int v = 0;
  EXPECT_TRUE(q.try_pop(v));
  EXPECT_EQ(v, 5);
}

TYPED_TEST(UnboundedMpmcQueue, PollingAnEmptyQueueBurnsNoPositions) {
  queue_for<TypeParam, int, 4> q;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(q.try_pop().has_value());
  q.push(1);
  q.push(2);
  EXPECT_EQ(q.try_pop(), 1);
  EXPECT_EQ(q.try_pop(), 2);
}

TYPED_TEST(UnboundedMpmcQueue, SegmentOfOneSlot) {
  queue_for<TypeParam, int, 1> q;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < round % 5; ++i) q.push(round * 10 + i);
    for (int i = 0; i < round % 5; ++i) ASSERT_EQ(q.try_pop(), round * 10 + i);
    ASSERT_FALSE(q.try_pop().has_value());
  }
}

TYPED_TEST(UnboundedMpmcQueue, MoveOnlyValues) {
  queue_for<TypeParam, test::move_only, 2> q;
  for (long i = 0; i < 10; ++i) q.emplace(i);
  test::move_only m(42);
  q.push(std::move(m));
  for (long i = 0; i < 10; ++i) ASSERT_EQ(*q.try_pop()->p, i);
  EXPECT_EQ(*q.try_pop()->p, 42);
}

TYPED_TEST(UnboundedMpmcQueue, DestructorDestroysRemainingElements) {
  test::tracked::live = 0;
  {
    queue_for<TypeParam, test::tracked, 4> q;
    for (int i = 0; i < 11; ++i) q.emplace(i);
    for (int i = 0; i < 5; ++i) q.try_pop();
    EXPECT_EQ(test::tracked::live.load(), 6);
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

using test::throws_on_copy;

TYPED_TEST(UnboundedMpmcQueue, ThrowingCopyClaimsNothing) {
  queue_for<TypeParam, throws_on_copy, 2> q;
  const throws_on_copy bad(-1);
  EXPECT_THROW(q.push(bad), std::runtime_error);
  q.push(throws_on_copy(3));
  EXPECT_EQ(q.try_pop()->v, 3);
  EXPECT_FALSE(q.try_pop().has_value());
}

TYPED_TEST(UnboundedMpmcQueue, ManyThreadsExactlyOnce) {
  constexpr int producers = 3, consumers = 3;
  constexpr long per_producer = 50'000;
  queue_for<TypeParam, long, 8> q;
  std::vector<std::atomic<int>> seen(producers * per_producer);
  std::atomic<long> popped{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (long i = 0; i < per_producer; ++i) q.push(p * per_producer + i);
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      while (popped.load() < producers * per_producer)
        if (auto v = q.try_pop()) {
          seen[static_cast<std::size_t>(*v)]++;
          popped++;
        }
    });
  for (auto& t : threads) t.join();
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);
}

// An element whose move reports to another queue, of another element type:
// every queue of a Reclamation shares the guard a thread keeps.
template <class R>
struct reporting_move {
  using report_queue = queue_for<R, int, 64>;
  static inline std::atomic<long> moves{0};
  long value = 0;
  report_queue* reports = nullptr;
  reporting_move(long v, report_queue* r) : value(v), reports(r) {}
  reporting_move(reporting_move&& o) noexcept : value(o.value), reports(o.reports) {
    ++moves;
    reports->push(1); // std::bad_alloc would terminate: not in this test
  }
  reporting_move& operator=(reporting_move&& o) noexcept {
    value = o.value;
    reports = o.reports;
    return *this;
  }
};

// The move constructor runs inside push and try_pop, which hold their guard:
// its push takes a fresh guard, and the outer operation's segment stays
// protected (stress builds free a drained segment at once: ASan would see a
// use after free). Nothing is lost in either queue.
TYPED_TEST(UnboundedMpmcQueue, AnElementsMoveMayUseAnotherQueue) {
  using element = reporting_move<TypeParam>;
  constexpr int producers = 2, consumers = 2;
  constexpr long per_producer = 10'000;
  typename element::report_queue reports;
  queue_for<TypeParam, element, 2> q;
  element::moves = 0;
  std::vector<std::atomic<int>> seen(producers * per_producer);
  std::atomic<long> popped{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (long i = 0; i < per_producer; ++i) q.push(element(p * per_producer + i, &reports));
    });
  for (int c = 0; c < consumers; ++c)
    threads.emplace_back([&] {
      while (popped.load() < producers * per_producer)
        if (auto v = q.try_pop()) {
          seen[static_cast<std::size_t>(v->value)]++;
          popped++;
        }
    });
  for (auto& t : threads) t.join();
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);
  long reported = 0;
  while (reports.try_pop()) ++reported;
  EXPECT_GE(reported, 2 * producers * per_producer) << "a push and a pop move each element";
  EXPECT_EQ(reported, element::moves.load());
}

TYPED_TEST(UnboundedMpmcQueue, DrainedSegmentsGoBackToTheAllocator) {
  auto& domain = private_domain<TypeParam>();
  queue_for<TypeParam, long, 16> q(domain);
  q.push(0);
  q.try_pop();
  domain.reclaim();
  const long long before = test::live_heap_bytes();
  for (long i = 0; i < 100'000; ++i) q.push(i);
  EXPECT_GT(test::live_heap_bytes() - before, 100'000LL * 8);
  for (long i = 0; i < 100'000; ++i) ASSERT_EQ(q.try_pop(), i);
  domain.reclaim();
  // What is left: the current segment and the domain's retired-entry blocks.
  EXPECT_LT(test::live_heap_bytes() - before, 16 * 1024);
}
