"""fasthts.dask on http:// URLs, with workers that have no copy of the
input: a LocalCluster of 2 worker processes started in an empty working
directory (and an empty local_directory), the inputs served by nginx on
loopback (the `nginx` fixture) and their local copies deleted once the
one-machine results are known. Results equal those of one machine on the
local files."""

import os
import shutil

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
