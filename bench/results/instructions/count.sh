#!/usr/bin/env bash
# Instructions per operation of the counted loops in icount.cpp, by callgrind.
# usage: count.sh BINARY [OPS]   (FUNCS="a b" to count only those loops)
set -euo pipefail
bin=$1; ops=${2:-100000}
all="lfcore_hit lfcore_rcu_hit michael_hit harris_michael_hit vyukov_hit
     lfcore_miss lfcore_rcu_miss michael_miss harris_michael_miss vyukov_miss
     lfcore_churn michael_churn harris_michael_churn
     lfcore_str_hit michael_str_hit tbb_str_hit"
out=$(mktemp -d)
for f in ${FUNCS:-$all}; do
  valgrind --tool=callgrind --toggle-collect="$f" --callgrind-out-file="$out/$f" "$bin" "$ops" \
    > /dev/null 2>&1
  ir=$(callgrind_annotate "$out/$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  awk -v f="$f" -v ir="$ir" -v ops="$ops" 'BEGIN { printf "%-22s %8.1f\n", f, ir / (2 * ops) }'
done
rm -rf "$out"
