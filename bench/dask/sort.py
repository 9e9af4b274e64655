#!/usr/bin/env python3
"""fasthts.dask.sort on a LocalCluster against `fasthts sort -@N` on the
same machine, alternating (issue: the distribution layer's cost).

    python bench/dask/sort.py BAM [--runs 3] [--workers 2]

Run with the Python that has the fasthts package and dask.distributed
(scripts/test.sh's venv: ~/.cache/fasthts-venv/bin/python). The cluster
(WORKERS processes of one thread) is started once, before the timed runs;
each round times `fasthts sort -@WORKERS -o A.bam BAM` and then
`fasthts.dask.sort(client, BAM, B.bam)`, each output removed first. The
outputs' records are checked equal (samtools view digest). Prints median
wall seconds, the ratio dask / one machine, the dask run's stages
(median seconds) and sizes, and the client's and workers' peak RSS; writes
the same as JSON to bench/runs/.
"""
import argparse, datetime, hashlib, json, os, platform, resource, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def digest(path):
    h = hashlib.sha256()
    p = subprocess.Popen(["samtools", "view", "--no-PG", path], stdout=subprocess.PIPE)
    for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
        h.update(chunk)
    assert p.wait() == 0
    return h.hexdigest()


def peak_rss_mb():
    """This process's peak RSS (ru_maxrss), in MB: run on each worker."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bam")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fasthts", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/fasthts-target")), "release", "fasthts"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "runs"))
    a = ap.parse_args()
    import fasthts.dask
    from dask.distributed import Client, LocalCluster

    tmp = tempfile.mkdtemp(prefix="fasthts-dask-bench-", dir=os.path.dirname(os.path.abspath(a.bam)))
    one, dist, stages = [], [], []
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=":0", local_directory=tmp) as c, Client(c) as client:
        for r in range(a.runs):
            for f in ("a.bam", "b.bam"):
                if os.path.exists(os.path.join(tmp, f)):
                    os.remove(os.path.join(tmp, f))
            t = time.perf_counter()
            subprocess.run([a.fasthts, "sort", f"-@{a.workers}", "-o", os.path.join(tmp, "a.bam"), a.bam], check=True)
            one.append(time.perf_counter() - t)
            timings = {}
            t = time.perf_counter()
            fasthts.dask.sort(client, a.bam, os.path.join(tmp, "b.bam"), timings=timings)
            dist.append(time.perf_counter() - t)
            stages.append(timings)
            print(f"round {r + 1}: fasthts sort {one[-1]:.2f} s, dask.sort {dist[-1]:.2f} s {timings}", flush=True)
        workers_rss = sorted(client.run(peak_rss_mb).values())
    same = digest(os.path.join(tmp, "a.bam")) == digest(os.path.join(tmp, "b.bam"))
    med = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    row = {
        "bam": a.bam,
        "bam_bytes": os.path.getsize(a.bam),
        "workers": a.workers,
        "runs": a.runs,
        "fasthts_sort_s": statistics.median(one),
        "dask_sort_s": statistics.median(dist),
        "ratio": statistics.median(dist) / statistics.median(one),
        "stages": med,
        "outputs_equal": same,
        "client_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_peak_rss_mb": workers_rss,
        "host": platform.node(),
        "load": os.getloadavg(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    print(json.dumps(row, indent=1))
    os.makedirs(a.out, exist_ok=True)
    name = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ") + "-dask-sort.json"
    with open(os.path.join(a.out, name), "w") as f:
        json.dump(row, f, indent=1)
    subprocess.run(["rm", "-rf", tmp])
    if not same:
        sys.exit("outputs differ")


if __name__ == "__main__":
    main()
