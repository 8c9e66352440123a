#!/usr/bin/env python3
"""Eight threads against two, from the runner's CSVs in this directory, one
sweep (default map_lookup_hit). For each run: the medians of its
repetitions at 2 and 8 threads, and each contender's 8 / 2 ratio. For each
group of runs (the file name before its last '_': hits_all, hits_two,
full_all): lfcore's ratio, median and range, and each contender's median
level at 2 and 8 threads across the group's runs.
usage: ratio.py [SWEEP]"""
import collections, csv, glob, statistics, sys

sweep = sys.argv[1] if len(sys.argv) > 1 else 'map_lookup_hit'
lfcore = 'lfcore hash_trie_map'
short = lambda c: c.split()[-1].split('<')[0]
ratios, levels = collections.defaultdict(list), collections.defaultdict(list)
for f in sorted(glob.glob('*.csv')):
    reps = collections.defaultdict(list)
    for r in csv.DictReader(open(f)):
        if r['sweep'] == sweep:
            reps[(r['contender'], int(r['threads']))].append(float(r['mops_per_s']))
    if not reps:
        continue  # a hits-only run, asked for another sweep
    group = f.rsplit('_', 1)[0]
    level = {k: statistics.median(v) for k, v in reps.items()}
    for k, v in level.items():
        levels[(group, *k)].append(v)
    ratio = {c: level[(c, 8)] / level[(c, 2)] for c, t in level if t == 2}
    ratios[group].append(ratio[lfcore])
    print(f'{f:16} lfcore {level[(lfcore, 2)]:5.2f} -> {level[(lfcore, 8)]:5.2f} Mops/s;',
          ' '.join(f'{short(c)} {x:.2f}' for c, x in sorted(ratio.items())))
for group, q in ratios.items():
    below = sum(x < 0.9 for x in q)
    print(f'\n{group}: lfcore 8 / 2 median {statistics.median(q):.2f} '
          f'({min(q):.2f}-{max(q):.2f}), {below} of {len(q)} runs below 0.9')
    for c in sorted({k[1] for k in levels if k[0] == group}):
        at = [statistics.median(levels[(group, c, t)]) for t in (2, 8)]
        print(f'  {c:36} median Mops/s at 2 / 8 threads: {at[0]:5.2f} / {at[1]:5.2f}')
