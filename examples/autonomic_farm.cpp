// examples/autonomic_farm.cpp - a stream whose arrival rate doubles half-way,
// served by a farm that an autonomic manager resizes (keep up with the
// fewest workers), with a user sensor in the trace and a user rule that
// logs every violation. Prints the CSV trace and a summary; exits non-zero if
// a task went missing or the farm ended with more workers than it may need.
#include <lfcore/farm.hpp>
#include <lfcore/farm_manager.hpp>
#include <lfcore/farm_model.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

int main() {
  using namespace std::chrono_literals;
  using clock = std::chrono::steady_clock;

  // Up to 8 workers; each task waits 2 ms (say, for a remote service).
  lfcore::farm_options options;
  options.workers = 8;
  lfcore::farm<int> farm(
      [](int x) {
        std::this_thread::sleep_for(2ms);
        return x;
      },
      options);
  farm.set_active_workers(1);

  lfcore::manager_options mo;
  mo.trace = &std::cout;
  lfcore::farm_manager manager(farm, lfcore::farm_contract::keep_up(), mo);
  manager.add_sensor("queued_per_worker", [&farm] {
    const lfcore::farm_sensors s = farm.sensors();
    std::uint64_t q = 0;
    for (const auto& w : s.workers) q += w.queued;
    return static_cast<double>(q) / s.active_workers;
  });
  int violations = 0;
  manager.add_rule({"count violations (user rule)", 60, lfcore::mape_event::contract_violated,
                    [](const lfcore::mape_state& s) { return s.workers == s.max_workers; },
                    [&violations](const lfcore::mape_state&) {
                      ++violations; // at the maximum already: nothing to add
                      return lfcore::mape_plan{};
                    }});

  // Arrivals every 1 ms for 1.5 s, then every 0.5 ms for 1.5 s.
  const clock::time_point start = clock::now();
  clock::time_point next = start;
  int sent = 0;
  long received = 0;
  const lfcore::farm_sensors before = farm.sensors();
  manager.start();
  farm.run_and_wait(
      [&]() -> std::optional<int> {
        const auto t = next - start;
        if (t > 3s) return std::nullopt;
        std::this_thread::sleep_until(next);
        next += t < 1500ms ? 1000us : 500us;
        return sent++;
      },
      [&](int) { ++received; });
  manager.stop();

  const lfcore::farm_model model = lfcore::farm_model::measured(before, farm.sensors());
  const unsigned needed = model.workers_for(500e-6);
  std::printf("\n%d tasks sent, %ld results; T_w %.0f us; the model needs %u workers for "
              "arrivals 500 us apart; the farm ended with %u; %u reversals; %d violations at the "
              "maximum\n",
              sent, received, model.t_worker * 1e6, needed, farm.active_workers(),
              manager.reversals(), violations);
  return received == sent && farm.active_workers() <= needed + 2 ? 0 : 1;
}
