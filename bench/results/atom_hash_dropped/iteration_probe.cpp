// Times visit_all and collect over the paper workload's table (one thread).
#include "atom_sequences.hpp" // bench/runner

#include <lfcore/atom_table.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char**) {
  const bool sized = argc < 2;
  const std::vector<std::string> seqs = runner::make_atom_sequences(240000);
  lfcore::atom_table t(sized ? 240000 * 30 : 0);
  std::string rotation;
  for (const std::string& s : seqs)
    runner::intern_splits(s, rotation,
                          [&](std::string_view piece) { return t.intern(piece).bits(); });
  std::size_t n = 0;
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    const double t0 = now();
    n = 0;
    t.for_each([&](lfcore::atom) { ++n; });
    best = std::min(best, now() - t0);
  }
  const double c0 = now();
  const std::size_t got = t.collect();
  const double ct = now() - c0;
  std::printf("collect %zu %.1f ns/atom\n", got, ct * 1e9 / static_cast<double>(n));
  std::printf("%s visit_all %zu atoms %.1f ns/atom\n", sized ? "sized" : "unsized", n,
              best * 1e9 / static_cast<double>(n));
}
