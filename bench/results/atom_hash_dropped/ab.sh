#!/bin/bash
# usage: ab.sh ROUNDS OUTFILE builds...
rounds=$1; out=$2; shift 2
for r in $(seq 1 $rounds); do
  for b in "$@"; do
    $b/bench/lfcore_scalability --only atoms --threads 1,2 --reps 1 --pin --contender "lfcore atom_table" --out /tmp/ab_out 2>&1 | grep "rep 1" | sed "s|^|$b r$r |" >> $out
  done
done
