// lfcore/detail/uninitialized.hpp - raw storage for one T, constructed and
// destroyed explicitly (the slots of lfcore's rings).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace lfcore::detail {

template <class T>
class uninitialized {
public:
  template <class... Args>
  void construct(Args&&... args) {
    ::new (static_cast<void*>(bytes_)) T(std::forward<Args>(args)...);
  }
  void destroy() noexcept { std::destroy_at(get()); }
  T* get() noexcept { return std::launder(reinterpret_cast<T*>(bytes_)); }

private:
  alignas(T) std::byte bytes_[sizeof(T)];
};

/// Checks a ring capacity: a power of two, at least `minimum`.
inline std::size_t checked_ring_capacity(std::size_t capacity, std::size_t minimum,
                                         const char* who) {
  if (capacity < minimum || (capacity & (capacity - 1)) != 0)
    throw std::invalid_argument(std::string(who) +
                                ": capacity must be a power of two and at least " +
                                std::to_string(minimum) + ", got " + std::to_string(capacity));
  return capacity;
}

} // namespace lfcore::detail
