#!/usr/bin/env python3
"""The recheck's tables from the runner's CSVs: DIR/maps/results.csv (medians of
the repetitions) gives lfcore over the best lock-free peer at each thread count,
its 8-thread over its 2-thread throughput, and over xenium's vyukov_hash_map and
libcuckoo at 2 threads; DIR/atoms/results.csv gives the atom workload's rates
and ratios. usage: summary.py DIR"""
import csv, statistics, sys
from collections import defaultdict

def medians(path):
    runs = defaultdict(list)
    for r in csv.DictReader(open(path)):
        runs[(r['sweep'], r['contender'], int(r['threads']))].append(float(r['mops_per_s']))
    return {k: statistics.median(v) for k, v in runs.items()}

d = sys.argv[1]
m = medians(f'{d}/maps/results.csv')
lf = 'lfcore hash_trie_map'
lock_free = ['libcds MichaelHashMap<HP>', 'libcds FeldmanHashMap<HP>', 'liburcu cds_lfht',
             'xenium harris_michael_hash_map<HP>']
vyukov, cuckoo = 'xenium vyukov_hash_map<HP>', 'libcuckoo cuckoohash_map'
threads = sorted({k[2] for k in m})
print('| sweep | over best lock-free peer, ' + ' / '.join(map(str, threads)) +
      ' threads | 8 / 2 threads | vyukov / libcuckoo at 2 |\n|---|---|---:|---|')
for sweep in sorted({k[0] for k in m}):
    over = []
    for t in threads:
        peers = [m[(sweep, p, t)] for p in lock_free if (sweep, p, t) in m]
        over.append(f'{m[(sweep, lf, t)] / max(peers):.2f}x')
    at2 = ' / '.join(f'{m[(sweep, lf, 2)] / m[(sweep, p, 2)]:.2f}x' if (sweep, p, 2) in m else '-'
                     for p in (vyukov, cuckoo))
    print(f'| {sweep} | {" / ".join(over)} | {m[(sweep, lf, 8)] / m[(sweep, lf, 2)]:.2f} | {at2} |')

a = medians(f'{d}/atoms/results.csv')
yap, one, pre = 'YAP original (rwlock, chained)', 'lfcore atom_table', 'lfcore atom_table (prefetched pieces)'
cpp_peers = ['libcuckoo<string>', 'tbb::concurrent_hash_map<string>']
ts = sorted({k[2] for k in a})
print('\natom workload, k sequences/s at ' + ' / '.join(map(str, ts)) + ' threads:')
for c in sorted({k[1] for k in a}):
    print(f'  {c}: ' + ' / '.join(f'{1000 * a[("atoms", c, t)]:.1f}' for t in ts))
for c in (one, pre):
    best2 = max(a[('atoms', p, 2)] for p in cpp_peers)
    print(f'{c}: ' + ' / '.join(f'{a[("atoms", c, t)] / a[("atoms", yap, t)]:.2f}x' for t in ts) +
          f" YAP's design; {a[('atoms', c, 2)] / best2:.2f}x the best C++ peer at 2 threads")
