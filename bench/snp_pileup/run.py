#!/usr/bin/env python3
"""Time fasthts snp-pileup against FACETS snp-pileup on one tumour/normal pair.

    FACETS_SNP_PILEUP=/path/to/snp-pileup python3 bench/snp_pileup/run.py [--runs N]

Data (made once, under bench/data/snp/, with fasthts-testgen and samtools):
normal.bam (~35x) and tumour.bam (~45x) of one generated individual (same
genome and heterozygous SNPs, different reads; about 1.5 GB together),
coordinate-sorted and indexed, and sites.vcf (about 300k records: the
individual's SNPs plus random positions, a few multi-allelic and indel
records). sites_10x.vcf (3M records) is made for the memory check.

For each option set (FACETS' recommended `-g -q15 -Q20 -P100 -r25,0`, and
the same with `-x`) the tools run alternating: FACETS, fasthts -@1,
fasthts -@2, N times. The outputs of the first round are compared
(decompressed) before anything is reported; a difference aborts the run
with the first differing rows. FACETS is the peer only when
FACETS_SNP_PILEUP names its binary (it is not packaged: build
inst/extcode/snp-pileup.cpp from mskcc/facets against libhts-dev yourself);
without it fasthts -@1 and -@2 are compared with each other only.

Reported: median wall s, median CPU s (user + sys), median peak RSS, and
FACETS' median wall / fasthts' median wall. --memory also runs fasthts -@2
on sites_10x.vcf once and reports its peak RSS (memory must not grow with
the number of sites). Raw data goes to bench/runs/<date>-<host>-snp-pileup/.
"""
import argparse, datetime, gzip, json, os, platform, shutil, socket, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/fasthts-target"))
DATA = os.path.join(ROOT, "bench", "data", "snp")
# One individual (genome seed 20), two samples; chr3 and chr7 get no reads.
GENOME = ["--genome-seed", "20", "--refs", "8", "--ref-len", "4M"]
SAMPLES = {"normal": ["--seed", "21", "--target-bytes", "2600M"], "tumour": ["--seed", "22", "--target-bytes", "3400M"]}
OPTION_SETS = {"recommended": ["-g", "-q15", "-Q20", "-P100", "-r25,0"], "recommended_x": ["-g", "-q15", "-Q20", "-P100", "-r25,0", "-x"]}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (wall, cpu, maxrss_kb)."""
    with tempfile.NamedTemporaryFile("r") as t:
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S %M"] + cmd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall, user, sys_, rss = t.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss)


def build():
    env = dict(os.environ, CARGO_TARGET_DIR=TARGET)
    sh(["cargo", "build", "--quiet", "--release", "-p", "fasthts-cli", "-p", "fasthts-testgen"], cwd=ROOT, env=env)
    return os.path.join(TARGET, "release", "fasthts"), os.path.join(TARGET, "release", "fasthts-testgen")


def ensure_data(testgen):
    os.makedirs(DATA, exist_ok=True)
    env = dict(os.environ, FASTHTS_TESTGEN=testgen)
    for name, args in SAMPLES.items():
        bam = os.path.join(DATA, name + ".bam")
        if not os.path.exists(bam):
            sh(["bash", os.path.join(ROOT, "scripts", "gen-bam.sh"), bam] + GENOME + args + ["-q"], env=env)
        if not os.path.exists(bam + ".bai"):
            sh(["samtools", "index", "-@2", bam])
    for name, n in (("sites.vcf", "300k"), ("sites_10x.vcf", "3M")):
        vcf = os.path.join(DATA, name)
        if not os.path.exists(vcf):
            tmp = vcf + ".tmp"
            # Only the VCF is wanted: one template of reads to /dev/null.
            sh([testgen] + GENOME + ["--seed", "21", "--reads", "1", "--sites-vcf", tmp, "--sites", n, "-q", "-o", os.devnull])
            os.replace(tmp, vcf)
    return [os.path.join(DATA, n + ".bam") for n in SAMPLES], os.path.join(DATA, "sites.vcf"), os.path.join(DATA, "sites_10x.vcf")


def text(path):
    """Decompressed output text (FACETS appends .gz with -g)."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    with open(path, "rb") as f:
        raw = f.read()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def first_difference(a, b):
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x.decode(errors='replace')!r} vs {y.decode(errors='replace')!r}"
    return f"line counts {len(la)} vs {len(lb)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sets", default=",".join(OPTION_SETS), help="option sets to run: " + ", ".join(OPTION_SETS))
    ap.add_argument("--memory", action="store_true", help="also measure fasthts -@2 on the 10x VCF")
    ap.add_argument("--prepare", action="store_true", help="only build and make the data")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "runs"))
    a = ap.parse_args()
    fasthts, testgen = build()
    bams, vcf, vcf10 = ensure_data(testgen)
    if a.prepare:
        return 0
    facets = os.environ.get("FACETS_SNP_PILEUP")
    if facets and not os.access(facets, os.X_OK):
        sys.exit(f"FACETS_SNP_PILEUP={facets} is not executable")
    if not facets:
        print("FACETS_SNP_PILEUP not set: FACETS skipped, fasthts -@1 and -@2 compared with each other only")
    tmp = tempfile.mkdtemp(prefix="fasthts-snp-bench-", dir=os.path.join(ROOT, "bench", "data"))
    load_before = os.getloadavg()
    results, lines = {}, []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    try:
        for set_name in a.sets.split(","):
            opts = OPTION_SETS[set_name]
            tools = {}
            if facets:
                tools["facets"] = lambda out: [facets] + opts + [vcf, out] + bams
            tools["fasthts-@1"] = lambda out: [fasthts, "snp-pileup", "-@", "1"] + opts + [vcf, out] + bams
            tools["fasthts-@2"] = lambda out: [fasthts, "snp-pileup", "-@", "2"] + opts + [vcf, out] + bams
            runs = {k: [] for k in tools}
            outputs = {}
            for r in range(a.runs):
                for k, cmd in tools.items():
                    out = os.path.join(tmp, f"{set_name}.{k}.csv.gz")
                    runs[k].append(timed(cmd(out)))
                    if r == 0:
                        outputs[k] = text(out)
                    os.remove(out if os.path.exists(out) else out + ".gz")
                if r == 0:
                    ref_tool = next(iter(tools))
                    for k in tools:
                        if outputs[k] != outputs[ref_tool]:
                            sys.exit(f"{set_name}: {k} output differs from {ref_tool}: {first_difference(outputs[ref_tool], outputs[k])}")
                    rows = outputs[ref_tool].count(b"\n") - 1
                    say(f"{set_name} ({' '.join(opts)}): outputs identical ({', '.join(tools)}), {rows} rows")
                    outputs.clear()
            res = results.setdefault(set_name, {"options": opts})
            for k in tools:
                wall = statistics.median(x[0] for x in runs[k])
                cpu = statistics.median(x[1] for x in runs[k])
                rss = statistics.median(x[2] for x in runs[k])
                res[k] = {"runs": runs[k], "median_wall": wall, "median_cpu": cpu, "median_rss_kb": rss}
            for k in tools:
                m = res[k]
                ratio = ""
                if facets and k != "facets":
                    ratio = (f"  FACETS/fasthts wall {res['facets']['median_wall'] / m['median_wall']:.2f}x"
                             f"  CPU {res['facets']['median_cpu'] / m['median_cpu']:.2f}x")
                say(f"{set_name:14s} {k:11s} median wall {m['median_wall']:7.2f} s  cpu {m['median_cpu']:7.2f} s  "
                    f"peak RSS {m['median_rss_kb'] / 1024:7.1f} MB{ratio}")
        if a.memory:
            for name, v in (("sites.vcf", vcf), ("sites_10x.vcf", vcf10)):
                out = os.path.join(tmp, "mem.csv.gz")
                wall, cpu, rss = timed([fasthts, "snp-pileup", "-@", "2"] + OPTION_SETS["recommended"] + [v, out] + bams)
                os.remove(out)
                results.setdefault("memory", {})[name] = {"wall": wall, "cpu": cpu, "rss_kb": rss}
                say(f"memory         fasthts-@2  {name:13s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak RSS {rss / 1024:7.1f} MB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    run_dir = os.path.join(a.out, f"{stamp}-{socket.gethostname()}-snp-pileup")
    os.makedirs(run_dir, exist_ok=True)
    meta = {
        "bams": {b: os.path.getsize(b) for b in bams}, "vcf": vcf, "vcf_records": sum(1 for l in open(vcf) if l[:1] != "#"),
        "runs": a.runs, "facets": facets, "machine": platform.platform(), "cpus": os.cpu_count(),
        "load_before": load_before, "load_after": os.getloadavg(),
    }
    with open(os.path.join(run_dir, "raw.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(os.path.join(run_dir, "summary.txt"), "w") as f:
        f.write(json.dumps(meta) + "\n" + "\n".join(lines) + "\n")
    print(f"results in {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
