// tests/placed_hash.hpp - a Hash that lets a test choose where keys land.
#pragma once

#include <lfcore/hash_trie_map.hpp>

#include <cstddef>
#include <cstdint>

namespace test {

// MurmurHash3's finalizer undone (the multipliers' inverses mod 2^64): with
// it as Hash, the mixed hash the trie consumes is the key itself, so a test
// can place keys in the trie.
constexpr std::uint64_t unmix_hash(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0x9cb4b2f8129337dbULL;
  h ^= h >> 33;
  h *= 0x4f74430c22a54005ULL;
  h ^= h >> 33;
  return h;
}
static_assert(lfcore::detail::mix_hash(unmix_hash(0x0123456789abcdefULL)) == 0x0123456789abcdefULL);

struct placed_hash {
  constexpr std::size_t operator()(std::uint64_t h) const noexcept { return unmix_hash(h); }
};

} // namespace test
