"""fasthts: samtools/khmer/FACETS-compatible BAM, pileup and k-mer work, fast.

The engine is Rust (the ``fasthts`` crate); every call that reads or
writes data releases the GIL and runs on all cores. Results equal the
``fasthts`` command line's (and so samtools', khmer's and FACETS').

Open a BAM and get a region's records as numpy arrays:

>>> import fasthts, numpy as np
>>> bam = fasthts.BamFile("tests/data/small.bam")
>>> cols = bam.columns("chr1:1-100000")
>>> len(cols["pos"]), int(np.count_nonzero(cols["mapq"] >= 30))
(272, 250)

Regions are start-based: a record belongs to the region where it
**starts** (its POS), so regions that tile the genome see every record
exactly once. See ``docs/python.md`` for the tutorial.
"""

from __future__ import annotations

import os as _os
import sys as _sys
import threading as _threading
from concurrent.futures import ThreadPoolExecutor as _ThreadPoolExecutor
from typing import Any as _Any, Callable as _Callable, Dict as _Dict, Iterable as _Iterable, List as _List
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Optional as _Optional, Sequence as _Sequence, TypeVar as _TypeVar, Union as _Union

if _TYPE_CHECKING:
    import numpy as _np
# numpy is imported where arrays are made, not here: a script ported from
# pysam reads records without it (importing it costs a tenth of a second
# and starts OpenBLAS' threads).

from . import _fasthts, samtools
from ._alignment import AlignedSegment, AlignmentFile, AlignmentHeader, IndexStats
from ._stats import Stats, stats
from ._pysam_names import *  # noqa: F401,F403 (pysam's constants and helpers)
from ._pysam_names import __all__ as _pysam_names
from .samtools import SamtoolsError, bam2fq, cat, collate, coverage, faidx, fasta, fastq, fixmate, fqidx, idxstats, merge, quickcheck, view
from ._fasthts import (
    Countgraph,
    Error,
    FastaFile,
    FlagStat,
    HLLCounter,
    PileupColumn,
    PileupRead,
    SmallCountgraph,
    Record,
    Region,
    __version__,
    flagstat,
    index,
    markdup,
    seqfile_split,
    snp_pileup,
    sormadup,
    sort,
)

__all__ = [
    "AlignedSegment",
    "AlignmentFile",
    "AlignmentHeader",
    "BamFile",
    "Countgraph",
    "Error",
    "FastaFile",
    "FlagStat",
    "HLLCounter",
    "IndexStats",
    "PileupColumn",
    "PileupRead",
    "Record",
    "Region",
    "SmallCountgraph",
    "SamtoolsError",
    "Stats",
    "bam2fq",
    "cat",
    "collate",
    "coverage",
    "depth",
    "faidx",
    "fasta",
    "fastq",
    "fixmate",
    "fqidx",
    "idxstats",
    "merge",
    "quickcheck",
    "samtools",
    "view",
    "flagstat",
    "index",
    "markdup",
    "scatter",
    "seqfile_split",
    "snp_pileup",
    "sormadup",
    "sort",
    "stats",
    "__version__",
    # pysam's older names of its classes.
    "Samfile",
    "Fastafile",
    *_pysam_names,
]

Samfile = AlignmentFile
Fastafile = FastaFile

_T = _TypeVar("T")
_RegionLike = _Union[Region, str, tuple]


def _arrays(d: _Dict[str, _Any]) -> _Dict[str, _np.ndarray]:
    # Each Column exposes the memory Rust wrote the values into through
    # numpy's array interface: asarray wraps it without a copy (the array
    # keeps the Column, which owns the memory, as its base).
    import numpy as np

    return {k: np.asarray(col) for k, col in d.items()}


class BamFile(_fasthts.BamFile):
    """A BAM file, memory-mapped, with its index; or a CRAM file; or SAM.

    ``BamFile(path, index=None, reference=None)``: the index is ``index``
    if given, else the ``.csi``/``.bai`` beside the file (as the CLI finds
    it: used with a warning, its chunks checked against the file, if older
    than the BAM), else built in memory on the first region query (a BAM
    not sorted by coordinate is refused as such). An index made for a file
    with other references, or pointing outside this one, is refused. A
    region string is read as ``fasthts view FILE REGION`` reads one
    (``"."``: the whole file, ``"*"``: the unplaced records).

    A CRAM file (``is_cram``) has the same API and gives the same records,
    regions and columns as the BAM it was made from. It is decoded by
    htslib, its reference found as samtools finds it: ``reference`` (or
    pysam's ``reference_filename``), else ``REF_PATH``/``REF_CACHE`` by the
    ``M5`` of ``@SQ``, else its ``UR``; an embedded reference needs none.
    Its index is ``index`` or the ``.crai`` beside it, else one made in
    memory on the first region query. Work is cut where its containers
    begin, so a region or the whole file is read on several threads;
    ``columns`` decodes no names, qualities or tags.

    SAM text (``is_sam``: bgzipped, plain or gzip-compressed) gives what
    the BAM ``samtools view -b`` makes of it gives. ``columns()`` and
    ``fetch()`` read the file from its start (inflated ahead, parsed on
    ``threads`` threads, in file order). A bgzipped SAM is read by region
    through its index (``samtools index`` or ``fasthts index``: a CSI or
    BAI, ``index`` or beside the file, found and checked as a BAM's), as
    ``samtools view`` reads it: ``fetch``/``columns`` with a region,
    ``columns_many``, ``plan`` and ``scatter``. Without an index, or on SAM
    that is not bgzipped (which no index can describe), they raise
    ``fasthts.Error`` in one line naming the file and what is needed.

    A ``BamFile`` pickles as its path (and index and reference): a worker
    process opens the file itself (a shared filesystem is assumed).

    >>> bam = fasthts.BamFile("tests/data/small.bam")
    >>> [(r.pos, r.cigarstring, r.get_tag("RG")) for r in bam.fetch("chr1:1-2000")][:2]
    [(597, '132M', 'rg1'), (597, '132M', 'rg1')]
    """

    def columns(self, region: _Optional[_RegionLike] = None, threads: _Optional[int] = None) -> _Dict[str, _np.ndarray]:
        """The records starting in ``region`` as numpy arrays.

        Keys: ``tid`` (int32), ``pos`` (int32, 0-based), ``end`` (int64,
        htslib's ``bam_endpos``), ``flag`` (uint16), ``mapq`` (uint8),
        ``len`` (int32, sequence length), ``mate_tid``, ``mate_pos``,
        ``tlen`` (int32). ``region=None`` reads the whole file as
        ``flagstat`` does: through the index file, region by region, on
        ``threads`` threads, or sequentially when there is none or it does
        not describe the file (SAM: from its start, parsed on ``threads``
        threads). Built in Rust with the GIL released.
        """
        return _arrays(self._columns(region, threads))

    def columns_many(self, regions: _Iterable[_RegionLike], threads: _Optional[int] = None) -> _List[_Dict[str, _np.ndarray]]:
        """``columns`` of many regions, read in parallel; in the order given."""
        return [_arrays(d) for d in self._columns_many(list(regions), threads)]


def depth(
    paths,
    region: _Optional[str] = None,
    bed=None,
    all_positions: int = 0,
    min_base_quality: int = 0,
    min_mapping_quality: int = 0,
    min_read_length: int = 0,
    include_flags=(),
    exclude_flags=(),
    count_deletions: bool = False,
    remove_overlaps: bool = False,
    threads: _Optional[int] = None,
) -> _Dict[str, _Any]:
    """samtools depth (``fasthts depth``) of one BAM/SAM path or a list of
    them, as numpy arrays: ``{"references": [names], "tid": int32,
    "pos": int64 (0-based), "depth": uint32 of shape (positions, files)}``,
    one row per line ``samtools depth`` prints, in its order.

    Options as the CLI's: ``region`` (``-r``), ``bed`` (``-b``),
    ``all_positions`` 1 or 2 (``-a``/``-aa``), ``min_base_quality``
    (``-q``), ``min_mapping_quality`` (``-Q``), ``min_read_length``
    (``-l``), ``include_flags``/``exclude_flags`` (``-g``/``-G``: ints or
    names such as ``"DUP,SECONDARY"``, or lists of them),
    ``count_deletions`` (``-J``), ``remove_overlaps`` (``-s``), ``threads``.
    """
    from ._alignment import _path

    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    paths = [_path(p, "paths") for p in paths]

    def flag_list(v):
        if isinstance(v, (int, str)):
            v = [v]
        return [str(int(x)) if isinstance(x, int) else x for x in v]

    refs, tid, pos, dep = _fasthts._depth(
        paths, region, None if bed is None else _path(bed, "bed"), all_positions, min_base_quality, min_mapping_quality,
        min_read_length, flag_list(include_flags), flag_list(exclude_flags), count_deletions, remove_overlaps, threads,
    )
    import numpy as np

    return {
        "references": refs,
        "tid": np.frombuffer(tid, dtype=np.int32),
        "pos": np.frombuffer(pos, dtype=np.int64),
        "depth": np.frombuffer(dep, dtype=np.uint32).reshape(-1, len(paths)),
    }


def _progress(total: int, enabled: _Optional[bool], label: str):
    """A minimal text progress bar on stderr (tqdm-like); off unless
    ``enabled`` is True, or None and stderr is a terminal."""
    if enabled is None:
        enabled = _sys.stderr.isatty()
    lock = _threading.Lock()
    done = [0]

    def tick() -> None:
        if not enabled:
            return
        with lock:
            done[0] += 1
            n = done[0]
            width = 30
            filled = width * n // max(total, 1)
            _sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {n}/{total}")
            if n == total:
                _sys.stderr.write("\n")
            _sys.stderr.flush()

    return tick


def scatter(
    bam: _Union[BamFile, str, _os.PathLike],
    regions: _Optional[_Sequence[_RegionLike]],
    fn: _Callable[[Region, _Dict[str, _np.ndarray]], _T],
    threads: _Optional[int] = None,
    progress: _Optional[bool] = None,
) -> _List[_T]:
    """Runs ``fn(region, columns)`` for every region on a thread pool.

    ``columns`` is ``bam.columns(region)``, read in Rust with the GIL
    released, so the reading of one region overlaps the Python work of
    others. ``regions=None`` uses ``bam.plan()`` (tiles of the genome plus
    the unplaced records: every record once). Results come back in the
    order of ``regions``; the first exception raised is re-raised.

    >>> def mean_mapq(region, cols):
    ...     return round(float(cols["mapq"].mean()), 1) if len(cols["mapq"]) else 0.0
    >>> fasthts.scatter("tests/data/small.bam", None, mean_mapq)
    [53.0, 52.0, 50.4, 27.4, 0.0]
    """
    if not isinstance(bam, BamFile):
        bam = BamFile(_os.fspath(bam))
    regs: _List[Region] = bam.plan() if regions is None else [bam.region(r) for r in regions]
    tick = _progress(len(regs), progress, "scatter")

    def one(r: Region) -> _T:
        out = fn(r, bam.columns(r, threads=1))
        tick()
        return out

    with _ThreadPoolExecutor(max_workers=threads or _os.cpu_count() or 1) as pool:
        return list(pool.map(one, regs))
del annotations  # (the __future__ import binds the name; not part of the API)


#: pysam's keywords of its samtools functions (``pysam.utils.PysamDispatcher``).
_PYSAM_KEYWORDS = frozenset(("catch_stdout", "save_stdout", "split_lines", "raw"))


def _or_samtools_form(own: _Callable[..., _Any], paths: int) -> _Callable[..., _Any]:
    """``own``, a fasthts function whose name pysam gives a samtools
    command, also taking pysam's form of that name (``fasthts.samtools``):
    a call is pysam's when it passes one of pysam's keywords, or no keyword
    and an option (``"-o"``, ``"-@2"``) among its arguments or fewer
    arguments than the ``paths`` ``own`` needs (``sort(bam)``). A call with
    nothing but paths is fasthts': ``flagstat(bam)`` is a ``FlagStat``
    (``str()`` of it is pysam's text), ``stats(bam)`` a ``Stats``,
    ``depth(bam)`` arrays."""
    dispatcher = getattr(samtools, own.__name__)

    def call(*args: _Any, **kwargs: _Any) -> _Any:
        if _PYSAM_KEYWORDS.intersection(kwargs) or (
            not kwargs and (len(args) < paths or any(isinstance(a, str) and len(a) > 1 and a.startswith("-") for a in args))
        ):
            return dispatcher(*args, **kwargs)
        return own(*args, **kwargs)

    call.__name__ = own.__name__
    call.__qualname__ = own.__name__
    call.__doc__ = own.__doc__
    call.__wrapped__ = own  # type: ignore[attr-defined]
    return call


depth = _or_samtools_form(depth, 1)
flagstat = _or_samtools_form(flagstat, 1)
index = _or_samtools_form(index, 1)
markdup = _or_samtools_form(markdup, 2)
sort = _or_samtools_form(sort, 2)
stats = _or_samtools_form(stats, 1)
