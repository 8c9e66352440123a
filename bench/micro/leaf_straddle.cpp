// bench/micro/leaf_straddle.cpp - what a leaf that crosses a cache line costs
// a lookup hit.
//
// A <uint64_t, uint64_t> leaf is 24 bytes (next word, key, value), and a hit
// reads all three. glibc carves it from a 32-byte chunk whose user address is
// 16-aligned: where a run of such chunks starts at 16 mod 32, every other
// leaf sits at 48 mod 64 and spans two cache lines; at 0 mod 32 none does
// (28%-50% of the leaves crossed in the runs of 2026-12-07).
// jemalloc's 32-byte size class is 32-aligned: no leaf ever does. Lookup hits
// ran 1.16x-1.23x faster on jemalloc in one run, misses (which read no leaf)
// did not, and this program asks what the crossing leaves cost; the next run
// showed no hit gain (bench/results/allocators_maps/).
//
// One thread fills a map sized for n keys, then looks up `lookups` random
// present keys through visit() (reading the value, as the runner's hits do),
// for three leaf placements:
//   glibc     - std::allocator (the fraction of crossing leaves is printed),
//   aligned   - a bump arena at stride 32 from 0 mod 64: no leaf crosses,
//   crossing  - the same arena from 16 mod 64: every other leaf crosses.
// aligned and crossing use the same memory and fill order; only the 16-byte
// shift differs. Rounds run the three in turn; the program prints the median
// ns per hit of each and the medians of the rounds' ratios to aligned.
//
// usage: leaf_straddle [n = 1000000] [lookups = 10000000] [rounds = 5];
// exits 1 if a present key was not found.
#include "trie_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using trie_bench::key;
using trie_bench::median;
using trie_bench::u64;

constexpr std::uintptr_t line = 64;

bool crosses_line(const void* p, std::size_t size) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a / line != (a + size - 1) / line;
}

// The map allocates its leaves, and its hash nodes as arrays of words,
// through its Allocator; only the leaves matter here.
template <class T>
constexpr bool is_leaf = !std::is_integral_v<T>;

// Where leaves come from: std::allocator, counting those that cross a line,
// or a bump arena at a 32-byte stride from a chosen offset, which frees
// nothing (the program fills once and drops the arena after the map).
struct placement {
  static inline bool from_arena = false;
  static inline u64 leaves = 0, crossing = 0;
  static inline std::unique_ptr<std::byte[]> arena;
  static inline std::byte* next = nullptr;
  static inline std::byte* end = nullptr;
  static void use_glibc() {
    from_arena = false;
    leaves = crossing = 0;
  }
  static void use_arena(std::size_t blocks, std::uintptr_t offset) {
    from_arena = true;
    arena = std::make_unique<std::byte[]>(blocks * 32 + 2 * line);
    const auto base = reinterpret_cast<std::uintptr_t>(arena.get());
    next = arena.get() + ((line - base % line) % line + offset);
    end = arena.get() + blocks * 32 + 2 * line;
  }
};

template <class T>
struct leaf_allocator {
  using value_type = T;
  using is_always_equal = std::true_type;
  leaf_allocator() = default;
  template <class U>
  leaf_allocator(const leaf_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if constexpr (is_leaf<T>) {
      static_assert(sizeof(T) <= 32 && alignof(T) <= 16);
      if (placement::from_arena) {
        if (n != 1 || placement::next + 32 > placement::end) throw std::bad_alloc();
        T* p = reinterpret_cast<T*>(placement::next);
        placement::next += 32;
        return p;
      }
    }
    T* p = std::allocator<T>().allocate(n);
    if constexpr (is_leaf<T>) {
      ++placement::leaves;
      placement::crossing += crosses_line(p, n * sizeof(T));
    }
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (!is_leaf<T> || !placement::from_arena) std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(leaf_allocator, leaf_allocator) { return true; }
};

using map = lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>,
                                  leaf_allocator<std::pair<const u64, u64>>>;

double hit_ns(u64 n, const std::vector<u64>& probes, bool& found_all) {
  map m(lfcore::hash_trie_config::for_expected_size(n));
  for (u64 i = 0; i < n; ++i) m.insert({key(i), i});
  u64 sum = 0, found = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const u64 k : probes) found += m.visit(k, [&](const auto& kv) { sum += kv.second; });
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  found_all = found_all && found == probes.size();
  if (sum == 42) std::puts(""); // keep the reads
  return took.count() / static_cast<double>(probes.size());
}

} // namespace

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const u64 lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 10000000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (n == 0 || lookups == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: leaf_straddle [n > 0] [lookups > 0] [rounds > 0]\n");
    return 2;
  }
  std::mt19937_64 rng(2026);
  std::vector<u64> probes(lookups);
  for (u64& k : probes) k = key(rng() % n);

  bool found_all = true;
  std::vector<double> glibc, aligned, crossing;
  for (int r = 0; r < rounds; ++r) {
    placement::use_glibc();
    glibc.push_back(hit_ns(n, probes, found_all));
    const double glibc_crossing = static_cast<double>(placement::crossing) /
                                  static_cast<double>(std::max<u64>(placement::leaves, 1));
    placement::use_arena(n, 0);
    aligned.push_back(hit_ns(n, probes, found_all));
    placement::use_arena(n, 16);
    crossing.push_back(hit_ns(n, probes, found_all));
    std::printf("round %d: glibc %.1f ns (%.0f%% of leaves cross a line), aligned %.1f, "
                "crossing %.1f\n",
                r + 1, glibc.back(), 100.0 * glibc_crossing, aligned.back(), crossing.back());
  }
  // Ratios within a round first: the host's drift moves a round's three alike.
  std::vector<double> crossing_ratio, glibc_ratio;
  for (int r = 0; r < rounds; ++r) {
    crossing_ratio.push_back(crossing[r] / aligned[r]);
    glibc_ratio.push_back(glibc[r] / aligned[r]);
  }
  std::printf("n %llu, %llu hits per round, median ns per hit: glibc %.1f, aligned %.1f, "
              "crossing %.1f; median of the rounds' ratios: crossing / aligned %.2fx, "
              "glibc / aligned %.2fx\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(lookups),
              median(glibc), median(aligned), median(crossing), median(crossing_ratio),
              median(glibc_ratio));
  if (!found_all) std::fprintf(stderr, "a present key was not found\n");
  return found_all ? 0 : 1;
}
