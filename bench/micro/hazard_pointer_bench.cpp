// Micro-costs of hazard pointers, lfcore beside libcds (cds::gc::HP) and xenium
// (reclamation::hazard_pointer<>), in one binary and one run:
//   protect_reset   - protect a pointer read from an atomic, then clear it
//   retire_reclaim  - allocate, retire and (amortised) reclaim one object
// Each contender allocates its objects with plain new/delete so the
// allocator's share is the same for all.
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

} // namespace

int main(int argc, char** argv) {
  peers::libcds_runtime cds_runtime; // no-op without libcds
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
