"""fasthts.dask.stats on a LocalCluster of 2 worker processes: the same
Stats (the same text bytes) as fasthts.stats, and samtools stats' text but
for its two lines naming the program, on generated BAMs with several
option sets, reference sizes and task counts; from a local path and from
a URL whose local copy is gone. The planned steps are also checked one by
one, so that a fall-back to one task cannot hide a wrong sum."""

import os
import shutil
import subprocess

import pytest

import fasthts
from conftest import ROOT, require_module, require_tool, run, target_dir

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402
from fasthts import _fasthts  # noqa: E402


def body(text: str) -> str:
    """The text but the two lines naming the program and its command line
    (as test_stats.py compares with samtools)."""
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not line.startswith(("# This file was produced by samtools stats", "# The command line was:"))
    )


def generate(path, *args, fasta=None):
    """A sorted, indexed BAM from scripts/gen-bam.sh with generator `args`."""
    require_tool("samtools", "samtools")
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    tg = target_dir() / "release" / "fasthts-testgen"
    if tg.is_file():
        env["FASTHTS_TESTGEN"] = str(tg)
    extra = ["--reference-fasta", str(fasta)] if fasta else []
    subprocess.run(["bash", str(ROOT / "scripts/gen-bam.sh"), str(path), *args, *extra], check=True, env=env)
    run("samtools", "index", path)
    return path


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def genomes(tmp_path_factory):
    """BAMs of few long references and of many short ones (each with its
    FASTA), and a target file for the first."""
    d = tmp_path_factory.mktemp("dask-stats")
    few = generate(d / "few.bam", "--seed", "5", "--reads", "4000", "--refs", "3", "--ref-len", "40k", "--read-len", "60-150", fasta=d / "few.fa")
    many = generate(d / "many.bam", "--seed", "11", "--reads", "3000", "--refs", "12", "--ref-len", "10k", "--read-len", "100", fasta=d / "many.fa")
    names = [line.split("\t")[0] for line in run("samtools", "idxstats", few).stdout.decode().splitlines()]
    targets = d / "targets.txt"
    targets.write_text(f"{names[0]}\t100\t5000\n{names[0]}\t9000\t20000\n{names[1]}\t1\t30000\n")
    return {"few": (few, d / "few.fa"), "many": (many, d / "many.fa")}, targets


def option_sets(fasta, targets):
    """(samtools stats options, fasthts.stats keywords)."""
    sets = [
        ([], {}),
        (["-r", fasta], {"ref_seq": fasta}),
        (["-r", fasta, "--GC-depth", "3000"], {"ref_seq": fasta, "gc_depth": 3000}),
        (["-c", "2,50,4"], {"coverage": [2, 50, 4]}),
        (["-d", "-f", "PAIRED", "-F", "0x800"], {"remove_dups": True, "required_flag": "PAIRED", "filtering_flag": 0x800}),
        (["-i", "300", "-m", "0.5", "-x"], {"insert_size": 300, "most_inserts": 0.5, "sparse": True}),
        (["-i", "0"], {"insert_size": 0}),
        (["-q", "20", "-p"], {"trim_quality": 20, "remove_overlaps": True}),
        (["-l", "100", "-I", "rg1"], {"read_length": 100, "id": "rg1"}),
    ]
    if targets is not None:
        sets += [
            (["-t", targets], {"target_regions": targets}),
            (["-t", targets, "-g", "3"], {"target_regions": targets, "cov_threshold": 3}),
        ]
    return sets


def summed_in_steps(path, tasks, **kw):
    """The planned steps run here, one by one: the text when the parts were
    summed, None when the gather chose one pass."""
    plan = _fasthts.stats_plan(path, **kw)
    assert plan is not None, "an indexed BAM is planned"
    parts = [_fasthts.stats_regions(path, group, **kw) for group in fdask._chunks(plan, tasks)]
    assert all(isinstance(p, bytes) for p in parts)
    gathered = _fasthts.stats_gather(path, plan, parts, **kw)
    return None if gathered is None else gathered[0]


def test_stats_equals_one_machine_and_samtools(client, genomes):
    (bams, targets) = genomes
    for name, (bam, fasta) in bams.items():
        for args, kw in option_sets(fasta, targets if name == "few" else None):
            want = fasthts.stats(bam, **kw)
            samtools = body(run("samtools", "stats", *args, bam).stdout.decode())
            assert body(want.text) == samtools, (name, args)
            # Summed from parts, not counted again in one pass.
            assert summed_in_steps(str(bam), 3, **kw) == want.text, (name, args)
            for tasks in (None, 1, 3, 50):
                got = fdask.stats(client, bam, tasks=tasks, **kw)
                assert isinstance(got, fasthts.Stats)
                assert got.text == want.text, (name, args, tasks)
                assert got.notes == want.notes and got.summary == want.summary


def test_regions_and_reads_that_do_not_add_up_are_counted_in_one_task(client, genomes, tmp_path):
    (bams, _) = genomes
    bam, _ = bams["few"]
    names = [line.split("\t")[0] for line in run("samtools", "idxstats", bam).stdout.decode().splitlines()]
    regions = [f"{names[0]}:1000-30000", names[1]]
    assert _fasthts.stats_plan(str(bam)) is not None
    want = fasthts.stats(bam, regions)
    assert body(want.text) == body(run("samtools", "stats", bam, *regions).stdout.decode())
    assert fdask.stats(client, bam, regions).text == want.text
    # Reads of 300 cycles or more grow samtools' arrays, which depends on
    # the reads before: the parts' sum is refused, and one task counts.
    long = generate(tmp_path / "long.bam", "--seed", "3", "--reads", "600", "--refs", "3", "--ref-len", "20k", "--read-len", "200-420")
    assert summed_in_steps(str(long), 2) is None
    want = fasthts.stats(long)
    assert body(want.text) == body(run("samtools", "stats", long).stdout.decode())
    assert fdask.stats(client, long, tasks=2).text == want.text


def test_inputs_without_an_index_sam_and_bad_input(client, genomes, tmp_path):
    (bams, _) = genomes
    bam, _ = bams["many"]
    want = fasthts.stats(bam)
    bare = tmp_path / "bare.bam"
    shutil.copy(bam, bare)
    assert _fasthts.stats_plan(str(bare)) is None
    assert fdask.stats(client, bare).text == fasthts.stats(bare).text
    assert body(fasthts.stats(bare).text) == body(want.text)
    sam = tmp_path / "in.sam"
    sam.write_bytes(run("samtools", "view", "-h", bam).stdout)
    assert _fasthts.stats_plan(str(sam)) is None
    assert body(fdask.stats(client, sam).text) == body(want.text)
    # An index of another file: the parts' spans do not cover this one.
    shutil.copy(ROOT / "tests/data/small.bam", tmp_path / "other.bam")
    fasthts.index(str(tmp_path / "other.bam"), str(bare) + ".bai")
    assert body(fdask.stats(client, bare, tasks=3).text) == body(want.text)
    bad = tmp_path / "bad.bam"
    bad.write_text("not a bam\n")
    with pytest.raises(fasthts.Error, match="bad.bam"):
        fdask.stats(client, bad)
    with pytest.raises(ValueError, match="coverage step"):
        fdask.stats(client, bam, coverage=(1, 10, 0))
    with pytest.raises(ValueError, match="requires a list of target regions"):
        fdask.stats(client, bam, cov_threshold=3)
    with pytest.raises(TypeError, match="unexpected stats option .split."):
        fdask.stats(client, bam, split="RG")


def test_parts_of_another_kind_are_refused_in_words(genomes):
    (bams, _) = genomes
    bam = str(bams["many"][0])
    plan = _fasthts.stats_plan(bam)
    parts = [_fasthts.stats_regions(bam, plan)]
    with pytest.raises(fasthts.Error, match="counted with other options"):
        _fasthts.stats_gather(bam, plan, parts, remove_overlaps=True)
    newer = bytearray(parts[0])
    newer[len(b"fasthts-stats\0")] += 1
    with pytest.raises(fasthts.Error, match="of version 2, this fasthts reads version 1"):
        _fasthts.stats_gather(bam, plan, [bytes(newer)])
    with pytest.raises(fasthts.Error, match="cut short"):
        _fasthts.stats_gather(bam, plan, [parts[0][:-3]])
    with pytest.raises(fasthts.Error, match="not a part of a fasthts stats run"):
        _fasthts.stats_gather(bam, plan, [b"BAM\x01"])
    # A failed task: the gather chooses one pass.
    assert _fasthts.stats_gather(bam, plan, None) is None


def test_stats_of_a_url_with_workers_that_have_no_copy(nginx, genomes, tmp_path_factory):
    (bams, targets) = genomes
    bam, fasta = bams["few"]
    local = tmp_path_factory.mktemp("dask-stats-url") / "few.bam"
    shutil.copy(bam, local)
    shutil.copy(str(bam) + ".bai", str(local) + ".bai")
    cases = [{}, {"target_regions": targets}, {"ref_seq": fasta, "remove_overlaps": True}]
    wants = [fasthts.stats(local, **kw).text for kw in cases]
    url = nginx.serve(local, "dask-stats.bam")
    nginx.serve(str(local) + ".bai", "dask-stats.bam.bai")
    local.unlink()
    os.unlink(str(local) + ".bai")
    size = os.path.getsize(bam)
    # Workers started in an empty directory: no copy of the file.
    empty = tmp_path_factory.mktemp("worker-cwd")
    was = os.getcwd()
    os.chdir(empty)
    try:
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    finally:
        os.chdir(was)
    try:
        assert _fasthts.stats_plan(url) is not None
        for kw, want in zip(cases, wants):
            for tasks in (None, 2):
                before = len(nginx.requests("dask-stats.bam"))
                got = fdask.stats(client, url, tasks=tasks, **kw).text
                # The text names the file as given.
                assert body(got) == body(want), (kw, tasks)
                fetched = nginx.requests("dask-stats.bam")[before:]
                assert fetched and all(status == 206 for status, _ in fetched)
                # Ranges, not the whole file streamed by each task.
                assert all(n < size for _, n in fetched), fetched
                assert got == fasthts.stats(url, **kw).text
    finally:
        client.close()
        cluster.close()
