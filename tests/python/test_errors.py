"""Errors as Python users expect them: the missing EOF block, OSError
subclasses naming the path, indexes given that do not exist or do not
match, TypeError for wrong argument types, path types, thread counts, and
header text."""

import os
import shutil
import subprocess
import time
import warnings
from pathlib import Path

import pytest

import fasthts
import fasthts.dask
from conftest import require, require_module, require_tool

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"
BADEOF = Path("/usr/share/samtools/test/quickcheck/1.quickcheck.badeof.bam")
EOF_MESSAGE = "no BGZF EOF marker; file may be truncated"


@pytest.fixture
def cut_bam(tmp_path):
    """small.bam without its EOF block (cut at a block boundary: every
    record is still there, nothing says the file is short but the EOF block)."""
    p = tmp_path / "cut.bam"
    p.write_bytes(SMALL.read_bytes()[:-28])
    return p


def truncated_inputs(cut_bam):
    require(BADEOF.is_file(), "samtools' test files (Debian package samtools-test)")
    return [cut_bam, BADEOF]


def test_missing_eof_block_raises_or_warns_in_every_call(cut_bam):
    pysam = require_module("pysam")
    for path in truncated_inputs(cut_bam):
        with pytest.raises(OSError, match=EOF_MESSAGE) as e:
            fasthts.AlignmentFile(str(path))
        assert str(path) in str(e.value)
        with pytest.raises(OSError, match=EOF_MESSAGE):
            pysam.AlignmentFile(str(path))
        with pytest.warns(UserWarning, match=EOF_MESSAGE):
            f = fasthts.AlignmentFile(str(path), ignore_truncation=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = pysam.AlignmentFile(str(path), ignore_truncation=True)
            assert [r.to_string() for r in f.fetch(until_eof=True)] == [r.to_string() for r in p.fetch(until_eof=True)]
        # The native API warns as the CLI does, in every call.
        cli_text = f"{path}: EOF marker is absent. The input is probably truncated"
        calls = [
            lambda: fasthts.BamFile(str(path)),
            lambda: fasthts.BamFile(str(path)).fetch(),
            lambda: fasthts.BamFile(str(path)).columns(),
            lambda: fasthts.flagstat(str(path)),
        ]
        for call in calls:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                call()
            assert any(str(x.message) == cli_text for x in w), [str(x.message) for x in w]


def test_os_errors_name_the_path(tmp_path, golden, fastq):
    missing = tmp_path / "missing"
    cases = [
        (lambda: fasthts.snp_pileup(str(missing) + ".vcf", str(tmp_path / "o.csv"), [str(golden / "normal.bam")]), FileNotFoundError, "missing.vcf"),
        (lambda: fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(tmp_path / "no/dir/o.csv"), [str(golden / "normal.bam")]), FileNotFoundError, "no/dir/o.csv"),
        (lambda: fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(tmp_path / "o.csv"), [str(missing) + ".bam"]), FileNotFoundError, "missing.bam"),
        (lambda: fasthts.Countgraph.load(str(missing) + ".ct"), FileNotFoundError, "missing.ct"),
        (lambda: fasthts.Countgraph(21, 1000, 2).consume_seqfile(str(missing) + ".fq"), FileNotFoundError, "missing.fq"),
        (lambda: fasthts.Countgraph(21, 1000, 2).consume_seqfile(str(tmp_path)), IsADirectoryError, str(tmp_path)),
        (lambda: fasthts.Countgraph(21, 1000, 2).abundance_distribution(str(missing) + ".fq"), FileNotFoundError, "missing.fq"),
        (lambda: fasthts.seqfile_split(str(missing) + ".fq", 2), FileNotFoundError, "missing.fq"),
        (lambda: fasthts.BamFile(str(missing) + ".bam"), FileNotFoundError, "missing.bam"),
        (lambda: fasthts.BamFile(str(tmp_path)), IsADirectoryError, str(tmp_path)),
        (lambda: fasthts.AlignmentFile(str(missing) + ".bam"), FileNotFoundError, "missing.bam"),
        (lambda: fasthts.flagstat(str(missing) + ".bam"), FileNotFoundError, "missing.bam"),
        (lambda: fasthts.sort(str(missing) + ".bam", str(tmp_path / "o.bam")), FileNotFoundError, "missing.bam"),
        (lambda: fasthts.index(str(missing) + ".bam"), FileNotFoundError, "missing.bam"),
        # An index given that does not exist fails at open.
        (lambda: fasthts.BamFile(str(SMALL), index=str(missing) + ".bai"), FileNotFoundError, "missing.bai"),
        (lambda: fasthts.AlignmentFile(str(SMALL), index_filename=str(missing) + ".bai"), FileNotFoundError, "missing.bai"),
    ]
    for call, kind, named in cases:
        with pytest.raises(kind) as e:
            call()
        assert named in str(e.value), (kind, str(e.value))


def test_a_foreign_index_is_named_as_the_problem(tmp_path):
    samtools = require_tool("samtools", "samtools")
    sub = tmp_path / "sub.bam"
    subprocess.run([samtools, "view", "-b", "-s", "0.3", "-o", str(sub), str(SMALL)], check=True)
    foreign = tmp_path / "foreign.bai"
    shutil.copy(str(SMALL) + ".bai", foreign)  # small.bam's index: same references, other offsets
    for open_it in [lambda: fasthts.BamFile(str(sub), index=str(foreign)), lambda: fasthts.AlignmentFile(str(sub), index_filename=str(foreign))]:
        with pytest.raises(fasthts.Error, match="the index does not match the data file") as e:
            open_it()
        assert str(foreign) in str(e.value)
    # Beside the BAM (newer than it, so not stale): named as well.
    shutil.copy(foreign, str(sub) + ".bai")
    with pytest.raises(fasthts.Error, match="the index does not match the data file"):
        list(fasthts.BamFile(str(sub)).fetch("chr2"))


def test_wrong_argument_types_raise_type_error(golden, fastq):
    normal = str(golden / "normal.bam")
    with pytest.raises(TypeError, match="bams must be a list of paths"):
        fasthts.dask.snp_pileup(None, str(golden / "sites.vcf.gz"), "out.csv", normal)
    with pytest.raises(TypeError, match="bams"):
        fasthts.snp_pileup(str(golden / "sites.vcf.gz"), "out.csv", normal)
    with pytest.raises(TypeError, match="paths must be a list of paths"):
        fasthts.dask.count_kmers(None, str(fastq), 21, 1000, 2)
    with pytest.raises(TypeError, match=r"paths\[1\]"):
        fasthts.dask.count_kmers(None, [str(fastq), 5], 21, 1000, 2)
    with pytest.raises(TypeError):
        fasthts.BamFile(5)
    # (An int is a file descriptor, as in pysam: test_alignment_file.)
    with pytest.raises(TypeError, match="filepath_or_object"):
        fasthts.AlignmentFile(5.5)
    with pytest.raises(TypeError):
        fasthts.flagstat(["a.bam"])


def test_path_like_and_bytes_paths_everywhere(tmp_path, fastq):
    for p in [SMALL, os.fsencode(SMALL), str(SMALL)]:
        assert fasthts.BamFile(p).references[0][0] == "chr1"
        assert fasthts.AlignmentFile(p).references[0] == "chr1"
        assert fasthts.flagstat(p) == fasthts.flagstat(str(SMALL))
    g = fasthts.Countgraph(21, 100_000, 2)
    assert g.consume_seqfile(fastq)[0] == 6000
    assert fasthts.seqfile_split(os.fsencode(fastq), 2)
    g.save(tmp_path / "g.ct")
    assert fasthts.Countgraph.load(os.fsencode(tmp_path / "g.ct")).to_bytes() == g.to_bytes()
    out = tmp_path / "s.bam"
    fasthts.sort(SMALL, out)
    assert fasthts.index(os.fsencode(out)) == str(out) + ".bai"
    assert fasthts.BamFile(out, index=Path(str(out) + ".bai")).has_index


def test_thread_counts_follow_the_cli_rule(fastq):
    for call in [
        lambda t: fasthts.flagstat(str(SMALL), threads=t),
        lambda t: fasthts.BamFile(str(SMALL)).columns(threads=t),
        lambda t: fasthts.Countgraph(21, 1000, 2).consume_seqfile(fastq, threads=t),
    ]:
        with pytest.raises(ValueError, match="threads must be 0 or more"):
            call(-1)
        began = time.monotonic()
        call(100_000)  # capped as the CLI caps -@ (a few threads per core)
        call(0)
        assert time.monotonic() - began < 20


def test_header_text_adds_sq_lines_when_the_text_has_none(tmp_path):
    pysam = require_module("pysam")
    samtools = require_tool("samtools", "samtools")
    p = tmp_path / "nosq.bam"
    with pysam.AlignmentFile(str(p), "wb", reference_names=["c1", "c2"], reference_lengths=[100, 200], text="@HD\tVN:1.6\n", add_sq_text=False) as out:
        a = pysam.AlignedSegment(out.header)
        a.query_name, a.reference_id, a.reference_start, a.cigarstring, a.query_sequence = "r", 0, 5, "4M", "ACGT"
        out.write(a)
    expected = subprocess.run([samtools, "view", "-H", "--no-PG", str(p)], capture_output=True, text=True, check=True).stdout
    assert fasthts.BamFile(str(p)).header_text == expected
    assert "@SQ\tSN:c2\tLN:200" in expected
    with pysam.AlignmentFile(str(p)) as theirs:
        mine = fasthts.AlignmentFile(str(p))
        assert mine.header.to_dict() == theirs.header.to_dict()
        assert str(mine.header) == str(theirs.header)
