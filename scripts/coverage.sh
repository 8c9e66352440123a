#!/usr/bin/env bash
# Line and branch coverage of the library (include/, lib/, integrations/*/include)
# under the test suite, on a fresh Debian 12 machine as root:
#   scripts/coverage.sh            # summary per file on stdout
# A GCC build with --coverage and no optimisation, as a stress build (tiny
# internal constants, injected yields: the expansion and retry paths run often),
# runs the unit, stress, fuzz-corpus and example tests; gcovr then writes
# build/coverage/coverage.txt (per file) and build/coverage/html/ (per line).
# Not part of scripts/test.sh: it measures the tests, it does not test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh gcovr

jobs=${LFCORE_JOBS:-$(nproc)}
build=build/coverage
# Atomic counters: threads racing on plain ones lose counts, and gcov then
# reports negative ones.
flags="--coverage -fprofile-update=atomic"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DLFCORE_SANITIZE= -DLFCORE_STRESS_BUILD=ON \
  -DLFCORE_BUILD_BENCH=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage >/dev/null
cmake --build "$build" -j "$jobs"
find "$build" -name '*.gcda' -delete # counts from this run only
(cd "$build" && CTEST_OUTPUT_ON_FAILURE=1 ctest -j "$jobs" -L 'unit|stress|fuzz|example' \
  -E package_consumer --timeout 1800) # those link an installed, uninstrumented copy

mkdir -p "$build/html"
filters=(--root . --filter 'include/' --filter 'lib/' --filter 'integrations/[a-z]+/include/'
         --filter 'integrations/swipl/lfcore_swipl.cpp'
         --exclude-unreachable-branches --exclude-throw-branches)
gcovr "${filters[@]}" --object-directory "$build" --txt "$build/coverage.txt" \
  --html-details "$build/html/index.html" --print-summary
cat "$build/coverage.txt"
