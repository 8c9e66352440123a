// lfcore/detail/fence.hpp - the full (seq_cst) fence, and TSan's blind spot.
//
// ThreadSanitizer does not model standalone fences, and GCC refuses
// atomic_thread_fence under -fsanitize=thread (-Wtsan). In TSan builds the
// fence becomes a seq_cst read-modify-write of a thread-private atomic: on
// x86-64 and AArch64 that is still a full barrier in hardware, and because no
// other thread touches the variable it adds no happens-before edge that could
// hide a real race from TSan. Every fence in lfcore goes through here.
// What TSan cannot check, the fence pairings of the eventcount and of hazard
// pointers, Spin checks on models with x86-TSO store buffers and under
// release/acquire with seq_cst fences (tests/model/).
#pragma once

#include "lfcore/config.hpp"

#include <atomic>

namespace lfcore::detail {

/// Whether every atomic read-modify-write is a full barrier in hardware, as
/// x86's locked instructions are; C++ promises it nowhere.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool rmw_is_full_fence = true;
#else
inline constexpr bool rmw_is_full_fence = false;
#endif

inline void full_fence() noexcept {
  if constexpr (tsan_build) {
    static thread_local std::atomic<int> private_word{0};
    private_word.fetch_add(0, std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

} // namespace lfcore::detail
