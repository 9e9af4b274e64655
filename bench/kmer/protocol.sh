#!/usr/bin/env bash
# khmer's mRNAseq digital-normalisation protocol end to end (the five steps
# of docs/kmer-protocol.md), with khmer 3.0's scripts and with `fasthts
# kmer`, runs alternating; checks that every file each step writes is
# identical, and prints the median wall time of each step and of the whole
# protocol, the peak RSS of each step, and the khmer/fasthts ratio.
#
#   bench/kmer/protocol.sh [REPS]            (default 3)
#
# Input: PAIRS (default 160000) simulated 2 x 150 bp pairs, ~100 MB of
# FASTQ, gzip -1 compressed as R1.fq.gz and R2.fq.gz: fragments of 300-500
# bp from 2,000 transcripts of 500-4,000 bp with log-normal expression (so
# that normalisation drops the reads of the highly expressed ones), two
# substitutions per read, R2 the reverse complement of the fragment's end.
# M (default 1e9) is the table memory of step 2 (-M; the docs' example
# says 4e9). Both tools run with their defaults otherwise: khmer's one
# thread, fasthts's all cores. Set PAIRS and M small for a smoke run:
#   PAIRS=2000 M=1e7 bench/kmer/protocol.sh 1
set -euo pipefail
FASTHTS=${FASTHTS:-${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}/release/fasthts}
KHMER=${KHMER:-/usr/lib/khmer/bin}
PY=${PY:-/usr/bin/python3}
PAIRS=${PAIRS:-160000}
M=${M:-1e9}
REPS=${1:-3}
WORK=${WORK:-$(mktemp -d /tmp/fasthts-kmer-protocol.XXXXXX)}
[ -x "$FASTHTS" ] || { echo "no fasthts binary at $FASTHTS (set FASTHTS or CARGO_TARGET_DIR)" >&2; exit 1; }
[ -d "$KHMER" ] || { echo "no khmer scripts in $KHMER (Debian package khmer)" >&2; exit 1; }

IN=$WORK/input
mkdir -p "$IN"
if [ ! -s "$IN/R1.fq.gz" ] || [ ! -s "$IN/R2.fq.gz" ]; then
  python3 - "$IN/R1.fq" "$IN/R2.fq" "$PAIRS" <<'EOF'
import random, sys
random.seed(22)
comp = bytes.maketrans(b'ACGT', b'TGCA')
transcripts = [bytes(random.choices(b'ACGT', k=random.randint(500, 4000))) for _ in range(2000)]
weights = [random.lognormvariate(0, 2) for _ in transcripts]
q = b'I' * 150
def read(s):
    s = bytearray(s)
    for _ in range(2):
        s[random.randrange(150)] = random.choice(b'ACGT')
    return bytes(s)
n = int(sys.argv[3])
with open(sys.argv[1], 'wb') as r1, open(sys.argv[2], 'wb') as r2:
    for i, t in enumerate(random.choices(transcripts, weights, k=n)):
        flen = min(len(t), random.randint(300, 500))
        p = random.randrange(0, len(t) - flen + 1)
        frag = t[p:p + flen]
        r1.write(b'@p%d/1\n%s\n+\n%s\n' % (i, read(frag[:150]), q))
        r2.write(b'@p%d/2\n%s\n+\n%s\n' % (i, read(frag[-150:].translate(comp)[::-1]), q))
EOF
  gzip -1 -f "$IN/R1.fq" "$IN/R2.fq"
fi
echo "input: $PAIRS pairs, $(( $(stat -c %s "$IN/R1.fq.gz") + $(stat -c %s "$IN/R2.fq.gz") )) bytes gzipped; -M $M; $REPS runs each, alternating; $(nproc) cores"

STEPS=(interleave normalize filter-abund extract-paired split-paired)
# protocol TOOL DIR: the five steps in DIR (emptied first); each step's
# "wall_s peak_rss_kb" appended to $WORK/TOOL.STEP
protocol() {
  local tool=$1 dir=$2
  rm -rf "$dir"
  mkdir -p "$dir"
  local cmds
  if [ "$tool" = khmer ]; then
    cmds=(
      "$PY $KHMER/interleave-reads.py $IN/R1.fq.gz $IN/R2.fq.gz -o reads.pe.fq"
      "$PY $KHMER/normalize-by-median.py -p -k 20 -C 20 -M $M -s normC20k20.ct reads.pe.fq"
      "$PY $KHMER/filter-abund.py -V normC20k20.ct reads.pe.fq.keep"
      "$PY $KHMER/extract-paired-reads.py reads.pe.fq.keep.abundfilt"
      "$PY $KHMER/split-paired-reads.py reads.pe.fq.keep.abundfilt.pe"
    )
  else
    cmds=(
      "$FASTHTS kmer interleave-reads $IN/R1.fq.gz $IN/R2.fq.gz -o reads.pe.fq"
      "$FASTHTS kmer normalize -p -k 20 -C 20 -M $M -s normC20k20.ct reads.pe.fq"
      "$FASTHTS kmer filter-abund -V normC20k20.ct reads.pe.fq.keep"
      "$FASTHTS kmer extract-paired-reads reads.pe.fq.keep.abundfilt"
      "$FASTHTS kmer split-paired-reads reads.pe.fq.keep.abundfilt.pe"
    )
  fi
  local i
  for i in "${!STEPS[@]}"; do
    # shellcheck disable=SC2086
    if ! (cd "$dir" && /usr/bin/time -f "%e %M" -o "$WORK/one" ${cmds[$i]} >>"$dir/stdout.log" 2>>"$dir/stderr.log"); then
      echo "$tool: step ${STEPS[$i]} failed: ${cmds[$i]}" >&2
      tail -5 "$dir/stderr.log" >&2
      exit 1
    fi
    cat "$WORK/one" >> "$WORK/$tool.${STEPS[$i]}"
  done
}

rm -f "$WORK"/khmer.* "$WORK"/fasthts.*
for _ in $(seq "$REPS"); do
  protocol khmer "$WORK/k"
  protocol fasthts "$WORK/f"
done

# every file the steps wrote (the logs aside), byte for byte
same=1
for f in $(cd "$WORK/k" && ls | grep -v '\.log$'); do
  if ! cmp -s "$WORK/k/$f" "$WORK/f/$f"; then
    echo "DIFFERENT: $f" >&2
    same=0
  fi
done
extra=$(cd "$WORK/f" && ls | grep -v '\.log$' | while read -r f; do [ -e "$WORK/k/$f" ] || echo "$f"; done)
[ -z "$extra" ] || { echo "only fasthts wrote: $extra" >&2; same=0; }
[ "$same" = 1 ] && echo "outputs identical: $(cd "$WORK/k" && ls | grep -v '\.log$' | tr '\n' ' ')"

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
printf "%-16s %10s %10s %8s %12s %12s\n" step "khmer s" "fasthts s" ratio "khmer MB" "fasthts MB"
kt=0 ft=0
for s in "${STEPS[@]}"; do
  k=$(cut -d' ' -f1 "$WORK/khmer.$s" | median)
  f=$(cut -d' ' -f1 "$WORK/fasthts.$s" | median)
  km=$(cut -d' ' -f2 "$WORK/khmer.$s" | sort -n | tail -1)
  fm=$(cut -d' ' -f2 "$WORK/fasthts.$s" | sort -n | tail -1)
  awk -v s="$s" -v k="$k" -v f="$f" -v km="$km" -v fm="$fm" 'BEGIN{printf "%-16s %10.2f %10.2f %7.1fx %12.0f %12.0f\n", s, k, f, k/(f>0?f:0.005), km/1024, fm/1024}'
done
# the whole protocol: the median over runs of each run's total
for t in khmer fasthts; do
  paste -d' ' $(for s in "${STEPS[@]}"; do echo "$WORK/$t.$s"; done) | awk '{t=0; for(i=1;i<=NF;i+=2) t+=$i; print t}' > "$WORK/$t.total"
done
k=$(median < "$WORK/khmer.total")
f=$(median < "$WORK/fasthts.total")
awk -v k="$k" -v f="$f" 'BEGIN{printf "%-16s %10.2f %10.2f %7.1fx\n", "protocol", k, f, k/(f>0?f:0.005)}'
echo "work dir: $WORK"
[ "$same" = 1 ]
