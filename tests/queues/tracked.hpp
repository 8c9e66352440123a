// Element types for queue tests: live-instance counting and move-only values.
#pragma once

#include <atomic>
#include <memory>
#include <stdexcept>

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

/// Copies throw when the value is negative; moves never throw.
struct throws_on_copy {
  int v;
  explicit throws_on_copy(int x) : v(x) {}
  throws_on_copy(const throws_on_copy& o) : v(o.v) {
    if (o.v < 0) throw std::runtime_error("copy");
  }
  throws_on_copy(throws_on_copy&&) noexcept = default;
  throws_on_copy& operator=(throws_on_copy&&) noexcept = default;
};

} // namespace test
