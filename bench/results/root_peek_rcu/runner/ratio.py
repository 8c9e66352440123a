#!/usr/bin/env python3
"""Per-round throughput ratios of the runner's CSVs (DIR/round*.csv): memb and
qsbr over hazard pointers in each round; with a second DIR, each contender
in DIR2 over DIR1 (rounds paired by number). Medians (ranges).
usage: ratio.py DIR [DIR2]"""
import csv, glob, re, statistics, sys

def load(d):
    rounds = {}
    for f in glob.glob(f'{d}/round*.csv'):
        n = int(re.search(r'round(\d+)', f).group(1))
        rounds[n] = {(r['sweep'], int(r['threads']), r['contender']): float(r['mops_per_s'])
                     for r in csv.DictReader(open(f))}
    return rounds

def show(label, q):
    print(f'{label}: {statistics.median(q):.3f} ({min(q):.2f}-{max(q):.2f}), {len(q)} rounds')

hp = 'lfcore hash_trie_map'
policies = [hp, hp + '<urcu::memb>', hp + '<urcu::qsbr>']
first = load(sys.argv[1])
second = load(sys.argv[2]) if len(sys.argv) > 2 else None
threads = sorted({k[1] for r in first.values() for k in r})
for sweep in sorted({k[0] for r in first.values() for k in r}):
    for t in threads:
        if second is None:
            for c in policies[1:]:
                show(f'{sweep} {t} thr {c[len(hp):]} / hp',
                     [r[(sweep, t, c)] / r[(sweep, t, hp)] for r in first.values()])
        else:
            for c in policies:
                show(f'{sweep} {t} thr {c} after / before',
                     [second[n][(sweep, t, c)] / first[n][(sweep, t, c)] for n in first])
