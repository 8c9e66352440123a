// lfcore/detail/stress.hpp - injected yields for stress builds.
//
// stress_point() marks a place where an interleaving matters (between
// publishing a hazard and re-reading its source, between taking a list and
// scanning it, ...). In a stress build (LFCORE_STRESS) it yields the processor
// one time in four, chosen by a per-thread xorshift, so that other threads run
// exactly there; in every other build it compiles to nothing.
#pragma once

#include "lfcore/config.hpp"

#include <cstdint>
#include <thread>

namespace lfcore::detail {

inline void stress_point() noexcept {
  if constexpr (stress_build) {
    static thread_local std::uint32_t state =
        0x9E3779B9u ^ static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&state));
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    if ((state & 3u) == 0) std::this_thread::yield();
  }
}

} // namespace lfcore::detail
