#!/usr/bin/env python3
"""Eight threads against two, from the runner's CSVs in this directory, one
sweep (default map_lookup_hit). For each run: lfcore's medians of its
repetitions at 2 and 8 threads, and each contender's 8 / 2 ratio. Then per
group of runs with the same history before the sweep - the sweep alone
(hits_all_N, hits_two_N), or after every peer's insert sweep (full_all_N and
insert_all_N: the sweeps a full run has after the hits do not touch them) -
lfcore's ratio (median, range) and each contender's median level at 2 and 8
threads; and, between the hits sweep alone and after the insert sweep with
every peer, an exact permutation test of lfcore's mean level at each count.
usage: ratio.py [SWEEP]"""
import collections, csv, glob, itertools, statistics, sys

sweep = sys.argv[1] if len(sys.argv) > 1 else 'map_lookup_hit'
lfcore = 'lfcore hash_trie_map'
history = {'hits_all': 'alone, every peer', 'hits_two': 'alone, lfcore and Michael',
           'full_all': 'after the insert sweep, every peer',
           'insert_all': 'after the insert sweep, every peer'}
short = lambda c: c.split()[-1].split('<')[0]
ratios, levels = collections.defaultdict(list), collections.defaultdict(list)
for f in sorted(glob.glob('*.csv')):
    reps = collections.defaultdict(list)
    for r in csv.DictReader(open(f)):
        if r['sweep'] == sweep:
            reps[(r['contender'], int(r['threads']))].append(float(r['mops_per_s']))
    if not reps:
        continue  # a run without this sweep
    group = history[f.rsplit('_', 1)[0]]
    level = {k: statistics.median(v) for k, v in reps.items()}
    for k, v in level.items():
        levels[(group, *k)].append(v)
    ratio = {c: level[(c, 8)] / level[(c, 2)] for c, t in level if t == 2}
    ratios[group].append(ratio[lfcore])
    print(f'{f:17} lfcore {level[(lfcore, 2)]:5.2f} -> {level[(lfcore, 8)]:5.2f} Mops/s;',
          ' '.join(f'{short(c)} {x:.2f}' for c, x in sorted(ratio.items())))
for group, q in ratios.items():
    below = sum(x < 0.9 for x in q)
    print(f'\n{group}: lfcore 8 / 2 median {statistics.median(q):.2f} '
          f'({min(q):.2f}-{max(q):.2f}), {below} of {len(q)} runs below 0.9')
    for c in sorted({k[1] for k in levels if k[0] == group}):
        at = [statistics.median(levels[(group, c, t)]) for t in (2, 8)]
        print(f'  {c:36} median Mops/s at 2 / 8 threads: {at[0]:5.2f} / {at[1]:5.2f}')


def permutation_p(a, b):
    """Two-sided: how often a split of a + b into groups of their sizes has
    means at least as far apart as a's and b's."""
    pooled, total = a + b, sum(a) + sum(b)
    gap = abs(sum(a) / len(a) - sum(b) / len(b))
    splits = list(itertools.combinations(pooled, len(a)))
    far = sum(abs(sum(s) / len(a) - (total - sum(s)) / len(b)) >= gap - 1e-12 for s in splits)
    return far / len(splits)


alone, after = history['hits_all'], history['full_all']
if (alone, lfcore, 8) in levels and (after, lfcore, 8) in levels:
    print('\nafter the insert sweep against alone (every peer), median levels and p:')
    for t in (2, 8):
        a, b = levels[(after, lfcore, t)], levels[(alone, lfcore, t)]
        print(f'  lfcore at {t} threads: {statistics.median(a) / statistics.median(b):.2f}x, '
              f'p = {permutation_p(a, b):.3f}')
    for c in sorted({k[1] for k in levels if k[0] == after} - {lfcore}):
        x = [statistics.median(levels[(after, c, t)]) / statistics.median(levels[(alone, c, t)])
             for t in (2, 8)]
        print(f'  {c:36} at 2 / 8 threads: {x[0]:.2f}x / {x[1]:.2f}x')
