"""flagstat, index, sort and snp_pileup from Python equal the CLI's."""

import pickle
import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import require_tool, run

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"


@pytest.mark.parametrize("fmt", ["default", "json", "tsv"])
def test_flagstat_equals_cli(cli, gen_bam, fmt):
    for path in [gen_bam, SMALL]:
        want = run(cli, "flagstat", "-O", fmt, path).stdout.decode()
        for threads in [1, 2]:
            assert fasthts.flagstat(str(path), threads=threads).text(fmt) == want


def test_flagstat_sam_and_unindexed(cli, tmp_path):
    sam = tmp_path / "small.sam"
    sam.write_bytes(run(require_tool("samtools", "samtools"), "view", "-h", SMALL).stdout)
    assert str(fasthts.flagstat(str(sam))) == run(cli, "flagstat", sam).stdout.decode()
    bare = tmp_path / "bare.bam"
    bare.write_bytes(SMALL.read_bytes())  # no index beside it
    assert fasthts.flagstat(str(bare)) == fasthts.flagstat(str(SMALL))


def test_flagstat_object():
    s = fasthts.flagstat(str(SMALL))
    d = s.as_dict()
    assert d["passed"]["total"] + d["failed"]["total"] == sum(1 for _ in fasthts.BamFile(str(SMALL)).fetch())
    assert pickle.loads(pickle.dumps(s)) == s
    assert s + fasthts.FlagStat() == s
    assert sum([s, s]).as_dict()["passed"]["total"] == 2 * d["passed"]["total"]
    assert fasthts.FlagStat(s.values()) == s


@pytest.mark.parametrize("args,kw", [([], {}), (["-c"], {"csi": True}), (["-m", "12"], {"min_shift": 12})])
def test_index_equals_cli(cli, gen_bam, tmp_path, args, kw):
    a, b = tmp_path / "cli.idx", tmp_path / "py.idx"
    run(cli, "index", *args, gen_bam, a)
    assert fasthts.index(str(gen_bam), str(b), **kw) == str(b)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(
    "args,kw",
    [
        ([], {}),
        (["-n"], {"by_name": True}),
        (["-t", "RG"], {"tag": "RG"}),
        (["-M", "-K", "12"], {"minimiser": True, "kmer": 12}),
        (["-m", "1M", "--fan-in", "2"], {"memory": "1M", "fan_in": 2}),
    ],
)
def test_sort_equals_cli(cli, gen_bam, tmp_path, args, kw):
    a, b = tmp_path / "cli.bam", tmp_path / "py.bam"
    run(cli, "sort", "--no-PG", "-@", "2", *args, "-o", a, gen_bam)
    fasthts.sort(str(gen_bam), str(b), no_pg=True, threads=2, **kw)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("fmt", ["sam", "sam.gz"])
def test_sort_sam_output_equals_cli(cli, gen_bam, tmp_path, fmt):
    a, b = tmp_path / f"cli.{fmt}", tmp_path / f"py.{fmt}"
    run(cli, "sort", "--no-PG", "-@", "2", "-o", a, gen_bam)
    fasthts.sort(str(gen_bam), str(b), no_pg=True, threads=2)
    assert a.read_bytes() == b.read_bytes()
    c = tmp_path / "explicit.out"
    fasthts.sort(str(gen_bam), str(c), no_pg=True, threads=2, format=fmt)
    assert c.read_bytes() == a.read_bytes()
    with pytest.raises(ValueError, match="only supported with BAM"):
        fasthts.sort(str(gen_bam), str(tmp_path / "x.sam"), write_index=True)


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"by_name": True, "minimiser": True}, "exclude each other"),
        ({"tag": "RG", "template_coordinate": True}, "cannot be combined"),
        ({"fan_in": 1}, "at least 2"),
    ],
)
def test_sort_rejects_conflicting_options(gen_bam, tmp_path, kw, message):
    out = tmp_path / "out.bam"
    with pytest.raises(ValueError, match=message):
        fasthts.sort(str(gen_bam), str(out), **kw)
    assert not out.exists()


def test_sort_template_coordinate_needs_mate_cigars_as_the_cli(cli, gen_bam, tmp_path):
    # The generated BAM has pairs without MC tags: both refuse it alike.
    out = tmp_path / "tc.bam"
    argv = [str(cli), "sort", "--template-coordinate", "-o", str(tmp_path / "cli.bam"), str(gen_bam)]
    cli_run = subprocess.run(argv, capture_output=True)
    assert cli_run.returncode != 0 and b"no MC tag" in cli_run.stderr
    with pytest.raises(fasthts.Error, match="no MC tag"):
        fasthts.sort(str(gen_bam), str(out), template_coordinate=True)
    assert not out.exists()


def test_sort_bad_input_leaves_no_output(tmp_path):
    bad = tmp_path / "bad.bam"
    bad.write_bytes(b"not a bam at all\n")
    out = tmp_path / "out.bam"
    with pytest.raises(fasthts.Error):
        fasthts.sort(str(bad), str(out))
    assert not out.exists()


CASES = [
    ([], {}),
    (["-g"], {"gzip": True}),
    (["-q15", "-Q20", "-P100", "-r25,0"], {"min_map_quality": 15, "min_base_quality": 20, "pseudo_snps": 100, "min_read_counts": [25, 0]}),
    (["-A", "-x"], {"count_orphans": True, "ignore_overlaps": True}),
    (["-d", "20"], {"max_depth": 20}),
]


@pytest.mark.parametrize("args,kw", CASES)
def test_snp_pileup_equals_cli_and_golden(cli, golden, tmp_path, args, kw):
    gz = ".gz" if kw.get("gzip") else ""
    a, b = tmp_path / f"cli.csv{gz}", tmp_path / f"py.csv{gz}"
    bams = [golden / "normal.bam", golden / "tumour.bam"]
    run(cli, "snp-pileup", *args, golden / "sites.vcf.gz", a, *bams)
    rows = fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(b), [str(p) for p in bams], **kw)
    assert a.read_bytes() == b.read_bytes()
    text = subprocess.run(["gzip", "-dc", str(b)], capture_output=True, check=True).stdout if gz else b.read_bytes()
    assert rows == text.count(b"\n") - 1
    if not args:
        assert b.read_bytes() == (golden / "out/default.csv").read_bytes()


def test_snp_pileup_errors(golden, tmp_path):
    out = tmp_path / "o.csv"
    out.write_text("x")
    with pytest.raises(fasthts.Error, match="already exists"):
        fasthts.snp_pileup(str(golden / "sites.vcf"), str(out), [str(golden / "normal.bam")])
    with pytest.raises(FileNotFoundError, match="Failed to read VCF file: .*none.vcf"):
        fasthts.snp_pileup(str(tmp_path / "none.vcf"), str(tmp_path / "p.csv"), [str(golden / "normal.bam")])
    # A BAM without an index is indexed in memory (FACETS reads it from
    # its start); one not sorted by coordinate is refused, nothing written.
    bare = tmp_path / "n.bam"
    bare.write_bytes((golden / "normal.bam").read_bytes())
    fasthts.snp_pileup(str(golden / "sites.vcf.gz"), str(tmp_path / "n.csv"), [str(bare), str(golden / "tumour.bam")])
    assert (tmp_path / "n.csv").read_bytes() == (golden / "out/default.csv").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.bam", "n.csv", "o.csv"]
