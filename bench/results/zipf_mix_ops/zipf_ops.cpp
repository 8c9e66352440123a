// What each kind of operation of the runner's zipfian 90/5/5 mix costs, one
// thread, lfcore::hash_trie_map beside libcds MichaelHashMap<HP> (built with
// -DMICHAEL; -DBUMP gives lfcore's leaves a scratch bump allocator). README.md
// in this directory says why and what it found.
//
// The map and the operations are the runner's (bench/runner/sweeps_maps.cpp):
// N = 1e6 keys key(0) .. key(N - 1) inserted in index order, then indices
// drawn zipfian (theta 0.99) over [0, 2N), rank 0 the most frequent, drawn
// before the timed loop; a map sized for N. Each operation is timed with
// rdtsc (TSC ticks, with the reads' own cost of some 20-40 ticks in every
// figure) and counted by its kind and outcome; "hot" is an index below 1024.
//
// usage: zipf_ops MODE [seconds = 1]
//   mix      - 90% find, 5% insert, 5% erase (the runner's map_mix_zipf)
//   finds    - finds only, on the map as filled (nothing ever moved)
//   shuffled - finds only, on a map filled in a random order of the same keys
// prints one line: operations per second, then per kind its share and mean ticks.
#include <lfcore/hash_trie_map.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <x86intrin.h>

#if defined(MICHAEL)
#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>
#include <cds/gc/hp.h>
#include <cds/init.h>
#endif

namespace {

using u64 = std::uint64_t;

u64 key_of(u64 i) { // splitmix64's finalizer, as the runner spreads its keys
  u64 z = i + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Gray et al.'s zipfian generator, as the runner's (rank 0 the most frequent).
class zipfian {
public:
  zipfian(u64 n, double theta) : n_(double(n)), theta_(theta) {
    for (u64 i = 1; i <= n; ++i) zeta_n_ += 1.0 / std::pow(double(i), theta);
    const double zeta_2 = 1.0 + 1.0 / std::pow(2.0, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / n_, 1.0 - theta)) / (1.0 - zeta_2 / zeta_n_);
  }
  u64 operator()(double u) const {
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    const auto r = u64(n_ * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r < u64(n_) ? r : u64(n_) - 1;
  }

private:
  double n_, theta_, zeta_n_ = 0, alpha_ = 0, eta_ = 0;
};

#if defined(MICHAEL)
struct list_traits : cds::container::michael_list::traits {
  using less = std::less<u64>;
};
struct map_traits : cds::container::michael_map::traits {
  using hash = std::hash<u64>;
};
using cds_map = cds::container::MichaelHashMap<
    cds::gc::HP, cds::container::MichaelKVList<cds::gc::HP, u64, u64, list_traits>, map_traits>;
struct map { // the runner's calls (its cds_handle)
  cds_map m;
  explicit map(std::size_t n) : m(n, 1) {}
  bool find(u64 k, u64& v) { return m.find(k, [&](std::pair<const u64, u64>& kv) { v = kv.second; }); }
  bool insert(u64 k, u64 v) { return m.insert(k, v); }
  bool erase(u64 k) { return m.erase(k); }
};
#else
#if defined(BUMP)
// Scratch: leaves bumped from 1 MiB chunks in allocation order and never freed,
// so that the leaves of keys inserted lately (popular ones, in the mix) sit together.
template <class T>
struct bump_allocator {
  using value_type = T;
  using is_always_equal = std::true_type;
  bump_allocator() = default;
  template <class U>
  bump_allocator(const bump_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n != 1 || sizeof(T) > 64) return std::allocator<T>().allocate(n);
    static thread_local char *next = nullptr, *end = nullptr;
    const std::size_t size = (sizeof(T) + alignof(T) - 1) / alignof(T) * alignof(T);
    if (next == nullptr || std::size_t(end - next) < size) {
      next = static_cast<char*>(::operator new (std::size_t{1} << 20));
      end = next + (std::size_t{1} << 20);
    }
    T* p = reinterpret_cast<T*>(next);
    next += size;
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1 || sizeof(T) > 64) std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  friend bool operator==(const bump_allocator&, const bump_allocator<U>&) noexcept {
    return true;
  }
};
using lf_map = lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>,
                                     bump_allocator<std::pair<const u64, u64>>>;
#else
using lf_map = lfcore::hash_trie_map<u64, u64>;
#endif
struct map { // the runner's calls (its lf_handle)
  lf_map m;
  explicit map(std::size_t n) : m(lfcore::hash_trie_config::for_expected_size(n)) {}
  bool find(u64 k, u64& v) { return m.visit(k, [&](const auto& kv) { v = kv.second; }); }
  bool insert(u64 k, u64 v) { return m.try_emplace_and_visit(k, [](const auto&, bool) {}, v); }
  bool erase(u64 k) { return m.erase(k) == 1; }
};
#endif

enum kind { hit_hot, hit_other, miss_hot, miss_other, insert_new, insert_present, erase_hit, erase_miss, kinds };
const char* const kind_name[kinds] = {"hit_hot",    "hit_other",      "miss_hot",  "miss_other",
                                      "insert_new", "insert_present", "erase_hit", "erase_miss"};

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "mix" && mode != "finds" && mode != "shuffled") {
    std::fprintf(stderr, "usage: zipf_ops mix|finds|shuffled [seconds]\n");
    return 2;
  }
  const bool mix = mode == "mix";
  const double seconds = argc > 2 ? std::stod(argv[2]) : 1.0;
  const u64 n = 1000000;
  const std::size_t draws_count = std::size_t{1} << 23;
  std::vector<std::uint32_t> draws(draws_count);
  {
    const zipfian z(2 * n, 0.99);
    std::mt19937_64 rng(0x21bf);
    for (auto& d : draws) d = std::uint32_t(z(double(rng() >> 11) * 0x1.0p-53));
  }
#if defined(MICHAEL)
  cds::Initialize();
  cds::gc::HP gc;
  cds::threading::Manager::attachThread();
#endif
  {
    map m(n);
    std::vector<u64> order(n);
    for (u64 i = 0; i < n; ++i) order[i] = i;
    if (mode == "shuffled") std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
    for (u64 i : order) m.insert(key_of(i), i);
    std::mt19937_64 rng(0x5eed);
    u64 ticks[kinds] = {}, count[kinds] = {}, ops = 0, v = 0, sink = 0;
    std::size_t next = 0;
    const auto start = std::chrono::steady_clock::now();
    const auto until = start + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      for (int b = 0; b < 64; ++b, ++ops) {
        const u64 r = rng(), index = draws[next++ & (draws_count - 1)], key = key_of(index);
        const unsigned dice = mix ? unsigned(r & 0xff) % 100 : 0;
        const bool hot = index < 1024;
        const u64 t0 = __rdtsc();
        kind k;
        if (dice < 90) {
          const bool found = m.find(key, v);
          sink += v;
          k = found ? (hot ? hit_hot : hit_other) : (hot ? miss_hot : miss_other);
        } else if (dice < 95) {
          k = m.insert(key, r) ? insert_new : insert_present;
        } else {
          k = m.erase(key) ? erase_hit : erase_miss;
        }
        ticks[k] += __rdtsc() - t0;
        ++count[k];
      }
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s mops %.3f", mode.c_str(), double(ops) / elapsed / 1e6);
    for (int k = 0; k < kinds; ++k)
      std::printf(" %s %.1f%% %.0f", kind_name[k], 100.0 * double(count[k]) / double(ops),
                  count[k] != 0 ? double(ticks[k]) / double(count[k]) : 0.0);
    std::printf("\n");
    if (sink == 42) std::puts("");
  }
#if defined(MICHAEL)
  cds::threading::Manager::detachThread();
#endif
}
