// Replacement global operator new/delete for fork_test: on a thread that
// armed it, the next allocation of 1 KiB or more (a pool_allocator chunk,
// which its depot allocates under its lock) waits inside operator new until
// told to go. In a file of its own, so that the compiler never sees a
// delete paired with this new (-Wmismatched-new-delete).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>
#include <utility>

namespace {
thread_local std::atomic<bool>* armed_inside = nullptr;
thread_local std::atomic<bool>* armed_release = nullptr;
} // namespace

namespace test {
/// Arms the calling thread: its next large allocation sets inside, then
/// waits for release.
void stall_next_chunk(std::atomic<bool>& inside, std::atomic<bool>& release) noexcept {
  armed_inside = &inside;
  armed_release = &release;
}
} // namespace test

void* operator new(std::size_t n) {
  if (armed_inside != nullptr && n >= 1024) {
    std::atomic<bool>* release = armed_release;
    *std::exchange(armed_inside, nullptr) = true;
    while (!release->load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
