"""``fasthts.AlignmentFile``: pysam's reading API over the fasthts engine.

A pysam script ports by changing ``pysam.AlignmentFile`` to
``fasthts.AlignmentFile``: the same constructor arguments (for reading),
methods, attributes and record objects (``AlignedSegment``), and pysam's
region rule: a record belongs to every region its alignment overlaps
(its end from the CIGAR), as in samtools and htslib.
"""

from __future__ import annotations

import collections as _collections
import io as _io
import operator as _operator
import os as _os
import warnings as _warnings
from typing import Any as _Any, Dict as _Dict, List as _List, Optional as _Optional, Tuple as _Tuple

from . import _fasthts

AlignedSegment = _fasthts.AlignedSegment

IndexStats = _collections.namedtuple("IndexStats", ("contig", "mapped", "unmapped", "total"))

# pysam's largest coordinate (regions without a stop run to it).
_MAX_POS = (1 << 31) - 1

# read_callback="all" of count(): skip unmapped, secondary, QC-failed and
# duplicate reads (BAM_FUNMAP | BAM_FSECONDARY | BAM_FQCFAIL | BAM_FDUP).
_COUNT_ALL_EXCLUDES = 0x4 | 0x100 | 0x200 | 0x400

# Types of the header fields pysam converts (the rest stay str).
_HEADER_INT_FIELDS = {("SQ", "LN")}
_HEADER_RECORDS = ("HD", "SQ", "RG", "PG", "CO")
# pysam 0.24's order of the fields it knows (its VALID_HEADER_ORDER), when
# it writes a header line from a dict; other upper-case fields are left out.
_HEADER_FIELD_ORDER = {
    "HD": ("VN", "SO", "SS", "GO"),
    "SQ": ("SN", "LN", "AS", "M5", "UR", "SP", "AH", "TP", "DS", "AN"),
    "RG": ("ID", "CN", "SM", "LB", "PU", "PI", "DT", "DS", "PL", "FO", "KS", "PG", "PM", "BC"),
    "PG": ("PN", "ID", "VN", "PP", "DS", "CL"),
}
# Write modes: (format, zlib level). pysam takes "wb", "wbu", "wb0", "w",
# "wh"; "wb1"-"wb9" are htslib's levels, which pysam refuses.
_WRITE_MODES = {"w": ("sam", 6), "wh": ("sam", 6), "wb": ("bam", 6), "wbu": ("bam", 0), "wc": ("cram", 6)}
_WRITE_MODES.update({f"wb{level}": ("bam", level) for level in range(10)})


def _path(p: _Any, what: str = "path") -> str:
    """A path argument as str: str, bytes or os.PathLike (TypeError otherwise)."""
    if isinstance(p, (str, bytes)) or hasattr(p, "__fspath__"):
        return _os.fsdecode(_os.fspath(p))
    raise TypeError(f"{what} must be a str, bytes or os.PathLike path, not {type(p).__name__}")


def _open_file_path(obj: _Any) -> _Optional[_Tuple[str, int, str]]:
    """pysam's reading and writing of an already open file, given as a
    file object (anything with ``fileno()``) or a file descriptor: its
    descriptor duplicated (the AlignmentFile works on after the caller
    closes theirs, and closing it leaves theirs open), the path fasthts
    opens it by (``/dev/fd/N``), and the name pysam gives it (the object's
    ``name``, else ``<fd:N>``). None for a path argument."""
    if isinstance(obj, (str, bytes)) or hasattr(obj, "__fspath__"):
        return None
    if isinstance(obj, _io.StringIO):
        raise NotImplementedError("access from StringIO objects not supported")
    if isinstance(obj, bool) or not (isinstance(obj, int) or hasattr(obj, "fileno")):
        raise TypeError(f"filepath_or_object must be a str, bytes or os.PathLike path, a file object or a file descriptor, not {type(obj).__name__}")
    if getattr(obj, "closed", False):
        raise ValueError("I/O operation on closed file")
    fd = obj if isinstance(obj, int) else obj.fileno()
    if hasattr(obj, "flush"):
        obj.flush()
    duplicate = _os.dup(fd)
    name = getattr(obj, "name", None)
    return f"/dev/fd/{duplicate}", duplicate, str(name) if name is not None else f"<fd:{fd}>"


class AlignmentHeader:
    """The header of an ``AlignmentFile`` (pysam's ``AlignmentHeader``)."""

    def __init__(self, raw_text: str, references: _List[tuple], reader: _Any = None):
        self._raw = raw_text
        self._refs = list(references)
        # The file it was read from: a writer given it writes its bytes as stored.
        self._reader = reader
        self._has_text = True
        # Reference names -> ids, built on first use (_lookup).
        self._ref_names = None

    @classmethod
    def from_dict(cls, header_dict: _Any) -> "AlignmentHeader":
        """A header from pysam's dict form, its text as pysam writes it."""
        text = _header_text_from_dict(header_dict)
        return cls(text, _references_of_text(text))

    @classmethod
    def from_text(cls, text: str) -> "AlignmentHeader":
        """A header from SAM header text (references from its @SQ lines)."""
        return cls(text, _references_of_text(text))

    @classmethod
    def from_references(cls, reference_names: _Any, reference_lengths: _Any, text: _Any = None, add_sq_text: bool = True) -> "AlignmentHeader":
        """A header of these references (pysam's: with @SQ text when no
        ``text`` is given and ``add_sq_text``)."""
        names = [str(n) for n in reference_names]
        lengths = [int(l) for l in reference_lengths]
        if len(names) != len(lengths):
            raise ValueError("number of reference names and lengths do not match")
        if text is None and add_sq_text:
            text = "".join(f"@SQ\tSN:{n}\tLN:{l}\n" for n, l in zip(names, lengths))
        header = cls(text or "", list(zip(names, lengths)))
        # No text at all (not even empty): a SAM file gets no header (htslib).
        header._has_text = text is not None
        return header

    def copy(self) -> "AlignmentHeader":
        header = AlignmentHeader(self._raw, self._refs, self._reader)
        header._has_text = self._has_text
        header._ref_names = self._ref_names
        return header

    @property
    def references(self) -> tuple:
        return tuple(n for n, _ in self._refs)

    @property
    def lengths(self) -> tuple:
        return tuple(l for _, l in self._refs)

    @property
    def nreferences(self) -> int:
        return len(self._refs)

    def _sequence_section(self) -> str:
        return "".join(f"@SQ\tSN:{n}\tLN:{l}\n" for n, l in self._refs)

    def __str__(self) -> str:
        # pysam: the text as stored, and @SQ lines from the binary
        # references when the text has none.
        text = self._raw
        if "@SQ" not in text:
            text += "\n" + self._sequence_section()
        return text

    def to_dict(self) -> _Dict[str, _Any]:
        """``{"HD": {...}, "SQ": [{...}, ...], "RG": [...], "PG": [...],
        "CO": [str, ...]}`` as pysam parses the text (``LN`` as int, a
        ``CL`` field takes the rest of its line); ``SQ`` from the binary
        references when the text has no @SQ line."""
        result: _Dict[str, _Any] = _collections.OrderedDict()
        for line in str(self).split("\n"):
            line = line.strip(" \0")
            if not line:
                continue
            if not line.startswith("@"):
                raise ValueError(f"header line without '@': {line!r}")
            fields = line[1:].split("\t")
            record = fields[0]
            if record not in _HEADER_RECORDS:
                raise ValueError(f"header line with invalid type {record!r}: {line!r}")
            if record == "CO":
                result.setdefault("CO", []).append("\t".join(fields[1:]))
                continue
            x: _Dict[str, _Any] = {}
            for i, field in enumerate(fields[1:]):
                if ":" not in field:
                    raise ValueError("malformatted header: no ':' in field")
                key, value = field.split(":", 1)
                if key == "CL":
                    # A command line may hold tabs: it takes the rest of the line.
                    key, value = "\t".join(fields[i + 1 :]).split(":", 1)
                    x[key] = value
                    break
                x[key] = int(value) if (record, key) in _HEADER_INT_FIELDS else value
            if record == "HD":
                if "HD" in result:
                    raise ValueError("multiple 'HD' lines are not permitted")
                result["HD"] = x
            else:
                result.setdefault(record, []).append(x)
        if "SQ" not in result:
            result["SQ"] = [{"LN": l, "SN": n} for n, l in self._refs]
        return result

    as_dict = to_dict

    def __getitem__(self, key: str) -> _Any:
        return self.to_dict()[key]

    def items(self):
        return self.to_dict().items()

    def keys(self):
        return self.to_dict().keys()

    def values(self):
        return self.to_dict().values()

    def __contains__(self, key: str) -> bool:
        return key in self.to_dict()

    # pysam's other dictionary methods, kept for older scripts.
    def get(self, *args: _Any) -> _Any:
        return self.to_dict().get(*args)

    def iteritems(self):
        return self.to_dict().items()

    def __len__(self) -> int:
        return len(self.to_dict())

    def __bool__(self) -> bool:
        # pysam's: a header object is true (an empty one too), not its length.
        return True

    def __setitem__(self, key: str, value: _Any) -> None:
        raise TypeError("AlignmentHeader does not support item assignment (use header.to_dict()")

    def _lookup(self) -> _Any:
        """The reference names -> ids (``@SQ SN:`` names and ``AN:``
        alternatives, as htslib and pysam look them up): the file's, or one
        built once from this header's text and names."""
        if self._ref_names is None:
            if self._reader is not None:
                self._ref_names = self._reader.ref_names
            else:
                self._ref_names = _fasthts._RefNames(self._raw, [n for n, _ in self._refs])
        return self._ref_names

    def get_tid(self, reference: str) -> int:
        """The id of ``reference`` (an ``@SQ SN:`` name or an ``AN:``
        alternative of the header text, as pysam); -1 when the file has no
        such reference."""
        if isinstance(reference, bytes):
            reference = reference.decode()
        if not isinstance(reference, str):
            return -1
        return self._lookup().tid(reference)

    def get_reference_name(self, tid: int) -> _Optional[str]:
        if tid == -1:
            return None
        if not 0 <= tid < len(self._refs):
            raise ValueError(f"reference_id {tid} out of range 0<=tid<{len(self._refs)}")
        return self._refs[tid][0]

    def get_reference_length(self, reference: str) -> int:
        tid = self.get_tid(reference)
        if tid < 0:
            raise KeyError(f"unknown reference {reference}")
        return self._refs[tid][1]

    def is_valid_tid(self, tid: int) -> bool:
        return 0 <= tid < len(self._refs)


def _header_line(fields: _Any, record: str) -> str:
    """pysam's ``_build_header_line``."""
    line = [f"@{record}"]
    if record == "CO":
        line.append(fields)
    elif record.islower():
        line.extend(f"{k}:{fields[k]}" for k in sorted(fields))
    else:
        line.extend(f"{k}:{fields[k]}" for k in _HEADER_FIELD_ORDER.get(record, ()) if k in fields)
        line.extend(f"{k}:{v}" for k, v in fields.items() if not k.isupper())
    return "\t".join(line)


def _header_text_from_dict(header: _Any) -> str:
    """The text pysam's ``AlignmentHeader.from_dict`` builds: the records
    pysam knows in its order, then the others sorted by name."""
    lines = []
    for record in _HEADER_RECORDS:
        data = header.get(record)
        if not data:
            continue
        if isinstance(data, dict):
            lines.append(_header_line(data, record))
        else:
            lines.extend(_header_line(fields, record) for fields in data)
    for record, data in sorted(header.items()):
        if record in _HEADER_RECORDS:
            continue
        if isinstance(data, dict):
            lines.append(_header_line(data, record))
        else:
            lines.extend(_header_line(fields, record) for fields in data)
    return "\n".join(lines) + "\n"


def _references_of_text(text: str) -> _List[tuple]:
    """``[(name, length)]`` of the @SQ lines of header text."""
    refs = []
    for line in text.split("\n"):
        if line.startswith("@SQ\t"):
            fields = dict(f.split(":", 1) for f in line.split("\t")[1:] if ":" in f)
            if "SN" in fields and "LN" in fields:
                refs.append((fields["SN"], int(fields["LN"])))
    return refs


class AlignmentFile:
    """A BAM or SAM file opened for reading, with pysam's API.

    ``AlignmentFile(path, mode="r"/"rb", check_sq=True, index_filename=None,
    ignore_truncation=False, threads=...)``. A BAM is memory-mapped; its
    index (``index_filename``, else the ``.csi``/``.bai`` beside it) is
    loaded at open, so a missing or foreign index fails here. A BAM without
    its BGZF end-of-file block raises ``OSError`` ("no BGZF EOF marker;
    file may be truncated"), or warns with ``ignore_truncation=True``, as
    pysam does. ``threads`` threads (None or 0, the default: all cores)
    inflate and decode the records ahead of an iterator while Python walks
    them; the records and their order do not depend on it.

    ``fetch`` returns the records **overlapping** a region (pysam's,
    samtools' and htslib's rule); ``fasthts.BamFile`` assigns each record
    to the region where it starts instead (what scatter/gather needs).

    A bgzipped SAM with an index (``index_filename``, else the
    ``.csi``/``.bai`` beside it, loaded at open) is read by region too, as
    ``samtools view`` reads it (pysam refuses regions of any SAM):
    ``fetch``/``count`` with a region, ``has_index()``, ``mapped``,
    ``get_index_statistics()``; ``fetch()`` without a region still reads it
    from its first record to the end, as pysam does. Other SAM raises
    pysam's ``ValueError`` for a region, with the reason.
    """

    def __init__(
        self,
        filepath_or_object: _Any,
        mode: _Optional[str] = None,
        template: _Any = None,
        reference_names: _Any = None,
        reference_lengths: _Any = None,
        text: _Any = None,
        header: _Any = None,
        add_sq_text: bool = True,
        add_sam_header: bool = True,
        check_header: bool = True,
        check_sq: bool = True,
        index_filename: _Any = None,
        filepath_index: _Any = None,
        require_index: bool = False,
        duplicate_filehandle: bool = True,
        ignore_truncation: bool = False,
        format_options: _Any = None,
        threads: _Optional[int] = None,
        reference_filename: _Any = None,
    ):
        self._reader = None
        self._writer = None
        self._written_format = None
        self._iter = None
        self._descriptor = None
        mode = mode or "r"
        if not isinstance(mode, str):
            raise TypeError(f"mode must be a str, not {type(mode).__name__}")
        if mode[0] not in "rw":
            raise AssertionError(f"invalid file opening mode `{mode}`")
        opened = _open_file_path(filepath_or_object)
        if opened is not None:
            filepath_or_object, self._descriptor, shown = opened
        try:
            if mode[0] == "w":
                self._open_for_writing(
                    filepath_or_object, mode, template, header, reference_names, reference_lengths, text, add_sq_text, threads, reference_filename
                )
            else:
                self._open_for_reading(
                    filepath_or_object, mode, check_sq, index_filename, filepath_index, require_index, ignore_truncation, threads, reference_filename
                )
        except BaseException:
            self._close_descriptor()
            raise
        if opened is not None:
            self.filename = shown

    def _close_descriptor(self) -> None:
        descriptor, self._descriptor = getattr(self, "_descriptor", None), None
        if descriptor is not None:
            _os.close(descriptor)

    def _open_for_reading(
        self, filepath_or_object, mode, check_sq, index_filename, filepath_index, require_index, ignore_truncation, threads, reference_filename
    ) -> None:
        self.filename = _path(filepath_or_object, "filepath_or_object")
        self.mode = mode
        self.threads = threads
        index = index_filename if index_filename is not None else filepath_index
        index = None if index is None else _path(index, "index_filename")
        reference = None if reference_filename is None else _path(reference_filename, "reference_filename")
        self._reader = _fasthts._AlignmentReader(self.filename, index, reference, threads)
        if not self._reader.eof_marker:
            msg = f"{self.filename}: no BGZF EOF marker; file may be truncated"
            if not ignore_truncation:
                self._reader = None
                raise OSError(msg)
            _warnings.warn(msg, stacklevel=2)
        self.header = AlignmentHeader(self._reader.raw_text, self._reader.references, self._reader)
        if check_sq and self.header.nreferences == 0:
            self._reader = None
            raise ValueError(
                f"file has no sequences defined (mode='{mode}') - is it SAM/BAM format? Consider opening with check_sq=False"
            )
        if require_index and not self.has_index():
            self._reader = None
            raise OSError(f"{self.filename}: unable to open index file")
        self.index_filename = index

    def _open_for_writing(self, path, mode, template, header, reference_names, reference_lengths, text, add_sq_text, threads, reference_filename) -> None:
        """pysam's write modes: the header from ``template``, ``header``
        (an AlignmentHeader or pysam's dict), ``reference_names`` with
        ``reference_lengths`` (and ``text``), or ``text``, in that order;
        CRAM (``"wc"``) against ``reference_filename``."""
        if mode not in _WRITE_MODES:
            raise AssertionError(f"invalid file opening mode `{mode}`")
        file_format, level = _WRITE_MODES[mode]
        if template is not None:
            new_header = template.header.copy()
        elif isinstance(header, AlignmentHeader):
            new_header = header.copy()
        elif isinstance(header, dict):
            new_header = AlignmentHeader.from_dict(header)
        elif reference_names and reference_lengths:
            new_header = AlignmentHeader.from_references(reference_names, reference_lengths, text=text, add_sq_text=add_sq_text)
        elif text:
            new_header = AlignmentHeader.from_text(text)
        else:
            raise ValueError(
                "either supply options `template`, `header`, `text` or  both `reference_names` and `reference_lengths` for writing"
            )
        self.filename = _path(path, "filepath_or_object")
        self.mode = mode
        self.threads = threads
        self.index_filename = None
        if not isinstance(new_header, AlignmentHeader):
            # Another library's header (pysam's): its text and references.
            new_header = AlignmentHeader(str(new_header), list(zip(new_header.references, new_header.lengths)))
        self.header = new_header
        self._written_format = file_format
        reader = new_header._reader
        raw = None if reader is not None or not new_header._has_text else new_header._raw
        refs = None if reader is not None else list(new_header._refs)
        reference = None if reference_filename is None else _path(reference_filename, "reference_filename")
        self._writer = _fasthts._AlignmentWriter(self.filename, file_format, level, reader, raw, refs, threads, reference)

    def write(self, read: AlignedSegment) -> int:
        """Writes ``read`` (a record read from any fasthts AlignmentFile);
        returns the bytes written, as pysam does."""
        if self._writer is None:
            raise ValueError("I/O operation on closed file")
        return self._writer.write(read)

    # -- file-level ---------------------------------------------------------

    def _open_reader(self):
        if self._reader is None:
            raise ValueError("I/O operation on closed file")
        return self._reader

    def close(self) -> None:
        """Closes the file; a file being written is completed and appears
        at its path only now."""
        self._reader = None
        self._iter = None
        writer, self._writer = getattr(self, "_writer", None), None
        try:
            if writer is not None:
                writer.close()
        finally:
            self._close_descriptor()

    def __enter__(self) -> "AlignmentFile":
        return self

    def __exit__(self, exc_type, *exc) -> bool:
        if exc_type is not None and self._writer is not None:
            # A block that failed leaves no output (the CLI's rule).
            writer, self._writer = self._writer, None
            try:
                writer.abort()
            finally:
                self._close_descriptor()
        self.close()
        return False

    def __del__(self) -> None:
        # As pysam: a file written and never closed is completed when collected.
        if getattr(self, "_writer", None) is not None:
            try:
                self.close()
            except Exception:
                pass

    @property
    def is_open(self) -> bool:
        return self._reader is not None or self._writer is not None

    @property
    def closed(self) -> bool:
        return not self.is_open

    @property
    def is_write(self) -> bool:
        return self._writer is not None or self.mode.startswith("w")

    @property
    def is_bam(self) -> bool:
        if self._written_format is not None:
            return self._written_format == "bam"
        return self._open_reader().is_bam

    @property
    def is_sam(self) -> bool:
        if self._written_format is not None:
            return self._written_format == "sam"
        return self._open_reader().is_sam

    @property
    def is_cram(self) -> bool:
        if self._written_format is not None:
            return self._written_format == "cram"
        return self._open_reader().is_cram

    @property
    def references(self) -> tuple:
        return self.header.references

    @property
    def lengths(self) -> tuple:
        return self.header.lengths

    @property
    def nreferences(self) -> int:
        return self.header.nreferences

    @property
    def text(self) -> str:
        return str(self.header)

    def has_index(self) -> bool:
        """Whether an index was loaded at open (given, or beside the BAM,
        CRAM or bgzipped SAM)."""
        return self._open_reader().indexed

    def check_index(self) -> bool:
        if not self.has_index():
            raise ValueError("mapping information not recorded in index or index not available")
        return True

    def get_tid(self, reference: str) -> int:
        return self.header.get_tid(reference)

    def gettid(self, reference: str) -> int:
        """pysam's older name of ``get_tid``."""
        return self.get_tid(reference)

    def get_reference_name(self, tid: int) -> _Optional[str]:
        return self.header.get_reference_name(tid)

    def getrname(self, tid: int) -> _Optional[str]:
        """pysam's older name of ``get_reference_name``."""
        return self.get_reference_name(tid)

    def get_reference_length(self, reference: str) -> int:
        return self.header.get_reference_length(reference)

    def find_introns(self, read_iterator: _Any) -> "_collections.Counter[_Tuple[int, int]]":
        """pysam's ``find_introns``: a Counter of ``(start, stop)`` (0-based,
        stop exclusive) of every ``N`` operation of the reads, with the number
        of reads having it; ``read_iterator`` is any iterable of reads (a
        ``fetch``, or a generator filtering one)."""
        found: "_collections.Counter[_Tuple[int, int]]" = _collections.Counter()
        for read in read_iterator:
            position = read.reference_start
            if position < 0:
                # pysam keeps the position in an unsigned 32-bit integer.
                raise OverflowError("can't convert negative value to uint32_t")
            cigar = read.cigartuples
            if cigar is None:
                continue
            # As pysam: M, D, = and X move along the reference, N is an
            # intron, the rest (I, S, H, P) do not move.
            for op, length in cigar:
                if op in (0, 2, 7, 8):
                    position += length
                elif op == 3:
                    found[(position, position + length)] += 1
                    position += length
        return found

    def is_valid_tid(self, tid: int) -> bool:
        return self.header.is_valid_tid(tid)

    def is_valid_reference_name(self, contig: str) -> bool:
        return self.header.get_tid(contig) >= 0

    @property
    def is_closed(self) -> bool:
        return self._reader is None

    @property
    def is_read(self) -> bool:
        return self.mode.startswith("r")

    def head(self, n: int, multiple_iterators: bool = True):
        """The first `n` records of the file (pysam's `head`)."""
        it = self.fetch(until_eof=True)
        for _, record in zip(range(n), it):
            yield record

    def _statistics(self):
        self.check_index()
        return self._reader.index_statistics()

    @property
    def mapped(self) -> int:
        """Mapped records, from the index's statistics."""
        per, _ = self._statistics()
        return sum(m for m, _ in per)

    @property
    def unmapped(self) -> int:
        """Unmapped records (with those without a coordinate), from the index."""
        per, nocoor = self._statistics()
        return sum(u for _, u in per) + nocoor

    @property
    def nocoordinate(self) -> int:
        return self._statistics()[1]

    def get_index_statistics(self) -> _List[IndexStats]:
        """Per reference ``IndexStats(contig, mapped, unmapped, total)``
        as the index records them (``samtools idxstats``)."""
        per, _ = self._statistics()
        return [IndexStats(n, m, u, m + u) for n, (m, u) in zip(self.references, per)]

    # -- records ------------------------------------------------------------

    def parse_region(self, contig=None, start=None, stop=None, region=None, tid=None, reference=None, end=None):
        """pysam's ``parse_region``: ``(has_coord, tid, start, stop)``,
        0-based half-open. ``region`` is read as ``fasthts view`` (and
        samtools) reads a region (``chr1:1,000-2,000``, ``chr1:1000``,
        ``chr1:-500``, ``{chr:1}:5-9`` for names with colons, ``1k``/``1e3``
        positions, ``*`` for the unplaced records); ``.``, the whole file,
        is no one region (``fetch(region=".")`` reads it)."""
        has_coord, regions = self._parse_regions(contig, start, stop, region, tid, reference, end)
        if len(regions) != 1:
            raise ValueError('region "." is the whole file (every reference, then the unplaced records), not one region')
        return (has_coord, *regions[0])

    def _parse_regions(self, contig=None, start=None, stop=None, region=None, tid=None, reference=None, end=None):
        """``(has_coord, [(tid, start, stop), ...])``: as ``parse_region``,
        with every region a region string names (``.``: each reference,
        then the unplaced records)."""
        if reference is not None:
            if contig is not None:
                raise ValueError("contig and reference should not both be specified")
            contig = reference
        if end is not None:
            if stop is not None:
                raise ValueError("stop and end should not both be specified")
            stop = end
        if contig is None and tid is None and region is None:
            return 0, [(0, 0, _MAX_POS)]
        # Any integer (numpy's too: pysam takes what has __index__).
        bounds = []
        for name, v in (("start", start), ("stop", stop)):
            if v is not None:
                try:
                    if isinstance(v, bool):
                        raise TypeError
                    v = _operator.index(v)
                except TypeError:
                    raise TypeError(f"{name} must be an int, not {type(v).__name__}") from None
            bounds.append(v)
        start, stop = bounds
        rstart = 0 if start is None else start
        rstop = _MAX_POS if stop is None else stop
        if region is None and tid is None and contig in ("*", ".") and start is None and stop is None:
            region = contig
        if region is not None:
            if not isinstance(region, str):
                raise TypeError(f"region must be a str, not {type(region).__name__}")
            # As `fasthts view` reads a region (the library's one reading).
            regions = self.header._lookup().parse_region(region)
            return 1, [(t, max(s, 0), min(e, _MAX_POS)) for t, s, e in regions]
        if tid is not None:
            if not self.is_valid_tid(tid):
                raise IndexError("invalid tid")
            rtid = tid
        elif contig == "*":
            rtid = -1
        else:
            if not isinstance(contig, str):
                raise TypeError(f"contig must be a str, not {type(contig).__name__}")
            rtid = self.get_tid(contig)
            if rtid < 0 and start is None and stop is None and ":" in contig:
                # A region string where the contig goes (older pysam read it so).
                return self._parse_regions(region=contig)
            if rtid < 0:
                raise ValueError(f"invalid contig `{contig}`")
        if rstart > rstop:
            raise ValueError(f"invalid coordinates: start ({rstart}) > stop ({rstop})")
        if not 0 <= rstart < _MAX_POS:
            raise ValueError(f"start out of range ({rstart})")
        if not 0 <= rstop <= _MAX_POS:
            raise ValueError(f"stop out of range ({rstop})")
        return 1, [(rtid, rstart, rstop)]

    def fetch(self, contig=None, start=None, stop=None, region=None, tid=None, until_eof=False, multiple_iterators=False, reference=None, end=None):
        """Records overlapping a region (pysam's ``fetch``): ``fetch("chr1",
        1000, 2000)`` (0-based, half-open), ``fetch(region="chr1:1,001-2,000")``
        (1-based, inclusive, read as ``fasthts view`` reads a region),
        ``fetch("*")`` (the unplaced records), ``fetch(region=".")`` (every
        reference, then the unplaced records, as ``samtools view FILE .``),
        ``fetch()`` (every reference's records, through the index),
        ``fetch(until_eof=True)`` (every record in file order, unplaced
        included; no index needed). Each call returns its own iterator."""
        reader = self._open_reader()
        has_coord, regions = self._parse_regions(contig, start, stop, region, tid, reference=reference, end=end)
        if not reader.random_access and not reader.is_cram:
            if has_coord:
                # pysam's words, then why, naming the file.
                raise ValueError(f"fetching by region is not available for SAM files: {reader.no_regions}")
            return reader.fetch_all()
        if self.is_sam and not has_coord:
            # As pysam reads any SAM: from the first record to the end,
            # unplaced records included (an index is used for regions only).
            return reader.fetch_all()
        if not until_eof and not self.has_index():
            raise ValueError("fetch called on bamfile without index")
        if has_coord:
            return reader.fetch_regions(regions)
        if until_eof:
            return reader.fetch_all()
        return reader.fetch_references()

    def count(self, contig=None, start=None, stop=None, region=None, until_eof=False, read_callback="nofilter", reference=None, end=None) -> int:
        """How many records ``fetch`` with these arguments returns;
        ``read_callback="all"`` skips unmapped, secondary, QC-failed and
        duplicate reads, a function keeps the reads it returns True for."""
        it = self.fetch(contig, start, stop, region, until_eof=until_eof, reference=reference, end=end)
        if read_callback == "nofilter":
            return it._count(0)
        if read_callback == "all":
            return it._count(_COUNT_ALL_EXCLUDES)
        if not callable(read_callback):
            raise ValueError(f"read_callback must be 'all', 'nofilter' or a function, not {read_callback!r}")
        return sum(1 for r in it if read_callback(r))

    def mate(self, read: AlignedSegment) -> AlignedSegment:
        """The mate of ``read``, found as pysam 0.24 finds it: the first
        record of the mate's reference overlapping ``[mate start + 1,
        2**31 - 1)`` (pysam's query) with the read's name and the other one
        of READ1/READ2. ``ValueError`` "read NAME: is unpaired", "mate NAME:
        is unmapped" or "mate not found", as pysam."""
        reader = self._open_reader()
        flag = read.flag
        if flag & 0x1 == 0:
            raise ValueError(f"read {read.query_name}: is unpaired")
        if flag & 0x8 != 0:
            raise ValueError(f"mate {read.query_name}: is unmapped")
        # pysam's fetch(mpos, mpos + 1, tid=mtid): the start is mpos + 1.
        _, regions = self._parse_regions(start=read.next_reference_start + 1, tid=read.next_reference_id)
        if not reader.random_access and not reader.is_cram:
            raise ValueError(f"fetching by region is not available for SAM files: {reader.no_regions}")
        if not self.has_index():
            raise ValueError("fetch called on bamfile without index")
        tid, start, _ = regions[0]
        found = reader.find_mate(read.query_name, flag, tid, start - 1)
        if found is None:
            raise ValueError("mate not found")
        return found

    def count_coverage(self, contig, start=None, stop=None, region=None, quality_threshold=15, read_callback="all", reference=None, end=None):
        """pysam's ``count_coverage``: four ``array.array('L')`` (A, C, G,
        T) of the bases aligned (CIGAR M, =, X) at each position of
        ``[start, stop)`` of ``contig`` (default: the whole reference) by
        the records ``fetch`` returns for these arguments, bases of quality
        below ``quality_threshold`` left out (0: none; a record without
        qualities then counts nothing); ``read_callback``: ``"all"`` skips
        unmapped, secondary, QC-failed and duplicate reads,
        ``"nofilter"`` none, a function keeps the reads it returns True for.
        Counted in one pass in the library (a function is called per read)."""
        length = self.get_reference_length(contig)
        _start = int(start) if start is not None else 0
        # As pysam: `end` bounds the records fetched, not the arrays.
        _stop = int(stop) if stop is not None else length
        _stop = min(_stop, length)
        if _stop == _start:
            raise ValueError("interval of size 0")
        if _stop < _start:
            raise ValueError("interval of size less than 0")
        threshold = int(quality_threshold or 0)
        if read_callback == "all":
            exclude, callback = _COUNT_ALL_EXCLUDES, None
        elif read_callback == "nofilter":
            exclude, callback = 0, None
        else:
            exclude, callback = 0, read_callback
        it = self.fetch(contig=contig, reference=reference, start=start, stop=stop, end=end, region=region)
        return it._count_coverage(_start, _stop, threshold, exclude, callback)

    def pileup(self, contig=None, start=None, stop=None, region=None, reference=None, end=None, **kwargs):
        """pysam's ``pileup``: an iterator of ``PileupColumn``, each covered
        position once, with htslib's pileup (its depth cap ``max_depth``,
        default 8000, and with ``ignore_overlaps`` its mate-overlap
        quality adjustment). With a region, the columns of the reads
        overlapping it (``truncate=True``: only its own columns); without,
        each reference in turn (through the index; without one, the whole
        file in file order). ``stepper``: ``"samtools"`` (pysam's default:
        ``flag_filter``, ``flag_require``, ``min_mapping_quality``,
        ``ignore_orphans``), ``"all"`` (``flag_filter`` only),
        ``"nofilter"``. ``min_base_quality`` (13) filters the column's
        lists, not ``nsegments``. ``fastafile`` (a ``fasthts.FastaFile``),
        with the ``"samtools"`` stepper: each read passing the flag tests
        is read against its reference's sequence (fetched when the
        reference changes; one missing from the FASTA ends the iteration
        with pysam's ``ValueError``): ``compute_baq`` (True) lowers its
        base qualities by htslib's extended BAQ (adding ``ZQ``; a read
        carrying ``BQ`` is not realigned unless ``redo_baq``, False),
        ``adjust_capq_threshold`` (0: off) above 10 caps its mapping
        quality with htslib's ``sam_cap_mapq`` (a read it refuses is
        skipped), both before the ``min_mapping_quality`` test; and the
        columns' ``get_query_sequences`` mark matches and show deleted
        bases from it. Other keywords are ignored, as pysam ignores
        them."""
        reader = self._open_reader()
        stepper = kwargs.get("stepper", "samtools")
        if stepper is None:
            stepper = "all"
        fastafile = kwargs.get("fastafile")
        if fastafile is not None and not isinstance(fastafile, _fasthts.FastaFile):
            # pysam's words, its class named as fasthts'.
            raise TypeError(f"Cannot convert {type(fastafile).__name__} to fasthts.FastaFile")
        has_coord, regions = self._parse_regions(contig, start, stop, region, reference=reference, end=end)
        truncate = None
        if has_coord:
            if not self.has_index():
                raise ValueError("no index available for pileup")
            if kwargs.get("truncate", False) and len(regions) == 1:
                truncate = regions[0]
        else:
            regions = None
        flag_filter = kwargs.get("flag_filter", _COUNT_ALL_EXCLUDES)
        return reader.pileup(
            regions,
            truncate,
            self.has_index(),
            stepper,
            int(kwargs.get("max_depth", 8000) or 0),
            bool(kwargs.get("ignore_overlaps", True)),
            int(flag_filter) & 0xFFFFFFFF,
            int(kwargs.get("flag_require", 0)) & 0xFFFFFFFF,
            bool(kwargs.get("ignore_orphans", True)),
            int(kwargs.get("min_mapping_quality", 0)),
            int(kwargs.get("min_base_quality", 13)),
            fastafile,
            bool(kwargs.get("compute_baq", True)),
            bool(kwargs.get("redo_baq", False)),
            int(kwargs.get("adjust_capq_threshold", 0)),
        )

    def __iter__(self) -> "AlignmentFile":
        self._open_reader()
        return self

    def __next__(self):
        # Iterating the file reads it from the first record to the end.
        if self._iter is None:
            self._iter = self._open_reader().fetch_all()
        return next(self._iter)

    def __repr__(self) -> str:
        return f"<fasthts.AlignmentFile {self.filename!r} mode={self.mode!r}>"
