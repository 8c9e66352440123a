// lfcore/backoff.hpp - bounded exponential backoff for contended retry loops.
//
// A failed CAS under contention is best retried after a short, growing pause:
// the pause instruction (x86) or yield hint (Arm) first, doubling up to
// spin_limit iterations, then std::this_thread::yield() so that on an
// oversubscribed machine the thread holding the contended line gets to run.
// Backoff never blocks: loops that use it keep their progress guarantee.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace lfcore {

/// One CPU-level spin hint: tells the core a spin-wait is in progress.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

class backoff {
public:
  /// Spins of 1, 2, 4, ... up to 2^spin_shift_limit pauses, then yields.
  static constexpr std::uint32_t spin_shift_limit = 6;

  void pause() noexcept {
    if (shift_ <= spin_shift_limit) {
      for (std::uint32_t i = 0, n = 1u << shift_; i < n; ++i) cpu_relax();
      ++shift_;
    } else {
      std::this_thread::yield();
    }
  }

  void reset() noexcept { shift_ = 0; }

  /// True once pause() has moved past spinning to yielding the processor.
  bool is_yielding() const noexcept { return shift_ > spin_shift_limit; }

private:
  std::uint32_t shift_ = 0;
};

} // namespace lfcore
