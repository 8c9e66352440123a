// bench/runner/sweeps_atoms.cpp - the atom-table benchmark of Moreno, Areias
// and Rocha (../shared/seeds/lock-free-atom-table.txt, section 4.1).
//
// Input: --atom-sequences distinct base sequences (the paper: 240,000),
// generated deterministically: splitmix64 from seed 2016, letters "acgt",
// lengths uniform in [8, 24] (the paper does not say; DNA-like text of the
// length of ordinary Prolog atoms). Like compiling seq.pl, each table interns
// the base sequences before the clock starts.
// Work: threads take batches of 2,000 sequences from a shared counter; for
// every split S = A1 + A2 (L + 1 of them, the empty atom included) they
// intern A1, A2 and A2A1 - what atom_concat(A1, A2, S), atom_concat(A2, A1, R)
// interns in Prolog. One operation = one base sequence; the report gives
// thousands of sequences per second, timed to the last thread's end.
// Contenders: lfcore's atom_table; the design YAP replaced
// (rwlock_atom_table.hpp); oneTBB concurrent_hash_map and libcuckoo with
// std::string keys (get-or-insert; libcuckoo moves its elements, so it gives
// no handle, only the answer); and SWI-Prolog running the paper's own program
// (bench/atoms/atom_bench.pl) on the same sequences when swipl is installed.
// Every table is told to expect 30 atoms per sequence; the sweep
// unsized_atoms runs the same work on tables told nothing, as the paper's
// YAP tables were (the original doubling from its start size, the LFHT
// growing levels under its default root): an interpreter rarely knows how
// many atoms a program will make.
#include "atom_sequences.hpp"
#include "harness.hpp"
#include "rwlock_atom_table.hpp"

#include <lfcore/atom_table.hpp>

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#if defined(LFCORE_HAVE_TBB)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds" // a false positive inside oneTBB 2021.8
#include <oneapi/tbb/concurrent_hash_map.h>
#pragma GCC diagnostic pop
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
#include <libcuckoo/cuckoohash_map.hh>
#endif

namespace runner {
namespace {

constexpr std::size_t batch = 2000;
constexpr std::size_t atoms_per_sequence_hint = 30;

const std::vector<std::string>& sequences(std::size_t n) {
  static std::vector<std::string> seqs;
  if (seqs.size() != n) seqs = make_atom_sequences(n);
  return seqs;
}

template <class Table>
std::uintptr_t combine_atoms(Table& t, std::string_view s, std::string& rotation) {
  return intern_splits(s, rotation, [&t](std::string_view piece) { return t.intern(piece); });
}

// The same atoms, interned after every piece of s was prefetched, so that
// the first cache misses of one sequence's interns overlap. `rotations`
// holds the A2A1s one after another; `pieces` the texts in intern order.
template <class Table>
std::uintptr_t combine_atoms_prefetched(Table& t, std::string_view s, std::string& rotations,
                                        std::vector<std::string_view>& pieces) {
  const std::size_t n = s.size();
  rotations.clear();
  for (std::size_t k = 0; k <= n; ++k) {
    rotations.append(s.substr(k));
    rotations.append(s.substr(0, k));
  }
  pieces.clear();
  for (std::size_t k = 0; k <= n; ++k) {
    pieces.push_back(s.substr(0, k));
    pieces.push_back(s.substr(k));
    pieces.push_back(std::string_view(rotations).substr(k * n, n));
  }
  t.prefetch_all(pieces);
  std::uintptr_t sink = 0;
  for (std::string_view piece : pieces) sink += t.intern(piece);
  return sink;
}

// The size hint a table gets: 30 atoms per sequence, or none.
std::size_t expected_atoms(std::size_t n, bool sized) {
  return sized ? n * atoms_per_sequence_hint : 0;
}

// Sequences per second on p.threads threads, on a fresh table.
template <class Table>
double run_paper_workload(const point& p, std::size_t n, bool sized) {
  const std::vector<std::string>& seqs = sequences(n);
  auto table = std::make_unique<Table>(expected_atoms(n, sized));
  for (const std::string& s : seqs) table->intern(s); // seq.pl's atoms, untimed
  std::atomic<std::size_t> next{0};
  std::atomic<std::uintptr_t> sink{0};
  const double seconds = run_to_completion(p.threads, [&](int) {
    std::string rotation;
    std::vector<std::string_view> pieces;
    std::uintptr_t mine = 0;
    for (;;) {
      // relaxed: the counter only hands out disjoint batches.
      const std::size_t begin = next.fetch_add(batch, std::memory_order_relaxed);
      if (begin >= n) break;
      for (std::size_t i = begin; i < std::min(n, begin + batch); ++i)
        if constexpr (requires { table->prefetch_all(pieces); })
          mine += combine_atoms_prefetched(*table, seqs[i], rotation, pieces);
        else
          mine += combine_atoms(*table, seqs[i], rotation);
    }
    sink.fetch_add(mine, std::memory_order_relaxed); // relaxed: keeps the work observable
  });
  if (sink.load() == 42) std::puts("");
  table.reset();
  malloc_trim(0); // the next run starts from a trimmed heap, whoever ran before
  return static_cast<double>(n) / seconds;
}

// ------------------------------------------------------------ the tables
// Each has intern(string_view) -> a word (the handle, or 0 if it has none),
// and a constructor taking the expected atoms (0: the table's own default).

struct lfcore_atoms {
  explicit lfcore_atoms(std::size_t expected) : t(expected) {}
  std::uintptr_t intern(std::string_view s) { return t.intern(s).bits(); }
  lfcore::atom_table t;
};
// The same table, each sequence's pieces prefetched before they are interned.
struct lfcore_atoms_prefetched : lfcore_atoms {
  using lfcore_atoms::lfcore_atoms;
  void prefetch_all(const std::vector<std::string_view>& texts) { t.prefetch(texts); }
};

struct yap_original {
  explicit yap_original(std::size_t expected) : t(expected) {}
  std::uintptr_t intern(std::string_view s) {
    return reinterpret_cast<std::uintptr_t>(t.intern(s));
  }
  rwlock_atom_table t;
};
// YAP's design given the same chance: one shared lock around the prefetches
// of a sequence's pieces (the bucket array may double meanwhile otherwise).
struct yap_original_prefetched : yap_original {
  using yap_original::yap_original;
  void prefetch_all(const std::vector<std::string_view>& texts) { t.prefetch(texts); }
};

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>()(s);
  }
};

#if defined(LFCORE_HAVE_TBB)
struct tbb_compare {
  using is_transparent = void;
  std::size_t hash(std::string_view s) const noexcept { return string_hash()(s); }
  bool equal(std::string_view a, std::string_view b) const noexcept { return a == b; }
};
struct tbb_atoms {
  struct empty {};
  // std::allocator: malloc's statistics see it, as for every other contender.
  using map = tbb::concurrent_hash_map<std::string, empty, tbb_compare,
                                       std::allocator<std::pair<const std::string, empty>>>;
  explicit tbb_atoms(std::size_t expected) : m(expected) {}
  std::uintptr_t intern(std::string_view s) {
    map::const_accessor acc;
    m.insert(acc, s); // get-or-insert; the node does not move: its key is the handle
    return reinterpret_cast<std::uintptr_t>(&acc->first);
  }
  map m;
};
#endif

#if defined(LFCORE_HAVE_LIBCUCKOO)
struct cuckoo_atoms {
  using map = libcuckoo::cuckoohash_map<std::string, char, string_hash, std::equal_to<>>;
  explicit cuckoo_atoms(std::size_t expected)
      : m(expected != 0 ? expected : libcuckoo::DEFAULT_SIZE) {}
  std::uintptr_t intern(std::string_view s) {
    if (m.contains(s)) return 1; // no allocation when present
    m.insert(std::string(s), char(0));
    return 1;
  }
  map m;
};
#endif

// ------------------------------------------------------------ SWI-Prolog
// Runs the paper's Prolog program on the same sequences, in a child process.
class swi_prolog {
public:
  static bool available() { return std::system("command -v swipl >/dev/null 2>&1") == 0; }

  explicit swi_prolog(std::size_t n) : n_(n) {}

  double run(const point& p) {
    if (seq_file_.empty()) write_sequences(); // at the first run: not for runs of other sweeps
    const std::string cmd = "swipl '" LFCORE_ATOM_BENCH_PL "' -- '" + seq_file_.string() + "' " +
                            std::to_string(p.threads) + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run swipl");
    double ms = -1;
    char line[512];
    while (std::fgets(line, sizeof line, pipe) != nullptr)
      if (std::sscanf(line, "Time: %lf", &ms) == 1) break;
    while (std::fgets(line, sizeof line, pipe) != nullptr) {
    }
    if (pclose(pipe) != 0 || ms <= 0)
      throw std::runtime_error("swipl did not report a time: " + cmd);
    return static_cast<double>(n_) / (ms / 1000.0);
  }

private:
  // seq.pl's facts, for the program to consult.
  void write_sequences() {
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("lfcore_atom_seq_" + std::to_string(n_) + ".pl");
    std::ofstream out(file);
    out << "atom_dataset(" << n_ << ").\n";
    const std::vector<std::string>& seqs = sequences(n_);
    for (std::size_t i = 0; i < n_; ++i) out << "atom_seq(" << i << ", " << seqs[i] << ").\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
    seq_file_ = file;
  }

  std::size_t n_;
  std::filesystem::path seq_file_; // empty until written
};

// Bytes per atom beyond its text, after one thread ran the workload on the
// calling thread (on glibc, heap_bytes_in_use sees the main arena only).
template <class Table>
double bytes_per_atom(std::size_t n, bool sized, std::size_t atoms, std::size_t text_bytes) {
  const std::vector<std::string>& seqs = sequences(n);
  malloc_trim(0);
  const double before = heap_bytes_in_use();
  auto table = std::make_unique<Table>(expected_atoms(n, sized));
  std::string rotation;
  for (const std::string& s : seqs) table->intern(s);
  for (const std::string& s : seqs) combine_atoms(*table, s, rotation);
  const double grown = heap_bytes_in_use() - before;
  return (grown - static_cast<double>(text_bytes)) / static_cast<double>(atoms);
}

} // namespace

std::vector<sweep> atom_sweeps(const options& opt) {
  const std::size_t n = static_cast<std::size_t>(opt.atom_sequences);
  auto paper_sweep = [n](bool sized) {
    sweep s{sized ? "atoms" : "unsized_atoms",
            "Atom table: the paper's benchmark, " + std::to_string(n) + " sequences" +
                (sized ? "" : ", tables given no size hint"),
            "one base sequence: every split S = A1 + A2 interns A1, A2 and A2A1",
            {}};
    s.unit = 1e3;
    s.unit_name = "k sequences/s";
    s.baseline = "YAP original (rwlock, chained)"; // the paper's Fig. 9
    auto add = [&](std::string name, bool ours, auto run) {
      s.contenders.push_back(
          {std::move(name), ours, [n, sized, run](const point& p) { return run(p, n, sized); }});
    };
    add("lfcore atom_table", true, run_paper_workload<lfcore_atoms>);
    add("lfcore atom_table (prefetched pieces)", true, run_paper_workload<lfcore_atoms_prefetched>);
    add(s.baseline, false, run_paper_workload<yap_original>);
    add(s.baseline + ", prefetched pieces", false, run_paper_workload<yap_original_prefetched>);
#if defined(LFCORE_HAVE_TBB)
    add("tbb::concurrent_hash_map<string>", false, run_paper_workload<tbb_atoms>);
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
    add("libcuckoo<string>", false, run_paper_workload<cuckoo_atoms>);
#endif
    return s;
  };
  std::vector<sweep> sweeps{paper_sweep(true), paper_sweep(false)};
  // SWI-Prolog grows its own table whatever the sweep: it runs once, in the first.
  if (swi_prolog::available()) {
    auto swi = std::make_shared<swi_prolog>(n);
    sweeps.front().contenders.push_back(
        {"SWI-Prolog (paper's program)", false, [swi](const point& p) { return swi->run(p); }});
  }
  return sweeps;
}

memory_table atom_bytes(const options& opt) {
  const std::size_t n = static_cast<std::size_t>(opt.atom_sequences);
  // The atoms the workload creates, counted by one lfcore run.
  std::size_t atoms = 0, text_bytes = 0;
  {
    lfcore_atoms t(n * atoms_per_sequence_hint);
    std::string rotation;
    for (const std::string& s : sequences(n)) t.intern(s);
    for (const std::string& s : sequences(n)) combine_atoms(t, s, rotation);
    t.t.for_each([&](lfcore::atom a) {
      ++atoms;
      text_bytes += lfcore::atom_table::name(a).size();
    });
  }
  memory_table m;
  m.title = "Atom table: memory per atom (`atom_bytes`)";
  m.note =
      "One thread runs the workload on " + std::to_string(n) + " sequences (" +
      std::to_string(atoms) + " atoms, " +
      std::to_string(static_cast<double>(text_bytes) / static_cast<double>(atoms)) +
      " bytes of text each on average); heap growth (" + heap_measure() +
      ") minus the text bytes, divided by the atoms. The goal is at most 48. Tables sized as in "
      "`atoms`, and (no size hint) as in `unsized_atoms`.";
  m.column = "bytes per atom beyond its text";
  auto add = [&](const std::string& name, auto measure) {
    if (opt.selects(name))
      for (const bool sized : {true, false})
        m.rows.emplace_back(name + (sized ? "" : " (no size hint)"),
                            measure(n, sized, atoms, text_bytes));
  };
  add("lfcore atom_table", bytes_per_atom<lfcore_atoms>);
  add("YAP original (rwlock, chained)", bytes_per_atom<yap_original>);
#if defined(LFCORE_HAVE_TBB)
  add("tbb::concurrent_hash_map<string>", bytes_per_atom<tbb_atoms>);
#endif
#if defined(LFCORE_HAVE_LIBCUCKOO)
  add("libcuckoo<string>", bytes_per_atom<cuckoo_atoms>);
#endif
  return m;
}

} // namespace runner
