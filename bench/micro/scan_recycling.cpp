// bench/micro/scan_recycling.cpp - what the hazard-pointer scan threshold R
// costs an update-heavy map on the allocator it runs on.
//
// Every upsert() allocates a leaf and retires the one it replaced; a thread's
// scan frees its retired leaves once it holds R of them, so about R leaves per
// thread are between their retire and their free at any time. glibc keeps
// freed 32-byte chunks on per-arena fast-bin lists of any length; jemalloc's
// per-thread cache holds 200 blocks of a small size class by default and
// sends the rest back through its arena's bins (a lock and the slab's
// metadata per batch), from which the next allocations fetch them again.
// The runner's counting sweep ran 0.76x-0.89x on jemalloc against glibc at
// 1-2 threads (bench/results/allocators_maps/), and this program asks how
// much of that is R: one thread fills a map of n keys, each map with a
// hazard_pointer_domain of its own, then times `updates` upserts of random
// present keys, for each R in turn, and for R = 8192 with leaves from
// lfcore::pool_allocator, whose per-thread magazines pass freed leaves on 64
// at a time; rounds alternate the five.
//
// Paced frees (a scan's leaves freed two per retire instead of at once) were
// tried against the same question and left jemalloc where it was
// (bench/results/scan_recycling/): the number of leaves in circulation
// matters, not the burst.
//
// usage: scan_recycling [n = 1000000] [updates = 4000000] [rounds = 5];
// run it under LD_PRELOAD=libjemalloc.so.2 to compare. Exits 1 if a count
// came out wrong.
#include "trie_bench.hpp"

#include <lfcore/hazard_pointer.hpp>
#include <lfcore/pool_allocator.hpp>

#include <dlfcn.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <utility>
#include <vector>

namespace {

using trie_bench::key;
using trie_bench::median;
using trie_bench::u64;

using map = lfcore::hash_trie_map<u64, u64>;
using pooled_map = lfcore::hash_trie_map<u64, u64, std::hash<u64>, std::equal_to<u64>,
                                         lfcore::pool_allocator<std::pair<const u64, u64>>>;

struct contender {
  const char* name;
  std::size_t r;
  bool pooled;
};
constexpr std::array<contender, 5> contenders{{{"R=8192", 8192, false},
                                               {"R=1024", 1024, false},
                                               {"R=256", 256, false},
                                               {"R=64", 64, false},
                                               {"R=8192 pooled", 8192, true}}};

// ns per upsert; adds one to each probed key's count and checks the total.
template <class Map>
double upsert_ns(std::size_t r, u64 n, const std::vector<u64>& probes, bool& counts_right) {
  lfcore::hazard_pointer_domain domain({.scan_threshold = r});
  u64 total = 0;
  double ns = 0;
  {
    Map m(domain, lfcore::hash_trie_config::for_expected_size(n));
    for (u64 i = 0; i < n; ++i) m.insert({key(i), 0});
    const auto add_one = [](u64 c) { return c + 1; };
    const auto start = std::chrono::steady_clock::now();
    for (const u64 k : probes) m.upsert(k, add_one, u64{1});
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    ns = took.count() / static_cast<double>(probes.size());
    for (const auto& [k, c] : m) total += c;
  }
  counts_right = counts_right && total == probes.size();
  return ns;
}

} // namespace

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const u64 updates = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4000000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (n == 0 || updates == 0 || rounds <= 0) {
    std::fprintf(stderr, "usage: scan_recycling [n > 0] [updates > 0] [rounds > 0]\n");
    return 2;
  }
  std::mt19937_64 rng(2026);
  std::vector<u64> probes(updates);
  for (u64& k : probes) k = key(rng() % n);
  // jemalloc exports mallctl; glibc does not.
  const char* malloc_name = dlsym(RTLD_DEFAULT, "mallctl") != nullptr ? "jemalloc" : "glibc";

  bool counts_right = true;
  std::array<std::vector<double>, contenders.size()> ns;
  for (int round = 0; round < rounds; ++round) {
    std::printf("round %d:", round + 1);
    for (std::size_t t = 0; t < contenders.size(); ++t) {
      // Rotate the order so that none always runs first in a round.
      const std::size_t i = (t + static_cast<std::size_t>(round)) % contenders.size();
      const contender& c = contenders[i];
      ns[i].push_back(c.pooled ? upsert_ns<pooled_map>(c.r, n, probes, counts_right)
                               : upsert_ns<map>(c.r, n, probes, counts_right));
    }
    for (std::size_t i = 0; i < contenders.size(); ++i)
      std::printf(" %s %.1f ns", contenders[i].name, ns[i].back());
    std::printf("\n");
  }
  std::printf("%s, n %llu, %llu upserts per round, median ns per upsert (median of the rounds' "
              "speedups over %s):",
              malloc_name, static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(updates), contenders[0].name);
  for (std::size_t i = 0; i < contenders.size(); ++i) {
    // Within a round first: the host's drift moves a round's runs alike.
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(ns[0][r] / ns[i][r]);
    std::printf(" %s %.1f (%.2fx)", contenders[i].name, median(ns[i]), median(ratio));
  }
  std::printf("\n");
  if (!counts_right) std::fprintf(stderr, "a count came out wrong\n");
  return counts_right ? 0 : 1;
}
