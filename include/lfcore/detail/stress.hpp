// lfcore/detail/stress.hpp - injected yields and pauses for stress builds.
//
// stress_point() marks a place where an interleaving matters (between
// publishing a hazard and re-reading its source, between taking a list and
// scanning it, ...). In a stress build (LFCORE_STRESS) it yields the processor
// one time in four, chosen by a per-thread xorshift, so that other threads run
// exactly there; in every other build it compiles to nothing.
//
// stress_pause() marks a place where a thread holds on to a node that others
// may unlink and reclaim around it, but where they need longer than a yield
// to do so (removing a level of the hash trie takes a writer several
// searches). In a stress build it sleeps 100 us one time in 256, as if the
// thread were preempted there; in every other build it compiles to nothing.
#pragma once

#include "lfcore/config.hpp"

#include <chrono>
#include <cstdint>
#include <thread>

namespace lfcore::detail {

/// A per-thread xorshift32 step: the stress builds' coin.
inline std::uint32_t stress_coin() noexcept {
  static thread_local std::uint32_t state =
      0x9E3779B9u ^ static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(&state));
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

inline void stress_point() noexcept {
  if constexpr (stress_build) {
    if ((stress_coin() & 3u) == 0) std::this_thread::yield();
  }
}

inline void stress_pause() noexcept {
  if constexpr (stress_build) {
    if ((stress_coin() & 255u) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

} // namespace lfcore::detail
