// Instructions per map operation, one thread, counted by callgrind (no
// timing, so no noise): lfcore::hash_trie_map beside the peers of the
// scalability runner. See README.md in this directory for how to run it.
//
// Each measured loop is a function of its own; callgrind counts only inside
// the one named by --toggle-collect, over both of its calls (every loop runs
// twice on the same keys), so count.sh divides by 2 * ops. One-time costs
// (a thread's first guards in a domain) are spread over those operations.
#define _LGPL_SOURCE // liburcu's read-side fast paths inline, as in the runner
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/urcu.hpp>

#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#include <oneapi/tbb/concurrent_hash_map.h>
#include <xenium/harris_michael_hash_map.hpp>
#include <xenium/policy.hpp>
#include <xenium/reclamation/hazard_pointer.hpp>
#include <xenium/vyukov_hash_map.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using u64 = std::uint64_t;
constexpr std::size_t buckets = 1 << 16; // keys: as many (one per bucket)

template <class K>
struct cds_list_traits : cds::container::michael_list::traits {
  using less = std::less<K>;
};
template <class K>
struct cds_map_traits : cds::container::michael_map::traits {
  using hash = std::hash<K>;
};
template <class K>
using michael = cds::container::MichaelHashMap<
    cds::gc::HP, cds::container::MichaelKVList<cds::gc::HP, K, u64, cds_list_traits<K>>,
    cds_map_traits<K>>;
using xenium_hp = xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>;
using harris_michael =
    xenium::harris_michael_hash_map<u64, u64, xenium_hp, xenium::policy::buckets<buckets>>;
using vyukov = xenium::vyukov_hash_map<u64, u64, xenium_hp>;
template <class K>
using lf = lfcore::hash_trie_map<K, u64>;
using lf_rcu = lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>,
                                     std::allocator<std::pair<const u64, u64>>, lfcore::urcu::memb>;
using tbb_map = tbb::concurrent_hash_map<std::string, u64>;

template <class K>
using keys_t = std::vector<K>;
#define COUNTED extern "C" [[gnu::noinline]]

// Hits: the value of a present key. Misses: an absent key (k + 1; keys are
// even). Churn: erase a present key and insert it again.
template <class M, class K>
u64 lf_hit_loop(M& m, const keys_t<K>& ks) {
  u64 s = 0;
  for (const K& k : ks) m.visit(k, [&](const auto& kv) { s += kv.second; });
  return s;
}
template <class M>
u64 miss_loop(M& m, const keys_t<u64>& ks) {
  u64 s = 0;
  for (u64 k : ks) s += m.contains(k + 1);
  return s;
}
template <class M, class Insert>
u64 churn_loop(M& m, const keys_t<u64>& ks, Insert insert) {
  u64 s = 0;
  for (u64 k : ks) {
    s += m.erase(k);
    s += insert(m, k);
  }
  return s;
}
COUNTED u64 lfcore_hit(lf<u64>& m, const keys_t<u64>& ks) {
  return lf_hit_loop(m, ks);
}
COUNTED u64 lfcore_rcu_hit(lf_rcu& m, const keys_t<u64>& ks) {
  return lf_hit_loop(m, ks);
}
COUNTED u64 lfcore_str_hit(lf<std::string>& m, const keys_t<std::string>& ks) {
  return lf_hit_loop(m, ks);
}
COUNTED u64 lfcore_miss(lf<u64>& m, const keys_t<u64>& ks) {
  return miss_loop(m, ks);
}
COUNTED u64 lfcore_rcu_miss(lf_rcu& m, const keys_t<u64>& ks) {
  return miss_loop(m, ks);
}
COUNTED u64 lfcore_churn(lf<u64>& m, const keys_t<u64>& ks) {
  return churn_loop(m, ks, [](lf<u64>& map, u64 k) { // as the runner inserts
    return map.try_emplace_and_visit(
        k, [](const auto&, bool) {}, k);
  });
}
template <class K>
u64 michael_hit_loop(michael<K>& m, const keys_t<K>& ks) {
  u64 s = 0;
  for (const K& k : ks) m.find(k, [&](std::pair<const K, u64>& kv) { s += kv.second; });
  return s;
}
COUNTED u64 michael_hit(michael<u64>& m, const keys_t<u64>& ks) {
  return michael_hit_loop(m, ks);
}
COUNTED u64 michael_str_hit(michael<std::string>& m, const keys_t<std::string>& ks) {
  return michael_hit_loop(m, ks);
}
COUNTED u64 michael_miss(michael<u64>& m, const keys_t<u64>& ks) {
  return miss_loop(m, ks);
}
COUNTED u64 michael_churn(michael<u64>& m, const keys_t<u64>& ks) {
  return churn_loop(m, ks, [](michael<u64>& map, u64 k) { return map.insert(k, k); });
}
COUNTED u64 harris_michael_hit(harris_michael& m, const keys_t<u64>& ks) {
  u64 s = 0;
  for (u64 k : ks) {
    auto it = m.find(k);
    if (it != m.end()) s += it->second;
  }
  return s;
}
COUNTED u64 harris_michael_miss(harris_michael& m, const keys_t<u64>& ks) {
  return miss_loop(m, ks);
}
COUNTED u64 harris_michael_churn(harris_michael& m, const keys_t<u64>& ks) {
  return churn_loop(m, ks, [](harris_michael& map, u64 k) { return map.emplace(k, k); });
}
COUNTED u64 vyukov_hit(vyukov& m, const keys_t<u64>& ks) {
  u64 s = 0;
  for (u64 k : ks) {
    vyukov::accessor a;
    if (m.try_get_value(k, a)) s += *a;
  }
  return s;
}
COUNTED u64 vyukov_miss(vyukov& m, const keys_t<u64>& ks) {
  u64 s = 0;
  for (u64 k : ks) {
    vyukov::accessor a;
    s += m.try_get_value(k + 1, a);
  }
  return s;
}
COUNTED u64 tbb_str_hit(tbb_map& m, const keys_t<std::string>& ks) {
  u64 s = 0;
  for (const std::string& k : ks) {
    tbb_map::const_accessor a;
    if (m.find(a, k)) s += a->second;
  }
  return s;
}

volatile u64 sink;
template <class F, class... A>
void twice(F f, A&... a) {
  sink = f(a...);
  sink = f(a...);
}

int main(int argc, char** argv) {
  const std::size_t ops = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  std::mt19937_64 rng(42);
  std::vector<u64> keys(buckets);
  for (u64& k : keys) k = rng() & ~u64(1); // even, so k + 1 is absent
  std::vector<u64> seq(ops);
  for (u64& k : seq) k = keys[rng() % keys.size()];
  std::vector<std::string> str_seq; // about 20 bytes, as the runner's string keys
  for (u64 k : seq) str_seq.push_back("key:" + std::to_string(k));

  cds::Initialize();
  {
    cds::gc::HP gc;
    cds::threading::Manager::attachThread();
    { // the maps go before the thread detaches from libcds
      const auto cfg = lfcore::hash_trie_config::for_expected_size(keys.size());
      lf<u64> lm(cfg);
      lf_rcu lr(cfg);
      lf<std::string> ls(cfg);
      michael<u64> mm(keys.size(), 1);
      michael<std::string> ms(keys.size(), 1);
      harris_michael hm;
      vyukov vy(keys.size());
      tbb_map tm(keys.size());
      for (u64 k : keys) {
        const std::string s = "key:" + std::to_string(k);
        lm.try_emplace(k, k);
        lr.try_emplace(k, k);
        ls.try_emplace(s, k);
        mm.insert(k, k);
        ms.insert(s, k);
        hm.emplace(k, k);
        vy.emplace(k, k);
        tm.insert({s, k});
      }
      twice(lfcore_hit, lm, seq);
      twice(lfcore_rcu_hit, lr, seq);
      twice(lfcore_str_hit, ls, str_seq);
      twice(lfcore_miss, lm, seq);
      twice(lfcore_rcu_miss, lr, seq);
      twice(lfcore_churn, lm, seq);
      twice(michael_hit, mm, seq);
      twice(michael_str_hit, ms, str_seq);
      twice(michael_miss, mm, seq);
      twice(michael_churn, mm, seq);
      twice(harris_michael_hit, hm, seq);
      twice(harris_michael_miss, hm, seq);
      twice(harris_michael_churn, hm, seq);
      twice(vyukov_hit, vy, seq);
      twice(vyukov_miss, vy, seq);
      twice(tbb_str_hit, tm, str_seq);
      std::printf("%zu keys, %zu operations per loop\n", keys.size(), ops);
    }
    cds::threading::Manager::detachThread();
  }
  cds::Terminate();
}
