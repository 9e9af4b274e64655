#!/usr/bin/env python3
"""Time two installs of the Python package against each other, alternating.

    python3 bench/python/before_after.py --before VENV/bin/python --after VENV/bin/python \\
        [--bam bench/data/1g.bam] [--region chr1] [--runs 5]

For a change that should cost nothing (a restructure): BENCHMARKS.md's
Python rows (`AlignmentFile.fetch` iteration with five attributes read,
`BamFile.columns`, at 1 and 2 threads), each run in a fresh process of the
build before the change and the build after it in turn, after checking that
both compute the same. Reported: median wall and CPU seconds of the
measured section, and after/before (below 1: the change is faster).
"""

import argparse
import json
import statistics
import subprocess
import sys

JOBS = {
    "iterate": """
import fasthts, json, os, sys, time
bam, region, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0, c0 = time.perf_counter(), os.times()
n = s = 0
with fasthts.AlignmentFile(bam, threads=threads) as f:
    for r in f.fetch(region):
        n += 1
        s += len(r.query_name) + r.reference_start + r.mapping_quality + r.flag + len(r.cigartuples or ())
c1 = os.times()
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": c1.user - c0.user + c1.system - c0.system, "check": [n, s]}))
""",
    "columns": """
# numpy imported before the measured section: `import fasthts` no longer
# imports it (a columns user has it loaded already).
import fasthts, json, numpy, os, sys, time
bam, region, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = fasthts.BamFile(bam)
t0, c0 = time.perf_counter(), os.times()
c = f.columns(region, threads=threads)
c1 = os.times()
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": c1.user - c0.user + c1.system - c0.system,
                  "check": [int(len(c["pos"])), int(c["pos"].sum()), int(c["flag"].sum())]}))
""",
}


def run(python, job, bam, region, threads):
    out = subprocess.run([python, "-c", JOBS[job], bam, region, str(threads)], stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--bam", default="bench/data/1g.bam")
    ap.add_argument("--region", default="chr1")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    print(f"{'job':14s} {'before wall (cpu)':>18s} {'after wall (cpu)':>18s} {'after/before':>12s}")
    for job in JOBS:
        for threads in (1, 2):
            if run(a.before, job, a.bam, a.region, threads)["check"] != run(a.after, job, a.bam, a.region, threads)["check"]:
                sys.exit(f"{job}: the two builds computed different things")
            runs = {"before": [], "after": []}
            for _ in range(a.runs):
                for which in ("before", "after"):
                    runs[which].append(run(getattr(a, which), job, a.bam, a.region, threads))
            med = {k: (statistics.median(r["wall"] for r in v), statistics.median(r["cpu"] for r in v)) for k, v in runs.items()}
            (bw, bc), (aw, ac) = med["before"], med["after"]
            print(f"{job + ' -@' + str(threads):14s} {bw:8.3f} s ({bc:5.2f}) {aw:8.3f} s ({ac:5.2f}) {aw / bw:12.3f}", flush=True)


if __name__ == "__main__":
    main()
