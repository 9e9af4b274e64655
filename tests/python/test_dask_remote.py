"""fasthts.dask on http:// URLs, with workers that have no copy of the
input: a LocalCluster of 2 worker processes started in an empty working
directory (and an empty local_directory), the inputs served by nginx on
loopback (the `nginx` fixture) and their local copies deleted once the
one-machine results are known. Results equal those of one machine on the
local files; the sort without a shared filesystem also on local paths."""

import os
import shutil
import subprocess

import pytest

import fasthts
from conftest import ROOT, require_module, require_tool

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


@pytest.fixture(scope="module")
def unsorted_bam(tmp_path_factory):
    """An unsorted BAM of 8,000 records, with unmapped ones (scripts/gen-bam.sh)."""
    require_tool("samtools", "samtools")
    out = tmp_path_factory.mktemp("sort-input") / "unsorted.bam"
    env = dict(os.environ)
    subprocess.run(
        ["bash", str(ROOT / "scripts/gen-bam.sh"), str(out), "--seed", "5", "--reads", "4000", "--unsorted", "--unmapped-fraction", "0.2"],
        check=True,
        env=env,
        capture_output=True,
    )
    return out


def view(path) -> bytes:
    """The records and header as SAM (`samtools view -h --no-PG`)."""
    samtools = require_tool("samtools", "samtools")
    return subprocess.run([samtools, "view", "-h", "--no-PG", str(path)], check=True, capture_output=True).stdout


def one_machine_sort(source, tmp_path, **options) -> bytes:
    """The content (`view`) of `fasthts.sort` on one machine (of several
    inputs: `samtools cat` first, as the dask sort joins them)."""
    want = tmp_path / "one-machine.bam"
    if isinstance(source, list):
        joined = tmp_path / "joined.bam"
        subprocess.run([require_tool("samtools", "samtools"), "cat", "--no-PG", "-o", str(joined), *map(str, source)], check=True)
        fasthts.sort(str(joined), str(want), no_pg=True, **options)
        joined.unlink()
    else:
        fasthts.sort(str(source), str(want), no_pg=True, **options)
    content = view(want)
    want.unlink()
    return content


def shared_filesystem_sort(client, source, tmp_path, **options):
    """The bytes of the dask sort through a shared filesystem (local
    inputs), with its CSI (None for an order that has none)."""
    out, csi = tmp_path / "shared.bam", tmp_path / "shared.bam.csi"
    fdask.sort(client, source, str(out), no_pg=True, write_index=not options.get("by_name"), shared_filesystem=True, **options)
    got = out.read_bytes(), csi.read_bytes() if csi.exists() else None
    out.unlink()
    csi.unlink(missing_ok=True)
    return got


def samtools_index(bam, tmp_path) -> bytes:
    ref = tmp_path / "samtools.csi"
    subprocess.run([require_tool("samtools", "samtools"), "index", "-c", "-o", str(ref), str(bam)], check=True)
    got = ref.read_bytes()
    ref.unlink()
    return got


@pytest.mark.parametrize("options", [{}, {"by_name": True}], ids=["coordinate", "name"])
def test_sort_of_a_url_equals_one_machine(client, nginx, unsorted_bam, tmp_path, options):
    """A URL input, workers without a copy and no shared filesystem: the
    content of the one-machine sort, the bytes (and index) of the dask sort
    through a shared filesystem, and samtools' index of the output."""
    want = one_machine_sort(unsorted_bam, tmp_path, **options)
    records = int(subprocess.run([require_tool("samtools", "samtools"), "view", "-c", str(unsorted_bam)], check=True, capture_output=True).stdout)
    url = nginx.serve(unsorted_bam, "sort-unsorted.bam")
    size = os.path.getsize(unsorted_bam)
    for parts, splits in [(None, None), (3, 5), (1, 1)]:
        shared, shared_index = shared_filesystem_sort(client, str(unsorted_bam), tmp_path, parts=parts, splits=splits, **options)
        out = tmp_path / "out.bam"
        before = len(nginx.requests("sort-unsorted.bam"))
        indexed = shared_index is not None
        n = fdask.sort(client, url, str(out), parts=parts, splits=splits, no_pg=True, write_index=indexed, **options)
        assert n == records
        assert out.read_bytes() == shared, (parts, splits)
        assert view(out) == want
        if indexed:
            assert (tmp_path / "out.bam.csi").read_bytes() == shared_index == samtools_index(out, tmp_path), (parts, splits)
        # Only the output and its index are left: no work directory.
        assert sorted(os.listdir(tmp_path)) == ["out.bam", "out.bam.csi"][: 1 + indexed]
        fetched = nginx.requests("sort-unsorted.bam")[before:]
        assert fetched and all(status == 206 and sent < size for status, sent in fetched), fetched


def test_sort_of_two_urls_equals_one_machine(client, nginx, unsorted_bam, tmp_path):
    # Two lanes with one header: the records cut in two.
    samtools = require_tool("samtools", "samtools")
    sam = subprocess.run([samtools, "view", str(unsorted_bam)], check=True, capture_output=True).stdout.split(b"\n")[:-1]
    header = subprocess.run([samtools, "view", "-H", "--no-PG", str(unsorted_bam)], check=True, capture_output=True).stdout
    lanes = []
    for k in range(2):
        lane = tmp_path / f"lane{k}.bam"
        part = sam[k * len(sam) // 2 : (k + 1) * len(sam) // 2]
        subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(lane), "-"], input=header + b"\n".join(part) + b"\n", check=True)
        lanes.append(lane)
    want = one_machine_sort(lanes, tmp_path)
    shared, shared_index = shared_filesystem_sort(client, [str(x) for x in lanes], tmp_path, parts=3, splits=2)
    urls = [nginx.serve(lane, f"sort-{lane.name}") for lane in lanes]
    for lane in lanes:
        lane.unlink()
    out = tmp_path / "out.bam"
    assert fdask.sort(client, urls, str(out), parts=3, splits=2, no_pg=True, write_index=True) == len(sam)
    assert out.read_bytes() == shared
    assert (tmp_path / "out.bam.csi").read_bytes() == shared_index == samtools_index(out, tmp_path)
    assert view(out) == want


def test_sort_without_shared_filesystem_on_local_paths(client, unsorted_bam, tmp_path):
    """`shared_filesystem=False` on local inputs: the bytes of the dask
    sort through the shared filesystem, the one-machine sort's content."""
    want = one_machine_sort(unsorted_bam, tmp_path, by_name=True)
    for parts, splits in [(3, 4), (5, 2)]:
        shared, shared_index = shared_filesystem_sort(client, str(unsorted_bam), tmp_path, parts=parts, splits=splits, by_name=True)
        out = tmp_path / "out.bam"
        fdask.sort(client, str(unsorted_bam), str(out), parts=parts, splits=splits, no_pg=True, by_name=True, shared_filesystem=False)
        assert out.read_bytes() == shared
        assert view(out) == want
    # BAI, named with the data.
    for name, shared_filesystem in [("b", False), ("c", True)]:
        target = f"{tmp_path}/{name}.bam##idx##{tmp_path}/{name}.bai"
        fdask.sort(client, str(unsorted_bam), target, write_index=True, no_pg=True, parts=2, shared_filesystem=shared_filesystem)
    assert (tmp_path / "b.bam").read_bytes() == (tmp_path / "c.bam").read_bytes()
    assert (tmp_path / "b.bai").read_bytes() == (tmp_path / "c.bai").read_bytes()


def test_sort_of_a_missing_url_fails_in_one_line(client, nginx, tmp_path):
    url = nginx.url("sort-missing.bam")
    with pytest.raises(FileNotFoundError, match="sort-missing.bam") as e:
        fdask.sort(client, url, str(tmp_path / "out.bam"))
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == []


def test_command_line_sorts_a_url_and_refuses_to_index_one(nginx, unsorted_bam, tmp_path):
    import sys

    want = one_machine_sort(unsorted_bam, tmp_path)
    url = nginx.serve(unsorted_bam, "cli-sort.bam")
    base = [sys.executable, "-m", "fasthts.dask"]
    out = tmp_path / "out.bam"
    subprocess.run([*base, "sort", "--local-workers", "2", "-q", "--no-PG", "-o", str(out), url], check=True, cwd=tmp_path)
    assert view(out) == want
    done = subprocess.run([*base, "index", "--local-workers", "1", "-q", url], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "cli-sort.bam" in done.stderr and "index a copy" in done.stderr, done.stderr
