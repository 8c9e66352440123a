// What a hash_trie_map given a hazard-pointer domain of its own pays per
// operation against one in the default domain. Both take their hazard
// pointers (four for a lookup, five for a write) from the set the thread
// keeps in the map's domain (hazard_pointer_domain::thread_cached); before
// that set existed, the first took them from its domain every time and ran
// up to 2.1x slower. A map of 4,096 keys stays in cache, so a difference
// is all there is to see; at 1e6 keys each lookup's cache misses come on
// top. Per operation:
//   find       - a lookup of a present key (visit: no iterator, no guard kept)
//   churn      - an erase and an insert of the same key
// Both maps use a domain with the default config, so only which domain the
// guards are kept in differs.
#include <lfcore/hash_trie_map.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

namespace {

using u64 = std::uint64_t;
using map = lfcore::hash_trie_map<u64, u64>;

// One map per (size, domain) for all the threads of a run.
struct fixture {
  explicit fixture(u64 n, bool own_domain)
      : domain(std::make_unique<lfcore::hazard_pointer_domain>()),
        m(lfcore::hash_trie_config::for_expected_size(n), std::hash<u64>(), std::equal_to<u64>(),
          own_domain ? *domain : lfcore::hazard_pointer_default_domain()),
        keys(n) {
    for (u64 k = 0; k < n; ++k) m.try_emplace(k, k);
  }
  std::unique_ptr<lfcore::hazard_pointer_domain> domain; // outlives m
  map m;
  u64 keys;
};

template <bool OwnDomain>
fixture& shared_map(u64 n) {
  static std::unique_ptr<fixture> f;
  static u64 made_for = 0;
  if (!f || made_for != n) { // only thread 0 calls this, before the others start
    f.reset();
    f = std::make_unique<fixture>(n, OwnDomain);
    made_for = n;
  }
  return *f;
}

// xorshift64: a cheap spread of keys, different on every thread.
u64 next_key(u64& x, u64 n) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x % n;
}

template <bool OwnDomain>
void find(benchmark::State& state) {
  const u64 n = static_cast<u64>(state.range(0));
  static fixture* f = nullptr;
  if (state.thread_index() == 0) f = &shared_map<OwnDomain>(n);
  u64 x = 0x9E3779B97F4A7C15ULL * static_cast<u64>(state.thread_index() + 1), found = 0;
  for (auto _ : state) found += f->m.contains(next_key(x, f->keys));
  benchmark::DoNotOptimize(found);
  state.SetItemsProcessed(state.iterations());
}

template <bool OwnDomain>
void churn(benchmark::State& state) {
  const u64 n = static_cast<u64>(state.range(0));
  static fixture* f = nullptr;
  if (state.thread_index() == 0) f = &shared_map<OwnDomain>(n);
  u64 x = 0x9E3779B97F4A7C15ULL * static_cast<u64>(state.thread_index() + 1);
  for (auto _ : state) {
    const u64 k = next_key(x, f->keys);
    f->m.erase(k);
    f->m.try_emplace(k, k);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(find<false>)->Name("find/default")->Arg(4096)->Arg(1'000'000)->Threads(1)->Threads(2);
BENCHMARK(find<true>)->Name("find/own")->Arg(4096)->Arg(1'000'000)->Threads(1)->Threads(2);
BENCHMARK(churn<false>)->Name("churn/default")->Arg(4096)->Threads(1)->Threads(2);
BENCHMARK(churn<true>)->Name("churn/own")->Arg(4096)->Threads(1)->Threads(2);

} // namespace

BENCHMARK_MAIN();
