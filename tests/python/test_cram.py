"""CRAM through fasthts.AlignmentFile (region queries on the .crai),
fasthts.BamFile and fasthts.dask, against pysam, the BAM the CRAM was made
from and the single-machine results: CRAM 2.1, 3.0 and 3.1 of the golden
BAMs in small containers (regions span several), the reference given or
found by @SQ UR or embedded, multi-reference slices, unmapped-only, a CRAM
without .crai."""

import pickle
import shutil
import subprocess

import numpy as np
import pytest

import fasthts
from conftest import require, require_module, require_tool, target_dir

pysam = require_module("pysam")


pytestmark = pytest.mark.usefixtures("no_reference_lookup")


@pytest.fixture(scope="module")
def crams(golden, tmp_path_factory):
    """{version: path} of indexed CRAMs of normal.bam, and a copy without .crai."""
    samtools = require_tool("samtools", "samtools")
    d = tmp_path_factory.mktemp("cram")
    ref = golden / "ref.fa"
    out = {}
    for version in ("3.0", "3.1"):
        path = d / f"normal{version}.cram"
        subprocess.run(
            [samtools, "view", "-C", "-T", str(ref), "--output-fmt-option", f"version={version}",
             "--output-fmt-option", "seqs_per_slice=300", "-o", str(path), str(golden / "normal.bam")],
            check=True, capture_output=True,
        )
        subprocess.run([samtools, "index", str(path)], check=True)
        out[version] = path
    bare = d / "bare.cram"
    shutil.copy(out["3.0"], bare)
    out["bare"] = bare
    return out


def rows(records):
    return [
        (r.query_name, r.flag, r.reference_id, r.reference_start, r.mapping_quality, r.cigarstring, r.query_sequence,
         list(r.query_qualities or []), r.next_reference_id, r.next_reference_start, r.template_length)
        for r in records
    ]


REGIONS = [
    dict(contig="I", start=1000, stop=9000),
    dict(contig="I"),
    dict(contig="II", start=30000),
    dict(contig="MtDNA", start=0, stop=10),
    dict(region="X:20001-40000"),
    dict(region="II"),
    dict(contig="*"),
]


@pytest.mark.parametrize("version", ["3.0", "3.1"])
def test_fetch_and_count_equal_pysam(crams, golden, version):
    path, ref = str(crams[version]), str(golden / "ref.fa")
    with fasthts.AlignmentFile(path, reference_filename=ref) as ours, pysam.AlignmentFile(path, reference_filename=ref) as theirs:
        assert ours.is_cram and theirs.is_cram
        assert ours.has_index() and theirs.has_index()
        for kw in REGIONS:
            want = rows(theirs.fetch(**kw))
            assert rows(ours.fetch(**kw)) == want, kw
            assert ours.count(**kw) == theirs.count(**kw) == len(want), kw
        assert len(want) > 0, "the unplaced reads"
        assert rows(ours.fetch()) == rows(theirs.fetch())
        # (pysam reads until_eof from where its handle stands: a fresh one.)
        with pysam.AlignmentFile(path, reference_filename=ref) as fresh:
            assert rows(ours.fetch(until_eof=True)) == rows(fresh.fetch(until_eof=True))
        assert ours.count(read_callback="all") == theirs.count(read_callback="all")
        # A .crai records no counts: htslib gives zeros, as pysam shows.
        assert [tuple(s) for s in ours.get_index_statistics()] == [tuple(s) for s in theirs.get_index_statistics()]
        for bad in (dict(contig="nosuch"), dict(contig="I", start=10, stop=5)):
            with pytest.raises(ValueError):
                list(theirs.fetch(**bad))
            with pytest.raises(ValueError):
                list(ours.fetch(**bad))


def test_reference_found_by_ur_as_pysam_finds_it(crams):
    path = str(crams["3.0"])
    with fasthts.AlignmentFile(path) as ours, pysam.AlignmentFile(path) as theirs:
        assert rows(ours.fetch("X", 100, 5000)) == rows(theirs.fetch("X", 100, 5000))


def test_a_cram_without_crai(crams, golden):
    path, ref = str(crams["bare"]), str(golden / "ref.fa")
    with fasthts.AlignmentFile(path, reference_filename=ref) as ours, pysam.AlignmentFile(path, reference_filename=ref) as theirs:
        assert not ours.has_index() and not theirs.has_index()
        with pytest.raises(ValueError, match="without index"):
            theirs.fetch("I")
        with pytest.raises(ValueError, match="without index"):
            ours.fetch("I")
        want = rows(theirs.fetch(until_eof=True))
        assert rows(ours.fetch(until_eof=True)) == want
        # Read a second time from the start, with the same reference.
        assert ours.count(until_eof=True) == len(want) > 0
    with pytest.raises(OSError):
        fasthts.AlignmentFile(path, reference_filename=ref, require_index=True)


def test_dask_functions_on_cram(crams, golden, tmp_path):
    distributed = require_module("distributed")
    import fasthts.dask as fdask

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        cram = str(crams["3.0"])
        assert fdask.flagstat(client, cram) == fasthts.flagstat(cram)
        # snp_pileup: FACETS' CSV, the CRAMs' references found by @SQ UR.
        out = tmp_path / "snp.csv"
        fdask.snp_pileup(client, str(golden / "sites.vcf.gz"), str(out), [cram, str(golden / "tumour.bam")], tasks=5)
        assert out.read_bytes() == (golden / "out/default.csv").read_bytes()
        # sort and index: tests/python/test_dask_cram.py.
    finally:
        client.close()
        cluster.close()


def m_cigar(cigar):
    """`cigar` with = and X written as M: CRAM keeps matches only as M
    (samtools view of a CRAM shows them so)."""
    out = []
    for op, n in cigar:
        op = 0 if op in (7, 8) else op
        if out and out[-1][0] == op:
            out[-1] = (op, out[-1][1] + n)
        else:
            out.append((op, n))
    return out


def record_fields(r):
    """A `Record`'s fields as a CRAM keeps them: tags as a set (a CRAM gives
    MD, NM and RG in another order, as samtools view of it does), = and X
    as M."""
    return (r.name, r.flag, r.tid, r.pos, r.end, r.mapq, m_cigar(r.cigar), r.seq, r.qual, r.mate_tid, r.mate_pos, r.tlen,
            sorted(r.tags))


def same_columns(want, got, what):
    assert want.keys() == got.keys(), what
    for k in want:
        assert want[k].dtype == got[k].dtype, (what, k)
        assert np.array_equal(want[k], got[k]), (what, k)


def cram_of(bam, out, ref, *options):
    samtools = require_tool("samtools", "samtools")
    args = [samtools, "view", "-C", "-T", str(ref), "-o", str(out)]
    for o in options:
        args += ["--output-fmt-option", o]
    subprocess.run(args + [str(bam)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Generated reads as sorted BAMs with their FASTAs: `many` (60 small
    references: multi-reference slices; mates on other references,
    unmapped reads), `unmapped` (no mapped read at all)."""
    samtools = require_tool("samtools", "samtools")
    tg = target_dir() / "release" / "fasthts-testgen"
    require(tg.is_file(), f"{tg} (cargo build --release -p fasthts-testgen)")
    d = tmp_path_factory.mktemp("bamfile-cram")
    out = {}
    for name, extra in (("many", ["--refs", "60", "--ref-len", "10000", "--reads", "2000"]),
                        ("unmapped", ["--refs", "3", "--ref-len", "60000", "--reads", "500", "--no-mapped"])):
        fasta = d / f"{name}.fa"
        sam = subprocess.run([str(tg), "-q", "--seed", "22", *extra, "--reference-fasta", str(fasta)],
                             check=True, capture_output=True).stdout
        (d / f"{name}.sam").write_bytes(sam)
        subprocess.run([samtools, "faidx", str(fasta)], check=True)
        bam = d / f"{name}.bam"
        subprocess.run([samtools, "view", "-b", "-o", str(bam), str(d / f"{name}.sam")], check=True)
        subprocess.run([samtools, "index", str(bam)], check=True)
        out[name] = (bam, fasta)
    return out


def check_like_bam(bam_path, cram_path, reference=None, regions=()):
    """`BamFile` on the CRAM gives the BAM's plan tiling, columns (whole
    file, every planned region and `regions`, at 1 and 2 threads), fetch
    and count."""
    bam = fasthts.BamFile(str(bam_path))
    cram = fasthts.BamFile(str(cram_path), reference=None if reference is None else str(reference))
    assert cram.is_cram and not bam.is_cram
    assert cram.references == bam.references
    regions = list(regions) + cram.plan(region_bytes=1) + cram.plan(window=7000) + bam.plan(window=7000)
    for threads in (1, 2):
        whole = bam.columns(threads=threads)
        same_columns(whole, cram.columns(threads=threads), ("whole file", threads))
        for r in regions:
            same_columns(bam.columns(r, threads=threads), cram.columns(r, threads=threads), (str(r), threads))
        for want, got in zip(bam.columns_many(regions, threads=threads), cram.columns_many(regions, threads=threads)):
            same_columns(want, got, "columns_many")
    # A plan tiles the file: every record once.
    for plan in (cram.plan(), cram.plan(region_bytes=1), cram.plan(window=5000)):
        assert sum(len(cram.columns(r)["pos"]) for r in plan) == len(whole["pos"])
    assert [record_fields(r) for r in cram.fetch()] == [record_fields(r) for r in bam.fetch()]
    for r in regions[:12]:
        for overlap in (False, True):
            want = [record_fields(x) for x in bam.fetch(r, overlap=overlap)]
            assert [record_fields(x) for x in cram.fetch(r, overlap=overlap)] == want, (str(r), overlap)
    return whole


@pytest.mark.parametrize("version", ["2.1", "3.0", "3.1"])
def test_bamfile_on_cram_equals_the_bam(golden, tmp_path, version):
    ref = golden / "ref.fa"
    cram = cram_of(golden / "normal.bam", tmp_path / "n.cram", ref, f"version={version}", "seqs_per_slice=300")
    subprocess.run([require_tool("samtools", "samtools"), "index", str(cram)], check=True)
    regions = ["I:1000-9000", "II", ("II", 30000, None), "X:20001-40000", ("MtDNA", 0, 10), "*", ("I", 5000, 5100)]
    whole = check_like_bam(golden / "normal.bam", cram, ref, regions)
    assert len(whole["pos"]) > 40000
    # The reference found by @SQ UR, as samtools finds it.
    assert np.array_equal(fasthts.BamFile(str(cram)).columns("X")["pos"], fasthts.BamFile(str(golden / "normal.bam")).columns("X")["pos"])


def test_bamfile_reads_a_bam_or_cram_stream_once(crams, golden, tmp_path):
    """A FIFO is read once, as it streams: its columns are the file's, and
    its regions are refused in one line naming it."""
    import os
    import threading

    ref = golden / "ref.fa"
    for source in (golden / "normal.bam", crams["3.0"]):
        want = fasthts.BamFile(str(source), reference=str(ref)).columns()
        fifo = tmp_path / f"{source.name}.fifo"
        os.mkfifo(fifo)
        writer = threading.Thread(target=lambda: fifo.write_bytes(source.read_bytes()))
        writer.start()
        stream = fasthts.BamFile(str(fifo), reference=str(ref))
        got = stream.columns()
        writer.join()
        for k in want:
            assert np.array_equal(got[k], want[k]), (source.name, k)
        with pytest.raises(fasthts.Error, match="a stream is read from its start only"):
            stream.fetch("I")


def test_bamfile_on_multi_reference_embedded_and_unmapped_crams(generated, tmp_path):
    bam, fasta = generated["many"]
    multi = cram_of(bam, tmp_path / "multi.cram", fasta, "seqs_per_slice=300")
    subprocess.run(["samtools", "index", str(multi)], check=True)
    lines = subprocess.run(["gzip", "-dc", str(multi) + ".crai"], check=True, capture_output=True, text=True).stdout.splitlines()
    slices = [tuple(line.split("\t")[3:5]) for line in lines]
    assert len(set(slices)) < len(slices), "no multi-reference slice made: the case tests nothing"
    check_like_bam(bam, multi, fasta, ["chr1:1-5000", "chr2", "*"])
    # Embedded reference: no FASTA needed (the file's UR points to one
    # that is gone); read without a .crai, which is made in memory.
    gone = tmp_path / "gone.fa"
    shutil.copy(fasta, gone)
    shutil.copy(str(fasta) + ".fai", str(gone) + ".fai")
    embedded = cram_of(bam, tmp_path / "embedded.cram", gone, "embed_ref=1", "seqs_per_slice=200")
    gone.unlink()
    check_like_bam(bam, embedded, None, ["chr2:100-3000", "*"])
    assert not fasthts.BamFile(str(embedded)).has_index
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("embedded")) == ["embedded.cram"]
    ubam, ufasta = generated["unmapped"]
    unmapped = cram_of(ubam, tmp_path / "unmapped.cram", ufasta, "seqs_per_slice=100")
    whole = check_like_bam(ubam, unmapped, ufasta, ["*"])
    assert len(whole["pos"]) > 0 and (whole["tid"] == -1).all()


def test_bamfile_cram_errors_name_the_path(golden, tmp_path):
    # A reference that is gone (the file's UR names it): opening reads
    # the header only; reading records says which contig lacks it.
    ref = tmp_path / "ref.fa"
    shutil.copy(golden / "ref.fa", ref)
    cram = cram_of(golden / "normal.bam", tmp_path / "n.cram", ref)
    ref.unlink()
    f = fasthts.BamFile(str(cram))
    for call in (lambda: f.columns(), lambda: f.columns("I:1-1000"), lambda: list(f.fetch())):
        with pytest.raises(fasthts.Error, match="reference sequence of contig I not found") as e:
            call()
        assert str(e.value).startswith(str(cram) + ": ") and "\n" not in str(e.value)
    # A wrong FASTA given: its MD5 does not match.
    other = tmp_path / "other.fa"
    other.write_text(">I\n" + "ACGT" * 15000 + "\n")
    with pytest.raises(fasthts.Error, match="does not match") as e:
        fasthts.BamFile(str(cram), reference=str(other)).columns()
    assert str(e.value).startswith(str(cram) + ": ")
    # An index given that is missing, or not an index.
    with pytest.raises(FileNotFoundError):
        fasthts.BamFile(str(cram), index=str(tmp_path / "none.crai"), reference=str(golden / "ref.fa"))
    (tmp_path / "bad.crai").write_bytes(b"not an index")
    with pytest.raises(fasthts.Error, match="cannot load the CRAM index") as e:
        fasthts.BamFile(str(cram), index=str(tmp_path / "bad.crai"), reference=str(golden / "ref.fa"))
    assert "\n" not in str(e.value)
    # Both reference keywords, naming different files.
    with pytest.raises(ValueError, match="reference"):
        fasthts.BamFile(str(cram), reference=str(golden / "ref.fa"), reference_filename=str(other))
    # An unknown contig, as on a BAM.
    with pytest.raises(ValueError):
        fasthts.BamFile(str(cram), reference=str(golden / "ref.fa")).columns("nosuch")
    # A CRAM not sorted by position has no regions; its whole file reads.
    samtools = require_tool("samtools", "samtools")
    shuffled = tmp_path / "shuffled.sam"
    lines = subprocess.run([samtools, "view", "-h", str(golden / "normal.bam")], check=True, capture_output=True, text=True).stdout.splitlines()
    head = [line for line in lines if line.startswith("@")]
    shuffled.write_text("\n".join(head + lines[len(head):][::-1]) + "\n")
    unsorted = cram_of(shuffled, tmp_path / "unsorted.cram", golden / "ref.fa")
    u = fasthts.BamFile(str(unsorted), reference=str(golden / "ref.fa"))
    assert len(u.columns()["pos"]) == len(lines) - len(head)
    with pytest.raises(fasthts.Error) as e:
        u.columns("I")
    assert str(unsorted) in str(e.value) and "\n" not in str(e.value)


def test_bamfile_cram_pickles_with_its_reference(crams, golden):
    f = fasthts.BamFile(str(crams["3.0"]), reference_filename=str(golden / "ref.fa"))
    g = pickle.loads(pickle.dumps(f))
    assert g.is_cram and g.path == f.path
    same_columns(f.columns("II"), g.columns("II"), "pickled")
    rows = fasthts.scatter(f, None, lambda r, c: len(c["pos"]))
    assert sum(rows) == len(f.columns()["pos"])


def test_snp_pileup_on_crams_with_reference(golden, tmp_path):
    """fasthts.snp_pileup and fasthts.dask.snp_pileup with reference=, on
    CRAMs whose @SQ UR leads nowhere, indexed and not: FACETS' output."""
    ref = tmp_path / "ref.fa"
    shutil.copy(golden / "ref.fa", ref)
    normal = cram_of(golden / "normal.bam", tmp_path / "normal.cram", ref, "version=3.1")
    tumour = cram_of(golden / "tumour.bam", tmp_path / "tumour.cram", ref, "version=2.1")
    subprocess.run(["samtools", "index", str(normal)], check=True)
    ref.unlink()
    want = (golden / "out/default.csv").read_bytes()
    sites, bams = str(golden / "sites.vcf.gz"), [str(normal), str(tumour)]
    with pytest.raises(fasthts.Error, match="reference sequence of contig"):
        fasthts.snp_pileup(sites, str(tmp_path / "none.csv"), bams)
    assert not (tmp_path / "none.csv").exists()
    fasthts.snp_pileup(sites, str(tmp_path / "a.csv"), bams, reference=str(golden / "ref.fa"))
    assert (tmp_path / "a.csv").read_bytes() == want
    distributed = require_module("distributed")
    import fasthts.dask as fdask

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        fdask.snp_pileup(client, sites, str(tmp_path / "d.csv"), bams, tasks=4, reference=golden / "ref.fa")
        assert (tmp_path / "d.csv").read_bytes() == want
    finally:
        client.close()
        cluster.close()
