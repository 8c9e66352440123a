// pool_allocator: blocks are distinct, aligned and kept apart; freed blocks
// are reused by the same thread, by other threads (through the depot) and
// after a thread exits; what is not pooled goes to std::allocator. Each test
// uses a type of its own size, so that its pool starts untouched by the
// others (pools are per block size and process-wide).
#include <lfcore/pool_allocator.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <list>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

template <std::size_t Bytes, std::size_t Align = 8>
struct alignas(Align) blob {
  unsigned char bytes[Bytes];
};

template <class T>
using pool_of = lfcore::detail::pool_for<T>;

static_assert(std::allocator_traits<lfcore::pool_allocator<int>>::is_always_equal::value);
static_assert(pool_of<blob<24>>::size == 24 && pool_of<blob<20, 4>>::size == 24);
static_assert(pool_of<char>::size == sizeof(void*)); // a free block holds a link
static_assert(pool_of<blob<48, 16>>::size == 48 && pool_of<blob<48, 16>>::align == 16);
static_assert(!pool_of<blob<257>>::pooled && !pool_of<blob<64, 64>>::pooled);

template <class T>
std::size_t reserved() {
  return lfcore::pool_allocator<T>::reserved_bytes();
}

template <class T>
constexpr std::size_t chunk_bytes() {
  using pool = typename pool_of<T>::type;
  return pool::blocks_per_chunk * pool_of<T>::size;
}

void fill(void* p, std::size_t n, std::uintptr_t tag) {
  std::memset(p, static_cast<int>(tag & 0xff), n);
}
bool filled_with(const void* p, std::size_t n, std::uintptr_t tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>(tag & 0xff)) return false;
  return true;
}

TEST(PoolAllocator, BlocksAreDistinctAlignedAndKeptApart) {
  using T = blob<48, 16>;
  lfcore::pool_allocator<T> a;
  std::vector<T*> live;
  std::set<T*> seen;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5000; ++i) {
      T* p = a.allocate(1);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16, 0u);
      ASSERT_TRUE(seen.insert(p).second) << "a live block handed out twice";
      fill(p, sizeof(T), reinterpret_cast<std::uintptr_t>(p) >> 4);
      live.push_back(p);
    }
    // Free every other block; the survivors must keep their contents.
    std::vector<T*> kept;
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (i % 2 == 0) {
        seen.erase(live[i]);
        a.deallocate(live[i], 1);
      } else {
        kept.push_back(live[i]);
      }
    }
    live = kept;
    for (T* p : live)
      ASSERT_TRUE(filled_with(p, sizeof(T), reinterpret_cast<std::uintptr_t>(p) >> 4));
  }
  for (T* p : live) a.deallocate(p, 1);
}

TEST(PoolAllocator, ArraysAndOverAlignedTypesUseStdAllocator) {
  lfcore::pool_allocator<blob<64, 64>> wide;
  auto* w = wide.allocate(1);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w) % 64, 0u);
  wide.deallocate(w, 1); // that it bypasses the pool: the static_assert above

  using T = blob<72>;
  lfcore::pool_allocator<T> a;
  T* arr = a.allocate(100);
  fill(arr, 100 * sizeof(T), 7);
  EXPECT_TRUE(filled_with(arr, 100 * sizeof(T), 7));
  a.deallocate(arr, 100);
  EXPECT_EQ(reserved<T>(), 0u) << "an array was taken from the pool";
}

TEST(PoolAllocator, OneThreadReusesWhatItFrees) {
  using T = blob<80>;
  lfcore::pool_allocator<T> a;
  std::vector<T*> blocks(20000);
  for (auto& p : blocks) p = a.allocate(1);
  for (auto* p : blocks) a.deallocate(p, 1);
  const std::size_t after_first = reserved<T>();
  EXPECT_GE(after_first, blocks.size() * sizeof(T));
  for (int round = 0; round < 20; ++round) {
    for (auto& p : blocks) p = a.allocate(1);
    for (auto* p : blocks) a.deallocate(p, 1);
  }
  EXPECT_EQ(reserved<T>(), after_first);
}

// One thread allocates, another frees: the freeing thread's full magazines
// must travel back through the depot, or the allocating thread would take a
// new chunk for every block (2e5 of them here).
TEST(PoolAllocator, BlocksFreedByAnotherThreadComeBack) {
  using T = blob<96>;
  lfcore::pool_allocator<T> a;
  constexpr int total = 200000, in_flight = 256;
  std::mutex m;
  std::vector<T*> handoff;
  std::atomic<bool> done{false};
  std::thread consumer([&] {
    for (;;) {
      std::vector<T*> got;
      {
        std::lock_guard lock(m);
        got.swap(handoff);
      }
      for (T* p : got) {
        EXPECT_TRUE(filled_with(p, sizeof(T), 0x5a));
        a.deallocate(p, 1);
      }
      if (got.empty()) {
        if (done.load(std::memory_order_acquire)) {
          std::lock_guard lock(m);
          if (handoff.empty()) return;
        }
        std::this_thread::yield();
      }
    }
  });
  for (int i = 0; i < total; ++i) {
    T* p = a.allocate(1);
    fill(p, sizeof(T), 0x5a);
    for (;;) {
      std::lock_guard lock(m);
      if (handoff.size() < in_flight) {
        handoff.push_back(p);
        break;
      }
    }
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  // In flight (the hand-off and the batch the consumer is freeing), two
  // threads' magazines and tails, and the depot's magazines: a few chunks'
  // worth, against total * sizeof(T) = 19 MB without reuse.
  using pool = pool_of<T>::type;
  const std::size_t bound =
      (2 * in_flight + 6 * pool::magazine_size) * sizeof(T) + 4 * chunk_bytes<T>();
  EXPECT_LE(reserved<T>(), bound);
}

TEST(PoolAllocator, ThreadsThatExitLeaveTheirBlocksToOthers) {
  using T = blob<104>;
  lfcore::pool_allocator<T> a;
  for (int generation = 0; generation < 50; ++generation) {
    std::thread([&] {
      std::vector<T*> blocks(1000);
      for (auto& p : blocks) p = a.allocate(1);
      for (auto* p : blocks) a.deallocate(p, 1);
    }).join();
  }
  // Without the hand-over at exit each generation would take new chunks.
  using pool = pool_of<T>::type;
  EXPECT_LE(reserved<T>(),
            1000 * sizeof(T) + 2 * pool::magazine_size * sizeof(T) + 2 * chunk_bytes<T>());
}

// A thread_local constructed before the thread's first use of the pool is
// destroyed after the pool's own exit hook: what it frees and allocates then
// goes through the depot, one block at a time.
TEST(PoolAllocator, FreesAfterTheThreadsExitHookStillWork) {
  using T = blob<112>;
  struct late_user {
    T* held = nullptr;
    ~late_user() {
      lfcore::pool_allocator<T> a;
      a.deallocate(held, 1);
      T* p = a.allocate(1); // from the depot
      fill(p, sizeof(T), 3);
      a.deallocate(p, 1);
    }
  };
  for (int i = 0; i < 20; ++i) {
    std::thread([] {
      static thread_local late_user user;
      late_user& u = user; // constructed now, before the pool's hook
      lfcore::pool_allocator<T> a;
      u.held = a.allocate(1);
      fill(u.held, sizeof(T), 1);
      std::vector<T*> more(300);
      for (auto& p : more) p = a.allocate(1);
      for (auto* p : more) a.deallocate(p, 1);
    }).join();
  }
  using pool = pool_of<T>::type;
  EXPECT_LE(reserved<T>(), 2 * (301 + 2 * pool::magazine_size) * sizeof(T) + 2 * chunk_bytes<T>());
}

// After the exit hook, with no magazine in the depot, an allocation carves a
// block from the thread's own leftover chunk (handed to the depot at its
// exit), and frees after the hook gather in one magazine, which the next
// thread to need blocks takes whole. A block size no other test uses, so
// that this pool's depot holds exactly what this test put there.
TEST(PoolAllocator, AfterTheExitHookBlocksComeFromTheTailAndGatherInAMagazine) {
  using T = blob<128>;
  static T* freed_late[2];
  static T* taken_early;
  struct late_user {
    ~late_user() {
      lfcore::pool_allocator<T> a;
      for (T*& p : freed_late) {
        p = a.allocate(1); // the depot has no magazine: from the tail
        fill(p, sizeof(T), 5);
      }
      for (T* p : freed_late) {
        EXPECT_TRUE(filled_with(p, sizeof(T), 5));
        a.deallocate(p, 1); // the second joins the first's magazine
      }
    }
  };
  std::thread([] {
    static thread_local late_user user;
    (void)&user; // constructed now, before the pool's hook
    lfcore::pool_allocator<T> a;
    taken_early = a.allocate(1); // takes a chunk; its rest is the tail the hook hands over
  }).join();
  ASSERT_NE(freed_late[0], freed_late[1]);
  EXPECT_EQ(reserved<T>(), chunk_bytes<T>()); // the late blocks came from the first chunk
  lfcore::pool_allocator<T> a;
  T* first = a.allocate(1);
  T* second = a.allocate(1);
  EXPECT_EQ(first, freed_late[1]); // both from the one magazine, last freed first
  EXPECT_EQ(second, freed_late[0]);
  a.deallocate(first, 1);
  a.deallocate(second, 1);
  a.deallocate(taken_early, 1);
}

TEST(PoolAllocator, ServesAStandardContainer) {
  std::list<int, lfcore::pool_allocator<int>> l;
  for (int i = 0; i < 100000; ++i) l.push_back(i);
  long sum = 0;
  for (int v : l) sum += v;
  EXPECT_EQ(sum, 100000L * 99999 / 2);
  l.clear();
}

#if defined(LFCORE_ASAN)
TEST(PoolAllocatorDeathTest, UseAfterFreeIsReportedUnderAddressSanitizer) {
  using T = blob<120>;
  EXPECT_DEATH(
      {
        lfcore::pool_allocator<T> a;
        T* p = a.allocate(1);
        a.deallocate(p, 1);
        volatile unsigned char c = p->bytes[40];
        (void)c;
      },
      "use-after-poison");
}
#endif

} // namespace
