#!/usr/bin/env python3
"""Medians of a rounds file (lines "round binary <policies_loop output>"):
per policy and kind, each binary's median ns over rounds (a binary's figure in
a round: the lower of its two passes), and per-round ratios to BASE.
usage: ratio.py ROUNDS_FILE BASE OTHER..."""
import collections, statistics, sys

path, base, others = sys.argv[1], sys.argv[2], sys.argv[3:]
ns = collections.defaultdict(list)
for line in open(path):
    f = line.split()
    ns[(int(f[0]), f[1], f[2], f[4].rstrip(':'))].append(float(f[6]))
rounds = sorted({k[0] for k in ns})
for kind in ('hit', 'miss'):
    for policy in ('hp', 'memb', 'qsbr'):
        if (rounds[0], base, policy, kind) not in ns: continue
        def best(r, b): return min(ns[(r, b, policy, kind)])
        row = f'{kind:4} {policy:4}' + ''.join(
            f' {b} {statistics.median(best(r, b) for r in rounds):6.1f}' for b in [base] + others)
        for b in others:
            q = [best(r, b) / best(r, base) for r in rounds]
            row += f' | {b}/{base} {statistics.median(q):.3f} ({min(q):.2f}-{max(q):.2f})'
        print(row)
