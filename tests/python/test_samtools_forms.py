"""pysam's samtools functions (``pysam.view("-c", bam)``, ``pysam.sort("-o",
out, bam)``, ...) on fasthts: the same arguments give the same results
(text, lists, files, exceptions) as pysam's, run inside this process."""

import subprocess
import sys
from pathlib import Path

import pytest

import fasthts
from conftest import require_module, require_tool

ROOT = Path(__file__).resolve().parents[2]
SMALL = str(ROOT / "tests/data/small.bam")
REF = str(ROOT / "tests/data/golden/snp-pileup/ref.fa")

pysam = require_module("pysam")


@pytest.mark.parametrize(
    "name, args, kwargs",
    [
        ("flagstat", ("-@2", SMALL), {}),
        ("flagstat", (SMALL,), {"split_lines": True}),
        ("idxstats", (SMALL,), {}),
        ("idxstats", (SMALL,), {"split_lines": True}),
        ("view", ("-c", SMALL), {}),
        ("view", ("-c", "-q", "30", SMALL, "chr1", "chr2:1-50000"), {}),
        ("view", (SMALL, "chr1:1-20000"), {}),
        ("view", (SMALL, "chr1:1-20000"), {"split_lines": True}),
        ("view", ("-H", "--no-PG", SMALL), {}),
        ("depth", ("-a", "-r", "chr1:1000-1100", SMALL), {}),
        ("depth", ("-r", "chr1:1000-1003", SMALL), {}),
        ("coverage", (SMALL,), {}),
        ("stats", ("-@2", SMALL), {}),
        ("faidx", (REF, "I:1-100", "II:5-60"), {}),
        ("quickcheck", (SMALL,), {}),
        ("fastq", ("-n", SMALL), {}),
    ],
)
def test_the_same_call_gives_pysams_result(name, args, kwargs):
    """The result has pysam's type (text, or a list of lines) and samtools
    1.16's content (pysam bundles a later samtools, whose stats and BAI
    differ in places; and its faidx and fastq print instead of returning)."""
    got = getattr(fasthts, name)(*args, **kwargs)
    assert got == getattr(fasthts.samtools, name)(*args, **kwargs)
    if name not in ("faidx", "fastq"):
        assert type(got) is type(getattr(pysam, name)(*args, **kwargs))
    samtools = require_tool("samtools", "samtools")
    want = subprocess.run([samtools, name, *args], capture_output=True, text=True, check=True).stdout
    if kwargs.get("split_lines"):
        want = want.splitlines()
    if name == "stats":
        # The first line names the program (samtools stats' own rule).
        got, want = got.split("\n", 1)[1], want.split("\n", 1)[1]
    assert got == want


def test_sort_and_index_write_what_pysams_write(tmp_path):
    mine, theirs = tmp_path / "mine.bam", tmp_path / "theirs.bam"
    assert fasthts.sort("-o", str(mine), "--no-PG", SMALL) == pysam.sort("-o", str(theirs), "--no-PG", SMALL) == ""
    assert fasthts.index(str(mine), str(mine) + ".csi", "-c") == ""
    assert fasthts.samtools.index(str(mine)) == pysam.index(str(theirs)) == ""
    copy = tmp_path / "copy.bam"
    copy.write_bytes(mine.read_bytes())
    subprocess.run([require_tool("samtools", "samtools"), "index", str(copy)], check=True)
    assert (tmp_path / "mine.bam.bai").read_bytes() == (tmp_path / "copy.bam.bai").read_bytes()
    assert pysam.view("--no-PG", str(mine)) == pysam.view("--no-PG", str(theirs))
    # Names both libraries use with nothing but paths are fasthts' own.
    assert isinstance(fasthts.flagstat(SMALL), fasthts.FlagStat)
    assert str(fasthts.flagstat(SMALL)) == pysam.flagstat(SMALL)
    assert fasthts.stats(SMALL).text == fasthts.samtools.stats(SMALL)


def test_binary_output_comes_back_as_bytes(tmp_path):
    got = fasthts.view("-b", "--no-PG", SMALL, "chr1")
    assert isinstance(got, bytes) and got[:4] == b"\x1f\x8b\x08\x04"
    out = tmp_path / "got.bam"
    out.write_bytes(got)
    assert pysam.view("--no-PG", str(out)) == pysam.view("--no-PG", SMALL, "chr1")


def test_stdout_saved_discarded_or_passed_through(tmp_path, capfd):
    saved = tmp_path / "count.txt"
    assert fasthts.view("-c", SMALL, save_stdout=str(saved)) is None
    assert saved.read_text() == pysam.view("-c", SMALL)
    assert fasthts.view("-c", SMALL, catch_stdout=False) is None
    capfd.readouterr()
    assert fasthts.idxstats(SMALL, catch_stdout=None) is None
    assert capfd.readouterr().out == pysam.idxstats(SMALL)


def test_a_failure_raises_pysams_error_and_the_process_goes_on(tmp_path):
    missing = str(tmp_path / "missing.bam")
    with pytest.raises(fasthts.SamtoolsError) as mine:
        fasthts.view(missing)
    with pytest.raises(pysam.SamtoolsError) as theirs:
        pysam.view(missing)
    assert str(mine.value).startswith("'samtools returned with error 1: stdout=, stderr=")
    assert str(theirs.value).startswith("'samtools returned with error 1: stdout=, stderr=")
    assert missing in mine.value.value
    with pytest.raises(OSError, match="missing.bam"):
        fasthts.samtools.index(missing)
    text = tmp_path / "notes.txt"
    text.write_text("not sequence data\n")
    with pytest.raises(fasthts.SamtoolsError, match="error 4"):
        fasthts.quickcheck(str(text))
    with pytest.raises(pysam.SamtoolsError, match="error 4"):
        pysam.quickcheck(str(text))
    # The streams are this process's again, and the next call works.
    print("after", file=sys.stderr)
    assert fasthts.view("-c", SMALL) == "3295\n"


def test_messages_and_usage():
    fasthts.view("-c", SMALL)
    assert fasthts.view.get_messages() == ""
    assert "Usage: fasthts view" in fasthts.view.usage()


def test_a_reader_that_goes_away_ends_the_command_not_python(tmp_path):
    """`catch_stdout=None` passes the output through; when the reader of
    this process's stdout goes away (`| head -1`), the command ends with
    status 141 (SIGPIPE's, as samtools in a shell) and Python goes on."""
    script = (
        "import sys, fasthts\n"
        "try:\n"
        "    fasthts.view(sys.argv[1], catch_stdout=None)\n"
        "except fasthts.SamtoolsError as e:\n"
        "    print('raised', e.value[:32], file=sys.stderr)\n"
        "print('alive', file=sys.stderr)\n"
    )
    (tmp_path / "script.py").write_text(script)
    p = subprocess.run(f"{sys.executable} {tmp_path / 'script.py'} {SMALL} | head -1", shell=True, capture_output=True, text=True, executable="/bin/bash")
    assert p.stdout.count("\n") == 1
    assert p.stderr.splitlines()[-2:] == ["raised samtools returned with error 141", "alive"], p.stderr
