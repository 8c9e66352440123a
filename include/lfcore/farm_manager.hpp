// lfcore/farm_manager.hpp - an autonomic manager that throttles a farm: a
// MAPE-K loop (Monitor, Analyze, Plan, Execute over shared Knowledge).
//
// The design of the course notes ("Autonomic Management of Non Functional
// Features", ../shared/seeds/parallel-programming-notes.txt): every period,
// on a thread of its own, the manager
// * Monitors: reads the farm's sensors (farm_base::sensors(): cumulative
//   counters, so a read costs the farm nothing) plus user sensors, and takes
//   differences against the previous period;
// * Analyzes against a contract: derives the inter-arrival time T_A, the
//   service time T_w, throughput, utilisation, whether the farm is the
//   bottleneck (the emitter waited for room more than `saturation` of the
//   period), the load T_w / T for the contract's target inter-departure time
//   T, the model's worker count nw = ceil(T_w / T x (1 + headroom)), and
//   raises events (period,
//   arrivals_faster, arrivals_slower, contract_violated);
// * Plans with ECA rules (event, condition, action, priority): of the rules
//   whose event was raised and whose condition holds, the one of highest
//   priority fires (the earliest added among equals);
// * Executes the plan through actuators: freeze/thaw (set_active_workers),
//   re-pin, or a user action.
// T_w is smoothed (an exponential moving average, manager_options::smoothing):
// it is a property of the tasks, and one period's scheduling hiccup must not
// move nw. T_A is not: its changes are what the manager follows.
//
// The Knowledge carried between periods: T_w's average, the T_A at the last
// decision (to detect a change), the direction and age of the last change of
// nw, and a floor: when the contract is violated right after a shrink to n
// workers (within hold_periods + violation_periods), the model does not shrink to n or fewer again
// until the arrivals slow down (else a ratio T_w / T_A just under an integer would make it shrink,
// violate, grow, shrink, ... - a reversal per cycle).
//
// T_A is measured at the emitter as (wall time - time blocked on full
// channels) / arrivals: the time the source took to produce an item. While
// the farm keeps up this is the arrival process; while it does not (the
// source has a backlog and answers at once) it is not, so for the keep_up
// contract the model is "unknown" then and the violation rule adds workers
// one per period until the farm keeps up again.
//
// Default rules (priority: name):
//   100: R3 - no increase within hold_periods of a decrease (nop), the notes' R3
//   100: R4 - no decrease within hold_periods of an increase (nop), the notes' R4
//    50: grow - contract violated: nw = max(nw + 1, model)
//    10: model - nw = model if more are needed (in two periods in a row: the
//        smaller of the two); if fewer (in two periods in a row: the larger
//        of the two), shrink to ceil(T_w / T x (1 + decrease_margin)) but
//        not below the floor (hysteresis between the two margins, so that
//        noise around an integer ratio does not flip nw back and forth).
//        Both margins give at most one worker more than ceil(T_w / T) while
//        T_w / T < 4.
// The notes' model is nw = ceil(T_w / T_A); the headroom exists because a
// farm that is busy 98% of the time keeps up on average but blocks its
// source in every burst.
// The notes' R1/R2 (add / remove a worker when T_A falls / rises) are the
// model rule's special case. Users add rules, sensors and actions.
//
// Trace: one CSV row per period (write_csv_header / write_csv_row) to
// manager_options::trace, and trace() in memory.
//
// Thread safety: configure (add_rule, add_sensor) before start(); start, stop
// and step from one thread; trace() and reversals() from any thread.
#pragma once

#include "lfcore/farm_base.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lfcore {

struct farm_contract {
  enum class kind { keep_up, min_throughput, max_service_time };
  kind type = kind::keep_up;
  double value = 0; ///< tasks per second (min_throughput) or seconds (max_service_time)

  /// Keep up with the arrivals with the fewest workers.
  static farm_contract keep_up() { return {}; }
  /// Deliver at least `per_second` results per second (or all that arrive, if fewer).
  static farm_contract throughput_at_least(double per_second) {
    return {kind::min_throughput, per_second};
  }
  /// A service time (time between results) of at most `t` (or the arrivals', if longer).
  static farm_contract service_time_at_most(std::chrono::duration<double> t) {
    return {kind::max_service_time, t.count()};
  }
};

/// Events raised by Analyze (bits).
namespace mape_event {
inline constexpr unsigned period = 1;            ///< every period
inline constexpr unsigned arrivals_faster = 2;   ///< T_A fell since the last decision
inline constexpr unsigned arrivals_slower = 4;   ///< T_A rose since the last decision
inline constexpr unsigned contract_violated = 8; ///< the contract is not met (persistently)
} // namespace mape_event

/// What Monitor and Analyze found this period; rules read it. Times in seconds.
struct mape_state {
  double time = 0;             ///< since start()
  double period = 0;           ///< length of this sample
  double arrival_interval = 0; ///< T_A (0: no arrivals)
  double service_time = 0;     ///< T_w, busy time per task, smoothed (0: unknown yet)
  double throughput = 0;       ///< results per second
  double utilisation = 0;      ///< busy time / (active workers x period)
  double emitter_blocked = 0;  ///< fraction of the period the emitter waited for room
  std::uint64_t queued = 0;    ///< tasks sent and not finished
  unsigned workers = 0;        ///< active now
  unsigned max_workers = 0;
  double load = 0;            ///< T_w / T for the contract's T: the workers fully busy (0: unknown)
  unsigned model_workers = 0; ///< ceil(load x (1 + headroom)); 0: unknown
  unsigned previous_model_workers = 0; ///< model_workers of the period before
  unsigned shrink_workers =
      0; ///< ceil(load x (1 + decrease_margin)), at least the floor; 0: unknown
  unsigned previous_shrink_workers = 0; ///< shrink_workers of the period before
  bool saturated = false;               ///< the farm is the bottleneck
  bool contract_met = true;             ///< in this period
  bool violated = false;  ///< not met for manager_options::violation_periods periods in a row
  unsigned events = 0;    ///< mape_event bits
  int last_direction = 0; ///< +1 / -1: the last change of nw added / removed workers
  unsigned periods_since_change = 0;
  std::vector<double> user; ///< user sensors, in add_sensor order

  /// The model asks for more workers in this period and the one before (one
  /// period's short T_A may be a backlog being caught up, not an arrival
  /// rate): the smaller of the two answers, or 0.
  unsigned grow_workers() const {
    const unsigned both =
        model_workers < previous_model_workers ? model_workers : previous_model_workers;
    return both > workers ? both : 0;
  }
  /// The model asks for fewer workers in this period and the one before (one
  /// period's long T_A may be a late source or a descheduled emitter, not
  /// slower arrivals): the larger of the two answers, or 0.
  unsigned fewer_workers() const {
    if (shrink_workers == 0 || previous_shrink_workers == 0) return 0;
    const unsigned both =
        shrink_workers > previous_shrink_workers ? shrink_workers : previous_shrink_workers;
    return both < workers ? both : 0;
  }
  bool wants_more() const { return violated || grow_workers() != 0; }
  bool wants_fewer() const { return fewer_workers() != 0; }
};

/// What a rule decides; empty members leave things as they are.
struct mape_plan {
  std::optional<unsigned> workers;
  std::optional<pin_policy> pinning;
  std::function<void()> custom; ///< a user actuator
};

struct eca_rule {
  std::string name;
  int priority = 0;
  unsigned events = mape_event::period; ///< fires on any of these
  std::function<bool(const mape_state&)> condition;
  std::function<mape_plan(const mape_state&)> action;
};

struct manager_options {
  std::chrono::milliseconds period{50};
  unsigned hold_periods = 3;    ///< R3/R4: periods after a change in which it is not reversed
  double arrival_change = 0.10; ///< relative change of T_A that raises an arrival event
  /// Emitter-blocked fraction meaning "the farm is the bottleneck": a farm
  /// that is too small blocks its emitter nearly all the time (0.95-1.0
  /// measured), a well-sized one in bursts only.
  double saturation = 0.5;
  /// The model sizes the farm for load x (1 + headroom): workers busy at most
  /// 1 / (1 + headroom) of the time, so that bursts fit in the short on-demand
  /// queues instead of blocking the emitter.
  double headroom = 0.10;
  /// Shrink only to ceil(load x (1 + decrease_margin)): the band between the
  /// two margins is the model rule's hysteresis.
  double decrease_margin = 0.25;
  double throughput_tolerance = 0.05; ///< min_throughput / max_service_time met within this
  double smoothing = 0.2; ///< weight of the newest period in T_w's moving average, in (0, 1]
  /// Periods in a row the contract must be unmet to raise contract_violated
  /// (a one-period burst that the farm drains by itself is not a violation).
  unsigned violation_periods = 2;
  std::ostream* trace = nullptr; ///< CSV rows as they happen (the stream must outlive the manager)
  bool default_rules = true;
};

/// One period of the trace.
struct mape_record {
  mape_state state;
  std::string rule;   ///< the rule that fired, empty if none
  std::string action; ///< what was executed, e.g. "workers 3 -> 4"
  unsigned workers_after = 0;
};

class farm_manager {
public:
  /// The farm must outlive the manager. Throws std::invalid_argument for a
  /// zero period or a non-positive contract value.
  farm_manager(farm_base& farm, farm_contract contract, manager_options options = {});
  ~farm_manager(); // stop()
  farm_manager(const farm_manager&) = delete;
  farm_manager& operator=(const farm_manager&) = delete;

  void add_rule(eca_rule rule);
  void add_sensor(std::string name, std::function<double()> read);

  /// Starts the periodic loop (takes the first sensor snapshot now).
  /// Throws std::system_error if the OS refuses its thread; start() may be
  /// called again.
  void start();
  /// Stops the loop (idempotent); the farm keeps its current nw. If a user
  /// sensor, rule or action threw in the loop, the loop ended there and
  /// stop() rethrows that exception (once; the destructor drops it).
  void stop();
  /// One MAPE iteration now, against the previous snapshot (start() or the
  /// last step). The loop calls this every period; tests may drive it by hand.
  mape_record step();

  std::vector<mape_record> trace() const;
  /// Changes of nw in the direction opposite to the change before.
  unsigned reversals() const;

  void write_csv_header(std::ostream& out) const;
  void write_csv_row(std::ostream& out, const mape_record& r) const;

private:
  mape_state analyze(const farm_sensors& now);
  const eca_rule* plan(const mape_state& s) const;
  std::string execute(const mape_plan& p);
  void install_default_rules();
  void join_loop() noexcept;

  farm_base& farm_;
  const farm_contract contract_;
  const manager_options options_;
  std::vector<eca_rule> rules_;
  std::vector<std::pair<std::string, std::function<double()>>> user_sensors_;

  // Knowledge.
  farm_sensors previous_;
  std::chrono::steady_clock::time_point started_;
  double last_service_time_ = 0;
  double reference_arrival_ = 0;     // T_A at the last decision
  unsigned proven_floor_ = 0;        // workers below which the contract was violated
  unsigned unmet_periods_ = 0;       // periods in a row the contract was not met
  unsigned last_model_workers_ = 0;  // the model's answer in the previous period
  unsigned last_shrink_workers_ = 0; // and its answer for shrinking
  int last_direction_ = 0;
  unsigned periods_since_change_ = 0;
  unsigned reversals_ = 0;

  mutable std::mutex trace_mutex_;
  std::vector<mape_record> trace_;

  std::mutex loop_mutex_;
  std::condition_variable loop_wake_;
  bool stopping_ = false;
  std::exception_ptr loop_error_; // written by the loop before it returns; read after the join
  std::thread loop_;
};

} // namespace lfcore
