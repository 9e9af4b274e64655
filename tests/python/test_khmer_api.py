"""fasthts.Countgraph against khmer's Python API (Debian's khmer 3.0
module, run by /usr/bin/python3 in a subprocess): the same script, the
same answers, on clean reads and on lowercase bases, N and IUPAC letters
and sequences shorter than k (which khmer's API does not clean)."""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require

SYSTEM_PYTHON = "/usr/bin/python3"

# Run with `khmer` or `fasthts` as the module: prints one JSON document.
SCRIPT = r'''
import json, sys
module = sys.argv[1]
if module == "khmer":
    import khmer as lib
else:
    import fasthts as lib
reads = json.load(open(sys.argv[2]))
K = 7
g = lib.Countgraph(K, 100003, 3)

def attempt(f, *a):
    try:
        return ["ok", f(*a)]
    except ValueError:
        return ["ValueError"]

out = {"consume": [attempt(g.consume, r) for r in reads]}
out["n_unique_kmers"] = g.n_unique_kmers()
out["get"] = [attempt(g.get, r[:K]) for r in reads]
out["hash"] = [attempt(g.hash, r[:K]) for r in reads]
out["get_kmer_counts"] = [attempt(g.get_kmer_counts, r) for r in reads]
out["get_kmer_hashes"] = [attempt(g.get_kmer_hashes, r) for r in reads]
out["get_median_count"] = [attempt(lambda r: [round(x, 9) for x in g.get_median_count(r)], r) for r in reads]
print(json.dumps(out))
'''


def edge_reads(n=350, seed=5):
    rng = random.Random(seed)
    genome = "".join(rng.choice("ACGT") for _ in range(2000))
    reads = []
    for i in range(n):
        a = rng.randrange(0, len(genome) - 60)
        s = list(genome[a : a + rng.choice([3, 6, 7, 8, 20, 40, 60])])
        for j in range(len(s)):
            x = rng.random()
            if x < 0.05:
                s[j] = s[j].lower()
            elif x < 0.08:
                s[j] = rng.choice("NnRYKMSWBDHV")
        reads.append("".join(s))
    return reads


def run(python, module, reads_file, cwd=None):
    r = subprocess.run([python, "-c", SCRIPT, module, str(reads_file)], capture_output=True, text=True, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def khmer_available():
    return Path(SYSTEM_PYTHON).is_file() and subprocess.run([SYSTEM_PYTHON, "-c", "import khmer"], capture_output=True).returncode == 0


def test_countgraph_answers_as_khmers_python_api(tmp_path):
    require(khmer_available(), "khmer's Python module for /usr/bin/python3 (Debian package khmer)")
    reads_file = tmp_path / "reads.json"
    reads = edge_reads()
    reads_file.write_text(json.dumps(reads))
    theirs = run(SYSTEM_PYTHON, "khmer", reads_file)
    mine = run(sys.executable, "fasthts", reads_file, cwd=tmp_path)
    assert mine.keys() == theirs.keys()
    for key in theirs:
        if isinstance(theirs[key], list):
            for i, (a, b) in enumerate(zip(mine[key], theirs[key])):
                assert a == b, (key, i, reads[i])
        assert mine[key] == theirs[key], key
    # The reads did reach the edge cases.
    assert sum(r[0] == "ValueError" for r in theirs["consume"]) > 20
    assert any(c != c.upper() for c in "".join(reads))
