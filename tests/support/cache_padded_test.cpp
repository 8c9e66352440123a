#include <lfcore/cache_padded.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

TEST(CachePadded, NeighboursSitOnDifferentLines) {
  lfcore::cache_padded<std::atomic<int>> pair[2];
  const auto a = reinterpret_cast<std::uintptr_t>(&pair[0].value);
  const auto b = reinterpret_cast<std::uintptr_t>(&pair[1].value);
  EXPECT_EQ(a % lfcore::cache_line_size, 0u);
  EXPECT_GE(b - a, lfcore::cache_line_size);
}

TEST(CachePadded, ForwardsConstructionAndAccess) {
  lfcore::cache_padded<std::pair<int, int>> p(std::in_place, 3, 4);
  EXPECT_EQ(p->first, 3);
  EXPECT_EQ((*p).second, 4);
}
