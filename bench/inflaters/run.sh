#!/usr/bin/env bash
# Build and run the BGZF inflater benchmark.
#   bench/inflaters/run.sh [BAM] [REPEATS]
# Defaults: BAM=bench/data/1g.bam, REPEATS=5.
# Quick test: bench/inflaters/run.sh bench/data/50m.bam 3
# zlib-ng is measured when packaged (Debian trixie on) or when ZLIBNG_PREFIX
# names an install of it.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BAM=${1:-$HERE/../data/1g.bam}
REPS=${2:-5}
BUILD="$HERE/build"
mkdir -p "$BUILD"

# ---- dependencies -------------------------------------------------------
need=()
[ -f /usr/include/libdeflate.h ] || need+=(libdeflate-dev)
[ -f /usr/include/isa-l/igzip_lib.h ] || need+=(libisal-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
# zlib-ng: packaged as libz-ng-dev from Debian trixie on; not in bookworm.
if [ ! -f /usr/include/zlib-ng.h ] && apt-cache show libz-ng-dev >/dev/null 2>&1; then
    need+=(libz-ng-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing: ${need[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "missing packages (run as root or install): ${need[*]}" >&2
        exit 1
    fi
fi

CFLAGS=(-O2 -march=native -Wall -Wextra -Wno-unused-parameter)
DEFS=()
LIBS=(-ldeflate -lisal -lz)
EXTRA_OBJS=()

# ZLIBNG_PREFIX: a zlib-ng built and installed by hand (configure --static
# --prefix=DIR; its include/zlib-ng.h and lib/libz-ng.a are used).
if [ -n "${ZLIBNG_PREFIX:-}" ] && [ -f "$ZLIBNG_PREFIX/include/zlib-ng.h" ]; then
    gcc -O2 -I"$ZLIBNG_PREFIX/include" -c "$HERE/zng_wrap.c" -o "$BUILD/zng_wrap.o"
    DEFS+=(-DHAVE_ZLIBNG)
    EXTRA_OBJS+=("$BUILD/zng_wrap.o")
    LIBS+=("$ZLIBNG_PREFIX/lib/libz-ng.a")
    echo "zlib-ng from $ZLIBNG_PREFIX"
elif [ -f /usr/include/zlib-ng.h ]; then
    gcc -O2 -c "$HERE/zng_wrap.c" -o "$BUILD/zng_wrap.o"
    DEFS+=(-DHAVE_ZLIBNG)
    EXTRA_OBJS+=("$BUILD/zng_wrap.o")
    LIBS+=(-lz-ng)
else
    echo "note: zlib-ng not packaged for this Debian release and ZLIBNG_PREFIX not set; skipped"
fi

# ---- optional: the libdeflate bundled in the libdeflate-sys crate ---------
# fasthts links this copy (libdeflater -> libdeflate-sys, static build), so
# measure it too.  Built like the cc crate does for a release build (-O3, no
# -march), then all symbols except four are made local and those four are
# renamed ld26_* so they don't clash with the system libdeflate.
LDSYS_VER=$(awk '/^name = "libdeflate-sys"/{getline; gsub(/[^0-9.]/,""); print; exit}' \
    "$HERE/../../Cargo.lock" 2>/dev/null || true)
LDSRC=""
for d in "$HOME"/.cargo/registry/src/*/libdeflate-sys-"${LDSYS_VER:-*}"/libdeflate; do
    [ -f "$d/libdeflate.h" ] && LDSRC="$d"
done
if [ -n "$LDSRC" ]; then
    LDVER=$(awk '/define LIBDEFLATE_VERSION_STRING/{gsub(/"/,"",$3); print $3}' "$LDSRC/libdeflate.h")
    objs=()
    for f in lib/x86/cpu_features.c lib/arm/cpu_features.c lib/crc32.c \
             lib/deflate_decompress.c lib/utils.c; do
        o="$BUILD/ld26_$(echo "$f" | tr / _).o"
        gcc -O3 -fPIC -I"$LDSRC" -c "$LDSRC/$f" -o "$o"
        objs+=("$o")
    done
    ld -r -o "$BUILD/ld26_all.o" "${objs[@]}"
    objcopy \
        --keep-global-symbol=ld26_alloc_decompressor \
        --keep-global-symbol=ld26_deflate_decompress \
        --keep-global-symbol=ld26_crc32 \
        --keep-global-symbol=ld26_free_decompressor \
        --redefine-sym libdeflate_alloc_decompressor=ld26_alloc_decompressor \
        --redefine-sym libdeflate_deflate_decompress=ld26_deflate_decompress \
        --redefine-sym libdeflate_crc32=ld26_crc32 \
        --redefine-sym libdeflate_free_decompressor=ld26_free_decompressor \
        "$BUILD/ld26_all.o" "$BUILD/ld26.o"
    DEFS+=(-DHAVE_LD_CRATE "-DLD_CRATE_VERSION=\"$LDVER\"")
    EXTRA_OBJS+=("$BUILD/ld26.o")
    echo "crate-bundled libdeflate $LDVER from $LDSRC"
else
    echo "note: libdeflate-sys sources not found in ~/.cargo/registry; crate-bundled libdeflate skipped"
fi

gcc "${CFLAGS[@]}" "${DEFS[@]}" -o "$BUILD/inflate_bench" "$HERE/inflate_bench.c" \
    "${EXTRA_OBJS[@]}" "${LIBS[@]}"

echo "system: $(dpkg-query -W -f='libdeflate ${Version}, ' libdeflate0 2>/dev/null)$(dpkg-query -W -f='isa-l ${Version}, ' libisal2 2>/dev/null)$(dpkg-query -W -f='zlib ${Version}' zlib1g 2>/dev/null)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/inflate_bench" "$BAM" "$REPS"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
