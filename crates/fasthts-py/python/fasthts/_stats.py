"""``fasthts.stats``: samtools stats as tables.

The counting is the library's, the call the CLI makes
(``fasthts::command::stats_to``); here its text is read into sections.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from . import _fasthts

if TYPE_CHECKING:
    import numpy as np

PathLike = Union[str, "os.PathLike[str]"]
Value = Union[int, float, str]


def _value(field: str) -> Value:
    """A field as samtools printed it: an int, else a float, else the text
    (COV's ``[1-1]`` labels)."""
    try:
        return int(field)
    except ValueError:
        pass
    try:
        return float(field)
    except ValueError:
        return field


class Stats:
    """What ``samtools stats`` prints, as text and as tables.

    ``text`` is the output of ``fasthts stats`` (samtools stats 1.16's bytes
    but for the first line, which names fasthts). ``summary`` is the SN
    section, field name (without its colon) to number. ``sections`` maps
    every other section's name (``FFQ``, ``GCF``, ``IS``, ``RL``, ``COV``,
    ...) to its rows, each a list of the values after the name (ints and
    floats as printed; COV's range labels and CHK's hexadecimal checksums
    as text); a section samtools did
    not print is absent. ``array(name)`` is a section as a numpy array of
    its numeric columns. ``notes`` are the lines samtools prints on stderr
    (unknown ``-t`` sequences, barcode problems).
    """

    __slots__ = ("text", "summary", "sections", "notes")

    def __init__(self, text: str, notes: Sequence[str] = ()) -> None:
        self.text = text
        self.notes: List[str] = list(notes)
        self.summary: Dict[str, Union[int, float]] = {}
        self.sections: Dict[str, List[List[Value]]] = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, rest = line.partition("\t")
            fields = rest.split("\t")
            if name == "SN":
                # "SN\tfield name:\tvalue[\t# comment]"
                value = _value(fields[1])
                assert not isinstance(value, str), line
                self.summary[fields[0].rstrip(":")] = value
            elif name == "CHK":
                # Hexadecimal CRC32s, kept as printed ("12345678" is no number).
                self.sections.setdefault(name, []).append(list(fields))
            else:
                self.sections.setdefault(name, []).append([_value(f) for f in fields])

    def array(self, name: str) -> "np.ndarray":
        """Section ``name`` as a 2-D numpy array of its numeric columns
        (int64, or float64 when a column has fractions; COV's labels and
        CHK's checksums, text, left out). KeyError for a section not in the output."""
        import numpy as np

        rows = self.sections[name]
        numeric = [[v for v in row if not isinstance(v, str)] for row in rows]
        floats = any(isinstance(v, float) for row in numeric for v in row)
        return np.array(numeric, dtype=np.float64 if floats else np.int64).reshape(len(rows), -1)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<fasthts.Stats: {self.summary.get('sequences', 0)} sequences, sections {' '.join(self.sections)}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stats) and self.text == other.text

    __hash__ = None  # type: ignore[assignment]


def stats(
    path: PathLike,
    regions: Optional[Sequence[str]] = None,
    *,
    ref_seq: Optional[PathLike] = None,
    target_regions: Optional[PathLike] = None,
    coverage: Optional[Sequence[int]] = None,
    remove_dups: bool = False,
    required_flag: Union[int, str, None] = None,
    filtering_flag: Union[int, str, None] = None,
    gc_depth: Optional[float] = None,
    insert_size: Optional[int] = None,
    id: Optional[str] = None,
    read_length: Optional[int] = None,
    most_inserts: Optional[float] = None,
    trim_quality: Optional[int] = None,
    remove_overlaps: bool = False,
    sparse: bool = False,
    cov_threshold: Optional[int] = None,
    reference: Optional[PathLike] = None,
    index: Optional[PathLike] = None,
    threads: Optional[int] = None,
) -> Stats:
    """``samtools stats`` of a BAM, SAM or CRAM file (``fasthts stats``).

    The options are samtools stats' by their long names: ``regions``
    (the ``REGION`` arguments, read through the index, or ``index``:
    ``-X``), ``ref_seq`` (``-r``), ``target_regions`` (``-t``), ``coverage``
    (``-c``: ``(min, max, step)``), ``remove_dups`` (``-d``),
    ``required_flag``/``filtering_flag`` (``-f``/``-F``: a number or
    names such as ``"UNMAP,DUP"``), ``gc_depth`` (``--GC-depth``),
    ``insert_size`` (``-i``), ``id`` (``-I``), ``read_length`` (``-l``),
    ``most_inserts`` (``-m``), ``trim_quality`` (``-q``),
    ``remove_overlaps`` (``-p``), ``sparse`` (``-x``), ``cov_threshold``
    (``-g``), ``reference`` (``--reference``, a CRAM's FASTA), ``threads``
    (``-@``; default all cores). ``-S``'s split files are the CLI's.
    Errors are those of the CLI (``fasthts.Error`` naming the file).
    """
    text, notes = _fasthts._stats_text(
        path,
        None if regions is None else list(regions),
        ref_seq=ref_seq,
        target_regions=target_regions,
        coverage=None if coverage is None else tuple(coverage),
        remove_dups=remove_dups,
        required_flag=required_flag,
        filtering_flag=filtering_flag,
        gc_depth=gc_depth,
        insert_size=insert_size,
        id=id,
        read_length=read_length,
        most_inserts=most_inserts,
        trim_quality=trim_quality,
        remove_overlaps=remove_overlaps,
        sparse=sparse,
        cov_threshold=cov_threshold,
        reference=reference,
        index=index,
        threads=threads,
    )
    return Stats(text, notes)
