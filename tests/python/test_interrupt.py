"""Ctrl-C during a long call: the call stops within a fraction of a second,
raises KeyboardInterrupt and leaves no partial output; an iterator shared
between threads works."""

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import fasthts
from conftest import require_tool

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"
COPIES = 600  # small.bam's records 600 times: 234 MB, seconds of work on one thread


@pytest.fixture(scope="module")
def big_bam(tmp_path_factory):
    samtools = require_tool("samtools", "samtools")
    d = tmp_path_factory.mktemp("big")
    listing = d / "inputs.txt"
    listing.write_text(f"{SMALL}\n" * COPIES)
    out = d / "big.bam"
    subprocess.run([samtools, "cat", "-b", str(listing), "-o", str(out)], check=True)
    return out


def interrupt(call: str, setup: str = "", after: float = 0.3):
    """Runs `call` in a child Python, sends SIGINT `after` seconds into it,
    and returns (seconds from the signal to the child's exit, stdout, stderr)."""
    script = textwrap.dedent(
        f"""
        import sys, fasthts
        {setup}
        print("started", flush=True)
        {call}
        print("finished", flush=True)
        """
    )
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "started"
    time.sleep(after)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return time.monotonic() - sent, out, err


@pytest.mark.parametrize(
    "call",
    [
        "fasthts.flagstat(BIG, threads=1)",
        "fasthts.BamFile(BIG).columns(threads=1)",
        "fasthts.AlignmentFile(BIG).count(until_eof=True)",
        "sum(1 for r in fasthts.AlignmentFile(BIG).fetch(until_eof=True) if r.mapping_quality > 0)",
    ],
)
def test_a_long_call_stops_on_ctrl_c(big_bam, call):
    took, out, err = interrupt(call, setup=f"BIG = {str(big_bam)!r}")
    assert "finished" not in out, "the call ended before the signal: make the input larger"
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt", err
    assert took < 1.5, took


def test_an_interrupted_sort_leaves_no_output(big_bam, tmp_path):
    out = tmp_path / "sorted.bam"
    before = set(tmp_path.iterdir())
    took, stdout, err = interrupt(f"fasthts.sort({str(big_bam)!r}, {str(out)!r}, memory='50M', threads=1)", after=0.5)
    assert "finished" not in stdout
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt", err
    assert took < 1.5, took
    assert set(tmp_path.iterdir()) == before, "partial or temporary output left behind"


def test_one_iterator_shared_by_threads_gives_each_record_once(big_bam):
    names = [a.query_name for a in fasthts.AlignmentFile(str(SMALL)).fetch(until_eof=True)]
    it = fasthts.AlignmentFile(str(SMALL)).fetch(until_eof=True)
    got = [[] for _ in range(4)]

    def drain(i):
        for r in it:
            got[i].append(r.query_name)

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(sum(got, [])) == sorted(names)
