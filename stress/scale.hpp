// stress/scale.hpp - how much work a stress test does.
#pragma once

#include <algorithm>
#include <cstdlib>

#include <lfcore/config.hpp>

namespace lfcore_stress {

/// n x LFCORE_STRESS_SCALE (default 1; a soak sets e.g. 10), divided by
/// `stress_divisor` in stress builds (sanitizers and injected yields make
/// them far slower), and at least `at_least`.
inline long scaled(long n, long stress_divisor, long at_least = 1) {
  long scale = 1;
  if (const char* s = std::getenv("LFCORE_STRESS_SCALE")) scale = std::max(1L, std::atol(s));
  if constexpr (lfcore::stress_build) n /= stress_divisor;
  return std::max(at_least, n * scale);
}

} // namespace lfcore_stress
