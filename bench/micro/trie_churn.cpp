// bench/micro/trie_churn.cpp - what churn does to a hash_trie_map's shape.
//
// A map is filled with n keys, then every key is replaced, `rounds` times
// over (erase the oldest, insert a new one, so the count holds), then every
// key is erased. A closed chain keeps its level while the level holds a key,
// so outlier chains closed during churn pile up as levels: this prints heap
// bytes per key (glibc mallinfo2) and single-thread lookup time (half hits,
// half misses) after the fill and after the churn, and the bytes per key the
// levels still hold once every key is erased, with and without compression
// of empty levels, for the default shape (a 2^16 root) and a root sized for
// n (hash_trie_config::for_expected_size), whose chains close at 8 leaves,
// and at 4.
//
// usage: trie_churn [n = 1000000] [rounds = 30]; exits 1 if a present key
// was not found.
#include "trie_bench.hpp"

#include <malloc.h> // malloc_trim

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using trie_bench::heap_bytes;
using trie_bench::key;
using trie_bench::u64;

bool all_found = true; // every lookup of a present key found it

// Nanoseconds per lookup over n hits among keys [first, first + n) and n misses.
template <class Map>
double lookup_ns(const Map& m, u64 first, u64 n) {
  const auto start = std::chrono::steady_clock::now();
  u64 found = 0;
  for (u64 i = 0; i < n; ++i) found += m.contains(key(first + (i * 7919) % n));
  for (u64 i = 0; i < n; ++i) found += m.contains(key(~u64{0} / 2 + i));
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  if (found != n) {
    std::fprintf(stderr, "trie_churn: %llu hits, expected %llu\n",
                 static_cast<unsigned long long>(found), static_cast<unsigned long long>(n));
    all_found = false;
  }
  return ns / static_cast<double>(2 * n);
}

void run(u64 n, int rounds, const char* shape, lfcore::hash_trie_config config) {
  malloc_trim(0);
  const double before = heap_bytes();
  lfcore::hash_trie_map<u64, u64> m(config);
  const double empty = heap_bytes();
  u64 next = 0;
  for (; next < n; ++next) m.insert({key(next), next});
  const double filled = (heap_bytes() - before) / static_cast<double>(n);
  const double filled_ns = lookup_ns(m, 0, n);
  for (int r = 0; r < rounds; ++r)
    for (u64 i = 0; i < n; ++i, ++next) {
      m.erase(key(next - n));
      m.insert({key(next), next});
    }
  lfcore::hazard_pointer_default_domain().reclaim();
  const double churned = (heap_bytes() - before) / static_cast<double>(n);
  const double churned_ns = lookup_ns(m, next - n, n);
  for (u64 i = next - n; i < next; ++i) m.erase(key(i));
  lfcore::hazard_pointer_default_domain().reclaim();
  const double left = (heap_bytes() - empty) / static_cast<double>(n); // the levels
  std::printf("| %s | %u | %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", shape,
              config.chain_threshold, config.compress_empty_levels ? "yes" : "no", filled,
              filled_ns, churned, churned_ns, left);
}

} // namespace

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  const lfcore::hash_trie_config sized = lfcore::hash_trie_config::for_expected_size(n);
  std::printf("n = %llu, root 2^%u, %d replacements of every key\n\n",
              static_cast<unsigned long long>(n), sized.root_bits, rounds);
  std::printf("| root | chain threshold | compress | bytes/key filled | lookup ns filled "
              "| bytes/key churned | lookup ns churned | bytes/key left after erasing all |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|\n");
  lfcore::hash_trie_config four = sized;
  four.chain_threshold = 4;
  { // the reclamation domain's per-thread state is allocated once: not by a row
    lfcore::hash_trie_map<u64, u64> warm_up;
    for (u64 i = 0; i < 100'000; ++i) warm_up.insert({key(i), i});
    for (u64 i = 0; i < 100'000; ++i) warm_up.erase(key(i));
    lfcore::hazard_pointer_default_domain().reclaim();
  }
  lfcore::hash_trie_config plain{}, plain_kept{}, sized_kept = sized;
  plain_kept.compress_empty_levels = sized_kept.compress_empty_levels = false;
  for (int repeat = 0; repeat < 2; ++repeat) { // interleaved: drift hits all
    run(n, rounds, "default (2^16)", plain);
    run(n, rounds, "default (2^16)", plain_kept);
    run(n, rounds, "sized", sized);
    run(n, rounds, "sized", sized_kept);
  }
  run(n, rounds, "sized", four);
  return all_found ? 0 : 1;
}
