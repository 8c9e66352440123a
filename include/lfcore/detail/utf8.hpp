// lfcore/detail/utf8.hpp - UTF-8 validation (RFC 3629).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lfcore::detail {

/// The offset of the first byte that does not start a well-formed UTF-8
/// sequence, or npos if all of s is well formed. Rejected, as RFC 3629 and
/// Unicode's Table 3-7 say: stray continuation bytes, truncated sequences,
/// overlong forms (C0, C1, E0 80..9F, F0 80..8F), UTF-16 surrogates
/// (ED A0..BF) and code points above U+10FFFF (F4 90.., F5..FF).
constexpr std::size_t utf8_error_offset(std::string_view s) noexcept {
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const auto b = static_cast<std::uint8_t>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint8_t lo = 0x80, hi = 0xBF; // the allowed range of the second byte
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0)
        lo = 0xA0; // overlong
      else if (b == 0xED)
        hi = 0x9F; // surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0)
        lo = 0x90; // overlong
      else if (b == 0xF4)
        hi = 0x8F; // above U+10FFFF
    } else {
      return i; // continuation byte, C0/C1 or F5..FF
    }
    if (i + len > n) return i;
    const auto b1 = static_cast<std::uint8_t>(s[i + 1]);
    if (b1 < lo || b1 > hi) return i;
    for (std::size_t k = 2; k < len; ++k) {
      const auto bk = static_cast<std::uint8_t>(s[i + k]);
      if (bk < 0x80 || bk > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

} // namespace lfcore::detail
