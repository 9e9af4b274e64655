#!/usr/bin/env bash
# Runs fuzz targets one after another (one fuzzer at a time: the build
# machine is shared), each for SECONDS (default 600), and prints libFuzzer's
# final statistics. Usage: fuzz/run.sh [SECONDS] [TARGET...]
#
# The toolchain is stable Rust; cargo fuzz passes nightly-only flags
# (-Zsanitizer=address), which RUSTC_BOOTSTRAP=1 unlocks on stable.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
secs=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(bgzf_block bam_record bam_header index vcf_sites seq_parser)
export RUSTC_BOOTSTRAP=1
# Inflating on one thread keeps each fuzzer on one core.
export RAYON_NUM_THREADS=1
mkdir -p logs
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "== $t: ${secs}s, started $(date -u +%FT%TZ)"
    cargo fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"logs/$t.log" 2>&1
    echo "== $t: exit $? ($(grep -c . "logs/$t.log") log lines)"
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY|Test unit written' "logs/$t.log" | tail -8
done
