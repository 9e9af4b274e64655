#!/usr/bin/env bash
# Generates the k-mer benchmark's input reproducibly (issue 6's bar):
#   a synthetic 30 Mbp genome with repeats (seeded python3), then ~500 Mbp of
#   150 bp HiSeq 2500 reads from art_illumina (Debian package
#   art-nextgen-simulation-tools) with a fixed seed, as uncompressed FASTQ.
#
#   bench/kmer/gen-data.sh [OUTDIR]      (default bench/data/kmer, gitignored)
#
# Output: OUTDIR/genome30m.fa and OUTDIR/reads500m.fq. Existing files are kept.
set -euo pipefail
OUT=${1:-$(dirname "$0")/../data/kmer}
COV=${COV:-16.7} # 16.7 x 30 Mbp = ~500 Mbp
mkdir -p "$OUT"
G=$OUT/genome30m.fa
if [ ! -s "$G" ]; then
  python3 - "$G.tmp" <<'EOF'
# 10 contigs of 3 Mbp. A random background plus repeat families: 400
# families of 300-6000 bp, each copied 4-60 times with 0.5-3 % substitutions,
# and a few hundred short tandem repeats, so k-mer counts have a long tail.
import random, sys
rng = random.Random(20261123)
contigs = [bytearray(rng.choices(b'ACGT', k=3_000_000)) for _ in range(10)]
def mutate(s, rate):
    s = bytearray(s)
    for _ in range(int(len(s) * rate)):
        s[rng.randrange(len(s))] = rng.choice(b'ACGT')
    return s
for _ in range(400):
    fam = bytes(rng.choices(b'ACGT', k=rng.randint(300, 6000)))
    for _ in range(rng.randint(4, 60)):
        c = rng.choice(contigs)
        p = rng.randrange(0, len(c) - len(fam))
        c[p:p + len(fam)] = mutate(fam, rng.uniform(0.005, 0.03))
for _ in range(300):
    unit = bytes(rng.choices(b'ACGT', k=rng.randint(2, 12)))
    c = rng.choice(contigs)
    run = (unit * 2000)[:rng.randint(50, 3000)]
    p = rng.randrange(0, len(c) - len(run))
    c[p:p + len(run)] = run
with open(sys.argv[1], 'wb') as f:
    for i, c in enumerate(contigs):
        f.write(b'>chr%d\n' % (i + 1))
        for j in range(0, len(c), 80):
            f.write(bytes(c[j:j + 80]) + b'\n')
EOF
  mv "$G.tmp" "$G"
fi
R=$OUT/reads500m.fq
if [ ! -s "$R" ]; then
  art_illumina -q -ss HS25 -i "$G" -l 150 -f "$COV" -rs 4242 -na -o "$OUT/art" >/dev/null
  mv "$OUT/art.fq" "$R"
fi
awk 'NR%4==2{n++; b+=length($0)} END{printf "%s: %d reads, %.1f Mbp\n", FILENAME, n, b/1e6}' "$R"
