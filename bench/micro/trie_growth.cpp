// bench/micro/trie_growth.cpp - what a map pays for not being told its size.
//
// A hash_trie_map's root is fixed at construction. A chain that fills up is
// closed by a deeper level and hoisted under it (the header says how), so a
// key is found through one more level each time its bucket filled, and
// behind the closed chains above it only when their tags match its own. A
// map that outgrows its root therefore slows down as it grows, where a root
// sized for n (hash_trie_config::for_expected_size) keeps one bucket and one
// leaf per lookup. This fills one map of each shape with n keys in `steps` equal
// steps and prints, after each step, the nanoseconds per insert of that step,
// per lookup of a present key (random among all so far), per element of an
// iteration over the whole map, and the heap bytes per key (glibc
// mallinfo2). One thread; the numbers are for comparing the shapes in one
// run, not across machines.
//
// usage: trie_growth [n = 4000000] [steps = 16]; exits 1 if a present key
// was not found or an iteration did not visit each key once.
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
using clock_type = std::chrono::steady_clock;

double ns_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
}

bool run(u64 n, u64 steps, const char* shape, lfcore::hash_trie_config config) {
  malloc_trim(0);
  const double before = heap_bytes();
  lfcore::hash_trie_map<u64, u64> m(config);
  const u64 step = n / steps;
  bool all_found = true;
  for (u64 filled = 0; filled + step <= n; filled += step) {
    const auto start = clock_type::now();
    for (u64 i = filled; i < filled + step; ++i) m.try_emplace(key(i), i);
    const double insert_ns = ns_since(start) / static_cast<double>(step);
    const u64 present = filled + step;
    const auto lookups = clock_type::now();
    u64 found = 0;
    for (u64 i = 0; i < step; ++i) found += m.contains(key((i * 2654435761u) % present));
    const double hit_ns = ns_since(lookups) / static_cast<double>(step);
    const auto iteration = clock_type::now();
    u64 visited = 0, value_sum = 0;
    for (const auto& kv : m) {
      value_sum += kv.second;
      ++visited;
    }
    const double iterate_ns = ns_since(iteration) / static_cast<double>(present);
    // Values are 0..present-1, each once: their sum shows no key was visited twice.
    all_found = all_found && found == step && visited == present &&
                value_sum == present * (present - 1) / 2;
    std::printf("| %s | %llu | %.0f | %.0f | %.0f | %.1f |\n", shape,
                static_cast<unsigned long long>(present), insert_ns, hit_ns, iterate_ns,
                (heap_bytes() - before) / static_cast<double>(present));
  }
  return all_found;
}

} // namespace

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4'000'000;
  const u64 steps = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 16;
  if (n == 0 || steps == 0 || steps > n) {
    std::fprintf(stderr, "usage: trie_growth [n > 0] [steps in 1..n]\n");
    return 2;
  }
  std::printf("| shape | keys | ns per insert (this step) | ns per hit | ns per element "
              "iterated | heap bytes per key |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  const lfcore::hash_trie_config plain{}, sized = lfcore::hash_trie_config::for_expected_size(n);
  char plain_name[64], sized_name[64];
  std::snprintf(plain_name, sizeof plain_name, "default (2^%u root)", plain.root_bits);
  std::snprintf(sized_name, sizeof sized_name, "sized for n (2^%u root)", sized.root_bits);
  const bool plain_ok = run(n, steps, plain_name, plain);
  const bool ok = run(n, steps, sized_name, sized) && plain_ok;
  if (!ok)
    std::fprintf(stderr, "trie_growth: a present key was not found, or an iteration did not "
                         "visit each key once\n");
  return ok ? 0 : 1;
}
