#!/usr/bin/env python3
"""The distributed farm's benchmark: lfcore::mpi::farm against the same work
on a single-process lfcore::farm and against a hand-written MPI master-worker,
for task grains of 10 and 100 us and batch sizes 1..256 (mpi_farm_bench.cpp
says what each contender does).

    integrations/mpi/bench/run.py [--build build/release] [--out bench/results/mpi]
                                  [--reps 5] [--quick]

Every contender gets the same compute: W workers in all (the cores of this
machine by default), i.e. W worker ranks of one local worker each for the
MPI contenders (mpiexec -np W+1: rank 0 feeds and collects) and a farm of W
workers for the single process. Efficiency = throughput / (W x the
sequential loop's throughput, measured in the same repetition). Contenders
and batch sizes are interleaved in an order that rotates every repetition;
the report gives medians. Writes results.csv (every run), report.md and
efficiency.png (with gnuplot, if installed) under --out.
"""
import argparse
import csv
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys

GRAINS_US = [10, 100]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
TARGET = 0.9  # the bar: batch size at which distributed reaches 90% of single
CREDIT = 2  # lfcore::mpi::farm_options' default: batches outstanding per rank


def rotate(items, k):
    k %= len(items)
    return items[k:] + items[:k]


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{model}, {os.cpu_count()} hardware threads, {mem:.0f} GiB, {platform.system()} {platform.release()}"


class Bench:
    def __init__(self, binary, workers):
        self.binary = binary
        self.workers = workers
        mpiexec = shutil.which("mpiexec")
        if mpiexec is None:
            sys.exit("run.py: mpiexec not found (Debian: openmpi-bin)")
        self.mpiexec = [mpiexec, "--oversubscribe"]
        if os.geteuid() == 0:
            self.mpiexec.append("--allow-run-as-root")
        self.mpiexec += ["-np", str(workers + 1)]

    def run(self, args):
        out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=1800)
        rows = []
        for line in out.stdout.splitlines():
            contender, batch, tasks, seconds = line.split(",")
            rows.append((contender, int(batch), int(tasks), float(seconds)))
        return rows

    def calibrate(self, grain_us):
        out = subprocess.run([self.binary, "calibrate", str(grain_us)], check=True,
                             capture_output=True, text=True)
        return int(out.stdout.strip())

    def single(self, iterations, tasks):
        return self.run([self.binary, "single", str(iterations), str(tasks), str(self.workers)])

    def distributed(self, iterations, tasks, batches):
        return self.run(self.mpiexec + [self.binary, "distributed", str(iterations), str(tasks),
                                        "1", str(CREDIT)] + [str(b) for b in batches])

    def handwritten(self, iterations, tasks, batches):
        return self.run(self.mpiexec + [self.binary, "handwritten", str(iterations), str(tasks)]
                        + [str(b) for b in batches])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--out", default="bench/results/mpi")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2,
                    help="compute workers in all (default: the hardware threads)")
    ap.add_argument("--quick", action="store_true", help="one repetition, fewer tasks and batches")
    a = ap.parse_args()

    binary = os.path.join(a.build, "integrations/mpi/mpi_farm_bench")
    if not os.access(binary, os.X_OK):
        sys.exit(f"run.py: {binary} not found: build with -DLFCORE_BUILD_BENCH=ON and MPI installed")
    bench = Bench(binary, a.workers)
    batches = [1, 8, 64, 256] if a.quick else BATCHES
    reps = 1 if a.quick else a.reps
    ideal_seconds = 0.1 if a.quick else 0.5  # per run, at perfect efficiency
    command = "integrations/mpi/bench/run.py " + " ".join(sys.argv[1:])
    started = datetime.datetime.now(datetime.timezone.utc)

    iterations = {g: bench.calibrate(g) for g in GRAINS_US}
    tasks = {g: int(ideal_seconds * a.workers * 1e6 / g) for g in GRAINS_US}
    rows = []  # rep, grain, contender, batch, tasks, seconds
    for rep in range(reps):
        for grain in rotate(GRAINS_US, rep):
            runs = {
                "single": lambda: bench.single(iterations[grain], tasks[grain]),
                "distributed": lambda: bench.distributed(iterations[grain], tasks[grain],
                                                         rotate(batches, rep)),
                "handwritten": lambda: bench.handwritten(iterations[grain], tasks[grain],
                                                         rotate(batches, rep + 1)),
            }
            for name in rotate(list(runs), rep):
                print(f"[mpi] rep {rep + 1}/{reps}, {grain} us, {name}", file=sys.stderr, flush=True)
                for contender, batch, n, seconds in runs[name]():
                    rows.append((rep, grain, contender, batch, n, seconds))

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rep", "grain_us", "contender", "batch", "tasks", "seconds"])
        w.writerows(rows)

    # Efficiency of each run against the same repetition's sequential loop.
    sequential = {(r[0], r[1]): r[4] / r[5] for r in rows if r[2] == "sequential"}

    def efficiency(r):
        return (r[4] / r[5]) / (a.workers * sequential[(r[0], r[1])])

    def median(grain, contender, batch=0, of=efficiency):
        values = [of(r) for r in rows if r[1] == grain and r[2] == contender and r[3] == batch]
        return statistics.median(values) if values else float("nan")

    def rate(r):
        return r[4] / r[5] / 1e3

    md = [
        "# Distributed farm: lfcore::mpi::farm vs one process vs hand-written MPI\n",
        f"- command: `{command}`",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}; {subprocess.run(['mpiexec', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}",
        f"- method: {a.workers} compute workers for every contender (MPI: `mpiexec -np {a.workers + 1}`, "
        f"rank 0 feeding and collecting, {a.workers} worker ranks of one local worker each; single process: "
        f"an lfcore::farm of {a.workers} workers). Tasks: {tasks[10]} of 10 us, {tasks[100]} of 100 us "
        f"(calibrated multiply-add chains, {iterations[10]} and {iterations[100]} iterations). "
        f"Efficiency = throughput / ({a.workers} x the sequential loop's throughput in the same "
        f"repetition); medians of {reps} repetitions, contenders and batch sizes interleaved in a "
        "rotating order. Every run checks that each task's result came back once.",
        f"- distributed: lfcore::mpi::farm with its defaults besides the batch size: credit {CREDIT} "
        "(batches outstanding per rank), local_workers 1 (the rank's one thread computes between its "
        "looks at MPI), each batch's results sent back in one message. Hand-written: blocking "
        "MPI_Send/MPI_Recv, one batch outstanding per rank.\n",
    ]
    summary = []
    for grain in GRAINS_US:
        seq = median(grain, "sequential", of=rate)
        single_eff = median(grain, "single")
        bar = TARGET * single_eff
        md.append(f"## Tasks of {grain} us\n")
        md.append(f"Sequential loop: {seq:.1f} k tasks/s. Single-process lfcore::farm: "
                  f"{median(grain, 'single', of=rate):.1f} k tasks/s, efficiency {single_eff:.3f}; "
                  f"90% of it: {bar:.3f}.\n")
        md.append("| batch | distributed k tasks/s | distributed efficiency | hand-written k tasks/s "
                  "| hand-written efficiency | distributed / hand-written |")
        md.append("|---:|---:|---:|---:|---:|---:|")
        for b in batches:
            d, h = median(grain, "distributed", b), median(grain, "handwritten", b)
            md.append(f"| {b} | {median(grain, 'distributed', b, rate):.1f} | {d:.3f} | "
                      f"{median(grain, 'handwritten', b, rate):.1f} | {h:.3f} | {d / h:.2f}x |")
        reach = {}
        for who in ("distributed", "handwritten"):
            reach[who] = next((b for b in batches if median(grain, who, b) >= bar), None)
        md.append("")
        for who, b in reach.items():
            if b is None:
                text = f"never reaches 90% of the single process (best batch efficiency " \
                       f"{max(median(grain, who, x) for x in batches):.3f})"
            else:
                later = [x for x in batches if x > b and median(grain, who, x) < bar]
                text = f"reaches 90% of the single process from batch {b} on" + (
                    f" (but falls below again at {', '.join(map(str, later))})" if later else "")
            md.append(f"- {who}: {text}.")
            summary.append((grain, who, b))
        md.append("")

    plot = os.path.join(a.out, "efficiency.png")
    dat = os.path.join(a.out, "efficiency.dat")
    with open(dat, "w") as f:
        f.write("# batch " + " ".join(f"dist{g} hand{g} single{g}" for g in GRAINS_US) + "\n")
        for b in batches:
            f.write(f"{b} " + " ".join(f"{median(g, 'distributed', b):.4f} {median(g, 'handwritten', b):.4f} "
                                       f"{median(g, 'single'):.4f}" for g in GRAINS_US) + "\n")
    if shutil.which("gnuplot"):
        gp = os.path.join(a.out, "efficiency.gp")
        with open(gp, "w") as f:
            f.write(f"""set terminal pngcairo size 900,560
set output '{plot}'
set title 'Distributed farm efficiency vs batch size ({a.workers} workers, mpiexec -np {a.workers + 1})'
set xlabel 'batch size (tasks per message)'
set ylabel 'efficiency'
set logscale x 2
set yrange [0:1.05]
set key bottom right
set grid
plot '{dat}' using 1:2 with linespoints lw 2 title 'lfcore::mpi::farm, 10 us', \\
     '' using 1:3 with linespoints lw 2 title 'hand-written MPI, 10 us', \\
     '' using 1:4 with lines dt 2 title 'single-process farm, 10 us', \\
     '' using 1:5 with linespoints lw 2 title 'lfcore::mpi::farm, 100 us', \\
     '' using 1:6 with linespoints lw 2 title 'hand-written MPI, 100 us', \\
     '' using 1:7 with lines dt 2 title 'single-process farm, 100 us'
""")
        subprocess.run(["gnuplot", gp], check=True)
        md.append("![efficiency vs batch size](efficiency.png)\n")
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(md))
    for grain, who, b in summary:
        print(f"[mpi] {grain} us: {who} reaches 90% of single-process efficiency at batch {b}",
              file=sys.stderr)
    print(f"report: {os.path.join(a.out, 'report.md')}", file=sys.stderr)


if __name__ == "__main__":
    main()
