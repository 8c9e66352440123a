// examples/openmp_interop.cpp - lfcore inside OpenMP parallel regions.
//
// OpenMP threads are ordinary threads to lfcore: nothing registers them.
// Here an `omp parallel` region shares an unbounded MPMC queue, a
// hash_trie_map and an atom table; a `parallel for` fills the map, the threads
// pass items through the queue, and hazard pointers are taken and retired
// inside the region (they are handed over when libgomp's threads exit).
// Checks every result and exits 1 on a mismatch.
#include <lfcore/atom_table.hpp>
#include <lfcore/hash_trie_map.hpp>
#include <lfcore/unbounded_mpmc_queue.hpp>

#include <omp.h>

#include <atomic>
#include <cstdio>
#include <string>

int main() {
  constexpr long n = 200'000;
  lfcore::hash_trie_map<long, long> squares(lfcore::hash_trie_config::for_expected_size(n));
  lfcore::unbounded_mpmc_queue<long> queue;
  lfcore::atom_table atoms;
  std::atomic<long> popped_sum{0};
  int threads = 0;

#pragma omp parallel for schedule(dynamic, 1024)
  for (long i = 0; i < n; ++i) squares.insert({i, i * i});

#pragma omp parallel
  {
#pragma omp single
    threads = omp_get_num_threads();
    // Every thread produces a share and consumes whatever it finds.
#pragma omp for
    for (long i = 1; i <= n; ++i) queue.push(i);
    long mine = 0, v = 0;
    while (queue.try_pop(v)) mine += v;
    popped_sum += mine;
    // Interning the same names from every thread gives the same atoms.
    for (int k = 0; k < 100; ++k) atoms.intern("name_" + std::to_string(k));
#pragma omp for
    for (long i = 0; i < n; i += 2) squares.erase(i); // retired through hazard pointers
  }

  long odd = 0;
  bool values_ok = true;
  for (const auto& [k, v] : squares) {
    ++odd;
    values_ok = values_ok && k % 2 == 1 && v == k * k;
  }
  const bool ok = values_ok && odd == n / 2 && popped_sum == n * (n + 1) / 2 && atoms.size() == 100;
  std::printf("%d OpenMP threads: %ld keys left, queue sum %ld, %zu atoms: %s\n", threads, odd,
              popped_sum.load(), atoms.size(), ok ? "all as expected" : "MISMATCH");
  return ok ? 0 : 1;
}
