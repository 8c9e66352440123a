// bench/runner/scalability.cpp - the scalability runner (the main job).
//
//   lfcore_scalability [--quick] [--threads 1,2,4,8] [--reps 3] [--seconds 0.5]
//                      [--only SWEEP] [--contender NAME-PART] [--out DIR]
//
// Each later component adds its sweep to all_sweeps(). Progress goes to stderr;
// results, report and plots to --out.
#include "runner.hpp"

#include "michael_scott_queue.hpp"
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
#include <thread>
#include <vector>

namespace runner {
namespace {

/// Runs body(thread_index, stop) on p.threads threads for p.seconds; body
/// returns its operation count. Returns operations per second.
template <class Body>
double timed(const point& p, Body body) {
  std::atomic<bool> stop{false};
  std::atomic<long long> ops{0};
  std::latch ready(p.threads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < p.threads; ++t)
    threads.emplace_back([&, t] {
      ready.arrive_and_wait();
      ops.fetch_add(body(t, stop), std::memory_order_relaxed);
    });
  ready.arrive_and_wait();
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(p.seconds));
  stop.store(true, std::memory_order_relaxed);
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(ops.load()) / elapsed;
}

constexpr long queue_prefill = 1024;

/// Each thread repeats push(x); pop(): two operations per round, on a queue
/// prefilled so that pops mostly succeed (the classic pairs benchmark).
// Every thread attaches to libcds (a no-op without it): libcds requires it of
// its own contender, and doing it for all keeps the harness identical.
template <class Queue, class Push, class Pop>
double queue_pairs(const point& p, Push push, Pop pop) {
  Queue q;
  {
    peers::libcds_thread scope;
    for (long i = 0; i < queue_prefill; ++i) push(q, i);
  }
  return timed(p, [&](int t, const std::atomic<bool>& stop) {
    peers::libcds_thread scope;
    long long n = 0;
    long v = t;
    while (!stop.load(std::memory_order_relaxed)) {
      push(q, v);
      v = pop(q, v);
      n += 2;
    }
    return n;
  });
}

sweep hp_queue_sweep() {
  sweep s{"hp_queue",
          "Michael-Scott queue on hazard pointers",
          "one push or one pop; each thread alternates push and pop on a queue prefilled with 1024 "
          "items",
          {}};
  s.contenders.push_back({"lfcore", true, [](const point& p) {
                            using Q = example::michael_scott_queue<long>;
                            return queue_pairs<Q>(
                                p, [](Q& q, long v) { q.push(v); },
                                [](Q& q, long v) { return q.try_pop().value_or(v); });
                          }});
#if defined(LFCORE_HAVE_LIBCDS)
  s.contenders.push_back({"libcds MSQueue<HP>", false, [](const point& p) {
                            using Q = cds::container::MSQueue<cds::gc::HP, long>;
                            return queue_pairs<Q>(
                                p, [](Q& q, long v) { q.push(v); },
                                [](Q& q, long v) {
                                  long out = v;
                                  q.pop(out);
                                  return out;
                                });
                          }});
#endif
#if defined(LFCORE_HAVE_XENIUM)
  s.contenders.push_back(
      {"xenium michael_scott_queue<HP>", false, [](const point& p) {
         using Q = xenium::michael_scott_queue<
             long, xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
         return queue_pairs<Q>(
             p, [](Q& q, long v) { q.push(v); },
             [](Q& q, long v) {
               long out = v;
               (void)q.try_pop(out);
               return out;
             });
       }});
#endif
  return s;
}

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

options parse(int argc, char** argv) {
  options o;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) o.command_line += ' ';
    o.command_line += argv[i];
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
    } else if (a == "--threads")
      o.threads = parse_list(value());
    else if (a == "--reps")
      o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--seconds")
      o.seconds = std::max(0.01, std::atof(value().c_str()));
    else if (a == "--out")
      o.out = value();
    else if (a == "--only")
      o.only = value();
    else if (a == "--contender")
      o.contender = value();
    else if (a == "--help" || a == "-h") {
      std::puts("lfcore_scalability [--quick] [--threads 1,2,4,8] [--reps 3] [--seconds 0.5] "
                "[--only SWEEP] [--contender NAME-PART] [--out DIR]");
      std::exit(0);
    } else
      throw std::invalid_argument("unknown option " + a + " (try --help)");
  }
  return o;
}

} // namespace

std::vector<sweep> all_sweeps() {
  return {hp_queue_sweep()};
}

} // namespace runner

int main(int argc, char** argv) try {
  using namespace runner;
  const options opt = parse(argc, argv);
  peers::libcds_runtime cds_runtime;
  std::vector<sweep> sweeps;
  for (auto& s : all_sweeps()) {
    if (!opt.only.empty() && s.name != opt.only) continue;
    std::erase_if(s.contenders, [&](const contender& c) {
      return c.name.find(opt.contender) == std::string::npos;
    });
    if (!s.contenders.empty()) sweeps.push_back(std::move(s));
  }
  if (sweeps.empty())
    throw std::invalid_argument("no sweep or contender matches --only/--contender");

  std::vector<measurement> results;
  for (const sweep& s : sweeps) {
    const int n = static_cast<int>(s.contenders.size());
    for (int rep = 0; rep < opt.reps; ++rep)
      for (std::size_t ti = 0; ti < opt.threads.size(); ++ti) {
        const point p{opt.threads[ti], opt.seconds};
        for (int k = 0; k < n; ++k) { // rotate the order: nobody always runs first
          const contender& c =
              s.contenders[static_cast<std::size_t>((k + rep + static_cast<int>(ti)) % n)];
          const double ops = c.run(p);
          results.push_back({s.name, c.name, p.threads, rep, ops});
          std::fprintf(stderr, "[%s] rep %d/%d threads %2d  %-34s %8.2f Mops/s\n", s.name.c_str(),
                       rep + 1, opt.reps, p.threads, c.name.c_str(), ops / 1e6);
        }
      }
  }
  write_report(opt, sweeps, results);
  std::fprintf(stderr, "report: %s/report.md\n", opt.out.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "lfcore_scalability: %s\n", e.what());
  return 2;
}
