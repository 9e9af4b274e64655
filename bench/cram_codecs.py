#!/usr/bin/env python3
"""Where CRAM decode time goes: by data series, and by codec.

    python3 bench/cram_codecs.py --cram FILE --reference FA [--runs N] [--threads N] [--out DIR]

htslib has no per-codec counters, so the time is found from the outside,
with samtools 1.16 (htslib 1.16, the decoder fasthts uses):

1. By data series: `samtools view -c` of the CRAM with htslib's
   required_fields set to growing sets of SAM fields (flagstat's fields,
   then + CIGAR, + read names, + bases, + qualities, + tags): each step's
   extra time is what decoding those series costs (bases need the
   reference).
2. By codec: the CRAM re-encoded with each codec set samtools offers
   (CRAM 3.0 with its default rANS + gzip, gzip only, + bzip2, + lzma;
   CRAM 3.1 with its default rANS-Nx16 and name tokeniser, + fqzcomp
   qualities, + arithmetic coder), then its size, the time of a full
   decode (every field) and of flagstat's fields alone.

Each time is the median of --runs runs of -@ --threads (default 1: codec
cost without thread overlap). Results go to DIR/codecs-<time>.txt.
"""
import argparse, datetime, os, shutil, statistics, subprocess, sys, tempfile

FLAGSTAT = 0x2 | 0x4 | 0x8 | 0x10 | 0x40 | 0x80  # FLAG RNAME POS MAPQ RNEXT PNEXT
SERIES = [
    ("flagstat's fields", FLAGSTAT),
    ("+ CIGAR", FLAGSTAT | 0x20),
    ("+ read names", FLAGSTAT | 0x20 | 0x1),
    ("+ bases", FLAGSTAT | 0x20 | 0x1 | 0x200),
    ("+ qualities", FLAGSTAT | 0x20 | 0x1 | 0x200 | 0x400),
    ("+ tags (all fields)", 0x1FFF),
]
CODECS = [
    ("3.0 default (rANS, gzip)", ["version=3.0"]),
    ("3.0 gzip only", ["version=3.0", "use_rans=0"]),
    ("3.0 + bzip2", ["version=3.0", "use_bzip2=1"]),
    ("3.0 + lzma", ["version=3.0", "use_lzma=1"]),
    ("3.1 default (rANS-Nx16, tok3)", ["version=3.1"]),
    ("3.1 + fqzcomp", ["version=3.1", "use_fqz=1"]),
    ("3.1 + arith", ["version=3.1", "use_arith=1"]),
]


def timed(cmd):
    """Wall and CPU seconds of cmd (output discarded), by /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r") as t:
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S"] + cmd, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, user, sys_ = t.read().split()[-3:]
    return float(wall), float(user) + float(sys_)


def decode(cram, ref, fields, threads):
    return ["samtools", "view", "-c", "-@", str(threads), "-T", ref,
            "--input-fmt-option", f"required_fields={fields:#x}", cram]


def median_of(cmd, runs):
    results = [timed(cmd) for _ in range(runs)]
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cram", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs"))
    a = ap.parse_args()
    lines = []

    def say(line):
        print(line, flush=True)
        lines.append(line)

    count = subprocess.run(decode(a.cram, a.reference, 0x1FFF, 2), check=True, capture_output=True).stdout
    say(f"{a.cram}: {os.path.getsize(a.cram)} bytes, {int(count)} records; -@{a.threads}, median of {a.runs}")
    say("by data series (samtools view -c, required_fields):")
    previous = 0.0
    for name, fields in SERIES:
        wall, cpu = median_of(decode(a.cram, a.reference, fields, a.threads), a.runs)
        say(f"  {name:24s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  (+{cpu - previous:6.2f} s cpu)")
        previous = cpu

    say("by codec (re-encoded with samtools view -C; full decode and flagstat's fields):")
    tmp = tempfile.mkdtemp(prefix="fasthts-codecs-")
    try:
        for name, options in CODECS:
            out = os.path.join(tmp, "x.cram")
            cmd = ["samtools", "view", "-C", "-@", "2", "-T", a.reference, "-o", out]
            for o in options:
                cmd += ["--output-fmt-option", o]
            subprocess.run(cmd + [a.cram], check=True, stderr=subprocess.DEVNULL)
            full = median_of(decode(out, a.reference, 0x1FFF, a.threads), a.runs)
            flags = median_of(decode(out, a.reference, FLAGSTAT, a.threads), a.runs)
            say(f"  {name:30s} {os.path.getsize(out) / 1e6:8.1f} MB  full decode cpu {full[1]:7.2f} s"
                f"  flagstat's fields cpu {flags[1]:7.2f} s")
    finally:
        shutil.rmtree(tmp)

    os.makedirs(a.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H%M%SZ")
    path = os.path.join(a.out, f"codecs-{stamp}.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    sys.exit(main())
