// bench/runner/sweeps_hazard_pointer.cpp - hazard pointers, through the
// Michael-Scott queue each library builds on them.
#include "harness.hpp"
#include "michael_scott_queue.hpp"
#include "peers.hpp"

namespace runner {
namespace {

constexpr long queue_prefill = 1024;

/// Each thread repeats push(x); pop(): two operations per round, on a queue
/// prefilled so that pops mostly succeed (the classic pairs benchmark).
// Every thread attaches to libcds (a no-op without it): libcds requires it of
// its own contender, and doing it for all keeps the harness identical.
template <class Queue, class Push, class Pop>
double queue_pairs(const point& p, Push push, Pop pop) {
  Queue q;
  {
    peers::libcds_thread scope;
    for (long i = 0; i < queue_prefill; ++i) push(q, i);
  }
  return timed(p, [&](int t, const std::atomic<bool>& stop) {
    peers::libcds_thread scope;
    long long n = 0;
    long v = t;
    while (!stop.load(std::memory_order_relaxed)) {
      push(q, v);
      v = pop(q, v);
      n += 2;
    }
    return n;
  });
}

sweep hp_queue_sweep() {
  sweep s{"hp_queue",
          "Michael-Scott queue on hazard pointers",
          "one push or one pop; each thread alternates push and pop on a queue prefilled with 1024 "
          "items",
          {}};
  s.contenders.push_back({"lfcore", true, [](const point& p) {
                            using Q = example::michael_scott_queue<long>;
                            return queue_pairs<Q>(
                                p, [](Q& q, long v) { q.push(v); },
                                [](Q& q, long v) { return q.try_pop().value_or(v); });
                          }});
#if defined(LFCORE_HAVE_LIBCDS)
  s.contenders.push_back({"libcds MSQueue<HP>", false, [](const point& p) {
                            using Q = cds::container::MSQueue<cds::gc::HP, long>;
                            return queue_pairs<Q>(
                                p, [](Q& q, long v) { q.push(v); },
                                [](Q& q, long v) {
                                  long out = v;
                                  q.pop(out);
                                  return out;
                                });
                          }});
#endif
#if defined(LFCORE_HAVE_XENIUM)
  s.contenders.push_back(
      {"xenium michael_scott_queue<HP>", false, [](const point& p) {
         using Q = xenium::michael_scott_queue<
             long, xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
         return queue_pairs<Q>(
             p, [](Q& q, long v) { q.push(v); },
             [](Q& q, long v) {
               long out = v;
               (void)q.try_pop(out);
               return out;
             });
       }});
#endif
  return s;
}

} // namespace

std::vector<sweep> hazard_pointer_sweeps() {
  return {hp_queue_sweep()};
}

} // namespace runner
