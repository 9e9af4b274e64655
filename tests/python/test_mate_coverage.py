"""fasthts.AlignmentFile's mate() and count_coverage() against pysam's,
run in the test on the same files: the project's test BAMs, a generated
one (pysam_synth: overlapping mates, indels, ref-skips, clips,
secondary/duplicate/QC-failed reads, missing qualities, missing and
unmapped mates) and samtools' mpileup test files."""

from pathlib import Path

import pytest

import fasthts
from conftest import require, require_module
from pysam_synth import write_synthetic_bam

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
SAMTOOLS_MPILEUP = Path("/usr/share/samtools/test/mpileup")


@pytest.fixture(scope="module")
def pysam():
    return require_module("pysam")


@pytest.fixture(scope="module")
def synth(pysam, tmp_path_factory):
    return write_synthetic_bam(pysam, tmp_path_factory.mktemp("synth") / "synth.bam")


def outcome(f, *args, **kw):
    """What a call gives: its value, or its exception's type and text."""
    try:
        return ("ok", f(*args, **kw))
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return (type(e).__name__, str(e))


def record_key(a):
    return a.to_string()


def mate_outcomes(pysam, path, limit=None):
    ps, fh = pysam.AlignmentFile(str(path)), fasthts.AlignmentFile(str(path))
    n = 0
    kinds = set()
    for a, b in zip(ps.fetch(until_eof=True), fh.fetch(until_eof=True)):
        assert a.to_string() == b.to_string()
        x, y = outcome(ps.mate, a), outcome(fh.mate, b)
        if x[0] == "ok":
            x = ("ok", record_key(x[1]))
        if y[0] == "ok":
            y = ("ok", record_key(y[1]))
        assert x == y, a.query_name
        kinds.add(x[0] if x[0] == "ok" else x[1].split(":")[-1].strip())
        n += 1
        if limit and n >= limit:
            break
    return n, kinds


def test_mate_equals_pysam_on_generated_bam(pysam, synth):
    n, kinds = mate_outcomes(pysam, synth)
    assert n > 1000
    # Found, unpaired, mate unmapped, mate not found: all met.
    assert {"ok", "is unpaired", "is unmapped", "mate not found"} <= kinds, kinds


def test_mate_equals_pysam_on_project_bams(pysam):
    for name in ("small.bam", "refs_without_reads.bam"):
        n, _ = mate_outcomes(pysam, DATA / name, limit=3000)
        assert n > 0


def test_mate_messages(pysam, synth):
    fh = fasthts.AlignmentFile(str(synth))
    reads = {r.flag & 0x9: r for r in fh.fetch("chr1") if r.flag & 0x1 == 0 or r.flag & 0x8}
    with pytest.raises(ValueError, match=r"^read p\d+: is unpaired$"):
        fh.mate(reads[0])
    with pytest.raises(ValueError, match=r"^mate p\d+: is unmapped$"):
        fh.mate(reads[9])


def coverage_of(f, *args, **kw):
    r = outcome(f, *args, **kw)
    if r[0] == "ok":
        assert all(a.typecode == "L" for a in r[1])
        return ("ok", [list(a) for a in r[1]])
    return r


COVERAGE_CASES = [
    ((), {}),
    ((), {"quality_threshold": 0}),
    ((), {"quality_threshold": 30}),
    ((), {"quality_threshold": None}),
    ((), {"read_callback": "nofilter"}),
    ((), {"read_callback": "nofilter", "quality_threshold": 0}),
    ((100, 400), {}),
    ((0, 1), {}),
    ((), {"start": 2950}),
    ((), {"stop": 60}),
    ((), {"start": 2900, "stop": 5000}),
    ((), {"start": 10, "stop": 10}),
    ((), {"start": 20, "stop": 10}),
    ((), {"region": "chr1:101-300"}),
    ((), {"end": 300}),
]


def test_count_coverage_equals_pysam_on_generated_bam(pysam, synth):
    ps, fh = pysam.AlignmentFile(str(synth)), fasthts.AlignmentFile(str(synth))
    nonzero = 0
    for contig in ("chr1", "chr2", "empty"):
        for args, kw in COVERAGE_CASES:
            x = coverage_of(ps.count_coverage, contig, *args, **kw)
            y = coverage_of(fh.count_coverage, contig, *args, **kw)
            assert x == y, (contig, args, kw)
            if x[0] == "ok":
                nonzero += any(any(v) for v in x[1])
    assert nonzero > 20


def test_count_coverage_callback_equals_pysam(pysam, synth):
    ps, fh = pysam.AlignmentFile(str(synth)), fasthts.AlignmentFile(str(synth))
    callbacks = [
        lambda r: r.mapping_quality >= 20,
        lambda r: r.is_reverse,
        lambda r: not r.is_duplicate and r.query_qualities is not None,
    ]
    for cb in callbacks:
        for kw in ({}, {"quality_threshold": 0}, {"start": 50, "stop": 900}):
            assert coverage_of(ps.count_coverage, "chr1", read_callback=cb, **kw) == coverage_of(
                fh.count_coverage, "chr1", read_callback=cb, **kw
            )
    # The callback is called on each fetched read, with an AlignedSegment.
    seen = []
    fh.count_coverage("chr2", read_callback=lambda r: seen.append(r.query_name) or True)
    assert seen == [r.query_name for r in fh.fetch("chr2")]


def test_count_coverage_equals_pysam_on_test_files(pysam, tmp_path):
    ps, fh = pysam.AlignmentFile(str(DATA / "small.bam")), fasthts.AlignmentFile(str(DATA / "small.bam"))
    contig = ps.references[0]
    for kw in ({"start": 0, "stop": 200000}, {"start": 10000, "stop": 20000, "quality_threshold": 0},
               {"start": 10000, "stop": 20000, "read_callback": "nofilter"}):
        x, y = coverage_of(ps.count_coverage, contig, **kw), coverage_of(fh.count_coverage, contig, **kw)
        assert x == y, kw
        assert x[0] == "ok" and any(any(v) for v in x[1])
    require(SAMTOOLS_MPILEUP.is_dir(), "samtools' test files (Debian package samtools-test, /usr/share/samtools/test)")
    for sam in ("indels.sam", "mp_D.sam", "deep.sam", "depth_del.sam"):
        path = tmp_path / (sam + ".bam")
        pysam.sort("-o", str(path), str(SAMTOOLS_MPILEUP / sam))
        pysam.index(str(path))
        ps, fh = pysam.AlignmentFile(str(path)), fasthts.AlignmentFile(str(path))
        for contig in ps.references:
            ends = [r.reference_end or 0 for r in ps.fetch(contig)]
            # Past the reads (the references are long: arrays are per position).
            stop = max(ends, default=0) + 5
            for kw in ({"stop": stop}, {"stop": stop, "quality_threshold": 0}, {"stop": stop, "read_callback": "nofilter"}):
                assert coverage_of(ps.count_coverage, contig, **kw) == coverage_of(fh.count_coverage, contig, **kw), (sam, contig, kw)


def test_find_introns_equals_pysam(pysam, tmp_path):
    """find_introns over a fetch and over a generator filtering one; an
    unmapped read (position -1) raises pysam's OverflowError."""
    sam = tmp_path / "spliced.sam"
    lines = ["@SQ\tSN:chr1\tLN:100000"]
    for i, (pos, cigar) in enumerate([(100, "10M200N10M"), (105, "5M200N15M"), (300, "3S10M50N5M2D3M1000N4M"), (300, "10M50N5M"), (5000, "20M"), (7000, "4M1I4M10N4M")]):
        flag = 16 if i % 2 else 0
        length = sum(int(n) for n, op in zip(*[iter(__import__("re").split(r"([MIDNSHP=X])", cigar)[:-1])] * 2) if op in "MIS=X")
        lines.append(f"r{i}\t{flag}\tchr1\t{pos}\t60\t{cigar}\t*\t0\t0\t{'A' * length}\t*")
    sam.write_text("\n".join(lines) + "\n")
    bam = tmp_path / "spliced.bam"
    pysam.sort("-o", str(bam), str(sam))
    pysam.index(str(bam))
    mine, theirs = fasthts.AlignmentFile(str(bam)), pysam.AlignmentFile(str(bam))
    want = theirs.find_introns(theirs.fetch("chr1"))
    assert len(want) == 4 and sum(want.values()) == 6
    assert mine.find_introns(mine.fetch("chr1")) == want
    assert mine.find_introns(r for r in mine.fetch() if r.is_reverse) == theirs.find_introns(r for r in theirs.fetch() if r.is_reverse)
    assert mine.getrname(0) == theirs.getrname(0) == "chr1"
    unmapped = [r for r in fasthts.AlignmentFile(str(DATA / "small.bam")).fetch(until_eof=True) if r.reference_start < 0][:1]
    assert unmapped
    with pytest.raises(OverflowError):
        mine.find_introns(unmapped)
