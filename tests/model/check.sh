#!/usr/bin/env bash
# tests/model/check.sh MODEL.pml SEARCH... - Spin's exhaustive checks of a
# protocol model (tests/model/*.pml). Each SEARCH is "EXPECT MODE SCENARIO
# [MUTANT]": EXPECT pass or fail, MODE safety (assertions, every
# interleaving) or progress (no cycle without an operation completing: a
# `progress` label), SCENARIO and MUTANT the model's macros. The model's own
# scenarios must pass; its mutants - the model with one rule of the protocol
# broken - must fail, which shows that the checks can. Needs spin ($SPIN, else
# spin) and a C compiler ($CC, else cc). Prints one line per search; on an
# unexpected result, Spin's output and the error trail.
set -euo pipefail
model_source=$(realpath "$1")
spin=${SPIN:-spin}
cc=${CC:-cc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$(dirname "$model_source")"/*.pml . # the files a model includes (tso.pml)
cp "$model_source" model.pml
failures=0

# search EXPECT MODE FLAGS...: FLAGS the -D macros of the scenario and mutant.
search() {
  local expect=$1 mode=$2
  shift 2
  rm -f pan pan.* model.pml.trail
  if ! "$spin" -a "$@" model.pml >spin.txt 2>&1; then
    echo "model: $* : spin could not translate the model (expected to $expect)"
    cat spin.txt
    failures=$((failures + 1))
    return
  fi
  # VECTORSZ: a release/acquire model keeps a view per message (2 KB of
  # state in unbounded_mpmc_ra.pml; pan's default bound is 1 KB).
  if [ "$mode" = safety ]; then
    "$cc" -O2 -w -DSAFETY -DCOLLAPSE -DVECTORSZ=4096 -o pan pan.c
    ./pan -m100000 >out.txt 2>&1 || true
  else # non-progress cycles: every cycle must pass a `progress` label
    "$cc" -O2 -w -DNP -DCOLLAPSE -DVECTORSZ=4096 -o pan pan.c
    ./pan -l -m100000 >out.txt 2>&1 || true
  fi
  local errors states
  errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' out.txt)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' out.txt)
  if grep -qE 'max search depth too small|out of memory|memory limit' out.txt; then
    errors=incomplete # a search cut short proves nothing
  fi
  echo "model: $* $mode: ${states:-?} states, errors ${errors:-?} (expected to $expect)"
  if { [ "$expect" = pass ] && [ "$errors" != 0 ]; } ||
     { [ "$expect" = fail ] && { [ "$errors" = 0 ] || [ "$errors" = incomplete ]; }; }; then
    failures=$((failures + 1))
    cat out.txt
    if [ -f model.pml.trail ]; then "$spin" -t -p "$@" model.pml | tail -80; fi
  fi
}

shift
if [ $# -eq 0 ]; then
  echo "usage: check.sh MODEL.pml SEARCH..." >&2
  exit 2
fi
for spec in "$@"; do
  read -r expect mode scenario mutant <<<"$spec"
  search "$expect" "$mode" -DSCENARIO="$scenario" ${mutant:+-DMUTANT="$mutant"}
done

if [ "$failures" -ne 0 ]; then
  echo "model: $failures unexpected results" >&2
  exit 1
fi
echo "model: all searches as expected"
