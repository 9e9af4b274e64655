"""pysam's samtools functions (``pysam.samtools``; ``pysam.view(...)``,
``pysam.sort("-o", out, bam)`` and the others at pysam's top level): the
``fasthts`` command of the same name with samtools' arguments, run inside
this process (not as a subprocess), with pysam's keywords and results:

* the command's standard output is returned as text (``bytes`` when it is
  not UTF-8, e.g. ``view("-b", ...)``); ``split_lines=True`` returns a
  list of lines; ``catch_stdout=False`` discards it and returns ``None``,
  ``catch_stdout=None`` lets it through to this process's standard output
  (``None``); ``save_stdout=PATH`` writes it to PATH (``None``);
* a non-zero exit status raises ``SamtoolsError`` naming the status and
  what the command wrote (pysam's message);
* the standard error of a successful call is kept for ``get_messages()``;
* ``usage()`` is the command's usage text.

While a command runs, this process's file descriptors 1 and 2 point at
temporary files (one command at a time), as pysam points samtools' streams
at them: other threads' writes to them in that time are captured too.

Only the commands fasthts has are here; ``fasthts.samtools.mpileup`` and
the others pysam also offers raise ``AttributeError``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any, List, Optional, Union

from . import _fasthts

__all__ = [
    "SamtoolsError",
    "bam2fq",
    "cat",
    "collate",
    "coverage",
    "depth",
    "faidx",
    "fasta",
    "fastq",
    "fixmate",
    "flagstat",
    "fqidx",
    "idxstats",
    "index",
    "markdup",
    "merge",
    "quickcheck",
    "sort",
    "stats",
    "view",
]

#: Arguments of ``index`` that take a value (pysam looks past them for the
#: first input, which must exist).
_INDEX_OPTIONS_WITH_VALUES = ("-m", "--min-shift", "-o", "--output", "--output-file", "-@", "--threads")


class SamtoolsError(Exception):
    """A samtools-style function's command ended with a non-zero status
    (pysam's ``pysam.SamtoolsError``)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return repr(self.value)


Output = Union[str, bytes, List[str], None]


class SamtoolsDispatcher:
    """One samtools command as pysam's ``PysamDispatcher`` calls it:
    ``dispatcher(*args, catch_stdout=True, save_stdout=None,
    split_lines=False)``."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.stderr: Union[str, bytes, List[str]] = []

    def __repr__(self) -> str:
        return f"<fasthts.samtools.{self.command.replace('-', '_')}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Output:
        status, stderr, stdout = _dispatch(
            self.command, [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args],
            catch_stdout=kwargs.get("catch_stdout", True), save_stdout=kwargs.get("save_stdout"),
        )
        if kwargs.get("split_lines", False):
            stdout = stdout.splitlines() if stdout is not None else stdout
            if stderr:
                stderr = stderr.splitlines()
        if status:
            raise SamtoolsError(f"samtools returned with error {status}: stdout={stdout}, stderr={stderr}")
        self.stderr = stderr
        return stdout

    def get_messages(self) -> Union[str, bytes, List[str]]:
        """What the last successful call wrote to its standard error."""
        return self.stderr

    def usage(self) -> Union[str, bytes]:
        """The command's usage text."""
        _, stderr, stdout = _dispatch(self.command, ["--help"], catch_stdout=True, save_stdout=None)
        return stderr if stderr else (stdout or "")


def _dispatch(command: str, args: List[str], catch_stdout: Optional[bool], save_stdout: Optional[str]):
    """Runs ``fasthts COMMAND ARGS`` in this process as pysam's
    ``_pysam_dispatch`` runs samtools: (status, stderr text, stdout text or
    None)."""
    if command == "index":
        _first_input_exists(args)
    args = list(args)
    stdout_path = None
    to_close = []
    stderr_fd, stderr_path = tempfile.mkstemp(prefix="fasthts-stderr-")
    to_close.append(stderr_fd)
    try:
        if save_stdout:
            stdout_fd = os.open(save_stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            to_close.append(stdout_fd)
        elif catch_stdout:
            stdout_fd, stdout_path = tempfile.mkstemp(prefix="fasthts-stdout-")
            to_close.append(stdout_fd)
            # pysam gives samtools view its output file with -o (last -o
            # wins), except for view -c, whose count goes to stdout.
            if command == "view" and "-c" not in args:
                args += ["-o", stdout_path]
        elif catch_stdout is None:
            stdout_fd = os.dup(1)
            to_close.append(stdout_fd)
        else:
            stdout_fd = os.open(os.devnull, os.O_WRONLY)
            to_close.append(stdout_fd)
        # Text Python buffered for the real streams goes there first.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        status = _fasthts.run_cli_redirected(["fasthts", command, *args], stdout_fd, stderr_fd)
    finally:
        for fd in to_close:
            os.close(fd)
    stderr = _collect(stderr_path)
    stdout = _collect(stdout_path) if stdout_path is not None else None
    if stdout is None and catch_stdout and not save_stdout:
        stdout = ""
    return status, stderr, stdout


def _first_input_exists(args: List[str]) -> None:
    # pysam's check before samtools index: the first input named must
    # exist (OSError naming it), options and their values skipped.
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg.startswith("-"):
            skip_next = arg in _INDEX_OPTIONS_WITH_VALUES
            continue
        if not os.path.exists(arg):
            raise OSError(f"No such file or directory: '{arg}'")
        break


def _collect(path: str) -> Union[str, bytes]:
    """A temporary output's content (text, or bytes when it is not UTF-8),
    the file removed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    finally:
        os.remove(path)
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data


bam2fq = SamtoolsDispatcher("bam2fq")
cat = SamtoolsDispatcher("cat")
collate = SamtoolsDispatcher("collate")
coverage = SamtoolsDispatcher("coverage")
depth = SamtoolsDispatcher("depth")
faidx = SamtoolsDispatcher("faidx")
fasta = SamtoolsDispatcher("fasta")
fastq = SamtoolsDispatcher("fastq")
fixmate = SamtoolsDispatcher("fixmate")
flagstat = SamtoolsDispatcher("flagstat")
fqidx = SamtoolsDispatcher("fqidx")
idxstats = SamtoolsDispatcher("idxstats")
index = SamtoolsDispatcher("index")
markdup = SamtoolsDispatcher("markdup")
merge = SamtoolsDispatcher("merge")
quickcheck = SamtoolsDispatcher("quickcheck")
sort = SamtoolsDispatcher("sort")
stats = SamtoolsDispatcher("stats")
view = SamtoolsDispatcher("view")
