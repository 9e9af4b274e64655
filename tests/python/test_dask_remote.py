"""fasthts.dask on http:// URLs, with workers that have no copy of the
input: a LocalCluster of 2 worker processes started in an empty working
directory (and an empty local_directory), the inputs served by nginx on
loopback (the `nginx` fixture) and their local copies deleted once the
one-machine results are known. Results equal those of one machine on the
local files."""

import os
import shutil
import subprocess

import pytest

import fasthts
from conftest import require_module

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402
from fasthts import _fasthts  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    # The worker processes start in (and inherit) an empty directory.
    empty = tmp_path_factory.mktemp("worker-cwd")
    was = os.getcwd()
    os.chdir(empty)
    try:
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            local_directory=str(tmp_path_factory.mktemp("worker-local")),
        )
        c = distributed.Client(cluster)
    finally:
        os.chdir(was)
    yield c
    c.close()
    cluster.close()
    assert os.listdir(empty) == []


def test_flagstat_of_a_url_is_planned_and_read_by_ranges(client, nginx, gen_bam, tmp_path):
    local = tmp_path / "gen.bam"
    shutil.copy(gen_bam, local)
    shutil.copy(str(gen_bam) + ".bai", str(local) + ".bai")
    want = fasthts.flagstat(str(local))
    url = nginx.serve(local, "dask-flagstat.bam")
    nginx.serve(str(local) + ".bai", "dask-flagstat.bam.bai")
    local.unlink()
    os.unlink(str(local) + ".bai")
    # The plan is made on the client, from the index.
    regions = _fasthts.flagstat_plan(url, 4096)
    assert regions is not None and len(regions) > 3
    size = os.path.getsize(gen_bam)
    for region_bytes, tasks in [(4096, None), (4096, 3), (64 << 10, 1), (None, None)]:
        before = len(nginx.requests("dask-flagstat.bam"))
        assert fdask.flagstat(client, url, region_bytes=region_bytes, tasks=tasks) == want
        fetched = nginx.requests("dask-flagstat.bam")[before:]
        assert all(status == 206 for status, _ in fetched)
        # Ranges, not the whole file streamed by each task.
        assert all(n < size for _, n in fetched), fetched
    assert fasthts.flagstat(url) == want


def test_count_kmers_of_urls(client, nginx, fastq, fastq_gz, fastq_bgzf, tmp_path):
    k, x, n = 21, 200003, 4
    whole = fasthts.Countgraph(k, x, n, False)
    for f in [fastq, fastq_gz, fastq_bgzf]:
        whole.consume_seqfile(str(f))
    urls = []
    for f in [fastq, fastq_gz, fastq_bgzf]:
        copy = tmp_path / os.path.basename(f)
        shutil.copy(f, copy)
        urls.append(nginx.serve(copy, "dask-kmers-" + copy.name))
        copy.unlink()
    # A plain file is cut into parts on the client, each fetched alone.
    assert len(_fasthts.seqfile_split(urls[0], 3)) == 3
    got = fdask.count_kmers(client, urls, k, x, n, bigcount=False, parts_per_file=3)
    assert got.to_bytes() == whole.to_bytes()
    one = fasthts.Countgraph(k, x, n, False)
    for u in urls:
        one.consume_seqfile(u)
    assert one.to_bytes() == whole.to_bytes()


def test_missing_url_fails_in_one_line(client, nginx):
    url = nginx.url("dask-missing.bam")
    with pytest.raises(FileNotFoundError, match="dask-missing.bam"):
        fdask.flagstat(client, url)


SNP_OPTIONS = [{}, {"pseudo_snps": 50, "min_base_quality": 20}, {"gzip": True, "max_depth": 20}]


@pytest.mark.parametrize("options", SNP_OPTIONS, ids=["default", "pseudo", "gzip-depth"])
def test_snp_pileup_of_url_bams_and_vcf(client, nginx, golden, tmp_path, options):
    """Several BAMs and the VCF over HTTP, the plan on the client, each
    block on a worker with no copy: the bytes of the one-machine run on the
    local files."""
    gz = ".gz" if options.get("gzip") else ""
    local = [str(golden / "normal.bam"), str(golden / "tumour.bam")]
    want = tmp_path / f"one.csv{gz}"
    rows = fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(want), local, **options)
    for f in ["normal.bam.bai", "tumour.bam.bai"]:
        nginx.serve(golden / f, f"snp-{f}")
    bams = [nginx.serve(golden / f, f"snp-{f}") for f in ["normal.bam", "tumour.bam"]]
    vcf = nginx.serve(golden / "sites.vcf.gz", "snp-sites.vcf.gz")
    for tasks in [None, 1, 10000]:  # 10000: a block per contig
        got = tmp_path / f"dask{tasks}.csv{gz}"
        before = {b: len(nginx.requests(f"snp-{b}")) for b in ["normal.bam", "tumour.bam"]}
        assert fdask.snp_pileup(client, vcf, str(got), bams, tasks=tasks, **options) == rows
        assert got.read_bytes() == want.read_bytes(), tasks
        for b, n in before.items():
            fetched = nginx.requests(f"snp-{b}")[n:]
            # Byte ranges, never the whole file.
            assert fetched and all(status == 206 and sent < os.path.getsize(golden / b) for status, sent in fetched), fetched


def test_snp_pileup_block_fetches_only_its_part(nginx, golden, tmp_path):
    """A block of the last contig's sites (MtDNA: a fifth of the reads)
    fetches that contig's part of each BAM, not the contigs before it nor
    the rest of the file."""
    for f in ["normal.bam", "normal.bam.bai"]:
        nginx.serve(golden / f, f"block-{f}")
    bam, vcf = nginx.url("block-normal.bam"), str(golden / "sites.vcf")
    blocks = _fasthts.snp_pileup_plan(vcf, str(tmp_path / "out.csv"), [bam], 10000)
    names = _fasthts.snp_pileup_plan(vcf, str(tmp_path / "out.csv"), [str(golden / "normal.bam")], 10000)
    assert blocks == names
    (first, end, tid), = [b for b in blocks if b[2] == 3]  # MtDNA
    local, _ = _fasthts.snp_pileup_block(vcf, [str(golden / "normal.bam")], first, end, None, threads=1)
    before = len(nginx.requests("block-normal.bam"))
    rows, _ = _fasthts.snp_pileup_block(vcf, [bam], first, end, None, threads=1)
    assert rows == local and rows.count(b"\n") > 10
    fetched = sum(sent for _, sent in nginx.requests("block-normal.bam")[before:])
    size = os.path.getsize(golden / "normal.bam")
    # The header, the EOF block and MtDNA's records (about 19% of the
    # file), with a few blocks around them.
    assert fetched < size * 0.35, (fetched, size)


def test_snp_pileup_cli_reads_urls(nginx, cli, golden, tmp_path):
    bams = ["normal.bam", "tumour.bam"]
    for f in bams + [b + ".bai" for b in bams]:
        nginx.serve(golden / f, f"cli-{f}")
    vcf = nginx.serve(golden / "sites.vcf", "cli-sites.vcf")
    args = ["snp-pileup", "-P", "50", "-q", "15"]
    subprocess.run([cli, *args, str(golden / "sites.vcf"), str(tmp_path / "local.csv"), *[str(golden / b) for b in bams]], check=True)
    subprocess.run([cli, *args, vcf, str(tmp_path / "url.csv"), *[nginx.url(f"cli-{b}") for b in bams]], check=True)
    assert (tmp_path / "url.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
