// bench/results/hp_record_inline/make_hazard_pointer.cpp - a hazard pointer
// taken from the default domain and given back (P2530's make_hazard_pointer
// and ~hazard_pointer), Google Benchmark, one thread. Built against each
// tree's headers and library:
//   g++ -O3 -DNDEBUG -mcx16 -std=c++20 -IROOT/include -IBUILD/include
//       make_hazard_pointer.cpp -o mhp BUILD/liblfcore.a -lbenchmark -lpthread
//   taskset -c 0 ./mhp --benchmark_min_time=0.3
#include <benchmark/benchmark.h>
#include <lfcore/hazard_pointer.hpp>
static void make_hazard_pointer(benchmark::State& state) {
  for (auto _ : state) {
    lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
    benchmark::DoNotOptimize(hp);
  }
}
BENCHMARK(make_hazard_pointer);
BENCHMARK_MAIN();
