"""fasthts.FastaFile against pysam.FastaFile: the same names, lengths and
bases for plain and bgzipped FASTA (the index read or written by the same
library code as `fasthts faidx`), pysam's errors, and the file's life."""

import random
import shutil
import subprocess

import pytest

import fasthts
from conftest import require_module, require_tool, write_bgzf


def write_fasta(path, seed=3):
    rng = random.Random(seed)
    seqs = [("chr1", 5000, 60), ("chr2", 1234, 70), ("HLA:1-2", 77, 10), ("tiny", 3, 60)]
    with open(path, "w") as f:
        for name, length, width in seqs:
            bases = "".join(rng.choice("ACGTNacgt") for _ in range(length))
            f.write(f">{name} description\n")
            for i in range(0, length, width):
                f.write(bases[i : i + width] + "\n")
    return seqs


@pytest.fixture
def fasta(tmp_path):
    p = tmp_path / "ref.fa"
    write_fasta(p)
    return p


@pytest.fixture
def fasta_gz(tmp_path):
    plain = tmp_path / "plain.fa"
    write_fasta(plain)
    p = tmp_path / "ref.fa.gz"
    write_bgzf(plain.read_bytes(), p, block=1000)
    return p


def queries():
    rng = random.Random(5)
    out = [dict(reference="chr1"), dict(reference="tiny"), dict(region="chr2"), dict(region="chr2:1-70"), dict(region="chr1:4990-6000")]
    out += [dict(reference="chr1", start=4999), dict(reference="chr1", start=6000), dict(reference="chr1", end=5)]
    out += [dict(reference="chr2", start=5, end=5), dict(reference=b"chr2", start=3, end=90)]
    for _ in range(200):
        name = rng.choice(["chr1", "chr2", "tiny"])
        start = rng.randrange(0, 5100)
        out.append(dict(reference=name, start=start, end=start + rng.randrange(0, 400)))
    return out


@pytest.mark.parametrize("which", ["plain", "bgzf"])
def test_matches_pysam(which, fasta, fasta_gz):
    pysam = require_module("pysam")
    path = fasta if which == "plain" else fasta_gz
    with fasthts.FastaFile(path) as ours:
        # The index written beside the file is the one pysam then reads.
        assert (path.parent / (path.name + ".fai")).is_file()
        theirs = pysam.FastaFile(str(path))
        assert ours.references == list(theirs.references)
        assert ours.lengths == list(theirs.lengths)
        assert ours.nreferences == theirs.nreferences == len(ours) == len(theirs)
        assert ours.filename == theirs.filename
        for name in ours.references:
            assert name in ours and ours.get_reference_length(name) == theirs.get_reference_length(name)
            assert ours[name] == theirs[name]
        assert "nope" not in ours
        for q in queries():
            assert ours.fetch(**q) == theirs.fetch(**q), q


def test_errors_as_pysam(fasta):
    pysam = require_module("pysam")
    ours, theirs = fasthts.FastaFile(fasta), pysam.FastaFile(str(fasta))
    for q in [
        dict(reference="nope"),
        dict(),
        dict(reference="chr1", start=5, end=2),
        dict(reference="chr1", start=-1),
        dict(region="chr1:0-3"),
        dict(reference="chr1", region="chr1"),
        dict(region="chr1:a-3"),
        dict(region="nope:1-3"),
    ]:
        with pytest.raises(Exception) as expected:
            theirs.fetch(**q)
        with pytest.raises(type(expected.value)) as got:
            ours.fetch(**q)
        assert str(got.value) == str(expected.value), q
    with pytest.raises(KeyError):
        ours.get_reference_length("nope")
    # Where pysam fails (IndexError, a colon in the name), fasthts reads
    # the region.
    assert ours.fetch(region="chr1:4998") == ours.fetch("chr1", 4997)
    assert ours.fetch(region="HLA:1-2:3-12") == theirs.fetch("HLA:1-2", 2, 12)


def test_life_of_the_file(fasta, tmp_path):
    f = fasthts.FastaFile(fasta)
    assert f.is_open() and not f.closed
    f.close()
    assert f.closed and not f.is_open()
    with pytest.raises(ValueError, match="closed file"):
        f.fetch("chr1")
    with pytest.raises(ValueError, match="closed file"):
        len(f)
    # What was read at open stays, as pysam's.
    assert f.references[0] == "chr1" and "chr1" in f
    with pytest.raises(FileNotFoundError):
        fasthts.FastaFile(tmp_path / "missing.fa")
    uneven = tmp_path / "uneven.fa"
    uneven.write_text(">a\nACGT\nACGTT\n")
    with pytest.raises(fasthts.Error, match="different line length"):
        fasthts.FastaFile(uneven)
    dup = tmp_path / "dup.fa"
    dup.write_text(">a\nACGT\n>a\nTT\n")
    with pytest.warns(UserWarning, match="duplicate sequence"):
        d = fasthts.FastaFile(dup)
    assert d.fetch("a") == "ACGT"


def test_named_index_files(fasta_gz, tmp_path):
    fai, gzi = tmp_path / "x.fai", tmp_path / "x.gzi"
    f = fasthts.FastaFile(fasta_gz, filepath_index=fai, filepath_index_compressed=gzi)
    assert fai.is_file() and gzi.is_file()
    assert f.fetch("chr2", 10, 20) == fasthts.FastaFile(fasta_gz).fetch("chr2", 10, 20)


def test_index_is_samtools(fasta, fasta_gz, tmp_path):
    samtools = require_tool("samtools", "samtools")
    for path in (fasta, fasta_gz):
        fasthts.FastaFile(path)
        ours = {s: (path.parent / (path.name + s)).read_bytes() for s in (".fai", ".gzi") if (path.parent / (path.name + s)).exists()}
        copy = tmp_path / ("copy-" + path.name)
        shutil.copy(path, copy)
        subprocess.run([samtools, "faidx", str(copy)], check=True)
        for suffix, data in ours.items():
            assert (tmp_path / (copy.name + suffix)).read_bytes() == data, suffix
