// tests/farm/farm_manager_test.cpp - the autonomic manager against synthetic
// arrival rates: it converges to the model's nw, meets the contract, and does
// not oscillate.
//
// Workers sleep for their service time (latency-bound tasks), so that up to 8
// workers overlap on this project's 2-core machine and the test does not
// depend on CPU speed; the source follows an absolute arrival schedule.
#include <lfcore/farm.hpp>
#include <lfcore/farm_manager.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// 2 ms: long enough that the sleep's overshoot (50-150 us here) moves T_w by
// a few per cent only, so the model's ratios below stay clear of integers.
constexpr auto service = 2ms;

// A source whose k-th item arrives at start + sum of gaps; gap(t) gives the
// inter-arrival time at time t (seconds since start). Ends after `length`.
auto scheduled_source(std::function<double(double)> gap, std::chrono::duration<double> length) {
  return [gap = std::move(gap), length, start = std::optional<clock_type::time_point>(),
          next = clock_type::time_point()]() mutable -> std::optional<int> {
    const auto now = clock_type::now();
    if (!start) start = next = now;
    if (now - *start > length) return std::nullopt;
    std::this_thread::sleep_until(next);
    const double t = std::chrono::duration<double>(next - *start).count();
    next += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(gap(t)));
    return 1;
  };
}

lfcore::farm_options eight_workers() {
  lfcore::farm_options o;
  o.workers = 8;
  o.policy = lfcore::scheduling::on_demand;
  return o;
}

struct phase {
  double from, to; // seconds
  double gap;      // T_A
};

// The workers the model predicts for a phase: ceil(T_w / T_A) with T_w as
// measured over that phase.
unsigned predicted(const std::vector<lfcore::mape_record>& trace, const phase& p) {
  double tw = 0;
  int n = 0;
  for (const auto& r : trace)
    if (r.state.time > p.from && r.state.time <= p.to && r.state.service_time > 0) {
      tw += r.state.service_time;
      ++n;
    }
  return static_cast<unsigned>(std::ceil(tw / n / p.gap - 1e-9));
}

TEST(farm_manager, stepped_arrivals_converge_to_the_model_without_oscillating) {
  const std::vector<phase> phases{{0, 2, 900e-6}, {2, 4, 500e-6}, {4, 6, 1300e-6}};
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(service); }, eight_workers());
  f.set_active_workers(1);
  std::ostringstream csv;
  lfcore::manager_options mo;
  mo.trace = &csv;
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up(), mo);
  m.start();
  f.run_and_wait(scheduled_source(
      [&](double t) {
        for (const phase& p : phases)
          if (t < p.to) return p.gap;
        return phases.back().gap;
      },
      6s));
  m.stop();
  const auto trace = m.trace();
  ASSERT_GT(trace.size(), 60u);
  for (const phase& p : phases) {
    const unsigned phase_want = predicted(trace, p);
    const double settled = p.from + (p.to - p.from) * 2 / 3; // the last third of the phase
    int periods = 0, judged = 0, sized = 0;
    double tasks = 0, seconds = 0;
    // A period that missed the contract (a stall of this shared machine, or of
    // qemu's emulation) rightly makes the manager grow, in it and the next,
    // and R4 then holds that size for hold_periods: those are not judged
    // against the model.
    std::size_t unjudged = 0;
    for (const auto& r : trace) {
      if (r.state.time <= settled || r.state.time > p.to) continue;
      ++periods;
      tasks += r.state.throughput * r.state.period;
      seconds += r.state.period;
      if (!r.state.contract_met) unjudged = 2 + mo.hold_periods;
      if (unjudged > 0) {
        --unjudged;
        continue;
      }
      ++judged;
      // The model on the T_w measured then (under load - sanitizers, tests in
      // parallel - a 2 ms sleep can take 3 ms for a while, and the manager
      // must follow that, not the phase's average), within the manager's
      // hysteresis: at least ceil(load), and it does not shrink while
      // ceil(load x (1 + decrease_margin)) workers are needed - one more than
      // ceil(load) while load < 4, up to two beyond.
      const double load = r.state.service_time > 0 ? r.state.service_time / p.gap : 0;
      const unsigned low = load > 0 ? static_cast<unsigned>(std::ceil(load - 1e-9)) : phase_want;
      const unsigned high = std::max(
          low + 1, static_cast<unsigned>(std::ceil(load * (1 + mo.decrease_margin) - 1e-9)));
      sized += r.workers_after >= low && r.workers_after <= high;
    }
    ASSERT_GT(periods, 3);
    // This machine is shared: a burst of noise can cost a period or two more.
    EXPECT_GE(sized, judged * 4 / 5) << "want about " << phase_want << " and the margins\n"
                                     << csv.str();
    // Keeping up, judged as a rate over the last third (period by period,
    // the CI saw TSan's stalls miss a fifth of the periods of a test below):
    // 0.998-1.002 of the arrivals here; 0.70 with the farm capped at 3
    // workers, where the 500 us phase needs 5.
    EXPECT_GE(tasks / seconds * p.gap, 0.95) << csv.str();
  }
  // The goal is one reversal per step (the start from one worker is a step
  // too), measured by the benchmark; the test fails on oscillation: twice that.
  EXPECT_LE(m.reversals(), 2 * phases.size()) << csv.str();
  // The CSV trace has a header and a row per period.
  const std::string text = csv.str();
  EXPECT_EQ(text.rfind("time_s,period_s,arrival_interval_us,service_time_us", 0), 0u);
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), trace.size() + 1);
}

TEST(farm_manager, sinusoidal_arrivals_do_not_make_it_oscillate) {
  constexpr double cycle = 2.0, length = 4.0;
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(service); }, eight_workers());
  f.set_active_workers(2);
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up());
  m.start();
  f.run_and_wait(
      scheduled_source([&](double t) { return 800e-6 + 400e-6 * std::sin(2 * M_PI * t / cycle); },
                       std::chrono::duration<double>(length)));
  m.stop();
  // Following a sine needs one reversal per half cycle (4 here); oscillation
  // would be one per hold period (about 20). Allow twice the need, for noise
  // on this shared machine.
  std::ostringstream csv;
  for (const auto& r : m.trace()) m.write_csv_row(csv, r);
  EXPECT_LE(m.reversals(), static_cast<unsigned>(2 * (2 * length / cycle))) << csv.str();
  int changes = 0;
  for (const auto& r : m.trace()) changes += r.action.rfind("workers", 0) == 0;
  EXPECT_GT(changes, 2) << "the manager did not follow the arrivals at all\n" << csv.str();
}

// An unlimited source and a throughput contract: the model's nw,
// ceil(T_w x X), and the contract met.
TEST(farm_manager, throughput_contract_is_met_with_the_model_workers) {
  constexpr double wanted = 1500; // tasks per second: about 3.2 sleeping workers
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(service); }, eight_workers());
  f.set_active_workers(1);
  lfcore::farm_manager m(f, lfcore::farm_contract::throughput_at_least(wanted));
  m.start();
  const auto until = clock_type::now() + 1500ms;
  f.run_and_wait([&]() -> std::optional<int> {
    if (clock_type::now() > until) return std::nullopt;
    return 1;
  });
  m.stop();
  const auto trace = m.trace();
  ASSERT_GT(trace.size(), 10u);
  std::ostringstream csv;
  for (const auto& r : trace) m.write_csv_row(csv, r);
  // Judge the second half of the run (the first is the climb from one
  // worker). The decisions period by period, against the T_w measured then,
  // allowing a fifth of the periods to be noise. The contract over the whole
  // half, tasks done / time: it is a rate, and one 50 ms period is too short
  // a sample on this shared machine (under TSan a 2 ms sleep took 2.6-3 ms
  // and single periods fell to 900 tasks/s while the half averaged 1780).
  // Three workers where the model asks four gave 1399/s here and fail it.
  int periods = 0, sized = 0;
  double tasks = 0, seconds = 0;
  for (std::size_t i = trace.size() / 2; i + 1 < trace.size(); ++i) { // the last may be cut short
    const auto& r = trace[i];
    const unsigned want = static_cast<unsigned>(std::ceil(r.state.service_time * wanted - 1e-9));
    ++periods;
    sized += r.workers_after >= want && r.workers_after <= want + 1;
    tasks += r.state.throughput * r.state.period;
    seconds += r.state.period;
  }
  ASSERT_GT(periods, 4);
  EXPECT_GE(sized, periods * 4 / 5) << csv.str();
  EXPECT_GE(tasks / seconds, wanted * 0.95) << csv.str();
}

// User sensors appear in the trace; a user rule of higher priority wins and
// its custom actuator runs; a rule may re-pin.
TEST(farm_manager, user_rules_sensors_and_actuators) {
  lfcore::farm<int, void> f([](int) {}, eight_workers());
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up());
  double reading = 41;
  int custom_runs = 0;
  m.add_sensor("answer", [&] { return ++reading; });
  m.add_rule({"user: pin and act", 1000, lfcore::mape_event::period,
              [](const lfcore::mape_state& s) { return s.user.at(0) == 42; },
              [&](const lfcore::mape_state&) {
                lfcore::mape_plan p;
                p.workers = 5;
                p.pinning = lfcore::pin_policy{};
                p.custom = [&] { ++custom_runs; };
                return p;
              }});
  const lfcore::mape_record first = m.step();
  EXPECT_EQ(first.rule, "user: pin and act");
  EXPECT_EQ(first.action, "workers 8 -> 5; repin; custom");
  EXPECT_EQ(first.workers_after, 5u);
  EXPECT_EQ(custom_runs, 1);
  ASSERT_EQ(first.state.user.size(), 1u);
  const lfcore::mape_record second = m.step(); // sensor reads 43: the user rule does not fire
  EXPECT_NE(second.rule, "user: pin and act");
  EXPECT_EQ(custom_runs, 1);
  std::ostringstream csv;
  m.write_csv_header(csv);
  EXPECT_NE(csv.str().find(",workers,answer\n"), std::string::npos);
  EXPECT_THROW(m.add_rule({"empty", 1, lfcore::mape_event::period, nullptr, nullptr}),
               std::invalid_argument);
  EXPECT_THROW(m.add_sensor("none", nullptr), std::invalid_argument);
}

// The notes' R3: right after a decrease, a violated contract does not add
// workers back until hold_periods have passed; then the grow rule does.
TEST(farm_manager, no_increase_within_the_hold_after_a_decrease) {
  lfcore::farm<int, void> f([](int) { std::this_thread::sleep_for(service); }, eight_workers());
  std::atomic<bool> done{false};
  std::thread run([&] { // a source always ready: one worker cannot keep up
    f.run_and_wait([&]() -> std::optional<int> {
      if (done.load()) return std::nullopt;
      return 1;
    });
  });
  lfcore::manager_options mo;
  mo.hold_periods = 12;
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up(), mo);
  bool shrunk = false;
  m.add_rule({"test: shrink to one", 60, lfcore::mape_event::period,
              [&](const lfcore::mape_state&) { return !shrunk; },
              [&](const lfcore::mape_state&) {
                shrunk = true;
                lfcore::mape_plan p;
                p.workers = 1;
                return p;
              }});
  std::vector<lfcore::mape_record> steps;
  for (unsigned i = 0; i < mo.hold_periods + 12; ++i) {
    std::this_thread::sleep_for(10ms);
    steps.push_back(m.step());
  }
  done.store(true);
  run.join();
  ASSERT_EQ(steps[0].rule, "test: shrink to one");
  ASSERT_EQ(steps[0].workers_after, 1u);
  unsigned held = 0;
  for (unsigned i = 1; i < mo.hold_periods; ++i) {
    EXPECT_EQ(steps[i].workers_after, 1u) << "period " << i << ": " << steps[i].rule;
    held += steps[i].rule.rfind("R3", 0) == 0;
  }
  EXPECT_GT(held, 0u) << "the contract was never violated within the hold";
  EXPECT_GT(steps.back().workers_after, 1u) << "nor grown after it";
}

// A user sensor that throws ends the loop; stop() rethrows its exception.
TEST(farm_manager, a_throwing_user_sensor_is_rethrown_by_stop) {
  lfcore::farm<int, void> f([](int) {}, eight_workers());
  lfcore::manager_options o;
  o.period = 1ms;
  lfcore::farm_manager m(f, lfcore::farm_contract::keep_up(), o);
  m.add_sensor("broken", []() -> double { throw std::domain_error("sensor"); });
  m.start();
  std::this_thread::sleep_for(20ms);
  EXPECT_THROW(m.stop(), std::domain_error);
  EXPECT_NO_THROW(m.stop()); // once
  EXPECT_TRUE(m.trace().empty());
}

TEST(farm_manager, invalid_configuration_is_rejected) {
  lfcore::farm<int, void> f([](int) {}, eight_workers());
  lfcore::manager_options o;
  o.period = 0ms;
  EXPECT_THROW(lfcore::farm_manager(f, lfcore::farm_contract::keep_up(), o), std::invalid_argument);
  o = lfcore::manager_options{};
  o.violation_periods = 0;
  EXPECT_THROW(lfcore::farm_manager(f, lfcore::farm_contract::keep_up(), o), std::invalid_argument);
  for (const double smoothing : {0.0, 1.5}) {
    o = lfcore::manager_options{};
    o.smoothing = smoothing;
    EXPECT_THROW(lfcore::farm_manager(f, lfcore::farm_contract::keep_up(), o),
                 std::invalid_argument);
  }
  EXPECT_THROW(lfcore::farm_manager(f, lfcore::farm_contract::throughput_at_least(0)),
               std::invalid_argument);
  EXPECT_THROW(lfcore::farm_manager(f, lfcore::farm_contract::service_time_at_most(-1s)),
               std::invalid_argument);
}

} // namespace
