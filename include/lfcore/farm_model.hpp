// lfcore/farm_model.hpp - the farm's performance model (course notes 1.2).
//
// A farm with emitter time t_E, worker service time T_w and collector time
// t_C per task has service time (inter-departure time at regime)
//     T_S(nw) = max{ t_E, T_w / nw, t_C },
// completion time for m tasks T_C(m, nw) ~= m * T_S(nw) plus the time to fill
// the farm (t_E + T_w + t_C), speedup against the sequential program (m * T_w)
// T_w / T_S(nw) at regime, efficiency speedup / nw, and the fewest workers
// that keep up with inter-arrival time T_A: nw = ceil(T_w / T_A).
// All times in seconds.
#pragma once

#include "lfcore/farm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lfcore {

struct farm_model {
  double t_emitter = 0;   ///< t_E
  double t_worker = 0;    ///< T_w
  double t_collector = 0; ///< t_C

  double service_time(unsigned nw) const {
    return std::max({t_emitter, t_worker / nw, t_collector});
  }
  double completion_time(std::uint64_t tasks, unsigned nw) const {
    return static_cast<double>(tasks) * service_time(nw) + t_emitter + t_worker + t_collector;
  }
  double speedup(unsigned nw) const { return t_worker / service_time(nw); }
  double efficiency(unsigned nw) const { return speedup(nw) / nw; }
  /// ceil(T_w / T_A), at least 1.
  unsigned workers_for(double inter_arrival) const {
    if (!(inter_arrival > 0)) return 1;
    return static_cast<unsigned>(std::max(1.0, std::ceil(t_worker / inter_arrival - 1e-9)));
  }

  /// T_w as measured by a farm's sensors between two snapshots: busy time
  /// over tasks, summed over workers. t_E: the emitter's time per item that
  /// was not spent blocked on full channels (source included). t_C is not
  /// measured separately (0).
  static farm_model measured(const farm_sensors& before, const farm_sensors& after) {
    farm_model m;
    std::uint64_t tasks = 0, busy = 0;
    for (std::size_t i = 0; i < after.workers.size() && i < before.workers.size(); ++i) {
      tasks += after.workers[i].tasks - before.workers[i].tasks;
      busy += after.workers[i].busy_ns - before.workers[i].busy_ns;
    }
    if (tasks > 0) m.t_worker = static_cast<double>(busy) * 1e-9 / static_cast<double>(tasks);
    const std::uint64_t arrivals = after.arrivals - before.arrivals;
    if (arrivals > 0) {
      const double wall = std::chrono::duration<double>(after.time - before.time).count();
      const double blocked =
          static_cast<double>(after.emitter_blocked_ns - before.emitter_blocked_ns) * 1e-9;
      m.t_emitter = std::max(0.0, wall - blocked) / static_cast<double>(arrivals);
    }
    return m;
  }
};

} // namespace lfcore
