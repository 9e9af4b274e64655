"""fasthts.AlignmentFile against pysam.AlignmentFile: the same script run
on both, on the project's test BAMs, a generated one and samtools' test
files (BAM and SAM): every attribute of every record, region queries on
windows of every indexed file, and the file-level calls."""

import math
import shutil
import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import require, require_module, require_tool

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
SAMTOOLS_TEST = Path("/usr/share/samtools/test")

# Attributes read on every record of both libraries.
ATTRIBUTES = [
    "query_name", "flag", "reference_id", "reference_name", "reference_start", "reference_end", "reference_length",
    "mapping_quality", "cigarstring", "cigartuples", "query_sequence", "query_qualities",
    "query_length", "query_alignment_start", "query_alignment_end", "query_alignment_length",
    "query_alignment_sequence", "query_alignment_qualities", "next_reference_id", "next_reference_name",
    "next_reference_start", "template_length", "bin",
    "is_paired", "is_proper_pair", "is_unmapped", "is_mapped", "mate_is_unmapped", "mate_is_mapped", "is_reverse",
    "is_forward", "mate_is_reverse", "mate_is_forward", "is_read1", "is_read2", "is_secondary", "is_qcfail",
    "is_duplicate", "is_supplementary",
]
# Methods called (with these arguments) on every record of both.
CALLS = [
    ("get_tags", {}), ("get_tags", {"with_value_type": True}), ("get_aligned_pairs", {}),
    ("get_aligned_pairs", {"matches_only": True}), ("get_aligned_pairs", {"with_cigar": True}), ("get_blocks", {}),
    ("get_reference_positions", {}), ("get_reference_positions", {"full_length": True}), ("infer_query_length", {}),
    ("infer_read_length", {}), ("get_forward_sequence", {}), ("get_forward_qualities", {}), ("to_string", {}),
    # From the MD tag (ValueError without one, in both).
    ("get_reference_sequence", {}), ("get_aligned_pairs", {"with_seq": True}),
    ("get_aligned_pairs", {"with_seq": True, "with_cigar": True}), ("get_aligned_pairs", {"with_seq": True, "matches_only": True}),
    ("get_cigar_stats", {}), ("get_overlap", {"start": 0, "end": 1 << 31}), ("get_overlap", {"start": 1000, "end": 1100}),
]


def plain(v, tag_type=None):
    """A value as comparable data: arrays as lists, floats as float32."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return type(v)(plain(x) for x in v)
    if isinstance(v, float):
        return float(f"{v:.6g}") if math.isfinite(v) else str(v)
    return v


def tags_of(a, with_type):
    out = []
    for t in a.get_tags(with_value_type=True):
        tag, value, vtype = t
        if vtype == "I" and isinstance(value, int) and value < 0:
            # pysam's get_tags returns uint32 tags above 2^31 as negative
            # (its get_tag does not): fasthts gives the value stored.
            value += 1 << 32
        out.append((tag, plain(value), vtype) if with_type else (tag, plain(value)))
    return out


def record_view(a):
    """Everything a script can read from a record, or the exception."""
    out = {}
    for name in ATTRIBUTES:
        try:
            out[name] = plain(getattr(a, name))
        except ValueError as e:
            out[name] = ("ValueError", str(e))
    for name, kw in CALLS:
        key = name + repr(sorted(kw.items()))
        if name == "get_tags":
            out[key] = tags_of(a, kw.get("with_value_type", False))
            continue
        try:
            out[key] = plain(getattr(a, name)(**kw))
        except (ValueError, TypeError) as e:
            # pysam: get_forward_qualities() of a reverse read without
            # qualities is a TypeError (fasthts: None).
            out[key] = ("ValueError", str(e))
        except (AssertionError, IndexError, OverflowError) as e:
            # A malformed MD tag (get_reference_sequence, with_seq), a
            # record at -1 (get_overlap).
            out[key] = (type(e).__name__, str(e))
    for tag, *_ in a.get_tags():
        out["get_tag " + tag] = plain(a.get_tag(tag))
        v, t = a.get_tag(tag, with_value_type=True)
        out["get_tag typed " + tag] = (plain(v), t)
        out["has_tag " + tag] = a.has_tag(tag)
    out["has_tag ZZ"] = a.has_tag("ZZ")
    # pysam's query_qualities_str writes +33 into the bytes object it
    # makes, which for one quality is CPython's shared one-byte object
    # (every later b"\x1f" then reads "@"): derived here for pysam instead.
    q = a.query_qualities
    derived = None if q is None else "".join(chr(v + 33) for v in q)
    out["query_qualities_str"] = a.query_qualities_str if isinstance(a, fasthts.AlignedSegment) else derived
    return out


def compare_records(mine, theirs, where):
    n = 0
    for a in theirs:
        b = next(mine, None)
        assert b is not None, f"{where}: fasthts ended after {n} records"
        va, vb = record_view(a), record_view(b)
        for k in va:
            if isinstance(va[k], tuple) and va[k][:1] == ("ValueError",):
                # pysam refuses some CIGARs here ('Invalid clipping'); fasthts answers.
                continue
            assert vb[k] == va[k], f"{where}: record {n} ({a.query_name}): {k}"
        n += 1
    assert next(mine, None) is None, f"{where}: fasthts has more than {n} records"
    return n


def file_level(f, pysam_module, path):
    """The file-level answers of an opened file, as comparable data."""
    out = {
        "references": f.references,
        "lengths": f.lengths,
        "nreferences": f.nreferences,
        "to_dict": f.header.to_dict(),
        # htslib rebuilds a SAM file's header text, writing an empty @CO
        # line as "@CO\t" (samtools view -H prints "@CO", as fasthts).
        "str(header)": str(f.header).replace("@CO\t\n", "@CO\n"),
        "has_index": f.has_index(),
        "get_tid": [f.get_tid(n) for n in f.references] + [f.get_tid("no-such-reference")],
        "get_reference_name": [f.get_reference_name(t) for t in range(-1, f.nreferences)],
        "head": [a.to_string() for a in f.head(3)],
        "is_closed": f.is_closed,
        "is_read": f.is_read,
    }
    with pytest.raises(ValueError):
        f.get_reference_name(f.nreferences)
    if f.has_index():
        out["mapped"] = f.mapped
        out["unmapped"] = f.unmapped
        out["get_index_statistics"] = [tuple(s) for s in f.get_index_statistics()]
        out["count"] = f.count()
        out["count all"] = f.count(read_callback="all")
    return out


def open_both(pysam, path, **kw):
    return fasthts.AlignmentFile(str(path), **kw), pysam.AlignmentFile(str(path), **kw)


def whole_file_check(pysam, path):
    """Every record in file order, and the file-level calls."""
    mine, theirs = open_both(pysam, path, check_sq=False)
    with mine, theirs:
        n = compare_records(mine.fetch(until_eof=True), theirs.fetch(until_eof=True), str(path))
    mine, theirs = open_both(pysam, path, check_sq=False)
    with mine, theirs:
        assert file_level(mine, pysam, path) == file_level(theirs, pysam, path), path
    if mine_is_bam(path):
        # Counting the whole file needs no index.
        mine, theirs = open_both(pysam, path, check_sq=False)
        assert mine.count(until_eof=True) == theirs.count(until_eof=True) == n
    return n


def mine_is_bam(path):
    return fasthts.AlignmentFile(str(path), check_sq=False).is_bam


def windows_check(pysam, path):
    """Region queries on windows of every reference (and fetch() of every
    reference, and '*'): the same records in the same order."""
    mine, theirs = open_both(pysam, path, check_sq=False)
    assert mine.has_index() and theirs.has_index()
    names = lambda it: [r.to_string() for r in it]
    total = 0
    assert names(mine.fetch()) == names(theirs.fetch())
    assert names(mine.fetch("*")) == names(theirs.fetch("*"))
    for contig, length in zip(theirs.references, theirs.lengths):
        assert names(mine.fetch(contig)) == names(theirs.fetch(contig)), (path, contig)
        step = max(1000, length // 60)
        for start in range(0, length + step, step):
            got = names(mine.fetch(contig, start, start + step))
            assert got == names(theirs.fetch(contig, start, start + step)), (path, contig, start)
            region = f"{contig}:{start + 1}-{start + step // 3}"
            assert names(mine.fetch(region=region)) == names(theirs.fetch(region=region)), (path, region)
            assert mine.count(contig, start, start + step) == len(got)
            total += len(got)
    return total


def indexed_copy(path, tmp_path):
    """A copy of `path` with a samtools index beside it, or None when
    samtools cannot index it (not sorted)."""
    samtools = require_tool("samtools", "samtools")
    dst = tmp_path / path.name.replace("#", "_")
    shutil.copy(path, dst)
    r = subprocess.run([samtools, "index", str(dst)], capture_output=True)
    return dst if r.returncode == 0 else None


PROJECT_BAMS = sorted(p.name for p in DATA.glob("*.bam"))


@pytest.mark.parametrize("name", PROJECT_BAMS)
def test_project_bams_equal_pysam(name, tmp_path):
    pysam = require_module("pysam")
    path = DATA / name
    whole_file_check(pysam, path)
    copy = indexed_copy(path, tmp_path)
    if copy is not None:
        windows_check(pysam, copy)


def test_generated_bam_equals_pysam(gen_bam):
    pysam = require_module("pysam")
    assert whole_file_check(pysam, gen_bam) > 4096  # more than one batch
    assert windows_check(pysam, gen_bam) > 3000


def test_golden_bams_equal_pysam(golden):
    pysam = require_module("pysam")
    for name in ["normal.bam", "tumour.bam"]:
        # Region queries only (the files are large): windows of chr1's start.
        mine, theirs = open_both(pysam, golden / name)
        contig = theirs.references[0]
        for start in range(0, 2_000_000, 100_000):
            a = [r.to_string() for r in mine.fetch(contig, start, start + 5000)]
            assert a == [r.to_string() for r in theirs.fetch(contig, start, start + 5000)]


def test_numpy_integers_are_region_bounds_as_in_pysam(golden):
    np = require_module("numpy")
    pysam = require_module("pysam")
    mine, theirs = open_both(pysam, golden / "normal.bam")
    contig = theirs.references[0]
    for start, stop in [(np.int64(100_000), np.int32(120_000)), (np.uint16(5), None)]:
        want = theirs.count(contig, start, stop)
        assert mine.count(contig, start, stop) == want
        assert [r.to_string() for r in mine.fetch(contig, start, stop)][:50] == [r.to_string() for r in theirs.fetch(contig, start, stop)][:50]
    with pytest.raises(TypeError, match="start must be an int, not float"):
        mine.count(contig, 1.5, 10)


def samtools_files(suffix):
    require(SAMTOOLS_TEST.is_dir(), "samtools' test files (Debian package samtools-test, /usr/share/samtools/test)")
    return sorted(SAMTOOLS_TEST.rglob("*" + suffix))


def readable_by_pysam(pysam, path):
    try:
        with pysam.AlignmentFile(str(path), check_sq=False) as f:
            for _ in f.fetch(until_eof=True):
                pass
        return True
    except Exception:
        return False


def test_samtools_test_bams_equal_pysam(tmp_path):
    pysam = require_module("pysam")
    files = samtools_files(".bam")
    checked = windows = 0
    for path in files:
        if not readable_by_pysam(pysam, path):
            continue
        try:
            fasthts.AlignmentFile(str(path), check_sq=False)
        except NotImplementedError:
            continue
        whole_file_check(pysam, path)
        checked += 1
        copy = indexed_copy(path, tmp_path)
        if copy is not None:
            windows_check(pysam, copy)
            windows += 1
    assert checked >= 20 and windows >= 5, (checked, windows)


def test_samtools_test_sams_equal_pysam():
    pysam = require_module("pysam")
    checked = 0
    past_2_31 = []
    for path in samtools_files(".sam"):
        if not readable_by_pysam(pysam, path):
            continue
        try:
            whole_file_check(pysam, path)
        except fasthts.Error as e:
            # Positions past 2^31 are not read yet (their own issue).
            assert "positional data is too large for BAM format" in str(e), (path, e)
            past_2_31.append(path.name)
            continue
        checked += 1
    assert checked >= 150, (checked, past_2_31)


def test_bamfile_fetch_overlap_equals_pysam(gen_bam):
    # BamFile keeps its start-based regions; overlap=True gives pysam's.
    pysam = require_module("pysam")
    bam = fasthts.BamFile(str(gen_bam))
    ps = pysam.AlignmentFile(str(gen_bam))
    more = 0
    for contig, length in zip(ps.references, ps.lengths):
        for start in range(0, length, 7919):
            theirs = [(a.query_name, a.flag, a.reference_start) for a in ps.fetch(contig, start, start + 2000)]
            for region in [(contig, start, start + 2000), [contig, start, start + 2000], f"{contig}:{start + 1}-{start + 2000}"]:
                mine = [(r.name, r.flag, r.pos) for r in bam.fetch(region, overlap=True)]
                assert mine == theirs, region
            starting = [(r.name, r.flag, r.pos) for r in bam.fetch((contig, start, start + 2000))]
            assert all(p >= start for _, _, p in starting) and set(starting) <= set(theirs)
            more += len(theirs) - len(starting)
    assert more > 0  # reads starting before a window but overlapping it
    assert [r.name for r in bam.fetch("*", overlap=True)] == [a.query_name for a in ps.fetch("*")]


def test_region_arguments_are_checked(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    contig = bam.references[0][0]
    with pytest.raises(ValueError, match="negative"):
        bam.fetch((contig, -5, 100))
    with pytest.raises(TypeError, match="region start"):
        bam.columns((contig, "5", 100))
    with pytest.raises(TypeError, match="a region is"):
        bam.columns(5)
    with pytest.raises(ValueError, match="three items"):
        bam.columns([contig, 5])
    assert bam.region([contig, 5, None]) == bam.region((contig, 5, None))
    # samtools' forms: {name} quoting and 1k / 1e3 positions.
    assert bam.region(f"{{{contig}}}:1k-2e3") == bam.region((contig, 999, 2000))
    f = fasthts.AlignmentFile(str(gen_bam))
    assert f.parse_region(region=f"{{{contig}}}:1k-2e3") == (1, 0, 999, 2000)
    with pytest.raises(ValueError, match="start out of range"):
        f.fetch(contig, -4, 100)
    with pytest.raises(ValueError, match="invalid contig"):
        f.fetch("no-such-contig")


def test_public_names_are_the_api():
    public = [n for n in dir(fasthts) if not n.startswith("_") and n != "dask"]
    assert sorted(public) == sorted(n for n in fasthts.__all__ if not n.startswith("_"))
    for name in fasthts.__all__:
        assert hasattr(fasthts, name), name
    for name in ["AlignmentFile", "AlignedSegment", "AlignmentHeader", "IndexStats"]:
        assert name in fasthts.__all__


def test_a_child_forked_after_use_reads_as_its_parent():
    """Parallel work of the parent used rayon's global pool, whose threads a
    forked child does not have: the child's calls must not wait for them."""
    import os
    import time

    import numpy as np

    bam = str(DATA / "small.bam")
    f = fasthts.AlignmentFile(bam)
    b = fasthts.BamFile(bam)
    want = (f.count(region="chr1:1-50000"), sum(1 for _ in f.fetch(until_eof=True)), len(b.columns("chr1")["pos"]))
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            g = fasthts.AlignmentFile(bam)
            got = (
                g.count("chr1", int(np.int64(0)), int(np.int32(50000))),
                sum(1 for _ in g.fetch(until_eof=True)),
                len(fasthts.BamFile(bam).columns(("chr1", np.int64(0), None), threads=2)["pos"]),
            )
            code = 0 if got == want and f.count(region="chr1:1-50000") == want[0] else 3
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_reading_records_does_not_import_numpy(golden):
    """A script ported from pysam reads records without numpy being
    imported (it costs a tenth of a second and starts OpenBLAS' threads);
    the columns API imports it when it makes arrays."""
    import sys

    script = (
        "import sys, fasthts\n"
        "with fasthts.AlignmentFile(sys.argv[1]) as f:\n"
        "    n = sum(1 for r in f.fetch() if r.mapping_quality >= 0)\n"
        "assert n > 0, n\n"
        "print('numpy' in sys.modules)\n"
        "fasthts.BamFile(sys.argv[1]).columns()\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(golden / "normal.bam")], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], out


def test_open_file_objects_and_descriptors_as_pysam(tmp_path):
    """pysam reads and writes an open file (an object with fileno(), or a
    descriptor) through a duplicate of its descriptor: the AlignmentFile
    works on after the caller closes theirs; closing it leaves theirs."""
    import io
    import os

    pysam = require_module("pysam")
    bam = str(DATA / "small.bam")
    sam = tmp_path / "small.sam"
    sam.write_text(pysam.view("-h", bam))
    for path, mode in [(bam, "rb"), (str(sam), "r")]:
        want = [r.to_string() for r in pysam.AlignmentFile(path, mode)]
        with open(path, "rb") as f:
            by_object = fasthts.AlignmentFile(f, mode)
            by_descriptor = fasthts.AlignmentFile(f.fileno(), mode)
            assert by_object.filename == path and by_descriptor.filename == f"<fd:{f.fileno()}>"
        assert [r.to_string() for r in by_object] == want
        assert [r.to_string() for r in by_descriptor] == want
        with open(path, "rb") as f:
            fasthts.AlignmentFile(f, mode).close()
            assert not f.closed and len(f.read(4)) == 4
    out = tmp_path / "out.bam"
    with open(bam, "rb") as f, open(out, "wb") as o:
        src = fasthts.AlignmentFile(f)
        with fasthts.AlignmentFile(o, "wb", template=src) as w:
            for r in src.fetch(until_eof=True):
                w.write(r)
    assert pysam.view("--no-PG", str(out)) == pysam.view("--no-PG", bam)
    with pytest.raises(NotImplementedError, match="StringIO"):
        fasthts.AlignmentFile(io.StringIO("@HD\tVN:1.6\n"))
    with pytest.raises(TypeError, match="filepath_or_object"):
        fasthts.AlignmentFile(1.5)
    closed = open(bam, "rb")
    closed.close()
    with pytest.raises(ValueError, match="closed file"):
        fasthts.AlignmentFile(closed)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError):
        fasthts.AlignmentFile(os.open(str(tmp_path), os.O_RDONLY))
    assert len(os.listdir("/proc/self/fd")) == before + 1  # the caller's descriptor, not a duplicate


def test_header_dictionary_methods_and_old_names_are_pysams():
    pysam = require_module("pysam")
    bam = str(DATA / "small.bam")
    mine, theirs = fasthts.AlignmentFile(bam), pysam.AlignmentFile(bam)
    for h, g in [(mine.header, theirs.header), (fasthts.AlignmentHeader.from_dict({"HD": {"VN": "1.6"}}), pysam.AlignmentHeader.from_dict({"HD": {"VN": "1.6"}}))]:
        assert len(h) == len(g) and bool(h) == bool(g) is True
        assert h.get("SQ") == g.get("SQ") and h.get("XX", 5) == g.get("XX", 5) == 5
        assert list(h.iteritems()) == list(g.iteritems())
        for header in (h, g):
            with pytest.raises(TypeError, match="item assignment"):
                header["HD"] = {}
    assert mine.gettid("chr2") == theirs.gettid("chr2") == 1
