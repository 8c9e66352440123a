// bench/runner/scalability.cpp - the scalability runner (the main job).
//
//   lfcore_scalability [--quick] [--threads 1,2,4,8] [--reps 3] [--seconds 0.5]
//                      [--items 10000000] [--map-keys 1000000]
//                      [--atom-sequences 240000] [--only SWEEP]
//                      [--contender NAME-PART] [--slices K] [--pin] [--out DIR]
//
// --only runs the sweeps whose name starts with SWEEP (e.g. map_ for all maps),
// or with any of several: "SWEEP|SWEEP";
// --contender the contenders whose name contains NAME-PART, or several:
// "PART|PART", where "=NAME" matches one name exactly (options::selects).
//
// --slices K (K > 1) measures the sweeps whose contenders can be opened (the
// map sweeps but the insert-only one) in slices: at each repetition and
// thread count every contender's point is prepared at once (all maps filled
// and alive together: mind the memory at large --map-keys), then each is
// measured K times for --seconds, the contenders alternating in rotating
// order; the report takes the median over repetitions and slices, and each
// slice pairs the contenders in time (several measurements per fill).
//
// --pin pins the threads the runner starts for a point (timed and
// run_to_completion: the hazard-pointer, queue, map and atom sweeps), thread
// t to CPU t mod the CPU count. On the 2-vCPU guest one vCPU ran memory-bound
// lookups 1.6x as fast as the other, and an unpinned one-thread point lands on
// either: its measurements split into two levels (bench/results/README.md,
// "Two unequal vCPUs").
//
// Timed sweeps run each point for --seconds; fixed-work sweeps (the queues)
// move --items items per point; map sweeps prefill --map-keys keys; the atom
// benchmark (the paper's) works through --atom-sequences base sequences.
//
// Each later component adds its sweep to all_sweeps(). Progress goes to stderr;
// results, report and plots to --out.
#include "harness.hpp"

#include "peers.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

namespace runner {
namespace {

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const int v = std::atoi(item.c_str());
    if (v <= 0) throw std::invalid_argument("--threads takes positive integers, e.g. 1,2,4,8");
    out.push_back(v);
  }
  return out;
}

// An argument as a POSIX shell reads it back: single-quoted unless it is
// plain (the report's command line must run when pasted).
std::string shell_quoted(std::string_view arg) {
  const bool plain =
      !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                            "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789_-+=.,/:@%") == std::string_view::npos;
  if (plain) return std::string(arg);
  std::string out = "'";
  for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += shell_quoted(argv[i]);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") {
      o.quick = true;
      o.threads = {1, 2, 4};
      o.seconds = 0.1;
      o.items = 200'000;
      o.map_keys = 50'000;
      o.atom_sequences = 24'000;
    } else if (a == "--threads")
      o.threads = parse_list(value());
    else if (a == "--reps")
      o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--slices")
      o.slices = std::max(1, std::atoi(value().c_str()));
    else if (a == "--pin")
      pin_threads = true;
    else if (a == "--seconds")
      o.seconds = std::max(0.01, std::atof(value().c_str()));
    else if (a == "--items")
      o.items = std::max(1000LL, std::atoll(value().c_str()));
    else if (a == "--map-keys")
      o.map_keys = std::max(1000LL, std::atoll(value().c_str()));
    else if (a == "--atom-sequences")
      o.atom_sequences = std::max(2000LL, std::atoll(value().c_str()));
    else if (a == "--out")
      o.out = value();
    else if (a == "--only")
      o.only = value();
    else if (a == "--contender")
      o.contender = value();
    else if (a == "--help" || a == "-h") {
      std::puts("lfcore_scalability [--quick] [--threads 1,2,4,8] [--reps 3] [--slices 1] [--pin] "
                "[--seconds 0.5] "
                "[--items 10000000] [--map-keys 1000000] [--atom-sequences 240000] "
                "[--only SWEEP] [--contender NAME-PART[|=NAME...]] "
                "[--out DIR]");
      std::exit(0);
    } else
      throw std::invalid_argument("unknown option " + a + " (try --help)");
  }
  return o;
}

} // namespace

} // namespace runner

int main(int argc, char** argv) try {
  using namespace runner;
  const options opt = parse(argc, argv);
  peers::libcds_runtime cds_runtime;
  if (opt.only == "farm_manager") { // the manager's report alone (it also runs after farm_ sweeps)
    farm_manager_report(opt);
    return 0;
  }
  std::vector<sweep> sweeps;
  std::vector<sweep> all = hazard_pointer_sweeps();
  for (auto& s : queue_sweeps(opt)) all.push_back(std::move(s));
  for (auto& s : map_sweeps(opt)) all.push_back(std::move(s));
  for (auto& s : atom_sweeps(opt)) all.push_back(std::move(s));
  for (auto& s : pool_sweeps(opt)) all.push_back(std::move(s));
  for (auto& s : farm_sweeps(opt)) all.push_back(std::move(s));
  for (auto& s : all) {
    if (!opt.runs(s.name)) continue;
    std::erase_if(s.contenders, [&](const contender& c) { return !opt.selects(c.name); });
    if (s.threads.empty()) s.threads = opt.threads;
    if (!s.contenders.empty()) sweeps.push_back(std::move(s));
  }
  if (sweeps.empty())
    throw std::invalid_argument("no sweep or contender matches --only/--contender");

  std::vector<memory_table> memory;
  auto ran = [&](const char* prefix) {
    return std::any_of(sweeps.begin(), sweeps.end(),
                       [&](const sweep& s) { return s.name.rfind(prefix, 0) == 0; });
  };
  // The memory tables run before the sweeps: lfcore::pool_allocator keeps
  // what a map frees for the next one, so its fill is measured while its pool
  // is new.
  if (ran("map_")) {
    std::fprintf(stderr, "[map bytes per key] filling %lld keys per contender (%s)\n", opt.map_keys,
                 heap_measure());
    memory.push_back(map_bytes_per_key(opt));
  }
  if (ran("atoms") || ran("unsized_atoms")) {
    std::fprintf(stderr, "[atom bytes] running the atom workload once per contender (%s)\n",
                 heap_measure());
    memory.push_back(atom_bytes(opt));
  }
  std::vector<measurement> results;
  for (const sweep& s : sweeps) {
    const int n = static_cast<int>(s.contenders.size());
    const bool sliced = opt.slices > 1 && std::all_of(s.contenders.begin(), s.contenders.end(),
                                                      [](const contender& c) { return !!c.open; });
    auto record = [&](const contender& c, const point& p, int rep, double ops, double cpu) {
      results.push_back({s.name, c.name, p.threads, rep, ops, cpu});
      std::fprintf(stderr, "[%s] rep %d/%d threads %2d  %-34s %8.2f %s\n", s.name.c_str(), rep + 1,
                   opt.reps * (sliced ? opt.slices : 1), p.threads, c.name.c_str(), ops / s.unit,
                   s.unit_name.c_str());
    };
    for (int rep = 0; rep < opt.reps; ++rep)
      for (std::size_t ti = 0; ti < s.threads.size(); ++ti) {
        const point p{s.threads[ti], opt.seconds, opt.items};
        // The order rotates (with the repetition, thread count and slice):
        // nobody always runs first.
        auto at = [&](int k, int shift) {
          return static_cast<std::size_t>((k + shift + static_cast<int>(ti)) % n);
        };
        auto runs_here = [&](const contender& c) {
          return c.only_at_threads == 0 || c.only_at_threads == p.threads;
        };
        if (sliced) {
          std::vector<std::function<double()>> slice(s.contenders.size());
          for (std::size_t i = 0; i < slice.size(); ++i)
            if (runs_here(s.contenders[i])) slice[i] = s.contenders[i].open(p);
          for (int sl = 0; sl < opt.slices; ++sl)
            for (int k = 0; k < n; ++k)
              if (const std::size_t i = at(k, rep + sl); slice[i])
                record(s.contenders[i], p, rep * opt.slices + sl, slice[i](), NAN);
          continue; // slice's destruction releases every contender's point
        }
        for (int k = 0; k < n; ++k) {
          const contender& c = s.contenders[at(k, rep)];
          if (!runs_here(c)) continue;
          take_cpu_ns_per_op(); // a value left by anything before is not this run's
          const double ops = c.run(p);
          record(c, p, rep, ops, take_cpu_ns_per_op());
        }
      }
  }
  write_report(opt, sweeps, results, memory);
  if (ran("farm_")) farm_manager_report(opt);
  std::fprintf(stderr, "report: %s/report.md\n", opt.out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lfcore_scalability: %s\n", e.what());
  return 2;
}
