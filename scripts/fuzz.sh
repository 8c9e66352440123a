#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer) of the hash trie, its C API (lfht.h) and
# the atom table's C API (lfcore_atoms.h): tests/fuzz/*_fuzz.cpp built with
# clang, AddressSanitizer + UBSan, as a stress build (tiny trie shapes, a
# reclamation scan on every retire).
#
#   scripts/fuzz.sh [seconds per target (default 60)] [target ...]
#
# Targets: hash_trie lfht atoms (default: all). Inputs that add coverage are
# merged into tests/fuzz/corpus/<target>/, which every build replays as the
# CTest tests fuzz.<target>: commit them. A failing input is left as
# build/fuzz/crash-*; replay it with build/fuzz/tests/fuzz/<target>_fuzz <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(hash_trie lfht atoms)

CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Release -DLFCORE_FUZZ=ON \
  -DLFCORE_SANITIZE=address -DLFCORE_STRESS_BUILD=ON -DLFCORE_BUILD_BENCH=OFF \
  -DLFCORE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/fuzz -j "${LFCORE_JOBS:-$(nproc)}" --target "${targets[@]/%/_fuzz}"

for t in "${targets[@]}"; do
  echo "=== fuzzing $t for $seconds s"
  work=build/fuzz/corpus/$t
  mkdir -p "$work" "tests/fuzz/corpus/$t"
  # Run from build/fuzz so that crash-* files land there.
  (cd build/fuzz && "tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
     -max_len=1024 "corpus/$t" "../../tests/fuzz/corpus/$t")
  # Keep the committed corpus small: add only inputs that reach new edges
  # (hit counts and compared values would keep thousands).
  "build/fuzz/tests/fuzz/${t}_fuzz" -merge=1 -use_counters=0 -use_value_profile=0 \
    "tests/fuzz/corpus/$t" "$work" 2>&1 | grep 'MERGE-OUTER: .* new files' || true
done
