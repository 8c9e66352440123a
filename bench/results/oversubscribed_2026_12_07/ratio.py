#!/usr/bin/env python3
"""Oversubscription from the runner's CSVs (DIR/round*.csv, threads 2 and 8):
each contender's 8-thread over its 2-thread throughput in each round, and
lfcore over libcds's MichaelHashMap at each thread count. Medians (ranges).
usage: ratio.py DIR"""
import csv, glob, statistics, sys

rounds = [{(r['sweep'], r['contender'], int(r['threads'])): float(r['mops_per_s'])
           for r in csv.DictReader(open(f))} for f in sorted(glob.glob(f'{sys.argv[1]}/round*.csv'))]

def show(label, q):
    print(f'{label:55} {statistics.median(q):.2f} ({min(q):.2f}-{max(q):.2f})')

lfcore, michael = 'lfcore hash_trie_map', 'libcds MichaelHashMap<HP>'
for sweep in sorted({k[0] for k in rounds[0]}):
    for c in (lfcore, michael):
        show(f'{sweep} {c}: 8 / 2 threads', [r[(sweep, c, 8)] / r[(sweep, c, 2)] for r in rounds])
    for t in (2, 8):
        show(f'{sweep} lfcore / Michael, {t} threads',
             [r[(sweep, lfcore, t)] / r[(sweep, michael, t)] for r in rounds])
