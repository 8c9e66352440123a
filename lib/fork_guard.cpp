// The pthread_atfork handlers. See include/lfcore/detail/fork_guard.hpp.
#include "lfcore/detail/fork_guard.hpp"

#include <algorithm>
#include <vector>

#include <pthread.h>

namespace lfcore::detail::fork_guard {
namespace {

// Immortal: threads may fork, exit or free pool blocks during static destruction.
struct lists {
  std::mutex objects_mutex; // guards objects; held from prepare to after_fork
  std::vector<std::mutex*> objects;
  static constexpr int ranks = 2;           // rank::registry, rank::depot
  std::atomic<lock_node*> forever[ranks]{}; // per rank; lock-free stacks, never popped
  // The stacks' heads as prepare saw them, so that after_fork unlocks exactly
  // what it locked although a thread may push a node meanwhile. Written and
  // read under objects_mutex.
  lock_node* locked[ranks]{};
};

lists& the_lists() {
  static lists* l = new lists; // never destroyed, on purpose
  return *l;
}

void prepare() noexcept {
  lists& l = the_lists();
  l.objects_mutex.lock();
  for (std::mutex* m : l.objects) m->lock();
  for (int r = 0; r < lists::ranks; ++r) {
    // acquire: pairs with add_forever's release, so the node's mutex pointer is seen.
    l.locked[r] = l.forever[r].load(std::memory_order_acquire);
    for (lock_node* n = l.locked[r]; n != nullptr; n = n->next) n->mutex->lock();
  }
}

// In the parent and in the child, whose only thread is the one that forked:
// the owner of every mutex prepare took.
void after_fork() noexcept {
  lists& l = the_lists();
  for (int r = lists::ranks - 1; r >= 0; --r)
    for (lock_node* n = l.locked[r]; n != nullptr; n = n->next) n->mutex->unlock();
  for (std::mutex* m : l.objects) m->unlock();
  l.objects_mutex.unlock();
}

void install() noexcept {
  static const bool installed = pthread_atfork(&prepare, &after_fork, &after_fork) == 0;
  (void)installed;
}

} // namespace

void add_forever(lock_node& node, rank r) noexcept {
  install();
  std::atomic<lock_node*>& head = the_lists().forever[static_cast<int>(r)];
  lock_node* old = head.load(std::memory_order_relaxed);
  do {
    node.next = old;
    // release: prepare, which acquires the head, sees node.mutex and node.next.
  } while (!head.compare_exchange_weak(old, &node, std::memory_order_release,
                                       std::memory_order_relaxed));
}

void add(std::mutex& m) {
  install();
  lists& l = the_lists();
  std::lock_guard lock(l.objects_mutex);
  l.objects.push_back(&m);
}

void remove(std::mutex& m) noexcept {
  lists& l = the_lists();
  std::lock_guard lock(l.objects_mutex);
  l.objects.erase(std::remove(l.objects.begin(), l.objects.end(), &m), l.objects.end());
}

} // namespace lfcore::detail::fork_guard
