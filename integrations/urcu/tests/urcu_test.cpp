// lfcore::urcu beyond the typed container suites (tests/hash_trie,
// tests/queues): the qsbr flavour with application-managed threads, and the
// garbage a stalled reader holds back under RCU and under hazard pointers.
#include <lfcore/urcu.hpp>

#include <lfcore/hash_trie_map.hpp>
#include <lfcore/unbounded_mpmc_queue.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

/// Counts live values, so a test sees exactly what reclamation destroyed.
struct counted {
  static inline std::atomic<long> live{0};
  long value;
  explicit counted(long v) : value(v) { live.fetch_add(1, std::memory_order_relaxed); }
  counted(const counted& o) : value(o.value) { live.fetch_add(1, std::memory_order_relaxed); }
  ~counted() { live.fetch_sub(1, std::memory_order_relaxed); }
};

template <class R>
using counted_map = lfcore::hash_trie_map<long, counted, std::hash<long>, std::equal_to<long>,
                                          std::allocator<std::pair<const long, counted>>, R>;

constexpr long churn = 100'000;

// Inserts and erases `churn` keys other than 0 on another thread while the
// caller holds an iterator to key 0 (a reader stalled inside a read-side
// section, as far as reclamation can tell). Returns how many erased values
// were still alive when the churn ended.
template <class R>
long garbage_behind_a_stalled_reader(counted_map<R>& m) {
  m.try_emplace(0, 0);
  const long before = counted::live.load();
  long garbage = 0;
  {
    auto stalled = m.find(0);
    std::thread writer([&] {
      for (long k = 1; k <= churn; ++k) {
        m.try_emplace(k, k);
        m.erase(k);
      }
      // Hazard pointers: scan now. RCU: reclaim() would wait for the stalled
      // reader; full batches are with call_rcu already, and its thread gets time below.
      if constexpr (R::bounded_garbage) R::default_domain().reclaim();
    });
    writer.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(stalled->second.value, 0) << "the stalled reader's element is intact";
    garbage = counted::live.load() - before; // while the reader is still stalled
  }
  return garbage;
}

TEST(Urcu, StalledReaderHoldsBackAllGarbageUnderRcu) {
  counted_map<lfcore::urcu::memb> m;
  const long garbage = garbage_behind_a_stalled_reader(m);
  EXPECT_EQ(garbage, churn) << "no erased value can be freed while a section that began "
                               "before its erase is open";
  lfcore::urcu::memb::default_domain().reclaim(); // the reader is gone now
  EXPECT_EQ(counted::live.load(), 1) << "only key 0 remains";
}

TEST(Urcu, StalledReaderHoldsBackBoundedGarbageUnderHazardPointers) {
  counted_map<lfcore::hazard_pointer_reclamation> m;
  const long garbage = garbage_behind_a_stalled_reader(m);
  const auto bound = static_cast<long>(lfcore::hazard_pointer_default_domain().garbage_bound());
  EXPECT_LT(garbage, churn / 4) << "most erased values were freed despite the stalled reader";
  EXPECT_LE(garbage, bound);
}

TEST(Urcu, MembRegistersThreadsAndReclaimsAcrossThreadExit) {
  counted::live = 0;
  {
    lfcore::urcu::hash_trie_map<long, counted> m;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (long k = 0; k < 1000; ++k) m.try_emplace(t * 1000 + k, k);
        for (long k = 0; k < 1000; k += 2) m.erase(t * 1000 + k);
      }); // each exits with a partial batch, left as an orphan
    for (auto& th : threads) th.join();
    lfcore::urcu::memb::default_domain().reclaim();
    EXPECT_EQ(counted::live.load(), 2000) << "every erased value is destroyed, orphans included";
    const auto stats = lfcore::urcu::memb::default_domain().stats();
    EXPECT_EQ(stats.pending(), 0u);
  }
  EXPECT_EQ(counted::live.load(), 0);
}

// A thread the application registered stays the application's: lfcore must
// neither register it again (liburcu's registry would hold it twice) nor
// unregister it at exit.
TEST(Urcu, MembLeavesTheApplicationsRegistrationAlone) {
  std::thread([] {
    urcu_memb_register_thread();
    {
      lfcore::urcu::hash_trie_map<long, long> m;
      for (long k = 0; k < 1000; ++k) m.insert({k, k});
      for (long k = 0; k < 1000; ++k) m.erase(k);
    }
    lfcore::urcu::memb::default_domain().reclaim();
    urcu_memb_unregister_thread(); // liburcu asserts if the thread was not registered
  }).join();
  urcu_memb_synchronize_rcu(); // would never return if the registry were corrupt
  EXPECT_EQ(lfcore::urcu::memb::default_domain().stats().pending(), 0u);
}

// qsbr: the application registers its threads and reports quiescent states.
TEST(Urcu, QsbrReclaimsAfterQuiescentStates) {
  counted::live = 0;
  counted_map<lfcore::urcu::qsbr> m;
  lfcore::unbounded_mpmc_queue<long, 4, lfcore::urcu::qsbr> q;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      urcu_qsbr_register_thread();
      long ops = 0;
      while (!stop.load() || ops < 2000) {
        const long k = t * 100 + ops % 100;
        m.insert_or_assign(k, counted(ops));
        if (ops % 3 == 0) m.erase(k);
        q.push(ops);
        q.try_pop();
        if (++ops % 64 == 0) urcu_qsbr_quiescent_state(); // holds no element here
      }
      urcu_qsbr_unregister_thread();
    });
  urcu_qsbr_register_thread();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  for (auto& th : threads) th.join();
  lfcore::urcu::qsbr::default_domain().reclaim(); // goes offline while it waits
  std::size_t present = 0;
  for (long k = 0; k < 300; ++k) present += m.contains(k);
  EXPECT_EQ(static_cast<std::size_t>(counted::live.load()), present)
      << "replaced and erased values are all destroyed";
  EXPECT_EQ(lfcore::urcu::qsbr::default_domain().stats().pending(), 0u);
  urcu_qsbr_unregister_thread();
}

} // namespace
