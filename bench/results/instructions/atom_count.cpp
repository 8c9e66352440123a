// Instructions of the paper's atom workload and of lfht_search, one thread,
// counted by callgrind (README.md in this directory, "The atom table and the
// C API"): lfcore::atom_table beside YAP's old design (the runner's baseline),
// each sized as in the runner, over the runner's first n base sequences; and
// lfht_search of present keys (65,536 uint64 keys that are their own hash).
#include "atom_sequences.hpp"    // bench/runner
#include "rwlock_atom_table.hpp" // bench/runner

#include <lfcore/atom_table.hpp>
#include <lfht.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Every split of each sequence, as the runner interns them.
template <class Intern>
std::uintptr_t combine_all(const std::vector<std::string>& seqs, Intern intern) {
  std::uintptr_t sink = 0;
  std::string rotation;
  for (std::string_view s : seqs) sink += runner::intern_splits(s, rotation, intern);
  return sink;
}

} // namespace

#define COUNTED extern "C" [[gnu::noinline]]

COUNTED std::uintptr_t lfcore_sequences(lfcore::atom_table& t,
                                        const std::vector<std::string>& seqs) {
  return combine_all(seqs, [&](std::string_view s) { return t.intern(s).bits(); });
}

COUNTED std::uintptr_t yap_sequences(runner::rwlock_atom_table& t,
                                     const std::vector<std::string>& seqs) {
  return combine_all(
      seqs, [&](std::string_view s) { return reinterpret_cast<std::uintptr_t>(t.intern(s)); });
}

COUNTED std::uintptr_t lfht_hits(lfht_head* h, std::size_t keys) {
  std::uintptr_t sink = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (std::uintptr_t k = 1; k <= keys; ++k)
      sink += reinterpret_cast<std::uintptr_t>(lfht_search(h, reinterpret_cast<void*>(2 * k)));
  return sink;
}

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::stoul(argv[1]) : 20000;
  const std::vector<std::string> seqs = runner::make_atom_sequences(n);
  std::uintptr_t sink = 0;
  {
    lfcore::atom_table t(n * 30);                  // the runner's hint: 30 atoms per sequence
    for (const std::string& s : seqs) t.intern(s); // seq.pl's atoms, not counted
    sink += lfcore_sequences(t, seqs);
  }
  {
    runner::rwlock_atom_table t(n * 30);
    for (const std::string& s : seqs) t.intern(s);
    sink += yap_sequences(t, seqs);
  }
  constexpr std::size_t keys = 1 << 16;
  lfht_head* h = init_lfht(nullptr, nullptr, nullptr);
  for (std::uintptr_t k = 1; k <= keys; ++k)
    lfht_insert(h, reinterpret_cast<void*>(2 * k), reinterpret_cast<void*>(k));
  sink += lfht_hits(h, keys);
  lfht_free(h);
  std::printf("%d\n", static_cast<int>(sink & 1));
}
