"""Ctrl-C during the k-mer calls stops them within a fraction of a second
with KeyboardInterrupt, and cancelling is per call: a fasthts call in
another Python thread goes on when the main thread's call is interrupted."""

import os
import random
import subprocess

import pytest

import fasthts
from conftest import require_tool
from test_interrupt import SMALL, interrupt

# Enough sequence for seconds of counting on one thread.
READS = 600_000
READ_LENGTH = 150


@pytest.fixture(scope="module")
def big_fastq(tmp_path_factory):
    rng = random.Random(25)
    block = []
    for i in range(2000):
        seq = "".join(rng.choice("ACGT") for _ in range(READ_LENGTH))
        block.append(f"@r{i}\n{seq}\n+\n{'I' * READ_LENGTH}\n")
    path = tmp_path_factory.mktemp("kmer") / "big.fq"
    text = "".join(block)
    with open(path, "w") as f:
        for _ in range(READS // len(block)):
            f.write(text)
    return path


def endless_fastq(fastq, directory) -> str:
    """A FIFO that a background shell fills with `fastq` over and over (up
    to 100 times: its `cat`s end on the first write after the reader has
    gone); a call reading it cannot end on its own within the test."""
    fifo = directory / "endless.fq"
    os.mkfifo(fifo)
    subprocess.Popen(["sh", "-c", f'for i in $(seq 100); do cat "$1" || exit; done > "$2"', "sh", str(fastq), str(fifo)],
                     stderr=subprocess.DEVNULL)
    return str(fifo)


@pytest.mark.parametrize(
    "call",
    [
        "fasthts.Countgraph(25, 10**7, 4).consume_seqfile(FQ, threads=1)",
        "fasthts.Countgraph(25, 10**7, 4).consume_seqfile(FQ, threads=2)",
        # These two read the file in under half a second on a quiet
        # machine (0.48 s and 0.40 s for the string below, 2026-11-29):
        # they read an endless stream (a FIFO fed by a shell loop) or four
        # times the sequence instead.
        "fasthts.Countgraph(25, 10**5, 2).abundance_distribution(ENDLESS, threads=1)",
        "fasthts.HLLCounter(0.01, 25).consume_seqfile(ENDLESS)",
        "fasthts.SmallCountgraph(25, 10**7, 4).consume_seqfile(FQ, 1)",
        "fasthts.Countgraph(25, 10**7, 4).consume(SEQ)",
        "fasthts.SmallCountgraph(25, 10**7, 4).consume(SEQ)",
        "fasthts.HLLCounter(0.01, 25).consume_string(SEQ * 4)",
    ],
)
def test_a_long_kmer_call_stops_on_ctrl_c(big_fastq, call, tmp_path):
    setup = f"FQ = {str(big_fastq)!r}; SEQ = ''.join(open(FQ).read().split('\\n')[1::4])"
    if "ENDLESS" in call:
        setup += f"; ENDLESS = {endless_fastq(big_fastq, tmp_path)!r}"
    took, out, err = interrupt(call, setup=setup, after=0.5)
    assert "finished" not in out, "the call ended before the signal: make the input larger"
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt", err
    assert took < 1.5, took


@pytest.fixture(scope="module")
def big_bam(tmp_path_factory):
    samtools = require_tool("samtools", "samtools")
    d = tmp_path_factory.mktemp("big")
    listing = d / "inputs.txt"
    listing.write_text(f"{SMALL}\n" * 600)
    out = d / "big.bam"
    subprocess.run([samtools, "cat", "-b", str(listing), "-o", str(out)], check=True)
    return out


def test_ctrl_c_cancels_only_the_interrupted_call(big_bam):
    # The other thread's flagstat runs while the main thread's is
    # interrupted: it must finish with the whole file's counts.
    setup = f"""
import threading
BIG = {str(big_bam)!r}
got = {{}}
def other():
    try:
        got["values"] = fasthts.flagstat(BIG, threads=1).values()
    except BaseException as e:
        got["error"] = repr(e)
t = threading.Thread(target=other)
t.start()
"""
    call = """
try:
    fasthts.flagstat(BIG, threads=1)
except KeyboardInterrupt:
    print("interrupted", flush=True)
t.join()
print("other", got, flush=True)
"""
    took, out, err = interrupt(call.replace("\n", "\n        "), setup=setup.replace("\n", "\n        "), after=0.3)
    assert "interrupted" in out, (out, err)
    expected = fasthts.flagstat(str(big_bam)).values()
    assert f"other {{'values': {expected}}}" in out, (out, err)
