"""Region queries on a bgzipped SAM read through its index (a CSI from
`samtools index -c`, a BAI from `samtools index`), against the same calls
on the BAM samtools makes of the same text (`samtools view -b`), and
against `samtools view` of the SAM.gz: `fasthts.BamFile` (fetch with and
without overlap, columns, columns_many, plan, scatter) and
`fasthts.AlignmentFile` (fetch, count, index statistics), at 1 and 2
threads; the unplaced records; positions past 2^29 (CSI); refusals of
SAM that cannot be read by region, in one line naming the file; foreign,
stale and tabix indexes; pickling."""

import pickle
import shutil
import subprocess

import numpy as np
import pytest

import fasthts
from conftest import require, require_module, require_tool, target_dir


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """{"bam": indexed BAM, "csi"/"bai": a bgzipped SAM with that index
    beside it, "plain": the SAM text, "noindex": the bgzipped SAM alone}:
    generated reads on several references (long reads among them, whose
    alignments span many kilobases: overlap queries reach back to them),
    unplaced reads at the end, in small BGZF blocks."""
    samtools = require_tool("samtools", "samtools")
    bgzip = require_tool("bgzip", "tabix")
    tg = target_dir() / "release" / "fasthts-testgen"
    require(tg.is_file(), f"{tg} (cargo build --release -p fasthts-testgen)")
    d = tmp_path_factory.mktemp("samgz-regions")
    sam = d / "reads.sam"
    args = ["-q", "--seed", "21", "--reads", "6000", "--refs", "5", "--ref-len", "150000", "--read-len", "100-2000", "--long-cigar-fraction", "0.002"]
    sam.write_bytes(subprocess.run([str(tg), *args], check=True, capture_output=True).stdout)
    bam = d / "reads.bam"
    subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(bam), str(sam)], check=True)
    subprocess.run([samtools, "index", str(bam)], check=True)
    out = {"bam": bam, "plain": sam}
    for kind, flag in (("csi", ["-c"]), ("bai", []), ("noindex", None)):
        gz = d / kind / "reads.sam.gz"
        gz.parent.mkdir()
        gz.write_bytes(subprocess.run([bgzip, "-c", str(sam)], check=True, capture_output=True).stdout)
        if flag is not None:
            subprocess.run([samtools, "index", *flag, str(gz)], check=True)
        out[kind] = gz
    assert (out["csi"].parent / "reads.sam.gz.csi").is_file() and (out["bai"].parent / "reads.sam.gz.bai").is_file()
    return out


def region_list(bam):
    """Regions in every form BamFile takes: whole references (one without
    reads), windows (inside, at the ends, past the end), the unplaced."""
    refs = bam.references
    with_reads = [n for n, _ in refs if len(bam.columns(n)["pos"]) > 100]
    assert len(with_reads) >= 3
    empty = [n for n, _ in refs if len(bam.columns(n)["pos"]) == 0]
    assert empty, "a reference without reads"
    a, b = with_reads[0], with_reads[1]
    length = dict(refs)[b]
    return [
        a,
        b,
        empty[0],
        "*",
        f"{a}:1-1",
        f"{a}:20,001-60,000",
        f"{b}:{length - 5000}-{length}",
        f"{b}:{length + 1}-{length + 100}",
        (a, 30000, 30001),
        (b, None, 70000),
        (with_reads[2], 100000, None),
        [a, 0, None],
        fasthts.Region(bam.tid(b), 5000, 90000, b),
        (None, None, None),
    ]


def same_columns(want, got, what):
    assert want.keys() == got.keys(), what
    for k in want:
        assert want[k].dtype == got[k].dtype, (what, k)
        assert np.array_equal(want[k], got[k]), (what, k)


@pytest.mark.parametrize("kind", ["csi", "bai"])
def test_bamfile_regions_of_samgz_equal_the_bams(data, kind):
    bam = fasthts.BamFile(str(data["bam"]))
    sam = fasthts.BamFile(str(data[kind]))
    assert sam.is_sam and sam.has_index
    regions = region_list(bam)
    overlapping_more = 0
    for region in regions:
        what = (kind, str(region))
        assert sam.region(region) == bam.region(region), what
        want = [r.raw for r in bam.fetch(region)]
        assert [r.raw for r in sam.fetch(region)] == want, what
        want_overlap = [r.raw for r in bam.fetch(region, overlap=True)]
        assert [r.raw for r in sam.fetch(region, overlap=True)] == want_overlap, what
        overlapping_more += len(want_overlap) > len(want)
        cols = bam.columns(region, threads=1)
        assert len(cols["pos"]) == len(want), what
        for threads in (1, 2):
            same_columns(cols, sam.columns(region, threads=threads), (what, threads))
        # Pieces of a few kilobytes: a region read in many parallel pieces.
        same_columns(cols, fasthts._arrays(sam._columns(region, 2, 3000)), (what, "pieces"))
    # The long reads reach into windows that start after them: the overlap
    # rule is tested, not only the start rule.
    assert overlapping_more >= 3
    for threads in (1, 2):
        for want, got in zip(bam.columns_many(regions, threads=threads), sam.columns_many(regions, threads=threads)):
            same_columns(want, got, (kind, "columns_many", threads))
    # Plans tile the file: each record once, in file order; windows as the BAM's.
    assert sam.plan(window=40000) == bam.plan(window=40000)
    whole = bam.columns()
    for plan in (sam.plan(), sam.plan(region_bytes=20000), sam.plan(window=40000)):
        parts = sam.columns_many(plan, threads=2)
        same_columns(whole, {k: np.concatenate([p[k] for p in parts]) for k in whole}, (kind, "plan"))
    assert len(sam.plan(region_bytes=20000)) > len(sam.plan()) > 2
    counts = fasthts.scatter(sam, None, lambda r, c: len(c["pos"]), threads=2)
    assert sum(counts) == len(whole["pos"])


def test_bamfile_region_records_are_samtools_views(data):
    """Overlap queries give what `samtools view SAM.GZ REGION` prints."""
    samtools = require_tool("samtools", "samtools")
    sam = fasthts.BamFile(str(data["csi"]))
    seen = 0
    for region in ("chr1:20,001-60,000", "chr2:1-1", "chr2:30,000-30,000", "chr4:100001-", "*", "chr5"):
        names = subprocess.run([samtools, "view", str(data["csi"]), region], check=True, capture_output=True, text=True).stdout
        want = [line.split("\t", 3)[:3] for line in names.splitlines()]
        got = [[r.name, str(r.flag), r.ref or "*"] for r in sam.fetch(region, overlap=True)]
        assert got == want, region
        seen += len(want)
    assert seen > 1000


def segment(r):
    return (r.query_name, r.flag, r.reference_id, r.reference_start, r.cigarstring, r.next_reference_start, r.query_sequence)


@pytest.mark.parametrize("kind", ["csi", "bai"])
@pytest.mark.parametrize("threads", [1, 2])
def test_alignment_file_regions_of_samgz_equal_the_bams(data, kind, threads):
    pysam = require_module("pysam")
    samtools = require_tool("samtools", "samtools")
    bam = fasthts.AlignmentFile(str(data["bam"]), threads=threads)
    sam = fasthts.AlignmentFile(str(data[kind]), threads=threads)
    theirs = pysam.AlignmentFile(str(data["bam"]))
    assert sam.is_sam and not sam.is_bam and sam.has_index() and sam.check_index()
    # pysam (0.24) refuses regions of any SAM, indexed or not: fasthts goes
    # further (docs/python.md says so). Should pysam answer one day, its
    # answers are the ones to compare with here.
    with pytest.raises(ValueError, match="fetching by region is not available for SAM files"):
        pysam.AlignmentFile(str(data[kind])).fetch("chr1", 0, 1000)
    calls = [
        dict(contig="chr1"),
        dict(contig="chr1", start=20000, stop=60000),
        dict(contig="chr2", start=0, stop=1),
        dict(reference="chr4", start=100000),
        dict(region="chr2:5001-9000"),
        dict(region="chr1"),
        dict(contig="*"),
        dict(region="*"),
        dict(contig="chr3"),
        dict(tid=1, start=70000, stop=70001),
    ]
    for kw in calls:
        want = [segment(r) for r in theirs.fetch(**kw)]
        assert [segment(r) for r in bam.fetch(**kw)] == want, kw
        assert [segment(r) for r in sam.fetch(**kw)] == want, (kind, kw)
        if "tid" not in kw:  # (count takes no tid)
            assert sam.count(**kw) == len(want), kw
            assert sam.count(**kw, read_callback="all") == theirs.count(**kw, read_callback="all"), kw
    # count against samtools view -c of the SAM.gz (htslib's iterator on it).
    for region in ("chr1:20001-60000", "chr2", "*"):
        c = int(subprocess.run([samtools, "view", "-c", str(data[kind]), region], check=True, capture_output=True, text=True).stdout)
        assert sam.count(region=region) == c, region
    # Index statistics, from the SAM.gz's index, as the BAM's.
    assert sam.get_index_statistics() == bam.get_index_statistics() == theirs.get_index_statistics()
    assert (sam.mapped, sam.unmapped, sam.nocoordinate) == (theirs.mapped, theirs.unmapped, theirs.nocoordinate)
    # fetch() without a region reads the SAM from its start, as pysam reads
    # any SAM: every record, the unplaced ones included.
    whole = [segment(r) for r in pysam.AlignmentFile(str(data[kind])).fetch()]
    assert [segment(r) for r in sam.fetch()] == whole
    assert sam.count() == len(whole) > theirs.count()
    assert [segment(r) for r in sam.fetch(until_eof=True)] == whole
    assert whole == [segment(r) for r in pysam.AlignmentFile(str(data["bam"])).fetch(until_eof=True)]


def one_line(path, call, exception=fasthts.Error):
    with pytest.raises(exception) as e:
        call()
    msg = str(e.value)
    assert "\n" not in msg, msg
    assert f"{path}: " in msg, msg
    return msg


NOT_INDEXABLE = (
    "random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files (a bgzipped SAM file is read through its index; "
    "plain or gzip SAM, pipes and standard input cannot be: bgzip it to a file, then fasthts index it)"
)
NO_INDEX = "cannot load index (regions are read through the index: fasthts index it first)"


def test_sam_without_an_index_is_refused_regions_in_one_line(data, tmp_path):
    gz = tmp_path / "reads.gzip.sam.gz"
    import gzip

    gz.write_bytes(gzip.compress(data["plain"].read_bytes()))
    for path, why in ((data["plain"], NOT_INDEXABLE), (gz, NOT_INDEXABLE), (data["noindex"], NO_INDEX)):
        sam = fasthts.BamFile(str(path))
        assert not sam.has_index
        calls = [
            lambda: sam.fetch("chr1"),
            lambda: sam.fetch(("chr1", 0, 1000), overlap=True),
            lambda: sam.columns("chr1:1-1000"),
            lambda: sam.columns("*", threads=2),
            lambda: sam.columns_many(["chr1", "*"]),
            lambda: sam.plan(),
            lambda: fasthts.scatter(sam, None, lambda r, c: 0),
        ]
        for call in calls:
            assert one_line(path, call) == f"{path}: {why}"
        # (The whole file is still read.)
        assert len(sam.columns()["pos"]) == len(fasthts.BamFile(str(data["bam"])).columns()["pos"])
        # AlignmentFile: pysam's ValueError, with the reason.
        a = fasthts.AlignmentFile(str(path))
        assert not a.has_index()
        for call in (lambda: a.fetch("chr1"), lambda: a.count(region="chr1:1-100"), lambda: a.fetch("*")):
            assert one_line(path, call, ValueError) == f"fetching by region is not available for SAM files: {path}: {why}"
        assert a.count() == a.count(until_eof=True) > 0
    # An index given with SAM that is not bgzipped: refused at open, in the
    # same words by both classes (one decision, the library's).
    for path in (data["plain"], gz):
        index = str(data["csi"]) + ".csi"
        assert one_line(path, lambda: fasthts.BamFile(str(path), index=index)) == f"{path}: {NOT_INDEXABLE}"
        assert one_line(path, lambda: fasthts.AlignmentFile(str(path), index_filename=index)) == f"{path}: {NOT_INDEXABLE}"


def test_tabix_and_foreign_indexes_are_refused_as_for_a_bam(data, tmp_path):
    tabix = require_tool("tabix", "tabix")
    gz = tmp_path / "t.sam.gz"
    shutil.copy(data["noindex"], gz)
    subprocess.run([tabix, "-p", "sam", str(gz)], check=True, capture_output=True)
    tbi = f"{gz}.tbi"
    msg = f"{tbi}: TBI (tabix) indexes are not supported; only BAI and CSI"
    assert one_line(tbi, lambda: fasthts.BamFile(str(gz), index=tbi)) == msg
    assert one_line(tbi, lambda: fasthts.AlignmentFile(str(gz), index_filename=tbi)) == msg
    # A missing index: the OSError of any missing file, naming it.
    for call in (lambda: fasthts.BamFile(str(gz), index=f"{gz}.nope"), lambda: fasthts.AlignmentFile(str(gz), index_filename=f"{gz}.nope")):
        with pytest.raises(FileNotFoundError, match=f"{gz}.nope"):
            call()
    # A .tbi beside it is not an index of fasthts' (nor of samtools view's).
    assert one_line(gz, lambda: fasthts.BamFile(str(gz)).fetch("chr1")) == f"{gz}: {NO_INDEX}"
    # The BAM's index: other offsets (each chunk is checked), as for a BAM
    # given another BAM's index.
    bai = f"{data['bam']}.bai"
    for call in (lambda: fasthts.BamFile(str(gz), index=bai), lambda: fasthts.AlignmentFile(str(gz), index_filename=bai)):
        msg = one_line(bai, call)
        assert msg.startswith(f"{bai}: the index does not match the data file ("), msg
    # An index of a file with other references: named as such.
    other = tmp_path / "other.sam"
    other.write_bytes(b"@SQ\tSN:x\tLN:100\nr\t0\tx\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n")
    bgzip = require_tool("bgzip", "tabix")
    other_gz = tmp_path / "other.sam.gz"
    other_gz.write_bytes(subprocess.run([bgzip, "-c", str(other)], check=True, capture_output=True).stdout)
    samtools = require_tool("samtools", "samtools")
    subprocess.run([samtools, "index", "-c", str(other_gz)], check=True)
    csi = f"{other_gz}.csi"
    msg = one_line(csi, lambda: fasthts.BamFile(str(gz), index=csi))
    assert msg.startswith(f"{csi}: the index does not match the data file (1 references in the index, "), msg


def test_samgz_with_its_index_pickles_with_the_index_path(data, tmp_path):
    # The index away from the file: only the path kept in the pickle finds it.
    gz = tmp_path / "moved.sam.gz"
    shutil.copy(data["csi"], gz)
    index = tmp_path / "elsewhere.csi"
    shutil.copy(str(data["csi"]) + ".csi", index)
    sam = fasthts.BamFile(str(gz), index=str(index))
    assert sam.has_index
    copy = pickle.loads(pickle.dumps(sam))
    assert len(pickle.dumps(sam)) < 1000
    assert str(sam.__reduce__()[1][1]) == str(copy.__reduce__()[1][1]) == str(index)
    want = fasthts.BamFile(str(data["bam"])).columns("chr1:10001-50000")
    same_columns(want, copy.columns("chr1:10001-50000", threads=2), "unpickled")
    # Without the index path it would have none.
    assert one_line(gz, lambda: fasthts.BamFile(str(gz)).columns("chr1")) == f"{gz}: {NO_INDEX}"
    # AlignmentFile takes it as index_filename (pysam's name).
    a = fasthts.AlignmentFile(str(gz), index_filename=str(index))
    assert a.has_index() and a.count("chr1", 10000, 50000) == fasthts.AlignmentFile(str(data["bam"])).count("chr1", 10000, 50000) > 0
    assert not fasthts.AlignmentFile(str(gz)).has_index()
    # A SAM.gz with its index beside it pickles without one (found again).
    beside = pickle.loads(pickle.dumps(fasthts.BamFile(str(data["bai"]))))
    assert beside.has_index and len(beside.columns("chr2")["pos"]) > 0


def test_stale_index_is_used_with_the_clis_warning_and_a_cut_file_is_one_line(data, tmp_path):
    import os

    gz = tmp_path / "stale.sam.gz"
    shutil.copy(data["csi"], gz)
    index = tmp_path / "stale.sam.gz.csi"
    shutil.copy(str(data["csi"]) + ".csi", index)
    # The data written again after it was indexed: its index is older.
    os.utime(index, (1_000_000_000, 1_000_000_000))
    want = fasthts.BamFile(str(data["bam"])).columns("chr2")
    sam = fasthts.BamFile(str(gz))
    assert sam.has_index
    with pytest.warns(UserWarning, match=f"the index file {index} is older than the data file {gz}"):
        got = sam.columns("chr2", threads=2)
    same_columns(want, got, "stale index")
    with pytest.warns(UserWarning, match="is older than the data file"):
        a = fasthts.AlignmentFile(str(gz))
    assert a.count("chr2") == fasthts.AlignmentFile(str(data["bam"])).count("chr2")

    # Cut short: its index points past its end, and is refused as
    # not describing it (as a BAM's would be), whatever the region.
    cut = tmp_path / "cut.sam.gz"
    cut.write_bytes(data["csi"].read_bytes()[: data["csi"].stat().st_size // 2])
    shutil.copy(str(data["csi"]) + ".csi", str(cut) + ".csi")
    with pytest.warns(UserWarning, match="EOF marker is absent"):
        sam = fasthts.BamFile(str(cut))
    for call in (lambda: sam.columns("chr1"), lambda: sam.fetch("chr1:1-10")):
        with pytest.warns(UserWarning, match="EOF marker is absent"):
            msg = one_line(f"{cut}.csi", call)
        assert msg.startswith(f"{cut}.csi: the index does not match the data file (") and "lies past the end of the file" in msg, msg


def test_positions_past_2_29_are_read_through_a_csi(tmp_path):
    """chrLong's reads lie past 2^29, where only a CSI's bins reach."""
    samtools = require_tool("samtools", "samtools")
    bgzip = require_tool("bgzip", "tabix")
    tg = target_dir() / "release" / "fasthts-testgen"
    require(tg.is_file(), f"{tg} (cargo build --release -p fasthts-testgen)")
    sam = tmp_path / "long.sam"
    args = ["-q", "--seed", "3", "--reads", "3000", "--refs", "2", "--ref-len", "100000", "--long-ref"]
    sam.write_bytes(subprocess.run([str(tg), *args], check=True, capture_output=True).stdout)
    gz, bam_path = tmp_path / "long.sam.gz", tmp_path / "long.bam"
    gz.write_bytes(subprocess.run([bgzip, "-c", str(sam)], check=True, capture_output=True).stdout)
    subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(bam_path), str(sam)], check=True)
    for path in (gz, bam_path):
        subprocess.run([samtools, "index", "-c", str(path)], check=True)
    bam, samgz = fasthts.BamFile(str(bam_path)), fasthts.BamFile(str(gz))
    far = "chrLong:536,870,000-600,000,000"
    assert len(list(bam.fetch(far))) > 100
    for region in ("chrLong", far, "chrLong:1-1000000", "*"):
        assert [r.raw for r in samgz.fetch(region, overlap=True)] == [r.raw for r in bam.fetch(region, overlap=True)], region
        same_columns(bam.columns(region, threads=1), samgz.columns(region, threads=2), region)
    a, b = fasthts.AlignmentFile(str(gz), threads=2), fasthts.AlignmentFile(str(bam_path))
    assert a.count("chrLong", 536870000, 600000000) == b.count("chrLong", 536870000, 600000000) > 100


def test_refusals_are_the_clis(data, cli, tmp_path):
    """Python's errors for a region of SAM are `fasthts view`'s, one decision."""
    tabix = require_tool("tabix", "tabix")
    gz = tmp_path / "t.sam.gz"
    shutil.copy(data["noindex"], gz)
    subprocess.run([tabix, "-p", "sam", str(gz)], check=True, capture_output=True)
    cases = [
        ([data["plain"], "chr1"], lambda: fasthts.BamFile(str(data["plain"])).fetch("chr1")),
        ([data["noindex"], "chr1"], lambda: fasthts.BamFile(str(data["noindex"])).columns("chr1")),
        (["-X", gz, f"{gz}.tbi", "chr1"], lambda: fasthts.BamFile(str(gz), index=f"{gz}.tbi")),
    ]
    for args, call in cases:
        r = subprocess.run([cli, "view", "-c", *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 1 and r.stdout == "", args
        with pytest.raises(fasthts.Error) as e:
            call()
        assert r.stderr == f"fasthts view: {e.value}\n", args
    # Another file's index: refused by both, for what each check finds
    # first (Python, as for a BAM given by name, checks every chunk's block;
    # view -X only that the offsets lie within the file).
    bai = f"{data['bam']}.bai"
    r = subprocess.run([cli, "view", "-c", "-X", str(data["csi"]), bai, "chr1"], capture_output=True, text=True)
    with pytest.raises(fasthts.Error) as e:
        fasthts.BamFile(str(data["csi"]), index=bai)
    prefix = f"{bai}: the index does not match the data file ("
    assert r.returncode == 1 and r.stderr.startswith(f"fasthts view: {prefix}") and str(e.value).startswith(prefix), (r.stderr, e.value)
