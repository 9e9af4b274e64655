"""fasthts.stats: samtools stats' text (but its first line) with each
option, and the same text read into tables."""

import os
import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import ROOT, require_tool, run, target_dir

SMALL = ROOT / "tests/data/small.bam"


def body(text: str) -> str:
    """The text but the two lines naming the program and its command line."""
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not line.startswith(("# This file was produced by samtools stats", "# The command line was:"))
    )


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    """A generated sorted, indexed BAM, its reference FASTA and a target file."""
    require_tool("samtools", "samtools")
    d = tmp_path_factory.mktemp("stats")
    bam, fasta = d / "gen.bam", d / "genome.fa"
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    tg = target_dir() / "release" / "fasthts-testgen"
    if tg.is_file():
        env["FASTHTS_TESTGEN"] = str(tg)
    args = ["--seed", "5", "--reads", "4000", "--refs", "3", "--ref-len", "40k", "--read-len", "60-150"]
    subprocess.run(["bash", str(ROOT / "scripts/gen-bam.sh"), str(bam), *args, "--reference-fasta", str(fasta)], check=True, env=env)
    run("samtools", "index", bam)
    names = [line.split("\t")[0] for line in run("samtools", "idxstats", bam).stdout.decode().splitlines()]
    targets = d / "targets.txt"
    targets.write_text(f"{names[0]}\t100\t5000\n{names[0]}\t9000\t20000\n{names[1]}\t1\t30000\n")
    return bam, fasta, targets, names


def cases(fasta, targets, names):
    """(samtools stats options, regions after the file, fasthts.stats keywords)."""
    region = f"{names[0]}:1000-30000"
    return [
        ([], [], {}),
        (["-r", fasta], [], {"ref_seq": fasta}),
        (["-r", fasta, "--GC-depth", "3000"], [], {"ref_seq": fasta, "gc_depth": 3000}),
        (["-t", targets], [], {"target_regions": targets}),
        (["-t", targets, "-g", "3"], [], {"target_regions": targets, "cov_threshold": 3}),
        (["-c", "2,50,4"], [], {"coverage": (2, 50, 4)}),
        (["-d", "-f", "PAIRED", "-F", "0x800"], [], {"remove_dups": True, "required_flag": "PAIRED", "filtering_flag": 0x800}),
        (["-i", "300", "-m", "0.5", "-x"], [], {"insert_size": 300, "most_inserts": 0.5, "sparse": True}),
        (["-q", "20", "-p"], [], {"trim_quality": 20, "remove_overlaps": True}),
        (["-l", "100"], [], {"read_length": 100}),
        ([], [region], {"regions": [region]}),
        ([], [region, names[1]], {"regions": [region, names[1]]}),
    ]


def test_stats_text_is_samtools_with_every_option(genome):
    bam, fasta, targets, names = genome
    for args, regions, kw in cases(fasta, targets, names):
        want = body(run("samtools", "stats", *args, bam, *regions).stdout.decode())
        for threads in (1, 2):
            got = fasthts.stats(bam, threads=threads, **kw)
            assert body(got.text) == want, (args, regions, threads)


def test_stats_equals_the_cli_and_reads_into_tables(cli, genome):
    bam, fasta, _, _ = genome
    cli_text = run(cli, "stats", "-r", fasta, bam).stdout.decode()
    s = fasthts.stats(str(bam), ref_seq=str(fasta))
    assert body(s.text) == body(cli_text)
    assert s.text.startswith("# This file was produced by samtools stats (fasthts ")
    # Every line but comments is in a table, in order.
    rows = [line.split("\t") for line in s.text.splitlines() if not line.startswith("#")]
    sn = [r for r in rows if r[0] == "SN"]
    assert list(s.summary) == [r[1].rstrip(":") for r in sn]
    assert s.summary["raw total sequences"] == int(sn[0][2])
    assert s.summary["error rate"] == float(next(r[2] for r in sn if r[1] == "error rate:"))
    assert s.sections["CHK"] == [r[1:] for r in rows if r[0] == "CHK"]  # hexadecimal: text
    for name in {r[0] for r in rows} - {"SN", "CHK"}:
        assert s.sections[name] == [
            [int(f) if f.lstrip("-").isdigit() else (f if f.startswith("[") else float(f)) for f in r[1:]] for r in rows if r[0] == name
        ], name
    # Arrays: numeric columns; COV's labels left out.
    ffq = s.array("FFQ")
    assert ffq.dtype.kind == "i" and ffq.shape[0] == len(s.sections["FFQ"])
    assert ffq.shape[1] == len(s.sections["FFQ"][0])
    cov = s.array("COV")
    assert cov.shape == (len(s.sections["COV"]), 2)
    assert s.array("GCD").dtype.kind == "f"
    assert int(s.array("RL")[:, 1].sum()) == s.summary["sequences"]
    with pytest.raises(KeyError):
        s.array("NOPE")
    assert str(s) == s.text and s == fasthts.stats(bam, ref_seq=fasta, threads=1)


def test_stats_of_small_bam_and_sam_equal_samtools(tmp_path):
    require_tool("samtools", "samtools")
    sam = tmp_path / "small.sam"
    sam.write_bytes(run("samtools", "view", "-h", SMALL).stdout)
    for path in (SMALL, sam):
        assert body(fasthts.stats(path).text) == body(run("samtools", "stats", path).stdout.decode())


def test_stats_errors_name_the_file(tmp_path):
    missing = tmp_path / "missing.bam"
    with pytest.raises((fasthts.Error, OSError), match="missing.bam"):
        fasthts.stats(missing)
    cut = tmp_path / "cut.bam"
    cut.write_bytes(SMALL.read_bytes()[: SMALL.stat().st_size // 2])
    with pytest.warns(UserWarning, match="EOF marker is absent"), pytest.raises(fasthts.Error, match="cut.bam"):
        fasthts.stats(cut)
    with pytest.raises(ValueError, match="flag"):
        fasthts.stats(SMALL, required_flag="NOPE")
    with pytest.raises(ValueError, match="coverage"):
        fasthts.stats(SMALL, coverage=(1, 10, 0))
