// Stress tests of hash_trie_map: readers racing erasers on long chains (so
// that reclamation of a leaf a reader is about to step onto happens often),
// inserts/erases/assigns with checked values, iteration under churn, levels
// opened and compressed away under churn, new keys linked at their chain's
// head under churn, and element lifetimes, on every
// reclamation policy (hazard pointers, and liburcu's memb flavour when the
// build found it), and histories checked for linearizability, key by key.
// LFCORE_STRESS_SCALE=N multiplies the work (a soak run).
#include "../tests/linearizability.hpp"
#include "../tests/placed_hash.hpp"
#include "../tests/queues/tracked.hpp"
#include "../tests/reclamation_policies.hpp"

#include "scale.hpp"
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/pool_allocator.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

long scaled(long n) {
  return lfcore_stress::scaled(n, 10, 100);
}

struct constant_hash {
  std::size_t operator()(long) const noexcept { return 7; }
};

// Places key k so that its bucket summary bit is one of seven (the summary
// byte, hash bits 16-23, is (k % 7) * 0x11): a chain's summary then never
// reaches 8 bits, so chains stay open to head inserts at chain_threshold 8
// right up to their close, which is where a head link and a close race.
// Bits 24-63 spread the keys over buckets and levels; bits 0-15 are k.
struct crowded_summary_hash {
  std::size_t operator()(long k) const noexcept {
    const auto u = static_cast<std::uint64_t>(k);
    const std::uint64_t spread = (u * 0x9e3779b97f4a7c15ULL) & ~std::uint64_t{0xffffff};
    return test::unmix_hash(spread | (u % 7) * 0x11 << 16 | (u & 0xffff));
  }
};

// Values carry their key twice: a torn or freed value fails the check.
struct checked {
  long a, b;
};

template <class Value, class R, class Hash = std::hash<long>,
          template <class> class A = std::allocator>
using map_on = lfcore::hash_trie_map<long, Value, Hash, std::equal_to<long>,
                                     A<std::pair<const long, Value>>, R>;

template <class R>
class HashTrieStress : public ::testing::Test {};
TYPED_TEST_SUITE(HashTrieStress, test::reclamation_policies);

// Writers share the keys; each counts, per key, the inserts that reported
// a new key and the erases that removed one. At the end a key is present
// exactly when its inserts outnumber its erases by one (else by zero): a
// lost, duplicated or resurrected key breaks that, even when the size
// counter agrees with the lookups.
template <class Map>
void churn(Map& m, long keys, long ops_per_writer, int writers, int readers) {
  std::atomic<int> writing{writers};
  std::atomic<long> bad{0};
  std::vector<std::vector<long>> net(static_cast<std::size_t>(writers),
                                     std::vector<long>(static_cast<std::size_t>(keys)));
  std::vector<std::thread> pool;
  for (int t = 0; t < writers; ++t)
    pool.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t * 7 + 1));
      std::vector<long>& mine = net[static_cast<std::size_t>(t)];
      for (long i = 0; i < ops_per_writer; ++i) {
        const long k = static_cast<long>(rng() % static_cast<unsigned>(keys));
        long& n = mine[static_cast<std::size_t>(k)];
        switch (rng() % 4) {
        case 0:
          n += m.insert({k, checked{k, ~k}}).second;
          break;
        case 1:
          n += m.insert_or_assign(k, checked{k, ~k}).second;
          break;
        default:
          n -= static_cast<long>(m.erase(k));
        }
      }
      writing--;
    });
  for (int r = 0; r < readers; ++r)
    pool.emplace_back([&, r] {
      while (writing.load() > 0) {
        if (r % 2 == 0) {
          for (long k = 0; k < keys; ++k)
            m.visit(k, [&](const auto& kv) { bad += kv.second.a != k || kv.second.b != ~k; });
        } else {
          std::set<long> seen;
          for (const auto& kv : m) {
            bad += kv.second.a != kv.first || kv.second.b != ~kv.first;
            bad += !seen.insert(kv.first).second;
          }
        }
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(bad.load(), 0) << "torn, freed or repeated values seen";
  std::size_t present = 0;
  std::vector<long> miscounted;
  for (long k = 0; k < keys; ++k) {
    long inserted_minus_erased = 0;
    for (const auto& mine : net) inserted_minus_erased += mine[static_cast<std::size_t>(k)];
    const bool there = m.contains(k);
    if (inserted_minus_erased != (there ? 1 : 0)) miscounted.push_back(k);
    present += there;
  }
  EXPECT_TRUE(miscounted.empty()) << miscounted.size() << " keys lost, duplicated or resurrected, "
                                  << "the first: " << miscounted.front();
  EXPECT_EQ(m.size(), present);
}

// Under RCU an iterating reader is one long read-side section, and every
// other reader's section end then wakes the waiting grace period: the same
// churn costs several times more, so it runs a fifth of the operations.
template <class R>
long churn_ops(long n) {
  return R::bounded_garbage ? scaled(n) : scaled(n) / 5;
}

TYPED_TEST(HashTrieStress, LongCollisionChainsUnderChurn) {
  // One chain of up to 48 leaves: never expanded, so readers step from leaf
  // to leaf while writers unlink and reclaim them.
  map_on<checked, TypeParam, constant_hash> m(lfcore::hash_trie_config{1, 1, 1000});
  churn(m, 48, churn_ops<TypeParam>(1'000'000), 3, 3);
}

TYPED_TEST(HashTrieStress, ExpandingTrieUnderChurn) {
  map_on<checked, TypeParam> m(lfcore::hash_trie_config{2, 2, 3});
  churn(m, 4096, churn_ops<TypeParam>(400'000), 3, 3);
}

TYPED_TEST(HashTrieStress, LevelsComeAndGoUnderChurn) {
  // The tiny shape opens a level on almost every insert into a non-empty
  // chain, and compression removes it when its last key goes: readers and
  // iterators step into levels while they are frozen, detached and reclaimed.
  map_on<checked, TypeParam> m(lfcore::hash_trie_config{1, 1, 1});
  churn(m, 1024, churn_ops<TypeParam>(400'000), 3, 3);
}

TYPED_TEST(HashTrieStress, HeadInsertsUnderChurn) {
  // New keys linked at their chain's head (hash_trie_config::head_inserts)
  // while other writers unlink first leaves, close chains and remove emptied
  // levels, and readers visit and iterate. With crowded summaries a chain
  // takes head inserts until it closes at 8 live leaves, so head links race
  // unlinks of the leaf they point to and closes of their chain all the
  // time (a closer that missed a key linked at its head would hide that key
  // once the chain is hoisted: HashTrieMap.HeadInsertsRacingACloseStayFound
  // aims at that race, here it is one of many). Without bucket summaries
  // (not x86-64) this is the append churn again.
  map_on<checked, TypeParam, crowded_summary_hash> m(
      lfcore::hash_trie_config{2, 2, 8, true, 1, true});
  churn(m, 4096, churn_ops<TypeParam>(400'000), 3, 3);
}

TYPED_TEST(HashTrieStress, PooledLeavesUnderChurn) {
  // Leaves from lfcore::pool_allocator (2-block magazines, 8-block chunks in
  // a stress build): a reclaimed leaf is handed out again at once, poisoned
  // under ASan while free, so a reader that kept one too long is caught.
  map_on<checked, TypeParam, std::hash<long>, lfcore::pool_allocator> m(
      lfcore::hash_trie_config{2, 2, 3});
  churn(m, 4096, churn_ops<TypeParam>(400'000), 3, 3);
}

TYPED_TEST(HashTrieStress, EveryElementIsDestroyedOnce) {
  test::tracked::live = 0;
  {
    map_on<test::tracked, TypeParam> m(lfcore::hash_trie_config{1, 1, 2});
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t));
        for (long i = 0; i < scaled(100'000); ++i) {
          const long k = static_cast<long>(rng() % 512);
          if (rng() % 3 == 0)
            m.erase(k);
          else if (rng() % 2)
            m.insert_or_assign(k, test::tracked(k));
          else
            m.try_emplace(k, k);
        }
      });
    for (auto& th : pool) th.join();
    TypeParam::default_domain().reclaim(); // the exited threads' leftovers too
    EXPECT_EQ(test::tracked::live.load(), static_cast<long>(m.size()))
        << "erased and replaced elements must be destroyed at reclamation";
  }
  EXPECT_EQ(test::tracked::live.load(), 0);
}

// One key of a map as a sequential object: absent (0) or holding a value.
// Values are unique per insert, so a value also names the element.
struct key_spec {
  using state = std::uint64_t;
  using state_hash = std::hash<std::uint64_t>;
  struct op {
    enum kind { insert, assign, erase, find, erase_element, update, upsert } what;
    // arg: the value (insert, assign, update, upsert), or the element's
    // (erase_element). flag: a new key (insert, assign, upsert), removed
    // (erase, erase_element), found the key (update). seen: the value there
    // after it (insert), what it found (find), the value f replaced, as its
    // last call saw it (update, upsert). key: which object; the history is
    // split by it.
    std::uint64_t arg = 0;
    bool flag = false;
    std::uint64_t seen = 0;
    std::uint64_t key = 0;
  };
  static std::optional<state> apply(state s, const op& o) {
    const auto to = [](bool possible, state next) {
      return possible ? std::optional<state>(next) : std::nullopt;
    };
    switch (o.what) {
    case op::insert: // get-or-insert
      return s == 0 ? to(o.flag && o.seen == o.arg, o.arg) : to(!o.flag && o.seen == s, s);
    case op::assign:
      return to(o.flag == (s == 0), o.arg);
    case op::erase:
      return to(o.flag == (s != 0), 0);
    case op::find:
      return to(o.seen == s, s);
    case op::erase_element: // erase(it): only the element it reached
      return to(o.flag == (s == o.arg), o.flag ? 0 : s);
    case op::update: // f's value replaces the very value f read
      return s == 0 ? to(!o.flag, 0) : to(o.flag && o.seen == s, o.arg);
    case op::upsert:
      return s == 0 ? to(o.flag, o.arg) : to(!o.flag && o.seen == s, o.arg);
    }
    return std::nullopt;
  }
  static std::string describe(const op& o) {
    // Values are (thread + 1) << 32 | (index + 1): shown as t<thread>.<index>.
    const auto v = [](std::uint64_t x) {
      if (x == 0) return std::string("nothing");
      char s[32];
      std::snprintf(s, sizeof s, "t%u.%u", unsigned((x >> 32) - 1), unsigned((x & 0xFFFFFFFF) - 1));
      return std::string(s);
    };
    switch (o.what) {
    case op::insert:
      return "insert " + v(o.arg) + (o.flag ? " -> inserted" : " -> present: " + v(o.seen));
    case op::assign:
      return "insert_or_assign " + v(o.arg) + (o.flag ? " -> inserted" : " -> replaced");
    case op::erase:
      return std::string("erase -> ") + (o.flag ? "removed" : "absent");
    case op::find:
      return "find -> " + v(o.seen);
    case op::erase_element:
      return "erase(it) of " + v(o.arg) + (o.flag ? " -> removed" : " -> gone already");
    case op::update:
      return "update to " + v(o.arg) + (o.flag ? " -> replaced " + v(o.seen) : " -> absent");
    case op::upsert:
      return "upsert " + v(o.arg) + (o.flag ? " -> inserted" : " -> replaced " + v(o.seen));
    }
    return "?";
  }
};

// Threads run random inserts, assigns, erases, lookups, erase(it), updates
// and upserts on a few keys of the tiny shape, where every insert into a
// non-empty chain opens a level and erasing its last key compresses it
// away; each operation's result and real-time interval is recorded, and
// each key's history must have a linearization. Linearizability is local
// (Herlihy & Wing), so per-key checks add up to the map's. This catches what
// the churn tests cannot: a lookup that misses a present key, or sees a
// value already replaced, while levels are opened and removed around it.
TYPED_TEST(HashTrieStress, EachKeysHistoryIsLinearizable) {
  using map = lfcore::hash_trie_map<std::uint64_t, std::uint64_t, test::placed_hash,
                                    std::equal_to<std::uint64_t>,
                                    std::allocator<std::pair<const std::uint64_t, std::uint64_t>>,
                                    TypeParam>;
  // Placed hashes: two root buckets; keys that share long prefixes.
  constexpr std::uint64_t keys[] = {0,       1ULL << 63, 1ULL << 62, 3ULL << 62,
                                    1ULL << 40, 1,       2};
  constexpr int threads = 4, ops_per_thread = 40;
  const long rounds = lfcore_stress::scaled(3000, 10, 100);
  for (long round = 0; round < rounds; ++round) {
    map m(lfcore::hash_trie_config{1, 1, 1});
    test::recorder<key_spec::op> log(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<std::uint64_t>(round * threads + t));
        log.start();
        for (int i = 0; i < ops_per_thread; ++i) {
          const std::uint64_t k = keys[rng() % std::size(keys)];
          const std::uint64_t v = std::uint64_t(t + 1) << 32 | std::uint64_t(i + 1);
          using o = key_spec::op;
          // update's and upsert's f note the value it replaces; its last
          // call is the one whose value went in.
          std::uint64_t replaced = 0;
          const auto to_v = [&](std::uint64_t old) {
            replaced = old;
            return v;
          };
          switch (rng() % 8) {
          case 0:
            log.record(t, [&] {
              const auto [it, inserted] = m.insert({k, v});
              return o{o::insert, v, inserted, it->second, k};
            });
            break;
          case 1:
            log.record(t, [&] { return o{o::assign, v, m.insert_or_assign(k, v).second, 0, k}; });
            break;
          case 2:
            log.record(t, [&] { return o{o::erase, 0, m.erase(k) == 1, 0, k}; });
            break;
          case 4:
            log.record(t, [&] {
              const bool found = m.update(k, to_v) != m.end();
              return o{o::update, v, found, found ? replaced : 0, k};
            });
            break;
          case 5:
            log.record(t, [&] {
              const bool inserted = m.upsert(k, to_v, v).second;
              return o{o::upsert, v, inserted, inserted ? 0 : replaced, k};
            });
            break;
          case 3:
            log.record(t, [&] {
              std::uint64_t seen = 0;
              m.visit(k, [&](const auto& kv) { seen = kv.second; });
              return o{o::find, 0, false, seen, k};
            });
            break;
          default: { // find, then erase(it): two operations
            typename map::const_iterator it;
            log.record(t, [&] {
              it = m.find(k);
              return o{o::find, 0, false, it == m.end() ? 0 : it->second, k};
            });
            if (it != m.end())
              log.record(t, [&] { return o{o::erase_element, it->second, m.erase(it) == 1, 0, k}; });
          }
          }
        }
      });
    for (auto& th : pool) th.join();

    std::map<std::uint64_t, std::vector<test::timed<key_spec::op>>> by_key;
    for (const auto& e : log.history()) by_key[e.op.key].push_back(e);
    for (const auto& [k, history] : by_key) {
      std::string why;
      if (!test::linearizability_checker<key_spec>::check(history, 0, &why))
        FAIL() << "round " << round << ", key " << k << ": " << why;
    }
  }
}

} // namespace
