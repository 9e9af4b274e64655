"""CRAM through fasthts.AlignmentFile (region queries on the .crai) and
fasthts.dask, against pysam and the single-machine results: CRAM 3.0 and
3.1 of the golden BAMs in small containers (regions span several), the
reference given or found by @SQ UR, a CRAM without .crai."""

import os
import shutil
import subprocess

import pytest

import fasthts
from conftest import require_module, require_tool

pysam = require_module("pysam")


@pytest.fixture(scope="module", autouse=True)
def no_reference_lookup():
    """htslib looks for references only where the file or the call says."""
    saved = {k: os.environ.get(k) for k in ("REF_PATH", "REF_CACHE")}
    os.environ["REF_PATH"] = os.environ["REF_CACHE"] = "/nonexistent/%s"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


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


def test_bamfile_refuses_cram_in_one_line(crams):
    """BamFile is the memory-mapped BAM reader (virtual offsets, BGZF
    regions): a CRAM is refused, pointing at AlignmentFile."""
    path = str(crams["3.0"])
    with pytest.raises(fasthts.Error, match="AlignmentFile reads CRAM") as e:
        fasthts.BamFile(path)
    assert str(e.value).startswith(path + ": ") and "\n" not in str(e.value)
