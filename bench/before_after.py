#!/usr/bin/env python3
"""Time two fasthts binaries against each other, alternating, in one run.

    python3 bench/before_after.py --before OLD/fasthts --after NEW/fasthts \\
        [--bam bench/data/1g.bam] [--view-bam bench/data/view300m.bam] [--runs 5]

For a change that should cost nothing (a restructure): the BAM, view and
depth jobs of BENCHMARKS.md's table, each run by the build before the
change and the build after it in turn, after checking that both print the
same bytes. Reported per job: median wall seconds, median CPU seconds (user
+ sys), median peak RSS, and after/before (below 1: the change is faster).
Build the old binary from a worktree of the commit before, with a target
directory of its own, e.g.
    git worktree add /tmp/before COMMIT && CARGO_TARGET_DIR=/tmp/before-target \\
        cargo build --release -p fasthts-cli --manifest-path /tmp/before/Cargo.toml
"""

import argparse
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd):
    """Wall seconds, CPU seconds and peak RSS (MB) of one run of `cmd`, its
    output discarded. The peak RSS is /usr/bin/time's: a child forked from
    this process would count this process' own pages (Linux keeps the
    high-water mark across exec)."""
    with tempfile.NamedTemporaryFile("r") as report, open(os.devnull, "wb") as out:
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", report.name, *cmd], stdout=out, check=True)
        wall = time.perf_counter() - start
        user, system, rss_kib = report.read().split()[-3:]
    return wall, float(user) + float(system), int(rss_kib) / 1024


def digest(cmd, written):
    """The bytes a command prints, and those of the file it writes (read
    as they come: this process stays small, see `timed`)."""
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as child:
        for chunk in iter(lambda: child.stdout.read(1 << 20), b""):
            h.update(chunk)
    if child.returncode != 0:
        sys.exit(f"{cmd}: exit status {child.returncode}")
    if written:
        with open(written, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def windows(bam, seed=1, count=1000, width=10_000):
    """`count` random windows on references with reads (seeded)."""
    lines = subprocess.run(["samtools", "idxstats", bam], stdout=subprocess.PIPE, text=True, check=True).stdout
    refs = [(f[0], int(f[1])) for f in (line.split("\t") for line in lines.splitlines()) if f[0] != "*" and int(f[2]) > 0 and int(f[1]) > width]
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        name, length = rng.choice(refs)
        beg = rng.randrange(0, length - width)
        out.append((name, beg))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--bam", default="bench/data/1g.bam")
    ap.add_argument("--view-bam", default="bench/data/view300m.bam")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", help="names of jobs to run, separated by semicolons (default: all)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fasthts-before-after-")
    noidx = os.path.join(tmp, "noidx.bam")
    os.symlink(os.path.abspath(a.bam), noidx)
    regions = [f"{name}:{beg + 1}-{beg + 10_000}" for name, beg in windows(a.bam)]
    bed = os.path.join(tmp, "regions.bed")
    with open(bed, "w") as f:
        f.writelines(f"{name}\t{beg}\t{beg + 10_000}\n" for name, beg in windows(a.bam))
    out = os.path.join(tmp, "out")
    # (job, arguments after the binary, a file it writes)
    jobs = [
        ("flagstat", ["flagstat", "-@2", a.bam], None),
        ("flagstat, no index", ["flagstat", "-@2", noidx], None),
        ("index", ["index", "-@2", a.bam, out], out),
        ("view -c", ["view", "-@2", "-c", a.bam], None),
        ("view -c, 1,000 regions", ["view", "-@2", "-c", a.bam, *regions], None),
        ("view -b subsample", ["view", "-@2", "--no-PG", "-b", "--subsample", "0.1", "--subsample-seed", "1", "-o", out, a.bam], out),
        ("view to SAM", ["view", "-@2", "--no-PG", a.view_bam], None),
        ("view -c, 304 MB", ["view", "-@2", "-c", a.view_bam], None),
        ("depth -a", ["depth", "-@2", "-a", a.bam], None),
        ("depth -a, 1,000 regions", ["depth", "-@2", "-a", "-b", bed, a.bam], None),
    ]
    if a.jobs:
        wanted = set(a.jobs.split(";"))
        jobs = [j for j in jobs if j[0] in wanted]
    print(f"before: {a.before}\nafter:  {a.after}\nruns: {a.runs}, alternating\n")
    print(f"{'job':26s} {'before wall (cpu)':>20s} {'after wall (cpu)':>20s} {'after/before':>12s} {'RSS MB before/after':>20s}")
    for name, args, written in jobs:
        same = digest([a.before, *args], written) == digest([a.after, *args], written)
        if not same:
            sys.exit(f"{name}: the two builds' outputs differ")
        runs = {"before": [], "after": []}
        for _ in range(a.runs):
            for which, binary in (("before", a.before), ("after", a.after)):
                runs[which].append(timed([binary, *args]))
        med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in runs.items()}
        b, f = med["before"], med["after"]
        print(f"{name:26s} {b[0]:9.2f} s ({b[1]:6.2f}) {f[0]:9.2f} s ({f[1]:6.2f}) {f[0] / b[0]:12.3f} {b[2]:9.1f} / {f[2]:6.1f}", flush=True)


if __name__ == "__main__":
    main()
