"""fasthts on a dask.distributed cluster.

The same scatter/gather as one machine, with the tasks on the workers of a
``distributed.Client`` that you pass in. Workers open files by path (a
shared filesystem is then assumed) or by URL (``http(s)://``, ``s3://``,
``gs://``; the workers need no copy of the file and no shared
filesystem): no BAM or read file is ever pickled. Results are those of
the single-machine functions.

With URLs, the plan is made on the client and each task fetches only its
own byte ranges: ``flagstat`` and ``stats`` (regions from the index),
``count_kmers`` (record-aligned parts of a plain file), ``snp_pileup`` (blocks of VCF
sites; a block fetches the ranges its regions of the BAMs read, the VCF
streamed; the client writes the output) and ``sort`` (splits at BGZF
block starts; without a shared filesystem the shuffle travels through the
cluster's memory and the client writes the output: see ``sort``).
``index`` needs a local BAM the workers share, and ``sormadup`` (collate,
fixmate -m, sort and markdup: duplicates marked per coordinate part, the
reads whose duplicates may cross into the part before handed over to it;
records equal to ``fasthts.sormadup``'s) paths every worker can read.

>>> from dask.distributed import Client, LocalCluster          # doctest: +SKIP
>>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
>>> stats = fasthts.dask.flagstat(client, "in.bam")            # doctest: +SKIP
>>> stats == fasthts.flagstat("in.bam")                        # doctest: +SKIP
True
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _fasthts
from . import Countgraph, FlagStat
from ._alignment import _path
from ._stats import Stats
from ._stats import stats as _stats_one_machine
from ._dask_sort import _n_threads, _watch, index, sort
from ._dask_sormadup import sormadup

# (The names imported above are not part of this module's API: __all__.)

__all__ = ["flagstat", "stats", "snp_pileup", "count_kmers", "sort", "index", "sormadup"]

PathLike = Union[str, "os.PathLike[str]"]


def _path_list(value: Any, name: str) -> List[str]:
    """A list of path arguments (str, bytes, os.PathLike); TypeError
    naming ``name`` for a single path or anything else (a str is not
    taken as a sequence of one-letter paths)."""
    if isinstance(value, (str, bytes)) or hasattr(value, "__fspath__"):
        raise TypeError(f"{name} must be a list of paths, not a single path ({value!r}): pass [{value!r}]")
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a list of paths, not {type(value).__name__}") from None
    return [_path(p, f"{name}[{i}]") for i, p in enumerate(items)]


def _chunks(items: Sequence[Any], n: int) -> List[List[Any]]:
    """``items`` cut into ``n`` consecutive, nearly equal chunks (order kept)."""
    n = max(1, min(n, len(items)))
    k, r = divmod(len(items), n)
    out, i = [], 0
    for j in range(n):
        size = k + (1 if j < r else 0)
        out.append(list(items[i : i + size]))
        i += size
    return out


def flagstat(
    client: Any,
    path: PathLike,
    region_bytes: Optional[int] = None,
    tasks: Optional[int] = None,
    progress: Optional[bool] = None,
) -> FlagStat:
    """``fasthts.flagstat(path)`` on the cluster.

    The same library functions as ``fasthts.flagstat`` (and the CLI)
    decide how the file is read: when the BAM has a usable index, the
    genome is cut into regions of about ``region_bytes`` compressed bytes
    (default: the CLI's 8 MB); the regions are grouped into ``tasks``
    tasks (default: 2 per worker thread), each counted on a worker, and
    the counts added once the regions' spans are checked to cover the file
    exactly. A BAM without a usable index, a SAM, a failed task or an index
    that does not describe the file (which is reported) means counting
    sequentially, in one task.
    """
    path = _path(path)
    regions = _fasthts.flagstat_plan(path, region_bytes)
    if regions is not None:
        groups = _chunks(regions, tasks or 2 * _n_threads(client))
        futures = [client.submit(_fasthts.flagstat_regions, path, g, 1, pure=False) for g in groups]
        _watch(futures, progress, "flagstat")
        try:
            parts: Optional[List[Any]] = client.gather(futures)
        except (_fasthts.Error, OSError):
            parts = None  # the sequential count reports the file's own errors
        stats = _fasthts.flagstat_gather(path, regions, parts)
        if stats is not None:
            return stats
    return client.submit(_fasthts.flagstat, path, pure=False).result()


def stats(
    client: Any,
    path: PathLike,
    regions: Optional[Sequence[str]] = None,
    tasks: Optional[int] = None,
    progress: Optional[bool] = None,
    **options: Any,
) -> Stats:
    """``fasthts.stats(path, regions, **options)`` on the cluster: the same
    ``Stats`` (its ``text`` the same bytes, so the CLI's), the same errors.

    The library decides how the file is counted, as for ``fasthts.stats``:
    an indexed BAM (a file or a URL) without ``regions`` is counted
    reference by reference. Its references (and the unplaced reads) are
    cut into ``tasks`` runs (default: 2 per worker thread); each run is
    counted on a worker, which sends back its partial statistics as bytes,
    and the client adds them in file order and prints them. The sum is
    used only when it is what one pass over the file gives (reads in
    order, none of 300 cycles or more, no depth carried from one reference
    into the next, barcodes in one reference at most) and the parts
    covered the file exactly; otherwise, and for SAM, CRAM, a BAM without
    a usable index, ``regions``, or a failed task, ``fasthts.stats`` counts
    the file in one task on a worker. ``ref_seq`` (``-r``) and
    ``target_regions`` (``-t``) are read by their paths on the client and
    on every worker, ``reference`` (a CRAM's FASTA) and ``index`` on the
    worker of a one-task count. ``threads``: each task's (default 1; the
    parallelism is the tasks).
    """
    path = _path(path)
    regions = None if regions is None else list(regions)
    if options.get("coverage") is not None:
        options["coverage"] = tuple(options["coverage"])
    plan = None if regions is not None else _fasthts.stats_plan(path, **options)
    if plan is not None:
        task_options = dict(options)
        if task_options.get("threads") is None:
            task_options["threads"] = 1
        groups = _chunks(plan, tasks or 2 * _n_threads(client))
        futures = [client.submit(_fasthts.stats_regions, path, g, pure=False, **task_options) for g in groups]
        _watch(futures, progress, "stats")
        try:
            parts: Optional[List[bytes]] = client.gather(futures)
        except (_fasthts.Error, OSError):
            parts = None  # the one-task count reports the file's own errors
        gathered = _fasthts.stats_gather(path, plan, parts, **options)
        if gathered is not None:
            return Stats(*gathered)
    return client.submit(_stats_one_machine, path, regions, pure=False, **options).result()


def snp_pileup(
    client: Any,
    vcf: PathLike,
    output: PathLike,
    bams: Sequence[PathLike],
    tasks: Optional[int] = None,
    progress: Optional[bool] = None,
    **options: Any,
) -> int:
    """``fasthts.snp_pileup(vcf, output, bams, **options)`` on the cluster;
    the same checks and errors first, and the same output bytes. Returns
    the number of rows. ``reference=`` (the FASTA of CRAM inputs, as
    ``fasthts.snp_pileup``'s) must be readable by that path on the workers.
    ``vcf`` and ``bams`` may be URLs (BAMs with their index beside them):
    each block fetches only the ranges its regions read.

    The VCF's sites are cut into ``tasks`` consecutive blocks (default: 2
    per worker thread; cuts only where the contig changes); each block's
    pileup runs on a worker, reading the BAMs by path or URL through their
    indexes, from its first contig on (contigs before it are not read). FACETS' output depends on where its walk over the pileup
    stands when a block begins (the walk can run past a contig's last site
    into the next contig): every block is first run as if it started the
    file, and a block whose real starting state (the previous block's end
    state) could make a difference is run again from that state. The rows
    are then written in order, by the client, to ``output``.
    """
    vcf, output = _path(vcf, "vcf"), _path(output, "output")
    bams = _path_list(bams, "bams")
    gzip = bool(options.pop("gzip", False))
    # The CRAMs' FASTA (None: as htslib finds it); the blocks get it too.
    reference = options.get("reference")
    if reference is not None:
        options["reference"] = reference = _path(reference, "reference")
    blocks = _fasthts.snp_pileup_plan(vcf, output, bams, tasks or 2 * _n_threads(client), gzip, reference)
    # One thread per task unless told otherwise: the parallelism is the tasks.
    options.setdefault("threads", 1)

    def submit(a: int, b: int, state: Optional[Tuple[int, int]]) -> Any:
        return client.submit(_fasthts.snp_pileup_block, vcf, bams, a, b, state, pure=False, **options)

    def entry(state: Optional[Tuple[int, int]], block_tid: int) -> Optional[Tuple[int, int]]:
        # The state to run the block from: None when a run from the file's
        # start gives the same (the library decides).
        return _fasthts.snp_block_entry_state(state, block_tid)

    # Round 1, in parallel: every block as if it started the file.
    first = [submit(a, b, None) for a, b, _ in blocks]
    _watch(first, progress, "snp_pileup")
    runs = {(i, None): r for i, r in enumerate(client.gather(first))}
    # Round 2, in parallel: blocks whose entry state (the end state of the
    # block before, as run in round 1) matters, from that state.
    guess = [None] + [runs[(i, None)][1] for i in range(len(blocks) - 1)]
    starts = [entry(guess[i], vt) for i, (_, _, vt) in enumerate(blocks)]
    again = {i: submit(a, b, starts[i]) for i, (a, b, _) in enumerate(blocks) if starts[i] not in (None, _fasthts.SNP_WALK_EXHAUSTED)}
    for i, r in zip(again, client.gather(list(again.values()))):
        runs[(i, starts[i])] = r
    # Gather in order; a block whose real entry state differs from both
    # guesses (its predecessor's end changed in round 2) runs once more.
    chunks: List[bytes] = []
    state: Optional[Tuple[int, int]] = None
    for i, (a, b, vt) in enumerate(blocks):
        if state == _fasthts.SNP_WALK_EXHAUSTED:
            break  # FACETS stopped: no later site is looked at
        key = (i, entry(state, vt))
        if key not in runs:
            runs[key] = submit(a, b, key[1]).result()
        text, state = runs[key]
        chunks.append(text)
    _fasthts.write_csv(output, len(bams), chunks, gzip)
    return sum(c.count(b"\n") for c in chunks)


def _count_part(k: int, table_size: int, n_tables: int, bigcount: bool, path: str, start, end, threads: int) -> Countgraph:
    g = Countgraph(k, table_size, n_tables, bigcount)
    g.consume_seqfile(path, threads, start, end)
    return g


def _merge(graphs: List[Countgraph]) -> Countgraph:
    acc = graphs[0]
    for g in graphs[1:]:
        acc.merge(g)
    return acc


def count_kmers(
    client: Any,
    paths: Sequence[PathLike],
    k: int,
    table_size: int,
    n_tables: int,
    bigcount: bool = True,
    parts_per_file: Optional[int] = None,
    threads: int = 1,
    progress: Optional[bool] = None,
) -> Countgraph:
    """``Countgraph(k, table_size, n_tables)`` fed every read of ``paths``,
    counted on the cluster (load-into-counting, distributed).

    Each file is a task, and plain or BGZF-compressed FASTA/FASTQ files are
    further cut into ``parts_per_file`` record-aligned ranges (default:
    enough for 2 tasks per worker thread; ``fasthts.seqfile_split``); other
    gzip files are one task each. Each task counts into its own graph on a worker; the graphs are
    merged pairwise on the workers (``Countgraph.merge``), and the result
    is returned.

    The tables (every bin, hence every count up to 255, ``n_occupied`` and
    the ``.ct`` table bytes) equal single-machine counting's. With bigcount
    on, a k-mer that goes past 255 only when the parts are added reads 255
    instead of its count, and ``n_unique_kmers()`` is 0 (see
    ``Countgraph.merge``); the bigcount entries can be in another order.
    Note that every task holds a full table: memory is
    ``table_size * n_tables`` bytes per running task.

    ``paths`` may be ``http(s)://`` URLs: a plain file is cut on the client
    by reading a little at each cut, and each task fetches only its part; a
    compressed one (BGZF too) is one task, streamed by its worker.
    """
    paths = _path_list(paths, "paths")
    if not paths:
        raise ValueError("count_kmers needs at least one file")
    per = parts_per_file or max(1, (2 * _n_threads(client) + len(paths) - 1) // len(paths))
    pieces: List[Tuple[str, Any, Any]] = []
    for p in paths:
        for start, end in _fasthts.seqfile_split(p, per):
            pieces.append((p, start, end))
    futures = [
        client.submit(_count_part, k, table_size, n_tables, bigcount, p, s, e, threads, pure=False) for p, s, e in pieces
    ]
    _watch(futures, progress, "count_kmers")
    # Pairwise merges on the workers: only the final table travels to the client.
    while len(futures) > 1:
        nxt = []
        for i in range(0, len(futures), 2):
            pair = futures[i : i + 2]
            nxt.append(client.submit(_merge, pair, pure=False) if len(pair) == 2 else pair[0])
        futures = nxt
    return futures[0].result()


if __name__ == "__main__":  # python -m fasthts.dask
    import sys

    from ._dask_cli import main

    sys.exit(main())
