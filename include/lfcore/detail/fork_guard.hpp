// lfcore/detail/fork_guard.hpp - the locks a fork() must not split.
//
// lfcore's structures are lock-free, and a lock-free structure survives a
// fork() as it survives threads that stop for good: the parent's other
// threads do not exist in the child, and whatever step one of them had
// taken last, the others (here the child) complete or pass it. A few cold
// paths take a mutex instead: a thread's exit (the thread registry's), a
// pool_allocator's refill from its depot, atom_table::collect. A fork while
// another thread holds one would leave it held in the child forever. So
// pthread_atfork handlers take every such mutex before fork() and release
// them after it, in the parent and in the child.
//
// Lock order, which the handlers follow and no other path reverses:
//   objects (atom tables) -> the registry -> pools' depots.
// collect() may reclaim into a pool (an object's lock, then a depot's) and
// create the first hazard-pointer domain (then the registry's); the
// registry's exit listeners take no other lock (hazard_pointer.cpp does not
// scan there), and a depot's holder only calls operator new.
//
// fork() therefore waits for a collect() or a refill in progress to finish.
#pragma once

#include <atomic>
#include <mutex>

namespace lfcore::detail::fork_guard {

/// A mutex that lives as long as the process, for the handlers' list.
struct lock_node {
  std::mutex* mutex;
  lock_node* next = nullptr;
};

/// The ranks of locks that live as long as the process, in lock order.
enum class rank { registry, depot };

/// Registers a lock that is never destroyed. Lock-free; installs the
/// handlers on first use (if pthread_atfork fails, there are none).
void add_forever(lock_node& node, rank r) noexcept;

/// Registers the lock of an object that may be destroyed (ranked first);
/// throws std::bad_alloc. remove() before destroying the mutex.
void add(std::mutex& m);
void remove(std::mutex& m) noexcept;

} // namespace lfcore::detail::fork_guard
