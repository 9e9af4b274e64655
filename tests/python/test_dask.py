"""fasthts.dask on a LocalCluster of 2 worker processes equals the
single-machine results."""

import os
import shutil

import pytest

import fasthts
from conftest import require_module

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_cluster_has_two_worker_processes(client):
    assert len(client.scheduler_info()["workers"]) == 2


def test_flagstat_equals_single_machine(client, gen_bam):
    want = fasthts.flagstat(str(gen_bam))
    for region_bytes in [4096, 64 << 10, 8 << 20]:
        for tasks in [None, 1, 3]:
            assert fdask.flagstat(client, str(gen_bam), region_bytes=region_bytes, tasks=tasks) == want


def test_flagstat_stale_or_missing_index(client, gen_bam, tmp_path):
    want = fasthts.flagstat(str(gen_bam))
    bare = tmp_path / "bare.bam"
    shutil.copy(gen_bam, bare)
    assert fdask.flagstat(client, str(bare)) == want  # no index: one task
    # An index of another file, newer than the BAM: the coverage check
    # catches it and the file is counted sequentially.
    other = tmp_path / "other.bam"
    shutil.copy(os.path.join(os.path.dirname(__file__), "../data/small.bam"), other)
    fasthts.index(str(other), str(bare) + ".bai")
    assert fdask.flagstat(client, str(bare), region_bytes=4096) == want


def test_flagstat_bad_input(client, tmp_path):
    bad = tmp_path / "bad.bam"
    bad.write_text("not a bam\n")
    with pytest.raises(fasthts.Error, match="bad.bam"):
        fdask.flagstat(client, str(bad))


def test_count_kmers_equals_single_machine(client, fastq, fastq_gz, fastq_bgzf):
    k, x, n = 21, 200003, 4
    whole = fasthts.Countgraph(k, x, n)
    for f in [fastq, fastq_gz, fastq_bgzf]:
        whole.consume_seqfile(str(f))
    got = fdask.count_kmers(client, [str(fastq), str(fastq_gz), str(fastq_bgzf)], k, x, n, bigcount=False, parts_per_file=3)
    assert got.to_bytes() == whole.to_bytes()


def test_count_kmers_bigcount_tables_equal(client, fastq):
    k, x, n = 21, 200003, 4
    whole = fasthts.Countgraph(k, x, n, True)
    whole.consume_seqfile(str(fastq))
    got = fdask.count_kmers(client, [str(fastq)], k, x, n, bigcount=True, parts_per_file=2)
    seqs = open(fastq).read().split("\n")[1::4]
    # Counts up to 255 are exact; a k-mer that passes 255 only when the
    # parts are added reads 255 (see Countgraph.merge).
    above = 0
    for s in seqs[:200]:
        for g, w in zip(got.get_kmer_counts(s), whole.get_kmer_counts(s)):
            assert g == w or (w > 255 and g == 255)
            above += w > 255
    assert above > 0


SNP_CASES = [
    {},
    {"gzip": True},
    {"min_map_quality": 15, "min_base_quality": 20, "pseudo_snps": 100, "min_read_counts": [25, 0]},
    {"pseudo_snps": 7, "min_base_quality": 20},
    {"count_orphans": True, "ignore_overlaps": True},
    {"max_depth": 20},
]


@pytest.mark.parametrize("options", SNP_CASES)
def test_snp_pileup_equals_single_machine(client, golden, tmp_path, options):
    bams = [str(golden / "normal.bam"), str(golden / "tumour.bam")]
    gz = ".gz" if options.get("gzip") else ""
    want = tmp_path / f"one.csv{gz}"
    rows = fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(want), bams, **options)
    for tasks in [None, 1, 3, 10000]:  # 10000: a block per contig
        got = tmp_path / f"dask{tasks}.csv{gz}"
        assert fdask.snp_pileup(client, str(golden / "sites.vcf.gz"), str(got), bams, tasks=tasks, **options) == rows
        assert got.read_bytes() == want.read_bytes(), tasks


def test_snp_pileup_blocks_cut_at_contig_changes(golden, tmp_path):
    from fasthts import _fasthts

    blocks = _fasthts.snp_pileup_plan(str(golden / "sites.vcf"), str(tmp_path / "out.csv"), [str(golden / "normal.bam")], 10000)
    # sites.vcf: V, I, II, IV, chrX, MtDNA, chrM (V, IV, chrM are not in the BAM).
    assert [b[2] for b in blocks] == [-1, 0, 1, -1, 2, 3, -1]
    assert all(a < b for a, b, _ in blocks) and blocks[0][0] == 0
    assert all(blocks[i][1] == blocks[i + 1][0] for i in range(len(blocks) - 1))


def test_snp_pileup_refuses_to_overwrite(client, golden, tmp_path):
    out = tmp_path / "exists.csv"
    out.write_text("x")
    with pytest.raises(fasthts.Error, match="already exists"):
        fdask.snp_pileup(client, str(golden / "sites.vcf"), str(out), [str(golden / "normal.bam")])
    assert out.read_text() == "x"


@pytest.mark.parametrize("index", ["other references", "not describing", "stale"])
def test_flagstat_takes_the_clis_path_with_a_bad_index(client, cli, tmp_path, index):
    # dask.py decided on its own when to use the index (and checked no
    # reference count); it now asks the library, as the CLI does.
    from test_shared_decisions import DATA, SMALL, bai_without_reference, cli_run, cli_warnings, py_call

    bam = tmp_path / "x.bam"
    shutil.copy(SMALL, bam)
    if index == "other references":
        shutil.copy(DATA / "long_ref.bam.csi", str(bam) + ".csi")
    elif index == "not describing":
        (tmp_path / "x.bam.bai").write_bytes(bai_without_reference((DATA / "small.bam.bai").read_bytes(), 1))
    else:
        shutil.copy(DATA / "small.bam.bai", tmp_path / "x.bam.bai")
        old = bam.stat().st_mtime - 3600
        os.utime(tmp_path / "x.bam.bai", (old, old))
    c = cli_run(cli, "flagstat", bam)
    # The default plan, so that the reported region is the CLI's.
    stats, warned = py_call(fdask.flagstat, client, str(bam), tasks=3)
    assert stats.text() == c.stdout.decode()
    assert warned == cli_warnings(c.stderr)
    # A stale index (that describes the file) is used with htslib's warning.
    assert len(warned) == (0 if index == "other references" else 1)


def test_snp_pileup_refuses_what_the_cli_refuses(client, cli, golden, tmp_path):
    from test_shared_decisions import DATA, SMALL, cli_run

    foreign = tmp_path / "foreign.bam"
    shutil.copy(SMALL, foreign)
    shutil.copy(DATA / "long_ref.bam.csi", str(foreign) + ".csi")
    exists = tmp_path / "exists.csv"
    exists.write_text("x")
    # The BAM is checked before the output, as the CLI does.
    for bams, output in [([foreign], exists), ([golden / "normal.bam", tmp_path / "missing.bam"], tmp_path / "o.csv"), ([golden / "normal.bam"], exists)]:
        c = cli_run(cli, "snp-pileup", golden / "sites.vcf", output, *bams)
        # A file that cannot be opened is an OSError (FileNotFoundError), bad data fasthts.Error.
        with pytest.raises((fasthts.Error, OSError)) as e:
            fdask.snp_pileup(client, str(golden / "sites.vcf"), str(output), [str(b) for b in bams])
        message = e.value.strerror if isinstance(e.value, OSError) else str(e.value)
        assert c.stderr.decode().splitlines()[-1] == f"fasthts snp-pileup: {message}"
    assert not (tmp_path / "o.csv").exists() and exists.read_text() == "x"
