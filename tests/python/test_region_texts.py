"""One region syntax, samtools', for Python as for the CLI (issue 33).

A region string given to Python (``AlignmentFile.fetch/count(region=)``,
``BamFile.fetch/columns/region``) is read as ``fasthts view`` reads a
region argument (``fasthts::region::Region::parse_query``, htslib's
``hts_parse_region``): ``samtools view -c FILE TEXT``, ``fasthts view -c
FILE TEXT`` and ``AlignmentFile(FILE).count(region=TEXT)`` give the same
count, for the same records as BAM, bgzipped SAM and CRAM, each read
through its index. A text samtools cannot read is skipped with a warning
(counting 0), by ``fasthts view`` too; Python refuses it, in the CLI's
words. Then the front ends, CLI, Python and dask, read the same regions
alike.
"""

import random
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import fasthts
from conftest import require_module, require_tool

# A reference whose name holds a colon: `chr:1` names it whole, `{chr:1}`
# quotes it, `chr:1:5-9` is a range of it.
REFERENCES = [("chr1", 12000), ("chr2", 6000), ("chr:1", 3000)]

TEXTS = [
    "chr1",
    "chr1:1000",
    "chr1:1,000-2,000",
    "chr1:500-",
    "chr1:-500",
    "chr1:0-5",
    "chr1:1-5",
    "{chr1}:5-9",
    "chr1:1k-2.5k",
    "chr2",
    "chr2:5999-6000",
    "chr:1",
    "{chr:1}:5-9",
    "chr:1:100-200",
    "*",
    ".",
]

# Texts samtools skips ("specifies an invalid region or unknown reference").
UNREADABLE = ["chr9", "chr1:10-5", "chr1:x", "{chr1"]


def sam_text(seed: int = 33) -> str:
    """Sorted SAM records: reads of many lengths (deletions and skips
    spanning the region bounds), unmapped reads placed by their mates, and
    unplaced reads at the end."""
    rng = random.Random(seed)
    lines = ["@HD\tVN:1.6\tSO:coordinate"] + [f"@SQ\tSN:{n}\tLN:{l}" for n, l in REFERENCES]
    records = []
    for tid, (name, length) in enumerate(REFERENCES):
        # Reads at a reference's first positions (regions `:0-5`, `:5-9`).
        for pos in (1, 3, 7, 12):
            records.append((tid, pos, f"s{tid}_{pos}\t0\t{name}\t{pos}\t60\t10M\t*\t0\t0\tACGTACGTAC\t*"))
        for i in range(length // 20):
            pos = rng.randrange(1, length - 300)
            q = rng.choice([20, 50, 100])
            cigar = rng.choice([f"{q}M", f"{q // 2}M{rng.randrange(1, 200)}D{q - q // 2}M", f"5S{q - 5}M", f"{q // 2}M400N{q - q // 2}M"])
            flag = rng.choice([0, 16, 0, 16, 4 | 8 | 1 | 64])
            if flag & 4:
                cigar = "*"
            seq = "".join(rng.choice("ACGT") for _ in range(q))
            records.append((tid, pos, f"r{tid}_{i}\t{flag}\t{name}\t{pos}\t{0 if flag & 4 else 60}\t{cigar}\t*\t0\t0\t{seq}\t*"))
    records.sort(key=lambda r: (r[0], r[1]))
    lines += [r for _, _, r in records]
    lines += [f"u{i}\t4\t*\t0\t0\t*\t*\t0\t0\tACGTACGTAC\t*" for i in range(37)]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def data(tmp_path_factory, cli):
    """The same records as BAM, bgzipped SAM (CSI) and CRAM, each indexed,
    and the FASTA the CRAM was made with."""
    samtools = require_tool("samtools", "samtools")
    bgzip = require_tool("bgzip", "tabix")
    d = tmp_path_factory.mktemp("region-texts")
    rng = random.Random(5)
    ref = d / "ref.fa"
    ref.write_text("".join(f">{n}\n" + "".join(rng.choice("ACGT") for _ in range(l)) + "\n" for n, l in REFERENCES))
    sam = d / "x.sam"
    sam.write_text(sam_text())
    bam = d / "x.bam"
    run(cli, "view", "-b", "-o", bam, sam)
    run(cli, "index", bam)
    gz = d / "x.sam.gz"
    with open(gz, "wb") as out:
        subprocess.run([bgzip, "-c", str(sam)], stdout=out, check=True)
    run(cli, "index", gz)
    cram = d / "x.cram"
    run(samtools, "view", "-C", "-T", ref, "-o", cram, bam)
    run(samtools, "index", cram)
    return {"bam": bam, "sam.gz": gz, "cram": cram, "ref": ref, "samtools": samtools}


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True)


def installed_fasthts() -> str:
    """The `fasthts` command this package installs (as test_command.py)."""
    p = Path(sysconfig.get_path("scripts")) / "fasthts"
    assert p.is_file(), f"{p}: the package's fasthts command is not installed (pip install .)"
    return str(p)


def view_count(prog: str, path: Path, text: str, ref: Path):
    """`prog view -c -T ref path text`: (count, stderr)."""
    r = subprocess.run([prog, "view", "-c", "-T", str(ref), str(path), text], capture_output=True, text=True)
    assert r.returncode == 0, (prog, text, r.stderr)
    return int(r.stdout), r.stderr


def opened(data, fmt: str) -> fasthts.AlignmentFile:
    return fasthts.AlignmentFile(str(data[fmt]), reference_filename=str(data["ref"]))


@pytest.mark.parametrize("fmt", ["bam", "sam.gz", "cram"])
def test_region_texts_count_as_samtools_and_the_cli(data, fmt):
    fasthts_cli = installed_fasthts()
    f = opened(data, fmt)
    counts = {}
    for text in TEXTS:
        theirs, _ = view_count(data["samtools"], data[fmt], text, data["ref"])
        ours, warned = view_count(fasthts_cli, data[fmt], text, data["ref"])
        assert warned == "", (fmt, text, warned)
        assert ours == theirs, (fmt, text)
        assert f.count(region=text) == theirs, (fmt, text)
        counts[text] = theirs
    # The data makes the texts tell apart what they should.
    assert 0 < counts["chr1:1,000-2,000"] < counts["chr1:1000"] < counts["chr1"]
    assert counts["chr1:0-5"] == counts["chr1:1-5"]
    assert counts["*"] == 37 and counts["."] == counts["chr1"] + counts["chr2"] + counts["chr:1"] + 37
    assert counts["chr1:0-5"] > 0 and counts["{chr:1}:5-9"] > 0 and counts["chr:1:100-200"] > 0
    assert f.count(region=".") == f.count(until_eof=True)


@pytest.mark.parametrize("fmt", ["bam", "sam.gz", "cram"])
def test_unreadable_texts_are_skipped_by_the_cli_and_refused_by_python(data, fmt):
    fasthts_cli = installed_fasthts()
    f = opened(data, fmt)
    for text in UNREADABLE:
        theirs, warned = view_count(data["samtools"], data[fmt], text, data["ref"])
        assert theirs == 0 and "specifies an invalid region or unknown reference" in warned, (text, warned)
        ours, warned = view_count(fasthts_cli, data[fmt], text, data["ref"])
        assert ours == 0 and f'region "{text}" specifies an invalid region or unknown reference' in warned, (text, warned)
        with pytest.raises(ValueError, match=f'^region "{text.replace("{", "[{]")}" specifies an invalid region or unknown reference$'):
            f.count(region=text)


@pytest.mark.parametrize("fmt", ["bam", "sam.gz", "cram"])
def test_bamfile_reads_region_texts_as_alignmentfile(data, fmt):
    # BamFile's rule (records starting in the region) over the same texts:
    # with overlap=True, AlignmentFile's; `.` and `*` as there.
    b = fasthts.BamFile(str(data[fmt]), reference=str(data["ref"]))
    f = opened(data, fmt)
    for text in TEXTS:
        overlapping = [a.query_name for a in f.fetch(region=text)]
        assert [r.name for r in b.fetch(text, overlap=True)] == overlapping, (fmt, text)
        starting = [r.name for r in b.fetch(text)]
        assert set(starting) <= set(overlapping), (fmt, text)
        assert len(b.columns(text)["pos"]) == len(starting), (fmt, text)
    assert b.region("chr1:0-5") == fasthts.Region(0, 0, 5)
    assert b.region("{chr:1}:5-9") == fasthts.Region(2, 4, 9)
    assert b.region("chr1:500-") == fasthts.Region(0, 499)
    assert len(b.columns(".")["pos"]) == len(b.columns()["pos"])


def test_each_front_end_reads_region_queries_alike(data, cli):
    """The CLI (`fasthts view`), Python (`AlignmentFile`, `BamFile`) and
    dask (the same calls on the workers of a local cluster, the files
    opened there by path) read the regions of a BAM, a bgzipped SAM and a
    CRAM file alike: one engine (`fasthts::region::indexed`) under all."""
    distributed = require_module("distributed")
    texts = ["chr1:1,000-2,000", "chr2", "{chr:1}:5-9", "chr1:0-5", "*", "."]

    def names(path, ref, text):
        return [a.query_name for a in fasthts.AlignmentFile(path, reference_filename=ref).fetch(region=text)]

    def starts(bam, text):
        return bam.columns(text)["pos"].tolist()

    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as client:
        for fmt in ["bam", "sam.gz", "cram"]:
            path, ref = str(data[fmt]), str(data["ref"])
            bam = fasthts.BamFile(path, reference=ref)
            for text in texts:
                lines = run(cli, "view", "-T", ref, path, text).stdout.decode().splitlines()
                want = [line.split("\t", 1)[0] for line in lines]
                assert want, (fmt, text)
                assert names(path, ref, text) == want, (fmt, text)
                assert [r.name for r in bam.fetch(text, overlap=True)] == want, (fmt, text)
                assert client.submit(names, path, ref, text, pure=False).result() == want, (fmt, text)
                # A BamFile goes to a worker by path (and index, reference).
                assert client.submit(starts, bam, text, pure=False).result() == starts(bam, text), (fmt, text)
    cluster.close()
