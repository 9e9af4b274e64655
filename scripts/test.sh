#!/usr/bin/env bash
# Runs every test of the repository: Rust unit, integration, differential
# and doc tests. Installs what the differential tests compare against
# (samtools 1.16 and its test files, khmer, art_illumina) when run as root
# on Debian and they are missing; without them those checks are skipped
# with a note.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

need=()
command -v samtools >/dev/null || need+=(samtools)
[[ -d /usr/share/samtools/test ]] || need+=(samtools-test)
command -v load-into-counting.py >/dev/null || [[ -x /usr/lib/khmer/bin/load-into-counting.py ]] || need+=(khmer)
[[ -x /usr/bin/time ]] || need+=(time)
# bgzip makes the BGZF reads of the k-mer differential tests.
command -v bgzip >/dev/null || need+=(tabix)
# Simulated paired alignments for the differential corpus
# (crates/fasthts-cli/tests/cli/common.rs).
command -v art_illumina >/dev/null || need+=(art-nextgen-simulation-tools)
# The sort engine behind the cargo feature "rocksdb" links the system's librocksdb.
[[ -f /usr/include/rocksdb/c.h ]] || need+=(librocksdb-dev)
if ((${#need[@]})); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing: ${need[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "warning: missing ${need[*]}; the checks that need them are skipped" >&2
    fi
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
cd "$root"
# Release mode: the differential tests run the real binary on real files.
cargo test --release --workspace

# The Python package (tests/python): install it (maturin builds it into the
# same cargo target dir, so only the bindings are compiled again) with its
# test dependencies, then run its tests against the binary built above.
python3 -m pip install -q --disable-pip-version-check maturin pytest numpy pysam "dask[distributed]" mypy
python3 -m pip install -q --disable-pip-version-check --no-build-isolation "$root"
FASTHTS_BIN="$CARGO_TARGET_DIR/release/fasthts" python3 -m pytest -q "$root/tests/python"

# The rocksdb sort engine (cargo feature): its unit and property tests, the
# differential sort tests and the interruption tests (modules sort and
# robustness_faults of the CLI's test binary), with the feature on.
if [[ -f /usr/include/rocksdb/c.h ]]; then
    cargo test --release -p fasthts --features rocksdb --lib sort::
    cargo test --release -p fasthts-cli --features rocksdb --test cli -- sort:: robustness_faults::
else
    echo "warning: librocksdb-dev missing; the rocksdb engine is not tested" >&2
fi
