#!/usr/bin/env bash
# The whole test suite, on a fresh Debian 12 machine as root (README's test command).
#   1. installs the Debian packages (scripts/install-deps.sh);
#   2. Release build: unit, stress, fuzz (corpus replay), example and bench-smoke tests,
#      and Spin's model checks (tests/model/);
#   3. ThreadSanitizer and AddressSanitizer+UBSan builds (the latter with
#      libstdc++'s assertions), both as stress builds (tiny internal constants,
#      injected yields): unit, stress and fuzz tests;
#   4. a clang 16 build on LLVM's libc++ (warnings as errors), so that the
#      library and its tests stay portable beyond GCC and libstdc++ (GoogleTest
#      is built from Debian's sources with it), with libc++'s assertions (the
#      checks _GLIBCXX_ASSERTIONS makes in the ASan build), without bucket
#      summaries, the hash trie every target but x86-64 and AArch64 gets,
#      without hwloc, so that the topology's fallback to the OS's CPU list runs,
#      and as a shared library (liblfcore.so), which everything links there:
#      unit, stress and example tests;
#   5. unit and example tests cross-compiled for aarch64, run under qemu-user
#      (scripts/test-cross.sh).
# Build trees go to build/<name>; LFCORE_JOBS overrides the parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=${LFCORE_JOBS:-$(nproc)}
export CTEST_OUTPUT_ON_FAILURE=1

run() { # name, ctest label regex, cmake args...
  local name=$1 labels=$2
  shift 2
  echo "=== lfcore tests: $name"
  cmake -S . -B "build/$name" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "build/$name" -j "$jobs"
  # A test binary whose tests were not discovered would be left out by -L silently.
  if (cd "build/$name" && ctest -N | grep -q '_NOT_BUILT'); then
    echo "test.sh: build/$name has test binaries whose tests were not discovered" >&2
    exit 1
  fi
  (cd "build/$name" && ctest -j "$jobs" -L "$labels" --timeout 900)
}

run release 'unit|stress|fuzz|example|bench-smoke|model' -DLFCORE_SANITIZE= -DLFCORE_STRESS_BUILD=OFF -DLFCORE_BUILD_BENCH=ON
if ! (cd build/release && ctest -N -L model | grep -q 'Total Tests: [1-9]'); then
  echo "test.sh: no model checks in build/release (is spin installed?)" >&2
  exit 1
fi
# Sanitizer builds leave the benchmarks out: their numbers would mean nothing.
run tsan 'unit|stress|fuzz|example' -DLFCORE_SANITIZE=thread -DLFCORE_STRESS_BUILD=ON -DLFCORE_BUILD_BENCH=OFF
ASAN_OPTIONS=detect_leaks=1 run asan 'unit|stress|fuzz|example' -DLFCORE_SANITIZE=address -DLFCORE_STRESS_BUILD=ON -DLFCORE_BUILD_BENCH=OFF
CC=clang-16 CXX=clang++-16 CXXFLAGS="-stdlib=libc++ -D_LIBCPP_ENABLE_ASSERTIONS=1" run clang 'unit|stress|example' -DLFCORE_GTEST_SOURCE_DIR=/usr/src/googletest -DLFCORE_SANITIZE= -DLFCORE_STRESS_BUILD=OFF -DLFCORE_BUILD_BENCH=OFF -DLFCORE_BUCKET_SUMMARIES=OFF -DLFCORE_WITH_HWLOC=OFF -DBUILD_SHARED_LIBS=ON
scripts/test-cross.sh
echo "=== lfcore tests: all passed"
