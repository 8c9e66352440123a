// bench/runner/atom_sequences.hpp - the input and the work of the paper's atom
// benchmark (sweeps_atoms.cpp has the whole description), shared with the
// programs that count or probe it outside the runner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace runner {

/// n distinct base sequences, the same on every run: splitmix64 (Steele,
/// Lea and Flood) from seed 2016, lengths uniform in [8, 24], letters "acgt".
inline std::vector<std::string> make_atom_sequences(std::size_t n) {
  std::uint64_t state = 2016;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<std::string> seqs;
  std::unordered_set<std::string> seen;
  while (seqs.size() < n) {
    std::string s(8 + next() % 17, ' ');
    for (char& c : s) c = "acgt"[next() & 3];
    if (seen.insert(s).second) seqs.push_back(std::move(s));
  }
  return seqs;
}

/// What atom_concat(A1, A2, S), atom_concat(A2, A1, R) interns in Prolog, for
/// every split S = A1 + A2 of s (the empty atom included): intern(A1),
/// intern(A2), intern(A2A1), in that order. `rotation` is scratch space.
/// Returns the sum of what intern returned, for the caller to keep alive.
template <class Intern>
std::uintptr_t intern_splits(std::string_view s, std::string& rotation, Intern&& intern) {
  std::uintptr_t sink = 0;
  for (std::size_t k = 0; k <= s.size(); ++k) {
    const std::string_view a1 = s.substr(0, k), a2 = s.substr(k);
    sink += intern(a1);
    sink += intern(a2);
    rotation.assign(a2);
    rotation.append(a1);
    sink += intern(std::string_view(rotation));
  }
  return sink;
}

} // namespace runner
