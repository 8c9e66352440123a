// lfcore/detail/asymmetric_fence.hpp - the one place that knows about
// membarrier(2), and TSan's blind spot for fences.
//
// Hazard pointers need a store-load fence on the reader side (publish the
// hazard, then re-read the source) that pairs with one on the reclaimer side
// (unlink, then read the hazards). Readers run far more often than
// reclaimers, so, as folly does, lfcore makes the pair asymmetric:
//
//   light(): reader side. With membarrier, a compiler-only barrier; otherwise
//            a seq_cst fence (mfence / dmb ish).
//   heavy(): reclaimer side. With membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
//            which runs a full memory barrier on every CPU currently running a
//            thread of this process, so every light() that precedes it in real
//            time behaves as if it had been a full fence. Otherwise a seq_cst
//            fence.
//
// Both modes are model-checked on x86-TSO store buffers against an unlink and
// scan (tests/model/hazard_pointer.pml): no node is read after it was freed,
// and dropping either side's fence (or protect's validation) breaks that.
// The mode is chosen once, before any hazard pointer exists (init() runs in
// every domain's constructor), and never changes. Setting the environment
// variable LFCORE_HP_FENCE=symmetric forces the portable mode; tests run both.
// Under ThreadSanitizer the portable mode is forced (TSan models neither
// membarrier nor fences; see detail/fence.hpp), and lfcore's hazard-pointer protocol does
// not rely on TSan seeing them (reclaim is ordered after a reader's last access
// by the release store that resets its hazard pointer).
#pragma once

#include "lfcore/detail/fence.hpp"

#include <atomic>

namespace lfcore::detail::asymmetric_fence {

/// True when light() is only a compiler barrier. Written once by init().
inline std::atomic<bool> membarrier_active{false};

/// Chooses the mode; idempotent and thread-safe.
void init() noexcept;

// Always inlined: it is the whole reader-side cost of a hazard pointer, and
// GCC 12 turned it into a call inside hash_trie_map's lookup once that grew
// (compression): a call per leaf visited cost lookups that miss 13-18%
// (interleaved A/B of the scalability runner, 1 and 2 threads).
[[gnu::always_inline]] inline void light() noexcept {
  if (membarrier_active.load(std::memory_order_relaxed)) // relaxed: written once before any use
    std::atomic_signal_fence(std::memory_order_seq_cst);
  else
    full_fence();
}

void heavy() noexcept;

} // namespace lfcore::detail::asymmetric_fence
