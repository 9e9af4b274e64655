#!/usr/bin/env python3
"""How cost grows with input size: flagstat, stats, coverage, depth -a
and sort (default, -m 64M) against samtools, snp-pileup against FACETS,
alternating, on BAMs of several sizes.

    python3 bench/scale.py --sorted A.bam B.bam ... [--jobs flagstat,stats,coverage,depth] \
        --shuffled X.bam Y.bam ... [--pileup A.bam:A.vcf ...] [--runs N]

--sorted BAMs (indexed, for flagstat, stats, coverage and depth -a: the
jobs --jobs names, flagstat alone by default) and --shuffled BAMs (for
sort) are given smallest first; make them with scripts/gen-bam.sh (see
BENCHMARKS.md, "How cost grows with input size"). The peers are samtools
flagstat, stats and depth -a at the same -@, and samtools coverage (which
has no thread option). --pileup BAM:VCF runs
snp-pileup with FACETS' recommended options on the BAM given twice (as
normal and tumour: the input is twice the BAM) at the VCF's sites; it
needs FACETS_SNP_PILEUP (FACETS' binary, see bench/snp_pileup/run.py).
Prints, per job and size: median wall and CPU seconds, seconds per GB of
BAM read, peak RSS, and the ratio peer / fasthts; writes the same as JSON
to bench/runs/. Outputs are checked equal to the peer's first (flagstat
and coverage text; stats text but for its first line, which names the
program; depth's rows by digest; sort's records by `samtools view`
digest; snp-pileup's CSV decompressed), as bench/run.py does.
"""
import argparse, datetime, gzip, json, os, platform, statistics, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import ROOT, build, output, stdout_digest, timed, view_digest  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sorted", nargs="*", default=[])
    ap.add_argument("--jobs", default="flagstat", help="comma-separated jobs on the --sorted BAMs: flagstat, stats, coverage, depth (-a)")
    ap.add_argument("--shuffled", nargs="*", default=[])
    ap.add_argument("--pileup", nargs="*", default=[], metavar="BAM:VCF")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "runs"))
    a = ap.parse_args()
    fasthts, _ = build()
    t = str(a.threads)
    tmp = tempfile.mkdtemp(prefix="fasthts-scale-")
    rows = []

    def measure(job, bam, tools, before=None, peer="samtools", copies=1):
        runs = {name: [] for name in tools}
        for _ in range(a.runs):
            for name, cmd in tools.items():
                if before:
                    before(name)
                runs[name].append(timed(cmd))
        gb = copies * os.path.getsize(bam) / 1e9
        med = {n: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), statistics.median(r[2] for r in rs)) for n, rs in runs.items()}
        ratio = med[peer][0] / max(med["fasthts"][0], 0.01)
        for name, (wall, cpu, rss) in med.items():
            line = f"{job:14s} {os.path.basename(bam):22s} {gb:5.2f} GB {name:9s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  {wall / gb:6.2f} s/GB  RSS {rss / 1024:7.1f} MB"
            print(line + (f"  ratio {ratio:.2f}x" if name == peer else ""), flush=True)
            rows.append({"job": job, "bam": bam, "gb": gb, "tool": name, "wall": wall, "cpu": cpu, "rss_kb": rss, "runs": runs[name]})

    jobs = a.jobs.split(",")
    unknown = set(jobs) - {"flagstat", "stats", "coverage", "depth"}
    if unknown:
        sys.exit(f"--jobs: unknown {', '.join(sorted(unknown))} (flagstat, stats, coverage, depth)")
    for bam in a.sorted:
        if "flagstat" in jobs:
            expected = output(["samtools", "flagstat", "-@", t, bam])
            assert output([fasthts, "flagstat", "-@", t, bam]) == expected, f"fasthts flagstat differs on {bam}"
            measure("flagstat", bam, {"fasthts": [fasthts, "flagstat", "-@", t, bam], "samtools": ["samtools", "flagstat", "-@", t, bam]})
        if "stats" in jobs:
            tools = {"fasthts": [fasthts, "stats", "-@", t, bam], "samtools": ["samtools", "stats", "-@", t, bam]}
            # The first line names the program; the rest is compared.
            body = {name: output(cmd).split(b"\n", 1)[1] for name, cmd in tools.items()}
            assert body["fasthts"] == body["samtools"], f"fasthts stats differs on {bam}"
            measure("stats", bam, tools)
        if "coverage" in jobs:
            tools = {"fasthts": [fasthts, "coverage", "-@", t, bam], "samtools": ["samtools", "coverage", bam]}
            assert output(tools["fasthts"]) == output(tools["samtools"]), f"fasthts coverage differs on {bam}"
            measure("coverage", bam, tools)
        if "depth" in jobs:
            # Rows by digest: depth -a of a genome is gigabytes of text.
            tools = {"fasthts": [fasthts, "depth", "-@", t, "-a", bam], "samtools": ["samtools", "depth", "-@", t, "-a", bam]}
            assert stdout_digest(tools["fasthts"]) == stdout_digest(tools["samtools"]), f"fasthts depth -a differs on {bam}"
            measure("depth -a", bam, tools)
    for bam in a.shuffled:
        for label, extra in (("sort", []), ("sort -m 64M", ["-m", "64M"])):
            outs = {"fasthts": os.path.join(tmp, "f.bam"), "samtools": os.path.join(tmp, "s.bam")}
            tools = {
                "fasthts": [fasthts, "sort", "-@", t, "--no-PG", *extra, "-T", os.path.join(tmp, "f"), "-o", outs["fasthts"], bam],
                "samtools": ["samtools", "sort", "-@", t, "--no-PG", *extra, "-T", os.path.join(tmp, "s"), "-o", outs["samtools"], bam],
            }

            def clear(name):
                # Replacing a large file costs the next run its block freeing.
                if os.path.exists(outs[name]):
                    os.remove(outs[name])

            measure(label, bam, tools, before=clear)
            assert view_digest(outs["fasthts"]) == view_digest(outs["samtools"]), f"sort outputs differ on {bam}"
            for name in outs:
                clear(name)
    facets = os.environ.get("FACETS_SNP_PILEUP")
    if a.pileup and not (facets and os.access(facets, os.X_OK)):
        sys.exit("--pileup needs FACETS_SNP_PILEUP naming FACETS' snp-pileup binary")
    for spec in a.pileup:
        bam, vcf = spec.split(":")
        options = ["-g", "-q15", "-Q20", "-P100", "-r25,0"]
        # FACETS appends .gz to the name under -g; fasthts writes the name given.
        outs = {"fasthts": os.path.join(tmp, "f.csv.gz"), "FACETS": os.path.join(tmp, "s.csv")}

        def clear(name):
            for path in (outs[name], outs[name] + ".gz"):
                if os.path.exists(path):
                    os.remove(path)

        tools = {
            "fasthts": [fasthts, "snp-pileup", "-@", t, *options, vcf, outs["fasthts"], bam, bam],
            "FACETS": [facets, *options, vcf, outs["FACETS"], bam, bam],
        }
        measure("snp-pileup", bam, tools, before=clear, peer="FACETS", copies=2)
        texts = {n: gzip.decompress(open(p if os.path.exists(p) else p + ".gz", "rb").read()) for n, p in outs.items()}
        assert texts["fasthts"] == texts["FACETS"], f"snp-pileup outputs differ on {bam}"
        for name in outs:
            clear(name)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"{stamp}-scale.json")
    with open(path, "w") as f:
        json.dump({"machine": platform.platform(), "cpus": os.cpu_count(), "threads": a.threads, "rows": rows}, f, indent=1)
    print("results in", path)


if __name__ == "__main__":
    main()
