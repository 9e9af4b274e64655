"""fasthts.dask.sormadup on LocalClusters of 1 and 2 worker processes:
the output's records and the statistics equal the one-machine
`fasthts.sormadup`'s and samtools' chain (collate | fixmate -m | sort |
markdup), for markdup's and fixmate's options, at part counts from one to
parts far smaller than a pair's span (duplicate sets straddling part
boundaries), on dense and sparse generated data with many duplicates,
collated or (name-grouped input) not;
refusals name what is refused and leave nothing behind."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import fasthts
from conftest import require, require_module, require_tool, target_dir
from test_markdup import STATS_KEYS, illumina_folded, stats_of

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402


def samtools() -> str:
    return require_tool("samtools", "samtools")


def sh(script: str) -> None:
    subprocess.run(["bash", "-c", "set -e -o pipefail; " + script], check=True, capture_output=True)


def cluster(n: int, tmp: str):
    return distributed.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        local_directory=tempfile.mkdtemp(prefix="workers-", dir=tmp),
    )


@pytest.fixture(scope="module", params=[1, 2], ids=["1worker", "2workers"])
def client(request, tmp_path_factory):
    c = cluster(request.param, str(tmp_path_factory.mktemp(f"cluster{request.param}")))
    with distributed.Client(c) as cl:
        yield cl
    c.close()


def generated(d: Path, name: str, *args: str) -> Path:
    """An unsorted BAM of the generator's pairs (Illumina names folded so
    that many duplicates are optical), in blocks of htslib's size."""
    samtools()
    testgen = Path(os.environ.get("FASTHTS_TESTGEN", target_dir() / "release" / "fasthts-testgen"))
    require(testgen.is_file(), f"{testgen} (cargo build --release -p fasthts-testgen)")
    sam = subprocess.run(
        [testgen, "-q", "--unsorted", "--dup-fraction", "0.4", "--single-end-fraction", "0.08"]
        + ["--singleton-fraction", "0.05", "--chimeric-fraction", "0.05", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (d / f"{name}.sam").write_text(illumina_folded(sam))
    sh(f"samtools view --no-PG -b -o {d}/{name}.bam {d}/{name}.sam")
    return d / f"{name}.bam"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Dense (4,000 templates on 120 kb: duplicate sets everywhere, no
    place inside a reference where markdup may start afresh) and sparse
    (3,000 on 9 Mb: many such places)."""
    d = tmp_path_factory.mktemp("dsormadup")
    return {
        "dense": generated(d, "dense", "--seed", "11", "--reads", "4000", "--refs", "3", "--ref-len", "40000"),
        "sparse": generated(d, "sparse", "--seed", "12", "--reads", "3000", "--refs", "4", "--ref-len", "3000000"),
    }


def view(path) -> bytes:
    return subprocess.run([samtools(), "view", "-h", "--no-PG", str(path)], check=True, capture_output=True).stdout


OPTION_SETS = [
    ({}, [], []),
    ({"remove_duplicates": True, "fix_remove": True}, ["-r"], ["-r"]),
    ({"optical_distance": 100, "tag_originals": True, "fix_template_cigar": True}, ["-d", "100", "-t"], ["-c"]),
    ({"mode": "s", "optical_distance": 100, "no_multi_dup": True}, ["--mode", "s", "-d", "100", "--no-multi-dup"], []),
    ({"clear_previous": True, "include_fails": True, "max_read_length": 150, "fix_no_pair_check": True}, ["-c", "--include-fails", "-l", "150"], ["-p"]),
]


@pytest.mark.parametrize("options,flags,fix_flags", OPTION_SETS, ids=[" ".join(f + g) or "defaults" for _, f, g in OPTION_SETS])
@pytest.mark.parametrize("data", ["dense", "sparse"])
def test_equals_one_machine_and_samtools_chain(client, inputs, tmp_path, data, options, flags, fix_flags):
    bam = inputs[data]
    sh(
        f"samtools collate --no-PG -O -u {bam} {tmp_path}/c | samtools fixmate --no-PG -m -u {' '.join(fix_flags)} - - "
        f"| samtools sort --no-PG -u -T {tmp_path}/s - "
        f"| samtools markdup --no-PG -f {tmp_path}/theirs.txt {' '.join(flags)} - {tmp_path}/theirs.bam"
    )
    theirs = view(tmp_path / "theirs.bam")
    want = stats_of((tmp_path / "theirs.txt").read_text())
    assert want["duplicate_pair"] > 0
    one = fasthts.sormadup(bam, tmp_path / "one.bam", no_pg=True, **options)
    assert view(tmp_path / "one.bam") == theirs
    assert one == want
    for parts, splits in [(1, 1), (3, 4), (8, 2), (60, 7)]:
        out, stats_file = tmp_path / f"out{parts}.bam", tmp_path / f"out{parts}.txt"
        timings = {}
        got = fdask.sormadup(client, bam, out, no_pg=True, parts=parts, splits=splits, stats_file=stats_file, timings=timings, **options)
        assert view(out) == theirs, (parts, splits)
        assert list(got) == STATS_KEYS and got == want, (parts, splits)
        assert stats_of(stats_file.read_text()) == want
        if parts > 1 and (data == "sparse" or parts == 60):
            # Marked by more than one task: the hand-over is exercised, not
            # everything given to the first part. (Dense data has
            # independent starts only where a reference begins: a few
            # parts may all lie inside one reference.)
            assert timings["marking_tasks"] > 1, (parts, timings)
        if data == "dense" and parts == 60:
            # Parts in the middle of references, marked by the part before.
            assert timings["marking_tasks"] < timings["parts"], timings
    assert sorted(p for p in os.listdir(tmp_path) if p.startswith(".")) == []


def test_write_index_level_memory_threads_and_pg_line(client, inputs, tmp_path):
    bam = inputs["sparse"]
    fasthts.sormadup(bam, tmp_path / "one.bam", no_pg=True)
    out = tmp_path / "out.bam"
    fdask.sormadup(client, [bam], out, write_index=True, level=1, memory="1M", threads=2, parts=5, splits=3)
    lines = view(out).split(b"\n")
    ours = [line for line in lines if line.startswith(b"@PG\tID:fasthts\t")]
    assert len(ours) == 1 and b"\tCL:fasthts.dask.sormadup(" in ours[0]
    assert b"\n".join(line for line in lines if not line.startswith(b"@PG\tID:fasthts\t")) == view(tmp_path / "one.bam")
    (tmp_path / "copy.bam").write_bytes(out.read_bytes())
    sh(f"samtools index -c {tmp_path}/copy.bam")
    assert (tmp_path / "out.bam.csi").read_bytes() == (tmp_path / "copy.bam.csi").read_bytes()


def test_name_grouped_inputs_keep_their_order(client, inputs, tmp_path):
    """Name-grouped inputs (samtools collate's GO:query, htslib's blocks;
    fasthts' SO:queryname, blocks ending inside records): not collated, as
    on one machine, with splits far smaller than the data (name groups
    cut by split ends); collate=True collates them as on one machine."""
    grouped = tmp_path / "grouped.bam"
    sh(f"samtools collate --no-PG -o {grouped} {inputs['dense']} {tmp_path}/c")
    by_name = tmp_path / "by-name.bam"
    fasthts.sort(inputs["sparse"], by_name, by_name=True, level=1)
    for bam in (grouped, by_name):
        for options in ({}, {"fix_remove": True, "remove_duplicates": True}):
            one = fasthts.sormadup(bam, tmp_path / "one.bam", no_pg=True, **options)
            want = view(tmp_path / "one.bam")
            for parts, splits in [(1, 1), (4, 3), (9, 25)]:
                got = fdask.sormadup(client, bam, tmp_path / "out.bam", no_pg=True, parts=parts, splits=splits, **options)
                assert view(tmp_path / "out.bam") == want, (bam, options, parts, splits)
                assert got == one
        fasthts.sormadup(bam, tmp_path / "one.bam", no_pg=True, collate=True)
        fdask.sormadup(client, bam, tmp_path / "out.bam", no_pg=True, collate=True, parts=4, splits=3)
        assert view(tmp_path / "out.bam") == view(tmp_path / "one.bam")
    with pytest.raises(fasthts.Error, match="grouped by name.*one input only") as e:
        fdask.sormadup(client, [grouped, grouped], tmp_path / "two.bam")
    assert str(grouped) in str(e.value)
    assert not (tmp_path / "two.bam").exists()


def test_refusals_leave_nothing(client, inputs, tmp_path):
    bam = inputs["dense"]
    with pytest.raises(ValueError, match="mark_supplementary"):
        fdask.sormadup(client, bam, tmp_path / "out.bam", mark_supplementary=True)
    with pytest.raises(ValueError, match="duplicate mode"):
        fdask.sormadup(client, bam, tmp_path / "out.bam", mode="x")
    with pytest.raises(fasthts.Error, match="writes BAM, not SAM"):
        fdask.sormadup(client, bam, tmp_path / "out.sam")
    sam = str(bam)[:-4] + ".sam"
    with pytest.raises(fasthts.Error, match="BGZF-compressed BAM") as e:
        fdask.sormadup(client, sam, tmp_path / "out.bam")
    assert sam in str(e.value)
    assert os.listdir(tmp_path) == []


def test_command_line(inputs, tmp_path):
    """`python -m fasthts.dask sormadup`: the one-machine records and -f
    report; -s alone prints the report on stderr; errors in one line."""
    bam = str(inputs["sparse"])
    want = fasthts.sormadup(bam, tmp_path / "one.bam", no_pg=True, optical_distance=100, stats_file=tmp_path / "one.txt")
    out = tmp_path / "out.bam"
    run = [sys.executable, "-m", "fasthts.dask", "sormadup", "--local-workers", "2", "--no-PG", "-d", "100", "-q", "-o", str(out)]
    p = subprocess.run([*run, "-f", str(tmp_path / "out.txt"), "--write-index", bam], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    assert view(out) == view(tmp_path / "one.bam")
    assert (tmp_path / "out.bam.csi").is_file()
    assert stats_of((tmp_path / "out.txt").read_text()) == want
    p = subprocess.run([*run, "-s", bam], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert stats_of(p.stderr) == want
    assert not [name for name in os.listdir(tempfile.gettempdir()) if name.startswith("fasthts-dask-sormadup-")]
    p = subprocess.run([*run, str(tmp_path / "missing.bam")], capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.endswith(f"python -m fasthts.dask sormadup: {tmp_path / 'missing.bam'}: No such file or directory\n"), p.stderr
