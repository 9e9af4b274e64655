"""AlignedSegment's reference bases from the MD tag
(`get_reference_sequence`, `get_aligned_pairs(with_seq=True)`) against
pysam and against the reference itself, on FACETS' golden BAM given MD
tags by `samtools calmd`; and pysam's errors without an MD tag."""

import subprocess
from pathlib import Path

import pytest

import fasthts
from conftest import require_module, require_tool

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def with_md(golden, tmp_path_factory):
    samtools = require_tool("samtools", "samtools")
    out = tmp_path_factory.mktemp("md") / "calmd.bam"
    with open(out, "wb") as f:
        subprocess.run([samtools, "calmd", "-b", str(golden / "normal.bam"), str(golden / "ref.fa")], stdout=f, stderr=subprocess.DEVNULL, check=True)
    return out


def reference_of(fasta):
    seqs, name = {}, None
    for line in open(fasta):
        if line.startswith(">"):
            name = line[1:].split()[0]
            seqs[name] = []
        else:
            seqs[name].append(line.strip())
    return {k: "".join(v).upper() for k, v in seqs.items()}


def views(a):
    out = []
    for kw in [{}, {"matches_only": True}, {"with_cigar": True}]:
        out.append(a.get_aligned_pairs(with_seq=True, **kw))
    out.append(a.get_reference_sequence())
    return out


def test_reference_bases_equal_pysam_and_the_reference(golden, with_md):
    pysam = require_module("pysam")
    ref = reference_of(golden / "ref.fa")
    n = mismatched = 0
    with pysam.AlignmentFile(str(with_md)) as p, fasthts.AlignmentFile(str(with_md)) as f:
        for a, b in zip(p.fetch(until_eof=True), f.fetch(until_eof=True), strict=True):
            if a.is_unmapped or a.cigartuples is None:
                continue
            assert views(b) == views(a), a.query_name
            # The bases are the reference's, mismatches in lowercase.
            got = b.get_reference_sequence()
            under = "".join(ref[b.reference_name][p] for _, p in b.get_aligned_pairs(matches_only=True))
            bases = "".join(c for (q, p, c) in b.get_aligned_pairs(with_seq=True, matches_only=True))
            assert bases.upper() == under, a.query_name
            mismatched += any(c.islower() for c in got)
            n += 1
    assert n > 1000 and mismatched > 10, (n, mismatched)


def test_without_md_both_raise_value_error(tmp_path):
    pysam = require_module("pysam")
    samtools = require_tool("samtools", "samtools")
    path = str(tmp_path / "no-md.bam")
    subprocess.run([samtools, "view", "-b", "-x", "MD", "-o", path, str(ROOT / "tests/data/small.bam")], check=True)
    a = next(r for r in pysam.AlignmentFile(path).fetch(until_eof=True) if not r.is_unmapped)
    b = next(r for r in fasthts.AlignmentFile(path).fetch(until_eof=True) if not r.is_unmapped)
    assert not b.has_tag("MD") and b.query_name == a.query_name
    for call in [lambda r: r.get_aligned_pairs(with_seq=True), lambda r: r.get_reference_sequence()]:
        with pytest.raises(ValueError, match="MD tag not present"):
            call(a)
        with pytest.raises(ValueError, match="MD tag not present"):
            call(b)


def test_cigar_stats_and_overlap_equal_pysam(with_md):
    pysam = require_module("pysam")
    with pysam.AlignmentFile(str(with_md)) as p, fasthts.AlignmentFile(str(with_md)) as f:
        for a, b in zip(p.fetch(until_eof=True), f.fetch(until_eof=True), strict=True):
            assert [x.tolist() for x in b.get_cigar_stats()] == [x.tolist() for x in a.get_cigar_stats()]
            s = max(a.reference_start, 0)
            for start, end in [(s, s + 10), (s + 5, s + 200), (0, 1 << 31), (s + 100, s)]:
                assert b.get_overlap(start, end) == a.get_overlap(start, end), (a.query_name, start, end)
