"""fasthts.AlignmentFile.pileup against pysam's, run in the test on the
same files: every column attribute and helper, every read attribute, for
each stepper and some option combinations, whole files and regions
(truncated or not, at the references' edges). Files: the project's test
BAMs, a generated one (pysam_synth: overlapping mates with indels,
ref-skips, clips, secondary/duplicate/QC-failed reads, low and missing
qualities) and samtools' mpileup test files."""

import itertools
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


def tags(a):
    # pysam gives uint32 tags above 2^31 as negative (test_alignment_file.tags_of).
    return [(t, v + (1 << 32) if vt == "I" and isinstance(v, int) and v < 0 else v, vt)
            for t, v, vt in a.get_tags(with_value_type=True)]


def read_view(p):
    # `level` is left out: pysam's is uninitialised memory (its docs: "not computed").
    # Not to_string(): qualities summed over mates pass 93, which pysam's
    # to_string cannot decode.
    a = p.alignment
    q = a.query_qualities
    record = (a.query_name, a.flag, a.reference_id, a.reference_start, a.mapping_quality, a.cigarstring,
              a.next_reference_id, a.next_reference_start, a.template_length, a.query_sequence,
              None if q is None else list(q), tags(a))
    return (
        record, p.query_position, p.query_position_or_next, p.indel, p.is_del, p.is_refskip, p.is_head, p.is_tail,
    )


def column_view(c, set_min_bq=None):
    if set_min_bq is not None:
        c.set_min_base_quality(set_min_bq)
    return (
        c.reference_id, c.reference_name, c.reference_pos, c.nsegments, c.n, c.tid, c.pos, c.get_num_aligned(), len(c),
        [read_view(p) for p in c.pileups],
        c.get_query_sequences(), c.get_query_sequences(mark_ends=True), c.get_query_sequences(add_indels=True),
        c.get_query_sequences(mark_matches=True, mark_ends=True, add_indels=True),
        c.get_query_qualities(), c.get_mapping_qualities(), c.get_query_positions(), c.get_query_names(),
    )


def columns(f, *args, set_min_bq=None, limit=None, **kw):
    """Every column's view (the first `limit`), or the exception's type and text."""
    try:
        return [column_view(c, set_min_bq) for c in itertools.islice(f.pileup(*args, **kw), limit)]
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return (type(e).__name__, str(e))


def compare(pysam, path, cases, limit=None):
    total = 0
    for args, kw in cases:
        # A file per case: pysam's pileup of a file without an index reads
        # on from where the file's last reading stopped.
        ps, fh = pysam.AlignmentFile(str(path)), fasthts.AlignmentFile(str(path))
        x, y = columns(ps, *args, limit=limit, **kw), columns(fh, *args, limit=limit, **kw)
        if x != y and isinstance(x, list) and isinstance(y, list):
            assert len(x) == len(y), (args, kw, len(x), len(y))
            first = next(i for i, (u, v) in enumerate(zip(x, y)) if u != v)
            assert x[first] == y[first], (args, kw, first)
        assert x == y, (args, kw)
        total += len(x) if isinstance(x, list) else 0
    return total


STEPPER_CASES = [
    ((), {}),
    ((), {"stepper": "all"}),
    ((), {"stepper": "nofilter"}),
    ((), {"stepper": "samtools", "ignore_orphans": False, "min_mapping_quality": 20}),
    ((), {"stepper": "samtools", "flag_filter": 0x400, "flag_require": 0x2}),
    ((), {"stepper": "all", "flag_filter": 0}),
    ((), {"stepper": "nofilter", "ignore_overlaps": False}),
    ((), {"stepper": "all", "max_depth": 5}),
    ((), {"stepper": "nofilter", "max_depth": 1, "ignore_overlaps": False}),
    ((), {"max_depth": 0}),
    ((), {"min_base_quality": 0}),
    ((), {"min_base_quality": 30}),
    ((), {"stepper": "nofilter", "min_base_quality": 0, "min_base_quality_after": 25}),
]


def test_pileup_whole_file_steppers_equal_pysam(pysam, synth):
    ps, fh = pysam.AlignmentFile(str(synth)), fasthts.AlignmentFile(str(synth))
    n = 0
    for args, kw in STEPPER_CASES:
        kw = dict(kw)
        after = kw.pop("min_base_quality_after", None)
        x = columns(ps, *args, set_min_bq=after, **kw)
        y = columns(fh, *args, set_min_bq=after, **kw)
        assert x == y, kw
        n += len(x)
    assert n > 30000


def test_pileup_sees_what_it_should(synth):
    """The generated data has what the comparison is about."""
    fh = fasthts.AlignmentFile(str(synth))
    seen = set()
    for c in fh.pileup(stepper="nofilter", min_base_quality=0):
        for p in c.pileups:
            seen.add("del" if p.is_del and not p.is_refskip else "refskip" if p.is_refskip else "base")
            if p.indel > 0:
                seen.add("ins")
            if p.alignment.query_qualities is None:
                seen.add("noqual")
            if p.alignment.flag & 0x400:
                seen.add("dup")
            if p.alignment.flag & 0x100:
                seen.add("secondary")
        if c.nsegments > 1 and len(set(c.get_query_names())) < len(c.get_query_names()):
            seen.add("overlapping mates")
    assert {"del", "refskip", "base", "ins", "noqual", "dup", "secondary", "overlapping mates"} <= seen, seen


REGION_CASES = [
    (("chr1",), {}),
    (("chr1", 0, 10), {}),
    (("chr1", 0, 10), {"truncate": True}),
    (("chr1", 100, 300), {"truncate": True}),
    (("chr1", 100, 300), {"truncate": False, "stepper": "all"}),
    (("chr1", 2950, 3000), {"truncate": True}),
    (("chr1", 2990, 5000), {"truncate": True, "stepper": "nofilter"}),
    (("chr2", 0, 400), {"truncate": True}),
    (("chr2", 399, 400), {}),
    (("empty",), {}),
    ((), {"region": "chr1:101-200", "truncate": True}),
    ((), {"region": "chr2"}),
    ((), {"contig": "chr1", "start": 500, "truncate": True}),
    ((), {"reference": "chr1", "end": 40, "truncate": True}),
    (("chr1", 300, 200), {}),
    (("nope",), {}),
    (("chr1",), {"stepper": "bogus"}),
]


def test_pileup_regions_equal_pysam(pysam, synth):
    assert compare(pysam, synth, REGION_CASES) > 3000


def test_pileup_project_bams_equal_pysam(pysam):
    for name, cases in (
        ("small.bam", [((), {}), ((), {"stepper": "nofilter", "ignore_overlaps": False, "max_depth": 3})]),
        ("refs_without_reads.bam", [((), {}), ((), {"stepper": "all"})]),
    ):
        path = DATA / name
        ps = pysam.AlignmentFile(str(path))
        contig = ps.references[0]
        cases = cases + [((contig, 10000, 10500), {"truncate": True}), ((contig, 10000, 10500), {})]
        # The first columns of each (small.bam has 218,000).
        assert compare(pysam, path, cases, limit=15000) > 0


def test_pileup_samtools_test_files_equal_pysam(pysam, tmp_path):
    require(SAMTOOLS_MPILEUP.is_dir(), "samtools' test files (Debian package samtools-test, /usr/share/samtools/test)")
    n = 0
    for sam in ("indels.sam", "mp_D.sam", "mp_DI.sam", "deep.sam", "depth_del.sam"):
        path = tmp_path / (sam + ".bam")
        pysam.sort("-o", str(path), str(SAMTOOLS_MPILEUP / sam))
        pysam.index(str(path))
        n += compare(pysam, path, [((), {}), ((), {"stepper": "nofilter"}), ((), {"stepper": "all", "max_depth": 100})])
    assert n > 100


def test_pileup_without_index(pysam, synth, tmp_path):
    """No index: the whole file in one pileup without a region, pysam's
    error with one."""
    path = tmp_path / "noindex.bam"
    path.write_bytes(synth.read_bytes())
    compare(pysam, path, [((), {}), ((), {"stepper": "nofilter"}), (("chr1", 0, 100), {})])


def test_pileup_columns_keep_what_was_read(synth):
    """A column's reads, once read while it is current, stay with it;
    read later, a ValueError (pysam's then show another column's reads)."""
    fh = fasthts.AlignmentFile(str(synth))
    kept = []
    for c in fh.pileup("chr1", 0, 200, truncate=True):
        c.get_query_names()
        kept.append(c)
    again = [(c.reference_pos, c.get_query_names()) for c in fh.pileup("chr1", 0, 200, truncate=True)]
    assert [(c.reference_pos, c.get_query_names()) for c in kept] == again
    assert [c.reference_pos for c in kept] == list(range(200))
    stale = list(fh.pileup("chr1", 0, 10, truncate=True))
    assert [c.nsegments for c in stale] == [c.nsegments for c in kept[:10]]
    with pytest.raises(ValueError, match="after the iterator moved on"):
        stale[0].pileups


def test_pileup_iterator_shared_between_threads(synth):
    """Threads sharing one iterator get each column once (a thread waiting
    for another's batch does not hold the GIL)."""
    import threading

    fh = fasthts.AlignmentFile(str(synth))
    expected = [(c.reference_id, c.reference_pos) for c in fh.pileup(stepper="nofilter")]
    it = fh.pileup(stepper="nofilter")
    got = []

    def work():
        mine = [(c.reference_id, c.reference_pos) for c in it]
        got.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(expected)


def test_pileup_of_queries_longer_than_a_batch_equals_pysam(pysam, tmp_path):
    # More records in one query than the pileup reads in a batch (4096):
    # past its first batch a query is read ahead on threads of its own
    # (AlignmentFile(threads=)); the columns must not change.
    path = write_synthetic_bam(pysam, tmp_path / "deep.bam", seed=11, n_pairs=6000)

    def light(f, *args, **kw):
        return [
            (c.reference_id, c.reference_pos, c.nsegments, c.get_query_positions(),
             c.get_query_sequences(mark_matches=True, mark_ends=True, add_indels=True))
            for c in f.pileup(*args, **kw)
        ]

    ps = pysam.AlignmentFile(str(path))
    for args, kw in [((), {}), (("chr1",), {"stepper": "nofilter"}), (("chr1", 500, 2500), {"truncate": True})]:
        expected = light(ps, *args, **kw)
        assert sum(c[2] for c in expected) > 100_000
        for threads in (1, 2):
            assert light(fasthts.AlignmentFile(str(path), threads=threads), *args, **kw) == expected, (args, kw, threads)
