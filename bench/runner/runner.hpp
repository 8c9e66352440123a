// bench/runner/runner.hpp - the scalability runner's vocabulary.
//
// A sweep measures throughput of several contenders at several thread counts.
// The runner interleaves them: for each repetition and thread count it runs
// every contender once, in an order that rotates, so that machine noise (this
// machine is shared) hits all of them alike; the report quotes medians.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace runner {

struct point {
  int threads;
  double seconds;  // how long a timed measurement runs
  long long items; // how many items a fixed-work measurement moves
};

struct contender {
  std::string name;
  bool is_lfcore;
  std::function<double(const point&)> run; // returns operations per second
  /// Runs only at this thread count (0: at every one of the sweep's), for
  /// a variant that differs from another contender at one point only; the
  /// report leaves its other points empty.
  int only_at_threads = 0;
  /// For --slices: prepares a point (a map filled, untimed) and returns a
  /// function that measures one slice on it per call (operations per
  /// second); the point's state goes with the function. Empty: the
  /// contender is measured by run only.
  std::function<std::function<double()>(const point&)> open = {};
};

struct sweep {
  std::string name;  // file-name friendly
  std::string title; // for the report
  std::string what;  // one sentence: what one operation is
  std::vector<contender> contenders;
  /// Thread counts this sweep runs; empty: the runner's --threads. Queue
  /// sweeps run producer/consumer pairs, so they list even counts.
  std::vector<int> threads = {};
  double unit = 1e6; // the report divides operations per second by this
  std::string unit_name = "Mops/s";
  std::string baseline = {}; // a contender's name: the report also plots speedups over it
  /// A contender that runs the same tasks in a plain loop on one thread: the
  /// report adds efficiency against the ideal, min(threads, cores) times its
  /// rate at the same point, and the overhead per task - in wall time, and in
  /// CPU time when the contenders report it (report_cpu_ns_per_op).
  std::string sequential = {};
  /// A contender that runs the same tasks statically split over the threads,
  /// with no communication: what the machine gives that many independent
  /// threads at that moment. The report adds efficiency and overhead per task
  /// against its run in the same repetition (median over repetitions) - what
  /// the runtime itself costs, with the cores' share of other guests' load
  /// taken out.
  std::string parallel_reference = {};
};

struct measurement {
  std::string sweep, contender;
  int threads, rep;
  double ops_per_second;
  double cpu_ns_per_op; // process CPU time per operation, if the run reported it; else NaN
};

struct options {
  std::vector<int> threads{1, 2, 4, 8};
  int reps = 3;
  double seconds = 0.5;
  long long items = 10'000'000;
  long long map_keys = 1'000'000;
  long long atom_sequences = 240'000; // the paper's dataset size
  std::string out = "bench/results/latest";
  std::string only;      // --only: which sweeps run (see runs)
  std::string contender; // --contender: which contenders run (see selects)
  std::string command_line;
  bool quick = false;
  /// Slices per point and repetition for sweeps whose contenders can be
  /// opened (contender::open): every contender's point prepared at once,
  /// then `slices` measurements of each, alternating. 1: run each once.
  int slices = 1;

  /// Whether --contender selects a contender of this name: alternatives
  /// separated by '|', each a part of the name, or the whole name after '='
  /// ("=lfcore hash_trie_map|tbb::concurrent_hash_map" runs just those two,
  /// which a name part cannot when other names contain it). Empty: all.
  bool selects(std::string_view name) const {
    return contender.empty() || any_alternative(contender, [name](std::string_view alt) {
             return alt.starts_with('=') ? name == alt.substr(1)
                                         : name.find(alt) != std::string_view::npos;
           });
  }
  /// Whether --only runs the sweep of this name: alternatives separated by
  /// '|', each a prefix of the name ("map_insert|map_lookup_hit"). Empty: all.
  bool runs(std::string_view sweep) const {
    return any_alternative(only, [sweep](std::string_view alt) { return sweep.starts_with(alt); });
  }

private:
  template <class Match>
  static bool any_alternative(std::string_view alternatives, Match match) {
    for (;;) {
      const std::size_t bar = alternatives.find('|');
      if (match(alternatives.substr(0, bar))) return true;
      if (bar == std::string_view::npos) return false;
      alternatives.remove_prefix(bar + 1);
    }
  }
};

/// A memory measurement: one row per contender.
struct memory_table {
  std::string title, note, column;
  std::vector<std::pair<std::string, double>> rows;
};

/// Each component contributes its sweeps (one file each under bench/runner/).
std::vector<sweep> hazard_pointer_sweeps();
std::vector<sweep> queue_sweeps(const options& opt);
std::vector<sweep> map_sweeps(const options& opt);
std::vector<sweep> atom_sweeps(const options& opt);
std::vector<sweep> pool_sweeps(const options& opt);
std::vector<sweep> farm_sweeps(const options& opt);
/// Runs the autonomic manager under stepped arrivals; writes farm_manager.md,
/// its CSV trace and plot into opt.out.
void farm_manager_report(const options& opt);
/// "jemalloc" or "glibc": the malloc this process runs on.
const char* allocator_name() noexcept;
/// Bytes that malloc has handed out and not taken back: glibc's main arena and
/// its mmapped blocks (mallinfo2; other threads' arenas are not seen), or
/// jemalloc's stats.allocated (every thread, size classes included).
double heap_bytes_in_use();
/// What heap_bytes_in_use reads, for the memory tables' notes.
const char* heap_measure() noexcept;
/// Memory after filling each map contender with --map-keys keys.
memory_table map_bytes_per_key(const options& opt);
/// Memory per atom after the atom benchmark's workload on one thread.
memory_table atom_bytes(const options& opt);

/// Writes results.csv, report.md, one .dat and one .png (if gnuplot is there) per sweep,
/// and the memory tables (in report.md and memory.csv).
void write_report(const options& opt, const std::vector<sweep>& sweeps,
                  const std::vector<measurement>& results, const std::vector<memory_table>& memory);

} // namespace runner
