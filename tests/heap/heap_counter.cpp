// Replacement global operator new/delete that count live bytes. Every block
// carries a header (one alignment unit) holding its size. Every form is
// replaced, not only the four that libstdc++'s array, nothrow and sized forms
// call: AddressSanitizer's runtime defines each form itself, so a form left
// out here would allocate without the header that our delete expects (as
// libFuzzer's new (std::nothrow) did, reading its corpus directories).
#include "heap_counter.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<long long> live{0};
thread_local int allocations_to_failure = 0; // 0: none armed
thread_local bool failed = false;

std::size_t header_size(std::size_t align) noexcept {
  return std::max(align, alignof(std::max_align_t));
}

void* allocate(std::size_t n, std::size_t align) {
  if (allocations_to_failure > 0 && --allocations_to_failure == 0) {
    failed = true;
    throw std::bad_alloc();
  }
  const std::size_t header = header_size(align);
  const std::size_t total = (header + n + header - 1) / header * header;
  void* raw = std::aligned_alloc(header, total);
  if (raw == nullptr) throw std::bad_alloc();
  *static_cast<std::size_t*>(raw) = n;
  live.fetch_add(static_cast<long long>(n), std::memory_order_relaxed);
  return static_cast<std::byte*>(raw) + header;
}

void deallocate(void* p, std::size_t align) noexcept {
  if (p == nullptr) return;
  void* raw = static_cast<std::byte*>(p) - header_size(align);
  live.fetch_sub(static_cast<long long>(*static_cast<std::size_t*>(raw)),
                 std::memory_order_relaxed);
  std::free(raw);
}

} // namespace

long long test::live_heap_bytes() noexcept {
  return live.load(std::memory_order_relaxed);
}

void test::fail_allocation_in(int n) noexcept {
  allocations_to_failure = n;
  if (n > 0) failed = false;
}

bool test::allocation_failed() noexcept {
  return failed;
}

namespace {

constexpr std::size_t default_align = alignof(std::max_align_t);

void* allocate_or_null(std::size_t n, std::size_t align) noexcept {
  try {
    return allocate(n, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

} // namespace

void* operator new(std::size_t n) {
  return allocate(n, default_align);
}
void* operator new[](std::size_t n) {
  return allocate(n, default_align);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, default_align);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, default_align);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept {
  deallocate(p, default_align);
}
void operator delete[](void* p) noexcept {
  deallocate(p, default_align);
}
void operator delete(void* p, std::size_t) noexcept {
  deallocate(p, default_align);
}
void operator delete[](void* p, std::size_t) noexcept {
  deallocate(p, default_align);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  deallocate(p, default_align);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  deallocate(p, default_align);
}
void operator delete(void* p, std::align_val_t a) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::align_val_t a) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
void operator delete(void* p, std::size_t, std::align_val_t a) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::size_t, std::align_val_t a) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  deallocate(p, static_cast<std::size_t>(a));
}
