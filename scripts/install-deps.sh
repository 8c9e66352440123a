#!/usr/bin/env bash
# Installs every Debian package lfcore and its benchmark peers need, and the
# packages named as arguments (scripts/coverage.sh passes gcovr).
# Idempotent and quiet: when everything is present it prints one line and
# touches no package list. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake g++ clang libclang-rt-14-dev clang-format pkg-config git python3
  # the model checker of tests/model/
  spin
  # clang 16 with LLVM's libc++ (scripts/test.sh's clang configuration)
  clang-16 libc++-16-dev libc++abi-16-dev libomp-16-dev
  # the 64-bit Arm cross toolchain and emulator (scripts/test-cross.sh)
  g++-aarch64-linux-gnu qemu-user
  # lfcore's own dependencies
  libboost-dev libboost-atomic-dev liburcu-dev libjemalloc-dev libhwloc-dev
  libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev libbenchmark-dev
  # peers for the comparisons, and the plotting tool
  libcds-dev libtbb-dev libcuckoo-dev libconcurrentqueue-dev libreaderwriterqueue-dev
  libxenium-dev swi-prolog-nox gnuplot
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
