#!/usr/bin/env bash
# Runs every test of the repository: Rust unit, integration, differential
# and doc tests. Installs what the differential tests compare against
# (samtools 1.16 and its test files, khmer) when run as root on Debian and
# they are missing; without them those checks are skipped with a note.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

need=()
command -v samtools >/dev/null || need+=(samtools)
[[ -d /usr/share/samtools/test ]] || need+=(samtools-test)
command -v load-into-counting.py >/dev/null || [[ -x /usr/lib/khmer/bin/load-into-counting.py ]] || need+=(khmer)
[[ -x /usr/bin/time ]] || need+=(time)
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
