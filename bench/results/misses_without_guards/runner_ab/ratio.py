import csv, glob, statistics as st, collections, sys
root = sys.argv[1]  # first or second (this directory's runs)
d = collections.defaultdict(dict)  # (sweep,threads) -> {(b,r): mops}
for b in ['base', 'new']:
    for f in glob.glob(f'{root}/{b}/*/*/results.csv'):
        r = f.split('/')[-3]
        for row in csv.DictReader(open(f)):
            d[(row['sweep'], int(row['threads']))][(b, r)] = float(row['mops_per_s'])
for k in sorted(d):
    v = d[k]
    rounds = sorted({r for (_, r) in v})
    ratios = [v[('new', r)] / v[('base', r)] for r in rounds if ('new', r) in v and ('base', r) in v]
    base = st.median([v[('base', r)] for r in rounds if ('base', r) in v])
    new = st.median([v[('new', r)] for r in rounds if ('new', r) in v])
    print(f"{k[0]:16s} {k[1]}  base {base:6.2f}  new {new:6.2f}  median ratio {st.median(ratios):.2f}  ({' '.join(f'{x:.2f}' for x in ratios)})")
