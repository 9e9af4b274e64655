"""fasthts.BamFile on SAM text (bgzipped, plain, gzip-compressed) against
BamFile on the BAM samtools makes of the same text: generated reads on
several references, with unmapped reads, mates elsewhere and tags of every
type, sorted and unsorted; at 1, 2 and 3 threads; pickling; damaged and
wrong inputs named in one line. Region queries (of a bgzipped SAM through
its index; refused for other SAM): test_bam_samgz_regions.py."""

import gzip
import pickle
import subprocess
import warnings

import numpy as np
import pytest

import fasthts
from conftest import ROOT, require, require_tool, target_dir


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    """{name: (bam, {kind: SAM path})} for generated reads, `sorted` (by
    coordinate, the BAM indexed: its columns are read in parallel through
    the index) and `unsorted` (read in file order), each as bgzipped SAM
    (several BGZF blocks, more than one parse chunk of text), plain SAM and
    gzip-compressed SAM."""
    samtools = require_tool("samtools", "samtools")
    bgzip = require_tool("bgzip", "tabix")
    tg = target_dir() / "release" / "fasthts-testgen"
    require(tg.is_file(), f"{tg} (cargo build --release -p fasthts-testgen)")
    d = tmp_path_factory.mktemp("bamfile-sam")
    out = {}
    for name, extra in (("sorted", ["--refs", "6", "--ref-len", "200000"]), ("unsorted", ["--refs", "3", "--unsorted"])):
        sam = d / f"{name}.sam"
        text = subprocess.run([str(tg), "-q", "--seed", "5", "--reads", "12000", *extra], check=True, capture_output=True).stdout
        sam.write_bytes(text)
        assert len(text) > 5 << 20, "the text should span more than one parse chunk (4 MiB)"
        bam = d / f"{name}.bam"
        subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(bam), str(sam)], check=True)
        if name == "sorted":
            subprocess.run([samtools, "index", str(bam)], check=True)
        bgzipped = d / f"{name}.sam.gz"
        bgzipped.write_bytes(subprocess.run([bgzip, "-c", str(sam)], check=True, capture_output=True).stdout)
        gzipped = d / f"{name}.gzip.sam.gz"
        gzipped.write_bytes(gzip.compress(text))
        out[name] = (bam, {"bgzf": bgzipped, "plain": sam, "gzip": gzipped})
    return out


def same_columns(want, got, what):
    assert want.keys() == got.keys(), what
    for k in want:
        assert want[k].dtype == got[k].dtype, (what, k)
        assert np.array_equal(want[k], got[k]), (what, k)


@pytest.mark.parametrize("name", ["sorted", "unsorted"])
@pytest.mark.parametrize("kind", ["bgzf", "plain", "gzip"])
def test_bamfile_on_sam_equals_the_bam(texts, name, kind):
    bam_path, sams = texts[name]
    bam, sam = fasthts.BamFile(str(bam_path)), fasthts.BamFile(str(sams[kind]))
    assert sam.is_sam and not bam.is_sam and not sam.is_cram
    assert not sam.has_index
    assert sam.path == str(sams[kind])
    assert sam.references == bam.references and len(sam.references) > 2
    assert sam.header_text == bam.header_text
    assert sam.tid(bam.references[1][0]) == 1
    assert sam.region("chr1:1-100") == bam.region("chr1:1-100")
    want = bam.columns(threads=1)
    # Several references, unmapped reads, mates elsewhere: the case tests something.
    assert len(set(want["tid"].tolist())) > 2 and (want["tid"] == -1).any() and (want["mate_tid"] != want["tid"]).any()
    for threads in (1, 2, 3):
        same_columns(want, sam.columns(threads=threads), (kind, threads))
    # Records (the BAM bytes samtools wrote, tags included) in file order.
    assert [r.raw for r in sam.fetch()] == [r.raw for r in bam.fetch()]
    some = [r for r in sam.fetch() if r.tags][:50]
    assert some and all(r.get_tag(r.tags[0][0]) == r.tags[0][1] for r in some)


def test_bamfile_on_sam_pickles(texts):
    bam_path, sams = texts["sorted"]
    want = fasthts.BamFile(str(bam_path)).columns()
    for sam_path in sams.values():
        sam = fasthts.BamFile(str(sam_path))
        copy = pickle.loads(pickle.dumps(sam))
        assert len(pickle.dumps(sam)) < 1000  # the path, not the data
        assert copy.is_sam and copy.path == sam.path and copy.references == sam.references
        same_columns(want, copy.columns(threads=2), str(sam_path))


def one_line_error(path, call, exception=fasthts.Error):
    with pytest.raises(exception) as e:
        call()
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg, msg
    return msg[len(f"{path}: "):]


def test_damaged_and_wrong_sam_inputs_are_one_line_naming_the_path(texts, tmp_path):
    bgzip = require_tool("bgzip", "tabix")
    bam_path, sams = texts["sorted"]
    data = sams["bgzf"].read_bytes()

    def bgzf(text):
        return subprocess.run([bgzip, "-c"], input=text, check=True, capture_output=True).stdout

    # Cut inside the first block: the header cannot be read.
    cut = tmp_path / "cut-early.sam.gz"
    cut.write_bytes(data[:3000])
    assert "truncated" in one_line_error(cut, lambda: fasthts.BamFile(str(cut)))
    # Cut in the middle: opens (the header is whole), reading fails.
    mid = tmp_path / "cut-mid.sam.gz"
    mid.write_bytes(data[: len(data) // 2])
    with pytest.warns(UserWarning, match="EOF marker is absent"):
        sam = fasthts.BamFile(str(mid))
    with pytest.warns(UserWarning, match="EOF marker is absent"):
        assert "truncated" in one_line_error(mid, lambda: sam.columns(threads=2))
    with pytest.warns(UserWarning, match="EOF marker is absent"):
        assert "truncated" in one_line_error(mid, lambda: list(sam.fetch()))
    # Whole blocks without the EOF block: warned about (as htslib does), read.
    no_eof = tmp_path / "no-eof.sam.gz"
    no_eof.write_bytes(data[:-28])
    with pytest.warns(UserWarning, match=f"{no_eof}: EOF marker is absent"):
        sam = fasthts.BamFile(str(no_eof))
    with pytest.warns(UserWarning, match="EOF marker is absent"):
        same_columns(fasthts.BamFile(str(bam_path)).columns(), sam.columns(), "no EOF block")

    # Not SAM inside.
    fq = tmp_path / "reads.fq.gz"
    fq.write_bytes(bgzf(b"@r1\nACGT\n+\nIIII\n@r2\nACGT\n+\nIIII\n"))
    assert one_line_error(fq, lambda: fasthts.BamFile(str(fq))) == "FASTQ sequences, not BAM or SAM alignments"
    junk = tmp_path / "junk.sam.gz"
    junk.write_bytes(bgzf(b"\x00\x01binary junk\xff" * 100))
    assert one_line_error(junk, lambda: fasthts.BamFile(str(junk))) == "BGZF-compressed data that is not BAM or SAM"
    bz = tmp_path / "x.sam.bz2"
    import bz2

    bz.write_bytes(bz2.compress(sams["plain"].read_bytes()[:10000]))
    assert one_line_error(bz, lambda: fasthts.BamFile(str(bz))) == "bzip2-compressed SAM input is not supported"

    # Records naming references without a header: samtools' error, at the first record.
    records = [line for line in sams["plain"].read_bytes().splitlines(keepends=True) if not line.startswith(b"@")]
    headerless = tmp_path / "headerless.sam.gz"
    headerless.write_bytes(bgzf(b"".join(records[:200])))
    sam = fasthts.BamFile(str(headerless))
    assert sam.references == []
    reason = one_line_error(headerless, lambda: sam.columns())
    assert reason.startswith("SAM line 1 (read ") and reason.endswith("no SQ lines present in the header"), reason
    assert one_line_error(headerless, lambda: list(sam.fetch())) == reason

    # A bad line past the first parse chunk: its line number, after all records before it.
    lines = sams["plain"].read_bytes().splitlines(keepends=True)
    at = len(lines) * 3 // 4
    bad = tmp_path / "bad.sam.gz"
    bad.write_bytes(bgzf(b"".join(lines[:at] + [b"broken\tnot-a-flag\tchr1\n"] + lines[at:])))
    for threads in (1, 2):
        reason = one_line_error(bad, lambda: fasthts.BamFile(str(bad)).columns(threads=threads))
        assert reason == f'SAM line {at + 1} (read "broken"): malformed FLAG field'
    assert one_line_error(bad, lambda: list(fasthts.BamFile(str(bad)).fetch())) == reason
    # (AlignmentFile names the path too.)
    assert one_line_error(bad, lambda: list(fasthts.AlignmentFile(str(bad)))) == reason


def test_record_warnings_are_user_warnings_and_records_are_samtools(tmp_path):
    samtools = require_tool("samtools", "samtools")
    text = (b"@SQ\tSN:chr1\tLN:1000\n"
            b"r1\t0\tchr1\t10\t60\t4M\t*\t0\t0\tACGT\tIIII\tNM:i:0\n"
            b"r2\t0\tnosuch\t20\t60\t4M\t*\t0\t0\tACGT\tIIII\n"
            b"r3\t0\tchr1\t30\t60\t4M\t*\t0\t0\tACGT\tIIII\n")
    sam = tmp_path / "w.sam"
    sam.write_bytes(text)
    bam = tmp_path / "w.bam"
    subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(bam), str(sam)], check=True, capture_output=True)
    want = [r.raw for r in fasthts.BamFile(str(bam)).fetch()]
    f = fasthts.BamFile(str(sam))
    line = f'{sam}: SAM line 3 \\(read "r2"\\): unrecognized reference name; treated as unmapped'
    with pytest.warns(UserWarning, match=line):
        cols = f.columns()
    assert cols["tid"].tolist() == [0, -1, 0]
    with pytest.warns(UserWarning, match=line):
        assert [r.raw for r in f.fetch()] == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fasthts.BamFile(str(bam)).columns()


def test_a_sam_with_a_header_and_no_records_is_empty_columns(tmp_path):
    bgzip = require_tool("bgzip", "tabix")
    path = tmp_path / "header-only.sam.gz"
    path.write_bytes(subprocess.run([bgzip, "-c"], input=b"@SQ\tSN:c\tLN:10\n", check=True, capture_output=True).stdout)
    sam = fasthts.BamFile(str(path))
    assert sam.references == [("c", 10)]
    want = fasthts.BamFile(str(ROOT / "tests/data/small.bam")).columns()
    for threads in (1, 2):
        got = sam.columns(threads=threads)
        assert got.keys() == want.keys() and all(len(got[k]) == 0 and got[k].dtype == want[k].dtype for k in want)
    assert list(sam.fetch()) == []
