// tests/fork_test.cpp - what a child process may do with lfcore structures
// after fork(): an interpreter's fork/1 (or a preforking server) carries
// its atom table and maps into the child, which goes on using them.
//
// The parent's other threads do not exist in the child. Threads that had
// ended before the fork left nothing behind; threads still running at the
// fork keep, in the child, their thread ids and what they had retired or
// protected: the child can use everything, and only those few objects stay
// unreclaimed (here readers, at most 4 each). lfcore's few locks are taken
// by fork handlers (detail/fork_guard.hpp): each of them held by another
// thread while the process forks must not reach the child held. A child
// runs its checks and leaves with _exit (no gtest, no static destructors);
// an alarm turns a hang into a failure.
#include "queues/tracked.hpp"

#include <lfcore/atom_table.hpp>
#include <lfcore/config.hpp>
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/pool_allocator.hpp>
#include <lfcore/thread_registry.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

// tests/stalling_new.cpp: operator new, replaced in this program, stalls the
// next allocation of a pool chunk's size on a thread that armed it.
namespace test {
void stall_next_chunk(std::atomic<bool>& inside, std::atomic<bool>& release) noexcept;
}

namespace {

#define CHILD_CHECK(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "child: %s failed (line %d)\n", #cond, __LINE__);                       \
      _exit(1);                                                                                    \
    }                                                                                              \
  } while (0)

void wait_for(const std::atomic<bool>& flag) {
  while (!flag.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// How a child forked by in_child() ended.
enum class child_end { exited, failed, killed, fork_failed };

// Forks; the child runs f under an alarm of `seconds` (a hang becomes
// SIGALRM) and leaves with _exit(0), or earlier through CHILD_CHECK.
template <class F>
child_end in_child(F f, unsigned seconds) {
  const pid_t pid = fork();
  if (pid == -1) return child_end::fork_failed;
  if (pid == 0) {
    alarm(seconds);
    f();
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return child_end::fork_failed;
  if (WIFSIGNALED(status)) return child_end::killed;
  return WEXITSTATUS(status) == 0 ? child_end::exited : child_end::failed;
}

// qemu-user (scripts/test-cross.sh) aborts when the child of a
// multithreaded fork starts a thread - its own assertion, not lfcore's - so
// this is probed without lfcore.
bool threads_start_in_a_forked_child() {
  std::atomic<bool> stop{false}, runs{false};
  std::thread running([&] {
    runs = true;
    while (!stop.load()) std::this_thread::yield();
  });
  // Not while it starts: under GCC 12's ASan a fork then could leave the
  // child hung (see holding), and the probe would skip the tests.
  wait_for(runs);
  const bool started = in_child([] { std::thread([] {}).join(); }, 5) == child_end::exited;
  stop = true;
  running.join();
  return started;
}

// Why this build cannot run a test that forks while threads run (and, with
// child_threads, starts threads in the child), or nullptr.
const char* cannot_fork_here(bool child_threads) {
  if (lfcore::tsan_build) return "ThreadSanitizer does not follow a multithreaded fork";
  static const bool threads_in_child = threads_start_in_a_forked_child();
  if (child_threads && !threads_in_child)
    return "a forked child cannot start threads here (qemu-user aborts)";
  return nullptr;
}

using map = lfcore::hash_trie_map<long, test::tracked>;
constexpr long writers = 4, keys_per_writer = 2000, readers = 2;
// Hazard pointers a lookup may hold at once (hash_trie_map's reader guards).
constexpr long hazards_per_lookup = 4;

std::string text_of(long k) {
  return "atom-" + std::to_string(k);
}

// Everything the child does; returns only if every check passed.
void child_work(map& m, lfcore::atom_table& atoms) {
  for (long k = 0; k < writers * keys_per_writer; ++k) {
    CHILD_CHECK(m.contains(k));
    CHILD_CHECK(atoms.find(text_of(k)).has_value());
  }
  // The child's own threads get ids, use the map and the pool, and exit.
  std::thread([&] {
    for (long k = -1; k >= -1000; --k) m.try_emplace(k, k);
    lfcore::pool_allocator<std::array<char, 48>> pool;
    std::vector<std::array<char, 48>*> blocks(10000);
    for (auto*& b : blocks) b = pool.allocate(1);
    CHILD_CHECK(std::set(blocks.begin(), blocks.end()).size() == blocks.size());
    for (auto* b : blocks) pool.deallocate(b, 1);
  }).join();
  CHILD_CHECK(m.size() == std::size_t(writers * keys_per_writer + 1000));
  // Erase everything: all but what the vanished readers' hazard pointers
  // protect is destroyed.
  for (long k = -1000; k < writers * keys_per_writer; ++k) CHILD_CHECK(m.erase(k) == 1);
  lfcore::hazard_pointer_reclamation::default_domain().reclaim();
  CHILD_CHECK(m.empty());
  CHILD_CHECK(test::tracked::live.load() <= readers * hazards_per_lookup);
  const lfcore::atom a = atoms.intern_ref("born in the child");
  atoms.release(a);
  CHILD_CHECK(atoms.collect() == 1);
  CHILD_CHECK(!atoms.find("born in the child"));
}

} // namespace

// Writers fill a map and an atom table and end; readers are still looking
// keys and atoms up when the process forks. The child finds everything,
// starts and ends threads of its own, erases every key and reclaims, and
// collects an atom.
TEST(Fork, TheChildKeepsUsingWhatThreadsLeftBehind) {
  if (const char* why = cannot_fork_here(true)) GTEST_SKIP() << why;
  test::tracked::live = 0;
  {
    map m(lfcore::hash_trie_config::for_expected_size(writers * keys_per_writer));
    lfcore::atom_table atoms;
    std::vector<std::thread> threads;
    for (long w = 0; w < writers; ++w)
      threads.emplace_back([&, w] {
        for (long k = w * keys_per_writer; k < (w + 1) * keys_per_writer; ++k) {
          m.try_emplace(k, k);
          atoms.intern(text_of(k));
        }
      });
    for (auto& t : threads) t.join();
    threads.clear();
    std::atomic<bool> stop{false};
    std::atomic<long> lookups{0};
    for (long r = 0; r < readers; ++r)
      threads.emplace_back([&, r] {
        for (long k = r; !stop.load(std::memory_order_relaxed);
             k = (k + 7) % (writers * keys_per_writer)) {
          if (m.contains(k) && atoms.find(text_of(k)))
            lookups.fetch_add(1, std::memory_order_relaxed);
        }
      });
    // The readers are at work; they allocate nothing (texts fit std::string's
    // own buffer), which GCC 12's ASan needs at a fork (see holding).
    while (lookups.load() < 1000) std::this_thread::yield();
    const child_end end = in_child([&] { child_work(m, atoms); }, 60);
    stop = true;
    for (auto& t : threads) t.join();
    ASSERT_NE(end, child_end::fork_failed);
    ASSERT_NE(end, child_end::killed) << "the child hung (its alarm) or crashed";
    EXPECT_EQ(end, child_end::exited) << "a check failed in the child (its stderr says which)";
    EXPECT_EQ(m.size(), std::size_t(writers * keys_per_writer)) << "the parent's map is its own";
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

namespace {

// What fork_while_held shares with the thread that holds a lock.
//
// GCC 12's AddressSanitizer does not lock its allocator or its thread
// registry around fork() (LLVM does since release 18, llvm-project PR
// 75290), so a thread that allocates or ends while the process forks may
// leave one of those locks held in an ASan child. glibc's malloc is
// fork-safe; this is the sanitizer's limit, not lfcore's. So from the
// release of the lock until after the fork, the test's other threads only
// wait (wait_for_fork), and end afterwards.
struct holding {
  std::atomic<bool> inside{false};  // the holder holds the lock
  std::atomic<bool> release{false}; // set 50 ms later: the holder may go on
  std::atomic<bool> forked{false};  // the child has ended
  void wait_for_fork() const { wait_for(forked); }
};

// Forks while another thread holds one of lfcore's locks, stuck in `hold`
// until the release, which a third thread sets 50 ms later; then checks
// that the child could run `in_child_work`, which takes that lock. With the
// fork handlers (detail/fork_guard.hpp) fork() waits for the lock; without
// them the child inherited it held and hung until its alarm.
template <class Hold, class InChild>
void fork_while_held(Hold hold, InChild in_child_work) {
  holding h;
  std::thread holder([&] { hold(h); });
  wait_for(h.inside);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    h.release = true;
    h.wait_for_fork();
  });
  const child_end end = in_child(in_child_work, 5);
  h.forked = true;
  releaser.join();
  holder.join();
  ASSERT_NE(end, child_end::fork_failed);
  ASSERT_NE(end, child_end::killed) << "the child hung: it inherited the lock held";
  EXPECT_EQ(end, child_end::exited);
}

// An exit listener that, on the thread marked, waits inside the registry's
// lock (listeners run under it) until told to go.
struct stalling_listener : lfcore::thread_registry::exit_listener {
  holding* h = nullptr;
  static inline thread_local bool marked = false;
  void on_thread_exit(lfcore::thread_registry::id_type) noexcept override {
    if (!marked) return;
    h->inside = true;
    wait_for(h->release);
  }
};

void end_a_thread_that_used_lfcore() {
  std::thread([] { (void)lfcore::thread_registry::current_id(); }).join();
}

TEST(Fork, ForkWaitsForAThreadEndingUnderTheRegistrysLock) {
  if (const char* why = cannot_fork_here(true)) GTEST_SKIP() << why;
  stalling_listener listener;
  lfcore::thread_registry::add_exit_listener(&listener);
  fork_while_held(
      [&](holding& h) {
        listener.h = &h;
        std::thread([&] {
          // Constructed before the registry's exit hook, so destroyed after
          // it: the thread ends only after the fork.
          static thread_local struct end_after_fork {
            const holding* h;
            ~end_after_fork() { h->wait_for_fork(); }
          } waiter{&h};
          stalling_listener::marked = true;
          (void)lfcore::thread_registry::current_id(); // its exit takes the registry's lock
        }).join();
      },
      end_a_thread_that_used_lfcore);
  lfcore::thread_registry::remove_exit_listener(&listener);
}

TEST(Fork, ForkWaitsForAPoolRefillUnderItsDepotsLock) {
  if (const char* why = cannot_fork_here(true)) GTEST_SKIP() << why;
  using block = std::array<char, 136>; // no other test uses it: its depot starts empty
  fork_while_held(
      [](holding& h) {
        std::thread([&] {
          test::stall_next_chunk(h.inside, h.release); // a depot allocates chunks under its lock
          lfcore::pool_allocator<block> pool;
          pool.deallocate(pool.allocate(1), 1); // the first refill allocates a chunk
          h.wait_for_fork();
        }).join();
      },
      [] { // a refill of its own, and the depot's lock at its thread's end
        std::thread([] {
          lfcore::pool_allocator<block> pool;
          std::vector<block*> held(200);
          for (block*& b : held) b = pool.allocate(1);
          for (block* b : held) pool.deallocate(b, 1);
        }).join();
      });
}

// An atom table's lock, taken by collect(): another thread collects over and
// over while the process forks, and each child collects an atom of its own
// (without the handlers, all 20 hung). The busy thread's collects
// walk 1,000 permanent atoms and find nothing to reclaim, so they allocate
// and free nothing (see holding).
TEST(Fork, AChildNeverInheritsACollectInProgress) {
  if (const char* why = cannot_fork_here(false)) GTEST_SKIP() << why;
  lfcore::atom_table atoms;
  for (long k = 0; k < 1000; ++k) atoms.intern(text_of(k));
  std::atomic<bool> stop{false}, collecting{false};
  std::thread busy([&] {
    while (!stop.load()) {
      atoms.collect();
      collecting = true; // after its first collect: its thread state exists
      // A mutex is not fair: without a gap, this loop could keep the lock
      // from fork()'s handler for seconds.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  while (!collecting.load()) std::this_thread::yield();
  int ends[4] = {};
  for (int fork_number = 0; fork_number < 20; ++fork_number)
    ++ends[static_cast<int>(in_child(
        [&] {
          atoms.release(atoms.intern_ref("born in the child"));
          CHILD_CHECK(atoms.collect() == 1);
        },
        3))];
  stop = true;
  busy.join();
  EXPECT_EQ(ends[static_cast<int>(child_end::killed)], 0)
      << "children that inherited the lock held";
  EXPECT_EQ(ends[static_cast<int>(child_end::failed)], 0);
  EXPECT_EQ(ends[static_cast<int>(child_end::fork_failed)], 0);
}

} // namespace
