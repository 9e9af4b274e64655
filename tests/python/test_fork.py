"""Every entry point of the package in a child forked after its parent used
it (the usual ``multiprocessing.Pool`` over regions, whose default start
method on Linux is ``fork``): the parent's threads (rayon's pools, the
read-ahead and compressing threads) are not in the child, and the child's
calls must neither wait for them nor give other results."""

import hashlib
import os
import time
from pathlib import Path

import pytest

import fasthts

#: How long a child may take before it counts as hung (each call takes
#: well under a second on the test data).
_CHILD_SECONDS = 60


def _digest(value) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _in_forked_child(call):
    """`call()`'s digest as a child forked now computes it (the child
    writes it to a pipe); fails the test when the child hangs or fails."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            os.write(write_end, _digest(call()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + _CHILD_SECONDS
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            got = os.read(read_end, 64).decode()
            os.close(read_end)
            assert os.waitstatus_to_exitcode(status) == 0, "the forked child failed"
            return got
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(read_end)
    pytest.fail("the forked child hung")


def _entry_points(golden: Path, fastq: Path, work: Path):
    """(name, call) for each entry point; each call uses threads where the
    entry point has them and returns what it computed."""
    bam = golden / "normal.bam"
    contig = fasthts.AlignmentFile(str(bam)).references[0]
    counter = iter(range(1_000_000))

    def fresh(name: str) -> Path:
        # Parent and child write to different files: they run at once.
        return work / f"{next(counter)}-{os.getpid()}-{name}"

    def write_bam():
        out = fresh("mapq20.bam")
        with fasthts.AlignmentFile(str(bam), threads=2) as f:
            with fasthts.AlignmentFile(str(out), "wb", template=f, threads=2) as w:
                for r in f.fetch(contig):
                    if r.mapping_quality >= 20:
                        w.write(r)
        return _file_digest(out)

    def sort_and_index():
        out = fresh("sorted.bam")
        fasthts.sort(str(bam), str(out), by_name=True, threads=2, no_pg=True)
        again = fresh("again.bam")
        fasthts.sort(str(out), str(again), threads=2, no_pg=True)
        fasthts.index(str(again), threads=2)
        return _file_digest(out), _file_digest(again), _file_digest(Path(f"{again}.bai"))

    def sormadup():
        out = fresh("marked.bam")
        fasthts.sormadup(str(bam), str(out), threads=2, no_pg=True)
        return _file_digest(out)

    def snp_pileup():
        out = fresh("snps.csv")
        fasthts.snp_pileup(str(golden / "sites.vcf"), str(out), [str(bam), str(bam)], threads=2)
        return _file_digest(out)

    def pileup():
        with fasthts.AlignmentFile(str(bam), threads=2) as f:
            return [(c.reference_pos, c.nsegments) for c in f.pileup(contig, 0, 200_000)]

    def count_coverage():
        with fasthts.AlignmentFile(str(bam), threads=2) as f:
            return [list(a) for a in f.count_coverage(contig, 0, 50_000)]

    def mate():
        with fasthts.AlignmentFile(str(bam)) as f:
            reads = [r for r in f.fetch(contig, 0, 100_000) if r.is_paired and not r.mate_is_unmapped][:50]
            return [f.mate(r).query_name for r in reads]

    def columns():
        b = fasthts.BamFile(str(bam))
        return [int(c["pos"].sum()) for c in b.columns_many([contig, contig], threads=2)]

    def scatter():
        return fasthts.scatter(str(bam), None, lambda region, cols: int(cols["pos"].size), threads=2)

    def fasta():
        with fasthts.FastaFile(str(golden / "ref.fa")) as f:
            return f.fetch(f.references[0], 1000, 2000)

    def countgraph():
        g = fasthts.Countgraph(21, 1_000_000, 4)
        g.consume_seqfile(str(fastq), 2)
        return g.n_occupied()

    return [
        ("flagstat", lambda: str(fasthts.flagstat(str(bam), threads=2))),
        ("stats", lambda: fasthts.stats(str(bam), threads=2).text),
        ("depth", lambda: {k: getattr(v, "tobytes", lambda: v)() for k, v in fasthts.depth(str(bam), region=contig, threads=2).items()}),
        ("fetch and count", lambda: (sum(1 for _ in fasthts.AlignmentFile(str(bam), threads=2).fetch(contig)), fasthts.AlignmentFile(str(bam)).count(contig))),
        ("write", write_bam),
        ("sort and index", sort_and_index),
        ("sormadup", sormadup),
        ("snp_pileup", snp_pileup),
        ("pileup", pileup),
        ("count_coverage", count_coverage),
        ("mate", mate),
        ("columns", columns),
        ("scatter", scatter),
        ("FastaFile", fasta),
        ("Countgraph", countgraph),
        ("samtools form", lambda: (fasthts.view("-c", str(bam)), fasthts.samtools.idxstats(str(bam)))),
    ]


def test_every_entry_point_in_a_child_forked_after_the_parent_used_it(golden, fastq, tmp_path):
    entry_points = _entry_points(golden, fastq, tmp_path)
    for _, call in entry_points:
        call()  # the parent's pools, threads and caches in use
    for name, call in entry_points:
        want = _digest(call())
        assert _in_forked_child(call) == want, f"{name}: the forked child computed something else"
