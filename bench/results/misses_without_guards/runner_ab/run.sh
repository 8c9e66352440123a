#!/bin/sh
# Alternating rounds of the scalability runner before (base: build/release at
# 91ba5cd, copied to /tmp/runner_base) and after (new: at 75d9f78, whose
# erases also peeked; e6c1d2c took that out) the root-bucket peek, lfcore
# alone, one thread then two, 1 s a point. RUN=first or second (two runs of
# the same two binaries, 03:04-03:09 and 03:09-03:14 UTC). Medians of the
# per-round ratios: python3 ratio.py $RUN (written to ${RUN}_12_rounds.txt).
cd "$(dirname "$0")/../../../.."
: "${RUN:?set RUN=first or second}"
for r in 01 02 03 04 05 06 07 08 09 10 11 12; do
  if [ $(( ${r#0} % 2 )) = 1 ]; then order="base new"; else order="new base"; fi
  for b in $order; do
    for s in map_lookup map_mix; do
      /tmp/runner_$b --only $s --threads 1,2 --reps 1 --seconds 1 --pin --contender '=lfcore hash_trie_map' --out bench/results/misses_without_guards/runner_ab/$RUN/$b/$r/$s > /dev/null 2>&1
    done
  done
  echo "round $r done $(date -u +%T)"
done
