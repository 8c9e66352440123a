// Asymmetric fence: membarrier(2) when the kernel offers it. See
// include/lfcore/detail/asymmetric_fence.hpp.
#include "lfcore/detail/asymmetric_fence.hpp"

#include "lfcore/config.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace lfcore::detail::asymmetric_fence {
namespace {

#if defined(__linux__) && defined(__NR_membarrier)
long membarrier(int cmd) {
  return syscall(__NR_membarrier, cmd, 0, 0);
}

bool try_register_membarrier() {
  if (tsan_build) return false;
  if (const char* env = std::getenv("LFCORE_HP_FENCE"); env && std::strcmp(env, "symmetric") == 0)
    return false;
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}
#else
bool try_register_membarrier() {
  return false;
}
#endif

} // namespace

void init() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    // relaxed: call_once orders this store before every later init() caller,
    // and every reader reaches light() only through a domain that called init().
    membarrier_active.store(try_register_membarrier(), std::memory_order_relaxed);
  });
}

void heavy() noexcept {
#if defined(__linux__) && defined(__NR_membarrier)
  if (membarrier_active.load(std::memory_order_relaxed)) { // relaxed: written once before any use
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
      // Cannot happen after a successful registration; readers rely on it, so
      // carrying on would be unsafe.
      std::fputs("lfcore: membarrier(PRIVATE_EXPEDITED) failed after registration\n", stderr);
      std::terminate();
    }
    return;
  }
#endif
  full_fence();
}

} // namespace lfcore::detail::asymmetric_fence
