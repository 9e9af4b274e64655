"""Every code block of docs/python.md runs as written, as a script from
the repository root, on the example data its first block defines; and what
the tutorial prints adds up."""

import re
import subprocess
import sys
from pathlib import Path

import fasthts
from conftest import require_module

ROOT = Path(__file__).resolve().parents[2]


def blocks():
    return re.findall(r"```python\n(.*?)```", (ROOT / "docs/python.md").read_text(), re.S)


def split_page():
    """The example-data block (first), the dask block (it needs a script of
    its own: its workers import the script again), and the rest in order."""
    code = blocks()
    data, rest = code[0], code[1:]
    assert "BAM =" in data and "READS =" in data
    dask = [b for b in rest if "LocalCluster" in b]
    assert len(dask) == 1 and 'if __name__ == "__main__":' in dask[0]
    return data, dask[0], [b for b in rest if b is not dask[0]]


def run_script(tmp_path, name, code):
    script = tmp_path / name
    script.write_text(code)
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{name}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_tutorial_runs_as_a_script(tmp_path):
    data, _, tutorial = split_page()
    assert len(tutorial) >= 3
    out = run_script(tmp_path, "tutorial.py", "\n".join([data, *tutorial]))
    # One line per region of the plan, and the counts add up to the file.
    bam = ROOT / "examples/example.bam"
    lines = [l for l in out.splitlines() if "\t" in l]
    assert len(lines) == len(fasthts.BamFile(str(bam)).plan())
    total = fasthts.flagstat(str(bam)).as_dict()
    assert sum(int(l.split("\t")[1]) for l in lines) == total["passed"]["total"] + total["failed"]["total"]
    assert (ROOT / "examples/out/python/sorted.bam.bai").is_file()


def test_dask_example_runs_as_a_script(tmp_path):
    require_module("distributed")
    data, dask, _ = split_page()
    run_script(tmp_path, "dask_example.py", "\n".join([data, dask]))
