#!/usr/bin/env bash
# The main job (README's first command): installs, builds Release, then writes
# the benchmark and stress report under bench/results/:
#   scalability/  - the scalability runner: every sweep against the peers,
#                   interleaved, median of repetitions (report.md, CSV, PNG)
#   micro/        - Google Benchmark micro-costs, lfcore beside its peers
#                   (hazard pointers; pool_allocator against malloc),
#                   randomly interleaved repetitions
#   mpi/          - the distributed farm against one process and hand-written
#                   MPI (when Open MPI is installed; report.md, CSV, PNG)
#   allocators/   - the atom workload on glibc malloc and on jemalloc, side by side
#   stress.txt    - the stress tests at LFCORE_STRESS_SCALE (default 10)
# Options: --quick (about a minute: fewer threads, points and repetitions),
#          --out DIR (default bench/results).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
out=bench/results
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: scripts/report.sh [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLFCORE_SANITIZE= -DLFCORE_STRESS_BUILD=OFF \
      -DLFCORE_BUILD_BENCH=ON >/dev/null
cmake --build build/release -j "$(nproc)"
mkdir -p "$out/micro"

# --pin: thread t of a point runs on CPU t mod the CPU count. On one host the
# guest's two vCPUs ran memory-bound lookups 1.6x apart, and an unpinned
# one-thread point landed on either (bench/results/README.md, "Two unequal
# vCPUs"); where they are equal, pinning costs nothing.
if [ $quick = 1 ]; then
  runner_args=(--quick --pin)
  micro_args=(--benchmark_min_time=0.05 --benchmark_repetitions=3)
  scale=1
else
  runner_args=(--threads 1,2,4,8 --reps 5 --seconds 0.5 --pin)
  micro_args=(--benchmark_repetitions=7)
  scale=${LFCORE_STRESS_SCALE:-10}
fi

echo "=== scalability runner"
build/release/bench/lfcore_scalability "${runner_args[@]}" --out "$out/scalability"

echo "=== micro-benchmarks"
for bench in hazard_pointer pool_allocator; do
  {
    echo "# command: build/release/bench/${bench}_bench ${micro_args[*]} --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true"
    echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) hardware threads"
    "build/release/bench/${bench}_bench" "${micro_args[@]}" --benchmark_enable_random_interleaving=true \
      --benchmark_report_aggregates_only=true 2>&1
  } | tee "$out/micro/$bench.txt"
done

if [ -x build/release/integrations/mpi/mpi_farm_bench ]; then
  echo "=== distributed farm (Open MPI)"
  if [ $quick = 1 ]; then
    integrations/mpi/bench/run.py --quick --out "$out/mpi"
  else
    integrations/mpi/bench/run.py --reps 5 --out "$out/mpi"
  fi
fi

echo "=== the atom workload on glibc malloc and on jemalloc"
if [ $quick = 1 ]; then
  bench/allocators.py --reps 1 --quick --pin --only atoms --out "$out/allocators"
else
  bench/allocators.py --reps 3 --pin --only atoms --threads 1,2,4,8 --out "$out/allocators"
fi

echo "=== stress (LFCORE_STRESS_SCALE=$scale)"
(cd build/release && LFCORE_STRESS_SCALE=$scale ctest -L stress --output-on-failure -V) \
  | grep -E 'Test +#|stalled protector|bytes held|tests passed|FAILED|Passed|Failed' | tee "$out/stress.txt"

echo "report: $out/scalability/report.md, $out/micro/hazard_pointer.txt, $out/micro/pool_allocator.txt, $out/mpi/report.md, $out/allocators/report.md, $out/stress.txt"
