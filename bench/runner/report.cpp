// bench/runner/report.cpp - CSV, Markdown tables and gnuplot plots.
#include "harness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace runner {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string machine_line() {
  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  std::ostringstream o;
  o << cpu << ", " << std::thread::hardware_concurrency() << " hardware threads, "
    << (pages * page) / (1L << 30) << " GiB, compiler " << __VERSION__ << ", malloc "
    << allocator_name();
  return o.str();
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

// A gnuplot single-quoted string: a quote is written twice.
std::string gp_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string fmt(double v, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The CPU-time view of the overhead per task, for a sweep whose contenders
// report CPU time: each contender's median CPU time per task minus the
// sequential loop's at the same point. Unlike the wall-time overhead it does
// not depend on how the machine shared its cores during the run, and it
// charges what idle threads burn (spinning, yielding) to whoever owns them.
void write_cpu_overhead(std::ostream& md, const sweep& s, const std::vector<measurement>& results) {
  std::map<std::string, std::map<int, double>> cpu; // median ns per task
  for (const auto& c : s.contenders)
    for (int t : s.threads) {
      std::vector<double> v;
      for (const auto& m : results)
        if (m.sweep == s.name && m.contender == c.name && m.threads == t &&
            !std::isnan(m.cpu_ns_per_op))
          v.push_back(m.cpu_ns_per_op);
      if (!v.empty()) cpu[c.name][t] = median(v);
    }
  if (!cpu.contains(s.sequential)) return;
  md << "\nCPU time per task beyond the work: the process's CPU time per task (user + system, "
        "all threads, getrusage; median) minus the "
     << s.sequential << "'s at the same point, in ns\n\n| threads | " << s.sequential
     << " (its own CPU per task) |";
  for (const auto& c : s.contenders)
    if (c.name != s.sequential) md << " " << c.name << " |";
  md << "\n|---:|---:|";
  for (std::size_t i = 1; i < s.contenders.size(); ++i) md << "---:|";
  md << "\n";
  for (int t : s.threads) {
    const auto seq = cpu[s.sequential].find(t);
    if (seq == cpu[s.sequential].end()) continue;
    md << "| " << t << " | " << fmt(seq->second, 0) << " |";
    for (const auto& c : s.contenders) {
      if (c.name == s.sequential) continue;
      const auto it = cpu[c.name].find(t);
      md << " " << (it == cpu[c.name].end() ? "-" : fmt(it->second - seq->second, 0)) << " |";
    }
    md << "\n";
  }
}

} // namespace

void write_report(const options& opt, const std::vector<sweep>& sweeps,
                  const std::vector<measurement>& results,
                  const std::vector<memory_table>& memory) {
  namespace fs = std::filesystem;
  fs::create_directories(opt.out);

  std::ofstream csv(fs::path(opt.out) / "results.csv");
  csv << "sweep,contender,threads,rep,mops_per_s,cpu_ns_per_op\n";
  for (const auto& m : results) {
    csv << m.sweep << ",\"" << m.contender << "\"," << m.threads << "," << m.rep << ","
        << m.ops_per_second / 1e6 << ",";
    if (!std::isnan(m.cpu_ns_per_op)) csv << m.cpu_ns_per_op; // empty: not measured
    csv << "\n";
  }

  std::ofstream memory_csv(fs::path(opt.out) / "memory.csv");
  memory_csv << "table,contender,value\n";
  for (const memory_table& m : memory)
    for (const auto& [name, value] : m.rows)
      memory_csv << "\"" << m.title << "\",\"" << name << "\"," << value << "\n";

  std::ofstream md(fs::path(opt.out) / "report.md");
  md << "# lfcore scalability report\n\n"
     << "- command: `" << opt.command_line << "`\n"
     << "- date: " << utc_now() << "\n"
     << "- machine: " << machine_line() << "\n"
     << "- method: every point is the median of " << opt.reps
     << " runs (timed sweeps, round "
        "trips included: "
     << opt.seconds << " s each; queue throughput sweeps: " << opt.items
     << " items each, timed to the last pop); contenders interleaved in rotating order at "
        "every point"
     << (opt.slices > 1 ? "; map sweeps but insert-only: the median of " +
                              std::to_string(opt.reps * opt.slices) + " slices, " +
                              std::to_string(opt.slices) +
                              " per run, every contender's map filled at once and measured "
                              "in turns"
                        : std::string())
     << (pin_threads ? "; a point's threads pinned, thread t on CPU t mod the CPU count" : "")
     << ".\n"
     << "- speedup is against the same contender at the sweep's first thread count, per thread; "
        "efficiency = speedup / threads. "
        "Past the core count, efficiency must fall: the sweep goes there on purpose.\n\n";

  const bool have_gnuplot = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  for (const sweep& s : sweeps) {
    // medians[contender][threads]; 0 where a contender did not run
    // (contender::only_at_threads), shown as "-"
    std::map<std::string, std::map<int, double>> med;
    for (const auto& c : s.contenders)
      for (int t : s.threads) {
        std::vector<double> v;
        for (const auto& m : results)
          if (m.sweep == s.name && m.contender == c.name && m.threads == t)
            v.push_back(m.ops_per_second / s.unit);
        med[c.name][t] = median(v);
      }
    auto shown_median = [&](const std::string& name, int t) {
      return med[name][t] > 0 ? fmt(med[name][t]) : std::string("-");
    };
    md << "## " << s.title << " (`" << s.name << "`)\n\n"
       << "One operation: " << s.what << ".\n\n";
    auto header = [&](const std::vector<const contender*>& columns) {
      md << "| threads |";
      for (const contender* c : columns) md << " " << c->name << " |";
      md << "\n|---:|";
      for (std::size_t i = 0; i < columns.size(); ++i) md << "---:|";
      md << "\n";
    };
    std::vector<const contender*> all, peers;
    for (const auto& c : s.contenders) {
      all.push_back(&c);
      if (!c.is_lfcore) peers.push_back(&c);
    }
    md << "Throughput, " << s.unit_name << " (median)\n\n";
    header(all);
    for (int t : s.threads) {
      md << "| " << t << " |";
      for (const contender* c : all) md << " " << shown_median(c->name, t) << " |";
      md << "\n";
    }
    // One ratio table per lfcore contender: its median over each peer's.
    for (const auto& ours : s.contenders) {
      if (!ours.is_lfcore || peers.empty()) continue;
      md << "\n" << ours.name << " relative to each peer (ratio of medians)\n\n";
      header(peers);
      for (int t : s.threads) {
        md << "| " << t << " |";
        for (const contender* c : peers)
          md << " "
             << (med[c->name][t] > 0 && med[ours.name][t] > 0
                     ? fmt(med[ours.name][t] / med[c->name][t]) + "x"
                     : "-")
             << " |";
        md << "\n";
      }
    }
    md << "\nSpeedup and efficiency\n\n| threads |";
    for (const auto& c : s.contenders) md << " " << c.name << " |";
    md << "\n|---:|";
    for (std::size_t i = 0; i < s.contenders.size(); ++i) md << "---:|";
    md << "\n";
    for (int t : s.threads) {
      md << "| " << t << " |";
      for (const auto& c : s.contenders) {
        const double base = med[c.name][s.threads.front()] / s.threads.front();
        const double speedup = base > 0 ? med[c.name][t] / base : 0;
        if (speedup > 0)
          md << " " << fmt(speedup) << " (" << fmt(100 * speedup / t, 0) << "%) |";
        else
          md << " - |";
      }
      md << "\n";
    }

    // Efficiency rate / ideal and overhead per task busy / rate - busy /
    // ideal (ns of a core), as medians over the (rate, ideal) pairs that
    // pairs(contender, threads) gives.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    auto efficiency_table = [&](const std::string& intro, auto pairs) {
      auto shown = [&](const contender& c) {
        return c.name != s.sequential && c.name != s.parallel_reference;
      };
      md << "\n" << intro << "\n\n| threads |";
      for (const auto& c : s.contenders)
        if (shown(c)) md << " " << c.name << " |";
      md << "\n|---:|";
      for (const auto& c : s.contenders)
        if (shown(c)) md << "---:|";
      md << "\n";
      for (int t : s.threads) {
        const double busy = std::min<double>(t, cores);
        md << "| " << t << " |";
        for (const auto& c : s.contenders) {
          if (!shown(c)) continue;
          std::vector<double> efficiency, overhead;
          for (auto [rate, ideal] : pairs(c.name, t))
            if (rate > 0 && ideal > 0) {
              efficiency.push_back(rate / ideal);
              overhead.push_back((busy / rate - busy / ideal) * 1e9);
            }
          if (efficiency.empty())
            md << " - |";
          else
            md << " " << fmt(median(efficiency)) << " (" << fmt(median(overhead), 0) << " ns) |";
        }
        md << "\n";
      }
    };
    if (!s.sequential.empty()) {
      efficiency_table("Efficiency against the ideal (min(threads, " + std::to_string(cores) +
                           " cores) x the " + s.sequential +
                           "'s rate at the same point), and overhead per task: "
                           "min(threads, cores) / throughput - 1 / sequential rate, in ns",
                       [&](const std::string& name, int t) {
                         const double busy = std::min<double>(t, cores);
                         return std::vector{std::pair{med[name][t] * s.unit,
                                                      busy * med[s.sequential][t] * s.unit}};
                       });
      // Paired by repetition: the contenders of one repetition ran back to
      // back, so each ratio sees the machine in one state.
      if (!s.parallel_reference.empty()) {
        std::map<std::pair<int, int>, double> reference; // (threads, rep) -> its rate
        for (const auto& r : results)
          if (r.sweep == s.name && r.contender == s.parallel_reference)
            reference[{r.threads, r.rep}] = r.ops_per_second;
        efficiency_table(
            "Efficiency against the " + s.parallel_reference +
                " (what the machine gave that many independent threads), and overhead per task: "
                "min(threads, cores) x (1 / throughput - 1 / its rate), in ns; each the median "
                "over repetitions of the value against the reference's run in the same repetition",
            [&](const std::string& name, int t) {
              std::vector<std::pair<double, double>> v;
              for (const auto& m : results)
                if (m.sweep == s.name && m.contender == name && m.threads == t)
                  if (const auto r = reference.find({t, m.rep}); r != reference.end())
                    v.emplace_back(m.ops_per_second, r->second);
              return v;
            });
      }
      write_cpu_overhead(md, s, results);
    }

    // One plot per quantity: a .dat with a column per contender, its .gp, the PNG.
    auto plot = [&](const std::string& file, const std::string& title, const std::string& ylabel,
                    auto value) {
      std::ofstream d(fs::path(opt.out) / (file + ".dat"));
      d << "threads"; // a plain header line: gnuplot's columnhead reads it
      for (const auto& c : s.contenders) d << "\t\"" << c.name << "\"";
      d << "\n";
      for (int t : s.threads) {
        d << t;
        for (const auto& c : s.contenders) {
          const double v = value(c.name, t);
          d << "\t";
          if (v > 0)
            d << v;
          else
            d << "-"; // not run there (gnuplot: missing)
        }
        d << "\n";
      }
      d.close();
      if (!have_gnuplot || s.threads.size() < 2) return; // one point makes no plot
      std::ofstream g(fs::path(opt.out) / (file + ".gp"));
      g << "set terminal pngcairo size 900,540 noenhanced\n"
        << "set output '" << file << ".png'\n" // paths relative to the report directory
        << "set title " << gp_quoted(title) << "\n"
        << "set xlabel 'threads'\nset ylabel " << gp_quoted(ylabel)
        << "\nset logscale x 2\nset key top right\n"
        << "set grid\nset yrange [0:*]\nset datafile missing '-'\n"
        << "plot for [i=2:" << s.contenders.size() + 1 << "] '" << file << ".dat"
        << "' using 1:i with linespoints lw 2 title columnhead(i)\n";
      g.close();
      if (std::system(("cd '" + opt.out + "' && gnuplot '" + file + ".gp'").c_str()) == 0)
        md << "\n![" << file << "](" << file << ".png)\n";
      else
        md << "\n(gnuplot failed: no plot)\n";
    };
    plot(s.name, s.title + " - median " + s.unit_name, s.unit_name,
         [&](const std::string& c, int t) { return med[c][t]; });
    if (!s.baseline.empty())
      plot(s.name + "_speedup", s.title + " - speedup over " + s.baseline,
           "throughput / " + s.baseline + "'s", [&](const std::string& c, int t) {
             const double b = med[s.baseline][t];
             return b > 0 ? med[c][t] / b : 0.0;
           });
    md << "\n";
  }
  for (const memory_table& m : memory) {
    md << "## " << m.title << "\n\n"
       << m.note << "\n\n| contender | " << m.column << " |\n|---|---:|\n";
    for (const auto& [name, b] : m.rows) md << "| " << name << " | " << fmt(b, 1) << " |\n";
    md << "\n";
  }
}

} // namespace runner
