#!/usr/bin/env bash
# Runs every test of the repository: Rust unit, integration, differential
# and doc tests, then the Python package's tests (tests/python, including
# every code block of docs/python.md) in a virtual environment of its own.
#
# What the differential tests compare against (samtools 1.16 and its test
# files, khmer 3.0, mosdepth 0.3.3, bgzip, art_illumina, g++, nginx) is
# installed with apt-get when run as root on Debian and missing; moto's S3
# server with pip, into the virtual environment. A test
# whose tool or reference data is missing fails under CI=true (as .ci/run
# sets it); elsewhere it is skipped, and the summary at the end lists what
# was skipped.
#
# Environment:
#   CARGO_TARGET_DIR  cargo target dir (default: ~/.cache/fasthts-target)
#   FASTHTS_VENV      the Python virtual environment (default: ~/.cache/fasthts-venv)
#   PYTHON            the Python that creates it (default: python3)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-python3}

need=()
command -v samtools >/dev/null || need+=(samtools)
[[ -d /usr/share/samtools/test ]] || need+=(samtools-test)
# khmer 3.0 is Debian's package (its scripts under /usr/lib/khmer/bin, run
# by the system's /usr/bin/python3, outside the virtual environment).
[[ -x /usr/lib/khmer/bin/load-into-counting.py ]] || need+=(khmer)
[[ -x /usr/bin/time ]] || need+=(time)
# mosdepth, the reference of `fasthts mosdepth` (crates/fasthts-cli/tests/cli/mosdepth.rs).
command -v mosdepth >/dev/null || need+=(mosdepth)
# bgzip and bzip2 make the compressed reads of the k-mer differential tests.
command -v bgzip >/dev/null || need+=(tabix)
command -v bzip2 >/dev/null || need+=(bzip2)
# g++ compiles the libstdc++ hash map the k-mer library mirrors.
command -v g++ >/dev/null || need+=(g++)
# Simulated paired alignments for the differential corpus
# (crates/fasthts-cli/tests/cli/common.rs).
command -v art_illumina >/dev/null || need+=(art-nextgen-simulation-tools)
# CRAM input (crates/fasthts/src/cram) links the system's htslib.
[[ -f /usr/include/htslib/sam.h ]] || need+=(libhts-dev)
# The CRAM paths (htslib through FFI, with threads) run under valgrind's
# memcheck (crates/fasthts-cli/tests/cli/cram_valgrind.rs).
command -v valgrind >/dev/null || need+=(valgrind)
# The sort engine behind the cargo feature "rocksdb" links the system's librocksdb.
[[ -f /usr/include/rocksdb/c.h ]] || need+=(librocksdb-dev)
# CSI indexes are compressed by the system's libdeflate, as samtools' are, for
# samtools' exact bytes (it comes with samtools; loaded at run time, not linked).
{ /sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null; } | grep -q 'libdeflate\.so\.0' || need+=(libdeflate0)
# Remote inputs are tested against nginx on loopback (HTTP range requests),
# started by the tests themselves (crates/fasthts-cli/tests/cli/remote.rs).
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need+=(nginx-light)
# Debian's python3 makes virtual environments only with python3-venv.
"$python" -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if ((${#need[@]})); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "installing: ${need[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "warning: missing ${need[*]}; the tests that need them fail under CI=true and are skipped otherwise" >&2
    fi
fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/fasthts-target}
# Each skipped comparison appends a line here (fasthts_testgen::support::require).
skips=$(mktemp)
export FASTHTS_SKIP_LOG=$skips
summary() {
    local status=$?
    if [[ -s $skips ]]; then
        echo "SKIPPED: $(wc -l <"$skips") Rust test(s) skipped a comparison for want of a tool or data (under CI=true they fail):"
        sort -u "$skips" | sed 's/^SKIPPED /  /'
    fi
    rm -f "$skips"
    return $status
}
trap summary EXIT
cd "$root"

# The Python virtual environment, made before the Rust tests: it holds
# moto's S3 server, which the S3 tests (crates/fasthts-cli/tests/cli/s3.rs)
# start on loopback with the Python FASTHTS_MOTO_PYTHON names.
venv=${FASTHTS_VENV:-$HOME/.cache/fasthts-venv}
"$venv/bin/python" -c '' 2>/dev/null || "$python" -m venv --clear "$venv"
pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
"${pip[@]}" maturin pytest numpy pysam "dask[distributed]" mypy multiqc "moto[server]"
export FASTHTS_MOTO_PYTHON=$venv/bin/python

# Release mode: the differential tests run the real binary on real files.
cargo test --release --workspace
# The generator's binary: the Python tests make their data with it
# (cargo test builds its library only).
cargo build --release -p fasthts-testgen

# The Python package, in its own virtual environment (Debian's python3
# refuses `pip install` outside one: externally-managed-environment).
# maturin builds it into the same cargo target dir, so only the bindings
# are compiled again.
# As if activated: pip's build of the package runs the venv's maturin.
export PATH=$venv/bin:$PATH
"${pip[@]}" --no-build-isolation "$root"
# The binary built above is the reference of the Python command's tests;
# -rs lists every skipped test and why (the summary line counts them).
FASTHTS_BIN="$CARGO_TARGET_DIR/release/fasthts" "$venv/bin/python" -m pytest -q -rs "$root/tests/python"

# The rocksdb sort engine (cargo feature): its unit and property tests, the
# differential sort tests and the interruption tests (modules sort and
# robustness_faults of the CLI's test binary), with the feature on.
if [[ -f /usr/include/rocksdb/c.h ]]; then
    cargo test --release -p fasthts --features rocksdb --lib sort::
    cargo test --release -p fasthts-cli --features rocksdb --test cli -- sort:: robustness_faults::
elif [[ ${CI:-} == true ]]; then
    echo "error: librocksdb-dev missing: the rocksdb engine cannot be tested (CI=true)" >&2
    exit 1
else
    echo "SKIPPED: librocksdb-dev missing; the rocksdb engine is not tested" >&2
fi
