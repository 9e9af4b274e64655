#!/usr/bin/env python3
"""A/B of ``BamFile.columns`` between two builds of the Python package.

    python3 bench/python/ab_columns.py --python before=PY1 --python after=PY2 \\
        [--bam FILE] [--region CONTIG] [--runs N] [--threads 1 2]

Each ``PY`` is an interpreter with one build of ``fasthts`` installed (say
two virtual environments). Every run is its own process that times one
``columns(region, threads=T)`` call (wall, user and system CPU seconds,
minor page faults); the builds and thread counts alternate within each
round so that a shared machine's load falls on all of them alike. Medians
are reported. The builds must give the same arrays (checked by a digest).
"""
import argparse
import os
import statistics
import subprocess

CHILD = r"""
import hashlib, resource, sys, time
import fasthts
bam = fasthts.BamFile(sys.argv[1])
r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
cols = bam.columns(sys.argv[2], threads=int(sys.argv[3]))
w1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
digest = hashlib.sha1(b"".join(cols[k].dtype.str.encode() + cols[k].tobytes() for k in sorted(cols))).hexdigest()
print(w1 - w0, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt, digest)
"""


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", action="append", required=True, help="NAME=INTERPRETER (give two or more)")
    ap.add_argument("--bam", default=os.path.join(root, "bench", "data", "1g.bam"))
    ap.add_argument("--region", default="chr1")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()
    builds = [p.split("=", 1) for p in a.python]
    print(f"columns({a.region!r}) of {a.bam}, {a.runs} alternating rounds; load average {os.getloadavg()}", flush=True)
    runs = {(n, t): [] for t in a.threads for n, _ in builds}
    digests = set()
    for _ in range(a.runs):
        for t in a.threads:
            for name, py in builds:
                out = subprocess.run([py, "-c", CHILD, a.bam, a.region, str(t)], capture_output=True, text=True, cwd="/")
                if out.returncode != 0:
                    raise SystemExit(f"{name} failed: {out.stderr.strip()}")
                wall, user, sys_, flt, digest = out.stdout.split()
                runs[(name, t)].append((float(wall), float(user), float(sys_), int(flt)))
                digests.add(digest)
    assert len(digests) == 1, "the builds' arrays differ"
    for (name, t), rs in runs.items():
        med = lambda i: statistics.median(r[i] for r in rs)
        cpu = statistics.median(r[1] + r[2] for r in rs)
        print(f"  {name:10s} threads={t}: wall {med(0):.3f} s  cpu {cpu:.3f} s (user {med(1):.3f}, sys {med(2):.3f})  minor faults {med(3):.0f}")
    print(f"  load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
