// lfcore/marked_ptr.hpp - a pointer with a few low bits used as marks.
//
// Lock-free linked structures mark a node "logically deleted" (Harris 2001) or
// tag a bucket "points to a hash node, not a leaf" (LFHT) in the low bits that
// alignment leaves zero. marked_ptr keeps that bit arithmetic in one place and
// checks the alignment at compile time: a marked_ptr<T, N> only compiles when
// every T is aligned to at least 2^N bytes.
//
// It is a plain value type (trivially copyable, one word), so
// std::atomic<marked_ptr<T, N>> is lock-free and compares by bits.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace lfcore {

template <class T, unsigned MarkBits = 1>
class marked_ptr {
  static_assert(MarkBits >= 1 && MarkBits <= 3, "marked_ptr: 1 to 3 mark bits");
  static_assert(std::is_void_v<T> || alignof(T) >= (std::size_t{1} << MarkBits),
                "marked_ptr: T's alignment leaves fewer free low bits than MarkBits");

public:
  static constexpr std::uintptr_t mark_mask = (std::uintptr_t{1} << MarkBits) - 1;

  constexpr marked_ptr() noexcept = default;
  marked_ptr(T* p, std::uintptr_t mark = 0) noexcept
      : bits_(reinterpret_cast<std::uintptr_t>(p) | mark) {
    assert((reinterpret_cast<std::uintptr_t>(p) & mark_mask) == 0 && "misaligned pointer");
    assert((mark & ~mark_mask) == 0 && "mark does not fit");
  }

  T* get() const noexcept { return reinterpret_cast<T*>(bits_ & ~mark_mask); }
  std::uintptr_t mark() const noexcept { return bits_ & mark_mask; }
  bool is_marked(std::uintptr_t m) const noexcept { return (bits_ & m) != 0; }

  marked_ptr with_mark(std::uintptr_t m) const noexcept {
    return from_bits((bits_ & ~mark_mask) | m);
  }
  marked_ptr without_mark() const noexcept { return from_bits(bits_ & ~mark_mask); }

  T* operator->() const noexcept { return get(); }
  explicit operator bool() const noexcept { return get() != nullptr; }

  std::uintptr_t bits() const noexcept { return bits_; }
  static marked_ptr from_bits(std::uintptr_t b) noexcept {
    marked_ptr r;
    r.bits_ = b;
    return r;
  }

  friend bool operator==(marked_ptr a, marked_ptr b) noexcept { return a.bits_ == b.bits_; }

private:
  std::uintptr_t bits_ = 0;
};

static_assert(std::is_trivially_copyable_v<marked_ptr<std::uint64_t, 3>>);
static_assert(sizeof(marked_ptr<std::uint64_t, 3>) == sizeof(void*));

} // namespace lfcore
