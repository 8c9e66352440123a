// lfcore/config.hpp - build-wide switches.
//
// LFCORE_STRESS (set by the CMake option LFCORE_STRESS_BUILD) shrinks every
// internal constant (scan thresholds, batch sizes, ring sizes, ...) and turns on
// injected yields, so that the rare paths of each algorithm - reclamation scans,
// hand-overs at thread exit, retries after a failed CAS - run constantly under
// test. Each component reads its constants from here, never from its own #ifdef.
#pragma once

#include <cstddef>

namespace lfcore {

#if defined(LFCORE_STRESS)
inline constexpr bool stress_build = true;
#else
inline constexpr bool stress_build = false;
#endif

#if defined(__SANITIZE_THREAD__)
#define LFCORE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LFCORE_TSAN 1
#endif
#endif

#if defined(LFCORE_TSAN)
inline constexpr bool tsan_build = true;
#else
inline constexpr bool tsan_build = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
#define LFCORE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LFCORE_ASAN 1
#endif
#endif

} // namespace lfcore
