#!/usr/bin/env bash
# Times `fasthts kmer ...` against khmer's scripts (count, abundance-dist,
# abundance-dist-single, normalize, filter-abund, filter-abund-single,
# unique-kmers) on the same FASTQ and checks that the outputs are
# identical. khmer and fasthts run alternating, REPS rounds per job;
# reports each tool's median run (wall s, user+sys CPU s, peak RSS MB),
# the khmer/fasthts ratio of the medians and the range of the rounds'.
#
#   bench/kmer/bench.sh [FASTQ] [REPS]
#
# The issue's small-input count (100 Mbp of these reads, 4 x 2e8):
#   READS=667000 X=2e8 JOBS=count bench/kmer/bench.sh "" 5
# JOBS (default all): the jobs to run, of count abundance-dist normalize
# abundance-dist-single filter-abund filter-abund-single unique-kmers
# (abundance-dist and filter-abund read count's -T 1 table).
#
# Without FASTQ, generates ~100 MB of simulated 150 bp reads (5 Mbp random
# genome, 2 substitutions per read; READS of them, default 320,000) with
# python3. Table size: X (default 1e8,
# 4 tables = 400 MB; set X=1e9 for the issue's 4 GB configuration).
#
# Peak RSS (issue 22's bar: at most khmer's + 10 %): fasthts's is the
# table's plus a fixed working set of batches in flight, 40-80 MB at -T 2,
# khmer's the table's plus ~15-30 MB of Python. Measured 2026-11-26 on
# 20 MB of these reads (one run each, loaded machine; RSS, not time):
#   -x 2e7 (80 MB of tables): count 138 vs khmer 108 MB, filter-abund
#   140 vs 108, filter-abund-single 147 vs 108 (over); abundance-dist
#   103 vs 119, abundance-dist-single 136 vs 129, normalize 91 vs 108,
#   unique-kmers 15 vs 31 (within).
#   -x 1e8 (400 MB): count 462 vs 413, filter-abund 472-483 vs 413-423,
#   filter-abund-single 477 vs 414 (12-17 % over).
# The excess is count's hash batches (1 M k-mers, 8 MB each; about 3 in
# flight per pipeline and more at -T 2, where each thread may be a batch
# ahead) and filter-abund's per-thread lookup arrays for a 4 MB batch of
# reads (hashes, sort entries, counts: ~29 MB per thread). Both sizes were
# chosen by measurement for speed on gigabyte tables (see the comments at
# COUNT_BATCH_KMERS and FILTER_BATCH_BYTES); above ~600 MB of tables the
# excess is within 10 %. Scaling them down with the table size is the
# remedy, to be measured on a quiet machine first.
set -euo pipefail
FASTHTS=${FASTHTS:-${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}/release/fasthts}
KHMER=${KHMER:-/usr/lib/khmer/bin}
X=${X:-1e8}
REPS=${2:-3}
WORK=${WORK:-$(mktemp -d /tmp/fasthts-kmer-bench.XXXXXX)}
FQ=${1:-}
if [ -z "$FQ" ]; then
  FQ=$WORK/sim.fq
  python3 - "$FQ" "${READS:-320000}" <<'EOF'
import random, sys
random.seed(42)
G = 5_000_000
g = bytearray(random.choice(b'ACGT') for _ in range(G))
comp = bytes.maketrans(b'ACGT', b'TGCA')
q = b'I' * 150
with open(sys.argv[1], 'wb') as out:
    for i in range(int(sys.argv[2])):
        p = random.randrange(0, G - 150)
        s = bytearray(g[p:p + 150])
        for _ in range(2):
            s[random.randrange(150)] = random.choice(b'ACGT')
        if i & 1:
            s = bytes(s).translate(comp)[::-1]
        out.write(b'@r%d\n%s\n+\n%s\n' % (i, bytes(s), q))
EOF
fi
FQ=$(readlink -f "$FQ")
echo "input: $FQ ($(du -m "$FQ" | cut -f1) MB), tables 4 x $X, $REPS runs each, $(nproc) cores"

# time_one DIR OUT CMD... : one timed run of CMD in DIR, "wall user sys rss_kb" appended to OUT
time_one() {
  local dir=$1 out=$2; shift 2
  mkdir -p "$dir"
  if ! (cd "$dir" && /usr/bin/time -q -f "%e %U %S %M" -o "$out.one" "$@" >/dev/null 2>"$out.err"); then
    echo "  FAILED in $dir: $* ($(tail -1 "$out.err"))" >&2
  fi
  cat "$out.one" >> "$out"
}
# median FILE NAME : print the median run of FILE (by wall time); its wall s in $WORK/last.wall
median() {
  sort -n "$1" | awk -v n="$2" -v r="$REPS" 'NR==int((r+1)/2){printf "%-40s wall %7.2f s  cpu %7.2f s  rss %6.0f MB\n", n, $1, $2+$3, $4/1024}'
  sort -n "$1" | awk -v r="$REPS" 'NR==int((r+1)/2){print $1}' > "$WORK/last.wall"
}
# run NAME DIR CMD... : REPS runs of one command (the -T 1 references)
run() {
  local name=$1 dir=$2; shift 2
  local f=$WORK/times.$$
  : > "$f"
  for _ in $(seq "$REPS"); do time_one "$dir" "$f" "$@"; done
  median "$f" "$name"
}
# pair NAME KHMER_CMD FASTHTS_CMD : (names of arrays) REPS rounds of khmer then fasthts
# (alternating, so both see the host in the same state: its memory
# bandwidth and the cost of first touching freed memory vary by the
# minute on a shared VM); each tool's median run, the ratio of the
# medians and the range of the per-round ratios.
pair() {
  local name=$1
  local -n kcmd=$2 fcmd=$3
  local kf=$WORK/times.k.$$ ff=$WORK/times.f.$$
  : > "$kf"; : > "$ff"
  for _ in $(seq "$REPS"); do
    time_one "$K" "$kf" "${kcmd[@]}"
    time_one "$F" "$ff" "${fcmd[@]}"
  done
  median "$kf" "khmer $name"; local kw; kw=$(cat "$WORK/last.wall")
  median "$ff" "fasthts $name"; local fw; fw=$(cat "$WORK/last.wall")
  paste -d' ' "$kf" "$ff" | awk -v a="$kw" -v b="$fw" '{r=$1/$5; lo=(NR==1||r<lo)?r:lo; hi=(NR==1||r>hi)?r:hi}
    END{printf "  -> fasthts is %.1fx faster (wall; rounds %.1f-%.1fx)\n", a/b, lo, hi}'
}

# want JOB : whether JOBS asks for JOB
JOBS=${JOBS:-all}
want() { [ "$JOBS" = all ] || [[ " $JOBS " == *" $1 "* ]]; }

K=$WORK/khmer F=$WORK/fasthts
b=$(basename "$FQ")
# Each job's two commands as arrays, which pair runs in turn.
k_count=("$KHMER/load-into-counting.py" -q -k 25 -N 4 -x "$X" -T 2 t.ct "$FQ")
f_count=("$FASTHTS" kmer count -q -k 25 -N 4 -x "$X" -T 2 t.ct "$FQ")
if want count; then
pair "count -T2" k_count f_count
run "khmer load-into-counting -T1" "$K" "$KHMER/load-into-counting.py" -q -k 25 -N 4 -x "$X" -T 1 t1.ct "$FQ"
run "fasthts kmer count -T1" "$F" "$FASTHTS" kmer count -q -k 25 -N 4 -x "$X" -T 1 t1.ct "$FQ"
cmp "$K/t1.ct" "$F/t.ct" && cmp "$K/t1.ct" "$F/t1.ct" && echo "  .ct identical (fasthts -T1/-T2 vs khmer -T1)"
fi

# abundance-dist and normalize-by-median: khmer has no threads for them;
# fasthts runs with its default, all cores (-T 1 until 2026-11-26 15:55;
# quiet, 96 MB: abundance-dist 4.27 s at -T 1, 2.55 s at -T 2; normalize
# 3.25 / 2.58 s; outputs identical at any -T)
k_dist=("$KHMER/abundance-dist.py" -q -s t1.ct "$FQ" h.csv)
f_dist=("$FASTHTS" kmer abundance-dist -q -s "$K/t1.ct" "$FQ" h.csv)
if want abundance-dist; then
pair "abundance-dist" k_dist f_dist
cmp "$K/h.csv" "$F/h.csv" && echo "  CSV identical"
fi

k_norm=("$KHMER/normalize-by-median.py" -q -C 20 -k 20 -N 4 -x "$X" "$FQ")
f_norm=("$FASTHTS" kmer normalize -q -C 20 -k 20 -N 4 -x "$X" "$FQ")
if want normalize; then
pair "normalize-by-median" k_norm f_norm
cmp "$K/$b.keep" "$F/$b.keep" && echo "  .keep identical"
fi

k_dist1=("$KHMER/abundance-dist-single.py" -q -k 25 -N 4 -x "$X" -T 2 -s "$FQ" hs.csv)
f_dist1=("$FASTHTS" kmer abundance-dist-single -q -k 25 -N 4 -x "$X" -T 2 -s "$FQ" hs.csv)
if want abundance-dist-single; then
pair "abundance-dist-single -T2" k_dist1 f_dist1
# (khmer's -T 2 counting races: its histogram can be off by one k-mer from
# its own -T 1 one, which fasthts's equals at any -T)
cmp "$K/hs.csv" "$F/hs.csv" && echo "  CSV identical" || echo "  CSV differs (khmer -T 2's race? compare with khmer -T 1)"
fi

k_filter=("$KHMER/filter-abund.py" -q -C 2 t1.ct "$FQ")
f_filter=("$FASTHTS" kmer filter-abund -q -T 2 -C 2 "$K/t1.ct" "$FQ")
if want filter-abund; then
pair "filter-abund (fasthts -T2)" k_filter f_filter
cmp "$K/$b.abundfilt" "$F/$b.abundfilt" && echo "  .abundfilt identical"
fi

# The one-pass scripts (issue 22): count and filter in one run (khmer's
# default one thread, -T 2 as above), and the HyperLogLog estimate
# (khmer's OpenMP counting uses all cores; so does fasthts).
k_single=("$KHMER/filter-abund-single.py" -q -k 25 -N 4 -x "$X" -T 2 -C 2 -o s.abundfilt --savegraph s.ct "$FQ")
f_single=("$FASTHTS" kmer filter-abund-single -q -k 25 -N 4 -x "$X" -T 2 -C 2 -o s.abundfilt --savegraph s.ct "$FQ")
if want filter-abund-single; then
pair "filter-abund-single -T2" k_single f_single
# (the .ct header's occupied count, khmer -T 2's racy statistic, is in its
# bytes 13-20 and can differ by one; the tables after it must not)
cmp "$K/s.abundfilt" "$F/s.abundfilt" && cmp -i 20 "$K/s.ct" "$F/s.ct" && echo "  reads and .ct tables identical"
fi

k_uniq=("$KHMER/unique-kmers.py" -q -k 25 -R u.txt "$FQ")
f_uniq=("$FASTHTS" kmer unique-kmers -q -k 25 -R u.txt "$FQ")
if want unique-kmers; then
pair "unique-kmers" k_uniq f_uniq
cmp "$K/u.txt" "$F/u.txt" && echo "  report identical (estimate $(head -1 "$F/u.txt" | cut -d' ' -f1))"
fi
echo "work dir: $WORK"
