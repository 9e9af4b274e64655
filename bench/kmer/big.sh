#!/usr/bin/env bash
# Issue 6's k-mer bar on ~500 Mbp of simulated 150 bp reads (bench/kmer/gen-data.sh):
# khmer 3.0's scripts, fasthts, KMC and jellyfish on the same uncompressed FASTQ,
# alternating tool by tool within each repetition. Prints, per job and tool, the
# median wall s, median CPU s (user+sys), median peak RSS, and the ratios
# khmer/fasthts (wall and CPU); checks that fasthts' outputs equal khmer's.
#
#   bench/kmer/big.sh [FASTQ] [REPS]
#
# Environment:
#   JOBS   jobs to run (default "count normalize filter"); count includes KMC and jellyfish
#   TOOLS  tools to run (default "khmer fasthts kmc jellyfish")
#   X      table size per table (default 1e9: 4 tables = 4 GB, as in the issue)
#   WORK   scratch dir (default a fresh /tmp/fasthts-kmer-big.XXXXXX; holds
#          several 4 GB tables; removed at the end unless KEEP=1)
#   OUT    where the raw per-run lines go (default $WORK/runs.tsv; appended)
#
# Commands timed (as in the issue):
#   khmer    load-into-counting.py -k 25 -N 4 -x 1e9 -T 2 t.ct R.fq
#   fasthts  fasthts kmer count    -k 25 -N 4 -x 1e9 -T 2 t.ct R.fq
#   kmc      kmc -k25 -t2 -ci1 R.fq kmc.out kmc.tmp/
#   jelly    jellyfish count -C -m 25 -t 2 -s 1G -o j.jf R.fq   (-s 1G: a hash of about the same 4 GB)
#   khmer    normalize-by-median.py -C 20 -k 20 -N 4 -x 1e9 R.fq      (one thread: the script has no -T)
#   fasthts  fasthts kmer normalize -C 20 -k 20 -N 4 -x 1e9 -T 2 R.fq
#   khmer    filter-abund.py -C 2 -T 2 t.ct R.fq                     (t.ct from khmer's count)
#   fasthts  fasthts kmer filter-abund -C 2 -T 2 t.ct R.fq
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
FQ=$(readlink -f "${1:-$here/../data/kmer/reads500m.fq}")
REPS=${2:-3}
FASTHTS=${FASTHTS:-${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}/release/fasthts}
KHMER=${KHMER:-/usr/lib/khmer/bin}
X=${X:-1e9}
JOBS=${JOBS:-count normalize filter}
TOOLS=${TOOLS:-khmer fasthts kmc jellyfish}
WORK=${WORK:-$(mktemp -d /tmp/fasthts-kmer-big.XXXXXX)}
OUT=${OUT:-$WORK/runs.tsv}
mkdir -p "$WORK"
[ -s "$FQ" ] || { echo "no input $FQ (run bench/kmer/gen-data.sh)" >&2; exit 1; }
has() { [[ " $TOOLS " == *" $1 "* ]]; }
echo "# $(date -u +%FT%TZ) input $FQ ($(du -m "$FQ" | cut -f1) MB), tables 4 x $X, $REPS reps, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# fasthts $("$FASTHTS" --version 2>/dev/null || echo '?') ($(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'))"

# one JOB TOOL DIR CMD...: time one run, append "job tool wall cpu rss_kb" to $OUT
one() {
  local job=$1 tool=$2 dir=$3; shift 3
  mkdir -p "$dir"
  sync
  if (cd "$dir" && /usr/bin/time -f "%e %U %S %M" -o "$WORK/t.one" "$@" >"$WORK/log.$job.$tool" 2>&1); then
    read -r w u s m <"$WORK/t.one"
    printf "%s\t%s\t%s\t%s\t%s\n" "$job" "$tool" "$w" "$(echo "$u + $s" | bc)" "$m" | tee -a "$OUT" >&2
  else
    echo "FAILED: $job $tool (see $WORK/log.$job.$tool)" >&2
    tail -5 "$WORK/log.$job.$tool" >&2
  fi
}

K=$WORK/khmer F=$WORK/fasthts
b=$(basename "$FQ")
for rep in $(seq "$REPS"); do
  for job in $JOBS; do
    case $job in
      count)
        # Each tool's previous table goes first: a stale 4 GB .ct would sit
        # in the page cache and make the next run reclaim it (a cost of
        # repeating the benchmark, not of counting; rep 1 never paid it).
        rm -f "$K/t.ct" "$F/t.ct"
        has khmer && one count khmer "$K" "$KHMER/load-into-counting.py" -q -k 25 -N 4 -x "$X" -T 2 t.ct "$FQ"
        has fasthts && one count fasthts "$F" "$FASTHTS" kmer count -q -k 25 -N 4 -x "$X" -T 2 t.ct "$FQ"
        if has kmc; then
          rm -rf "$WORK/kmc.tmp" && mkdir -p "$WORK/kmc.tmp"
          one count kmc "$WORK" kmc -k25 -t2 -ci1 "$FQ" "$WORK/kmc.out" "$WORK/kmc.tmp"
          rm -rf "$WORK/kmc.tmp" "$WORK"/kmc.out.*
        fi
        has jellyfish && one count jellyfish "$WORK" jellyfish count -C -m 25 -t 2 -s 1G -o "$WORK/j.jf" "$FQ"
        rm -f "$WORK/j.jf"
        ;;
      normalize)
        has khmer && one normalize khmer "$K" "$KHMER/normalize-by-median.py" -q -C 20 -k 20 -N 4 -x "$X" "$FQ"
        has fasthts && one normalize fasthts "$F" "$FASTHTS" kmer normalize -q -T 2 -C 20 -k 20 -N 4 -x "$X" "$FQ"
        ;;
      filter)
        ct=$K/t.ct
        [ -s "$ct" ] || ct=$F/t.ct
        has khmer && one filter khmer "$K" "$KHMER/filter-abund.py" -q -T 2 -C 2 "$ct" "$FQ"
        has fasthts && one filter fasthts "$F" "$FASTHTS" kmer filter-abund -q -T 2 -C 2 "$ct" "$FQ"
        ;;
    esac
  done
done

echo "## outputs"
if [ -s "$K/t.ct" ] && [ -s "$F/t.ct" ]; then
  # khmer -T 2 writes its bigcount entries in a thread-timing order, and its
  # `occupied` statistic can count a bin twice when two threads fill it at
  # once (fasthts gives the single-thread value at any -T): compare the
  # tables byte for byte, the header fields, and the bigcount entries as a set
  python3 - "$K/t.ct" "$F/t.ct" <<'EOF'
import sys, struct, hashlib
def parts(p):
    with open(p, 'rb') as f:
        head = f.read(20)
        n = head[11]
        h = hashlib.sha256()
        for _ in range(n):
            sz = f.read(8); h.update(sz)
            left = struct.unpack('<Q', sz)[0]
            while left:
                c = f.read(min(left, 1 << 24)); h.update(c); left -= len(c)
        nb = struct.unpack('<Q', f.read(8))[0]
        big = sorted(f.read(10 * nb)[i:i + 10] for i in range(0, 10 * nb, 10))
        return head[:12], struct.unpack('<Q', head[12:20])[0], h.hexdigest(), nb, big
a, b = parts(sys.argv[1]), parts(sys.argv[2])
print("count .ct: header %s, occupied khmer %d fasthts %d, tables %s, bigcount entries (%d) %s" % (
    "identical" if a[0] == b[0] else "DIFFER", a[1], b[1], "identical" if a[2] == b[2] else "DIFFER",
    a[3], "identical as a set" if a[4] == b[4] else "DIFFER"))
EOF
fi
for ext in keep abundfilt; do
  if [ -s "$K/$b.$ext" ] && [ -s "$F/$b.$ext" ]; then
    cmp -s "$K/$b.$ext" "$F/$b.$ext" && echo "$ext: identical" || echo "$ext: DIFFER"
  fi
done

echo "## medians (wall s, CPU s, peak RSS MB; ratio = khmer / fasthts)"
awk -F'\t' '
  { k = $1 SUBSEP $2; n[k]++; w[k, n[k]] = $3; c[k, n[k]] = $4; r[k, n[k]] = $5; jobs[$1]; tools[$1, $2] }
  function med(a, k, cnt,   i, j, t, v) {
    for (i = 1; i <= cnt; i++) v[i] = a[k, i]
    for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
  }
  END {
    split("count normalize filter", order, " ")
    split("khmer fasthts kmc jellyfish", tl, " ")
    for (o = 1; o <= 3; o++) { j = order[o]; if (!(j in jobs)) continue
      for (t = 1; t <= 4; t++) { k = j SUBSEP tl[t]; if (!(k in n)) continue
        mw[tl[t]] = med(w, k, n[k]); mc[tl[t]] = med(c, k, n[k])
        printf "%-10s %-10s n=%d  wall %8.2f  cpu %8.2f  rss %7.0f MB\n", j, tl[t], n[k], mw[tl[t]], mc[tl[t]], med(r, k, n[k]) / 1024
      }
      ks = j SUBSEP "khmer"; fs = j SUBSEP "fasthts"
      if ((ks in n) && (fs in n)) printf "%-10s khmer/fasthts: wall %.2fx, cpu %.2fx\n", j, mw["khmer"] / mw["fasthts"], mc["khmer"] / mc["fasthts"]
      if ((fs in n) && ((j SUBSEP "kmc") in n)) printf "%-10s fasthts/kmc: wall %.2fx, cpu %.2fx\n", j, mw["fasthts"] / mw["kmc"], mc["fasthts"] / mc["kmc"]
      if ((fs in n) && ((j SUBSEP "jellyfish") in n)) printf "%-10s jellyfish/fasthts: wall %.2fx, cpu %.2fx\n", j, mw["jellyfish"] / mw["fasthts"], mc["jellyfish"] / mc["fasthts"]
      delete mw; delete mc
    }
  }' "$OUT"
echo "raw: $OUT"
[ "${KEEP:-0}" = 1 ] || rm -rf "$K" "$F"
