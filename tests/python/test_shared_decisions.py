"""The CLI and the Python package take the same path on the same input.

Each decision here used to be made by each front end on its own (and the
copies disagreed); it is now one function of the library's command layer
(`fasthts::command`) that both call. Each test runs the CLI and Python on
one input and compares what comes out: result bytes, warnings (the CLI's
stderr after ``warning: ``, Python's ``UserWarning`` text) and errors.
"""

import gzip
import os
import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import pytest

import fasthts

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data"
SMALL = DATA / "small.bam"


def cli_run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True)


def cli_warnings(stderr: bytes):
    """The CLI's warnings, without their `fasthts[ command]: warning: ` prefix."""
    return [line.split("warning: ", 1)[1] for line in stderr.decode().splitlines() if "warning: " in line]


def py_call(fn, *args, **kw):
    """`fn(*args, **kw)` and the texts of the warnings it issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kw)
    return result, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def bai_without_reference(bai: bytes, tid: int) -> bytes:
    """The BAI `bai` with reference `tid` emptied (no bins, no linear
    index): as many references as before, but it no longer describes a
    file that has records there."""
    assert bai[:4] == b"BAI\x01"
    (n_ref,) = struct.unpack_from("<i", bai, 4)
    at, out = 8, bytearray(bai[:8])
    for t in range(n_ref):
        start = at
        (n_bin,) = struct.unpack_from("<i", bai, at)
        at += 4
        for _ in range(n_bin):
            _, n_chunk = struct.unpack_from("<Ii", bai, at)
            at += 8 + 16 * n_chunk
        (n_intv,) = struct.unpack_from("<i", bai, at)
        at += 4 + 8 * n_intv
        out += struct.pack("<ii", 0, 0) if t == tid else bai[start:at]
    return bytes(out + bai[at:])


@pytest.fixture
def bam(tmp_path) -> Path:
    """A copy of small.bam without an index beside it."""
    p = tmp_path / "x.bam"
    shutil.copy(SMALL, p)
    return p


def flagstat_both(cli, bam):
    """flagstat of `bam` by the CLI and by Python: (text, warnings) each."""
    c = cli_run(cli, "flagstat", bam)
    assert c.returncode == 0, c.stderr
    stats, py_warnings = py_call(fasthts.flagstat, str(bam), threads=2)
    return (c.stdout.decode(), cli_warnings(c.stderr)), (stats.text(), py_warnings)


def test_flagstat_index_of_other_references_is_passed_over_silently(cli, bam):
    # The CLI checked an index's reference count against the header; Python
    # did not (and read through it). Now both count sequentially, silently.
    shutil.copy(DATA / "long_ref.bam.csi", str(bam) + ".csi")
    cli_side, py_side = flagstat_both(cli, bam)
    assert cli_side == py_side
    assert cli_side[1] == [] and cli_side[0] == cli_run(cli, "flagstat", SMALL).stdout.decode()


def test_flagstat_index_not_describing_the_file_is_reported_alike(cli, bam):
    Path(str(bam) + ".bai").write_bytes(bai_without_reference((DATA / "small.bam.bai").read_bytes(), 1))
    cli_side, py_side = flagstat_both(cli, bam)
    assert cli_side == py_side
    [warning] = py_side[1]
    assert warning.startswith(f"{bam}: the index does not match the data file (") and warning.endswith("; reading the file sequentially")


def test_flagstat_stale_index_is_reported_alike(cli, bam):
    bai = Path(str(bam) + ".bai")
    shutil.copy(DATA / "small.bam.bai", bai)
    old = bam.stat().st_mtime - 3600
    os.utime(bai, (old, old))
    cli_side, py_side = flagstat_both(cli, bam)
    assert cli_side == py_side
    # Used with htslib's warning, as it describes the file.
    assert py_side[1] == [f"the index file {bai} is older than the data file {bam}"]


def test_truncated_bam_is_reported_alike(cli, bam):
    data = bam.read_bytes()
    bam.write_bytes(data[:-28])  # without the EOF marker block
    cli_side, py_side = flagstat_both(cli, bam)
    assert cli_side == py_side
    assert py_side[1] == [f"{bam}: EOF marker is absent. The input is probably truncated"]


@pytest.mark.parametrize("name", ["x.bgzf", "x.bgz", "x.sam.bgzf", "x.SAM.bgz", "x.bam.gz", "noext"])
def test_sort_output_names_mean_the_same_format(cli, tmp_path, name):
    # The CLI read `.bgz`/`.bgzf` in output names; Python
    # knew only `.sam` and `.sam.gz`.
    a, b = tmp_path / "cli", tmp_path / "py"
    a.mkdir(), b.mkdir()
    c = cli_run(cli, "sort", "--no-PG", "-@", "2", "-o", a / name, SMALL)
    assert c.returncode == 0, c.stderr
    fasthts.sort(str(SMALL), str(b / name), no_pg=True, threads=2)
    assert (a / name).read_bytes() == (b / name).read_bytes()
    text = gzip.decompress((b / name).read_bytes())
    assert text[:4] == (b"@HD\t" if ".sam" in name.lower() else b"BAM\x01")


def test_sort_writes_cram_alike(cli, tmp_path, monkeypatch):
    # CRAM output (htslib's, as samtools writes it): the same bytes from
    # the CLI and from Python for the same output name (which htslib puts
    # in the file), one thread; no reference, so htslib embeds it.
    monkeypatch.setenv("REF_PATH", "/nonexistent/%s")
    monkeypatch.setenv("REF_CACHE", "/nonexistent/%s")
    a, b = tmp_path / "cli", tmp_path / "py"
    a.mkdir(), b.mkdir()
    c = subprocess.run([str(cli), "sort", "--no-PG", "-@", "1", "-o", "x.cram", str(SMALL)], capture_output=True, cwd=a)
    assert c.returncode == 0, c.stderr
    monkeypatch.chdir(b)
    fasthts.sort(str(SMALL), "x.cram", no_pg=True, threads=1)
    assert (a / "x.cram").read_bytes() == (b / "x.cram").read_bytes()
    assert (b / "x.cram").read_bytes()[:4] == b"CRAM"


def test_sort_names_the_index_after_idx_alike(cli, tmp_path):
    # `OUT##idx##INDEX`: the CLI split it; Python wrote a file named so.
    a, b = tmp_path / "cli", tmp_path / "py"
    a.mkdir(), b.mkdir()
    for d, run in [(a, lambda o: cli_run(cli, "sort", "--no-PG", "--write-index", "-o", o, SMALL)), (b, lambda o: fasthts.sort(str(SMALL), o, no_pg=True, write_index=True))]:
        run(f"{d / 'x.bam'}##idx##{d / 'x.bai'}")
        run(str(d / "y.bam"))
    for name in ["x.bam", "x.bai", "y.bam", "y.bam.csi"]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert sorted(p.name for p in b.iterdir()) == ["x.bai", "x.bam", "y.bam", "y.bam.csi"]
    assert (b / "x.bai").read_bytes()[:4] == b"BAI\x01"


def test_sort_write_index_by_name_is_ignored_with_the_same_warning(cli, tmp_path):
    c = cli_run(cli, "sort", "--no-PG", "-n", "--write-index", "-o", tmp_path / "a.bam", SMALL)
    assert c.returncode == 0, c.stderr
    _, py_warnings = py_call(fasthts.sort, str(SMALL), str(tmp_path / "b.bam"), by_name=True, no_pg=True, write_index=True)
    assert cli_warnings(c.stderr) == py_warnings == ["ignoring --write-index as it only works for position sorted files"]
    assert (tmp_path / "a.bam").read_bytes() == (tmp_path / "b.bam").read_bytes()
    assert not list(tmp_path.glob("*.csi"))


@pytest.mark.parametrize("memory", ["512K", "2X", "1.5G"])
def test_sort_memory_sizes_are_read_alike(cli, tmp_path, memory):
    # Parsed twice before, with other messages; Python had no minimum.
    c = cli_run(cli, "sort", "-m", memory, "-o", tmp_path / "a.bam", SMALL)
    assert c.returncode != 0
    with pytest.raises(ValueError) as e:
        fasthts.sort(str(SMALL), str(tmp_path / "b.bam"), memory=memory)
    assert str(e.value) in c.stderr.decode()
    assert not list(tmp_path.iterdir())


def test_sort_memory_sizes_accepted_alike(cli, tmp_path):
    c = cli_run(cli, "sort", "--no-PG", "-@", "2", "-m", "1m", "-o", tmp_path / "a.bam", SMALL)
    assert c.returncode == 0, c.stderr
    fasthts.sort(str(SMALL), str(tmp_path / "b.bam"), memory="1m", threads=2, no_pg=True)
    assert (tmp_path / "a.bam").read_bytes() == (tmp_path / "b.bam").read_bytes()


@pytest.mark.parametrize("args,kw", [([], {}), (["-c"], {"csi": True}), (["-m", "12"], {"min_shift": 12}), (["-m", "0"], {"min_shift": 0})])
def test_index_names_and_formats_alike(cli, tmp_path, args, kw):
    a, b = tmp_path / "a.bam", tmp_path / "b.bam"
    shutil.copy(SMALL, a), shutil.copy(SMALL, b)
    c = cli_run(cli, "index", *args, a)
    assert c.returncode == 0, c.stderr
    written = Path(fasthts.index(str(b), **kw))
    ext = written.name[len("b.bam") :]
    assert ext == (".csi" if kw.get("csi") or kw.get("min_shift") else ".bai")
    assert Path(str(a) + ext).read_bytes() == written.read_bytes()


def test_snp_pileup_refuses_bad_bams_alike(cli, tmp_path):
    # Python did not check an index's references, did not shorten the
    # open error, and did not say when a BAM is unsorted.
    vcf = tmp_path / "sites.vcf"
    vcf.write_text("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nchr1\t1000\t.\tA\tG\t.\t.\t.\n")
    foreign = tmp_path / "foreign.bam"
    shutil.copy(SMALL, foreign)
    shutil.copy(DATA / "long_ref.bam.csi", str(foreign) + ".csi")
    unsorted = tmp_path / "unsorted.bam"
    shutil.copy(DATA / "unsorted.bam", unsorted)
    for bad in [foreign, unsorted, tmp_path / "missing.bam"]:
        c = cli_run(cli, "snp-pileup", vcf, tmp_path / "a.csv", bad)
        assert c.returncode != 0
        # An OSError (FileNotFoundError) for the missing one, with the CLI's text.
        with pytest.raises((fasthts.Error, OSError)) as e:
            fasthts.snp_pileup(str(vcf), str(tmp_path / "b.csv"), [str(bad)])
        message = e.value.strerror if isinstance(e.value, OSError) else str(e.value)
        assert c.stderr.decode().splitlines()[-1] == f"fasthts snp-pileup: {message}", bad
    assert not (tmp_path / "a.csv").exists() and not (tmp_path / "b.csv").exists()


def test_region_strings_are_read_by_the_library():
    # One parser behind every region string, the CLI's
    # (fasthts::region::Region::parse_query, samtools' reading: a start of
    # 0 is taken as 1), with the CLI's words for a text it cannot read.
    b = fasthts.BamFile(str(SMALL))
    assert b.region("chr2:1,001-2,000") == fasthts.Region(1, 1000, 2000)
    assert b.region("chrM:5") == fasthts.Region(4, 4)
    assert b.region("*") == fasthts.Region(-1)
    assert b.region("chr1:0-5") == fasthts.Region(0, 0, 5)
    with pytest.raises(ValueError, match=r'^region "chr1:5-1" specifies an invalid region or unknown reference$'):
        b.region("chr1:5-1")
    with pytest.raises(ValueError, match=r"^region \"\.\" is the whole file"):
        b.region(".")
    with pytest.raises(ValueError, match='^unknown reference "chr9"$'):
        b.region(("chr9", None, None))
