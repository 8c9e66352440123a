#include <lfcore/marked_ptr.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

namespace {
struct alignas(8) node {
  int v;
};
} // namespace

TEST(MarkedPtr, KeepsPointerAndMarkApart) {
  node n{5};
  lfcore::marked_ptr<node, 3> p(&n, 5);
  EXPECT_EQ(p.get(), &n);
  EXPECT_EQ(p.mark(), 5u);
  EXPECT_TRUE(p.is_marked(1));
  EXPECT_FALSE(p.is_marked(2));
  EXPECT_EQ(p->v, 5);
  EXPECT_EQ(p.without_mark().mark(), 0u);
  EXPECT_EQ(p.without_mark().get(), &n);
  EXPECT_EQ(p.with_mark(2).mark(), 2u);
  EXPECT_EQ(p.with_mark(2).get(), &n);
}

TEST(MarkedPtr, EqualityIsBitwise) {
  node n{1};
  lfcore::marked_ptr<node, 1> a(&n, 0), b(&n, 1);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a == b.without_mark());
  EXPECT_FALSE((lfcore::marked_ptr<node, 1>()));
}

TEST(MarkedPtr, AtomicIsLockFree) {
  // At compile time: a runtime is_lock_free() on a class type is a libatomic
  // call under clang, and the answer must not depend on the machine anyway.
  static_assert(std::atomic<lfcore::marked_ptr<node, 2>>::is_always_lock_free);
  std::atomic<lfcore::marked_ptr<node, 2>> slot;
  node n{2};
  lfcore::marked_ptr<node, 2> expected;
  EXPECT_TRUE(slot.compare_exchange_strong(expected, lfcore::marked_ptr<node, 2>(&n, 1)));
  EXPECT_EQ(slot.load().mark(), 1u);
}
