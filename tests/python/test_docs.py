"""The code of docs/python.md runs (on a generated BAM and FASTQ) and its
claims hold."""

import re
from pathlib import Path

from conftest import require_module

ROOT = Path(__file__).resolve().parents[2]


def blocks():
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs/python.md").read_text(), re.S)


def test_tutorial_runs(gen_bam, fastq, tmp_path, capsys):
    require_module("distributed")
    code = blocks()
    assert len(code) >= 5
    ns = {"BAM": str(gen_bam), "READS": str(fastq), "OUT": str(tmp_path)}
    for block in code:
        exec(compile(block, "docs/python.md", "exec"), ns)
    out = capsys.readouterr().out
    # One line per region of the plan, and the counts add up to the file.
    import fasthts

    lines = [l for l in out.splitlines() if "\t" in l]
    assert len(lines) == len(fasthts.BamFile(str(gen_bam)).plan())
    total = fasthts.flagstat(str(gen_bam)).as_dict()
    assert sum(int(l.split("\t")[1]) for l in lines) == total["passed"]["total"] + total["failed"]["total"]
    assert (tmp_path / "sorted.bam.bai").is_file()
