"""fasthts.AlignmentFile.pileup with a fastafile against pysam's, run in
the test on the same files: BAQ (compute_baq, redo_baq), cap-mapq
(adjust_capq_threshold) and the reference marks of get_query_sequences,
column by column; the error for a reference the FASTA lacks. Files: a
generated reference and reads (baq_synth: mismatches, indels, clips,
ref-skips, reads past the reference's end, BQ/ZQ tags valid and
malformed, a long read) and samtools' mpileup test files with their
reference."""

import shutil
from pathlib import Path

import pytest

import fasthts
from baq_synth import write_baq_bam
from conftest import require, require_module

SAMTOOLS_MPILEUP = Path("/usr/share/samtools/test/mpileup")

# Deleted bases and marks at columns past a reference's end: pysam reads
# its sequence's buffer there unchecked (past the NUL after it, memory it
# does not own), so those strings are left out of the comparison.
PAST_END_MARGIN = 16


@pytest.fixture(scope="module")
def pysam():
    return require_module("pysam")


@pytest.fixture(scope="module")
def synth(pysam, tmp_path_factory):
    return write_baq_bam(pysam, tmp_path_factory.mktemp("baq") / "baq.bam")


@pytest.fixture(scope="module")
def synth_missing(pysam, tmp_path_factory):
    """chr3 in the BAM, with reads, not in the FASTA."""
    return write_baq_bam(pysam, tmp_path_factory.mktemp("baqm") / "missing.bam", missing=True)


def tags(a):
    return a.get_tags(with_value_type=True)


def column_view(c, unchecked_from):
    """What a column shows; sequences only where pysam's are defined
    (positions before `unchecked_from(c)`)."""
    checked = c.reference_pos + PAST_END_MARGIN < unchecked_from(c)
    return (
        c.reference_id, c.reference_pos, c.nsegments, c.get_num_aligned(),
        c.get_query_positions(), c.get_query_qualities(), c.get_mapping_qualities(), c.get_query_names(),
        c.get_query_sequences(mark_matches=True, mark_ends=True, add_indels=True) if checked else None,
        c.get_query_sequences(mark_matches=True) if checked else None,
        [(p.alignment.mapping_quality, list(p.alignment.query_qualities or []), tags(p.alignment), p.indel, p.is_del)
         for p in c.pileups],
    )


def columns(module, bam, fasta, args, kw, unchecked_from):
    """Every column's view, then the exception's type and text if any."""
    f = module.AlignmentFile(str(bam))
    out = []
    try:
        for c in f.pileup(*args, fastafile=module.FastaFile(str(fasta)), **kw):
            out.append(column_view(c, unchecked_from))
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        out.append((type(e).__name__, str(e)))
    return out


def compare(pysam, bam, fasta, cases, whole_file=False):
    lengths = dict(zip(pysam.FastaFile(str(fasta)).references, pysam.FastaFile(str(fasta)).lengths))
    if whole_file:
        # Reading a whole file, pysam's columns at a reference's end may
        # already hold the next reference's sequence.
        shortest = min(lengths.values())

        def unchecked_from(c):
            return shortest
    else:

        def unchecked_from(c):
            return lengths.get(c.reference_name, 0)

    total = 0
    for args, kw in cases:
        x = columns(pysam, bam, fasta, args, kw, unchecked_from)
        y = columns(fasthts, bam, fasta, args, kw, unchecked_from)
        assert len(x) == len(y), (args, kw, len(x), len(y))
        for i, (u, v) in enumerate(zip(x, y)):
            assert u == v, (args, kw, i)
        total += len(x)
    return total


OPTION_CASES = [
    ((), {}),
    ((), {"compute_baq": False}),
    ((), {"redo_baq": True}),
    ((), {"compute_baq": False, "redo_baq": True}),
    ((), {"adjust_capq_threshold": 50}),
    ((), {"adjust_capq_threshold": 50, "compute_baq": False}),
    ((), {"adjust_capq_threshold": 50, "redo_baq": True, "min_mapping_quality": 20}),
    ((), {"adjust_capq_threshold": 10}),
    ((), {"adjust_capq_threshold": 30, "ignore_orphans": False, "ignore_overlaps": False, "min_base_quality": 0}),
    (("chr1", 1000, 1500), {"truncate": True}),
    (("chr2",), {"redo_baq": True, "flag_filter": 0}),
    ((), {"stepper": "all"}),
    ((), {"stepper": "nofilter", "adjust_capq_threshold": 50}),
]


def test_pileup_with_reference_equals_pysam(pysam, synth):
    bam, fasta = synth
    assert compare(pysam, bam, fasta, OPTION_CASES) > 40000


def test_generated_data_has_what_the_comparison_is_about(pysam, synth):
    """BAQ lowers qualities here and redo_baq changes them; cap-mapq
    lowers mapping qualities; reads carry BQ/ZQ tags; the reference marks
    matches; a read is long enough for htslib's long-read parameters."""
    bam, fasta = synth
    f, fa = fasthts.AlignmentFile(str(bam)), fasthts.FastaFile(str(fasta))

    def flat(**kw):
        quals, mapqs, seqs = [], [], []
        for c in f.pileup("chr1", fastafile=fa, min_base_quality=0, **kw):
            quals.extend(c.get_query_qualities())
            mapqs.extend(c.get_mapping_qualities())
            seqs.extend(c.get_query_sequences(mark_matches=True))
        return quals, mapqs, seqs

    plain, baq, redo, capped = flat(compute_baq=False), flat(), flat(redo_baq=True), flat(adjust_capq_threshold=50)
    assert len(plain[0]) == len(baq[0]) == len(redo[0])
    assert sum(plain[0]) > sum(baq[0]) and baq[0] != redo[0]
    assert sum(capped[1]) < sum(plain[1])
    assert plain[2].count(".") + plain[2].count(",") > len(plain[2]) // 2
    seen = set()
    for a in f.fetch():
        seen.update(t for t in ("BQ", "ZQ") if a.has_tag(t))
        if a.query_length > 1000:
            seen.add("long")
    assert {"BQ", "ZQ", "long"} <= seen, seen


def test_pileup_with_reference_without_index_equals_pysam(pysam, synth, tmp_path):
    bam, fasta = synth
    path = tmp_path / "noindex.bam"
    shutil.copyfile(bam, path)
    assert compare(pysam, path, fasta, [((), {}), ((), {"adjust_capq_threshold": 50})], whole_file=True) > 4000


def test_pileup_reference_missing_from_fasta(pysam, synth_missing, tmp_path):
    """pysam's ValueError, after the columns it gave before it: through
    the index, for a region, and reading the whole file."""
    bam, fasta = synth_missing
    noindex = tmp_path / "noindex.bam"
    shutil.copyfile(bam, noindex)
    for path, args in ((bam, ()), (bam, ("chr3",)), (bam, ("chr1",)), (noindex, ())):
        compare(pysam, path, fasta, [(args, {})], whole_file=path == noindex)
        last = columns(fasthts, path, fasta, args, {}, lambda c: 0)[-1]
        if args != ("chr1",):
            assert last == ("ValueError", "reference sequence for 'b'chr3'' (tid=2) not found")


def test_pileup_samtools_test_files_with_reference_equal_pysam(pysam, tmp_path):
    require(SAMTOOLS_MPILEUP.is_dir(), "samtools' test files (Debian package samtools-test, /usr/share/samtools/test)")
    fasta = tmp_path / "mpileup.ref.fa"
    shutil.copyfile(SAMTOOLS_MPILEUP / "mpileup.ref.fa", fasta)
    n = 0
    for name in ("mpileup.1.bam", "mpileup.2.bam", "mpileup.3.bam"):
        path = tmp_path / name
        shutil.copyfile(SAMTOOLS_MPILEUP / name, path)
        pysam.index(str(path))
        n += compare(pysam, path, fasta, [((), {}), ((), {"redo_baq": True, "adjust_capq_threshold": 50})])
    assert n > 20000


def test_pileup_fastafile_of_another_type_is_refused(synth):
    bam, _ = synth
    with pytest.raises(TypeError, match="Cannot convert object to fasthts.FastaFile"):
        fasthts.AlignmentFile(str(bam)).pileup("chr1", fastafile=object())
