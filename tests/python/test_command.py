"""The `fasthts` command that `pip install .` installs ([project.scripts]:
the CLI's Rust main through the extension module) behaves as the binary:
same output, same error line, same exit status."""

import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"


@pytest.fixture(scope="module")
def script() -> str:
    """The installed script of this Python's environment (not another
    `fasthts` earlier on the PATH, such as cargo install's)."""
    p = Path(sysconfig.get_path("scripts")) / "fasthts"
    assert p.is_file(), f"{p}: the package's fasthts command is not installed (pip install .)"
    return str(p)


def both(cli, script, *args, cwd=None):
    args = [str(a) for a in args]
    return [subprocess.run([prog, *args], capture_output=True, cwd=cwd) for prog in (cli, script)]


@pytest.mark.parametrize("fmt", ["default", "json", "tsv"])
def test_flagstat_output_equals_the_binary(cli, script, fmt):
    binary, installed = both(cli, script, "flagstat", "-O", fmt, SMALL)
    assert binary.returncode == installed.returncode == 0
    assert installed.stdout == binary.stdout and installed.stdout
    assert installed.stderr == binary.stderr == b""


def test_error_exits_alike_with_the_same_line(cli, script, tmp_path):
    binary, installed = both(cli, script, "flagstat", tmp_path / "missing.bam")
    assert binary.returncode != 0
    assert installed.returncode == binary.returncode
    assert installed.stderr == binary.stderr
    assert len(installed.stderr.splitlines()) == 1 and b"missing.bam" in installed.stderr


def test_usage_error_exits_alike(cli, script):
    binary, installed = both(cli, script, "flagstat", "--no-such-option")
    assert binary.returncode != 0
    assert (installed.returncode, installed.stderr) == (binary.returncode, binary.stderr)


def test_outputs_written_by_the_installed_command_equal_the_binary(cli, script, tmp_path):
    a, b = tmp_path / "a.bam", tmp_path / "b.bam"
    for prog, out in [(cli, a), (script, b)]:
        subprocess.run([prog, "sort", "--no-PG", "-n", "-o", str(out), str(SMALL)], check=True)
    assert a.read_bytes() == b.read_bytes()


def test_version(cli, script):
    binary, installed = both(cli, script, "--version")
    assert installed.returncode == 0 and installed.stdout == binary.stdout
