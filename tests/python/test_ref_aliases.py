"""Reference names by their ``@SQ AN:`` alternatives, as pysam takes them.

pysam looks names up with htslib's ``sam_hdr_name2tid``: an ``SN:`` name
or an ``AN:`` alternative of the header text. ``fasthts.AlignmentFile``
(``get_tid``, ``fetch``, ``count``, ``count_coverage``, ``pileup``,
``get_reference_length``, headers made from a dict) and ``fasthts.BamFile``
(``tid``, ``fetch``, ``region``) look them up in the file's one map
(``fasthts::sam::RefNames``), built once: on a header of 100,000
references a thousand lookups take what pysam's take, not a scan each.
"""

import random
import subprocess
import time
from pathlib import Path

import pytest

import fasthts
from conftest import require_module, require_tool

HEADER = "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:300\tAN:1,one\n@SQ\tSN:chr2\tLN:200\tAN:2,two\n@SQ\tSN:chr3\tLN:100\n"

# Names as given: SN names, alternatives, and one no header has.
NAMES = ["chr1", "one", "1", "chr2", "two", "2", "chr3", "none"]


def _bam(path: Path, sam: str) -> Path:
    samtools = require_tool("samtools", "samtools")
    sam_path = path.with_suffix(".sam")
    sam_path.write_text(sam)
    subprocess.run([samtools, "view", "--no-PG", "-b", "-o", str(path), str(sam_path)], check=True)
    subprocess.run([samtools, "index", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def aliased(tmp_path_factory) -> Path:
    """A sorted, indexed BAM whose @SQ lines give chr1 and chr2 two more names."""
    rng = random.Random(5)
    records = []
    for name, length in (("chr1", 300), ("chr2", 200), ("chr3", 100)):
        for _ in range(60):
            pos = rng.randint(1, length - 20)
            records.append((name, pos))
    records.sort(key=lambda r: (r[0], r[1]))
    lines = [HEADER]
    for i, (name, pos) in enumerate(records):
        seq = "".join(rng.choice("ACGT") for _ in range(20))
        qual = "".join(chr(33 + rng.randint(5, 40)) for _ in range(20))
        lines.append(f"r{i}\t0\t{name}\t{pos}\t{rng.randint(0, 60)}\t12M2I6M\t*\t0\t0\t{seq}\t{qual}\n")
    return _bam(tmp_path_factory.mktemp("aliases") / "aliased.bam", "".join(lines))


def _outcome(call):
    """What a call gives: its value, or the type of what it raised."""
    try:
        return call()
    except Exception as e:  # the type is compared, not the words
        return type(e)


def _reads(it):
    return [(r.query_name, r.reference_id, r.reference_start) for r in it]


def _columns(it):
    return [(c.reference_id, c.reference_pos, c.nsegments) for c in it]


def test_alignment_file_calls_take_alternative_names_as_pysam(aliased):
    pysam = require_module("pysam")
    ours, theirs = fasthts.AlignmentFile(str(aliased)), pysam.AlignmentFile(str(aliased))
    calls = {
        "get_tid": lambda f, n: f.get_tid(n),
        "header.get_tid": lambda f, n: f.header.get_tid(n),
        "get_reference_length": lambda f, n: f.get_reference_length(n),
        "is_valid_reference_name": lambda f, n: f.is_valid_reference_name(n),
        "fetch(name)": lambda f, n: _reads(f.fetch(n)),
        "fetch(name, 10, 50)": lambda f, n: _reads(f.fetch(n, 10, 50)),
        "fetch(region=name:10-50)": lambda f, n: _reads(f.fetch(region=f"{n}:10-50")),
        "count(region=name:1-5)": lambda f, n: f.count(region=f"{n}:1-5"),
        "count(name)": lambda f, n: f.count(n),
        "count_coverage": lambda f, n: [list(a) for a in f.count_coverage(n, 0, 50)],
        "pileup(name, 0, 50)": lambda f, n: _columns(f.pileup(n, 0, 50)),
        "pileup(region=name)": lambda f, n: _columns(f.pileup(region=n)),
    }
    for name in NAMES:
        for what, call in calls.items():
            want = _outcome(lambda: call(theirs, name))
            assert _outcome(lambda: call(ours, name)) == want, f"{what} {name!r}"
    # The alternatives select records: the comparison is not of empty lists.
    assert ours.count("one") == ours.count("chr1") == 60
    assert ours.get_tid("two") == 1


def test_headers_made_in_python_take_alternative_names_as_pysam():
    pysam = require_module("pysam")
    header = {"HD": {"VN": "1.6"}, "SQ": [{"SN": "chr1", "LN": 300, "AN": "1,one"}, {"SN": "chr2", "LN": 200}]}
    ours, theirs = fasthts.AlignmentHeader.from_dict(header), pysam.AlignmentHeader.from_dict(header)
    for name in NAMES:
        assert ours.get_tid(name) == theirs.get_tid(name), name
    assert ours.copy().get_tid("one") == 0
    assert fasthts.AlignmentHeader.from_references(["a", "b"], [10, 20]).get_tid("b") == 1
    # The text keeps AN: (and every field pysam knows), in pysam's order.
    every = {
        "HD": {"SS": "a", "GO": "b", "SO": "c", "VN": "1.6"},
        "SQ": [{**{k: "v" for k in ("AN", "DS", "TP", "AH", "SP", "UR", "M5", "AS", "SN")}, "LN": 5, "XX": "x", "zz": "z"}],
        "RG": [{k: "v" for k in ("BC", "PM", "PG", "KS", "FO", "PL", "DS", "DT", "PI", "PU", "LB", "SM", "CN", "ID", "zz")}],
        "PG": [{k: "v" for k in ("CL", "DS", "PP", "VN", "ID", "PN")}],
    }
    for made in (header, every):
        assert str(fasthts.AlignmentHeader.from_dict(made)) == str(pysam.AlignmentHeader.from_dict(made))


def test_bam_file_takes_alternative_names(aliased):
    bam = fasthts.BamFile(str(aliased))
    assert [bam.tid(n) for n in ("chr1", "one", "1", "two", "chr3")] == [0, 0, 0, 1, 2]
    with pytest.raises(KeyError):
        bam.tid("none")
    region = bam.region("one:1-50")
    assert (region.ref_id, region.start, region.end, region.contig) == (0, 0, 50, "chr1")
    by_alias = [(r.tid, r.pos) for r in bam.fetch("two")]
    assert by_alias == [(r.tid, r.pos) for r in bam.fetch("chr2")] and len(by_alias) == 60
    assert bam.region(("one", 5, 9)).ref_id == 0


@pytest.fixture(scope="module")
def many_references(tmp_path_factory) -> Path:
    """100,000 references with an alternative name each, a record on every 50th."""
    n = 100_000
    lines = ["@HD\tVN:1.6\tSO:coordinate\n"]
    lines += [f"@SQ\tSN:ctg{i}\tLN:1000\tAN:alias{i}\n" for i in range(n)]
    lines += [f"r{i}\t0\tctg{i}\t10\t60\t8M\t*\t0\t0\tACGTACGT\tIIIIIIII\n" for i in range(0, n, 50)]
    return _bam(tmp_path_factory.mktemp("many") / "many.bam", "".join(lines))


def _seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def test_lookups_on_many_references_are_not_scans(many_references):
    """A thousand lookups by name on a header of 100,000 references: each
    was a scan of the names (10 ms to 60 ms each, 10 s to 60 s in all);
    with the one map they take about what pysam's take. The bound is
    generous (ten times pysam's time, plus two seconds for a loaded
    machine), far below a scan per call."""
    pysam = require_module("pysam")
    path = str(many_references)
    names = [f"ctg{i}" for i in range(0, 100_000, 100)]
    aliases = [f"alias{i}" for i in range(0, 100_000, 100)]

    def calls(f):
        return [
            lambda: [list(f.fetch(n)) for n in names],
            lambda: [f.count(region=f"{a}:1-50") for a in aliases],
            lambda: [f.get_tid(a) for a in aliases],
        ]

    ours, theirs = fasthts.AlignmentFile(path), pysam.AlignmentFile(path)
    assert [ours.count(region=f"{a}:1-50") for a in aliases[:20]] == [theirs.count(region=f"{a}:1-50") for a in aliases[:20]]
    for mine, pysams in zip(calls(ours), calls(theirs)):
        took, pysam_took = _seconds(mine), _seconds(pysams)
        assert took < 10 * pysam_took + 2.0, (took, pysam_took)
    bam = fasthts.BamFile(path)
    assert bam.tid("alias99900") == 99900
    took = _seconds(lambda: [bam.tid(a) for a in aliases] + [bam.region(f"{a}:1-50") for a in aliases])
    assert took < 2.0, took
