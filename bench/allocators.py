#!/usr/bin/env python3
"""The scalability runner on glibc malloc and on jemalloc, side by side.

Runs build/release/bench/lfcore_scalability once per repetition and allocator,
alternating glibc and jemalloc (LD_PRELOAD of libjemalloc.so.2) so that the
machine's drift hits both alike, each run with --reps 1; then writes, under
--out, both runners' output (glibc/, jemalloc/) and report.md: the median of
every (sweep, contender, threads) point per allocator and their ratio, and
the same for the memory tables (each allocator counting what it handed out).

  bench/allocators.py [--reps 5] [--out bench/results/allocators] [runner options...]

Runner options (--only, --contender, --threads, --seconds, ...) pass through;
without --only every sweep runs. jemalloc linked into the programs instead
(-DLFCORE_WITH_JEMALLOC=ON) gives the same numbers: the runner's report names
the allocator it ran on.
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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "build/release/bench/lfcore_scalability"


def jemalloc_path():
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "libjemalloc.so.2" in line and "=>" in line:
            return line.split("=>")[1].strip()
    sys.exit("allocators.py: libjemalloc.so.2 not found (Debian: libjemalloc2)")


def read_points(run_dir, into, memory):
    with open(run_dir / "results.csv", newline="") as f:
        for row in csv.DictReader(f):
            key = (row["sweep"], row["contender"], int(row["threads"]))
            into[key].append(float(row["mops_per_s"]))
    with open(run_dir / "memory.csv", newline="") as f:
        for row in csv.DictReader(f):
            memory[(row["table"], row["contender"])].append(float(row["value"]))


def table(title, header, rows):
    """A Markdown table of (names..., glibc, jemalloc) rows and their ratio."""
    lines = ["", f"## {title}", "", "| " + " | ".join(header) + " | glibc | jemalloc | ratio |",
             "|---|" + "---:|" * (len(header) + 2)]
    for *names, g, j in rows:
        ratio = f"{j / g:.2f}x" if g > 0 else "-"
        lines.append("| " + " | ".join(str(n) for n in names) + f" | {g:.3g} | {j:.3g} | {ratio} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench/results/allocators"))
    args, runner_args = ap.parse_known_args()
    if not RUNNER.exists():
        sys.exit(f"allocators.py: {RUNNER} not built (cmake --build build/release)")
    out = Path(args.out)
    scratch = out / "runs"
    shutil.rmtree(scratch, ignore_errors=True)
    allocators = {"glibc": {}, "jemalloc": {"LD_PRELOAD": jemalloc_path()}}
    points = {name: defaultdict(list) for name in allocators}
    memory = {name: defaultdict(list) for name in allocators}
    for rep in range(args.reps):
        order = list(allocators) if rep % 2 == 0 else list(reversed(allocators))
        for name in order:
            run_dir = scratch / f"{name}_{rep}"
            env = dict(os.environ, **allocators[name])
            # Relative paths, run from the repository root: the runner's report
            # records its command line.
            cmd = [str(RUNNER.relative_to(ROOT)), *runner_args, "--reps", "1", "--out",
                   os.path.relpath(run_dir.resolve(), ROOT)]
            print(f"=== {name}, repetition {rep + 1}/{args.reps}", flush=True)
            subprocess.run(cmd, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            read_points(run_dir, points[name], memory[name])
    # Keep the last repetition's full reports (tables, plots) per allocator.
    for name in allocators:
        shutil.rmtree(out / name, ignore_errors=True)
        shutil.copytree(scratch / f"{name}_{args.reps - 1}", out / name)
    shutil.rmtree(scratch)

    keys = sorted(set(points["glibc"]) & set(points["jemalloc"]))
    command = " ".join(["bench/allocators.py", "--reps", str(args.reps), *runner_args])
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = [
        "# The scalability runner on glibc malloc and on jemalloc",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC",
        f"- machine: {cpu}, {os.cpu_count()} hardware threads, {platform.platform()}",
        f"- jemalloc: LD_PRELOAD={allocators['jemalloc']['LD_PRELOAD']}",
        f"- method: {args.reps} repetitions, glibc and jemalloc alternating (order reversed every "
        "other repetition); each cell is the median, in millions of the sweep's operations per "
        "second (results.csv's unit), ratio = jemalloc / glibc. Memory: each allocator's own "
        "count of the bytes it handed out (glibc's mallinfo2 main arena, chunk headers "
        "included; jemalloc's stats.allocated, size classes included), median per allocator",
        "",
    ]
    def side_by_side(values, key):
        return (*key[1:], statistics.median(values["glibc"][key]),
                statistics.median(values["jemalloc"][key]))

    for sweep in sorted({key[0] for key in keys}):
        lines += table(sweep, ["contender", "threads"],
                       [side_by_side(points, k) for k in keys if k[0] == sweep])
    memory_keys = sorted(set(memory["glibc"]) & set(memory["jemalloc"]))
    for title in sorted({key[0] for key in memory_keys}):
        lines += table(title, ["contender"],
                       [side_by_side(memory, k) for k in memory_keys if k[0] == title])
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'report.md'}")


if __name__ == "__main__":
    main()
