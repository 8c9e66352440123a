#!/usr/bin/env bash
# The unit and example tests cross-compiled for 64-bit Arm Linux and run under
# qemu-user: lfcore on a target that is not x86-64 (bucket summaries in Arm's
# pointers, its yield hint and cache-line size, its ABI and page handling).
# scripts/test.sh runs it last; alone it installs the same packages first.
# What it cannot show: qemu-user performs the target's loads and stores with
# the x86-64 host's, which are ordered more strongly than Arm's, so a missing
# acquire or release would go unseen here.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=${LFCORE_JOBS:-$(nproc)}
toolchain=$PWD/cmake/toolchains/aarch64-linux-gnu.cmake
gtest=$PWD/build/aarch64-gtest

# Debian ships GoogleTest's sources with libgtest-dev: build them for the target once.
if [ ! -f "$gtest/prefix/lib/cmake/GTest/GTestConfig.cmake" ]; then
  cmake -S /usr/src/googletest -B "$gtest/build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$gtest/prefix" >/dev/null
  cmake --build "$gtest/build" -j "$jobs"
  cmake --install "$gtest/build" >/dev/null
fi

echo "=== lfcore tests: aarch64 under qemu-user"
# The host's MPI, hwloc, liburcu and SWI-Prolog are x86-64 libraries: their
# parts are left out (MPI explicitly: its compiler wrapper is a host program).
cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -DCMAKE_FIND_ROOT_PATH="$gtest/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DLFCORE_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON >/dev/null
cmake --build build/aarch64 -j "$jobs"
(cd build/aarch64 && CTEST_OUTPUT_ON_FAILURE=1 ctest -j "$jobs" -L 'unit|example' --timeout 900)
