// prefault(): maps exactly the pages that lie wholly inside the block, and
// only for blocks of at least prefault_min_bytes.
#include <lfcore/detail/prefault.hpp>

#include <gtest/gtest.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <vector>

namespace {

using lfcore::detail::prefault;
using lfcore::detail::prefault_min_bytes;

// A fresh anonymous mapping: none of its pages is resident until touched.
struct fresh_pages {
  explicit fresh_pages(std::size_t n) : count(n) {
    base = static_cast<char*>(
        mmap(nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~fresh_pages() {
    if (base != MAP_FAILED) munmap(base, count * page);
  }
  std::vector<bool> resident() const {
    std::vector<unsigned char> v(count);
    EXPECT_EQ(mincore(base, count * page, v.data()), 0);
    std::vector<bool> r(count);
    for (std::size_t i = 0; i < count; ++i) r[i] = (v[i] & 1) != 0;
    return r;
  }
  static inline const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t count;
  char* base;
};

// Whether MADV_POPULATE_WRITE maps pages here: Linux 5.14 on; qemu-user
// accepts the advice and ignores it (scripts/test-cross.sh), as prefault() may.
bool kernel_populates() {
#if defined(MADV_POPULATE_WRITE)
  fresh_pages probe(1);
  return probe.base != MAP_FAILED &&
         madvise(probe.base, fresh_pages::page, MADV_POPULATE_WRITE) == 0 && probe.resident()[0];
#else
  return false;
#endif
}

TEST(Prefault, MapsThePagesWhollyInsideTheBlock) {
  if (!kernel_populates())
    GTEST_SKIP() << "MADV_POPULATE_WRITE maps nothing here: prefault() is a no-op";
  const std::size_t inside = prefault_min_bytes / fresh_pages::page + 2;
  fresh_pages m(inside + 3);
  ASSERT_NE(m.base, MAP_FAILED);
  // The block starts 8 bytes into page 0 and ends 8 bytes into page inside + 1.
  prefault(m.base + 8, inside * fresh_pages::page);
  const std::vector<bool> r = m.resident();
  EXPECT_FALSE(r[0]) << "page 0 is only partly inside the block";
  for (std::size_t i = 1; i <= inside - 1; ++i) EXPECT_TRUE(r[i]) << "page " << i;
  EXPECT_FALSE(r[inside]) << "the last page is only partly inside the block";
  EXPECT_FALSE(r[inside + 1]);
  // The block is still ordinary memory.
  m.base[8] = 1;
  m.base[inside * fresh_pages::page] = 2;
  EXPECT_EQ(m.base[8] + m.base[inside * fresh_pages::page], 3);
}

TEST(Prefault, LeavesSmallBlocksAlone) {
  fresh_pages m(prefault_min_bytes / fresh_pages::page);
  ASSERT_NE(m.base, MAP_FAILED);
  prefault(m.base, prefault_min_bytes - 1);
  for (bool resident : m.resident()) EXPECT_FALSE(resident);
}

} // namespace
#endif
