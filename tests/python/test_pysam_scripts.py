"""Typical pysam scripts ported by changing one line, `import pysam` to
`import fasthts as pysam`: each runs with either library on the same
inputs and must leave the same files (BAMs byte for byte: pysam's output is
deterministic and fasthts compresses as pysam's htslib does; text
outputs equal). Issue 37's list: split by read group, filter and write, tag
and write, downsample, mate lookup, per-base allele counts with pileup,
coverage arrays, header rewrite."""

import subprocess
import sys
from pathlib import Path

import pytest

import fasthts
from conftest import require, require_module

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"
NORMAL = ROOT / "tests/data/golden/snp-pileup/normal.bam"

require_module("pysam")

#: Each script reads `sys.argv[1]` (a BAM with its index) and writes into
#: the directory `sys.argv[2]`; the first line is what a port changes.
SCRIPTS = {
    "split_by_read_group": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f:
    groups = [rg["ID"] for rg in f.header.to_dict().get("RG", [])] or ["none"]
    outs = {g: pysam.AlignmentFile(f"{out}/{g}.bam", "wb", template=f) for g in groups}
    for read in f.fetch(until_eof=True):
        group = read.get_tag("RG") if read.has_tag("RG") else "none"
        outs.get(group, outs[groups[0]]).write(read)
    for o in outs.values():
        o.close()
""",
    "filter_and_write": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
kept = 0
with pysam.AlignmentFile(bam, "rb") as f, pysam.AlignmentFile(out + "/filtered.bam", "wb", template=f) as o:
    for read in f.fetch():
        if read.mapping_quality >= 20 and read.is_proper_pair and not read.is_duplicate and not read.is_secondary:
            kept += 1
            o.write(read)
print(kept, file=open(out + "/kept.txt", "w"))
""",
    "tag_and_write": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f, pysam.AlignmentFile(out + "/tagged.bam", "wb", template=f) as o:
    for read in f.fetch(f.references[0]):
        read.set_tag("XL", read.query_length)
        read.set_tag("XR", "reverse" if read.is_reverse else "forward")
        read.set_tag("XF", read.mapping_quality / 2.0)
        read.set_tag("MD", None)
        if read.mapping_quality < 10:
            read.mapping_quality = 0
            read.flag |= 0x200
        o.write(read)
""",
    "downsample": """
import pysam
import sys
import zlib
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f, pysam.AlignmentFile(out + "/sub.sam", "wh", template=f) as o:
    for read in f:
        # Both mates kept or dropped together: decided by the name.
        if zlib.crc32(read.query_name.encode()) % 10 < 3:
            o.write(read)
""",
    "mate_lookup": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f, open(out + "/mates.tsv", "w") as o:
    contig = f.references[0]
    for read in f.fetch(contig, 0, 60000):
        if read.is_paired and read.is_read1 and not read.mate_is_unmapped and not read.is_secondary and not read.is_supplementary:
            try:
                mate = f.mate(read)
            except ValueError as e:
                print(read.query_name, "no mate:", e, sep="\\t", file=o)
                continue
            print(read.query_name, read.reference_start, mate.reference_name, mate.reference_start, mate.is_read2, read.template_length, sep="\\t", file=o)
""",
    "allele_counts": """
import pysam
import sys
from collections import Counter
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f, open(out + "/alleles.tsv", "w") as o:
    contig = f.references[0]
    for column in f.pileup(contig, 20000, 40000, truncate=True, min_base_quality=20, stepper="samtools"):
        counts = Counter()
        for p in column.pileups:
            if p.is_del or p.is_refskip:
                counts["-"] += 1
            elif p.query_position is not None:
                counts[p.alignment.query_sequence[p.query_position]] += 1
        print(column.reference_name, column.reference_pos + 1, column.nsegments,
              *(counts[b] for b in "ACGT-"), sep="\\t", file=o)
""",
    "coverage_arrays": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f, open(out + "/coverage.tsv", "w") as o:
    for contig in f.references[:2]:
        length = f.get_reference_length(contig)
        a, c, g, t = f.count_coverage(contig, 0, min(length, 80000), quality_threshold=15)
        for start in range(0, min(length, 80000), 1000):
            window = slice(start, start + 1000)
            print(contig, start, sum(a[window]), sum(c[window]), sum(g[window]), sum(t[window]), sep="\\t", file=o)
""",
    "header_rewrite": """
import pysam
import sys
bam, out = sys.argv[1], sys.argv[2]
with pysam.AlignmentFile(bam) as f:
    header = f.header.to_dict()
    for rg in header.get("RG", []):
        rg["SM"] = "renamed_" + rg.get("SM", "x")
    header["CO"] = header.get("CO", []) + ["rewritten by a ported pysam script"]
    with pysam.AlignmentFile(out + "/rehead.bam", "wb", header=header) as o:
        for read in f.fetch(until_eof=True):
            o.write(read)
""",
}


def run(script: str, lib: str, bam: Path, out: Path) -> None:
    out.mkdir()
    source = SCRIPTS[script] if lib == "pysam" else SCRIPTS[script].replace("\nimport pysam\n", "\nimport fasthts as pysam\n", 1)
    assert source.count("import fasthts as pysam") == (lib == "fasthts")
    p = subprocess.run([sys.executable, "-c", source, str(bam), str(out)], capture_output=True, text=True)
    assert p.returncode == 0, f"{script} with {lib}: {p.stderr}"


@pytest.mark.parametrize("bam", [SMALL, NORMAL], ids=lambda p: p.name)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_ported_script_leaves_pysams_files(script, bam, tmp_path):
    require(fasthts._fasthts._have_system_zlib(), "the system zlib (libz.so.1) pysam compresses with")
    run(script, "pysam", bam, tmp_path / "pysam")
    run(script, "fasthts", bam, tmp_path / "fasthts")
    theirs = sorted(p.name for p in (tmp_path / "pysam").iterdir())
    assert theirs, f"{script} wrote nothing"
    assert sorted(p.name for p in (tmp_path / "fasthts").iterdir()) == theirs
    for name in theirs:
        want = (tmp_path / "pysam" / name).read_bytes()
        assert len(want) > 0 or script == "split_by_read_group", f"{name}: empty"
        assert (tmp_path / "fasthts" / name).read_bytes() == want, f"{script}: {name} differs"
