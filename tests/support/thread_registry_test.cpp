#include <lfcore/thread_registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using lfcore::thread_registry;

TEST(ThreadRegistry, IdIsStableWithinAThread) {
  const auto id = thread_registry::current_id();
  EXPECT_EQ(id, thread_registry::current_id());
  EXPECT_LT(id, thread_registry::high_water());
}

TEST(ThreadRegistry, LiveThreadsGetDistinctDenseIds) {
  constexpr int n = 16;
  std::vector<thread_registry::id_type> ids(n);
  std::barrier all_have_ids(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      ids[i] = thread_registry::current_id();
      all_have_ids.arrive_and_wait(); // nobody exits (and frees an id) before all hold one
    });
  for (auto& t : threads) t.join();
  std::set<thread_registry::id_type> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(n));
  // Dense: with this thread and n more alive, no id needs to exceed a small bound.
  EXPECT_LT(*distinct.rbegin(), static_cast<thread_registry::id_type>(n + 8));
}

TEST(ThreadRegistry, IdsAreRecycledAfterExit) {
  thread_registry::current_id();
  const auto before = thread_registry::high_water();
  for (int round = 0; round < 200; ++round)
    std::thread([] { thread_registry::current_id(); }).join();
  // 200 threads one after another reuse the same few ids.
  EXPECT_LE(thread_registry::high_water(), before + 1);
}

namespace {
struct recording_listener final : thread_registry::exit_listener {
  std::mutex m;
  std::vector<thread_registry::id_type> exited;
  void on_thread_exit(thread_registry::id_type id) noexcept override {
    std::lock_guard lock(m);
    exited.push_back(id);
  }
};
} // namespace

TEST(ThreadRegistry, ExitListenersHearEveryExitUntilRemoved) {
  recording_listener listener;
  thread_registry::add_exit_listener(&listener);
  thread_registry::id_type id1 = 0, id2 = 0;
  std::thread([&] { id1 = thread_registry::current_id(); }).join();
  std::thread([&] { id2 = thread_registry::current_id(); }).join();
  std::thread([] {}).join(); // never asked for an id: no exit hook
  thread_registry::remove_exit_listener(&listener);
  std::thread([] { thread_registry::current_id(); }).join();
  ASSERT_EQ(listener.exited.size(), 2u);
  EXPECT_EQ(listener.exited[0], id1);
  EXPECT_EQ(listener.exited[1], id2);
}
