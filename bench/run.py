#!/usr/bin/env python3
"""Time fasthts against its peers on the same BAM, alternating, in one run.

    python3 bench/run.py [--bam FILE] [--runs N] [--threads N] [--out DIR]
    python3 bench/run.py --cram FILE --reference FA [--jobs flagstat,index,sort] [--runs N]

Without --bam, bench/data/1g.bam is made (or reused) with
scripts/gen-bam.sh --target-bytes 3600M --seed 11 (about 0.9 GB, 9.2 M
records) and indexed with samtools. Every tool's output is checked against
samtools' before anything is timed; a fast wrong answer aborts the run.

Reported per job: median wall seconds, median CPU seconds (user + sys),
median peak RSS, and the ratio of the peer's median wall time to fasthts'.
Also the physical limit: single-thread inflate of every block of the file
(examples/inflate_bound), and the 2-core bound derived from it.
Peers missing from PATH (sambamba, biobambam2's bamsort) are skipped with a
note. The sort jobs use a shuffled BAM of about 300 MB (bench/data/
300m.shuffled.bam, generated with --unsorted --target-bytes 870M --seed 12):
default settings, -m 64M, -l 1, and SAM on standard input. The view jobs
(--jobs view, not in the default set) are issue 23's bars: `view -c` of the
whole file and of 1,000 random 10 kb regions (seeded; on references with
reads), and `view -b -o` of a 10 % subsample, each against `samtools view`
at the same -@. --jobs view-out: the whole file, no regions, as SAM text
(to /dev/null; fasthts at -@1 too), as BAM (`-b -o`) and counted (`-c`),
against samtools at the same -@ (issue 39 item 18). --jobs view-filters: `view -c` with an `-e` expression
(strings and a regex) and with `-d RG:rg1`, against samtools at the same -@. --jobs depth: `depth -a` of the whole file and of 1,000
random 10 kb regions (a BED) against `samtools depth -@`, and the whole
file against `mosdepth -t` (MOSDEPTH, or on the PATH; its per-base bed.gz).
--jobs cat: `cat --no-PG -o` of the file split into 4 BAMs by reference
(made once by samtools view) against `samtools cat`, outputs compared byte
for byte.
--jobs merge: the BAM dealt record by record into 4 coordinate-sorted parts
(BAM.part0.bam ... BAM.part3.bam beside it, made once), merged back with
`merge -@ N -s 1` against `samtools merge` at the same -@, outputs compared
before anything is timed.
--jobs stats, coverage: against samtools stats -@ N (text equal but for
the first line, which names the program) and samtools coverage (no
threads option). --jobs fastq, markdup: the BAM collated once by samtools
(BAM.collated.bam beside it); fastq of it (outputs' SHA-256 compared), and
markdup of it through samtools fixmate -m and sort (BAM.markdup-ready.bam,
made once), records compared; each against samtools at the same -@.
--jobs mosdepth: `mosdepth -t N` against mosdepth (MOSDEPTH, or on the
PATH), the per-base, summary and distribution texts compared. --jobs
sormadup: the collated BAM to a marked, sorted BAM against samtools'
`fixmate -m -u | sort -u | markdup` of it, each at -@ N, records compared.
--jobs chain: the same samtools chain against fasthts' own three commands
in the same chain (issue 35's "chain at least 2x samtools' chain").
--jobs remote: the BAM over HTTP from nginx on loopback (bench/remote.py:
flagstat of the URL and view -c of 20 random 20 kb regions, bytes fetched
and times against samtools on the same URL; --rtt-ms N puts the clients
behind an N ms round trip).

With --cram (issue 21's bars; its reference FASTA with --reference), the
jobs are on that CRAM instead: `flagstat`, `index` (the .crai, bytes
compared), `depth` (`-a`, rows compared) and `sort` (CRAM in, BAM out,
--sort-runs times; records compared) against samtools at the same -@. The bench CRAM is made from
the foundation's 300m.bam with the reference of its generator:
    fasthts-testgen --seed 13 --reads 1 --reference-fasta ref13.fa > /dev/null
    samtools view -@2 -C -T ref13.fa --output-fmt-option version=3.0 -o 300m.cram 300m.bam
"""
import argparse, datetime, json, os, platform, shutil, socket, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/fasthts-target"))


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def timed(cmd, stdout=subprocess.DEVNULL, cwd=None):
    """Runs cmd under /usr/bin/time; returns (wall, cpu, maxrss_kb)."""
    with tempfile.NamedTemporaryFile("r") as t:
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S %M"] + cmd, check=True, stdout=stdout, stderr=subprocess.DEVNULL, cwd=cwd)
        wall, user, sys_, rss = t.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss)


def build():
    env = dict(os.environ, CARGO_TARGET_DIR=TARGET)
    # Two commands: with --example in the same one, cargo builds only the
    # selected targets and the fasthts binary would be whatever was there.
    sh(["cargo", "build", "--quiet", "--release", "-p", "fasthts-cli", "--bin", "fasthts"], cwd=ROOT, env=env)
    sh(["cargo", "build", "--quiet", "--release", "-p", "fasthts", "--example", "inflate_bound"], cwd=ROOT, env=env)
    return os.path.join(TARGET, "release", "fasthts"), os.path.join(TARGET, "release", "examples", "inflate_bound")


def build_rocksdb(tmp):
    """fasthts with the rocksdb sort engine (cargo feature), copied to tmp;
    None when the system has no librocksdb-dev."""
    if not os.path.exists("/usr/include/rocksdb/c.h"):
        return None
    env = dict(os.environ, CARGO_TARGET_DIR=TARGET)
    sh(["cargo", "build", "--quiet", "--release", "-p", "fasthts-cli", "--features", "rocksdb"], cwd=ROOT, env=env)
    path = os.path.join(tmp, "fasthts-rocksdb")
    shutil.copy(os.path.join(TARGET, "release", "fasthts"), path)
    # The plain build again, for the other jobs' binary path.
    build()
    return path


def ensure_bam(path):
    if path:
        return path
    path = os.path.join(ROOT, "bench", "data", "1g.bam")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        sh(["bash", os.path.join(ROOT, "scripts", "gen-bam.sh"), path, "--target-bytes", "3600M", "--seed", "11"])
    if not os.path.exists(path + ".bai"):
        sh(["samtools", "index", "-@2", path])
    return path


def sha256_of(cmd):
    """SHA-256 of a command's standard output, streamed."""
    import hashlib
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
    assert p.returncode == 0, cmd
    return h.hexdigest()


def alternate_tools(job, tools, n, report, before_each=None):
    """Runs each of `tools` (fasthts first) in turn, `n` rounds, and
    reports their medians, the peers' as ratios to fasthts'."""
    runs = {k: [] for k in tools}
    for _ in range(n):
        for k, cmd in tools.items():
            if before_each:
                before_each(k)
            runs[k].append(timed(cmd))
    base = report(job, "fasthts", runs["fasthts"])
    for k in tools:
        if k != "fasthts":
            report(job, k, runs[k], base)


def view_digest(bam):
    """SHA-256 of `samtools view -h --no-PG`, streamed (outputs can be GBs)."""
    import hashlib
    h = hashlib.sha256()
    with subprocess.Popen(["samtools", "view", "-h", "--no-PG", bam], stdout=subprocess.PIPE) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
    assert p.returncode == 0
    return h.hexdigest()


def stdout_digest(cmd):
    """SHA-256 of a command's standard output, streamed (SAM text can be GBs)."""
    import hashlib
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as p:
        for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
            h.update(chunk)
    assert p.returncode == 0, cmd
    return h.hexdigest()


def output(cmd):
    return subprocess.run(cmd, check=True, capture_output=True).stdout


def split_bam(bam, parts):
    """Deals the records of `bam` into len(parts) BAMs, record by record, each
    with the whole header: each part keeps the input's (coordinate) order."""
    writers = [subprocess.Popen(["samtools", "view", "-b", "--no-PG", "-o", p + ".tmp", "-"], stdin=subprocess.PIPE) for p in parts]
    with subprocess.Popen(["samtools", "view", "-h", "--no-PG", bam], stdout=subprocess.PIPE) as src:
        n = 0
        for line in src.stdout:
            if line.startswith(b"@"):
                for w in writers:
                    w.stdin.write(line)
            else:
                writers[n % len(writers)].stdin.write(line)
                n += 1
    assert src.returncode == 0
    for w, p in zip(writers, parts):
        w.stdin.close()
        assert w.wait() == 0
        os.rename(p + ".tmp", p)


def random_windows(bam, first, count=1000, width=10_000):
    """`count` random windows of `width` bases, as (reference, start >=
    `first`), on the references with reads (uniform over references; seeded,
    so every run and tool gets the same ones)."""
    import random
    rng = random.Random(23)
    refs = []
    for line in output(["samtools", "idxstats", bam]).decode().splitlines():
        name, length, mapped = line.split("\t")[:3]
        if name != "*" and int(mapped) > 0 and int(length) > width:
            refs.append((name, int(length)))
    windows = []
    for _ in range(count):
        name, length = rng.choice(refs)
        windows.append((name, rng.randrange(first, length - width)))
    return windows


def cram_jobs(a, fasthts, tmp, report, lines):
    """flagstat, index and sort (BAM out) of a.cram against samtools, each
    output checked equal before anything is timed; tools alternate."""
    cram, ref, t = a.cram, a.reference, str(a.threads)
    jobs = (a.jobs or "flagstat,index,sort").split(",")

    def alternate(job, tools, n, before_each=None):
        alternate_tools(job, tools, n, report, before_each)

    if "flagstat" in jobs:
        tools = {"fasthts": [fasthts, "flagstat", "-@", t, cram], "samtools": ["samtools", "flagstat", "-@", t, cram]}
        assert output(tools["fasthts"]) == output(tools["samtools"]), "fasthts flagstat differs from samtools (CRAM)"
        alternate("cram flagstat", tools, a.runs)

    if "index" in jobs:
        ours, theirs = os.path.join(tmp, "f.crai"), os.path.join(tmp, "s.crai")
        tools = {"fasthts": [fasthts, "index", "-@", t, "-o", ours, cram], "samtools": ["samtools", "index", "-@", t, "-o", theirs, cram]}
        for cmd in tools.values():
            sh(cmd)
        assert open(ours, "rb").read() == open(theirs, "rb").read(), "fasthts .crai differs from samtools index"
        alternate("cram index", tools, a.runs)
        assert open(ours, "rb").read() == open(theirs, "rb").read(), "fasthts .crai differs from samtools index"

    if "depth" in jobs:
        # Depth needs no bases: neither decodes them (nor reads the
        # reference) without -l.
        args = ["-a", cram]
        tools = {"fasthts": [fasthts, "depth", "-@", t, *args], "samtools": ["samtools", "depth", "-@", t, *args]}
        assert output(tools["fasthts"]) == output(tools["samtools"]), "fasthts depth differs from samtools (CRAM)"
        alternate("cram depth -a", tools, a.runs)

    if "sort" in jobs:
        out = {"fasthts": os.path.join(tmp, "cf.bam"), "samtools": os.path.join(tmp, "cs.bam")}
        tools = {
            "fasthts": [fasthts, "sort", "-@", t, "--no-PG", "--reference", ref, "-T", os.path.join(tmp, "cf"), "-o", out["fasthts"], cram],
            "samtools": ["samtools", "sort", "-@", t, "--no-PG", "--reference", ref, "-T", os.path.join(tmp, "cs"), "-o", out["samtools"], cram],
        }

        def fresh(tool):
            if os.path.exists(out[tool]):
                os.remove(out[tool])
        for cmd in tools.values():
            sh(cmd)
        assert view_digest(out["fasthts"]) == view_digest(out["samtools"]), "fasthts sort (CRAM in) differs from samtools sort"
        alternate("cram sort", tools, a.sort_runs, fresh)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bam")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "runs"))
    ap.add_argument("--jobs", help="comma-separated [flagstat,index,sort,inflate; view, view-out, view-filters, depth, cat, merge, stats, coverage, fastq, markdup, mosdepth, sormadup, chain, remote; with --cram: flagstat,index,depth,sort]")
    ap.add_argument("--rtt-ms", type=float, default=0, help="--jobs remote: the clients' round trip to the server (a network namespace with netem; root)")
    ap.add_argument("--sort-runs", type=int, default=3)
    ap.add_argument("--sort-bam", help="input of the sort jobs [bench/data/300m.shuffled.bam, generated]")
    ap.add_argument("--cram", help="time the CRAM jobs (flagstat, index, sort) on this CRAM instead")
    ap.add_argument("--reference", help="the CRAM's reference FASTA (sort decodes every field)")
    a = ap.parse_args()
    if a.cram and not a.reference:
        ap.error("--cram needs --reference")
    fasthts, inflate_bound = build()
    bam = a.cram or ensure_bam(a.bam)
    jobs = [] if a.cram else (a.jobs or "flagstat,index,sort,inflate").split(",")
    t = str(a.threads)
    tmp = tempfile.mkdtemp(prefix="fasthts-bench-")
    results = {}
    lines = []

    def report(job, tool, runs, base=None):
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = statistics.median(r[2] for r in runs)
        results.setdefault(job, {})[tool] = {"runs": runs, "median_wall": wall, "median_cpu": cpu, "median_rss_kb": rss}
        ratio = f"  ratio(peer/fasthts)={wall / base:.2f}x" if base else ""
        line = f"{job:10s} {tool:10s} median wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak RSS {rss / 1024:8.1f} MB{ratio}"
        print(line, flush=True)
        lines.append(line)
        return wall

    if "flagstat" in jobs:
        expected = output(["samtools", "flagstat", "-@", t, bam])
        assert output([fasthts, "flagstat", "-@", t, bam]) == expected, "fasthts flagstat differs from samtools"
        # The same BAM without an index beside it: fasthts' sequential path.
        noidx = os.path.join(tmp, "noindex.bam")
        os.symlink(os.path.abspath(bam), noidx)
        assert output([fasthts, "flagstat", "-@", t, noidx]) == expected, "fasthts flagstat (no index) differs"
        tools = {"fasthts": [fasthts, "flagstat", "-@", t, bam], "fasthts-seq": [fasthts, "flagstat", "-@", t, noidx],
                 "samtools": ["samtools", "flagstat", "-@", t, bam]}
        if shutil.which("sambamba"):
            tools["sambamba"] = ["sambamba", "flagstat", "-t", t, bam]
        else:
            print("sambamba not found: skipped")
        # The physical limit, taken in the same alternation: the host's speed
        # drifts by 10-20 % over minutes, which a bound measured before or
        # after the tools would fold into the comparison.
        tools["inflate-1t"] = [inflate_bound, bam, "1"]
        runs = {k: [] for k in tools}
        for _ in range(a.runs):
            for k, cmd in tools.items():
                runs[k].append(timed(cmd))
        base = report("flagstat", "fasthts", runs["fasthts"])
        for k in tools:
            if k not in ("fasthts", "inflate-1t"):
                report("flagstat", k, runs[k], base)
        one = report("flagstat", "inflate-1t", runs["inflate-1t"])
        bound = one / a.threads
        for k in ("fasthts", "fasthts-seq"):
            wall = results["flagstat"][k]["median_wall"]
            line = f"flagstat   {k:10s} median wall / {a.threads}-core inflate bound ({bound:.2f} s, same runs) = {wall / bound:.3f}"
            print(line)
            lines.append(line)

    if "index" in jobs:
        ours, theirs = os.path.join(tmp, "f.bai"), os.path.join(tmp, "s.bai")
        tools = {"fasthts": [fasthts, "index", "-@", t, bam, ours], "samtools": ["samtools", "index", "-@", t, bam, theirs]}
        runs = {k: [] for k in tools}
        for _ in range(a.runs):
            for k, cmd in tools.items():
                runs[k].append(timed(cmd))
        assert open(ours, "rb").read() == open(theirs, "rb").read(), "fasthts index differs from samtools index"
        base = report("index", "fasthts", runs["fasthts"])
        report("index", "samtools", runs["samtools"], base)

    if "sort" in jobs:
        # The bar: a shuffled BAM of about 300 MB (records of the same
        # kind as the 1 GB BAM, in shuffled order), made once.
        shuffled = a.sort_bam or os.path.join(ROOT, "bench", "data", "300m.shuffled.bam")
        if not os.path.exists(shuffled):
            sh(["bash", os.path.join(ROOT, "scripts", "gen-bam.sh"), shuffled, "--unsorted", "--target-bytes", "870M", "--seed", "12"])
        sam = os.path.join(tmp, "shuffled.sam")
        with open(sam, "wb") as f:
            sh(["samtools", "view", "-h", "--no-PG", shuffled], stdout=f)
        out = {k: os.path.join(tmp, k + ".bam") for k in ("f", "s", "b", "m", "r")}
        dest = {"fasthts": out["f"], "samtools": out["s"], "bamsort": out["b"], "sambamba": out["m"], "fasthts-rocksdb": out["r"]}
        with_rocksdb = build_rocksdb(tmp)
        if not with_rocksdb:
            print("librocksdb-dev not found: the rocksdb engine is skipped")

        def fresh(tool):
            # Each timed sort writes a new file, as in a pipeline: replacing
            # the previous run's output costs the filesystem about 0.1 s
            # per 300 MB here (ext4 mounted with discard), at open for
            # samtools (O_TRUNC), at the rename for fasthts.
            if os.path.exists(dest[tool]):
                os.remove(dest[tool])
        variants = [
            ("default", [], []),
            ("-m 64M", ["-m", "64M"], ["-m", "64M"]),
            ("-l 1", ["-l", "1"], ["-l", "1"]),
        ]
        for name, ours_args, theirs_args in variants:
            tools = {
                "fasthts": [fasthts, "sort", "-@", t, "--no-PG", *ours_args, "-T", os.path.join(tmp, "f"), "-o", out["f"], shuffled],
                "samtools": ["samtools", "sort", "-@", t, "--no-PG", *theirs_args, "-T", os.path.join(tmp, "s"), "-o", out["s"], shuffled],
            }
            if with_rocksdb:
                tools["fasthts-rocksdb"] = [with_rocksdb, "sort", "--engine", "rocksdb", "-@", t, "--no-PG", *ours_args,
                                            "-T", os.path.join(tmp, "r"), "-o", out["r"], shuffled]
            if name == "default":
                if shutil.which("sambamba"):
                    tools["sambamba"] = ["sambamba", "sort", "-t", t, "--tmpdir", tmp, "-o", out["m"], shuffled]
                else:
                    print("sambamba not found: skipped")
                if shutil.which("bamsort"):
                    tools["bamsort"] = ["sh", "-c", f"bamsort SO=coordinate inputthreads={t} outputthreads={t} "
                                        f"tmpfile={tmp}/bb < {shuffled} > {out['b']}"]
                else:
                    print("biobambam2 bamsort not found: skipped")
            runs = {k: [] for k in tools}
            for _ in range(a.sort_runs):
                for k, cmd in tools.items():
                    fresh(k)
                    runs[k].append(timed(cmd))
            assert view_digest(out["f"]) == view_digest(out["s"]), f"fasthts sort {name} output differs from samtools sort"
            if with_rocksdb:
                assert view_digest(out["r"]) == view_digest(out["s"]), f"fasthts sort --engine rocksdb {name} output differs from samtools sort"
            job = f"sort {name}"
            base = report(job, "fasthts", runs["fasthts"])
            for k in tools:
                if k != "fasthts":
                    report(job, k, runs[k], base)
            size = os.path.getsize(out["f"]) / os.path.getsize(out["s"])
            line = f"{job:10s} output size fasthts/samtools = {size:.4f}"
            print(line)
            lines.append(line)
        # SAM on standard input, as an aligner streams it.
        tools = {
            "fasthts": ["sh", "-c", f"{fasthts} sort -@ {t} --no-PG -T {tmp}/f -o {out['f']} < {sam}"],
            "samtools": ["sh", "-c", f"samtools sort -@ {t} --no-PG -T {tmp}/s -o {out['s']} < {sam}"],
        }
        runs = {k: [] for k in tools}
        for _ in range(a.sort_runs):
            for k, cmd in tools.items():
                fresh(k)
                runs[k].append(timed(cmd))
        assert view_digest(out["f"]) == view_digest(out["s"]), "fasthts sort (SAM stdin) output differs from samtools sort"
        base = report("sort SAM stdin", "fasthts", runs["fasthts"])
        report("sort SAM stdin", "samtools", runs["samtools"], base)

    if "view" in jobs:
        # The regions: 1,000 random 10 kb windows on references with reads
        # (seeded, so every run and tool gets the same ones).
        regions = [f"{name}:{beg}-{beg + 9_999}" for name, beg in random_windows(bam, first=1)]
        sub_f, sub_s = os.path.join(tmp, "sub.f.bam"), os.path.join(tmp, "sub.s.bam")
        sub = ["--no-PG", "-b", "--subsample", "0.1", "--subsample-seed", "1"]
        variants = [
            ("view -c", ["-c", bam], None),
            ("view -c 1k regions", ["-c", bam, *regions], None),
            ("view -b 10%", [*sub, "-o", sub_f, bam], [*sub, "-o", sub_s, bam]),
        ]
        for job, ours_args, theirs_args in variants:
            tools = {"fasthts": [fasthts, "view", "-@", t, *ours_args], "samtools": ["samtools", "view", "-@", t, *(theirs_args or ours_args)]}
            if theirs_args is None:
                assert output(tools["fasthts"]) == output(tools["samtools"]), f"fasthts {job} differs from samtools"
            runs = {k: [] for k in tools}
            for _ in range(a.runs):
                for k, cmd in tools.items():
                    runs[k].append(timed(cmd))
            if theirs_args is not None:
                assert view_digest(sub_f) == view_digest(sub_s), f"fasthts {job} output differs from samtools"
            base = report(job, "fasthts", runs["fasthts"])
            report(job, "samtools", runs["samtools"], base)

    if "view-out" in jobs:
        # Issue 39 item 18: a whole BAM, no regions, out as SAM text (to
        # /dev/null), as BAM, and counted; fasthts also at -@1, to show
        # what the second thread brings. Outputs compared first.
        out_f, out_s = os.path.join(tmp, "out.f.bam"), os.path.join(tmp, "out.s.bam")
        variants = [
            ("view SAM", ["--no-PG", bam], None),
            ("view -b", ["--no-PG", "-b", "-o", out_f, bam], ["--no-PG", "-b", "-o", out_s, bam]),
            ("view -c", ["-c", bam], None),
        ]
        for job, ours_args, theirs_args in variants:
            tools = {"fasthts": [fasthts, "view", "-@", t, *ours_args], "samtools": ["samtools", "view", "-@", t, *(theirs_args or ours_args)]}
            if job == "view SAM":
                tools["fasthts-@1"] = [fasthts, "view", "-@", "1", *ours_args]
                assert stdout_digest(tools["fasthts"]) == stdout_digest(tools["samtools"]), f"fasthts {job} differs from samtools"
                assert stdout_digest(tools["fasthts-@1"]) == stdout_digest(tools["samtools"]), f"fasthts -@1 {job} differs"
            elif theirs_args is None:
                assert output(tools["fasthts"]) == output(tools["samtools"]), f"fasthts {job} differs from samtools"
            runs = {k: [] for k in tools}
            for _ in range(a.runs):
                for k, cmd in tools.items():
                    runs[k].append(timed(cmd))
            if theirs_args is not None:
                assert view_digest(out_f) == view_digest(out_s), f"fasthts {job} output differs from samtools"
            base = report(job, "fasthts", runs["fasthts"])
            for k in tools:
                if k != "fasthts":
                    report(job, k, runs[k], base)

    if "view-filters" in jobs:
        # Record filters evaluated on every record: an -e expression on
        # strings and a regex, and -d on a tag (counts compared).
        for job, args in [
            ("view -c -e", ["-c", "-e", 'rname == "chr2" || [RG] == "x" || qname =~ "1$"', bam]),
            ("view -c -d", ["-c", "-d", "RG:rg1", bam]),
        ]:
            tools = {"fasthts": [fasthts, "view", "-@", t, *args], "samtools": ["samtools", "view", "-@", t, *args]}
            assert output(tools["fasthts"]) == output(tools["samtools"]), f"fasthts {job} differs from samtools"
            runs = {k: [] for k in tools}
            for _ in range(a.runs):
                for k, cmd in tools.items():
                    runs[k].append(timed(cmd))
            base = report(job, "fasthts", runs["fasthts"])
            report(job, "samtools", runs["samtools"], base)

    if "depth" in jobs:
        # The peers as their users run them: samtools depth with its -@
        # threads, and mosdepth (what people pick for depth; MOSDEPTH or on
        # the PATH) with -t, writing its per-base bed.gz (its everyday
        # output; it also compresses). The regions: 1,000 random 10 kb
        # windows (seeded), as a BED.
        bed = os.path.join(tmp, "regions.bed")
        with open(bed, "w") as f:
            for name, beg in random_windows(bam, first=0):
                f.write(f"{name}\t{beg}\t{beg + 10_000}\n")
        mosdepth = os.environ.get("MOSDEPTH") or shutil.which("mosdepth")
        for job, args in [("depth -a", ["-a", bam]), ("depth -a 1k regions", ["-a", "-b", bed, bam])]:
            tools = {"fasthts": [fasthts, "depth", "-@", t, *args], "samtools": ["samtools", "depth", "-@", t, *args]}
            assert output(tools["fasthts"]) == output(tools["samtools"]), f"fasthts {job} differs from samtools"
            if mosdepth and job == "depth -a":
                tools["mosdepth"] = [mosdepth, "-t", t, os.path.join(tmp, "mosdepth"), bam]
            runs = {k: [] for k in tools}
            for _ in range(a.runs):
                for k, cmd in tools.items():
                    runs[k].append(timed(cmd))
            base = report(job, "fasthts", runs["fasthts"])
            for k in tools:
                if k != "fasthts":
                    report(job, k, runs[k], base)

    if "cat" in jobs:
        # The file split into 4 BAMs by reference (in the file's order, the
        # unplaced reads last: their concatenation is sorted again), made
        # once by samtools; both tools write a file, compared byte for byte.
        names = [l.split("\t")[0] for l in output(["samtools", "idxstats", bam]).decode().splitlines()]
        size = -(-len(names) // 4)
        groups = [g for g in (names[i * size:(i + 1) * size] for i in range(4)) if g]
        parts = []
        for i, group in enumerate(groups):
            part = os.path.join(tmp, f"part{i}.bam")
            sh(["samtools", "view", "-@", t, "--no-PG", "-b", "-o", part, bam, *group])
            parts.append(part)
        out = {"fasthts": os.path.join(tmp, "cat-f.bam"), "samtools": os.path.join(tmp, "cat-s.bam")}
        tools = {"fasthts": [fasthts, "cat", "--no-PG", "-o", out["fasthts"], *parts],
                 "samtools": ["samtools", "cat", "--no-PG", "-o", out["samtools"], *parts]}
        for cmd in tools.values():
            sh(cmd)
        assert open(out["fasthts"], "rb").read() == open(out["samtools"], "rb").read(), "fasthts cat differs from samtools cat"
        runs = {k: [] for k in tools}
        for _ in range(a.runs):
            for k, cmd in tools.items():
                runs[k].append(timed(cmd))
        base = report("cat 4 parts", "fasthts", runs["fasthts"])
        report("cat 4 parts", "samtools", runs["samtools"], base)

    if "merge" in jobs:
        # Issue 36 item 1: the bench BAM dealt into 4 coordinate-sorted parts
        # (the same header, so samtools renames colliding @RG/@PG IDs; -s 1
        # fixes the suffixes), merged back. Each run writes a new file.
        parts = [f"{os.path.splitext(bam)[0]}.part{k}.bam" for k in range(4)]
        if not all(os.path.exists(p) for p in parts):
            split_bam(bam, parts)
        out_f, out_s = os.path.join(tmp, "merged.f.bam"), os.path.join(tmp, "merged.s.bam")
        tools = {
            "fasthts": [fasthts, "merge", "-@", t, "--no-PG", "-s", "1", "-o", out_f, *parts],
            "samtools": ["samtools", "merge", "-@", t, "--no-PG", "-s", "1", "-o", out_s, *parts],
        }
        dest = {"fasthts": out_f, "samtools": out_s}
        for k, cmd in tools.items():
            sh(cmd, stderr=subprocess.DEVNULL)
        assert view_digest(out_f) == view_digest(out_s), "fasthts merge output differs from samtools merge"
        runs = {k: [] for k in tools}
        for _ in range(a.runs):
            for k, cmd in tools.items():
                os.remove(dest[k])
                runs[k].append(timed(cmd))
        base = report("merge", "fasthts", runs["fasthts"])
        report("merge", "samtools", runs["samtools"], base)

    def alternate(job, tools, before_each=None):
        alternate_tools(job, tools, a.runs, report, before_each)

    if "stats" in jobs:
        # Issue 34: the text equal but for the first line, which names the
        # program (MultiQC and plot-bamstats read the rest).
        tools = {"fasthts": [fasthts, "stats", "-@", t, bam], "samtools": ["samtools", "stats", "-@", t, bam]}
        body = {k: output(cmd).split(b"\n", 1)[1] for k, cmd in tools.items()}
        assert body["fasthts"] == body["samtools"], "fasthts stats differs from samtools stats"
        alternate("stats", tools)

    if "coverage" in jobs:
        # samtools coverage has no thread option.
        tools = {"fasthts": [fasthts, "coverage", "-@", t, bam], "samtools": ["samtools", "coverage", bam]}
        assert output(tools["fasthts"]) == output(tools["samtools"]), "fasthts coverage differs from samtools coverage"
        alternate("coverage", tools)

    if "fastq" in jobs or "markdup" in jobs:
        # Both read name-grouped input: the BAM collated once by samtools.
        collated = f"{os.path.splitext(bam)[0]}.collated.bam"
        if not os.path.exists(collated):
            sh(["samtools", "collate", "-@", t, "-o", collated, bam])

    if "fastq" in jobs:
        tools = {"fasthts": [fasthts, "fastq", "-@", t, collated], "samtools": ["samtools", "fastq", "-@", t, collated]}
        assert sha256_of(tools["fasthts"]) == sha256_of(tools["samtools"]), "fasthts fastq differs from samtools fastq"
        alternate("fastq", tools)

    if "markdup" in jobs:
        # Issue 35: the collated BAM through fixmate -m and sort (samtools'),
        # made once; marked by both, records compared.
        ready = f"{os.path.splitext(bam)[0]}.markdup-ready.bam"
        if not os.path.exists(ready):
            fixed = os.path.join(tmp, "fixmate.bam")
            sh(["samtools", "fixmate", "-@", t, "-m", collated, fixed])
            sh(["samtools", "sort", "-@", t, "-o", ready, fixed])
            os.remove(fixed)
        out = {"fasthts": os.path.join(tmp, "md-f.bam"), "samtools": os.path.join(tmp, "md-s.bam")}
        tools = {k: [tool, "markdup", "-@", t, "--no-PG", ready, out[k]] for k, tool in (("fasthts", fasthts), ("samtools", "samtools"))}
        for cmd in tools.values():
            sh(cmd, stderr=subprocess.DEVNULL)
        assert view_digest(out["fasthts"]) == view_digest(out["samtools"]), "fasthts markdup differs from samtools markdup"
        alternate("markdup", tools, lambda k: os.remove(out[k]) if os.path.exists(out[k]) else None)

    if "mosdepth" in jobs:
        # Issue 34 item 3: mosdepth's default outputs (per-base runs,
        # summary, distribution), the texts compared first.
        mosdepth = os.environ.get("MOSDEPTH") or shutil.which("mosdepth")
        if not mosdepth:
            print("mosdepth: not on the PATH (or MOSDEPTH): job skipped")
        else:
            prefix = {"fasthts": os.path.join(tmp, "md-f"), "mosdepth": os.path.join(tmp, "md-m")}
            tools = {"fasthts": [fasthts, "mosdepth", "-t", t, prefix["fasthts"], bam],
                     "mosdepth": [mosdepth, "-t", t, prefix["mosdepth"], bam]}
            for cmd in tools.values():
                sh(cmd)
            import gzip
            for suffix in (".per-base.bed.gz", ".mosdepth.summary.txt", ".mosdepth.global.dist.txt"):
                read = (lambda p: gzip.open(p).read()) if suffix.endswith(".gz") else (lambda p: open(p, "rb").read())
                assert read(prefix["fasthts"] + suffix) == read(prefix["mosdepth"] + suffix), f"fasthts mosdepth {suffix} differs"
            alternate("mosdepth", tools)

    if "sormadup" in jobs:
        # Issue 35 item 4: from the same name-grouped input (the collated
        # BAM) to a marked, sorted BAM in one process, against samtools'
        # chain from it, `fixmate -m -u | sort -u | markdup`, each at -@ N.
        collated = f"{os.path.splitext(bam)[0]}.collated.bam"
        if not os.path.exists(collated):
            sh(["samtools", "collate", "-@", t, "-o", collated, bam])
        out = {"fasthts": os.path.join(tmp, "smd-f.bam"), "samtools": os.path.join(tmp, "smd-s.bam")}
        chain = (f"samtools fixmate --no-PG -@ {t} -m -u {collated} - "
                 f"| samtools sort --no-PG -@ {t} -u -T {tmp}/sort - | samtools markdup -@ {t} --no-PG - {out['samtools']}")
        tools = {"fasthts": [fasthts, "sormadup", "-@", t, "--no-PG", "-T", os.path.join(tmp, "smd"), "-o", out["fasthts"], collated],
                 "samtools": ["sh", "-c", chain]}
        for cmd in tools.values():
            sh(cmd, stderr=subprocess.DEVNULL)
        assert view_digest(out["fasthts"]) == view_digest(out["samtools"]), "fasthts sormadup differs from the samtools chain"
        alternate("sormadup", tools, lambda k: os.remove(out[k]) if os.path.exists(out[k]) else None)

    if "chain" in jobs:
        # Issue 35: fixmate -m | sort | markdup, each tool's own commands
        # in the same pipe from the collated BAM, each at -@ N.
        collated = f"{os.path.splitext(bam)[0]}.collated.bam"
        if not os.path.exists(collated):
            sh(["samtools", "collate", "-@", t, "-o", collated, bam])
        out = {"fasthts": os.path.join(tmp, "chain-f.bam"), "samtools": os.path.join(tmp, "chain-s.bam")}

        def chain(tool, k):
            return (f"set -e -o pipefail; {tool} fixmate --no-PG -@ {t} -m -u {collated} - "
                    f"| {tool} sort --no-PG -@ {t} -u -T {tmp}/sort-{k} - | {tool} markdup -@ {t} --no-PG - {out[k]}")
        tools = {k: ["bash", "-c", chain(tool, k)] for k, tool in (("fasthts", fasthts), ("samtools", "samtools"))}
        for cmd in tools.values():
            sh(cmd, stderr=subprocess.DEVNULL)
        assert view_digest(out["fasthts"]) == view_digest(out["samtools"]), "fasthts' chain differs from samtools' chain"
        alternate("chain", tools, lambda k: os.remove(out[k]) if os.path.exists(out[k]) else None)

    if "remote" in jobs:
        import remote
        remote.remote_jobs(a, fasthts, bam, tmp, report, lines, output, timed)

    if a.cram:
        cram_jobs(a, fasthts, tmp, report, lines)

    if "inflate" in jobs:
        out = output([inflate_bound, bam, str(a.runs)]).decode()
        fields = dict(f.split("=", 1) for f in out.strip().split("\t")[1:])
        one = float(fields["median_s"])
        line = (f"inflate    1 thread   median wall {one:7.2f} s  ({fields['MB_per_s']} MB/s uncompressed, "
                f"{fields['uncompressed']} bytes); 2-core bound {one / 2:.2f} s")
        print(line)
        lines.append(line)
        results["inflate"] = fields

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    run_dir = os.path.join(a.out, f"{stamp}-{socket.gethostname()}")
    os.makedirs(run_dir, exist_ok=True)
    meta = {
        "bam": bam, "bam_bytes": os.path.getsize(bam), "reference": a.reference, "runs": a.runs, "threads": a.threads,
        "machine": platform.platform(), "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
        "samtools": output(["samtools", "--version"]).decode(errors="replace").splitlines()[0],
    }
    with open(os.path.join(run_dir, "raw.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(os.path.join(run_dir, "summary.txt"), "w") as f:
        f.write(json.dumps(meta) + "\n" + "\n".join(lines) + "\n")
    shutil.rmtree(tmp)
    print(f"results in {run_dir}")


if __name__ == "__main__":
    sys.exit(main())
