"""fasthts.AlignmentFile opened for writing against pysam: the same
read-filter-write script run with each library writes the same bytes
(BAM at the default level, wb0/wbu, SAM), with the header from a
template, a dict or reference names; a failed write leaves no output;
bad arguments raise pysam's exception types."""

import subprocess
import sys
from pathlib import Path

import pytest

import fasthts
from conftest import require, require_module

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
pysam = require_module("pysam")

BAMS = [
    DATA / "small.bam",
    DATA / "header_only.bam",
    DATA / "unmapped_only.bam",
    DATA / "long_cigar.bam",
    DATA / "huge_record.bam",
    DATA / "long_ref.bam",
    DATA / "unsorted.bam",
    DATA / "refs_without_reads.bam",
    ROOT / "examples/example.bam",
]

MODES = ["wb", "wb0", "wbu", "w", "wh"]


def have_pysams_compressor() -> bool:
    """pysam's wheels compress with the system zlib (htslib without
    libdeflate): BAM bytes can be compared only where fasthts finds it too."""
    return fasthts._fasthts._have_system_zlib()


def copy_filtered(lib, src, dst, mode, **header_args):
    """A read-filter-write script: records with MAPQ >= 20 or unmapped;
    returns what write() returned, summed."""
    written = 0
    with lib.AlignmentFile(str(src), "rb", check_sq=False) as f:
        if not header_args:
            header_args = {"template": f}
        with lib.AlignmentFile(str(dst), mode, **header_args) as out:
            for r in f.fetch(until_eof=True):
                if r.is_unmapped or r.mapping_quality >= 20:
                    written += out.write(r)
    return written


def both(tmp_path, src, mode, header_args=lambda lib, f: {}):
    """The script run with pysam and with fasthts: (pysam's bytes, fasthts')."""
    outs = []
    for lib in (pysam, fasthts):
        dst = tmp_path / f"{lib.__name__}.{mode}.out"
        with lib.AlignmentFile(str(src), "rb", check_sq=False) as f:
            args = header_args(lib, f)
        n = copy_filtered(lib, src, dst, mode, **args)
        outs.append((dst.read_bytes(), n))
    (ref, ref_n), (got, got_n) = outs
    assert got_n == ref_n, "write() returned other byte counts"
    return ref, got


def assert_same_file(ref: bytes, got: bytes, mode: str):
    if mode.startswith("wb") and mode != "wbu" and mode != "wb0" and not have_pysams_compressor():
        require(False, "the system zlib (libz.so.1) pysam compresses with")
    if ref != got:
        # Say where they first differ, and whether the content is equal.
        at = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
        pytest.fail(f"outputs differ at byte {at} (pysam {len(ref)} bytes, fasthts {len(got)})")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", BAMS, ids=lambda p: p.name)
def test_template_copy_is_pysams(tmp_path, src, mode):
    ref, got = both(tmp_path, src, mode)
    assert_same_file(ref, got, mode)


@pytest.mark.parametrize("mode", ["wb", "wb0", "w"])
def test_generated_bam(tmp_path, gen_bam, mode):
    ref, got = both(tmp_path, gen_bam, mode)
    assert_same_file(ref, got, mode)


@pytest.mark.parametrize("mode", ["wb", "wh"])
def test_header_from_dict(tmp_path, mode):
    def header(lib, f):
        d = {"HD": {"VN": "1.6", "SO": "unsorted"}, "SQ": [{"SN": n, "LN": l} for n, l in zip(f.references, f.lengths)]}
        d["RG"] = [{"ID": "rg1", "SM": "sample 1", "PL": "ILLUMINA"}]
        d["CO"] = ["written from a dict"]
        return {"header": d}

    ref, got = both(tmp_path, DATA / "small.bam", mode, header)
    assert_same_file(ref, got, mode)


@pytest.mark.parametrize("mode", ["wb", "w"])
@pytest.mark.parametrize("add_sq_text", [True, False])
def test_header_from_reference_names(tmp_path, mode, add_sq_text):
    def header(lib, f):
        return {"reference_names": list(f.references), "reference_lengths": list(f.lengths), "add_sq_text": add_sq_text}

    ref, got = both(tmp_path, DATA / "small.bam", mode, header)
    assert_same_file(ref, got, mode)


@pytest.mark.parametrize("mode", ["wb", "w"])
@pytest.mark.parametrize("text", ["@CO\tonly a comment\n", "@HD\tVN:1.6\n@SQ\tSN:x\tLN:5\n"])
def test_header_from_reference_names_and_text(tmp_path, mode, text):
    def header(lib, f):
        return {"reference_names": list(f.references), "reference_lengths": list(f.lengths), "text": text}

    ref, got = both(tmp_path, DATA / "small.bam", mode, header)
    assert_same_file(ref, got, mode)


@pytest.mark.parametrize("mode", ["wb", "w"])
def test_header_from_text(tmp_path, mode):
    def header(lib, f):
        return {"text": str(f.header)}

    ref, got = both(tmp_path, DATA / "small.bam", mode, header)
    assert_same_file(ref, got, mode)


def test_header_from_alignment_header(tmp_path):
    def header(lib, f):
        return {"header": f.header}

    ref, got = both(tmp_path, DATA / "small.bam", "wb", header)
    assert_same_file(ref, got, "wb")


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_threads_do_not_change_the_bytes(tmp_path, threads):
    src = ROOT / "examples/example.bam"
    one = tmp_path / "one.bam"
    copy_filtered(fasthts, src, one, "wb")
    many = tmp_path / "many.bam"
    with fasthts.AlignmentFile(str(src)) as f, fasthts.AlignmentFile(str(many), "wb", template=f, threads=threads) as out:
        for r in f.fetch(until_eof=True):
            if r.is_unmapped or r.mapping_quality >= 20:
                out.write(r)
    assert many.read_bytes() == one.read_bytes()


@pytest.mark.parametrize("level", range(1, 10))
def test_other_levels_read_back(tmp_path, level):
    # pysam refuses "wb1".."wb9"; fasthts writes htslib's levels: same records.
    src = DATA / "small.bam"
    dst = tmp_path / f"l{level}.bam"
    copy_filtered(fasthts, src, dst, f"wb{level}")
    with fasthts.AlignmentFile(str(src)) as f, fasthts.AlignmentFile(str(dst)) as g:
        want = [r.to_string() for r in f.fetch(until_eof=True) if r.is_unmapped or r.mapping_quality >= 20]
        assert [r.to_string() for r in g.fetch(until_eof=True)] == want


def test_a_file_appears_only_when_closed(tmp_path):
    src = DATA / "small.bam"
    dst = tmp_path / "out.bam"
    with fasthts.AlignmentFile(str(src)) as f:
        out = fasthts.AlignmentFile(str(dst), "wb", template=f)
        out.write(next(f.fetch(until_eof=True)))
        assert not dst.exists()
        out.close()
    assert dst.exists()


def test_a_failed_block_leaves_no_output(tmp_path):
    src = DATA / "small.bam"
    dst = tmp_path / "out.bam"
    with pytest.raises(RuntimeError, match="stop"):
        with fasthts.AlignmentFile(str(src)) as f, fasthts.AlignmentFile(str(dst), "wb", template=f) as out:
            for i, r in enumerate(f.fetch(until_eof=True)):
                out.write(r)
                if i == 100:
                    raise RuntimeError("stop")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_path_names_it(tmp_path):
    with fasthts.AlignmentFile(str(DATA / "small.bam")) as f:
        for lib in (pysam, fasthts):
            with pytest.raises(FileNotFoundError) as e:
                lib.AlignmentFile(str(tmp_path / "no/such/dir/x.bam"), "wb", template=f if lib is fasthts else pysam.AlignmentFile(str(DATA / "small.bam")))
        assert str(tmp_path / "no/such/dir/x.bam") in str(e.value)


@pytest.mark.parametrize("mode", ["wb", "w"])
def test_write_to_stdout(tmp_path, mode):
    script = (
        "import sys\n"
        "lib = __import__(sys.argv[1])\n"
        "with lib.AlignmentFile(sys.argv[2]) as f, lib.AlignmentFile('-', sys.argv[3], template=f) as out:\n"
        "    for r in f.fetch(until_eof=True):\n"
        "        out.write(r)\n"
    )
    src = str(DATA / "small.bam")
    got = [subprocess.run([sys.executable, "-c", script, lib, src, mode], check=True, capture_output=True).stdout for lib in ("pysam", "fasthts")]
    assert_same_file(got[0], got[1], mode)


def test_bad_arguments_raise_pysams_types(tmp_path):
    with fasthts.AlignmentFile(str(DATA / "small.bam")) as f, pysam.AlignmentFile(str(DATA / "small.bam")) as p:
        for lib, t in ((pysam, p), (fasthts, f)):
            with pytest.raises(ValueError, match="either supply options"):
                lib.AlignmentFile(str(tmp_path / "a.bam"), "wb")
            with pytest.raises(AssertionError, match="invalid file opening mode"):
                lib.AlignmentFile(str(tmp_path / "a.bam"), "wz", template=t)
            with pytest.raises(ValueError):
                lib.AlignmentFile(str(tmp_path / "a.bam"), "wb", reference_names=["a", "b"], reference_lengths=[1])
    assert not (tmp_path / "a.bam").exists()


def test_write_after_close_raises(tmp_path):
    with fasthts.AlignmentFile(str(DATA / "small.bam")) as f:
        out = fasthts.AlignmentFile(str(tmp_path / "a.bam"), "wb", template=f)
        out.close()
        with pytest.raises(ValueError, match="closed"):
            out.write(next(f.fetch(until_eof=True)))


@pytest.mark.usefixtures("no_reference_lookup")
@pytest.mark.parametrize("threads", [1, 2])
def test_cram_has_pysams_records_and_header(tmp_path, golden, threads):
    # pysam's and fasthts' htslib builds encode CRAM differently: the
    # records and header are compared, read back by pysam.
    ref = str(golden / "ref.fa")
    written = []
    for lib in (pysam, fasthts):
        dst = str(tmp_path / f"{lib.__name__}.cram")
        with lib.AlignmentFile(str(golden / "normal.bam")) as f:
            with lib.AlignmentFile(dst, "wc", template=f, reference_filename=ref, threads=threads) as out:
                n = sum(out.write(r) for r in f.fetch(until_eof=True) if r.mapping_quality >= 20)
        with pysam.AlignmentFile(dst, reference_filename=ref) as back:
            written.append((n, back.header.to_dict(), [r.to_string() for r in back.fetch(until_eof=True)], open(dst, "rb").read(6)))
    assert written[1] == written[0]
    assert len(written[0][2]) > 1000


@pytest.mark.usefixtures("no_reference_lookup")
def test_cram_with_a_missing_reference_raises_valueerror(tmp_path, golden):
    missing = str(tmp_path / "missing.fa")
    with fasthts.AlignmentFile(str(golden / "normal.bam")) as f, pysam.AlignmentFile(str(golden / "normal.bam")) as p:
        for lib, t in ((pysam, p), (fasthts, f)):
            dst = tmp_path / f"{lib.__name__}.cram"
            with pytest.raises(ValueError) as e:
                lib.AlignmentFile(str(dst), "wc", template=t, reference_filename=missing)
        assert missing in str(e.value)
    # pysam leaves a file begun; fasthts nothing.
    assert not (tmp_path / "fasthts.cram").exists()


def tag_and_filter(lib, src, dst, mode):
    """A tag-or-filter script: edits the commonly edited fields, then writes."""
    with lib.AlignmentFile(str(src), "rb", check_sq=False) as f, lib.AlignmentFile(str(dst), mode, template=f) as out:
        for i, r in enumerate(f.fetch(until_eof=True)):
            if r.mapping_quality < 5 and not r.is_unmapped:
                continue
            r.flag = r.flag | 0x400 if i % 7 == 0 else r.flag
            r.mapping_quality = min(r.mapping_quality + 1, 255)
            if i % 5 == 0:
                r.query_name = f"renamed{i}" + "x" * (i % 4)
            r.set_tag("XA", i % 3)
            r.set_tag("XB", -i)
            r.set_tag("XC", i * 1000)
            r.set_tag("XF", i / 3)
            r.set_tag("XZ", f"read {i}")
            r.set_tag("XI", i, "i")
            r.set_tag("XH", "0AFF", "H")
            r.set_tag("XD", "A", "A")
            r.set_tag("NM", None)
            if i % 2:
                r.set_tag("RG", "other", replace=False)
            out.write(r)


@pytest.mark.parametrize("mode", ["wb", "w"])
@pytest.mark.parametrize("src", [DATA / "small.bam", DATA / "long_cigar.bam", ROOT / "examples/example.bam"], ids=lambda p: p.name)
def test_edited_records_are_written_as_pysam_writes_them(tmp_path, src, mode):
    out = []
    for lib in (pysam, fasthts):
        dst = tmp_path / f"{lib.__name__}.out"
        tag_and_filter(lib, src, dst, mode)
        out.append(dst.read_bytes())
    assert_same_file(out[0], out[1], mode)


def test_bad_edits_raise_pysams_types():
    for lib in (pysam, fasthts):
        with lib.AlignmentFile(str(DATA / "small.bam")) as f:
            r = next(f.fetch(until_eof=True))
            name = r.query_name
            with pytest.raises(OverflowError):
                r.flag = -1
            with pytest.raises(OverflowError):
                r.mapping_quality = 256
            with pytest.raises(ValueError, match="query length out of range"):
                r.query_name = "a" * 255
            with pytest.raises(ValueError, match="Invalid tag"):
                r.set_tag("XXX", 1)
            r.query_name = None
            assert r.query_name == name


def test_a_pysam_template_gives_its_header(tmp_path):
    with pysam.AlignmentFile(str(DATA / "small.bam")) as p, fasthts.AlignmentFile(str(DATA / "small.bam")) as f:
        ours = tmp_path / "ours.sam"
        with fasthts.AlignmentFile(str(ours), "wh", template=p) as out:
            assert out.is_sam and not out.is_bam and out.is_write
        theirs = tmp_path / "theirs.sam"
        with pysam.AlignmentFile(str(theirs), "wh", template=p):
            pass
        assert ours.read_bytes() == theirs.read_bytes()
