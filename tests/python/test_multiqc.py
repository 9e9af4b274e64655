"""MultiQC's samtools module reads fasthts' QC outputs as it reads
samtools': `stats`, `flagstat`, `idxstats` and `coverage` of the same BAMs,
one directory from each tool, parsed by MultiQC into the same numbers
(issue 34). MultiQC recognises a stats file by the words of its first line
("This file was produced by samtools stats"), which fasthts keeps.
"""

import json
import subprocess
import sys

from conftest import ROOT, require_module, require_tool

# The parsed tables MultiQC saves for each samtools command.
SECTIONS = ("multiqc_samtools_stats", "multiqc_samtools_flagstat", "multiqc_samtools_idxstats", "multiqc_samtools_coverage")


def qc_outputs(tool, bams, out):
    """`tool stats|flagstat|idxstats|coverage` of each BAM into `out`,
    named by sample as a pipeline names them."""
    out.mkdir()
    for bam in bams:
        for command in ("stats", "flagstat", "idxstats", "coverage"):
            done = subprocess.run([tool, command, str(bam)], check=True, capture_output=True)
            (out / f"{bam.stem}.{command}").write_bytes(done.stdout)


def parsed(directory, out):
    subprocess.run([sys.executable, "-m", "multiqc", "-q", "-f", "--no-report", "--data-format", "json", "-m", "samtools", "-o", str(out), str(directory)],
                   check=True, capture_output=True)
    return json.loads((out / "multiqc_data" / "multiqc_data.json").read_text())["report_saved_raw_data"]


def test_multiqc_reads_fasthts_qc_as_samtools_qc(cli, gen_bam, golden, tmp_path):
    require_module("multiqc")
    samtools = require_tool("samtools", "samtools")
    bams = [gen_bam, golden / "normal.bam", ROOT / "tests/data/small.bam"]
    qc_outputs(samtools, bams, tmp_path / "samtools")
    qc_outputs(cli, bams, tmp_path / "fasthts")
    theirs = parsed(tmp_path / "samtools", tmp_path / "mq_samtools")
    ours = parsed(tmp_path / "fasthts", tmp_path / "mq_fasthts")
    for section in SECTIONS:
        assert section in theirs, f"MultiQC found no {section} in samtools' outputs"
        assert section in ours, f"MultiQC found no {section} in fasthts' outputs"
        assert ours[section] == theirs[section], f"{section}: MultiQC reads other numbers from fasthts"
        assert len(theirs[section]) == len(bams), sorted(theirs[section])
