// lfcore/detail/bucket_summary.hpp - where hash_trie_map's bucket summaries
// live (bits 48-63 of a bucket's word), whether this target has them, and the
// check that an allocator's memory leaves those bits clear. What a summary
// means and how lookups use it: "Bucket summaries" in hash_trie_map.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace lfcore::detail {

// Bucket summaries (hash_trie_map's header) keep their bits in a pointer's
// bits from 48 up, which user addresses leave clear on x86-64 (47 bits) and
// AArch64 (48 at most; Linux hands out more only to an mmap that asks, as on
// x86-64 with 5-level paging: the kernel's arm64/memory.rst). Not under HWASan
// or with the macro defined: those tag pointers there (so does Arm MTE, whose
// tagged memory check_address refuses with an exception that names the
// macro). Other targets keep no summaries.
#if defined(__SANITIZE_HWADDRESS__)
#define LFCORE_DETAIL_HWASAN 1
#elif defined(__has_feature)
#if __has_feature(hwaddress_sanitizer)
#define LFCORE_DETAIL_HWASAN 1
#endif
#endif
#if defined(LFCORE_NO_BUCKET_SUMMARY) || defined(LFCORE_DETAIL_HWASAN)
inline constexpr bool bucket_summaries = false;
#elif defined(__x86_64__) || defined(__aarch64__)
inline constexpr bool bucket_summaries = true;
#else
inline constexpr bool bucket_summaries = false;
#endif

// A key's two summary bits, by its hash bits 16-23: table[(h >> 16) & 255].
// One load that hits L1, in place of two variable shifts and their index
// arithmetic: a lookup's instruction count bounds how many lookups the core
// overlaps while their cache misses are outstanding.
inline constexpr auto summary_bits_table = [] {
  std::array<std::uint64_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i)
    t[i] = std::uint64_t(1) << (48 + (i & 15)) | std::uint64_t(1) << (48 + (i >> 4));
  return t;
}();

/// Thrown by a hash_trie_map whose Allocator returned memory at or above
/// 2^48, where bucket summaries keep their bits (Linux gives user space such
/// addresses only to an mmap that asks for them, under 5-level paging or
/// 52-bit Arm addresses, and tags them there under Arm MTE). An allocation
/// failure to the caller: the call changed nothing.
struct address_too_high : std::bad_alloc {
  const char* what() const noexcept override {
    return "lfcore::hash_trie_map: the allocator returned an address at or above 2^48, "
           "where buckets keep their summaries; build with -DLFCORE_NO_BUCKET_SUMMARY "
           "(CMake: -DLFCORE_BUCKET_SUMMARIES=OFF)";
  }
};
// Frees p (from a, n elements) and throws if its address uses the summary bits.
template <class Alloc>
void check_address([[maybe_unused]] Alloc& a,
                   [[maybe_unused]] typename std::allocator_traits<Alloc>::pointer p,
                   [[maybe_unused]] std::size_t n) {
  if constexpr (bucket_summaries) {
    if ((reinterpret_cast<std::uintptr_t>(std::to_address(p)) >> 48) != 0) {
      std::allocator_traits<Alloc>::deallocate(a, p, n);
      throw address_too_high();
    }
  }
}

} // namespace lfcore::detail
