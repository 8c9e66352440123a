#include <lfcore/backoff.hpp>

#include <gtest/gtest.h>

TEST(Backoff, SpinsThenYieldsAndResets) {
  lfcore::backoff b;
  for (unsigned i = 0; i <= lfcore::backoff::spin_shift_limit; ++i) {
    EXPECT_FALSE(b.is_yielding());
    b.pause();
  }
  EXPECT_TRUE(b.is_yielding());
  b.pause(); // yields, stays yielding
  EXPECT_TRUE(b.is_yielding());
  b.reset();
  EXPECT_FALSE(b.is_yielding());
}
