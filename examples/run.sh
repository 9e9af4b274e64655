#!/usr/bin/env bash
# The main job on the bundled example data: build fasthts, then run the
# pipeline it supports so far on examples/example.bam (a small generated
# tumour-like BAM):
#   sort -n -> sort --write-index -> index (BAI) -> idxstats -> flagstat (three formats)
# Outputs go to examples/out/ (or $1).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/examples/out}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
cargo build --quiet --release -p fasthts-cli --manifest-path "$root/Cargo.toml"
fasthts=$CARGO_TARGET_DIR/release/fasthts

mkdir -p "$out"
set -x
"$fasthts" sort -n -o "$out/byname.bam" "$root/examples/example.bam"
"$fasthts" sort --write-index -o "$out/example.bam" "$out/byname.bam"
"$fasthts" index "$out/example.bam"
"$fasthts" idxstats "$out/example.bam" > "$out/idxstats.txt"
"$fasthts" flagstat "$out/example.bam" > "$out/flagstat.txt"
"$fasthts" flagstat -O json "$out/example.bam" > "$out/flagstat.json"
"$fasthts" flagstat -O tsv "$out/example.bam" > "$out/flagstat.tsv"
set +x
cat "$out/flagstat.txt"
echo "outputs in $out"
