// Running out of memory, at every allocation a call makes: each call either
// succeeds as usual or reports the failure as its documentation says
// (ENOMEM from lfht.h, LFCORE_ATOM_ENOMEM from lfcore_atoms.h, std::bad_alloc
// from C++), and then nothing changed, nothing was lost and nothing leaked
// (LeakSanitizer in the ASan build). A call is repeated with its first, second,
// ... allocation failing until one runs without reaching the armed failure:
// then every allocation it makes has failed once.
#include "heap_counter.hpp"

#include <lfcore/chase_lev_deque.hpp>
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/hazard_pointer.hpp>
#include <lfcore/pool_allocator.hpp>
#include <lfcore/work_stealing_pool.hpp>
#include <lfcore_atoms.h>
#include <lfht.h>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <future>
#include <latch>
#include <map>
#include <new>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Runs f on a new thread with that thread's at-th allocation failing; a new
// thread, because a thread's first call into lfcore allocates too (its
// hazard records, its registry slot). Returns whether the failure fired.
template <class F>
bool on_new_thread_failing_at(int at, F f) {
  bool fired = false;
  std::thread([&] {
    test::fail_allocation_in(at);
    f();
    fired = test::allocation_failed();
    test::fail_allocation_in(0);
  }).join();
  return fired;
}

constexpr int max_allocations = 64; // more in one call would be a bug of its own

// Threads that keep their hazard records until the test ends. A new thread
// reuses the records of threads that ended, so a call that allocates nothing
// else (a lookup, say) allocates only while every record is held: one more
// holder before each call keeps it so.
class record_holders {
public:
  template <class F>
  void add(F f) {
    std::latch ready{1};
    threads_.emplace_back([&ready, f, this] {
      f();
      ready.count_down();
      done_.wait();
    });
    ready.wait();
  }
  void join() {
    if (threads_.empty()) return;
    done_.count_down();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  ~record_holders() { join(); }

private:
  std::latch done_{1};
  std::vector<std::thread> threads_;
};

using u64_map = std::map<std::uintptr_t, std::uintptr_t>;

void* as_ptr(std::uintptr_t v) {
  return reinterpret_cast<void*>(v);
}

u64_map contents(lfht_head* head) {
  u64_map now;
  const int rc = lfht_for_each(
      head,
      [](void* k, void* v, void* arg) {
        static_cast<u64_map*>(arg)->emplace(reinterpret_cast<std::uintptr_t>(k),
                                            reinterpret_cast<std::uintptr_t>(v));
        return 0;
      },
      &now);
  EXPECT_EQ(rc, 0);
  return now;
}

// Where a pointer escapes, so that no allocation below is elided.
void* volatile escaped = nullptr;
template <class T>
T* kept(T* p) {
  escaped = p;
  return p;
}

// The counter replaces every form of operator new and delete: each form is
// counted and pairs with its delete, and an armed failure makes the nothrow
// forms return null. Under AddressSanitizer, whose runtime defines every
// form, a form left out allocated without the counter's header (libFuzzer's
// new (std::nothrow) did, and scripts/fuzz.sh stopped in the counter's delete).
TEST(HeapCounter, EveryFormOfNewIsCountedAndPairsWithItsDelete) {
  struct alignas(64) wide {
    char bytes[64];
  };
  const long long before = test::live_heap_bytes();
  auto* one = kept(new (std::nothrow) std::uint64_t(7));
  auto* several = kept(new (std::nothrow) std::uint64_t[5]);
  auto* array = kept(new std::uint64_t[3]);
  auto* aligned = kept(new (std::nothrow) wide);
  auto* aligned_array = kept(new wide[2]);
  const long long held = test::live_heap_bytes() - before;
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(aligned_array) % 64, 0u);
  delete one;
  delete[] several;
  delete[] array;
  delete aligned;
  delete[] aligned_array;
  EXPECT_EQ(held, (1 + 5 + 3) * 8 + 3 * 64);
  EXPECT_EQ(test::live_heap_bytes(), before);

  const bool fired = on_new_thread_failing_at(1, [] {
    int* p = kept(new (std::nothrow) int(1));
    EXPECT_EQ(p, nullptr) << "an armed failure makes a nothrow new return null";
    delete p;
  });
  EXPECT_TRUE(fired);
}

TEST(OutOfMemory, LfhtCallsReportEnomemAndChangeNothing) {
  lfht_head* head = init_lfht(nullptr, nullptr, nullptr); // the key is its own hash
  ASSERT_NE(head, nullptr);
  u64_map model;
  for (std::uintptr_t k = 1; k <= 20; ++k) {
    ASSERT_EQ(lfht_insert(head, as_ptr(k), as_ptr(10 * k)), as_ptr(10 * k));
    model[k] = 10 * k;
  }
  constexpr std::uintptr_t kept = 999, never = 1000; // the calls' keys are 1..40
  ASSERT_EQ(lfht_insert(head, as_ptr(kept), as_ptr(kept)), as_ptr(kept));
  model[kept] = kept;
  int reported[6] = {};
  record_holders holders;
  for (int call = 0; call < 6; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    for (int at = 1;; ++at) {
      ASSERT_LE(at, max_allocations);
      holders.add([head] { // every call's way through the table, changing nothing
        EXPECT_EQ(lfht_insert(head, as_ptr(kept), as_ptr(1)), as_ptr(kept));
        EXPECT_EQ(lfht_search(head, as_ptr(kept)), as_ptr(kept));
        EXPECT_EQ(lfht_remove(head, as_ptr(never)), nullptr);
        EXPECT_NE(lfht_next_key(head, nullptr), nullptr);
      });
      const std::uintptr_t k = 1 + static_cast<std::uintptr_t>(at * 7 + call) % 40;
      void* result = nullptr;
      int error = 0;
      const bool fired = on_new_thread_failing_at(at, [&] {
        errno = 0;
        switch (call) {
        case 0:
          result = lfht_insert(head, as_ptr(k), as_ptr(10 * k + 1));
          break;
        case 1:
          result = lfht_search(head, as_ptr(k));
          break;
        case 2:
          result = lfht_remove(head, as_ptr(k));
          break;
        case 3:
          result = lfht_next_key(head, nullptr);
          break;
        case 4:
          if (lfht_head* other = init_lfht(nullptr, nullptr, nullptr)) {
            result = other;
            lfht_free(other);
          }
          break;
        default:
          if (lfht_head* other = init_lfht_sized(nullptr, nullptr, nullptr, 100000)) {
            result = other;
            lfht_free(other);
          }
        }
        error = errno;
      });
      const auto present = model.find(k);
      if (result == nullptr && error == ENOMEM) {
        ++reported[call];
        EXPECT_TRUE(fired) << "ENOMEM without a failed allocation";
      } else {
        EXPECT_EQ(error, 0) << "at " << at;
        switch (call) {
        case 0:
          if (present == model.end()) {
            EXPECT_EQ(result, as_ptr(10 * k + 1));
            model[k] = 10 * k + 1;
          } else {
            EXPECT_EQ(result, as_ptr(present->second)) << "the value already there";
          }
          break;
        case 1:
        case 2:
          EXPECT_EQ(result, present == model.end() ? nullptr : as_ptr(present->second));
          if (call == 2 && present != model.end()) model.erase(present);
          break;
        case 3:
          EXPECT_EQ(model.count(reinterpret_cast<std::uintptr_t>(result)), 1u);
          break;
        default:
          EXPECT_NE(result, nullptr);
        }
      }
      ASSERT_EQ(contents(head), model) << "at " << at;
      if (!fired) break;
    }
  }
  for (int call = 0; call < 6; ++call)
    EXPECT_GE(reported[call], 1) << "call " << call << " can run out of memory";
  holders.join();
  lfht_free(head);
}

std::optional<std::string> atom_text(lfcore_atom_table* t, const std::string& s) {
  lfcore_atom a = 0;
  const int rc = lfcore_atoms_lookup(t, s.data(), s.size(), &a);
  if (rc == LFCORE_ATOM_ENOTFOUND) return std::nullopt;
  EXPECT_EQ(rc, LFCORE_ATOM_OK);
  std::size_t len = 0;
  const char* name = lfcore_atoms_name(a, &len);
  EXPECT_EQ(lfcore_atoms_release(t, a), LFCORE_ATOM_OK);
  return std::string(name, len);
}

TEST(OutOfMemory, AtomCallsReportEnomemAndChangeNothing) {
  for (const std::size_t expected_atoms : {std::size_t(0), std::size_t(1000)}) {
    SCOPED_TRACE("expected_atoms " + std::to_string(expected_atoms));
    lfcore_atom_table* t = lfcore_atoms_create(expected_atoms);
    ASSERT_NE(t, nullptr);
    lfcore_atom probe = 0; // permanent, for the lookups below
    ASSERT_EQ(lfcore_atoms_intern(t, "probe", 5, 0, &probe), LFCORE_ATOM_OK);
    std::size_t atoms = 1, counted_atoms = 0, reported = 0;
    for (const unsigned flags : {0u, LFCORE_ATOM_REF}) {
      for (int at = 1;; ++at) {
        ASSERT_LE(at, max_allocations);
        // A new text every time, so that every intern creates an atom.
        const std::string text = "atom " + std::to_string(flags) + "/" + std::to_string(at);
        int rc = 0;
        lfcore_atom a = 0;
        const bool fired = on_new_thread_failing_at(
            at, [&] { rc = lfcore_atoms_intern(t, text.data(), text.size(), flags, &a); });
        if (rc == LFCORE_ATOM_ENOMEM) {
          ++reported;
          EXPECT_TRUE(fired);
          EXPECT_EQ(atom_text(t, text), std::nullopt) << "a failed intern left its atom";
        } else {
          ASSERT_EQ(rc, LFCORE_ATOM_OK) << "at " << at;
          ++atoms;
          counted_atoms += flags == LFCORE_ATOM_REF;
          EXPECT_EQ(atom_text(t, text), text);
          EXPECT_EQ(lfcore_atoms_release(t, a), LFCORE_ATOM_OK);
        }
        ASSERT_EQ(lfcore_atoms_size(t), atoms);
        if (!fired) break;
      }
    }
    // Lookups and creating a table fail as cleanly.
    for (int at = 1;; ++at) {
      ASSERT_LE(at, max_allocations);
      int lookup = 0;
      bool created = false;
      const bool fired = on_new_thread_failing_at(at, [&] {
        lfcore_atom a = 0;
        lookup = lfcore_atoms_lookup(t, "probe", 5, &a);
        if (lookup == LFCORE_ATOM_OK) lookup = lfcore_atoms_release(t, a);
        lfcore_atom_table* other = lfcore_atoms_create(expected_atoms);
        created = other != nullptr;
        lfcore_atoms_destroy(other);
      });
      EXPECT_TRUE(lookup == LFCORE_ATOM_OK || lookup == LFCORE_ATOM_ENOMEM) << lookup;
      if (!fired) {
        EXPECT_TRUE(created);
        break;
      }
    }
    EXPECT_GE(reported, 2u);
    std::size_t collected = 0;
    EXPECT_EQ(lfcore_atoms_collect(t, &collected), LFCORE_ATOM_OK);
    EXPECT_EQ(collected, counted_atoms) << "an atom's reference was lost or kept";
    EXPECT_EQ(lfcore_atoms_size(t), atoms - counted_atoms);
    lfcore_atoms_destroy(t);
  }
}

// Three hashes: long chains, whose keys a batch gathers out of chain order.
struct three_hashes {
  std::size_t operator()(const std::string& s) const noexcept { return s.back() % 3u; }
};

// An iterator step that runs out of memory - copying the keys of the batch
// it gathers ahead (std::string keys longer than the small-string buffer),
// or the batch itself - throws and leaves the iterator at its element; the
// next step gathers again, and no key is skipped or visited twice.
TEST(OutOfMemory, AnIteratorStepThatThrowsLeavesTheIteratorWhereItWas) {
  lfcore::hash_trie_map<std::string, long, three_hashes> m(lfcore::hash_trie_config{2, 2, 2});
  constexpr long n = 300;
  std::vector<long> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(5)); // chains out of key order
  const auto key = [](long k) { return "a key past the small-string size " + std::to_string(k); };
  for (long k : order) m.try_emplace(key(k), k);
  std::set<long> seen;
  int threw = 0, step = 0;
  for (auto it = m.begin(); it != m.end();) {
    ASSERT_TRUE(seen.insert(it->second).second) << "visited twice";
    const long at = it->second;
    test::fail_allocation_in(1 + step++ % 20); // among the step's first 20 allocations
    try {
      ++it;
      test::fail_allocation_in(0);
    } catch (const std::bad_alloc&) {
      test::fail_allocation_in(0);
      ++threw;
      ASSERT_EQ(it->second, at) << "a failed step moved the iterator";
      ++it;
    }
  }
  EXPECT_EQ(seen.size(), std::size_t(n));
  EXPECT_GT(threw, 10);
}

// pool_allocator's depot cannot grow its lists: a thread that gives a full
// magazine back, or ends, keeps those blocks unused in their chunks (still
// reachable, so not leaked), loses nothing else, and the pool goes on
// serving. A block size no other test of this program uses, so that the
// depot's lists start empty and their first growth is the armed allocation.
TEST(OutOfMemory, APoolWhoseDepotCannotGrowGoesOnServing) {
  using block = std::array<char, 72>;
  lfcore::pool_allocator<block> pool;
  constexpr int blocks = 4096; // many magazines' worth
  bool fired_on_free = false;
  std::thread([&] {
    std::vector<block*> held(blocks);
    for (block*& b : held) b = pool.allocate(1);
    test::fail_allocation_in(1);
    for (block* b : held) pool.deallocate(b, 1);
    fired_on_free = test::allocation_failed();
    test::fail_allocation_in(0);
    for (block*& b : held) b = pool.allocate(1); // still served, from blocks or new chunks
    std::set<block*> distinct(held.begin(), held.end());
    EXPECT_EQ(distinct.size(), held.size()) << "a block was handed out twice";
    for (block* b : held) pool.deallocate(b, 1);
    test::fail_allocation_in(1); // the flush at thread exit, where it grows a list
  }).join();
  EXPECT_TRUE(fired_on_free);
  block* b = pool.allocate(1); // another thread, after all that
  b->fill('x');
  pool.deallocate(b, 1);
}

// The same after a thread's exit hook, when frees go to the depot one block
// at a time: a block that cannot join a magazine stays unused in its chunk,
// never handed out again, and the blocks freed after it are served as usual.
// A thread_local constructed before the pool's first use on its thread is
// destroyed after the hook. Another block size of its own (fresh lists).
TEST(OutOfMemory, ABlockFreedAfterTheExitHookWhenTheDepotCannotGrowStaysUnused) {
  using block = std::array<char, 88>;
  static block* early;
  static block* late[2];
  static bool fired = false;
  struct late_user {
    ~late_user() {
      lfcore::pool_allocator<block> pool;
      for (block*& b : late) b = pool.allocate(1); // from the tail the hook handed over
      test::fail_allocation_in(1);
      pool.deallocate(late[0], 1); // the depot's first magazine: its list cannot grow
      fired = test::allocation_failed();
      test::fail_allocation_in(0);
      pool.deallocate(late[1], 1); // a magazine of one
    }
  };
  std::thread([] {
    static thread_local late_user user;
    (void)&user;                                         // constructed now, before the pool's hook
    early = lfcore::pool_allocator<block>().allocate(1); // kept: the hook hands over a tail only
  }).join();
  ASSERT_TRUE(fired);
  lfcore::pool_allocator<block> pool;
  block* a = pool.allocate(1);
  block* b = pool.allocate(1);
  EXPECT_EQ(a, late[1]) << "the magazine of one";
  const std::set<block*> distinct{early, late[0], late[1], b};
  EXPECT_EQ(distinct.size(), 4u) << "the block that could not be given back was handed out";
  for (block* p : {a, b, early}) pool.deallocate(p, 1);
}

// GCC constructs all of a translation unit's thread_locals together, so a
// thread's first use of one pool also constructs the exit hooks of every
// other pool this file uses, and they run when the thread ends. A hook of a
// pool the thread never used must touch nothing: here the other pool has no
// depot yet, and allocating one as the thread ends, with memory refused,
// threw from a destructor (std::terminate) before 2026-12-02.
TEST(OutOfMemory, AThreadEndingWithoutMemoryTouchesNoPoolItDidNotUse) {
  using used = std::array<char, 104>;
  using never_used = std::array<char, 120>;
  used* kept[2];
  for (used*& p : kept)
    std::thread([&p] {
      p = lfcore::pool_allocator<used>().allocate(1); // kept: the hook hands back a tail only
      test::fail_allocation_in(1); // the first allocation the exit hooks make fails
    }).join();
  EXPECT_NE(kept[0], kept[1]);
  for (used* p : kept) lfcore::pool_allocator<used>().deallocate(p, 1);
  static std::atomic<bool> never{false};
  if (never) { // instantiates the other pool's hooks in this file
    lfcore::pool_allocator<never_used> a;
    a.deallocate(a.allocate(1), 1);
  }
}

std::atomic<int> destroyed{0};
struct counted : lfcore::hazard_pointer_obj_base<counted> {
  ~counted() { ++destroyed; }
};

// A scan that cannot allocate the list of hazards keeps every object it was
// to look at, and the next scan frees them: running out of memory delays
// reclamation, never frees a protected object or loses one.
TEST(OutOfMemory, AScanWithoutMemoryKeepsItsObjectsForTheNext) {
  auto& domain = lfcore::hazard_pointer_default_domain();
  domain.reclaim();
  std::thread([&] {
    constexpr int retired = 10, more_hazards = 64;
    destroyed = 0;
    // Retired while protected, so that no scan frees them before ours.
    std::vector<lfcore::hazard_pointer> hps;
    const auto protect = [&](counted* c) {
      hps.push_back(lfcore::make_hazard_pointer());
      std::atomic<counted*> source{c};
      hps.back().protect(source);
    };
    for (int i = 0; i < retired; ++i) {
      auto* c = new counted;
      protect(c);
      c->retire();
    }
    // More hazards than any scan of this thread has listed: the next scan
    // must grow its list, and that allocation fails.
    std::vector<counted> pinned(more_hazards);
    for (counted& c : pinned) protect(&c);
    test::fail_allocation_in(1);
    const std::size_t freed = domain.reclaim();
    const bool fired = test::allocation_failed();
    test::fail_allocation_in(0);
    EXPECT_TRUE(fired) << "the scan allocated nothing";
    EXPECT_EQ(freed, 0u);
    EXPECT_EQ(destroyed.load(), 0);
    hps.clear(); // protects nothing any more
    domain.reclaim();
    EXPECT_EQ(destroyed.load(), retired) << "a retired object was lost";
  }).join();
}

// A push that cannot grow the array throws and leaves the deque as it was.
TEST(OutOfMemory, ADequeThatCannotGrowKeepsItsElements) {
  int threw = 0;
  for (int at = 1;; ++at) {
    ASSERT_LE(at, max_allocations);
    lfcore::chase_lev_deque<int> d(2);
    d.push(1);
    d.push(2);
    bool pushed = false;
    const bool fired = on_new_thread_failing_at(at, [&] { // the owner is whoever pushes
      try {
        d.push(3);
        pushed = true;
      } catch (const std::bad_alloc&) {
        ++threw;
      }
    });
    if (pushed) {
      EXPECT_EQ(d.pop(), std::optional<int>(3));
    }
    EXPECT_EQ(d.pop(), std::optional<int>(2));
    EXPECT_EQ(d.pop(), std::optional<int>(1));
    EXPECT_EQ(d.pop(), std::nullopt);
    d.push(4); // it still grows when memory is back
    d.push(5);
    d.push(6);
    EXPECT_EQ(d.pop(), std::optional<int>(6));
    if (!fired) break;
  }
  EXPECT_GE(threw, 1);
}

// submit() that runs out of memory throws, and its task never runs; every
// task whose submit returned runs exactly once. From outside the pool (the
// injection queue) and from a worker (its own deque, which grows).
TEST(OutOfMemory, ASubmitThatThrowsRunsNothing) {
  std::atomic<int> ran{0};
  int submitted = 0, threw = 0;
  {
    lfcore::work_stealing_pool pool(2);
    const auto submit_failing_at = [&](int at) {
      test::fail_allocation_in(at);
      try {
        std::future<void> f = pool.submit([&] { ++ran; });
        test::fail_allocation_in(0);
        ++submitted;
      } catch (const std::bad_alloc&) {
        test::fail_allocation_in(0);
        ++threw;
      }
      return test::allocation_failed();
    };
    for (int at = 1; at <= max_allocations && submit_failing_at(at); ++at) {
    }
    pool.submit([&] {
          for (int round = 0; round < 4; ++round) // the deque grows past its first arrays
            for (int at = 1; at <= max_allocations && submit_failing_at(at); ++at) {
            }
        })
        .get();
  } // the destructor runs everything submitted
  EXPECT_EQ(ran.load(), submitted);
  EXPECT_GE(threw, 2);
}

// task_group::run() that runs out of memory throws and leaves the group as
// if it had not been called: wait() returns once the tasks that were
// spawned have run (a group that counted the failed one would wait forever).
TEST(OutOfMemory, ATaskGroupRunThatThrowsIsNotWaitedFor) {
  lfcore::work_stealing_pool pool(2);
  lfcore::task_group g(pool);
  std::atomic<int> ran{0};
  int spawned = 0, threw = 0;
  for (int at = 1; at <= max_allocations; ++at) {
    test::fail_allocation_in(at);
    try {
      g.run([&] { ++ran; });
      test::fail_allocation_in(0);
      ++spawned;
    } catch (const std::bad_alloc&) {
      test::fail_allocation_in(0);
      ++threw;
      continue;
    }
    if (!test::allocation_failed()) break;
  }
  g.wait();
  EXPECT_EQ(ran.load(), spawned);
  EXPECT_GE(threw, 1);
}

} // namespace
