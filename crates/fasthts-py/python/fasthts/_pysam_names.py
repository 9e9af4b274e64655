"""The module-level names pysam scripts use besides its classes: CIGAR
operation and flag constants (pysam's ``CIGAR_OPS`` and ``SAM_FLAGS``
enums, each member also a module constant), the quality-string helpers,
``reverse_complement``, ``KEY_NAMES`` (the keys of
``AlignedSegment.to_dict``), as pysam defines them."""

from __future__ import annotations

import array
import enum
from typing import Any, Iterable, Optional, Union

__all__ = [
    "CIGAR_OPS",
    "CMATCH",
    "CINS",
    "CDEL",
    "CREF_SKIP",
    "CSOFT_CLIP",
    "CHARD_CLIP",
    "CPAD",
    "CEQUAL",
    "CDIFF",
    "CBACK",
    "SAM_FLAGS",
    "FPAIRED",
    "FPROPER_PAIR",
    "FUNMAP",
    "FMUNMAP",
    "FREVERSE",
    "FMREVERSE",
    "FREAD1",
    "FREAD2",
    "FSECONDARY",
    "FQCFAIL",
    "FDUP",
    "FSUPPLEMENTARY",
    "KEY_NAMES",
    "array_to_qualitystring",
    "qualities_to_qualitystring",
    "qualitystring_to_array",
    "reverse_complement",
    "reverse_complement_inplace",
]


class CIGAR_OPS(enum.IntEnum):
    """The BAM CIGAR operation codes (pysam's names)."""

    CMATCH = 0
    CINS = 1
    CDEL = 2
    CREF_SKIP = 3
    CSOFT_CLIP = 4
    CHARD_CLIP = 5
    CPAD = 6
    CEQUAL = 7
    CDIFF = 8
    CBACK = 9


class SAM_FLAGS(enum.IntEnum):
    """The SAM flag bits (pysam's names)."""

    FPAIRED = 0x1
    FPROPER_PAIR = 0x2
    FUNMAP = 0x4
    FMUNMAP = 0x8
    FREVERSE = 0x10
    FMREVERSE = 0x20
    FREAD1 = 0x40
    FREAD2 = 0x80
    FSECONDARY = 0x100
    FQCFAIL = 0x200
    FDUP = 0x400
    FSUPPLEMENTARY = 0x800


CMATCH, CINS, CDEL, CREF_SKIP, CSOFT_CLIP, CHARD_CLIP, CPAD, CEQUAL, CDIFF, CBACK = CIGAR_OPS
(FPAIRED, FPROPER_PAIR, FUNMAP, FMUNMAP, FREVERSE, FMREVERSE, FREAD1, FREAD2, FSECONDARY, FQCFAIL, FDUP, FSUPPLEMENTARY) = SAM_FLAGS

#: The keys of ``AlignedSegment.to_dict()``, in order.
KEY_NAMES = ["name", "flag", "ref_name", "ref_pos", "map_quality", "cigar", "next_ref_name", "next_ref_pos", "length", "seq", "qual", "tags"]

# IUPAC complements (U as A); every other byte stays itself, as pysam's table.
_COMPLEMENT = bytes.maketrans(b"ACGTUMRYKVHDBacgtumrykvhdb", b"TGCAAKYRMBDHVtgcaakyrmbdhv")
_COMPLEMENT_STR = {i: c for i, c in enumerate(_COMPLEMENT.decode("latin-1")) if i != ord(c)}


def qualitystring_to_array(input_str: Optional[Union[str, bytes]], offset: int = 33) -> Optional["array.array[int]"]:
    """A quality string (SAM's QUAL) as an ``array('B')`` of scores."""
    if input_str is None:
        return None
    data = input_str.encode() if isinstance(input_str, str) else bytes(input_str)
    if data and not offset <= min(data) <= max(data) <= offset + 255:
        # pysam stores each score in an unsigned byte: out of range is an error.
        raise OverflowError("unsigned byte integer is less than minimum" if min(data) < offset else "unsigned byte integer is greater than maximum")
    return array.array("B", bytes(c - offset for c in data))


def array_to_qualitystring(qualities: Optional["array.array[int]"], offset: int = 33) -> Optional[str]:
    """An ``array('B')`` of scores as a quality string."""
    if qualities is None:
        return None
    return bytes((q + offset) & 0xFF for q in memoryview(qualities).cast("B")).decode("latin-1")


def qualities_to_qualitystring(qualities: Optional[Iterable[int]], offset: int = 33) -> Optional[str]:
    """A list, tuple or array of scores as a quality string."""
    if qualities is None:
        return None
    if isinstance(qualities, array.array):
        return array_to_qualitystring(qualities, offset=offset)
    return "".join(chr(q + offset) for q in qualities)


def reverse_complement(seq: Any) -> Any:
    """The reverse complement of ``seq`` (``str``, ``bytes``-like or
    ``bytearray``, or an ``int``: one base in BAM's 4-bit code), of the same
    type; IUPAC codes complemented, U as A, other characters kept."""
    if isinstance(seq, str):
        return seq.translate(_COMPLEMENT_STR)[::-1]
    if isinstance(seq, int):
        return (seq & 1) << 3 | (seq & 2) << 1 | (seq & 4) >> 1 | (seq & 8) >> 3
    try:
        data = bytes(memoryview(seq).cast("B")).translate(_COMPLEMENT)[::-1]
    except TypeError:
        raise TypeError("Can only reverse complement str, bytes-like, or int") from None
    return bytearray(data) if isinstance(seq, bytearray) else data


def reverse_complement_inplace(seq: Any) -> None:
    """Reverse-complements a writable bytes-like ``seq`` in place."""
    try:
        view = memoryview(seq).cast("B")
        if view.readonly:
            raise TypeError
        view[:] = bytes(view).translate(_COMPLEMENT)[::-1]
    except (BufferError, TypeError):
        raise TypeError("Can only reverse complement writable bytearray-like in place") from None
