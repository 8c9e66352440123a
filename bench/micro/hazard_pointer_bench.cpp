// Micro-costs of hazard pointers, lfcore beside libcds (cds::gc::HP) and xenium
// (reclamation::hazard_pointer<>), in one binary and one run:
//   protect_reset   - protect a pointer read from an atomic, then clear it
//   retire_reclaim  - allocate, retire and (amortised) reclaim one object
//   queue_pairs     - push then pop on a shared Michael-Scott queue, 1-8 threads
//                     (the scalability runner measures the same with interleaving)
// Each contender allocates its objects with plain new/delete so the
// allocator's share is the same for all.
#include "michael_scott_queue.hpp"
#include "peers.hpp"

#include <lfcore/hazard_pointer.hpp>

#include <benchmark/benchmark.h>

#include <atomic>

namespace {

struct lf_node : lfcore::hazard_pointer_obj_base<lf_node> {
  long payload = 0;
};

void lfcore_protect_reset(benchmark::State& state) {
  static lf_node target;
  static std::atomic<lf_node*> src{&target};
  lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
  for (auto _ : state) {
    benchmark::DoNotOptimize(hp.protect(src));
    hp.reset_protection();
  }
}
BENCHMARK(lfcore_protect_reset)->Threads(1)->Threads(2);

void lfcore_retire_reclaim(benchmark::State& state) {
  lfcore::hazard_pointer hp = lfcore::make_hazard_pointer(); // a live hazard, as in real use
  for (auto _ : state) (new lf_node)->retire();
  lfcore::hazard_pointer_default_domain().reclaim();
}
BENCHMARK(lfcore_retire_reclaim)->Threads(1)->Threads(2);

void lfcore_make_hazard_pointer(benchmark::State& state) {
  for (auto _ : state) {
    lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
    benchmark::DoNotOptimize(hp);
  }
}
BENCHMARK(lfcore_make_hazard_pointer);

#if defined(LFCORE_HAVE_LIBCDS)
struct cds_node {
  long payload = 0;
};
struct cds_delete {
  void operator()(cds_node* p) const { delete p; }
};

void libcds_protect_reset(benchmark::State& state) {
  peers::libcds_thread attach;
  static cds_node target;
  static std::atomic<cds_node*> src{&target};
  cds::gc::HP::Guard guard;
  for (auto _ : state) {
    benchmark::DoNotOptimize(guard.protect(src));
    guard.clear();
  }
}
BENCHMARK(libcds_protect_reset)->Threads(1)->Threads(2);

void libcds_retire_reclaim(benchmark::State& state) {
  peers::libcds_thread attach;
  cds::gc::HP::Guard guard;
  for (auto _ : state) cds::gc::HP::retire<cds_delete>(new cds_node);
}
BENCHMARK(libcds_retire_reclaim)->Threads(1)->Threads(2);
#endif

#if defined(LFCORE_HAVE_XENIUM)
using xenium_hp = xenium::reclamation::hazard_pointer<>;
struct xen_node : xenium_hp::enable_concurrent_ptr<xen_node> {
  long payload = 0;
};
using xen_ptr = xenium_hp::concurrent_ptr<xen_node>;

void xenium_protect_reset(benchmark::State& state) {
  static xen_node* target = new xen_node;
  static xen_ptr src{xen_ptr::marked_ptr(target)};
  xen_ptr::guard_ptr guard;
  for (auto _ : state) {
    guard.acquire(src, std::memory_order_acquire);
    benchmark::DoNotOptimize(guard.get());
    guard.reset();
  }
}
BENCHMARK(xenium_protect_reset)->Threads(1)->Threads(2);

void xenium_retire_reclaim(benchmark::State& state) {
  // xenium retires through a guard: guard the fresh node, then reclaim().
  for (auto _ : state) {
    xen_ptr::guard_ptr guard(xen_ptr::marked_ptr(new xen_node));
    guard.reclaim();
  }
}
BENCHMARK(xenium_retire_reclaim)->Threads(1)->Threads(2);
#endif

// Push then pop on one queue shared by all threads. Google Benchmark runs a
// barrier before and after every thread's loop, so thread 0 may build the
// queue before it and destroy it after it.
template <class Queue, class Push, class Pop>
void queue_pairs(benchmark::State& state, Push push, Pop pop) {
  static Queue* queue = nullptr;
  peers::libcds_thread attach;
  if (state.thread_index() == 0) {
    queue = new Queue;
    for (long i = 0; i < 1024; ++i) push(*queue, i);
  }
  long v = state.thread_index();
  for (auto _ : state) {
    push(*queue, v);
    v = pop(*queue, v);
  }
  state.SetItemsProcessed(2 * state.iterations());
  if (state.thread_index() == 0) delete std::exchange(queue, nullptr);
}

void lfcore_queue_pairs(benchmark::State& state) {
  using Q = example::michael_scott_queue<long>;
  queue_pairs<Q>(
      state, [](Q& q, long v) { q.push(v); }, [](Q& q, long v) { return q.try_pop().value_or(v); });
}
BENCHMARK(lfcore_queue_pairs)->ThreadRange(1, 8)->UseRealTime();

#if defined(LFCORE_HAVE_LIBCDS)
void libcds_queue_pairs(benchmark::State& state) {
  using Q = cds::container::MSQueue<cds::gc::HP, long>;
  queue_pairs<Q>(
      state, [](Q& q, long v) { q.push(v); },
      [](Q& q, long v) {
        long out = v;
        q.pop(out);
        return out;
      });
}
BENCHMARK(libcds_queue_pairs)->ThreadRange(1, 8)->UseRealTime();
#endif

#if defined(LFCORE_HAVE_XENIUM)
void xenium_queue_pairs(benchmark::State& state) {
  using Q =
      xenium::michael_scott_queue<long,
                                  xenium::policy::reclaimer<xenium::reclamation::hazard_pointer<>>>;
  queue_pairs<Q>(
      state, [](Q& q, long v) { q.push(v); },
      [](Q& q, long v) {
        long out = v;
        (void)q.try_pop(out);
        return out;
      });
}
BENCHMARK(xenium_queue_pairs)->ThreadRange(1, 8)->UseRealTime();
#endif

} // namespace

int main(int argc, char** argv) {
  peers::libcds_runtime cds_runtime; // no-op without libcds
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
