// bench/runner/sweeps_maps.cpp - lfcore::hash_trie_map against concurrent maps.
//
// Keys are uint64 values spread by splitmix64 (key(i) for i in [0, N)); values
// are uint64. Every point builds a fresh map and prefills it with N keys, with
// the point's threads inserting disjoint ranges (that prefill is the
// insert-only workload). The other workloads then run for --seconds:
//   lookup_hit   - find key(i), i uniform in [0, N)
//   lookup_miss  - find key(i), i uniform in [N, 2N): never present
//   mix_90_5_5   - i uniform in [0, 2N): 90% find, 5% insert, 5% erase
//   mix_zipf     - the same mix with i zipfian (theta 0.99) over [0, 2N): a few
//                  hot keys (spread over the table by key_of) take most operations;
//                  which indices are popular is scrambled, so that popularity does
//                  not follow the prefill's order; the indices are drawn before
//                  the point (zipfian_draws)
//   count_zipf   - i zipfian as in mix_zipf: add one to key(i)'s count, which
//                  an absent key starts at (upsert: a word count); only the
//                  maps that update a value atomically (see the handles' add)
//   iterate      - every thread passes over the whole map again and again,
//                  nothing else runs; one operation is one element visited
//                  (only the maps whose iterators may run concurrently
//                  with each other; see the handles' scan)
// Bytes per key: one thread fills N keys on the main thread and
// heap_bytes_in_use() (glibc's main arena, or jemalloc's statistics) measures
// the growth; every contender allocates through malloc here (oneTBB is given
// std::allocator for that reason; the lfcore::pool_allocator contender's pool
// takes its chunks from it, and is measured before any sweep has filled it).
#include "harness.hpp"
#include "peers.hpp"

#include <lfcore/hash_trie_map.hpp>
#include <lfcore/pool_allocator.hpp>
#if defined(LFCORE_HAVE_URCU_POLICY)
#include <lfcore/urcu.hpp>
#endif

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <ranges>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(LFCORE_HAVE_LIBCDS)
#include <cds/container/feldman_hashmap_hp.h>
#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>
#endif
#if defined(LFCORE_HAVE_TBB)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds" // a false positive inside oneTBB 2021.8
#include <oneapi/tbb/concurrent_hash_map.h>
#include <oneapi/tbb/concurrent_unordered_map.h>
#pragma GCC diagnostic pop
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
#include <libcuckoo/cuckoohash_map.hh>
#endif
#if defined(LFCORE_HAVE_XENIUM)
#include <xenium/harris_michael_hash_map.hpp>
#include <xenium/vyukov_hash_map.hpp>
#endif
#if defined(LFCORE_HAVE_URCU)
#include <urcu/rculfhash.h>
#include <urcu/urcu-memb.h>
#endif

namespace runner {
namespace {

using u64 = std::uint64_t;

constexpr u64 splitmix64(u64 x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
constexpr u64 key_of(u64 i) noexcept {
  return splitmix64(i);
}

enum class workload {
  insert_only,
  lookup_hit,
  lookup_miss,
  mix_90_5_5,
  mix_zipf,
  count_zipf,
  iterate
};

/// Zipfian ranks in [0, n), rank 0 the most frequent: Gray et al., "Quickly
/// generating billion-record synthetic databases" (SIGMOD 1994), as YCSB does.
class zipfian {
public:
  zipfian(u64 n, double theta) : n_(static_cast<double>(n)), theta_(theta) {
    double zeta_n = 0;
    for (u64 i = 1; i <= n; ++i) zeta_n += 1.0 / std::pow(static_cast<double>(i), theta);
    const double zeta_2 = 1.0 + 1.0 / std::pow(2.0, theta);
    zeta_n_ = zeta_n;
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / n_, 1.0 - theta)) / (1.0 - zeta_2 / zeta_n);
  }
  u64 operator()(double u) const { // u uniform in [0, 1)
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    const auto r = static_cast<u64>(n_ * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r < static_cast<u64>(n_) ? r : static_cast<u64>(n_) - 1;
  }

private:
  double n_, theta_, zeta_n_ = 0, alpha_ = 0, eta_ = 0;
};

// Zipfian key indices over [0, n), drawn before the timed threads start and
// read in order. Drawn in the loop, the two pow() calls of a draw took a
// quarter of the zipfian mix's time (perf, lfcore prefetched, 2 threads: 24%
// in libm and the sampler), the same for every contender, so every ratio
// shrank towards 1. A thread starts at its own offset and reads on, which the
// hardware prefetcher streams; 2^23 draws outlast a 0.5 s point of any
// contender on one thread (a longer point wraps around), and several
// threads' streams meet only a million draws apart, far beyond the cache.
//
// Ranks are scrambled into indices by a fixed random permutation of [0, n),
// as YCSB's ScrambledZipfianGenerator scatters its popular items (here a
// permutation, so every rank keeps its own frequency). Until 2026-12-06 the
// index was the rank: the most popular keys were the prefill's first, whose
// nodes the allocator had placed together - in lfcore's trie also first in
// their chains. On a freshly filled map that favours the maps whose layout
// follows insertion order (bench/results/zipf_mix_ops/: finds alone ran
// 1.50x libcds's Michael map on a map filled that way, 1.19x on one filled in
// random order); the mix, whose updates scatter the popular keys within a
// point, moved within noise (lfcore over the better of Michael and xenium's
// harris_michael at 1 / 2 threads: 1.33x / 1.30x -> 1.38x / 1.41x).
class zipfian_draws {
  // A power of two: an index wraps by a mask.
  static constexpr std::size_t count = std::size_t{1} << 23;

public:
  explicit zipfian_draws(u64 n) : draws_(count) {
    if (n > std::numeric_limits<std::uint32_t>::max())
      throw std::invalid_argument("zipfian draws: indices past 32 bits");
    const zipfian z(n, 0.99);
    std::vector<std::uint32_t> index_of_rank(n);
    std::iota(index_of_rank.begin(), index_of_rank.end(), std::uint32_t{0});
    std::shuffle(index_of_rank.begin(), index_of_rank.end(), std::mt19937_64(0x5c7a));
    std::mt19937_64 rng(0x21bf);
    for (std::uint32_t& d : draws_)
      d = index_of_rank[z(static_cast<double>(rng() >> 11) * 0x1.0p-53)];
  }
  /// Where thread t of `threads` starts reading.
  std::size_t start(int t, int threads) const noexcept {
    return count / static_cast<std::size_t>(threads) * static_cast<std::size_t>(t);
  }
  u64 operator[](std::size_t i) const noexcept { return draws_[i & (count - 1)]; }

private:
  std::vector<std::uint32_t> draws_;
};

// The set-up is O(n + 2^23): one set of draws per key count, made once,
// before the first zipfian point's timed threads start.
const zipfian_draws& zipfian_draws_over(u64 n) {
  static std::map<u64, std::unique_ptr<zipfian_draws>> made;
  std::unique_ptr<zipfian_draws>& z = made[n];
  if (!z) z = std::make_unique<zipfian_draws>(n);
  return *z;
}

// Key i as the map sees it: a spread uint64, or a string of about 20 bytes
// (made once per key count, before threads start, so lookups do not build
// strings).
struct u64_keys {
  explicit u64_keys(u64) {}
  u64 operator()(u64 i) const noexcept { return key_of(i); }
};
struct string_keys {
  explicit string_keys(u64 n) {
    static std::map<u64, std::shared_ptr<const std::vector<std::string>>> made;
    auto& all = made[n];
    if (!all) {
      auto v = std::make_shared<std::vector<std::string>>();
      v->reserve(2 * n);
      for (u64 i = 0; i < 2 * n; ++i) v->push_back("key:" + std::to_string(key_of(i)));
      all = std::move(v);
    }
    keys = all;
  }
  const std::string& operator()(u64 i) const noexcept { return (*keys)[i]; }
  std::shared_ptr<const std::vector<std::string>> keys;
};

// Operations run in batches of batch_size keys. A handle that has
// prefetch(range of keys) is given each batch first (lfcore's group prefetch);
// the others run the same batches without it.
constexpr int batch_size = 16;
template <class Handle, class Range>
void prefetch_batch(Handle& h, const Range& keys) {
  if constexpr (requires { h.prefetch(keys); }) h.prefetch(keys);
}

// Fills an empty map with keys 0..n-1 on `threads` threads (contiguous
// ranges, in batches); returns the seconds it took. A per-thread
// Handle{map} has insert(k, v) -> bool, find(k, v&) -> bool and erase(k) ->
// bool, and may have prefetch(range of keys); Keys gives key i.
template <class Map, class Handle, class Keys>
double fill(int threads, u64 n, Map& map) {
  const Keys keys(n);
  return run_to_completion(threads, [&](int t) {
    Handle h{map};
    const u64 begin = n * static_cast<u64>(t) / static_cast<u64>(threads);
    const u64 end = n * static_cast<u64>(t + 1) / static_cast<u64>(threads);
    for (u64 first = begin; first < end; first += batch_size) {
      const u64 last = std::min(end, first + batch_size);
      prefetch_batch(h, std::views::iota(first, last) | std::views::transform(std::cref(keys)));
      for (u64 i = first; i < last; ++i) h.insert(keys(i), i);
    }
  });
}

// One pass over `elements` from the first, adding their values to sink,
// until the end or until `stop` is set (checked every 1024 elements): a
// handle's scan. Returns the number of elements visited.
template <class Range>
u64 visit_all(Range&& elements, u64& sink, const std::atomic<bool>& stop) {
  u64 visited = 0;
  for (auto&& kv : elements) {
    sink += kv.second;
    if ((++visited & 1023) == 0 && stop.load(std::memory_order_relaxed)) break;
  }
  return visited;
}
template <class Handle>
concept scans = requires(Handle& h, u64& sink, const std::atomic<bool>& stop) {
  { h.scan(sink, stop) } -> std::same_as<u64>;
};

// The count_zipf workload's operation: add one to k's count, or insert k
// with count 1, as one atomic step.
template <class Handle>
concept counts = requires(Handle& h, u64 k) {
  h.add(k);
};

// The iterate workload: each thread scans the map until the point's time is
// up; returns elements visited per second.
template <class Map, class Handle>
double run_scans(const point& p, Map& map) {
  return timed(p, [&](int, const std::atomic<bool>& stop) {
    Handle h{map};
    long long visited = 0;
    u64 sink = 0;
    while (!stop.load(std::memory_order_relaxed))
      visited += static_cast<long long>(h.scan(sink, stop));
    if (sink == 42) std::puts(""); // keep the reads
    return visited;
  });
}

// Runs workload w (not insert_only) on a map filled with n keys for the
// point's time; returns operations per second. `slice` varies the keys'
// random streams between slices of one map (see open_map).
template <class Map, class Handle, class Keys>
double run_workload(const point& p, workload w, u64 n, Map& map, u64 slice = 0) {
  if constexpr (scans<Handle>)
    if (w == workload::iterate) return run_scans<Map, Handle>(p, map);
  if (w == workload::iterate) throw std::logic_error("map sweep: this contender cannot iterate");
  const Keys keys(n);
  const int threads = p.threads;
  const bool zipfian = w == workload::mix_zipf || w == workload::count_zipf;
  const zipfian_draws* zipf = zipfian ? &zipfian_draws_over(2 * n) : nullptr;
  return timed(p, [&](int t, const std::atomic<bool>& stop) {
    Handle h{map};
    std::mt19937_64 rng(0x5eed + static_cast<u64>(t) + (slice << 16));
    std::size_t next_draw = zipf != nullptr ? zipf->start(t, threads) + (slice << 19) : 0;
    long long ops = 0;
    u64 v = 0, sink = 0;
    u64 random[batch_size], index[batch_size];
    while (!stop.load(std::memory_order_relaxed)) {
      for (int b = 0; b < 4; ++b, ops += batch_size) { // check the clock flag every 64 ops
        for (int k = 0; k < batch_size; ++k) {
          const u64 r = random[k] = rng();
          switch (w) {
          case workload::lookup_hit:
            index[k] = r % n;
            break;
          case workload::lookup_miss:
            index[k] = n + r % n;
            break;
          case workload::mix_zipf:
          case workload::count_zipf:
            index[k] = (*zipf)[next_draw++];
            break;
          default:
            index[k] = (r >> 8) % (2 * n);
          }
        }
        prefetch_batch(h, index | std::views::transform(std::cref(keys)));
        for (int k = 0; k < batch_size; ++k) {
          decltype(auto) key = keys(index[k]);
          if constexpr (counts<Handle>)
            if (w == workload::count_zipf) {
              h.add(key);
              continue;
            }
          const unsigned dice = w == workload::lookup_hit || w == workload::lookup_miss
                                    ? 0
                                    : static_cast<unsigned>(random[k] & 0xff) % 100;
          if (dice < 90) {
            const bool found = h.find(key, v);
            sink += w == workload::lookup_hit ? (found ? v : 0) : found;
          } else if (dice < 95) {
            h.insert(key, random[k]);
          } else {
            h.erase(key);
          }
        }
      }
    }
    if (sink == 42) std::puts(""); // keep the lookups
    return ops;
  });
}

// A map made by make(n), destroyed with a heap trim, untimed: glibc
// consolidates the freed nodes there. Otherwise the millions of small chunks
// a destroyed map leaves in an arena's fast bins wait for the next timed
// thread that gets that arena, whose first malloc that cannot be served from
// a bin walks and merges all of them: 0.8-1.3 s inside one operation at N =
// 1e7, whichever contender came next.
template <class Map, class Make>
std::shared_ptr<Map> make_map(u64 n, Make make) {
  return std::shared_ptr<Map>(make(n).release(), [](Map* m) {
    delete m;
    malloc_trim(0);
  });
}

// One point on a fresh map: fill, then workload w (for insert_only the fill
// is the measurement).
template <class Map, class Handle, class Keys, class Make>
double run_map(const point& p, workload w, u64 n, Make make) {
  const std::shared_ptr<Map> map = make_map<Map>(n, make);
  const double fill_seconds = fill<Map, Handle, Keys>(p.threads, n, *map);
  if (w == workload::insert_only) return static_cast<double>(n) / fill_seconds;
  return run_workload<Map, Handle, Keys>(p, w, n, *map);
}

// The same point in slices (the runner's --slices): a map filled once, then
// each call runs the workload on it for the point's time, with fresh random
// streams; the map goes when the last copy of the function does.
template <class Map, class Handle, class Keys, class Make>
std::function<double()> open_map(const point& p, workload w, u64 n, Make make) {
  std::shared_ptr<Map> map = make_map<Map>(n, make);
  fill<Map, Handle, Keys>(p.threads, n, *map);
  return [p, w, n, map, slice = u64{0}]() mutable {
    return run_workload<Map, Handle, Keys>(p, w, n, *map, ++slice);
  };
}

// Bytes per key after a single-threaded fill of n keys, in a child process
// of its own: lfcore::pool_allocator keeps the blocks a map frees for the
// next map, so a second pooled contender filled in this process would be
// charged only for what the first did not leave behind. The child starts
// from this process's pool, which no map has used yet (the memory tables
// run before the sweeps), and leaves without destroying anything.
template <class Map, class Handle, class Keys, class Make>
double bytes_per_key(u64 n, Make make) {
  const Keys keys(n);
  malloc_trim(0);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) throw std::runtime_error("map memory: pipe failed");
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("map memory: fork failed");
  if (child == 0) {
    const double before = heap_bytes_in_use();
    std::unique_ptr<Map> map = make(n);
    {
      Handle h{*map};
      for (u64 i = 0; i < n; ++i) h.insert(keys(i), i);
    }
    const double per_key = (heap_bytes_in_use() - before) / static_cast<double>(n);
    const bool sent = write(pipe_fds[1], &per_key, sizeof per_key) == sizeof per_key;
    _exit(sent ? 0 : 1);
  }
  close(pipe_fds[1]);
  double per_key = 0;
  const bool got = read(pipe_fds[0], &per_key, sizeof per_key) == sizeof per_key;
  close(pipe_fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("map memory: the fill's child process failed");
  return per_key;
}

// ---------------------------------------------------------------- contenders
// lfcore under each reclamation policy: hazard pointers (the default) and,
// when built, liburcu's memb and qsbr flavours; and, with hazard pointers,
// leaves from lfcore::pool_allocator.
template <class K, class R = lfcore::hazard_pointer_reclamation,
          template <class> class A = std::allocator>
using lf_map =
    lfcore::hash_trie_map<K, u64, std::hash<K>, std::equal_to<K>, A<std::pair<const K, u64>>, R>;
template <class Map>
struct lf_handle {
  Map& m;
  // The map's insert-if-absent that returns no iterator (an iterator takes a
  // hazard pointer of its own), as the peers' bool inserts.
  bool insert(const typename Map::key_type& k, u64 v) {
    return m.try_emplace_and_visit(
        k, [](const typename Map::value_type&, bool) {}, v);
  }
  bool find(const typename Map::key_type& k, u64& v) const {
    return m.visit(k, [&](const typename Map::value_type& kv) { v = kv.second; });
  }
  bool erase(const typename Map::key_type& k) { return m.erase(k) == 1; }
  void add(const typename Map::key_type& k) {
    const auto add_one = [](u64 count) { return count + 1; };
    m.upsert(k, add_one, u64{1});
  }
  u64 scan(u64& sink, const std::atomic<bool>& stop) const { return visit_all(m, sink, stop); }
};
// The same, handed each batch's keys first (hash_trie_map::prefetch).
template <class Map>
struct lf_prefetching_handle : lf_handle<Map> {
  template <class Range>
  void prefetch(const Range& keys) const {
    this->m.prefetch(keys.begin(), keys.end());
  }
};

#if defined(LFCORE_HAVE_URCU_POLICY)
// The same under urcu::qsbr, whose read-side sections cost nothing: the
// thread is registered (online) for the handle's life and reports a quiescent
// state every 64 operations, between them, where it holds no element
// (liburcu's own qsbr benchmark, tests/benchmark/test_urcu_qsbr.c, reports
// one every 1024 reads). Outside a grace period that report is a load and a
// compare; during one, two fences.
template <class Map>
struct lf_qsbr_handle : lf_handle<Map> {
  struct registration {
    registration() { urcu_qsbr_register_thread(); }
    ~registration() { urcu_qsbr_unregister_thread(); }
    registration(const registration&) = delete;
    registration& operator=(const registration&) = delete;
  } online{}; // a default initializer: Handle{map} initializes the base alone
  unsigned ops = 0;
  void quiescent_every_64() {
    if ((++ops & 63) == 0) urcu_qsbr_quiescent_state();
  }
  bool insert(const typename Map::key_type& k, u64 v) {
    quiescent_every_64();
    return lf_handle<Map>::insert(k, v);
  }
  bool find(const typename Map::key_type& k, u64& v) {
    quiescent_every_64();
    return lf_handle<Map>::find(k, v);
  }
  bool erase(const typename Map::key_type& k) {
    quiescent_every_64();
    return lf_handle<Map>::erase(k);
  }
  void add(const typename Map::key_type& k) {
    quiescent_every_64();
    lf_handle<Map>::add(k);
  }
  // A pass is one read-side section; nothing retires during the iterate workload.
};
#endif

// A count kept in place: a mutable atomic in the element, which visit()
// reaches (elements are never moved once published), so adding allocates
// nothing; upsert() instead replaces the element with a new one each time.
struct in_place_count {
  explicit in_place_count(u64 v) : n(v) {}
  mutable std::atomic<u64> n;
};
using lf_counting_map = lfcore::hash_trie_map<u64, in_place_count>;
struct lf_counting_handle {
  lf_counting_map& m;
  bool insert(u64 k, u64 v) {
    return m.try_emplace_and_visit(
        k, [](const auto&, bool) {}, v);
  }
  // relaxed: a count orders nothing else (as the peers' adds below).
  bool find(u64 k, u64& v) const {
    return m.visit(k, [&](const auto& kv) { v = kv.second.n.load(std::memory_order_relaxed); });
  }
  bool erase(u64 k) { return m.erase(k) == 1; }
  void add(u64 k) {
    const auto count = [](const auto& kv) { kv.second.n.fetch_add(1, std::memory_order_relaxed); };
    if (m.visit(k, count)) return; // a read-only search for the usual case
    m.try_emplace_and_visit(
        k,
        [&](const auto& kv, bool inserted) {
          if (!inserted) count(kv);
        },
        1);
  }
};

/// The floor: std::unordered_map behind a std::shared_mutex.
template <class K>
struct locked_map {
  explicit locked_map(u64 n) { m.reserve(n); }
  std::shared_mutex lock;
  std::unordered_map<K, u64> m;
};
template <class K>
struct locked_handle {
  locked_map<K>& s;
  bool insert(const K& k, u64 v) {
    std::unique_lock g(s.lock);
    return s.m.emplace(k, v).second;
  }
  bool find(const K& k, u64& v) {
    std::shared_lock g(s.lock);
    auto it = s.m.find(k);
    if (it == s.m.end()) return false;
    v = it->second;
    return true;
  }
  bool erase(const K& k) {
    std::unique_lock g(s.lock);
    return s.m.erase(k) == 1;
  }
  void add(const K& k) {
    std::unique_lock g(s.lock);
    ++s.m[k];
  }
  u64 scan(u64& sink, const std::atomic<bool>& stop) {
    std::shared_lock g(s.lock);
    return visit_all(s.m, sink, stop);
  }
};

#if defined(LFCORE_HAVE_LIBCDS)
template <class K>
struct cds_list_traits : cds::container::michael_list::traits {
  using less = std::less<K>;
};
template <class K>
struct cds_map_traits : cds::container::michael_map::traits {
  using hash = std::hash<K>; // integer keys are already spread
};
template <class K>
using cds_michael = cds::container::MichaelHashMap<
    cds::gc::HP, cds::container::MichaelKVList<cds::gc::HP, K, u64, cds_list_traits<K>>,
    cds_map_traits<K>>;
// libcds carves a Feldman array node as one block of sizeof(array_node) plus
// its slots (cds::details::Allocator::NewBlock) and frees it as one
// array_node (Delete(p, 1)): a sized delete with the wrong size, which glibc
// ignores and jemalloc trusts - the map sweeps crashed under
// LD_PRELOAD=libjemalloc.so.2. Its array nodes are freed without the size.
template <class T>
struct unsized_free_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = unsized_free_allocator<U>;
  };
  unsized_free_allocator() = default;
  template <class U>
  unsized_free_allocator(const unsized_free_allocator<U>&) noexcept {}
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
};
struct cds_feldman_traits : cds::container::feldman_hashmap::traits {
  using node_allocator = unsized_free_allocator<int>;
};
using cds_feldman = // fixed-size keys only
    cds::container::FeldmanHashMap<cds::gc::HP, u64, u64, cds_feldman_traits>;
template <class Map, class K>
struct cds_handle {
  Map& m;
  peers::libcds_thread attach{};
  bool insert(const K& k, u64 v) { return m.insert(k, v); }
  bool find(const K& k, u64& v) {
    if constexpr (std::is_same_v<Map, cds_feldman>) {
      auto gp = m.get(k);
      if (!gp) return false;
      v = gp->second;
      return true;
    } else {
      return m.find(k, [&](std::pair<const K, u64>& kv) { v = kv.second; });
    }
  }
  bool erase(const K& k) { return m.erase(k); }
  // Michael's map changes an element in place, in update()'s functor, which
  // must make the change safe against others itself: an atomic add. A new
  // element holds 0 (its value default-constructed) and may be linked
  // before its functor runs, so that functor adds too.
  void add(const K& k) requires(!std::is_same_v<Map, cds_feldman>) {
    m.update(k, [](bool, std::pair<const K, u64>& kv) {
      std::atomic_ref<u64>(kv.second).fetch_add(1, std::memory_order_relaxed);
    });
  }
  // Iterators guard their element with hazard pointers. libcds calls
  // Feldman's thread-safe and Michael's (over MichaelKVList) "for debugging
  // purpose only" beside concurrent erases; beside other iterations, which
  // is all this workload runs, both are safe.
  u64 scan(u64& sink, const std::atomic<bool>& stop) { return visit_all(m, sink, stop); }
};
#endif

#if defined(LFCORE_HAVE_TBB)
template <class K>
using tbb_hash_map = tbb::concurrent_hash_map<K, u64, tbb::tbb_hash_compare<K>,
                                              std::allocator<std::pair<const K, u64>>>;
template <class K>
struct tbb_hash_handle {
  tbb_hash_map<K>& m;
  bool insert(const K& k, u64 v) { return m.insert({k, v}); }
  bool find(const K& k, u64& v) {
    typename tbb_hash_map<K>::const_accessor a;
    if (!m.find(a, k)) return false;
    v = a->second;
    return true;
  }
  bool erase(const K& k) { return m.erase(k); }
  void add(const K& k) { // a write accessor locks the element; a new one holds 0
    typename tbb_hash_map<K>::accessor a;
    m.insert(a, k);
    ++a->second;
  }
  // Not safe beside concurrent updates (oneTBB's documentation), but beside
  // other iterations, which is all this workload runs.
  u64 scan(u64& sink, const std::atomic<bool>& stop) { return visit_all(m, sink, stop); }
};
using tbb_unordered_map =
    tbb::concurrent_unordered_map<u64, u64, std::hash<u64>, std::equal_to<u64>,
                                  std::allocator<std::pair<const u64, u64>>>;
struct tbb_unordered_handle {
  tbb_unordered_map& m;
  bool insert(u64 k, u64 v) { return m.insert({k, v}).second; }
  bool find(u64 k, u64& v) {
    auto it = m.find(k);
    if (it == m.end()) return false;
    v = it->second;
    return true;
  }
  bool erase(u64) { return false; } // no concurrent erase: left out of the mix
  u64 scan(u64& sink, const std::atomic<bool>& stop) { return visit_all(m, sink, stop); }
};
#endif

#if defined(LFCORE_HAVE_XENIUM)
// xenium's vyukov_hash_map: a trivial key and value both live in the bucket
// cells; hazard pointers reclaim the bucket arrays replaced by a resize.
// Lookups are lock-free, updates lock their bucket (xenium's documentation:
// "Progress guarantees: blocking"), so it is a peer, not a lock-free one.
using xenium_map =
    xenium::vyukov_hash_map<u64, u64,
                            xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
struct xenium_handle {
  xenium_map& m;
  bool insert(u64 k, u64 v) { return m.emplace(k, v); }
  bool find(u64 k, u64& v) {
    xenium_map::accessor a;
    if (!m.try_get_value(k, a)) return false;
    v = *a;
    return true;
  }
  bool erase(u64 k) { return m.erase(k); }
  // An iterator locks the bucket it is in: passes over the map take turns there.
  u64 scan(u64& sink, const std::atomic<bool>& stop) { return visit_all(m, sink, stop); }
};

// xenium's lock-free map: a fixed array of Harris-Michael lists whose nodes
// hazard pointers reclaim. The bucket count is a template argument and the
// array never grows, so the contender gets 2^20 buckets (one per key at the
// default N) or, past 2^20 keys, 2^24 - the nearest it has to a size hint.
template <class K, std::size_t Buckets>
using xenium_lock_free_map = xenium::harris_michael_hash_map<
    K, u64, xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>,
    xenium::policy::buckets<Buckets>>;
template <class Map, class K>
struct xenium_lock_free_handle {
  Map& m;
  bool insert(const K& k, u64 v) { return m.emplace(k, v); }
  bool find(const K& k, u64& v) {
    auto it = m.find(k); // holds its element's hazard pointers until it goes
    if (it == m.end()) return false;
    v = it->second;
    return true;
  }
  bool erase(const K& k) { return m.erase(k); }
  u64 scan(u64& sink, const std::atomic<bool>& stop) { return visit_all(m, sink, stop); }
};
#endif

#if defined(LFCORE_HAVE_LIBCUCKOO)
template <class K>
using cuckoo_map = libcuckoo::cuckoohash_map<K, u64>;
template <class K>
struct cuckoo_handle {
  cuckoo_map<K>& m;
  bool insert(const K& k, u64 v) { return m.insert(k, v); }
  bool find(const K& k, u64& v) { return m.find(k, v); }
  bool erase(const K& k) { return m.erase(k); }
  void add(const K& k) { // under the key's bucket locks, in place
    const auto add_one = [](u64& count) { ++count; };
    m.upsert(k, add_one, u64{1});
  }
  // Iteration locks the whole table: passes over the map run one at a time.
  u64 scan(u64& sink, const std::atomic<bool>& stop) {
    auto locked = m.lock_table();
    return visit_all(locked, sink, stop);
  }
};
#endif

#if defined(LFCORE_HAVE_URCU)
/// Registers the thread with liburcu's memb flavour for its scope, unless it
/// is already (lfcore::urcu::memb registers the threads it meets, too).
struct memb_registration {
  const bool mine = !URCU_TLS(urcu_memb_reader).registered;
  memb_registration() {
    if (mine) urcu_memb_register_thread();
  }
  ~memb_registration() {
    if (mine) urcu_memb_unregister_thread();
  }
  memb_registration(const memb_registration&) = delete;
  memb_registration& operator=(const memb_registration&) = delete;
};

/// liburcu's resizable RCU hash table (cds_lfht), memb flavour: lookups in a
/// read-side critical section, erased nodes freed by call_rcu.
struct urcu_map {
  struct node {
    cds_lfht_node link;
    u64 key, value;
    rcu_head rcu;
  };
  explicit urcu_map(u64 n) {
    // Sizes must be powers of two; 0 buckets at most means no limit.
    table =
        cds_lfht_new_flavor(std::bit_ceil(n), 1024, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                            &urcu_memb_flavor, nullptr);
    if (table == nullptr) throw std::runtime_error("cds_lfht_new_flavor failed");
  }
  ~urcu_map() {
    memb_registration registered;
    cds_lfht_iter it;
    cds_lfht_node* n;
    urcu_memb_read_lock();
    cds_lfht_for_each(table, &it, n) {
      if (cds_lfht_del(table, n) == 0)
        urcu_memb_call_rcu(&caa_container_of(n, node, link)->rcu, free_node);
    }
    urcu_memb_read_unlock();
    urcu_memb_barrier(); // runs the pending frees
    cds_lfht_destroy(table, nullptr);
  }
  static void free_node(rcu_head* h) { delete caa_container_of(h, node, rcu); }
  static int match(cds_lfht_node* n, const void* key) {
    return caa_container_of(n, node, link)->key == *static_cast<const u64*>(key);
  }
  cds_lfht* table;
};
struct urcu_handle {
  urcu_map& m;
  memb_registration registered{};
  static unsigned long hash(u64 k) { return static_cast<unsigned long>(k); } // already spread
  bool insert(u64 k, u64 v) {
    auto* n = new urcu_map::node{{}, k, v, {}};
    cds_lfht_node_init(&n->link);
    urcu_memb_read_lock();
    cds_lfht_node* got = cds_lfht_add_unique(m.table, hash(k), urcu_map::match, &k, &n->link);
    urcu_memb_read_unlock();
    if (got == &n->link) return true;
    delete n;
    return false;
  }
  bool find(u64 k, u64& v) {
    cds_lfht_iter it;
    urcu_memb_read_lock();
    cds_lfht_lookup(m.table, hash(k), urcu_map::match, &k, &it);
    cds_lfht_node* n = cds_lfht_iter_get_node(&it);
    if (n != nullptr) v = caa_container_of(n, urcu_map::node, link)->value;
    urcu_memb_read_unlock();
    return n != nullptr;
  }
  bool erase(u64 k) {
    cds_lfht_iter it;
    urcu_memb_read_lock();
    cds_lfht_lookup(m.table, hash(k), urcu_map::match, &k, &it);
    cds_lfht_node* n = cds_lfht_iter_get_node(&it);
    const bool erased = n != nullptr && cds_lfht_del(m.table, n) == 0;
    urcu_memb_read_unlock();
    if (erased)
      urcu_memb_call_rcu(&caa_container_of(n, urcu_map::node, link)->rcu, urcu_map::free_node);
    return erased;
  }
  // In place, by an atomic add inside the read-side section that found the
  // node (a node is freed only after a grace period); an absent key is added
  // unique, and a racing add of the same key counts on the winner's node.
  void add(u64 k) {
    cds_lfht_iter it;
    urcu_memb_read_lock();
    cds_lfht_lookup(m.table, hash(k), urcu_map::match, &k, &it);
    cds_lfht_node* n = cds_lfht_iter_get_node(&it);
    if (n == nullptr) {
      auto* mine = new urcu_map::node{{}, k, 1, {}};
      cds_lfht_node_init(&mine->link);
      n = cds_lfht_add_unique(m.table, hash(k), urcu_map::match, &k, &mine->link);
      if (n == &mine->link) {
        urcu_memb_read_unlock();
        return;
      }
      delete mine;
    }
    std::atomic_ref<u64>(caa_container_of(n, urcu_map::node, link)->value)
        .fetch_add(1, std::memory_order_relaxed);
    urcu_memb_read_unlock();
  }
  // One read-side section per pass.
  u64 scan(u64& sink, const std::atomic<bool>& stop) {
    u64 visited = 0;
    cds_lfht_iter it;
    cds_lfht_node* n;
    urcu_memb_read_lock();
    cds_lfht_for_each(m.table, &it, n) {
      sink += caa_container_of(n, urcu_map::node, link)->value;
      if ((++visited & 1023) == 0 && stop.load(std::memory_order_relaxed)) break;
    }
    urcu_memb_read_unlock();
    return visited;
  }
};
#endif

struct map_contender {
  std::string name;
  bool is_lfcore;
  bool erases;   // takes part in the mix (needs a concurrent erase)
  bool iterates; // takes part in the iterate workload (its handle scans)
  bool counts;   // takes part in the count workload (its handle adds)
  std::function<double(const point&, workload, u64)> run;
  std::function<std::function<double()>(const point&, workload, u64)> open; // see open_map
  std::function<double(u64)> bytes;
  bool only_counts = false; // takes part in the count workload alone
};

template <class Map, class Handle, class Keys = u64_keys, class Make>
map_contender make_contender(std::string name, bool lfcore, bool erases, Make make) {
  return {
      std::move(name),
      lfcore,
      erases,
      scans<Handle>,
      counts<Handle>,
      [=](const point& p, workload w, u64 n) { return run_map<Map, Handle, Keys>(p, w, n, make); },
      [=](const point& p, workload w, u64 n) { return open_map<Map, Handle, Keys>(p, w, n, make); },
      [=](u64 n) { return bytes_per_key<Map, Handle, Keys>(n, make); }};
}

// Every contender that takes a size hint gets n, lfcore included (its root size).
template <class M>
auto sized() {
  return [](u64 n) { return std::make_unique<M>(n); };
}
// lfcore's size hint is its root size: a bucket per key, or per
// keys_per_bucket keys for the memory-lean shape (see
// hash_trie_config::for_expected_size).
template <class Map>
auto lf_sized(u64 keys_per_bucket = 1) {
  return [keys_per_bucket](u64 n) {
    return std::make_unique<Map>(
        lfcore::hash_trie_config::for_expected_size((n + keys_per_bucket - 1) / keys_per_bucket));
  };
}
template <class K, class R, class Keys = u64_keys, template <class> class A = std::allocator>
void add_lfcore_contender(std::vector<map_contender>& c, std::string name) {
  using map = lf_map<K, R, A>;
  c.push_back(
      make_contender<map, lf_handle<map>, Keys>(std::move(name), true, true, lf_sized<map>()));
}
// A map each batch of which is prefetched; its memory is the unprefetched
// contender's, so it has no row of its own in the memory table.
template <class Map, class Keys = u64_keys, class Make>
void add_prefetching(std::vector<map_contender>& c, const std::string& name, Make make) {
  map_contender m = make_contender<Map, lf_prefetching_handle<Map>, Keys>(
      name + ", prefetched batches", true, true, make);
  m.bytes = nullptr;
  m.iterates = false; // iterates as the contender without prefetching
  c.push_back(std::move(m));
}
template <class K, class R = lfcore::hazard_pointer_reclamation, class Keys = u64_keys>
void add_lfcore_prefetching_contender(std::vector<map_contender>& c, const std::string& name) {
  using map = lf_map<K, R>;
  add_prefetching<map, Keys>(c, name, lf_sized<map>());
}

#if defined(LFCORE_HAVE_URCU_POLICY)
// Its memory is urcu::memb's: no row of its own in the memory table.
template <class K, class Keys = u64_keys>
void add_lfcore_qsbr_contender(std::vector<map_contender>& c) {
  using map = lf_map<K, lfcore::urcu::qsbr>;
  map_contender qsbr = make_contender<map, lf_qsbr_handle<map>, Keys>(
      "lfcore hash_trie_map<urcu::qsbr>", true, true, lf_sized<map>());
  qsbr.bytes = nullptr;
  c.push_back(std::move(qsbr));
}
#endif

#if defined(LFCORE_HAVE_XENIUM)
template <class K, class Keys>
void add_xenium_lock_free_contender(std::vector<map_contender>& c, u64 n) {
  const char* name = "xenium harris_michael_hash_map<HP>";
  auto add = [&]<std::size_t Buckets>() {
    using map = xenium_lock_free_map<K, Buckets>;
    c.push_back(make_contender<map, xenium_lock_free_handle<map, K>, Keys>(
        name, false, true, [](u64) { return std::make_unique<map>(); }));
  };
  if (n <= (u64(1) << 20))
    add.template operator()<std::size_t(1) << 20>();
  else
    add.template operator()<std::size_t(1) << 24>();
}
#endif

// `keys`: the sweep's N, for the peers whose size is fixed when compiled.
std::vector<map_contender> map_contenders(u64 keys) {
  std::vector<map_contender> c;
  add_lfcore_contender<u64, lfcore::hazard_pointer_reclamation>(c, "lfcore hash_trie_map");
  add_lfcore_prefetching_contender<u64>(c, "lfcore hash_trie_map");
#if defined(LFCORE_HAVE_URCU_POLICY)
  add_lfcore_contender<u64, lfcore::urcu::memb>(c, "lfcore hash_trie_map<urcu::memb>");
  // With the memory latency hidden, what each policy costs per node shows.
  add_lfcore_prefetching_contender<u64, lfcore::urcu::memb>(c, "lfcore hash_trie_map<urcu::memb>");
  add_lfcore_qsbr_contender<u64>(c);
#endif
  add_lfcore_contender<u64, lfcore::hazard_pointer_reclamation, u64_keys, lfcore::pool_allocator>(
      c, "lfcore hash_trie_map<pool_allocator>");
  {
    using lean = lf_map<u64, lfcore::hazard_pointer_reclamation, lfcore::pool_allocator>;
    const std::string name = "lfcore hash_trie_map<pool_allocator>, a bucket per 2 keys";
    c.push_back(make_contender<lean, lf_handle<lean>>(name, true, true, lf_sized<lean>(2)));
    // Whether prefetching wins back what the longer chains cost.
    add_prefetching<lean>(c, name, lf_sized<lean>(2));
  }
  {
    map_contender counting = make_contender<lf_counting_map, lf_counting_handle>(
        "lfcore hash_trie_map, count in place (mutable atomic)", true, true,
        lf_sized<lf_counting_map>());
    counting.bytes = nullptr;
    counting.only_counts = true;
    c.push_back(std::move(counting));
  }
#if defined(LFCORE_HAVE_LIBCDS)
  c.push_back(make_contender<cds_michael<u64>, cds_handle<cds_michael<u64>, u64>>(
      "libcds MichaelHashMap<HP>", false, true,
      [](u64 n) { return std::make_unique<cds_michael<u64>>(n, 1); }));
  c.push_back(make_contender<cds_feldman, cds_handle<cds_feldman, u64>>(
      "libcds FeldmanHashMap<HP>", false, true,
      [](u64) { return std::make_unique<cds_feldman>(); }));
#endif
#if defined(LFCORE_HAVE_XENIUM)
  c.push_back(make_contender<xenium_map, xenium_handle>(
      "xenium vyukov_hash_map<HP>", false, true,
      [](u64 n) { return std::make_unique<xenium_map>(std::bit_ceil(n)); }));
  add_xenium_lock_free_contender<u64, u64_keys>(c, keys);
#endif
#if defined(LFCORE_HAVE_URCU)
  c.push_back(
      make_contender<urcu_map, urcu_handle>("liburcu cds_lfht", false, true, sized<urcu_map>()));
#endif
#if defined(LFCORE_HAVE_TBB)
  c.push_back(make_contender<tbb_hash_map<u64>, tbb_hash_handle<u64>>(
      "tbb::concurrent_hash_map", false, true, sized<tbb_hash_map<u64>>()));
  c.push_back(make_contender<tbb_unordered_map, tbb_unordered_handle>(
      "tbb::concurrent_unordered_map", false, false, sized<tbb_unordered_map>()));
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
  c.push_back(make_contender<cuckoo_map<u64>, cuckoo_handle<u64>>("libcuckoo cuckoohash_map", false,
                                                                  true, sized<cuckoo_map<u64>>()));
#endif
  c.push_back(make_contender<locked_map<u64>, locked_handle<u64>>(
      "std::unordered_map + shared_mutex", false, true, sized<locked_map<u64>>()));
  return c;
}

// std::string keys (about 20 bytes, beyond the small-string buffer): the peers
// that take any key type.
std::vector<map_contender> string_map_contenders(u64 keys) {
  using S = std::string;
  std::vector<map_contender> c;
  add_lfcore_contender<S, lfcore::hazard_pointer_reclamation, string_keys>(c,
                                                                           "lfcore hash_trie_map");
  add_lfcore_prefetching_contender<S, lfcore::hazard_pointer_reclamation, string_keys>(
      c, "lfcore hash_trie_map");
#if defined(LFCORE_HAVE_URCU_POLICY)
  add_lfcore_contender<S, lfcore::urcu::memb, string_keys>(c, "lfcore hash_trie_map<urcu::memb>");
  add_lfcore_qsbr_contender<S, string_keys>(c);
#endif
#if defined(LFCORE_HAVE_LIBCDS)
  c.push_back(make_contender<cds_michael<S>, cds_handle<cds_michael<S>, S>, string_keys>(
      "libcds MichaelHashMap<HP>", false, true,
      [](u64 n) { return std::make_unique<cds_michael<S>>(n, 1); }));
#endif
#if defined(LFCORE_HAVE_XENIUM)
  add_xenium_lock_free_contender<S, string_keys>(c, keys);
#endif
#if defined(LFCORE_HAVE_TBB)
  c.push_back(make_contender<tbb_hash_map<S>, tbb_hash_handle<S>, string_keys>(
      "tbb::concurrent_hash_map", false, true, sized<tbb_hash_map<S>>()));
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
  c.push_back(make_contender<cuckoo_map<S>, cuckoo_handle<S>, string_keys>(
      "libcuckoo cuckoohash_map", false, true, sized<cuckoo_map<S>>()));
#endif
  c.push_back(make_contender<locked_map<S>, locked_handle<S>, string_keys>(
      "std::unordered_map + shared_mutex", false, true, sized<locked_map<S>>()));
  return c;
}

} // namespace

std::vector<sweep> map_sweeps(const options& opt) {
  const u64 n = static_cast<u64>(opt.map_keys);
  const std::string size = std::to_string(n);
  struct spec {
    const char* name;
    const char* title;
    const char* what;
    workload w;
  };
  const spec specs[] = {
      {"map_insert", "Maps: insert-only", "one insert of a new key (the prefill, disjoint ranges)",
       workload::insert_only},
      {"map_lookup_hit", "Maps: lookup, key present", "one successful find", workload::lookup_hit},
      {"map_lookup_miss", "Maps: lookup, key absent", "one unsuccessful find",
       workload::lookup_miss},
      {"map_mix", "Maps: 90% find, 5% insert, 5% erase, uniform keys",
       "one operation of the mix over 2N keys (about N present)", workload::mix_90_5_5},
      {"map_mix_zipf", "Maps: 90% find, 5% insert, 5% erase, zipfian keys (0.99)",
       "one operation of the mix over 2N keys, zipfian (the popular keys scattered over them)",
       workload::mix_zipf},
      {"map_count_zipf", "Maps: counting, zipfian keys (0.99)",
       "one count added to a key over 2N keys, zipfian (an absent key is inserted with 1)",
       workload::count_zipf},
      {"map_iterate", "Maps: iteration, every thread passing over the whole map",
       "one element visited (read-only: nothing else runs)", workload::iterate},
  };
  const spec string_specs[] = {
      {"map_str_lookup_hit", "Maps, std::string keys: lookup, key present",
       "one successful find of a 20-byte string key", workload::lookup_hit},
      {"map_str_mix", "Maps, std::string keys: 90% find, 5% insert, 5% erase",
       "one operation of the mix over 2N string keys", workload::mix_90_5_5},
  };
  std::vector<map_contender> all = map_contenders(n), strings = string_map_contenders(n);
  std::vector<sweep> out;
  auto add = [&](const spec& s, const std::vector<map_contender>& contenders) {
    sweep sw{s.name, std::string(s.title) + ", N = " + size, s.what, {}};
    for (const map_contender& c : contenders) {
      if ((s.w == workload::mix_90_5_5 || s.w == workload::mix_zipf) && !c.erases) continue;
      if (s.w == workload::iterate && !c.iterates) continue;
      if (s.w == workload::count_zipf ? !c.counts : c.only_counts) continue;
      const workload w = s.w;
      auto run = c.run;
      contender x{c.name, c.is_lfcore, [=](const point& p) { return run(p, w, n); }};
      if (w != workload::insert_only) // the fill is the insert sweep's measurement
        x.open = [open = c.open, w, n](const point& p) { return open(p, w, n); };
      sw.contenders.push_back(std::move(x));
    }
    out.push_back(std::move(sw));
  };
  for (const spec& s : specs) add(s, all);
  for (const spec& s : string_specs) add(s, strings);
  return out;
}

memory_table map_bytes_per_key(const options& opt) {
  memory_table m;
  m.title = "Maps: memory after the fill (`map_bytes`)";
  m.note = std::to_string(opt.map_keys) + " keys inserted by one thread; heap growth (" +
           heap_measure() + ") divided by the key count. Each key is a uint64 with a uint64 value.";
  m.column = "bytes per key";
  for (const map_contender& c : map_contenders(static_cast<u64>(opt.map_keys)))
    if (c.bytes && opt.selects(c.name))
      m.rows.emplace_back(c.name, c.bytes(static_cast<u64>(opt.map_keys)));
  return m;
}

} // namespace runner
