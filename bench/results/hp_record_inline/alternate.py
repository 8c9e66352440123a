# Alternates the binaries (order reversed every round), prints each run and, per binary,
# the medians and the median of paired ratios against the first binary.
# usage: python3 alternate.py ROUNDS ARGS... -- BINARY...
import subprocess, statistics as st, sys
i = sys.argv.index('--'); rounds=int(sys.argv[1]); args=sys.argv[2:i]; bins=sys.argv[i+1:]
res={b:[] for b in bins}
for r in range(rounds):
    for b in (bins if r%2==0 else bins[::-1]):
        out=subprocess.run([b]+args,capture_output=True,text=True).stdout.split()
        res[b].append(list(map(float,out[:3])))
        print(r, b, *out[:3], flush=True)
base=bins[0]
for b in bins:
    med=[round(st.median(c),1) for c in zip(*res[b])]
    rat=[round(st.median([x[k]/y[k] for x,y in zip(res[b],res[base])]),3) for k in range(3)]
    print(b, 'medians', med, 'paired/base', rat)
