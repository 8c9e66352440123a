// lfcore/cache_padded.hpp - the one cache-line constant and cache_padded<T>.
//
// cache_line_size is 128 on x86-64 and AArch64, not 64: Intel's adjacent-line
// prefetcher pulls 64-byte lines in pairs, and Apple/Neoverse cores have
// 128-byte lines, so two hot variables 64 bytes apart still ping-pong. This is
// the value folly and crossbeam use for the same reason. Every padded object in
// lfcore uses this constant; no other alignas() number appears in the code.
#pragma once

#include <cstddef>
#include <utility>

namespace lfcore {

#if defined(__x86_64__) || defined(__aarch64__) || defined(__powerpc64__)
inline constexpr std::size_t cache_line_size = 128;
#else
inline constexpr std::size_t cache_line_size = 64;
#endif

/// A T alone on its own cache line(s): no false sharing with neighbours.
template <class T>
struct alignas(cache_line_size) cache_padded {
  T value;

  cache_padded() = default;
  template <class... Args>
  explicit cache_padded(std::in_place_t, Args&&... args) : value(std::forward<Args>(args)...) {}

  T& operator*() noexcept { return value; }
  const T& operator*() const noexcept { return value; }
  T* operator->() noexcept { return &value; }
  const T* operator->() const noexcept { return &value; }
};

static_assert(sizeof(cache_padded<char>) == cache_line_size);
static_assert(alignof(cache_padded<char>) == cache_line_size);

} // namespace lfcore
