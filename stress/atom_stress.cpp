// Stress for lfcore::atom_table: many threads intern, reference, release,
// add properties and functors while a collector runs, on a small text pool so
// that the same atoms die and come back constantly. Asserts that an atom
// held by a reference is never freed or reused (its text and its property
// stay its own), that every unreferenced atom is eventually collected, and
// that all the memory comes back. LFCORE_STRESS_SCALE=N multiplies the work.
#include "../tests/heap/heap_counter.hpp"

#include "scale.hpp"
#include <lfcore/atom_table.hpp>
#include <lfcore/hazard_pointer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using lfcore::atom;
using lfcore::atom_table;

namespace {

long scaled(long n) {
  return lfcore_stress::scaled(n, 1);
}

// Texts on both sides of the inline capacity.
std::string text_of(int i) {
  return (i % 2 ? "long_enough_to_live_on_the_heap_" : "t") + std::to_string(i);
}

} // namespace

// One round: a table, its workers and collector, then the table destroyed.
long intern_release_collect_round() {
  long n = 0;
  {
    atom_table t;
    constexpr int threads = 6, pool = 1024;
    const long rounds = scaled(lfcore::stress_build ? 5'000 : 50'000);
    std::atomic<bool> stop{false};
    std::atomic<long> collected{0};
    std::thread collector([&] {
      while (!stop.load()) collected += static_cast<long>(t.collect());
    });
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w)
      workers.emplace_back([&, w] {
        std::vector<std::pair<atom, int>> held;
        unsigned r = 12345u + static_cast<unsigned>(w);
        for (long k = 0; k < rounds; ++k) {
          r = r * 1103515245u + 12345u;
          const int i = static_cast<int>((r >> 8) % pool);
          const atom a = (r & 1) ? t.intern_ref(text_of(i)) : t.find(text_of(i)).value_or(atom());
          if (!a) continue; // find: absent (collected, or never interned yet)
          ASSERT_EQ(atom_table::name(a), text_of(i));
          t.set_property(a, lfcore::property::first_user, static_cast<std::uintptr_t>(i));
          ASSERT_EQ(t.functor_of(a, static_cast<std::uint32_t>(i % 3)).name(), a);
          held.emplace_back(a, i);
          if (held.size() > 4 || (r & 0x300) == 0) {
            const auto [old, j] = held.front();
            ASSERT_EQ(atom_table::name(old), text_of(j));
            ASSERT_EQ(t.find_property(old, lfcore::property::first_user),
                      static_cast<std::uintptr_t>(j));
            t.release(old);
            held.erase(held.begin());
          }
        }
        for (const auto& [a, j] : held) t.release(a);
      });
    for (auto& th : workers) th.join();
    stop = true;
    collector.join();
    collected += static_cast<long>(t.collect());
    EXPECT_EQ(t.size(), 0u);           // nothing is referenced or permanent any more
    EXPECT_GT(collected.load(), pool); // atoms died and came back
    n = collected.load();
  }
  lfcore::hazard_pointer_default_domain().reclaim(); // this thread's and exited threads' leftovers
  return n;
}

TEST(AtomStress, ReferencedAtomsSurviveCollection) {
  // The first round also sets up what outlives it by design (the hazard-
  // pointer domain's per-thread records and blocks); the second must leave
  // the heap exactly where the first did: every atom, text, property block
  // and functor came back.
  auto& domain = lfcore::hazard_pointer_default_domain();
  intern_release_collect_round();
  const long long heap_before = test::live_heap_bytes();
  const long collected = intern_release_collect_round();
  const long long grown = test::live_heap_bytes() - heap_before;
  std::printf("collected %ld atoms; heap grew by %lld bytes; hazard records %zu\n", collected,
              grown, domain.stats().hazard_records);
  EXPECT_EQ(domain.stats().pending(), 0u); // every dead atom and old block was destroyed
  // What may grow is the domain's bookkeeping (records and per-thread blocks
  // follow peak concurrency, not work: 60 KiB seen when a busy machine gave
  // the second round more overlap), far less than one leaf per dead atom. A
  // leaked property block and functor per atom would be 80 bytes each.
  EXPECT_LT(grown, 64 * 1024 + collected * 56 / 4);
}

TEST(AtomStress, ManyThreadsInternTheSameTexts) {
  atom_table t;
  constexpr int threads = 8;
  // Thread w interns text k * steps[w] mod texts for every k: each text once,
  // in an order of its own, when steps[w] and texts are coprime. The scale
  // can break that (LFCORE_STRESS_SCALE=3 made texts a multiple of 3), so
  // texts is rounded up until no step shares a factor with it.
  static constexpr long steps[threads] = {1, 3, 7, 11, 13, 17, 19, 23};
  long texts_wanted = scaled(lfcore::stress_build ? 20'000 : 200'000);
  while (std::any_of(std::begin(steps), std::end(steps),
                     [&](long step) { return std::gcd(step, texts_wanted) != 1; }))
    ++texts_wanted;
  const int texts = static_cast<int>(texts_wanted);
  std::vector<std::vector<atom>> got(threads, std::vector<atom>(static_cast<std::size_t>(texts)));
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int k = 0; k < texts; ++k) {
        const int i = static_cast<int>((k * steps[w]) % texts);
        got[w][i] = t.intern(text_of(i));
      }
    });
  for (auto& th : pool) th.join();
  ASSERT_EQ(t.size(), static_cast<std::size_t>(texts));
  for (int i = 0; i < texts; ++i)
    for (int w = 1; w < threads; ++w) ASSERT_EQ(got[w][i], got[0][i]) << text_of(i);
  std::size_t visited = 0;
  t.for_each([&](atom) { ++visited; });
  EXPECT_EQ(visited, static_cast<std::size_t>(texts));
}
