"""pysam's module-level names (CIGAR and flag constants, the quality-string
helpers, reverse_complement, KEY_NAMES, Samfile/Fastafile) on fasthts:
the same values and results as pysam's."""

import array
import random

import pytest

import fasthts
from conftest import require_module

pysam = require_module("pysam")


def test_constants_and_enums_are_pysams():
    for enum_name in ("CIGAR_OPS", "SAM_FLAGS"):
        mine, theirs = getattr(fasthts, enum_name), getattr(pysam, enum_name)
        assert [(m.name, int(m)) for m in mine] == [(m.name, int(m)) for m in theirs]
        for member in theirs:
            assert getattr(fasthts, member.name) == getattr(pysam, member.name) == int(member)
            assert getattr(fasthts, member.name) is getattr(mine, member.name)
    assert fasthts.KEY_NAMES == pysam.KEY_NAMES
    assert fasthts.Samfile is fasthts.AlignmentFile and fasthts.Fastafile is fasthts.FastaFile


def test_quality_helpers_are_pysams():
    rng = random.Random(5)
    for n in (0, 1, 7, 150):
        text = "".join(chr(rng.randrange(33, 127)) for _ in range(n))
        for offset in (33, 0):
            assert fasthts.qualitystring_to_array(text, offset) == pysam.qualitystring_to_array(text, offset)
        scores = array.array("B", [rng.randrange(0, 94) for _ in range(n)])
        assert fasthts.array_to_qualitystring(scores) == pysam.array_to_qualitystring(scores)
        assert fasthts.qualities_to_qualitystring(list(scores), offset=40) == pysam.qualities_to_qualitystring(list(scores), offset=40)
        assert fasthts.qualities_to_qualitystring(scores) == pysam.qualities_to_qualitystring(scores)
    for lib in (fasthts, pysam):
        with pytest.raises(OverflowError):
            lib.qualitystring_to_array("I#", 64)
    for f in ("qualitystring_to_array", "array_to_qualitystring", "qualities_to_qualitystring"):
        assert getattr(fasthts, f)(None) is None and getattr(pysam, f)(None) is None


def test_reverse_complement_is_pysams():
    every_byte = bytes(range(256))
    assert fasthts.reverse_complement(every_byte) == pysam.reverse_complement(every_byte)
    assert fasthts.reverse_complement(bytearray(every_byte)) == pysam.reverse_complement(bytearray(every_byte))
    assert type(fasthts.reverse_complement(bytearray(b"AC"))) is bytearray
    # ASCII and beyond Latin-1 (pysam's table gives U+FFxx for 128-255).
    text = every_byte[:128].decode() + "ĀACGTNnuU"
    assert fasthts.reverse_complement(text) == pysam.reverse_complement(text)
    assert [fasthts.reverse_complement(i) for i in range(16)] == [pysam.reverse_complement(i) for i in range(16)]
    mine, theirs = bytearray(b"ACGTRYKMacgtn"), bytearray(b"ACGTRYKMacgtn")
    fasthts.reverse_complement_inplace(mine)
    pysam.reverse_complement_inplace(theirs)
    assert mine == theirs
    with pytest.raises(TypeError):
        fasthts.reverse_complement(1.5)
    with pytest.raises(TypeError):
        fasthts.reverse_complement_inplace(b"ACGT")
