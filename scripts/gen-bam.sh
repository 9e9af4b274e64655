#!/usr/bin/env bash
# Generate a synthetic BAM with fasthts-testgen.
#
#   scripts/gen-bam.sh OUT.bam [generator args...]
#   scripts/gen-bam.sh /tmp/1g.bam --target-bytes 3600M      # ~1 GB BAM
#   scripts/gen-bam.sh small.bam --seed 3 --reads 2000 --long-ref
#
# The generator writes SAM in exact `samtools sort` order (unless --unsorted),
# so the BAM is made by `samtools view -b` alone, without a sort step.
# The output is written under a temporary name and renamed on success; any
# failure (including any message from samtools, which we treat as a
# generator bug) leaves no OUT.bam behind and exits non-zero.
#
# Environment:
#   CARGO_TARGET_DIR     cargo target dir (default: $HOME/.cache/fasthts-target)
#   FASTHTS_TESTGEN      use this generator binary instead of building one
#   GEN_BAM_THREADS      samtools compression threads (default: 2)
#   SAMTOOLS             samtools binary (default: samtools)
set -euo pipefail

usage() {
    echo "usage: $0 OUT.bam [fasthts-testgen args...]   (see: fasthts-testgen --help)" >&2
    exit 2
}
[[ $# -ge 1 ]] || usage
case "$1" in -h | --help) usage ;; esac
out=$1
shift

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
samtools=${SAMTOOLS:-samtools}
threads=${GEN_BAM_THREADS:-2}

if [[ -n "${FASTHTS_TESTGEN:-}" ]]; then
    gen=$FASTHTS_TESTGEN
else
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
    # cargo only rebuilds when sources changed, so this is cheap when up to date.
    cargo build --quiet --release -p fasthts-testgen --manifest-path "$root/Cargo.toml"
    gen=$CARGO_TARGET_DIR/release/fasthts-testgen
fi
[[ -x "$gen" ]] || { echo "$0: generator not found: $gen" >&2; exit 1; }

outdir=$(dirname -- "$out")
tmp=$(mktemp "$outdir/.$(basename -- "$out").tmp.XXXXXX")
errlog=$(mktemp)
trap 'rm -f -- "$tmp" "$errlog"' EXIT

# --no-PG: samtools would otherwise record its own command line, including
# the temporary file name, making the bytes differ from run to run.
"$gen" "$@" | "$samtools" view --no-PG -b -@ "$threads" -o "$tmp" - 2>"$errlog"
if [[ -s "$errlog" ]]; then
    echo "$0: samtools reported problems with the generated SAM:" >&2
    head -n 20 "$errlog" >&2
    exit 1
fi
"$samtools" quickcheck "$tmp"
# mktemp creates the file private (0600); give it the usual umask-based mode.
chmod "$(printf '%o' $((0666 & ~$(umask))))" "$tmp"
mv -f -- "$tmp" "$out"
