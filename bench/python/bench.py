#!/usr/bin/env python3
"""Benchmarks of the Python package against its peers, alternating, in one run.

    python3 bench/python/bench.py [--bam FILE] [--region CONTIG] [--runs N] [--only NAME ...]

Six jobs (each checks that both sides computed the same thing first):

* ``columns``: a region's records to numpy arrays (tid, pos, end, flag,
  mapq, len, mate_tid, mate_pos, tlen) with ``BamFile.columns`` (1 and 2
  threads) against pysam iterating the same records and collecting the same
  fields (``AlignmentFile(threads=1)``, and ``threads=2``: htslib inflates
  on 2 more threads while Python walks the records). Bar: >= 10x.
* ``iterate``: a region's records as objects with five attributes read
  (``query_name``, ``reference_start``, ``mapping_quality``, ``flag``,
  ``cigartuples``): the same script on ``fasthts.AlignmentFile`` and
  ``pysam.AlignmentFile`` (``threads=1`` and ``2`` each: fasthts inflates
  and decodes on that many threads ahead of the Python loop, pysam
  inflates on that many). Bar: ratio >= 1.
* ``pileup``: a pileup loop over the first references holding reads, at
  least 5 Mb of columns, summing ``nsegments`` per column; and
  ``count_coverage`` over the same references (the four arrays summed):
  the same script on ``fasthts.AlignmentFile`` and ``pysam.AlignmentFile``
  (``threads=1`` and ``2`` each). Bars: pileup >= 3x, count_coverage >= 5x.
* ``write``: a region's records with MAPQ >= 20 written to a new BAM
  (``AlignmentFile(out, mode, template=f, threads=t)``, reading with the
  same ``threads``), mode ``"wb"`` (compressed as pysam compresses) and
  ``"wbu"`` (uncompressed: the work apart from compression): the same
  script on either library, ``threads=1`` and ``2``; the two outputs'
  records (``samtools view --no-PG``) must be equal. Bar: >= 2x at
  ``threads=2``.
* ``kmer``: ``Countgraph.consume_seqfile`` against ``fasthts kmer count``'s
  own counting throughput (the CLI reports counting and saving apart), on a
  simulated FASTQ (~100 MB), 4 tables of 1e8. Bar: within 10 %.
* ``dask``: ``fasthts.dask.flagstat`` on a LocalCluster of 2 worker
  processes (1 thread each; cluster started beforehand) against
  ``fasthts flagstat -@ 2``. Bar: within 25 %.

Every measured run is its own process (``columns``, ``kmer``) that reports
the wall and CPU seconds (user + sys, all threads) of the measured section
only, and its peak RSS. Medians are reported, with the peer/fasthts ratios.
The machine may be shared: prefer the CPU seconds, and re-run on a quiet
machine for final figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/fasthts-target"))
FASTHTS = os.environ.get("FASTHTS_BIN", os.path.join(TARGET, "release", "fasthts"))

# Runs in a child process: measures one call, prints JSON.
CHILD = r"""
import json, os, resource, sys, time
import numpy as np
job, arg = sys.argv[1], json.loads(sys.argv[2])
def measure(fn):
    t0, c0 = time.perf_counter(), os.times()
    out = fn()
    t1, c1 = time.perf_counter(), os.times()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out, {"wall": t1 - t0, "cpu": (c1.user - c0.user) + (c1.system - c0.system), "rss_mb": rss / 1024}
if job == "fasthts-columns":
    import fasthts
    bam = fasthts.BamFile(arg["bam"])
    cols, m = measure(lambda: bam.columns(arg["region"], threads=arg["threads"]))
    m["check"] = [int(len(cols["pos"])), int(cols["pos"].astype(np.int64).sum()), int(cols["end"].sum()), int(cols["flag"].astype(np.int64).sum())]
elif job == "pysam-columns":
    import pysam
    f = pysam.AlignmentFile(arg["bam"], threads=arg["threads"])
    def run():
        tid, pos, end, flag, mapq, ln, mtid, mpos, tlen = ([] for _ in range(9))
        for a in f.fetch(arg["region"]):
            tid.append(a.reference_id); pos.append(a.reference_start)
            e = a.reference_end
            end.append(e if e is not None else a.reference_start + 1)
            flag.append(a.flag); mapq.append(a.mapping_quality); ln.append(a.query_length)
            mtid.append(a.next_reference_id); mpos.append(a.next_reference_start); tlen.append(a.template_length)
        return {"tid": np.array(tid, np.int32), "pos": np.array(pos, np.int32), "end": np.array(end, np.int64),
                "flag": np.array(flag, np.uint16), "mapq": np.array(mapq, np.uint8), "len": np.array(ln, np.int32),
                "mate_tid": np.array(mtid, np.int32), "mate_pos": np.array(mpos, np.int32), "tlen": np.array(tlen, np.int32)}
    cols, m = measure(run)
    m["check"] = [int(len(cols["pos"])), int(cols["pos"].astype(np.int64).sum()), int(cols["end"].sum()), int(cols["flag"].astype(np.int64).sum())]
elif job in ("fasthts-iterate", "pysam-iterate"):
    # The same script on either library: only the module differs.
    if job == "fasthts-iterate":
        import fasthts as lib
    else:
        import pysam as lib
    f = lib.AlignmentFile(arg["bam"], threads=arg["threads"])
    def run():
        n = pos = mapq = flag = ops = names = 0
        for a in f.fetch(arg["region"]):
            n += 1
            names += len(a.query_name)
            pos += a.reference_start
            mapq += a.mapping_quality
            flag += a.flag
            c = a.cigartuples
            ops += len(c) if c else 0
        return [n, names, pos, mapq, flag, ops]
    check, m = measure(run)
    m["check"] = check
elif job.endswith("-pileup") or job.endswith("-coverage"):
    # The same script on either library: only the module differs.
    if job.startswith("fasthts"):
        import fasthts as lib
    else:
        import pysam as lib
    f = lib.AlignmentFile(arg["bam"], threads=arg["threads"])
    def pileup():
        columns = depth = 0
        for contig in arg["contigs"]:
            for col in f.pileup(contig):
                columns += 1
                depth += col.nsegments
        return [columns, depth]
    def coverage():
        total = [0, 0, 0, 0]
        for contig in arg["contigs"]:
            for i, a in enumerate(f.count_coverage(contig)):
                total[i] += int(sum(a))
        return total
    check, m = measure(pileup if job.endswith("-pileup") else coverage)
    m["check"] = check
elif job in ("fasthts-write", "pysam-write"):
    # The same script on either library: only the module differs.
    if job == "fasthts-write":
        import fasthts as lib
    else:
        import pysam as lib
    def run():
        kept = 0
        with lib.AlignmentFile(arg["bam"], threads=arg["threads"]) as f:
            with lib.AlignmentFile(arg["out"], arg["mode"], template=f, threads=arg["threads"]) as out:
                for a in f.fetch(arg["region"]):
                    if a.mapping_quality >= 20:
                        out.write(a)
                        kept += 1
        return [kept]
    check, m = measure(run)
    m["check"] = check
elif job == "fasthts-kmer":
    import fasthts
    g = fasthts.Countgraph(arg["k"], arg["x"], arg["n"], True)
    (reads, kmers), m = measure(lambda: g.consume_seqfile(arg["fq"], arg["threads"]))
    m["check"] = [reads, g.n_occupied()]
    m["mbp_s"] = arg["bases"] / 1e6 / m["wall"]
print(json.dumps(m))
"""


def child(job, **arg):
    out = subprocess.run([sys.executable, "-c", CHILD, job, json.dumps(arg)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def med(runs, key):
    return statistics.median(r[key] for r in runs)


def report(name, runs, base=None):
    line = f"  {name:34s} wall {med(runs, 'wall'):8.3f} s   cpu {med(runs, 'cpu'):8.3f} s"
    if "rss_mb" in runs[0]:
        line += f"   rss {med(runs, 'rss_mb'):7.0f} MB"
    if base is not None:
        line += f"   wall ratio {med(runs, 'wall') / med(base, 'wall'):6.2f}   cpu ratio {med(runs, 'cpu') / med(base, 'cpu'):6.2f}"
    print(line, flush=True)


def bench_columns(bam, region, n):
    print(f"columns: {bam} region {region}, {n} alternating runs", flush=True)
    jobs = [
        ("fasthts BamFile.columns threads=1", "fasthts-columns", 1),
        ("fasthts BamFile.columns threads=2", "fasthts-columns", 2),
        ("pysam fetch + 9 fields, threads=1", "pysam-columns", 1),
        ("pysam fetch + 9 fields, threads=2", "pysam-columns", 2),
    ]
    runs = {j[0]: [] for j in jobs}
    for _ in range(n):
        for name, job, t in jobs:
            runs[name].append(child(job, bam=bam, region=region, threads=t))
    checks = {tuple(r["check"]) for rs in runs.values() for r in rs}
    assert len(checks) == 1, f"different records or fields: {checks}"
    print(f"  records: {next(iter(checks))[0]} (same records and field sums on both sides)")
    base = runs[jobs[0][0]]
    for name, _, _ in jobs:
        report(name, runs[name], base)
    one, two, ps, ps2 = (med(runs[j[0]], "wall") for j in jobs)
    cpu = [med(runs[j[0]], "cpu") for j in jobs]
    print(f"  => pysam(threads=1) / fasthts wall: {ps / one:.1f}x (1 thread), {ps / two:.1f}x (2 threads); "
          f"cpu: {cpu[2] / cpu[0]:.1f}x (1 thread), {cpu[2] / cpu[1]:.1f}x (2 threads)")
    print(f"  => pysam(threads=2) / fasthts(threads=2) wall: {ps2 / two:.1f}x; cpu: {cpu[3] / cpu[1]:.1f}x")


def bench_iterate(bam, region, n):
    print(f"iterate: {bam} region {region}, five attributes per record, {n} alternating runs", flush=True)
    jobs = [
        ("fasthts AlignmentFile threads=1", "fasthts-iterate", 1),
        ("fasthts AlignmentFile threads=2", "fasthts-iterate", 2),
        ("pysam AlignmentFile threads=1", "pysam-iterate", 1),
        ("pysam AlignmentFile threads=2", "pysam-iterate", 2),
    ]
    runs, check = alternate_by_threads(jobs, n, "records or attributes", bam=bam, region=region)
    print(f"  records: {check[0]} (same records and attribute sums on both sides)")
    report_by_threads(jobs, runs)


def alternate_by_threads(jobs, n, what, **arg):
    """`n` alternating rounds of `jobs` ((name, job, threads) each: fasthts
    at threads 1 and 2, then pysam at 1 and 2); their results must agree.
    Returns the runs by name and the one result."""
    runs = {j[0]: [] for j in jobs}
    for _ in range(n):
        for name, job, t in jobs:
            runs[name].append(child(job, threads=t, **arg))
    checks = {tuple(r["check"]) for rs in runs.values() for r in rs}
    assert len(checks) == 1, f"different {what}: {checks}"
    return runs, next(iter(checks))


def bench_write(bam, region, n):
    # "wb" compresses as pysam does (the system zlib, level 6: the same
    # bytes), "wbu" writes uncompressed BGZF: the rest of the work apart.
    for mode in ("wb", "wbu"):
        print(f"write: {bam} region {region}, records with MAPQ >= 20 to a new BAM, mode {mode!r}, {n} alternating runs", flush=True)
        work = tempfile.mkdtemp(prefix="fasthts-pybench-")
        outs = {lib: os.path.join(work, f"{lib}.bam") for lib in ("fasthts", "pysam")}
        jobs = [(f"{lib} read + write threads={t}", f"{lib}-write", t) for lib in ("fasthts", "pysam") for t in (1, 2)]
        runs = {j[0]: [] for j in jobs}
        for _ in range(n):
            for name, job, t in jobs:
                lib = job.split("-")[0]
                runs[name].append(child(job, bam=bam, region=region, threads=t, out=outs[lib], mode=mode))
        checks = {tuple(r["check"]) for rs in runs.values() for r in rs}
        assert len(checks) == 1, f"different record counts: {checks}"
        digests = set()
        for path in outs.values():
            view = subprocess.run(f"samtools view --no-PG {path} | sha256sum", shell=True, check=True, capture_output=True, text=True)
            digests.add(view.stdout.split()[0])
        assert len(digests) == 1, "the two outputs' records differ"
        same = open(outs["fasthts"], "rb").read() == open(outs["pysam"], "rb").read()
        print(f"  records written: {next(iter(checks))[0]} (records equal on both sides; files {'byte-identical' if same else 'differ in bytes'})")
        report_by_threads(jobs, runs)
        for p in outs.values():
            os.remove(p)
        os.rmdir(work)


def report_by_threads(jobs, runs):
    base = runs[jobs[0][0]]
    for name, _, _ in jobs:
        report(name, runs[name], base)
    walls = [med(runs[j[0]], "wall") for j in jobs]
    print(f"  => pysam / fasthts wall: {walls[2] / walls[0]:.2f}x (threads=1), {walls[3] / walls[1]:.2f}x (threads=2)", flush=True)


def contigs_of(bam, at_least):
    """The first references holding reads, until `at_least` bases are covered."""
    import pysam

    out, total = [], 0
    for s in pysam.AlignmentFile(bam).get_index_statistics():
        if s.mapped and total < at_least:
            out.append(s.contig)
            total += pysam.AlignmentFile(bam).get_reference_length(s.contig)
    return out, total


def bench_pileup(bam, n):
    contigs, span = contigs_of(bam, 5_000_000)
    for what in ("pileup", "coverage"):
        print(f"{what}: {bam} {','.join(contigs)} ({span / 1e6:.2f} Mb), {n} alternating runs", flush=True)
        jobs = [(f"{lib} {what} threads={t}", f"{lib}-{what}", t) for lib in ("fasthts", "pysam") for t in (1, 2)]
        runs, check = alternate_by_threads(jobs, n, f"{what} results", bam=bam, contigs=contigs)
        print(f"  result: {check} (the same on both sides)")
        report_by_threads(jobs, runs)


def make_fastq(path):
    import random

    random.seed(42)
    G = 5_000_000
    g = bytearray(random.choice(b"ACGT") for _ in range(G))
    comp = bytes.maketrans(b"ACGT", b"TGCA")
    q = b"I" * 150
    with open(path, "wb") as out:
        for i in range(320_000):
            p = random.randrange(0, G - 150)
            s = bytearray(g[p : p + 150])
            for _ in range(2):
                s[random.randrange(150)] = random.choice(b"ACGT")
            if i & 1:
                s = bytes(s).translate(comp)[::-1]
            out.write(b"@r%d\n%s\n+\n%s\n" % (i, bytes(s), q))
    return 320_000 * 150


def bench_kmer(n, threads_list=(1, 2)):
    work = tempfile.mkdtemp(prefix="fasthts-pybench-")
    fq = os.path.join(work, "sim.fq")
    bases = make_fastq(fq)
    k, x, nt = 32, 100_000_000, 4
    print(f"kmer: {fq} ({os.path.getsize(fq) >> 20} MB, {bases / 1e6:.0f} Mbp), k={k}, 4 tables of 1e8, {n} alternating runs", flush=True)
    for t in threads_list:
        py, cli = [], []
        for _ in range(n):
            py.append(child("fasthts-kmer", fq=fq, k=k, x=x, n=nt, threads=t, bases=bases))
            ct = os.path.join(work, "out.ct")
            t0, c0 = time.perf_counter(), os.times()
            p = subprocess.run([FASTHTS, "kmer", "count", "--timings", "-f", "-k", str(k), "-N", str(nt), "-x", "1e8", "-T", str(t), ct, fq],
                               check=True, capture_output=True, text=True)
            t1, c1 = time.perf_counter(), os.times()
            line = [l for l in p.stderr.splitlines() if l.startswith("counted ")][0]
            # "counted R reads, B bp in S s (M Mbp/s); saved in T s"
            secs = float(line.split(" in ")[1].split(" s")[0])
            cli.append({"wall": secs, "cpu": (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system),
                        "process_wall": t1 - t0, "mbp_s": bases / 1e6 / secs})
        print(f"  threads={t}: Countgraph.consume_seqfile {statistics.median(r['mbp_s'] for r in py):7.1f} Mbp/s "
              f"(wall {med(py, 'wall'):.3f} s, cpu {med(py, 'cpu'):.3f} s);  CLI counting {statistics.median(r['mbp_s'] for r in cli):7.1f} Mbp/s "
              f"(count wall {med(cli, 'wall'):.3f} s; whole process incl. saving: wall {med(cli, 'process_wall'):.3f} s, cpu {med(cli, 'cpu'):.3f} s)"
              f"  => Python/CLI throughput {statistics.median(r['mbp_s'] for r in py) / statistics.median(r['mbp_s'] for r in cli):.3f}", flush=True)
    os.remove(fq)


def bench_dask(bam, n):
    import distributed

    import fasthts
    import fasthts.dask as fdask

    print(f"dask: flagstat {bam}, LocalCluster 2 workers x 1 thread vs `fasthts flagstat -@ 2`, {n} alternating runs", flush=True)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    want = subprocess.run([FASTHTS, "flagstat", bam], check=True, capture_output=True, text=True).stdout
    assert str(fdask.flagstat(client, bam)) == want, "dask flagstat differs from the CLI"
    cpu_of_workers = lambda: sum(sum(v) for v in client.run(lambda: tuple(os.times())[:2]).values())
    d, c = [], []
    for _ in range(n):
        w0, t0, c0 = cpu_of_workers(), time.perf_counter(), os.times()
        fdask.flagstat(client, bam)
        t1, c1, w1 = time.perf_counter(), os.times(), cpu_of_workers()
        d.append({"wall": t1 - t0, "cpu": (w1 - w0) + (c1.user - c0.user) + (c1.system - c0.system)})
        t0, c0 = time.perf_counter(), os.times()
        subprocess.run([FASTHTS, "flagstat", "-@", "2", bam], check=True, capture_output=True)
        t1, c1 = time.perf_counter(), os.times()
        c.append({"wall": t1 - t0, "cpu": (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)})
    report("CLI fasthts flagstat -@ 2", c)
    report("fasthts.dask.flagstat (2 workers)", d, c)
    print(f"  => dask / CLI wall: {med(d, 'wall') / med(c, 'wall'):.2f}", flush=True)
    client.close()
    cluster.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_bam = os.path.join(ROOT, "bench", "data", "1g.bam")
    ap.add_argument("--bam", default=default_bam)
    ap.add_argument("--region", default="chr1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=["columns", "iterate", "write", "pileup", "kmer", "dask"],
                    default=["columns", "iterate", "write", "pileup", "kmer", "dask"])
    a = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()}; fasthts binary {FASTHTS}")
    if "columns" in a.only:
        bench_columns(a.bam, a.region, a.runs)
    if "iterate" in a.only:
        bench_iterate(a.bam, a.region, a.runs)
    if "write" in a.only:
        bench_write(a.bam, a.region, a.runs)
    if "pileup" in a.only:
        bench_pileup(a.bam, a.runs)
    if "kmer" in a.only:
        bench_kmer(a.runs)
    if "dask" in a.only:
        bench_dask(a.bam, a.runs)


if __name__ == "__main__":
    main()
