// lib/farm_manager.cpp - the MAPE loop of lfcore::farm_manager.
#include "lfcore/farm_manager.hpp"

#include <algorithm>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <utility>

namespace lfcore {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ceil(ratio), clamped to [1, max]; 0 if ratio is not a positive number.
unsigned workers_for(double ratio, unsigned max) {
  if (!(ratio > 0) || !std::isfinite(ratio)) return 0;
  const double n = std::ceil(ratio - 1e-9);
  return n < 1 ? 1u : n > max ? max : static_cast<unsigned>(n);
}

} // namespace

farm_manager::farm_manager(farm_base& farm, farm_contract contract, manager_options options)
    : farm_(farm), contract_(contract), options_(std::move(options)) {
  if (options_.period.count() <= 0)
    throw std::invalid_argument("lfcore::farm_manager: the period must be positive");
  if (options_.violation_periods == 0)
    throw std::invalid_argument("lfcore::farm_manager: violation_periods must be at least 1");
  if (!(options_.smoothing > 0 && options_.smoothing <= 1))
    throw std::invalid_argument("lfcore::farm_manager: smoothing must be in (0, 1]");
  if (contract_.type != farm_contract::kind::keep_up && !(contract_.value > 0))
    throw std::invalid_argument("lfcore::farm_manager: the contract's value must be positive");
  if (options_.default_rules) install_default_rules();
  previous_ = farm_.sensors(); // step() before start() measures from here
  started_ = previous_.time;
}

farm_manager::~farm_manager() {
  join_loop(); // an exception of the loop is dropped here: call stop() to see it
}

void farm_manager::install_default_rules() {
  const unsigned hold = options_.hold_periods;
  add_rule({"R3 no increase right after a decrease", 100,
            mape_event::period | mape_event::arrivals_faster | mape_event::contract_violated,
            [hold](const mape_state& s) {
              return s.wants_more() && s.last_direction < 0 && s.periods_since_change < hold;
            },
            [](const mape_state&) { return mape_plan{}; }});
  add_rule({"R4 no decrease right after an increase", 100,
            mape_event::period | mape_event::arrivals_slower,
            [hold](const mape_state& s) {
              return s.wants_fewer() && s.last_direction > 0 && s.periods_since_change < hold;
            },
            [](const mape_state&) { return mape_plan{}; }});
  add_rule({"grow: contract violated", 50, mape_event::contract_violated,
            [](const mape_state& s) { return s.workers < s.max_workers; },
            [](const mape_state& s) {
              return mape_plan{std::max(s.workers + 1, s.model_workers), {}, {}};
            }});
  add_rule(
      {"model: nw = ceil(T_w / T)", 10, mape_event::period,
       [](const mape_state& s) { return s.grow_workers() != 0 || s.wants_fewer(); },
       [](const mape_state& s) {
         return mape_plan{s.grow_workers() != 0 ? s.grow_workers() : s.fewer_workers(), {}, {}};
       }});
}

void farm_manager::add_rule(eca_rule rule) {
  if (!rule.condition || !rule.action)
    throw std::invalid_argument("lfcore::farm_manager: a rule needs a condition and an action");
  rules_.push_back(std::move(rule));
}

void farm_manager::add_sensor(std::string name, std::function<double()> read) {
  if (!read) throw std::invalid_argument("lfcore::farm_manager: empty sensor");
  user_sensors_.emplace_back(std::move(name), std::move(read));
}

void farm_manager::start() {
  if (loop_.joinable()) return;
  previous_ = farm_.sensors();
  started_ = previous_.time;
  if (options_.trace != nullptr) write_csv_header(*options_.trace);
  stopping_ = false;
  loop_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(loop_mutex_);
    auto next = std::chrono::steady_clock::now() + options_.period;
    while (!loop_wake_.wait_until(lock, next, [this] { return stopping_; })) {
      lock.unlock();
      try {
        step();
      } catch (...) { // a user sensor, rule or action threw: stop() rethrows it
        loop_error_ = std::current_exception();
        return;
      }
      lock.lock();
      next += options_.period;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + options_.period; // we fell behind: do not catch up in a burst
    }
  });
}

void farm_manager::stop() {
  join_loop();
  if (std::exception_ptr e = std::exchange(loop_error_, nullptr)) std::rethrow_exception(e);
}

void farm_manager::join_loop() noexcept {
  {
    const std::lock_guard<std::mutex> lock(loop_mutex_);
    stopping_ = true;
  }
  loop_wake_.notify_all();
  if (loop_.joinable()) loop_.join();
}

// ------------------------------------------------------------------ Monitor + Analyze
mape_state farm_manager::analyze(const farm_sensors& now) {
  mape_state s;
  s.time = seconds(now.time - started_);
  s.period = seconds(now.time - previous_.time);
  s.workers = farm_.active_workers();
  s.max_workers = farm_.max_workers();
  const double dt = s.period > 0 ? s.period : 1e-9;

  std::uint64_t tasks = 0, busy_ns = 0;
  for (std::size_t i = 0; i < now.workers.size(); ++i) {
    tasks += now.workers[i].tasks - previous_.workers[i].tasks;
    busy_ns += now.workers[i].busy_ns - previous_.workers[i].busy_ns;
    s.queued += now.workers[i].queued;
  }
  const double busy = static_cast<double>(busy_ns) * 1e-9;
  if (tasks > 0) { // T_w is a property of the tasks: smoothed, it ignores a period's hiccup
    const double sample = busy / static_cast<double>(tasks);
    last_service_time_ =
        last_service_time_ > 0
            ? last_service_time_ + options_.smoothing * (sample - last_service_time_)
            : sample;
  }
  s.service_time = last_service_time_;
  s.throughput = static_cast<double>(now.completed - previous_.completed) / dt;
  s.utilisation = busy / (dt * std::max(1u, s.workers));
  const double blocked =
      static_cast<double>(now.emitter_blocked_ns - previous_.emitter_blocked_ns) * 1e-9;
  s.emitter_blocked = std::min(1.0, blocked / dt);
  s.saturated = s.emitter_blocked > options_.saturation;
  const std::uint64_t arrivals = now.arrivals - previous_.arrivals;
  // No arrivals in a whole period: arrivals are at least a period apart.
  s.arrival_interval =
      arrivals > 0 ? std::max(0.0, dt - blocked) / static_cast<double>(arrivals) : dt;
  if (!now.running) s.arrival_interval = 0;

  // The contract's target inter-departure time T: never shorter than the
  // arrivals' (fewest workers), unknown for keep_up while saturated.
  double target = 0;
  const bool arrivals_known = !s.saturated && s.arrival_interval > 0;
  switch (contract_.type) {
  case farm_contract::kind::keep_up:
    target = arrivals_known ? s.arrival_interval : 0;
    s.contract_met = !s.saturated;
    break;
  case farm_contract::kind::min_throughput:
  case farm_contract::kind::max_service_time: {
    const double wanted = contract_.type == farm_contract::kind::min_throughput
                              ? 1.0 / contract_.value
                              : contract_.value;
    target = arrivals_known ? std::max(wanted, s.arrival_interval) : wanted;
    // Met if results come as fast as wanted, or as fast as they arrive.
    s.contract_met = !s.saturated || s.throughput * wanted >= 1.0 - options_.throughput_tolerance;
    break;
  }
  }
  s.events = mape_event::period;
  unmet_periods_ = s.contract_met ? 0 : unmet_periods_ + 1;
  s.violated = unmet_periods_ >= options_.violation_periods;
  if (s.violated) s.events |= mape_event::contract_violated;
  if (arrivals_known) {
    if (reference_arrival_ <= 0) reference_arrival_ = s.arrival_interval;
    if (s.arrival_interval < reference_arrival_ * (1 - options_.arrival_change))
      s.events |= mape_event::arrivals_faster;
    else if (s.arrival_interval > reference_arrival_ * (1 + options_.arrival_change))
      s.events |= mape_event::arrivals_slower;
  }
  // Knowledge: a shrink to n that violated the contract is not repeated
  // until the arrivals slow down (a violation after a growth is a backlog
  // being drained, and says nothing about n; nor does one long after the
  // shrink - a stalled process, say - so only violations within
  // hold_periods + violation_periods of the shrink count).
  if (s.events & mape_event::arrivals_slower) proven_floor_ = 0;
  if (s.violated && last_direction_ < 0 &&
      periods_since_change_ <= options_.hold_periods + options_.violation_periods)
    proven_floor_ = std::max(proven_floor_, std::min(s.workers + 1, s.max_workers));

  if (target > 0 && s.service_time > 0) {
    s.load = s.service_time / target;
    s.model_workers = workers_for(s.load * (1 + options_.headroom), s.max_workers);
    s.shrink_workers = std::max(
        proven_floor_, workers_for(s.load * (1 + options_.decrease_margin), s.max_workers));
  }
  s.previous_model_workers = last_model_workers_;
  last_model_workers_ = s.model_workers;
  s.previous_shrink_workers = last_shrink_workers_;
  last_shrink_workers_ = s.shrink_workers;
  s.last_direction = last_direction_;
  s.periods_since_change = periods_since_change_;
  for (const auto& sensor : user_sensors_) s.user.push_back(sensor.second());
  return s;
}

// ------------------------------------------------------------------ Plan
const eca_rule* farm_manager::plan(const mape_state& s) const {
  const eca_rule* chosen = nullptr;
  for (const eca_rule& r : rules_)
    if ((r.events & s.events) != 0 && (chosen == nullptr || r.priority > chosen->priority) &&
        r.condition(s))
      chosen = &r;
  return chosen;
}

// ------------------------------------------------------------------ Execute
std::string farm_manager::execute(const mape_plan& p) {
  std::string what;
  const unsigned before = farm_.active_workers();
  if (p.workers && *p.workers != before) {
    const unsigned after = farm_.set_active_workers(*p.workers);
    if (after != before) {
      const int direction = after > before ? 1 : -1;
      if (last_direction_ != 0 && direction != last_direction_) ++reversals_;
      last_direction_ = direction;
      periods_since_change_ = 0;
      what = "workers " + std::to_string(before) + " -> " + std::to_string(after);
    }
  }
  if (p.pinning) {
    farm_.repin(*p.pinning);
    what += what.empty() ? "repin" : "; repin";
  }
  if (p.custom) {
    p.custom();
    what += what.empty() ? "custom" : "; custom";
  }
  return what.empty() ? "nop" : what;
}

mape_record farm_manager::step() {
  const farm_sensors now = farm_.sensors();
  mape_record r;
  r.state = analyze(now);
  previous_ = now;
  ++periods_since_change_;
  if (const eca_rule* rule = plan(r.state)) {
    r.rule = rule->name;
    r.action = execute(rule->action(r.state));
    if (r.state.arrival_interval > 0 && !r.state.saturated)
      reference_arrival_ = r.state.arrival_interval; // the notes' "update T_A"
  }
  r.workers_after = farm_.active_workers();
  if (options_.trace != nullptr) write_csv_row(*options_.trace, r);
  const std::lock_guard<std::mutex> lock(trace_mutex_);
  trace_.push_back(r);
  return r;
}

std::vector<mape_record> farm_manager::trace() const {
  const std::lock_guard<std::mutex> lock(trace_mutex_);
  return trace_;
}

unsigned farm_manager::reversals() const {
  const std::lock_guard<std::mutex> lock(trace_mutex_);
  return reversals_;
}

// ------------------------------------------------------------------ trace
void farm_manager::write_csv_header(std::ostream& out) const {
  out << "time_s,period_s,arrival_interval_us,service_time_us,throughput,utilisation,"
         "emitter_blocked,queued,load,model_workers,contract_met,events,rule,action,workers";
  for (const auto& sensor : user_sensors_) out << ',' << sensor.first;
  out << '\n';
}

void farm_manager::write_csv_row(std::ostream& out, const mape_record& r) const {
  const mape_state& s = r.state;
  out << s.time << ',' << s.period << ',' << s.arrival_interval * 1e6 << ',' << s.service_time * 1e6
      << ',' << s.throughput << ',' << s.utilisation << ',' << s.emitter_blocked << ',' << s.queued
      << ',' << s.load << ',' << s.model_workers << ',' << (s.contract_met ? 1 : 0) << ','
      << s.events << ",\"" << r.rule << "\",\"" << r.action << "\"," << r.workers_after;
  for (double v : s.user) out << ',' << v;
  out << '\n';
  out.flush();
}

} // namespace lfcore
