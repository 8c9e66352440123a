// bench/runner/sweeps_farm.cpp - lfcore::farm against oneTBB's
// parallel_pipeline and OpenMP tasks (GCC's libgomp), and the autonomic
// manager under a stepped arrival rate.
//
// farm_grain_<g>us: a stream of tasks of g microseconds of computation each
// (a calibrated chain of multiply-adds, so that a task descheduled past the
// core count still costs its full work) through nw workers, the results
// summed by a sink and checked. Every contender has the same three parts:
//   lfcore farm          source -> emitter -> nw workers -> collector -> sum;
//                        one worker: all on one thread unless told otherwise
//   oneTBB pipeline      serial_in_order source filter -> parallel work filter
//                        -> serial_out_of_order sum filter, 4 x nw tokens, in a
//                        task_arena of nw threads
//   OpenMP tasks         one thread of a team of nw creates a task per item,
//                        each task adds its result to a reduction
//   sequential loop      the same tasks in a plain loop on one thread
//   static split         the same tasks cut into nw equal ranges, a plain
//                        thread per range, nothing shared until the join
// One operation = one task. The report's efficiency table compares with the
// ideal farm: min(nw, cores) times the sequential loop's rate at that point
// (the calibration only sets the grain's order of magnitude). A second table
// compares with the static split: on a shared VM nw threads do not get nw
// whole cores, and what a runtime adds per task is its distance to what the
// machine gave nw independent threads in the same round.
//
// farm_manager_trace (written beside the report, not a sweep): a keep_up
// contract, workers that sleep 2 ms (so that up to 8 overlap on 2 cores),
// arrivals stepping 900 -> 450 -> 1300 -> 600 microseconds apart.
#include "farm_work.hpp"
#include "harness.hpp"

#include <lfcore/farm.hpp>
#include <lfcore/farm_manager.hpp>
#include <lfcore/farm_model.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(LFCORE_HAVE_TBB)
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>
#endif

namespace runner::omp {
bool available();
std::uint64_t farm(int threads, std::uint64_t tasks, std::uint64_t iterations);
} // namespace runner::omp

namespace runner {

namespace {

std::uint64_t expected_sum(std::uint64_t tasks, std::uint64_t iterations) {
  std::uint64_t s = 0;
  for (std::uint64_t i = 0; i < tasks; ++i) s += farm_work(i, iterations);
  return s;
}

// Times run() and reports its CPU time per task (every thread of the
// process: the farm's emitter and collector, oneTBB's and libgomp's workers,
// spinning included).
template <class F>
double tasks_per_second(std::uint64_t tasks, F run) {
  const double cpu = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  run();
  const auto wall = std::chrono::steady_clock::now() - start;
  report_cpu_ns_per_op((process_cpu_seconds() - cpu) * 1e9 / static_cast<double>(tasks));
  return static_cast<double>(tasks) / std::chrono::duration<double>(wall).count();
}

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("farm sweep: wrong sum from " + what);
}

lfcore::farm_options farm_options_for(lfcore::scheduling policy, int threads) {
  lfcore::farm_options o;
  o.workers = static_cast<unsigned>(threads);
  o.policy = policy;
  return o;
}

double lfcore_farm(const lfcore::farm_options& o, std::uint64_t tasks, std::uint64_t iters,
                   std::uint64_t expect) {
  lfcore::farm<std::uint64_t> f([iters](std::uint64_t i) { return farm_work(i, iters); }, o);
  std::uint64_t sum = 0;
  const double rate = tasks_per_second(tasks, [&] {
    f.run_and_wait(
        [i = std::uint64_t{0}, tasks]() mutable -> std::optional<std::uint64_t> {
          if (i == tasks) return std::nullopt;
          return i++;
        },
        [&](std::uint64_t r) { sum += r; });
  });
  check(sum == expect, "lfcore farm");
  return rate;
}

// The machine's own ceiling for this work at `threads` threads: equal
// ranges, one std::thread each (started inside the timed region, as the
// farm's are), each summing locally.
double static_split(int threads, std::uint64_t tasks, std::uint64_t iters, std::uint64_t expect) {
  const auto n = static_cast<std::uint64_t>(threads);
  std::vector<std::uint64_t> sums(n);
  const double rate = tasks_per_second(tasks, [&] {
    std::vector<std::thread> team;
    for (std::uint64_t k = 0; k < n; ++k)
      team.emplace_back([&, k] {
        std::uint64_t sum = 0;
        for (std::uint64_t i = k * tasks / n; i < (k + 1) * tasks / n; ++i)
          sum += farm_work(i, iters);
        sums[k] = sum;
      });
    for (auto& t : team) t.join();
  });
  std::uint64_t sum = 0;
  for (std::uint64_t x : sums) sum += x;
  check(sum == expect, "the static split");
  return rate;
}

void write_throttle_latency(std::ofstream& md);

// The notes' model beside the measurement, at regime: t_E and T_w from the
// farm's own sensors between snapshots taken at 25% and 75% of the run,
// T_S = max{t_E, T_w / nw, t_C} (t_C not measured), predicted against the
// throughput measured over the same window. T_w is wall time, so past the
// core count it grows with nw and T_w / nw stays right.
void write_model_table(std::ofstream& md) {
  md << "\n## The performance model beside the measurement\n\n"
     << "Round-robin farm, at regime (sensor snapshots at 25% and 75% of the run); t_E = the "
        "emitter's time per task outside waits for room (source included), T_w = busy time "
        "per task (task and channel costs, wall time), both from `farm_sensors`; predicted "
        "T_S = max{t_E, T_w / nw}; t_C is not measured.\n\n"
     << "| grain | nw | t_E (ns) | T_w (ns) | predicted k tasks/s | measured k tasks/s | measured "
        "/ "
        "predicted |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (int grain_us : {1, 10, 100}) {
    const auto iters = static_cast<std::uint64_t>(std::llround(grain_us * iterations_per_us()));
    const auto tasks = static_cast<std::uint64_t>(800'000 / grain_us);
    for (unsigned nw : {1u, 2u, 4u}) {
      lfcore::farm_options o;
      o.workers = nw;
      lfcore::farm<std::uint64_t> f([iters](std::uint64_t i) { return farm_work(i, iters); }, o);
      const auto expected = std::chrono::duration<double, std::micro>(
          static_cast<double>(tasks) * grain_us / std::min(nw, cores));
      lfcore::farm_sensors at25, at75;
      std::thread probe([&] {
        std::this_thread::sleep_for(expected * 0.25);
        at25 = f.sensors();
        std::this_thread::sleep_for(expected * 0.5);
        at75 = f.sensors();
      });
      std::uint64_t sum = 0;
      f.run_and_wait(
          [i = std::uint64_t{0}, tasks]() mutable -> std::optional<std::uint64_t> {
            if (i == tasks) return std::nullopt;
            return i++;
          },
          [&](std::uint64_t r) { sum += r; });
      probe.join();
      const lfcore::farm_model m = lfcore::farm_model::measured(at25, at75);
      const double predicted = 1 / m.service_time(nw);
      const double measured = static_cast<double>(at75.completed - at25.completed) /
                              std::chrono::duration<double>(at75.time - at25.time).count();
      md << "| " << grain_us << " us | " << nw << " | " << std::lround(m.t_emitter * 1e9) << " | "
         << std::lround(m.t_worker * 1e9) << " | " << std::lround(predicted / 1e3) << " | "
         << std::lround(measured / 1e3) << " | " << std::round(100 * measured / predicted) / 100
         << " |\n";
    }
  }
}

void write_manager_trace(const options& opt) {
  namespace fs = std::filesystem;
  struct phase {
    double until; // seconds
    double gap;   // T_A, seconds
  };
  const double scale = opt.quick ? 0.5 : 1.0;
  const std::vector<phase> phases{
      {3 * scale, 900e-6}, {6 * scale, 450e-6}, {9 * scale, 1300e-6}, {12 * scale, 600e-6}};
  lfcore::farm_options o;
  o.workers = 8;
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); },
                            o);
  f.set_active_workers(1);
  fs::create_directories(opt.out);
  const fs::path csv_path = fs::path(opt.out) / "farm_manager_trace.csv";
  std::ofstream csv(csv_path);
  lfcore::manager_options mo;
  mo.trace = &csv;
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up(), mo);
  using clock = std::chrono::steady_clock;
  const clock::time_point start = clock::now();
  clock::time_point next = start;
  std::fprintf(stderr, "[farm_manager_trace] %.0f s of stepped arrivals\n", phases.back().until);
  m.start();
  f.run_and_wait([&]() -> std::optional<int> {
    const double t = std::chrono::duration<double>(next - start).count();
    auto p =
        std::find_if(phases.begin(), phases.end(), [t](const phase& x) { return t < x.until; });
    if (p == phases.end()) return std::nullopt;
    std::this_thread::sleep_until(next);
    next += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(p->gap));
    return 1;
  });
  m.stop();
  csv.close();

  // Per phase: the model's nw from the phase's mean T_w, the workers at the
  // end, the most workers in the last half, reversals and violations.
  const auto trace = m.trace();
  std::ofstream md(fs::path(opt.out) / "farm_manager.md");
  md << "# Autonomic manager under stepped arrivals\n\n"
     << "Contract keep_up; period 50 ms; workers sleep 2 ms per task; trace: "
        "`farm_manager_trace.csv` (one row per period).\n\n"
     << "| phase | T_A (us) | mean T_w (us) | ceil(T_w/T_A) | nw at the end | most nw, 2nd half | "
        "changes | reversals | periods violated |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double from = 0;
  int last_direction = 0;
  unsigned last_nw = 1;
  for (std::size_t k = 0; k < phases.size(); ++k) {
    double tw = 0;
    int n = 0, changes = 0, reversals = 0, violated = 0;
    unsigned end_nw = last_nw, most = 0;
    for (const auto& r : trace) {
      if (r.state.time <= from || r.state.time > phases[k].until) continue;
      if (r.state.service_time > 0) {
        tw += r.state.service_time;
        ++n;
      }
      violated += !r.state.contract_met;
      if (r.workers_after != end_nw) {
        const int d = r.workers_after > end_nw ? 1 : -1;
        ++changes;
        if (last_direction != 0 && d != last_direction) ++reversals;
        last_direction = d;
      }
      end_nw = r.workers_after;
      if (r.state.time > (from + phases[k].until) / 2) most = std::max(most, r.workers_after);
    }
    tw = n ? tw / n : 0;
    md << "| " << k + 1 << " | " << phases[k].gap * 1e6 << " | " << std::lround(tw * 1e6) << " | "
       << std::ceil(tw / phases[k].gap - 1e-9) << " | " << end_nw << " | " << most << " | "
       << changes << " | " << reversals << " | " << violated << " |\n";
    from = phases[k].until;
    last_nw = end_nw;
  }
  md << "\nReversals in all: " << m.reversals() << ".\n";
  write_throttle_latency(md);
  write_model_table(md);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    std::ofstream g(fs::path(opt.out) / "farm_manager_trace.gp");
    g << "set terminal pngcairo size 900,540 noenhanced\nset output 'farm_manager_trace.png'\n"
      << "set datafile separator ','\nset title 'Autonomic farm: keep_up, stepped arrivals'\n"
      << "set xlabel 'time (s)'\nset ylabel 'workers'\nset y2label 'T_A, T_w (us)'\n"
      << "set ytics nomirror\nset y2tics\nset yrange [0:9]\nset y2range [0:*]\nset grid\n"
      << "set key top left\n"
      << "plot 'farm_manager_trace.csv' every ::1 using 1:15 with steps lw 2 title 'active "
         "workers',"
      << " '' every ::1 using 1:10 with steps lw 1 dt 2 title 'model ceil(T_w/T_A x 1.1)',"
      << " '' every ::1 using 1:3 axes x1y2 with lines title 'T_A (us)',"
      << " '' every ::1 using 1:4 axes x1y2 with lines title 'T_w (us)'\n";
    g.close();
    if (std::system(("cd '" + opt.out + "' && gnuplot farm_manager_trace.gp").c_str()) == 0)
      md << "\n![trace](farm_manager_trace.png)\n";
  }
}

// How fast set_active_workers takes effect while 10 us tasks stream through
// 4 workers (round-robin): thaw = time until the thawed worker 3 is sent a
// task; freeze = tasks still sent to worker 3 after set_active_workers(1)
// returned (the send that had already read the old count). The emitter
// itself timestamps the thaw: the source, called before every send, checks
// worker 3's send count while a thaw is being timed, so the time is at most
// one send late. (A poller that sleeps between looks measured its own wake-ups:
// its 2-4 ms tails came with no look between the thaw and the one that saw it.)
void write_throttle_latency(std::ofstream& md) {
  using clock = std::chrono::steady_clock;
  lfcore::farm_options o;
  o.workers = 4;
  const auto iters = static_cast<std::uint64_t>(std::llround(10 * iterations_per_us()));
  lfcore::farm<std::uint64_t, void> f([iters](std::uint64_t i) { (void)farm_work(i, iters); }, o);
  std::atomic<bool> stop{false};
  // A thaw being timed: its start (nonzero while armed) and worker 3's count
  // before it; the emitter stores the latency and disarms.
  std::atomic<clock::rep> thaw_start{0};
  std::uint64_t sent_before = 0; // written before arming (release), read after (acquire)
  std::atomic<double> thaw_latency_us{0};
  std::thread run([&] {
    f.run_and_wait([&, i = std::uint64_t{0}]() mutable -> std::optional<std::uint64_t> {
      if (const clock::rep t0 = thaw_start.load(std::memory_order_acquire);
          t0 != 0 && f.sensors().workers[3].sent != sent_before) {
        const clock::duration since = clock::now().time_since_epoch() - clock::duration(t0);
        thaw_latency_us.store(std::chrono::duration<double, std::micro>(since).count(),
                              std::memory_order_relaxed);
        thaw_start.store(0, std::memory_order_release); // disarm: publishes the latency
      }
      if (stop.load(std::memory_order_relaxed)) return std::nullopt;
      return i++;
    });
  });
  std::vector<double> thaw_us;
  std::uint64_t worst_late_sends = 0;
  for (int k = 0; k < 200; ++k) {
    f.set_active_workers(1);
    const std::uint64_t at_freeze = f.sensors().workers[3].sent;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    sent_before = f.sensors().workers[3].sent;
    worst_late_sends = std::max(worst_late_sends, sent_before - at_freeze);
    thaw_start.store(clock::now().time_since_epoch().count(), std::memory_order_release);
    f.set_active_workers(4);
    while (thaw_start.load(std::memory_order_acquire) != 0)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    thaw_us.push_back(thaw_latency_us.load(std::memory_order_relaxed));
  }
  stop = true;
  run.join();
  std::sort(thaw_us.begin(), thaw_us.end());
  md << "\n## Freeze and thaw latency\n\n"
     << "4 workers, 10 us tasks, round-robin, 200 freeze (to 1) / thaw (to 4) cycles while the "
        "stream runs: the thawed worker 4 is sent its first task "
     << std::lround(thaw_us[thaw_us.size() / 2]) << " us (median) after set_active_workers(4), "
     << std::lround(thaw_us[thaw_us.size() * 99 / 100]) << " us at the 99th percentile, "
     << std::lround(thaw_us.back()) << " us at worst (timed by the emitter: at most one send "
     << "late); after set_active_workers(1) returned, a frozen worker was sent at most "
     << worst_late_sends << " more task(s).\n";
}

} // namespace

// A sweep's stream: its grain in iterations and the sum every contender must
// reach, computed when the sweep first runs - the calibration and the three
// reference sums take about 3 s, which runs of other sweeps need not pay.
class farm_stream {
public:
  farm_stream(int grain_us, std::uint64_t tasks) : grain_us_(grain_us), tasks_(tasks) {}
  std::uint64_t iters() { return prepared().iters_; }
  std::uint64_t expect() { return prepared().expect_; }

private:
  farm_stream& prepared() {
    std::call_once(once_, [this] {
      iters_ = static_cast<std::uint64_t>(std::llround(grain_us_ * iterations_per_us()));
      expect_ = expected_sum(tasks_, iters_);
    });
    return *this;
  }
  const int grain_us_;
  const std::uint64_t tasks_;
  std::uint64_t iters_ = 0, expect_ = 0;
  std::once_flag once_;
};

std::vector<sweep> farm_sweeps(const options& opt) {
  std::vector<sweep> out;
  for (int grain_us : {1, 10, 100}) {
    // About opt.seconds of work at the ideal rate on 2 workers.
    const auto tasks = static_cast<std::uint64_t>(opt.seconds * 2e6 / grain_us);
    const auto stream = std::make_shared<farm_stream>(grain_us, tasks);
    sweep s{"farm_grain_" + std::to_string(grain_us) + "us",
            "Farm: tasks of " + std::to_string(grain_us) + " us, " + std::to_string(tasks) +
                " tasks",
            "one task through source, worker and sink",
            {}};
    s.unit = 1e3;
    s.unit_name = "k tasks/s";
    s.sequential = "sequential loop";
    s.parallel_reference = "static split (no communication)";
    s.contenders.push_back({s.sequential, false, [=](const point&) {
                              const std::uint64_t iters = stream->iters(),
                                                  expect = stream->expect();
                              std::uint64_t sum = 0;
                              const double rate = tasks_per_second(tasks, [&] {
                                for (std::uint64_t i = 0; i < tasks; ++i)
                                  sum += farm_work(i, iters);
                              });
                              check(sum == expect, "the sequential loop");
                              return rate;
                            }});
    s.contenders.push_back({s.parallel_reference, false, [=](const point& p) {
                              return static_split(p.threads, tasks, stream->iters(),
                                                  stream->expect());
                            }});
    s.contenders.push_back(
        {"lfcore farm (on-demand)", true, [=](const point& p) {
           const std::uint64_t iters = stream->iters(), expect = stream->expect();
           return lfcore_farm(farm_options_for(lfcore::scheduling::on_demand, p.threads), tasks,
                              iters, expect);
         }});
    s.contenders.push_back(
        {"lfcore farm (round-robin)", true, [=](const point& p) {
           const std::uint64_t iters = stream->iters(), expect = stream->expect();
           return lfcore_farm(farm_options_for(lfcore::scheduling::round_robin, p.threads), tasks,
                              iters, expect);
         }});
    // One worker with an emitter thread of its own: the farm before
    // farm_options::fuse_emitter_with_one_worker, or one whose source deserves
    // a thread (at more workers the option does not apply).
    s.contenders.push_back({"lfcore farm (one worker, own emitter)", true,
                            [=](const point& p) {
                              const std::uint64_t iters = stream->iters(),
                                                  expect = stream->expect();
                              lfcore::farm_options o =
                                  farm_options_for(lfcore::scheduling::round_robin, p.threads);
                              o.fuse_emitter_with_one_worker = false;
                              return lfcore_farm(o, tasks, iters, expect);
                            },
                            /*only_at_threads=*/1});
    // The same, trading result latency for CPU (see farm_options::result_latency).
    s.contenders.push_back(
        {"lfcore farm (round-robin, 2 ms result latency)", true, [=](const point& p) {
           const std::uint64_t iters = stream->iters(), expect = stream->expect();
           lfcore::farm_options o = farm_options_for(lfcore::scheduling::round_robin, p.threads);
           o.result_latency = std::chrono::milliseconds(2);
           return lfcore_farm(o, tasks, iters, expect);
         }});
#if defined(LFCORE_HAVE_TBB)
    s.contenders.push_back(
        {"oneTBB parallel_pipeline", false, [=](const point& p) {
           const std::uint64_t iters = stream->iters(), expect = stream->expect();
           tbb::task_arena arena(p.threads);
           std::uint64_t sum = 0;
           const double rate = tasks_per_second(tasks, [&] {
             arena.execute([&] {
               std::uint64_t i = 0;
               tbb::parallel_pipeline(
                   static_cast<std::size_t>(4 * p.threads),
                   tbb::make_filter<void, std::uint64_t>(
                       tbb::filter_mode::serial_in_order,
                       [&](tbb::flow_control& fc) -> std::uint64_t {
                         if (i == tasks) fc.stop();
                         return i++;
                       }) &
                       tbb::make_filter<std::uint64_t, std::uint64_t>(
                           tbb::filter_mode::parallel,
                           [iters](std::uint64_t x) { return farm_work(x, iters); }) &
                       tbb::make_filter<std::uint64_t, void>(tbb::filter_mode::serial_out_of_order,
                                                             [&](std::uint64_t r) { sum += r; }));
             });
           });
           check(sum == expect, "oneTBB parallel_pipeline");
           return rate;
         }});
#endif
    if (omp::available())
      s.contenders.push_back({"OpenMP tasks (libgomp)", false, [=](const point& p) {
                                const std::uint64_t iters = stream->iters(),
                                                    expect = stream->expect();
                                std::uint64_t sum = 0;
                                const double rate = tasks_per_second(
                                    tasks, [&] { sum = omp::farm(p.threads, tasks, iters); });
                                check(sum == expect, "OpenMP tasks");
                                return rate;
                              }});
    out.push_back(std::move(s));
  }
  return out;
}

void farm_manager_report(const options& opt) {
  write_manager_trace(opt);
}

} // namespace runner
