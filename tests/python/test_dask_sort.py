"""fasthts.dask.sort on LocalClusters of 2 and 3 worker processes, each
with a local directory of its own: the output's content equals
`samtools sort`'s for every order, for any number of splits and parts;
a killed worker or an interrupted run changes nothing / leaves nothing."""

import glob
import gzip
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import fasthts
from conftest import ROOT, require_module, require_tool, target_dir

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402


def cluster(n: int, tmp: str):
    """A LocalCluster of `n` worker processes, each with its own local
    directory (nothing shared but the files' filesystem)."""
    return distributed.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        local_directory=tempfile.mkdtemp(prefix="workers-", dir=tmp),
    )


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    c = cluster(2, str(tmp_path_factory.mktemp("cluster2")))
    with distributed.Client(c) as cl:
        yield cl
    c.close()


@pytest.fixture(scope="module")
def client3(tmp_path_factory):
    c = cluster(3, str(tmp_path_factory.mktemp("cluster3")))
    with distributed.Client(c) as cl:
        yield cl
    c.close()


def samtools() -> str:
    return require_tool("samtools", "samtools")


def generate(out, *args) -> str:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    tg = target_dir() / "release" / "fasthts-testgen"
    if tg.is_file():
        env["FASTHTS_TESTGEN"] = str(tg)
    subprocess.run(["bash", str(ROOT / "scripts/gen-bam.sh"), str(out), *args], check=True, env=env, capture_output=True)
    return str(out)


@pytest.fixture(scope="module")
def unsorted(tmp_path_factory) -> str:
    """41,280 records in name-hash order (htslib's blocks: each starts with a record)."""
    samtools()
    d = tmp_path_factory.mktemp("dsort")
    return generate(d / "unsorted.bam", "--seed", "21", "--reads", "20000", "--unsorted", "--unmapped-fraction", "0.2")


@pytest.fixture(scope="module")
def by_name(unsorted) -> str:
    """The same, name-sorted by fasthts, whose blocks end inside records."""
    out = unsorted.replace("unsorted.bam", "by-name.bam")
    fasthts.sort(unsorted, out, by_name=True, level=1)
    return out


@pytest.fixture(scope="module")
def with_mc(unsorted) -> str:
    """Primary records with MC tags (samtools fixmate -m): template-coordinate input."""
    out = unsorted.replace("unsorted.bam", "fixmate.bam")
    sh = f'{samtools()} view -u -F 0x900 "$1" | {samtools()} sort -n -u - | {samtools()} fixmate -m - "$2"'
    subprocess.run(["sh", "-c", sh, "sh", unsorted, out], check=True, capture_output=True)
    return out


def view(path) -> bytes:
    return subprocess.run([samtools(), "view", "-h", "--no-PG", str(path)], check=True, capture_output=True).stdout


def samtools_sort(inputs, tmp_path, *args) -> bytes:
    out = tmp_path / "samtools.bam"
    if len(inputs) == 1:
        subprocess.run([samtools(), "sort", "--no-PG", *args, "-o", str(out), inputs[0]], check=True, capture_output=True)
    else:
        cat = subprocess.Popen([samtools(), "cat", "--no-PG", *inputs], stdout=subprocess.PIPE)
        subprocess.run([samtools(), "sort", "--no-PG", *args, "-o", str(out), "-"], stdin=cat.stdout, check=True, capture_output=True)
        assert cat.wait() == 0
    return view(out)


ORDERS = [
    ({}, []),
    ({"by_name": True}, ["-n"]),
    ({"tag": "AS"}, ["-t", "AS"]),
    ({"tag": "RG", "by_name": True}, ["-t", "RG", "-n"]),
    ({"minimiser": True, "kmer": 12}, ["-M", "-K", "12"]),
]


@pytest.mark.parametrize("options,flags", ORDERS, ids=["coordinate", "name", "tag", "tag-name", "minimiser"])
def test_orders_equal_samtools_sort(client, unsorted, by_name, tmp_path, options, flags):
    for source in [unsorted, by_name]:
        want = samtools_sort([source], tmp_path, *flags)
        for parts, splits in [(None, None), (3, 5), (1, 1), (7, 2)]:
            out = tmp_path / "out.bam"
            n = fdask.sort(client, source, out, parts=parts, splits=splits, no_pg=True, **options)
            assert n == 41280
            assert view(out) == want, f"{source} {options} parts={parts} splits={splits}"
            assert os.listdir(tmp_path) == ["out.bam"] or sorted(os.listdir(tmp_path)) == ["out.bam", "samtools.bam"]


def test_template_coordinate_equals_samtools_sort(client, with_mc, tmp_path):
    want = samtools_sort([with_mc], tmp_path, "--template-coordinate")
    out = tmp_path / "out.bam"
    fdask.sort(client, with_mc, out, template_coordinate=True, parts=3, splits=4, no_pg=True)
    assert view(out) == want


def test_three_workers_and_the_pg_line(client3, by_name, tmp_path):
    want = samtools_sort([by_name], tmp_path)
    out = tmp_path / "out.bam"
    fdask.sort(client3, by_name, out, splits=4, parts=5)
    lines = view(out).split(b"\n")
    ours = [line for line in lines if line.startswith(b"@PG")][-1]
    assert ours.startswith(b"@PG\tID:fasthts") and b"\tCL:fasthts.dask.sort(" in ours
    assert b"\n".join(line for line in lines if line != ours) == want


def test_several_inputs_equal_cat_then_sort(client, unsorted, tmp_path):
    # Three lanes with one header: the records cut into thirds.
    sam = subprocess.run([samtools(), "view", unsorted], check=True, capture_output=True).stdout.split(b"\n")[:-1]
    header = subprocess.run([samtools(), "view", "-H", "--no-PG", unsorted], check=True, capture_output=True).stdout
    lanes = []
    for k in range(3):
        lane = tmp_path / f"lane{k}.bam"
        part = sam[k * len(sam) // 3 : (k + 1) * len(sam) // 3]
        subprocess.run([samtools(), "view", "--no-PG", "-b", "-o", str(lane), "-"], input=header + b"\n".join(part) + b"\n", check=True)
        lanes.append(str(lane))
    for flags, options in [([], {}), (["-n"], {"by_name": True})]:
        want = samtools_sort(lanes, tmp_path, *flags)
        out = tmp_path / "out.bam"
        assert fdask.sort(client, lanes, out, parts=3, no_pg=True, **options) == len(sam)
        assert view(out) == want


def test_write_index_equals_samtools_index(client, by_name, tmp_path):
    for name, index_name, flag in [("out.bam", "out.bam.csi", "-c"), (f"o.bam##idx##{tmp_path}/o.bai", "o.bai", "-b")]:
        fdask.sort(client, by_name, str(tmp_path / name), write_index=True, parts=3)
        data = tmp_path / name.split("##")[0]
        ref = tmp_path / "ref.index"
        subprocess.run([samtools(), "index", flag, "-o", str(ref), str(data)], check=True)
        assert (tmp_path / index_name).read_bytes() == ref.read_bytes(), name


def test_killed_worker_gives_the_same_output(unsorted, tmp_path):
    """A worker process dies as it starts its first shuffle task; dask
    runs the task again elsewhere, and the output is unchanged."""
    want = samtools_sort([unsorted], tmp_path)
    marker = tmp_path / "killed"

    class KillOnce(distributed.WorkerPlugin):
        def transition(self, key, start, finish, **kwargs):
            if finish == "executing" and "dask_sort_shuffle" in str(key) and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)

    with cluster(2, str(tmp_path)) as c, distributed.Client(c) as cl:
        cl.register_plugin(KillOnce())
        out = tmp_path / "out.bam"
        fdask.sort(cl, unsorted, out, splits=4, parts=3, no_pg=True)
        assert marker.exists()
        assert view(out) == want
    assert not glob.glob(str(tmp_path / ".out.bam.fasthts-dask-*"))


def test_interrupted_run_leaves_nothing_behind(unsorted, tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time, fasthts.dask
        from dask.distributed import Client, LocalCluster
        if __name__ == "__main__":
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=':0', local_directory={str(tmp_path / 'w')!r}) as c, Client(c) as cl:
                print("ready", flush=True)
                fasthts.dask.sort(cl, [{unsorted!r}] * 10, {str(tmp_path / 'out.bam')!r}, splits=4, parts=4)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert p.stdout.readline() == b"ready\n"
    deadline = time.time() + 300
    while not glob.glob(str(tmp_path / ".out.bam.fasthts-dask-*/split*")):
        assert time.time() < deadline and p.poll() is None, p.stderr.read().decode()
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and b"KeyboardInterrupt" in err, err.decode()
    assert not os.path.exists(tmp_path / "out.bam")
    assert not glob.glob(str(tmp_path / ".out.bam*")), os.listdir(tmp_path)


def test_bad_inputs(client, unsorted, tmp_path):
    sam = tmp_path / "x.sam"
    sam.write_bytes(subprocess.run([samtools(), "view", "-h", unsorted], check=True, capture_output=True).stdout)
    with pytest.raises(fasthts.Error, match="x.sam: the distributed sort reads BGZF-compressed BAM or CRAM files"):
        fdask.sort(client, str(sam), tmp_path / "o.bam")
    with pytest.raises(OSError, match="unsorted.bam: output is the same file as input"):
        fdask.sort(client, unsorted, unsorted)
    other = str(ROOT / "tests/data/small.bam")
    with pytest.raises(fasthts.Error, match="small.bam: its reference sequences differ"):
        fdask.sort(client, [unsorted, other], tmp_path / "o.bam")
    with pytest.raises(FileNotFoundError, match="missing.bam"):
        fdask.sort(client, tmp_path / "missing.bam", tmp_path / "o.bam")
    with pytest.raises(TypeError, match="inputs must be a path or a list of paths"):
        fdask.sort(client, 42, tmp_path / "o.bam")
    assert sorted(os.listdir(tmp_path)) == ["x.sam"]


def test_header_only_input(client, tmp_path):
    empty = str(ROOT / "tests/data/header_only.bam")
    want = samtools_sort([empty], tmp_path)
    out = tmp_path / "out.bam"
    assert fdask.sort(client, empty, out, no_pg=True, write_index=True) == 0
    assert view(out) == want
    subprocess.run([samtools(), "index", "-c", "-o", str(tmp_path / "ref.csi"), str(out)], check=True)
    # Content: this tiny CSI is where the bundled libdeflate and samtools'
    # compress the same bytes differently (the formats issue's "CSI bytes").
    assert gzip.decompress((tmp_path / "out.bam.csi").read_bytes()) == gzip.decompress((tmp_path / "ref.csi").read_bytes())
    assert fdask.index(client, out, tmp_path / "o.bai") == str(tmp_path / "o.bai")
    subprocess.run([samtools(), "index", "-o", str(tmp_path / "ref.bai"), str(out)], check=True)
    assert (tmp_path / "o.bai").read_bytes() == (tmp_path / "ref.bai").read_bytes()


def test_splits_after_one_that_read_to_the_end_hold_nothing():
    """_chain, the check that splits tile each input: once a split has read
    to the end of its input, the later splits of that input are skipped,
    whatever their reports (None: no first record could be guessed in
    them). Before, the second such split looked at the first's report,
    None: TypeError: 'NoneType' object is not subscriptable."""
    from fasthts._dask_sort import _chain

    plan = [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 0, 0), (1, 1, 0)]
    # reports: (entry, exit); exit None: read to the end of the input.
    reports = [(0, None), None, None, (0, 5), (5, None)]
    reran = []
    used = _chain(plan, ["a.bam", "b.bam"], reports, lambda r: r[0], lambda r: r[1], lambda j, at: reran.append(j))
    assert used == [0, 3, 4] and reran == []


def test_files_with_fewer_records_than_splits(client3, unsorted, tmp_path):
    """A 2-record BAM (and a 1-record one) on 3 workers, cut into more
    splits than it has records, both orders: the splits after the one that
    read to the end hold nothing (a TypeError in _chain before)."""
    for n in [1, 2, 5]:
        small = tmp_path / f"small{n}.bam"
        header = subprocess.run([samtools(), "view", "-H", "--no-PG", unsorted], check=True, capture_output=True).stdout
        lines = subprocess.run([samtools(), "view", unsorted], check=True, capture_output=True).stdout.split(b"\n")[:n]
        sam = header + b"".join(line + b"\n" for line in lines)
        subprocess.run([samtools(), "view", "--no-PG", "-b", "-o", str(small), "-"], input=sam, check=True, capture_output=True)
        for options, flags in [({}, []), ({"by_name": True}, ["-n"])]:
            want = samtools_sort([str(small)], tmp_path, *flags)
            out = tmp_path / "out.bam"
            for splits in [None, 3, 8]:
                assert fdask.sort(client3, small, out, parts=3, splits=splits, no_pg=True, **options) == n
                assert view(out) == want, f"{n} records {options} splits={splits}"


@pytest.fixture(scope="module")
def coordinate_sorted(by_name, tmp_path_factory) -> list:
    """Coordinate-sorted BAMs: by fasthts (blocks end inside records), by
    samtools (blocks start with records), and a fixture with a long reference."""
    d = tmp_path_factory.mktemp("sorted")
    ours, theirs = str(d / "ours.bam"), str(d / "theirs.bam")
    fasthts.sort(by_name, ours, level=1)
    subprocess.run([samtools(), "sort", "-o", theirs, by_name], check=True)
    return [ours, theirs, str(ROOT / "tests/data/long_ref.bam"), str(ROOT / "tests/data/huge_record.bam")]


def test_index_equals_samtools_index(client3, coordinate_sorted, tmp_path):
    for bam in coordinate_sorted:
        for flags, options in [([], {}), (["-c"], {"csi": True}), (["-m", "12"], {"min_shift": 12})]:
            ref = tmp_path / "ref.index"
            done = subprocess.run([samtools(), "index", *flags, "-o", str(ref), bam], capture_output=True)
            for splits in [None, 1, 5, 23]:
                out = tmp_path / "out.index"
                if done.returncode != 0:  # e.g. a reference too long for a BAI
                    with pytest.raises(fasthts.Error):
                        fdask.index(client3, bam, out, splits=splits, **options)
                    continue
                assert fdask.index(client3, bam, out, splits=splits, **options) == str(out)
                assert out.read_bytes() == ref.read_bytes(), f"{bam} {flags} splits={splits}"


def test_index_beside_the_bam_and_bad_input(client, coordinate_sorted, tmp_path):
    bam = tmp_path / "x.bam"
    bam.write_bytes(open(coordinate_sorted[0], "rb").read())
    assert fdask.index(client, bam) == str(bam) + ".bai"
    assert fdask.index(client, bam, csi=True) == str(bam) + ".csi"
    with pytest.raises(fasthts.Error, match="unsorted.bam: Chromosome blocks not continuous"):
        fdask.index(client, ROOT / "tests/data/unsorted.bam", tmp_path / "u.bai")
    assert not (tmp_path / "u.bai").exists()
    with pytest.raises(FileNotFoundError):
        fdask.index(client, tmp_path / "missing.bam")


def test_command_line(unsorted, tmp_path):
    out = tmp_path / "out.bam"
    run = [sys.executable, "-m", "fasthts.dask", "sort", "--local-workers", "2", "--no-PG", "-n", "-o", str(out)]
    p = subprocess.run([*run, unsorted, unsorted], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    assert view(out) == samtools_sort([unsorted, unsorted], tmp_path, "-n")
    p = subprocess.run([*run, str(tmp_path / "missing.bam")], capture_output=True)
    assert p.returncode == 1
    assert p.stderr.decode().endswith("python -m fasthts.dask sort: " + str(tmp_path / "missing.bam") + ": No such file or directory\n")
    p = subprocess.run([sys.executable, "-m", "fasthts.dask", "sort", "-o", str(out), unsorted], capture_output=True)
    assert p.returncode == 2 and b"one of the arguments --scheduler --local-workers is required" in p.stderr


def test_command_line_index(coordinate_sorted, tmp_path):
    out = tmp_path / "o.csi"
    run = [sys.executable, "-m", "fasthts.dask", "index", "--local-workers", "2", "-c", "--splits", "3"]
    p = subprocess.run([*run, coordinate_sorted[0], str(out)], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    subprocess.run([samtools(), "index", "-c", "-o", str(tmp_path / "ref.csi"), coordinate_sorted[0]], check=True)
    assert out.read_bytes() == (tmp_path / "ref.csi").read_bytes()
    p = subprocess.run([*run, str(ROOT / "tests/data/unsorted.bam"), str(out)], capture_output=True)
    assert p.returncode == 1 and p.stderr.decode().endswith("unsorted.bam: Chromosome blocks not continuous\n")


def test_bam_without_eof_block_is_sorted_with_the_cli_warning(client, unsorted, tmp_path):
    bam = tmp_path / "unterminated.bam"
    bam.write_bytes(open(unsorted, "rb").read()[:-28])
    out = tmp_path / "out.bam"
    with pytest.warns(UserWarning, match=f"{bam}: EOF marker is absent. The input is probably truncated"):
        assert fdask.sort(client, bam, out, splits=3, parts=2, no_pg=True) == 41280
    assert view(out) == samtools_sort([unsorted], tmp_path)
