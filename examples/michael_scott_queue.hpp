// examples/michael_scott_queue.hpp - a user's Michael-Scott queue on lfcore's
// public hazard-pointer API (Michael & Scott, PODC 1996; HP variant from
// Michael, TPDS 2004). It is an example, not a library component: lfcore's own
// queues come with the queue issue. The benchmarks use it to compare lfcore's
// hazard pointers with libcds' and xenium's on the same algorithm.
//
// Invariants: head_ points to a dummy node; the values are in the nodes after
// it; tail_ is head_ or lags the last node by at most one step (every thread
// that sees the lag helps). A node is retired once, by the pop whose CAS moved
// head_ past it. Progress: push and try_pop are lock-free.
#pragma once

#include <lfcore/cache_padded.hpp>
#include <lfcore/hazard_pointer.hpp>

#include <atomic>
#include <optional>
#include <utility>

namespace example {

template <class T>
class michael_scott_queue {
  struct node : lfcore::hazard_pointer_obj_base<node> {
    std::atomic<node*> next{nullptr};
    std::optional<T> value; // empty in the dummy
  };

public:
  michael_scott_queue() {
    node* dummy = new node;
    head_->store(dummy, std::memory_order_relaxed);
    tail_->store(dummy, std::memory_order_relaxed);
  }
  ~michael_scott_queue() { // no concurrent users by now
    for (node* n = head_->load(std::memory_order_relaxed); n != nullptr;)
      delete std::exchange(n, n->next.load(std::memory_order_relaxed));
  }
  michael_scott_queue(const michael_scott_queue&) = delete;
  michael_scott_queue& operator=(const michael_scott_queue&) = delete;

  void push(T value) {
    node* fresh = new node;
    fresh->value.emplace(std::move(value));
    lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
    for (;;) {
      node* tail = hp.protect(*tail_);
      node* next = tail->next.load(std::memory_order_acquire); // acquire: pairs with [msq.link]
      if (next != nullptr) {                                   // tail lags: help, then retry
        tail_->compare_exchange_weak(tail, next, std::memory_order_release,
                                     std::memory_order_relaxed);
        continue;
      }
      node* expected = nullptr;
      // [msq.link] release: publishes fresh->value; linearizes here.
      if (tail->next.compare_exchange_strong(expected, fresh, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        tail_->compare_exchange_strong(tail, fresh, std::memory_order_release,
                                       std::memory_order_relaxed);
        return;
      }
    }
  }

  std::optional<T> try_pop() {
    lfcore::hazard_pointer hp_head = lfcore::make_hazard_pointer();
    lfcore::hazard_pointer hp_next = lfcore::make_hazard_pointer();
    for (;;) {
      node* head = hp_head.protect(*head_);
      node* next = hp_next.protect(head->next);
      // next is safe only if head is still the head: then next is reachable.
      if (head != head_->load(std::memory_order_acquire)) continue;
      if (next == nullptr) return std::nullopt; // linearizes at the load of head->next
      node* tail = tail_->load(std::memory_order_acquire);
      if (head == tail) { // tail lags behind a linked node: help
        tail_->compare_exchange_weak(tail, next, std::memory_order_release,
                                     std::memory_order_relaxed);
        continue;
      }
      // acq_rel: the winner takes next's value; linearizes here.
      if (head_->compare_exchange_strong(head, next, std::memory_order_acq_rel,
                                         std::memory_order_relaxed)) {
        std::optional<T> result(std::move(next->value));
        hp_next.reset_protection();
        head->retire();
        return result;
      }
    }
  }

private:
  lfcore::cache_padded<std::atomic<node*>> head_;
  lfcore::cache_padded<std::atomic<node*>> tail_;
};

} // namespace example
