// Element types for queue tests: live-instance counting and move-only values.
#pragma once

#include <atomic>
#include <memory>

namespace test {

/// Counts live instances, so tests can prove no element is leaked or destroyed twice.
struct tracked {
  static inline std::atomic<long> live{0};
  long value = 0;
  explicit tracked(long v = 0) : value(v) { live.fetch_add(1, std::memory_order_relaxed); }
  tracked(const tracked& o) : value(o.value) { live.fetch_add(1, std::memory_order_relaxed); }
  tracked(tracked&& o) noexcept : value(o.value) { live.fetch_add(1, std::memory_order_relaxed); }
  tracked& operator=(const tracked&) = default;
  tracked& operator=(tracked&&) noexcept = default;
  ~tracked() { live.fetch_sub(1, std::memory_order_relaxed); }
};

/// Move-only and not default-constructible.
struct move_only {
  std::unique_ptr<long> p;
  explicit move_only(long v) : p(std::make_unique<long>(v)) {}
  move_only(move_only&&) noexcept = default;
  move_only& operator=(move_only&&) noexcept = default;
};

} // namespace test
