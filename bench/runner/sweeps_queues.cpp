// bench/runner/sweeps_queues.cpp - lfcore's queues against the peers.
//
// Throughput counts items delivered (popped) per second: unbounded peers accept
// every push, so counting pushes would reward producers that run ahead.
// Producers and consumers back off (lfcore::backoff) when full / empty; every
// contender runs in the same harness with the same backoff.
#include "harness.hpp"
#include "peers.hpp"

#include <lfcore/backoff.hpp>
#include <lfcore/mpmc_queue.hpp>
#include <lfcore/spsc_queue.hpp>
#include <lfcore/unbounded_mpmc_queue.hpp>
#include <lfcore/unbounded_spsc_queue.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace runner {
namespace {

constexpr std::size_t ring = 1024; // bounded queues' capacity

// A contender is a queue type plus a per-thread handle with push(v) -> bool
// and pop(v&) -> bool. Most handles just forward to the queue.
template <class Q>
struct plain_handle {
  Q& q;
  bool push(std::uint64_t v) { return q.try_push(v); }
  bool pop(std::uint64_t& v) { return q.try_pop(v); }
};

// threads/2 producers and threads/2 consumers (at least one of each) move
// p.items items; the result is items per second from start to the last pop.
// Consumers count locally and publish their counts in batches (and whenever
// the queue looks empty), so the harness adds no contended line per item.
template <class Queue, class Handle, class Make>
double producers_consumers(const point& p, Make make_queue) {
  std::unique_ptr<Queue> q = make_queue();
  const int producers = std::max(1, p.threads / 2);
  const int consumers = std::max(1, p.threads - producers);
  const long long per_producer = p.items / producers, total = per_producer * producers;
  std::atomic<long long> delivered{0};
  const double seconds = run_to_completion(producers + consumers, [&](int t) {
    Handle h{*q};
    lfcore::backoff wait;
    if (t < producers) {
      for (std::uint64_t v = 1; v <= static_cast<std::uint64_t>(per_producer);) {
        if (h.push(v)) {
          ++v;
          wait.reset();
        } else {
          wait.pause();
        }
      }
      return;
    }
    long long unpublished = 0;
    for (std::uint64_t v;;) {
      if (h.pop(v)) {
        if (++unpublished == 1024) {
          delivered.fetch_add(std::exchange(unpublished, 0), std::memory_order_relaxed);
        }
        wait.reset();
        continue;
      }
      if (unpublished != 0)
        delivered.fetch_add(std::exchange(unpublished, 0), std::memory_order_relaxed);
      if (delivered.load(std::memory_order_relaxed) == total) return;
      wait.pause();
    }
  });
  return static_cast<double>(total) / seconds;
}

// One round trip: A pushes to q1, B pops it and pushes it to q2, A pops it.
template <class Queue, class Handle, class Make>
double ping_pong(const point& p, Make make_queue) {
  std::unique_ptr<Queue> there = make_queue(), back = make_queue();
  return timed({2, p.seconds, p.items}, [&](int t, const std::atomic<bool>& stop) {
    Handle out{t == 0 ? *there : *back}, in{t == 0 ? *back : *there};
    long long trips = 0;
    std::uint64_t v = 1;
    if (t == 0) {
      // The echo thread always answers, so waiting for the answer ends; only
      // then does A look at stop, and it ends the echo with a 0.
      while (!stop.load(std::memory_order_relaxed)) {
        while (!out.push(v)) {
        }
        while (!in.pop(v)) {
        }
        ++trips;
      }
      while (!out.push(0)) {
      }
    } else {
      for (;;) {
        while (!in.pop(v)) {
        }
        if (v == 0) break;
        while (!out.push(v)) {
        }
      }
    }
    return trips;
  });
}

// ---------------------------------------------------------------- contenders
using lf_spsc = lfcore::spsc_queue<std::uint64_t>;
using lf_mpmc = lfcore::mpmc_queue<std::uint64_t>;
using lf_uspsc = lfcore::unbounded_spsc_queue<std::uint64_t>;
using lf_umpmc = lfcore::unbounded_mpmc_queue<std::uint64_t>;

#if defined(LFCORE_HAVE_BOOST_LOCKFREE)
using boost_spsc = boost::lockfree::spsc_queue<std::uint64_t, boost::lockfree::capacity<ring>>;
struct boost_spsc_handle {
  boost_spsc& q;
  bool push(std::uint64_t v) { return q.push(v); }
  bool pop(std::uint64_t& v) { return q.pop(v); }
};
using boost_mpmc = boost::lockfree::queue<std::uint64_t>;
struct boost_mpmc_handle {
  boost_mpmc& q;
  bool push(std::uint64_t v) { return q.bounded_push(v); } // no allocation past the capacity
  bool pop(std::uint64_t& v) { return q.pop(v); }
};
#endif

#if defined(LFCORE_HAVE_MOODYCAMEL)
using rwq = moodycamel::ReaderWriterQueue<std::uint64_t>;
struct rwq_handle {
  rwq& q;
  bool push(std::uint64_t v) { return q.try_enqueue(v); } // no allocation past the capacity
  bool pop(std::uint64_t& v) { return q.try_dequeue(v); }
};
using mcq = moodycamel::ConcurrentQueue<std::uint64_t>;
struct mcq_handle {
  mcq& q;
  bool push(std::uint64_t v) { return q.enqueue(v); }
  bool pop(std::uint64_t& v) { return q.try_dequeue(v); }
};
struct mcq_token_handle {
  mcq& q;
  moodycamel::ProducerToken producer{q};
  moodycamel::ConsumerToken consumer{q};
  bool push(std::uint64_t v) { return q.enqueue(producer, v); }
  bool pop(std::uint64_t& v) { return q.try_dequeue(consumer, v); }
};
#endif

#if defined(LFCORE_HAVE_TBB)
using tbb_bounded = tbb::concurrent_bounded_queue<std::uint64_t>;
struct tbb_bounded_handle {
  tbb_bounded& q;
  bool push(std::uint64_t v) { return q.try_push(v); }
  bool pop(std::uint64_t& v) { return q.try_pop(v); }
};
using tbb_unbounded = tbb::concurrent_queue<std::uint64_t>;
struct tbb_unbounded_handle {
  tbb_unbounded& q;
  bool push(std::uint64_t v) {
    q.push(v);
    return true;
  }
  bool pop(std::uint64_t& v) { return q.try_pop(v); }
};
#endif

#if defined(LFCORE_HAVE_XENIUM)
// ramalhete_queue holds pointers (or trivially copyable types smaller than a
// pointer): items travel as fake pointers, never dereferenced, even and
// non-null as the queue requires (it uses the low bit and null as markers).
using xenium_ramalhete =
    xenium::ramalhete_queue<std::uint64_t*,
                            xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
struct xenium_ramalhete_handle {
  xenium_ramalhete& q;
  bool push(std::uint64_t v) {
    q.push(reinterpret_cast<std::uint64_t*>((v + 1) << 3));
    return true;
  }
  bool pop(std::uint64_t& v) {
    std::uint64_t* p;
    if (!q.try_pop(p)) return false;
    v = (reinterpret_cast<std::uintptr_t>(p) >> 3) - 1;
    return true;
  }
};
using xenium_msq =
    xenium::michael_scott_queue<std::uint64_t,
                                xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
struct xenium_msq_handle {
  xenium_msq& q;
  bool push(std::uint64_t v) {
    q.push(v);
    return true;
  }
  bool pop(std::uint64_t& v) { return q.try_pop(v); }
};
#endif

#if defined(LFCORE_HAVE_URCU)
/// liburcu's wait-free concurrent queue is intrusive: each item is a node the
/// user allocates (and frees after the pop), as its users do. Enqueue is
/// wait-free; cds_wfcq_dequeue_blocking serialises dequeuers on a mutex.
struct urcu_wfcq {
  struct node {
    cds_wfcq_node link;
    std::uint64_t value;
  };
  cds_wfcq_head head;
  cds_wfcq_tail tail;
  urcu_wfcq() { cds_wfcq_init(&head, &tail); }
  ~urcu_wfcq() {
    while (cds_wfcq_node* n = cds_wfcq_dequeue_blocking(&head, &tail))
      delete caa_container_of(n, node, link);
    cds_wfcq_destroy(&head, &tail);
  }
  // In C++ the head-pointer union needs an explicit conversion.
  cds_wfcq_head_ptr_t head_ptr() { return cds_wfcq_head_cast(&head); }
};
struct urcu_wfcq_handle {
  urcu_wfcq& q;
  bool push(std::uint64_t v) {
    auto* n = new urcu_wfcq::node;
    cds_wfcq_node_init(&n->link);
    n->value = v;
    cds_wfcq_enqueue(q.head_ptr(), &q.tail, &n->link);
    return true;
  }
  bool pop(std::uint64_t& v) {
    cds_wfcq_node* l = cds_wfcq_dequeue_blocking(&q.head, &q.tail);
    if (l == nullptr) return false;
    urcu_wfcq::node* n = caa_container_of(l, urcu_wfcq::node, link);
    v = n->value;
    delete n;
    return true;
  }
};
#endif

/// The floor: a std::deque behind a std::mutex, bounded like the rings.
struct mutex_deque {
  std::mutex m;
  std::deque<std::uint64_t> d;
};
struct mutex_deque_handle {
  mutex_deque& q;
  bool push(std::uint64_t v) {
    std::lock_guard lock(q.m);
    if (q.d.size() >= ring) return false;
    q.d.push_back(v);
    return true;
  }
  bool pop(std::uint64_t& v) {
    std::lock_guard lock(q.m);
    if (q.d.empty()) return false;
    v = q.d.front();
    q.d.pop_front();
    return true;
  }
};

template <class Q, class... Args>
auto maker(Args... args) {
  return [=] { return std::make_unique<Q>(args...); };
}

enum class shape { producers_consumers, ping_pong };

// A contender's run function for queue Q with per-thread handle H.
template <class Q, class H, class Make>
std::function<double(const point&)> run(shape how, Make make) {
  return [=](const point& p) {
    return how == shape::ping_pong ? ping_pong<Q, H>(p, make) : producers_consumers<Q, H>(p, make);
  };
}

std::vector<contender> spsc_contenders(bool round_trip) {
  const shape how = round_trip ? shape::ping_pong : shape::producers_consumers;
  std::vector<contender> c;
  c.push_back(
      {"lfcore spsc_queue", true, run<lf_spsc, plain_handle<lf_spsc>>(how, maker<lf_spsc>(ring))});
  c.push_back({"lfcore unbounded_spsc_queue", true,
               run<lf_uspsc, plain_handle<lf_uspsc>>(how, maker<lf_uspsc>(ring))});
#if defined(LFCORE_HAVE_BOOST_LOCKFREE)
  c.push_back({"boost::lockfree::spsc_queue", false,
               run<boost_spsc, boost_spsc_handle>(how, maker<boost_spsc>())});
#endif
#if defined(LFCORE_HAVE_MOODYCAMEL)
  c.push_back(
      {"moodycamel::ReaderWriterQueue", false, run<rwq, rwq_handle>(how, maker<rwq>(ring))});
#endif
  return c;
}

std::vector<contender> mpmc_contenders() {
  const shape how = shape::producers_consumers;
  std::vector<contender> c;
  c.push_back(
      {"lfcore mpmc_queue", true, run<lf_mpmc, plain_handle<lf_mpmc>>(how, maker<lf_mpmc>(ring))});
  c.push_back({"lfcore unbounded_mpmc_queue", true,
               run<lf_umpmc, plain_handle<lf_umpmc>>(how, maker<lf_umpmc>())});
#if defined(LFCORE_HAVE_XENIUM)
  c.push_back({"xenium::ramalhete_queue (unbounded)", false,
               run<xenium_ramalhete, xenium_ramalhete_handle>(how, maker<xenium_ramalhete>())});
  c.push_back({"xenium::michael_scott_queue (unbounded)", false,
               run<xenium_msq, xenium_msq_handle>(how, maker<xenium_msq>())});
#endif
#if defined(LFCORE_HAVE_URCU)
  c.push_back({"liburcu wfcqueue (unbounded)", false,
               run<urcu_wfcq, urcu_wfcq_handle>(how, maker<urcu_wfcq>())});
#endif
#if defined(LFCORE_HAVE_BOOST_LOCKFREE)
  c.push_back({"boost::lockfree::queue", false,
               run<boost_mpmc, boost_mpmc_handle>(how, maker<boost_mpmc>(ring))});
#endif
#if defined(LFCORE_HAVE_TBB)
  c.push_back(
      {"tbb::concurrent_bounded_queue", false, run<tbb_bounded, tbb_bounded_handle>(how, [] {
         auto q = std::make_unique<tbb_bounded>();
         q->set_capacity(ring);
         return q;
       })});
  c.push_back({"tbb::concurrent_queue (unbounded)", false,
               run<tbb_unbounded, tbb_unbounded_handle>(how, maker<tbb_unbounded>())});
#endif
#if defined(LFCORE_HAVE_MOODYCAMEL)
  c.push_back({"moodycamel (not FIFO, unbounded)", false, run<mcq, mcq_handle>(how, maker<mcq>())});
  c.push_back({"moodycamel tokens (not FIFO, unbounded)", false,
               run<mcq, mcq_token_handle>(how, maker<mcq>())});
#endif
  c.push_back({"std::mutex + std::deque", false,
               run<mutex_deque, mutex_deque_handle>(how, maker<mutex_deque>())});
  return c;
}

} // namespace

std::vector<sweep> queue_sweeps(const options& opt) {
  const std::vector<int> pairs = opt.quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 8};
  return {
      {"spsc",
       "SPSC queues: throughput",
       "one item delivered from the producer to the consumer (bounded at 1024 where the queue "
       "allows it)",
       spsc_contenders(false),
       {2}},
      {"spsc_round_trip",
       "SPSC queues: ping-pong round trips",
       "one round trip: A pushes to one queue, B pops and pushes to a second, A pops",
       spsc_contenders(true),
       {2}},
      {"mpmc", "MPMC queues: threads/2 producers, threads/2 consumers",
       "one item delivered; bounded queues hold 1024, the unbounded ones grow", mpmc_contenders(),
       pairs},
  };
}

} // namespace runner
