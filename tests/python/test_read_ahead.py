"""AlignmentFile(threads=N): the records are inflated and decoded ahead of
the Python iterator on N threads (None or 0: all cores); the records and
their order are those of one thread, and of pysam."""

import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import require_module, require_tool

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"
THREADS = [1, 2, 3, 0, None]


def records(it):
    return [a.to_string() for a in it]


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """small.bam's records 8 times over (26,360 records: several batches)."""
    samtools = require_tool("samtools", "samtools")
    d = tmp_path_factory.mktemp("many")
    out = d / "many.bam"
    subprocess.run([samtools, "cat", "-o", str(out)] + [str(SMALL)] * 8, check=True)
    subprocess.run([samtools, "sort", "-o", str(d / "sorted.bam"), str(out)], check=True)
    subprocess.run([samtools, "index", str(d / "sorted.bam")], check=True)
    subprocess.run([samtools, "view", "-h", "-o", str(d / "many.sam"), str(out)], check=True)
    return d


@pytest.mark.parametrize("threads", THREADS)
def test_whole_file_records_do_not_depend_on_threads(many, threads):
    pysam = require_module("pysam")
    for name in ["many.bam", "sorted.bam", "many.sam"]:
        path = str(many / name)
        with pysam.AlignmentFile(path) as f:
            expected = records(f.fetch(until_eof=True))
        assert len(expected) == 8 * 3295
        with fasthts.AlignmentFile(path, threads=threads) as f:
            assert records(f.fetch(until_eof=True)) == expected, (name, threads)


@pytest.mark.parametrize("threads", THREADS)
def test_region_records_do_not_depend_on_threads(many, threads):
    pysam = require_module("pysam")
    path = str(many / "sorted.bam")
    with pysam.AlignmentFile(path) as f:
        contigs = [c for c in f.references if f.count(c) > 0]
        expected = {c: records(f.fetch(c)) for c in contigs}
        expected_all = records(f.fetch())
    assert max(len(v) for v in expected.values()) > 4096  # more than one batch
    with fasthts.AlignmentFile(path, threads=threads) as f:
        for c in contigs:
            assert records(f.fetch(c)) == expected[c], (c, threads)
        assert records(f.fetch()) == expected_all
        assert f.count(until_eof=True) == 8 * 3295


def test_an_iterator_left_unfinished_does_not_hold_up_the_next(many):
    f = fasthts.AlignmentFile(str(many / "many.bam"), threads=2)
    for _ in range(20):
        it = f.fetch(until_eof=True)
        first = [next(it) for _ in range(5000)]
        del it
    kept = first[0]
    assert records(f.fetch(until_eof=True))[0] == kept.to_string()
    f.close()


def test_threads_argument_is_checked():
    with pytest.raises(ValueError, match="threads"):
        fasthts.AlignmentFile(str(SMALL), threads=-1)
    with pytest.raises(TypeError, match="threads"):
        fasthts.AlignmentFile(str(SMALL), threads="2")
    # An absurd count is capped by the thread rule (a few threads per core).
    with fasthts.AlignmentFile(str(SMALL), threads=100000) as f:
        assert sum(1 for _ in f.fetch(until_eof=True)) == 3295


def test_a_damaged_file_fails_at_the_same_record_whatever_the_threads(many, tmp_path):
    # Cut inside a BGZF block well past the first batch: read ahead, the
    # error still comes after exactly the records before the damage.
    cut = tmp_path / "cut.bam"
    cut.write_bytes((many / "many.bam").read_bytes()[:1_000_000])
    with fasthts.AlignmentFile(str(many / "many.bam")) as f:
        intact = records(f.fetch(until_eof=True))
    outcomes = set()
    for threads in THREADS:
        got = []
        with pytest.warns(UserWarning), fasthts.AlignmentFile(str(cut), threads=threads, ignore_truncation=True) as f:
            with pytest.raises(fasthts.Error, match="truncated BGZF block") as e:
                for a in f.fetch(until_eof=True):
                    got.append(a.to_string())
        assert got == intact[: len(got)] and len(got) > 4096
        outcomes.add((len(got), str(e.value)))
    assert len(outcomes) == 1, outcomes
