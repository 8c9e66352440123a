// bench/runner/allocator.cpp - which malloc the runner runs on, and how many
// bytes it has handed out: the memory tables on glibc and on jemalloc.
#include "runner.hpp"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <stdexcept>

namespace runner {

namespace {

// jemalloc's control interface; looked up at run time, so the runner needs no
// jemalloc headers and works with it linked or LD_PRELOADed.
using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

mallctl_fn jemalloc_mallctl() noexcept {
  return reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
}

double jemalloc_allocated(mallctl_fn mallctl) {
  // The calling thread's cache holds freed regions that jemalloc's statistics
  // still count as allocated: hand them back first. Statistics are a snapshot
  // taken when the epoch advances.
  std::uint64_t epoch = 1;
  std::size_t epoch_size = sizeof epoch, allocated = 0, allocated_size = sizeof allocated;
  if (mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0) != 0 ||
      mallctl("epoch", &epoch, &epoch_size, &epoch, epoch_size) != 0 ||
      mallctl("stats.allocated", &allocated, &allocated_size, nullptr, 0) != 0)
    throw std::runtime_error("heap_bytes_in_use: jemalloc's stats.allocated is not readable "
                             "(jemalloc built without --enable-stats?)");
  return static_cast<double>(allocated);
}

} // namespace

// jemalloc (linked, -DLFCORE_WITH_JEMALLOC=ON, or LD_PRELOADed) exports mallctl.
const char* allocator_name() noexcept {
  return jemalloc_mallctl() != nullptr ? "jemalloc" : "glibc";
}

const char* heap_measure() noexcept {
  return jemalloc_mallctl() != nullptr ? "jemalloc stats.allocated" : "glibc mallinfo2, main arena";
}

double heap_bytes_in_use() {
  if (const mallctl_fn mallctl = jemalloc_mallctl()) return jemalloc_allocated(mallctl);
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
}

} // namespace runner
