"""fasthts.dask.sort and fasthts.dask.index on CRAM 2.1, 3.0 and 3.1 (the
golden normal.bam in small, multi-reference containers, so that splits
hold several): sorted output equal to samtools sort's of the same CRAM for
any number of splits and parts, the reference given, embedded or missing
(one line), CRAM and SAM output names refused, and a .crai equal to
samtools index's; also through `python -m fasthts.dask`."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

import fasthts
from conftest import require_module, require_tool

distributed = require_module("distributed")
import fasthts.dask as fdask  # noqa: E402

VERSIONS = ["2.1", "3.0", "3.1"]
RECORDS = 49410


pytestmark = pytest.mark.usefixtures("no_reference_lookup")


@pytest.fixture(scope="module")
def client(tmp_path_factory, no_reference_lookup):
    c = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        local_directory=str(tmp_path_factory.mktemp("workers")),
    )
    with distributed.Client(c) as cl:
        yield cl
    c.close()


def samtools() -> str:
    return require_tool("samtools", "samtools")


def run(*args) -> bytes:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True).stdout


def to_cram(source, out, ref, version="3.0", *options) -> str:
    """`source` as CRAM `version` in containers of 1,000 records."""
    opts = [x for o in ("seqs_per_slice=1000", f"version={version}", *options) for x in ("--output-fmt-option", o)]
    run(samtools(), "view", "-C", "-T", ref, *opts, "-o", out, source)
    return str(out)


@pytest.fixture(scope="module")
def crams(golden, tmp_path_factory) -> dict:
    """{version: CRAM} of normal.bam in name order (its containers hold
    several references), the reference found by @SQ UR too; "embedded":
    one with the reference in it."""
    d = tmp_path_factory.mktemp("dcram")
    by_name = d / "by-name.bam"
    run(samtools(), "sort", "-n", "-o", by_name, golden / "normal.bam")
    out = {v: to_cram(by_name, d / f"n{v}.cram", golden / "ref.fa", v) for v in VERSIONS}
    out["embedded"] = to_cram(by_name, d / "embedded.cram", golden / "ref.fa", "3.0", "embed_ref=1")
    return out


def view(path) -> bytes:
    return run(samtools(), "view", "-h", "--no-PG", path)


def samtools_sort(cram, ref, tmp_path, *flags) -> bytes:
    out = tmp_path / "samtools.bam"
    run(samtools(), "sort", "--no-PG", *flags, *(["--reference", ref] if ref else []), "-o", out, cram)
    return view(out)


@pytest.mark.parametrize("version", VERSIONS)
def test_sort_equals_samtools_sort(client, crams, golden, tmp_path, version):
    ref = str(golden / "ref.fa")
    for flags, options in [([], {}), (["-n"], {"by_name": True})]:
        want = samtools_sort(crams[version], ref, tmp_path, *flags)
        for parts, splits in [(None, None), (3, 5), (1, 1), (4, 9)]:
            out = tmp_path / "out.bam"
            timings: dict = {}
            n = fdask.sort(client, crams[version], out, reference=ref, parts=parts, splits=splits, no_pg=True, timings=timings, **options)
            assert n == RECORDS
            assert view(out) == want, f"{version} {options} parts={parts} splits={splits}"
            if splits:
                assert timings["splits"] == splits  # 50 containers: each split holds some
            assert sorted(os.listdir(tmp_path)) == ["out.bam", "samtools.bam"]


def test_embedded_reference_and_several_inputs(client, crams, golden, tmp_path):
    embedded = crams["embedded"]
    out = tmp_path / "out.bam"
    assert fdask.sort(client, embedded, out, parts=3, splits=4, no_pg=True, write_index=True) == RECORDS
    assert view(out) == samtools_sort(embedded, None, tmp_path)
    run(samtools(), "index", "-c", "-o", tmp_path / "want.csi", out)
    assert (tmp_path / "out.bam.csi").read_bytes() == (tmp_path / "want.csi").read_bytes()
    # Several CRAMs (and a BAM) sorted together: as samtools cat of them
    # as BAM, then sort; the first input's header.
    lanes = [crams["2.1"], crams["3.1"], str(golden / "normal.bam")]
    as_bam = []
    for k, lane in enumerate(lanes):
        as_bam.append(str(tmp_path / f"lane{k}.bam"))
        run(samtools(), "view", "--no-PG", "-b", "-T", golden / "ref.fa", "-o", as_bam[-1], lane)
    cat = tmp_path / "cat.bam"
    run(samtools(), "cat", "--no-PG", "-o", cat, *as_bam)
    assert fdask.sort(client, lanes, out, reference=golden / "ref.fa", parts=3, no_pg=True) == 3 * RECORDS
    assert view(out) == samtools_sort(cat, None, tmp_path)


def test_missing_reference_is_one_line(client, golden, tmp_path):
    # The reference named by @SQ UR is gone (REF_PATH finds nothing).
    fasta = tmp_path / "gone.fa"
    shutil.copy(golden / "ref.fa", fasta)
    cram = to_cram(golden / "normal.bam", tmp_path / "in.cram", fasta)
    for f in glob.glob(f"{fasta}*"):
        os.remove(f)
    out = tmp_path / "out.bam"
    with pytest.raises(fasthts.Error) as e:
        # One split: the first container's contig is the one named.
        fdask.sort(client, cram, out, splits=1)
    assert str(e.value) == f"{cram}: reference sequence of contig I not found (give the FASTA with --reference, or set REF_PATH/REF_CACHE)"
    with pytest.raises(fasthts.Error) as e:
        fdask.sort(client, cram, out, reference=fasta)
    assert str(e.value) == f"{fasta}: cannot read the reference FASTA (or its .fai)"
    # The same words as the one-machine sort's.
    assert sorted(os.listdir(tmp_path)) == ["in.cram"]


def test_cut_off_and_unterminated_crams(client, crams, golden, tmp_path):
    data = open(crams["3.0"], "rb").read()
    cut = tmp_path / "cut.cram"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(fasthts.Error) as e:
        fdask.sort(client, cut, tmp_path / "o.bam", reference=golden / "ref.fa")
    assert re.fullmatch(re.escape(f"{cut}: truncated CRAM data: the container at byte ") + r"\d+ is cut off", str(e.value)), str(e.value)
    # Without its EOF container (38 bytes in CRAM 3): sorted, with the CLI's warning.
    unterminated = tmp_path / "unterminated.cram"
    unterminated.write_bytes(data[:-38])
    out = tmp_path / "o.bam"
    with pytest.warns(UserWarning, match=re.escape(f"{unterminated}: EOF marker is absent. The input is probably truncated")):
        assert fdask.sort(client, unterminated, out, reference=golden / "ref.fa", splits=3, no_pg=True) == RECORDS
    assert view(out) == samtools_sort(crams["3.0"], golden / "ref.fa", tmp_path)


def test_cram_and_sam_outputs_are_refused(client, crams, golden, tmp_path):
    for name, what in [("out.cram", "CRAM"), ("out.sam", "SAM"), ("out.sam.gz", "SAM")]:
        with pytest.raises(fasthts.Error) as e:
            fdask.sort(client, crams["3.0"], tmp_path / name, reference=golden / "ref.fa")
        assert str(e.value).startswith(f"{tmp_path / name}: the distributed sort writes BAM, not {what}: ")
        assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def sorted_crams(crams, golden, tmp_path_factory) -> dict:
    """{version: coordinate-sorted CRAM} in containers of 1,000 records."""
    d = tmp_path_factory.mktemp("sorted-cram")
    by_coordinate = d / "sorted.bam"
    run(samtools(), "sort", "-o", by_coordinate, "--reference", golden / "ref.fa", crams["3.0"])
    out = {v: to_cram(by_coordinate, d / f"s{v}.cram", golden / "ref.fa", v) for v in VERSIONS}
    out["embedded"] = to_cram(by_coordinate, d / "embedded.cram", golden / "ref.fa", "3.0", "embed_ref=1")
    return out


@pytest.mark.parametrize("version", [*VERSIONS, "embedded"])
def test_index_equals_samtools_index(client, sorted_crams, tmp_path, version):
    cram = tmp_path / "in.cram"
    shutil.copy(sorted_crams[version], cram)
    want = tmp_path / "want.crai"
    run(samtools(), "index", "-o", want, cram)
    assert fdask.index(client, cram) == f"{cram}.crai"
    assert (tmp_path / "in.cram.crai").read_bytes() == want.read_bytes()
    # samtools writes a .crai whatever -c or -m ask for.
    assert fdask.index(client, cram, tmp_path / "o.crai", csi=True, min_shift=12) == str(tmp_path / "o.crai")
    assert (tmp_path / "o.crai").read_bytes() == want.read_bytes()


def test_index_of_an_unsorted_cram_is_one_line(client, crams, tmp_path):
    with pytest.raises(fasthts.Error) as e:
        fdask.index(client, crams["3.0"], tmp_path / "x.crai")
    assert str(e.value) == crams["3.0"] + ": file is not position sorted"
    assert os.listdir(tmp_path) == []


def test_command_line(crams, sorted_crams, golden, tmp_path):
    out = tmp_path / "out.bam"
    ref = str(golden / "ref.fa")
    dask = [sys.executable, "-m", "fasthts.dask"]
    p = subprocess.run([*dask, "sort", "--local-workers", "2", "--no-PG", "--reference", ref, "--splits", "3", "-o", str(out), crams["3.1"]], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    assert view(out) == samtools_sort(crams["3.1"], ref, tmp_path)
    p = subprocess.run([*dask, "sort", "--local-workers", "1", "--reference", str(tmp_path / "no.fa"), "-o", str(out), crams["3.1"]], capture_output=True)
    assert p.returncode == 1
    assert p.stderr.decode().endswith(f"python -m fasthts.dask sort: {tmp_path / 'no.fa'}: cannot read the reference FASTA (or its .fai)\n")
    cram = tmp_path / "in.cram"
    shutil.copy(sorted_crams["3.0"], cram)
    p = subprocess.run([*dask, "index", "--local-workers", "1", str(cram)], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    run(samtools(), "index", "-o", tmp_path / "want.crai", cram)
    assert (tmp_path / "in.cram.crai").read_bytes() == (tmp_path / "want.crai").read_bytes()
