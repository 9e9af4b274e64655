"""`fasthts.HLLCounter` and `fasthts.SmallCountgraph` against khmer's: one
script, run with `from khmer import ...` under Debian's python3 (khmer
3.0) and with `from fasthts import ...` under this interpreter, must print
the same values. A khmer script ports by changing its import."""

import os
import pickle
import subprocess
import sys

import pytest

from conftest import require

import fasthts

KHMER_PYTHON = "/usr/bin/python3"

SCRIPT = r'''
import sys, os
from MODULE import HLLCounter, SmallCountgraph
fastq, tmp = sys.argv[1], sys.argv[2]
reads = "ACGTTGCATTTAGGCCAGGATTACAGGGTACCCAAATTTGGCCAANNTTacgtacgtRYKM"

for err, k in [(0.01, 20), (0.26, 5), (0.005, 31), (0.1, 1)]:
    h = HLLCounter(err, k)
    print("hll", err, k, h.ksize, h.error_rate, h.alpha, len(h.counters))
    print(" consume_string", h.consume_string(reads), h.estimate_cardinality(), len(h))
    h.add("ACGTACGTACGTACGTAC")
    h.add("hello")
    print(" add", h.estimate_cardinality(), sum(h.counters))
    h2 = HLLCounter(err, k)
    print(" consume_seqfile", h2.consume_seqfile(fastq), h2.estimate_cardinality())
    h2.merge(h)
    print(" merge", h2.estimate_cardinality(), h2.__getstate__()[:2])
h = HLLCounter()
print("defaults", h.ksize, h.error_rate)
h.error_rate = 0.05
h.ksize = 12
print("set", h.ksize, h.error_rate, len(h.counters))
h.consume_string("ACGTACGTACGTACGTACGT")
for name, value in [("error_rate", 0.01), ("ksize", 9)]:
    try:
        setattr(h, name, value)
    except Exception as e:
        print("after counting", name, type(e).__name__, e)
for bad in [0.5, 0.001, -1.0]:
    try:
        HLLCounter(bad, 20)
    except Exception as e:
        print("error rate", bad, type(e).__name__, e)
try:
    HLLCounter(0.01, 20).merge(HLLCounter(0.01, 21))
except Exception as e:
    print("merge", type(e).__name__, e)

g = SmallCountgraph(5, 1000, 2)
print("small", g.ksize(), g.hashsizes(), g.n_tables(), g.get_use_bigcount())
print(" consume", g.consume("ACGTACGTTTGACAGTNNNNNacgta"), g.get("ACGTA"), g.get("GGGGG"), g.get("AAAAA"))
print(" add", g.add("ACGTA"), g.add("CCCCC"), g.count("ACGTA"), g.get("ACGTA"), g.get(g.hash("ACGTA")))
for _ in range(20):
    g.count("TTTTT")
print(" saturates", g.get("TTTTT"), g.get("AAAAA"))
s = "ACGTACGTTTGACAGTTTTTAAAA"
print(" counts", g.get_kmer_counts(s), g.get_kmer_hashes(s[:8]), g.get_kmers(s[:8]))
print(" median", g.get_median_count(s), g.get_min_count(s), g.get_max_count(s))
print(" median_at_least", g.median_at_least(s, 1), g.median_at_least(s, 3))
print(" trim", g.trim_on_abundance(s, 1), g.trim_on_abundance(s, 2), g.trim_on_abundance("ACGTA", 2), g.trim_on_abundance("TTTTTT", 2))
print(" stats", g.n_unique_kmers(), g.n_occupied())
g2 = SmallCountgraph(17, 100000, 4)
print(" consume_seqfile", g2.consume_seqfile(fastq), g2.n_unique_kmers(), g2.n_occupied())
path = os.path.join(tmp, "small.ct")
g2.save(path)
print(" saved", os.path.getsize(path))
g3 = SmallCountgraph.load(path)
print(" loaded", g3.ksize(), g3.hashsizes(), g3.n_occupied(), g3.get_kmer_counts("ACGTACGTTTGACAGTTTTTAAAA"))
try:
    g.get_median_count("ACG")
except Exception as e:
    print("short", type(e).__name__, e)
'''


def run(python: str, module: str, fastq: str, tmp: str) -> str:
    code = SCRIPT.replace("MODULE", module)
    out = subprocess.run([python, "-c", code, fastq, tmp], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_same_values_as_khmer(fastq, tmp_path):
    have_khmer = os.path.exists(KHMER_PYTHON) and subprocess.run([KHMER_PYTHON, "-c", "import khmer"], capture_output=True).returncode == 0
    require(have_khmer, "khmer 3.0 (Debian package khmer, importable by /usr/bin/python3)")
    (tmp_path / "k").mkdir()
    (tmp_path / "f").mkdir()
    theirs = run(KHMER_PYTHON, "khmer", str(fastq), str(tmp_path / "k"))
    ours = run(sys.executable, "fasthts", str(fastq), str(tmp_path / "f"))
    assert ours.splitlines() == theirs.splitlines()
    assert (tmp_path / "k" / "small.ct").read_bytes() == (tmp_path / "f" / "small.ct").read_bytes()


def test_hll_pickles_and_compares(fastq):
    h = fasthts.HLLCounter(0.02, 15)
    h.consume_seqfile(str(fastq))
    again = pickle.loads(pickle.dumps(h))
    assert again == h and again.estimate_cardinality() == h.estimate_cardinality()
    assert h != fasthts.HLLCounter(0.02, 15)


def test_hll_consume_seqfile_equals_cli(cli, fastq):
    h = fasthts.HLLCounter(0.01, 17)
    h.consume_seqfile(str(fastq))
    out = subprocess.run([cli, "kmer", "unique-kmers", "-k", "17", str(fastq)], capture_output=True, text=True, check=True)
    assert f"Total estimated number of unique 17-mers: {h.estimate_cardinality()}" in out.stderr


def test_small_countgraph_file_errors(tmp_path):
    with pytest.raises(fasthts.Error):
        fasthts.SmallCountgraph.load(str(tmp_path / "missing.ct"))
    g = fasthts.Countgraph(5, 1000, 2)
    g.save(str(tmp_path / "byte.ct"))
    with pytest.raises(fasthts.Error):
        fasthts.SmallCountgraph.load(str(tmp_path / "byte.ct"))
