// tests/fuzz/failing_new.hpp - allocation failures on demand, for the fuzz
// targets of the C APIs: the heap counter's fault injection
// (tests/heap/heap_counter.cpp, which replaces the program's operator new).
#pragma once

#include "../heap/heap_counter.hpp"

namespace fuzz {

/// Makes the k-th operator new from now throw std::bad_alloc (k = 0: none),
/// and disarms that when the scope ends.
class failing_new {
public:
  explicit failing_new(int k) noexcept { test::fail_allocation_in(k); }
  failing_new(const failing_new&) = delete;
  failing_new& operator=(const failing_new&) = delete;
  ~failing_new() { test::fail_allocation_in(0); }
};

} // namespace fuzz
