// tests/fuzz/failing_new.hpp - allocation failures on demand, for the fuzz
// targets of the C APIs (failing_new.cpp replaces the global operator new of
// the program it is linked into).
#pragma once

namespace fuzz {

/// Armed with k > 0, the k-th operator new from now throws std::bad_alloc;
/// the ones after it succeed again. 0: disarmed. One thread: a plain int.
extern int fail_new_at;

/// Arms fail_new_at for one scope, and disarms it when the scope ends.
class failing_new {
public:
  explicit failing_new(int k) noexcept { fail_new_at = k; }
  failing_new(const failing_new&) = delete;
  failing_new& operator=(const failing_new&) = delete;
  ~failing_new() { fail_new_at = 0; }
};

} // namespace fuzz
