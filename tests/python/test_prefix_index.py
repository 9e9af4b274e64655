"""Issue 39: a whole-file job read through an index of a PREFIX of the file.

The index was made from a file with the same leading BGZF blocks (the file
cut after some records, re-terminated, then indexed) and is newer than the
file, so not stale: every offset it holds is valid, but it places records
only as far as the prefix. A plan (``BamFile.plan``, ``fasthts.scatter``
with ``regions=None``) and pysam's ``fetch()`` of every reference used to
read through it and lose every record past the prefix, silently. Now the
index is checked to describe the whole file (the CLI's rule for depth and
snp-pileup: ``fasthts::command::index_covers``); one that does not is
reported once, naming the file, and one made from the file in memory is
used instead, so the results are those of an index of the whole file.
"""

import gzip
import os
import shutil
import struct
import zlib
from pathlib import Path

import pytest

import fasthts
from test_shared_decisions import py_call

GOLDEN = Path(__file__).resolve().parents[2] / "tests/data/golden/snp-pileup"
EOF = bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")


def bgzf(data: bytes, block: int = 20000) -> bytes:
    """BGZF blocks of `data`, without the EOF marker."""
    out = bytearray()
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        cdata = c.compress(chunk) + c.flush()
        out += b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00BC\x02\x00"
        out += struct.pack("<H", len(cdata) + 25) + cdata + struct.pack("<II", zlib.crc32(chunk), len(chunk))
    return bytes(out)


def bam_record_cut(raw: bytes) -> int:
    """Where the record half-way through the uncompressed BAM `raw` starts."""
    (l_text,) = struct.unpack_from("<i", raw, 4)
    at = 8 + l_text
    (n_ref,) = struct.unpack_from("<i", raw, at)
    at += 4
    for _ in range(n_ref):
        (l_name,) = struct.unpack_from("<i", raw, at)
        at += 4 + l_name + 4
    starts = []
    while at < len(raw):
        starts.append(at)
        (size,) = struct.unpack_from("<i", raw, at)
        at += 4 + size
    return starts[len(starts) // 2]


def sam_line_cut(text: bytes) -> int:
    """Where the record line half-way through the SAM `text` starts."""
    starts = [i + 1 for i, c in enumerate(text[:-1]) if c == ord("\n") and text[i + 1] != ord("@")]
    return starts[len(starts) // 2]


def with_prefix_index(d: Path, name: str, raw: bytes, cut: int, csi: bool = False) -> Path:
    """Writes `d/name`, `raw` in BGZF as two runs of blocks split at `cut`,
    with beside it (newer than it) the index of the first run alone,
    re-terminated: a prefix of the file."""
    head = bgzf(raw[:cut])
    path = d / name
    path.write_bytes(head + bgzf(raw[cut:]) + EOF)
    prefix = d / ("prefix-" + name)
    prefix.write_bytes(head + EOF)
    index = Path(f"{path}.{'csi' if csi else 'bai'}")
    fasthts.index(str(prefix), str(index), csi=csi)
    prefix.unlink()
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))
    return path


def with_whole_index(d: Path, name: str, data: bytes, csi: bool = False) -> Path:
    """`d/name` holding `data`, indexed whole."""
    d.mkdir(exist_ok=True)
    path = d / name
    path.write_bytes(data)
    fasthts.index(str(path), csi=csi)
    return path


def the_warning(warnings, path):
    [warning] = warnings
    assert warning.startswith(f"{path}: the index does not match the data file (the records it places end at "), warning
    assert warning.endswith("it describes only the start of the file); reading the file sequentially"), warning


def n_records(bam) -> int:
    return len(bam.columns()["pos"])


@pytest.fixture(scope="module")
def bam_pair(tmp_path_factory):
    """(a BAM with the index of a prefix of it, the same BAM indexed whole)."""
    d = tmp_path_factory.mktemp("prefix-bam")
    raw = gzip.decompress((GOLDEN / "normal.bam").read_bytes())
    prefixed = with_prefix_index(d, "x.bam", raw, bam_record_cut(raw))
    return prefixed, with_whole_index(d / "whole", "x.bam", prefixed.read_bytes())


def test_a_plan_of_a_bam_is_made_from_an_index_of_the_whole_file(bam_pair):
    prefixed, whole = bam_pair
    want = fasthts.BamFile(str(whole)).plan()
    bam = fasthts.BamFile(str(prefixed))
    plan, warnings = py_call(bam.plan)
    the_warning(warnings, prefixed)
    assert [(r.ref_id, r.start, r.end) for r in plan] == [(r.ref_id, r.start, r.end) for r in want]
    # Checked once: the index made in memory serves the file's later calls.
    assert py_call(bam.plan, window=10000) == (fasthts.BamFile(str(whole)).plan(window=10000), [])


def test_scatter_over_a_plan_sees_every_record(bam_pair):
    prefixed, whole = bam_pair
    total = n_records(fasthts.BamFile(str(whole)))
    counts, warnings = py_call(fasthts.scatter, str(prefixed), None, lambda r, c: len(c["pos"]), threads=2)
    the_warning(warnings, prefixed)
    assert sum(counts) == total
    assert counts == fasthts.scatter(str(whole), None, lambda r, c: len(c["pos"]), threads=2)


def test_fetch_of_every_reference_sees_every_placed_record(bam_pair):
    prefixed, whole = bam_pair
    want = [r.query_name for r in fasthts.AlignmentFile(str(whole)).fetch()]
    got, warnings = py_call(lambda: [r.query_name for r in fasthts.AlignmentFile(str(prefixed)).fetch()])
    the_warning(warnings, prefixed)
    assert got == want and len(want) > 40000


def test_a_region_of_a_bgzipped_sam_plans_from_an_index_of_the_whole_file(cli, tmp_path):
    import subprocess

    text = subprocess.run([cli, "view", "-h", str(GOLDEN / "normal.bam")], check=True, capture_output=True).stdout
    prefixed = with_prefix_index(tmp_path, "x.sam.gz", text, sam_line_cut(text), csi=True)
    whole = with_whole_index(tmp_path / "whole", "x.sam.gz", prefixed.read_bytes(), csi=True)
    want = fasthts.BamFile(str(whole)).plan()
    sam = fasthts.BamFile(str(prefixed))
    plan, warnings = py_call(sam.plan)
    the_warning(warnings, prefixed)
    assert [(r.ref_id, r.start, r.end) for r in plan] == [(r.ref_id, r.start, r.end) for r in want]
    counts, warnings = py_call(fasthts.scatter, sam, None, lambda r, c: len(c["pos"]), threads=2)
    assert warnings == [] and sum(counts) == n_records(fasthts.BamFile(str(GOLDEN / "normal.bam")))
