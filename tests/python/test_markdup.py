"""`fasthts.markdup` and `fasthts.sormadup` against samtools 1.16: the same
records and statistics as `samtools markdup` (and as samtools' chain
`fixmate -m | sort | markdup` for sormadup), on generated pairs with many
duplicates, optical ones among them, supplementary alignments and single
reads; refusals as ValueError, failures leaving no output."""

import os
import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import require, require_tool, target_dir

# The library's statistics, in samtools' -s order (the dict's keys).
STATS_KEYS = [
    "read",
    "written",
    "excluded",
    "examined",
    "paired",
    "single",
    "duplicate_pair",
    "duplicate_single",
    "duplicate_pair_optical",
    "duplicate_single_optical",
    "duplicate_non_primary",
    "duplicate_non_primary_optical",
    "duplicate_primary_total",
    "duplicate_total",
    "estimated_library_size",
]


def sh(script: str) -> None:
    subprocess.run(["bash", "-c", "set -e -o pipefail; " + script], check=True, capture_output=True)


def illumina_folded(sam: str) -> str:
    """The generator's Illumina names with tiles 1101/1102 and x/y folded
    into 400 pixels (as tests/cli/markdup.rs folds them), so that many
    duplicates are optical at optical_distance=100."""
    out = []
    for line in sam.splitlines():
        if not line.startswith("@"):
            qname, rest = line.split("\t", 1)
            f = qname.split(":")
            assert len(f) == 7, qname
            tile, x, y = 1101 + int(f[4]) % 2, int(f[5]) % 400, (int(f[6]) * 37) % 400
            line = f"{':'.join(f[:4])}:{tile}:{x}:{y}_{f[6]}\t{rest}"
        out.append(line + "\n")
    return "".join(out)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """(name-grouped BAM, the same fixmate -m'd and coordinate-sorted),
    both made by samtools."""
    require_tool("samtools", "samtools")
    testgen = Path(os.environ.get("FASTHTS_TESTGEN", target_dir() / "release" / "fasthts-testgen"))
    require(testgen.is_file(), f"{testgen} (cargo build --release -p fasthts-testgen)")
    d = tmp_path_factory.mktemp("markdup")
    sam = subprocess.run(
        [testgen, "-q", "--seed", "11", "--reads", "4000", "--refs", "3", "--ref-len", "40000", "--dup-fraction", "0.4"]
        + ["--single-end-fraction", "0.08", "--singleton-fraction", "0.05", "--chimeric-fraction", "0.05"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (d / "gen.sam").write_text(illumina_folded(sam))
    sh(f"samtools collate --no-PG -o {d}/collated.bam {d}/gen.sam {d}/c1")
    sh(f"samtools collate -O -u {d}/gen.sam {d}/c2 | samtools fixmate -m -u - - | samtools sort --no-PG -o {d}/fixed.bam -")
    return d / "collated.bam", d / "fixed.bam"


def stats_of(text: str) -> dict:
    """samtools' -f text as markdup's dict (COMMAND left out)."""
    pairs = (line.split(": ", 1) for line in text.splitlines() if not line.startswith("COMMAND: "))
    return {k.lower().replace(" ", "_"): int(v) for k, v in pairs}


OPTION_SETS = [
    ({}, []),
    ({"remove_duplicates": True}, ["-r"]),
    ({"mark_supplementary": True, "optical_distance": 100, "tag_originals": True}, ["-S", "-d", "100", "-t"]),
    ({"mode": "s", "optical_distance": 100, "no_multi_dup": True}, ["--mode", "s", "-d", "100", "--no-multi-dup"]),
    ({"clear_previous": True, "include_fails": True, "max_read_length": 150}, ["-c", "--include-fails", "-l", "150"]),
]


@pytest.mark.parametrize("options,flags", OPTION_SETS, ids=[" ".join(f) or "defaults" for _, f in OPTION_SETS])
def test_markdup_equals_samtools(inputs, tmp_path, options, flags):
    _, fixed = inputs
    subprocess.run(
        ["samtools", "markdup", "--no-PG", "-O", "sam", "-f", tmp_path / "theirs.txt", *flags, fixed, tmp_path / "theirs.sam"],
        check=True,
        capture_output=True,
    )
    theirs = (tmp_path / "theirs.sam").read_bytes()
    want = stats_of((tmp_path / "theirs.txt").read_text())
    assert want["duplicate_pair"] > 0
    for threads in (1, 2, 4):
        out, stats_file = tmp_path / f"ours{threads}.sam", tmp_path / f"ours{threads}.txt"
        got = fasthts.markdup(fixed, out, no_pg=True, format="sam", threads=threads, stats_file=stats_file, **options)
        assert out.read_bytes() == theirs, (threads, flags)
        assert list(got) == STATS_KEYS
        assert got == want
        assert stats_of(stats_file.read_text()) == want
        assert stats_file.read_text().startswith(f"COMMAND: fasthts.markdup({str(fixed)!r}, {str(out)!r})\n".replace("'", '"'))


def test_markdup_bam_output_and_pg_line(inputs, tmp_path):
    """A BAM output (from the name) with the call in its @PG line."""
    _, fixed = inputs
    out = tmp_path / "marked.bam"
    stats = fasthts.markdup(str(fixed), str(out), optical_distance=100, threads=2)
    assert stats["duplicate_pair_optical"] > 0
    header = subprocess.run(["samtools", "view", "-H", out], check=True, capture_output=True, text=True).stdout
    assert "\tPN:fasthts\t" in header and "CL:fasthts.markdup(" in header
    sh(f"samtools markdup --no-PG -d 100 {fixed} {tmp_path}/theirs.bam")
    view = lambda p: subprocess.run(["samtools", "view", p], check=True, capture_output=True).stdout  # noqa: E731
    assert view(out) == view(tmp_path / "theirs.bam")


def test_markdup_write_index(inputs, tmp_path):
    """write_index: the CSI samtools index makes of the output."""
    _, fixed = inputs
    out = tmp_path / "marked.bam"
    fasthts.markdup(fixed, out, write_index=True, mark_supplementary=True, threads=2)
    (tmp_path / "copy.bam").write_bytes(out.read_bytes())
    sh(f"samtools index -c {tmp_path}/copy.bam")
    assert (tmp_path / "marked.bam.csi").read_bytes() == (tmp_path / "copy.bam.csi").read_bytes()
    with pytest.raises(ValueError, match="--write-index"):
        fasthts.markdup(fixed, tmp_path / "out.sam", write_index=True)
    assert not (tmp_path / "out.sam").exists()


@pytest.mark.parametrize("options,flags", OPTION_SETS[:3], ids=[" ".join(f) or "defaults" for _, f in OPTION_SETS[:3]])
def test_sormadup_equals_the_samtools_chain(inputs, tmp_path, options, flags):
    collated, _ = inputs
    flag_text = " ".join(flags)
    sh(
        f"samtools fixmate --no-PG -m -u {collated} - | samtools sort --no-PG -u -T {tmp_path}/s - "
        f"| samtools markdup --no-PG -O sam -f {tmp_path}/theirs.txt {flag_text} - {tmp_path}/theirs.sam"
    )
    theirs = (tmp_path / "theirs.sam").read_bytes()
    want = stats_of((tmp_path / "theirs.txt").read_text())
    for threads in (1, 2):
        out = tmp_path / f"ours{threads}.sam"
        got = fasthts.sormadup(collated, out, no_pg=True, format="sam", threads=threads, memory="1M", temp_prefix=tmp_path / "t", **options)
        assert out.read_bytes() == theirs, (threads, flags)
        assert got == want
    assert sorted(os.listdir(tmp_path)) == ["ours1.sam", "ours2.sam", "theirs.sam", "theirs.txt"]


def test_sormadup_write_index(inputs, tmp_path):
    collated, _ = inputs
    out = tmp_path / "marked.bam"
    fasthts.sormadup(collated, out, write_index=True, threads=2)
    assert (tmp_path / "marked.bam.csi").is_file()
    subprocess.run(["samtools", "view", "-c", out, "chr1"], check=True, capture_output=True)


def test_refusals_are_value_errors_and_leave_no_output(inputs, tmp_path):
    collated, fixed = inputs
    out = tmp_path / "out.bam"
    with pytest.raises(ValueError, match="duplicate mode"):
        fasthts.markdup(fixed, out, mode="x")
    with pytest.raises(ValueError, match="--barcode-tag"):
        fasthts.markdup(fixed, out, barcode_tag="BC", barcode_name=True)
    with pytest.raises(ValueError, match="--barcode-tag"):
        fasthts.sormadup(collated, out, barcode_tag="BC", barcode_rgx="(.*)")
    with pytest.raises(TypeError):
        fasthts.markdup(fixed, out, remove=True)
    # Name-grouped input is not coordinate sorted: samtools' message, with the path.
    with pytest.raises(fasthts.Error, match="not in coordinate sorted order") as e:
        fasthts.markdup(collated, out)
    assert str(collated) in str(e.value)
    missing = tmp_path / "missing.bam"
    with pytest.raises(OSError) as e:
        fasthts.markdup(missing, out)
    assert str(missing) in str(e.value)
    assert os.listdir(tmp_path) == []
