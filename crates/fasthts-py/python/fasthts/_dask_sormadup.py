"""``fasthts.dask.sormadup``: ``fasthts.sormadup`` on a dask.distributed
cluster.

The steps are those of ``fasthts::command::distributed_sormadup`` (the
Rust library's module docs explain each), on the distributed sort's
splits, samples, part boundaries and output assembly (``_dask_sort``); this
module only submits them and checks what they report. Every file goes to a
work directory beside the output (a shared filesystem); nothing but small
values travels through dask.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _fasthts
from ._alignment import _path
from ._dask_sort import _PART_BYTES, _SPLIT_BYTES, _Clock, _assemble, _boundaries, _chain, _n_threads, _remove_tree, _submitter, _watch, _work_directory

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

#: samtools collate's buckets (``-n``' default), which the one-machine
#: sormadup collates into: the order of coordinate ties depends on them.
_COLLATE_BUCKETS = 64
#: The coordinate order, as ``_fasthts.dask_sort_*`` take an order.
_COORDINATE = (False, None, False, False, 20)


def sormadup(
    client: Any,
    inputs: Union[PathLike, Sequence[PathLike]],
    output: PathLike,
    remove_duplicates: bool = False,
    max_read_length: int = 300,
    mark_supplementary: bool = False,
    optical_distance: int = 0,
    clear_previous: bool = False,
    mode: str = "t",
    include_fails: bool = False,
    no_multi_dup: bool = False,
    read_coords: Optional[str] = None,
    coords_order: str = "txy",
    barcode_tag: Optional[str] = None,
    barcode_name: bool = False,
    barcode_rgx: Optional[str] = None,
    tag_originals: bool = False,
    stats_file: Optional[PathLike] = None,
    level: Optional[int] = None,
    memory: Union[int, str, None] = None,
    write_index: bool = False,
    no_pg: bool = False,
    collate: bool = False,
    fix_remove: bool = False,
    fix_no_pair_check: bool = False,
    fix_template_cigar: bool = False,
    parts: Optional[int] = None,
    splits: Optional[int] = None,
    threads: int = 1,
    progress: Optional[bool] = None,
    timings: Optional[Dict[str, float]] = None,
) -> Dict[str, int]:
    """``fasthts.sormadup`` on the cluster: from an aligner's output to a
    duplicate-marked, coordinate-sorted BAM whose records are those of the
    one-machine ``fasthts.sormadup(input, output, **options)`` (and so of
    ``samtools collate | fixmate -m | sort | markdup``), at any number of
    parts, splits and workers; returns the same statistics (a dict keyed
    by samtools' ``-s`` names in lower case; ``stats_file`` writes them as
    ``-f``).

    ``inputs``: one BAM, or several with the same reference sequences,
    taken as ``samtools cat`` joins them (under the first one's header).
    The options are ``fasthts.sormadup``'s: markdup's (``remove_duplicates``
    ... ``tag_originals``), fixmate's (``fix_remove``,
    ``fix_no_pair_check``, ``fix_template_cigar``), ``collate``,
    ``level``, ``write_index`` (each part indexed on its worker, joined on
    the client), ``no_pg``; ``memory`` (per thread) and ``threads`` apply
    to each task on its worker. Refused, in words: ``mark_supplementary``
    (``-S``: its second pass needs every part's duplicates first), an
    output that is not BAM, CRAM or SAM inputs, and several inputs whose
    header says they are grouped by name unless ``collate=True`` (a group
    could continue from one into the next).

    How: each input is cut into ``splits`` at BGZF block starts (as
    ``fasthts.dask.sort``); every split's records go to the files of
    samtools collate's 64 buckets (by the name's hash: a name's records
    meet in one bucket); runs of whole buckets are sorted as collate sorts
    them and fixed as fixmate -m fixes them (an input whose header says it
    is grouped by name is not collated, as on one machine: each split's
    name groups are fixed in input order, a group cut by a split's end by
    the split it starts in), each record sent to the
    coordinate ``part`` that owns it (boundaries from a sample of the
    input, as ``fasthts.dask.sort`` chooses them); every part is sorted;
    then every part is marked from its first record at which markdup may
    start afresh (on another reference, or a window length past every
    earlier read's unclipped end, its own unclipped start beyond them):
    the records before it, reads whose duplicates may lie in the part
    before, are handed over to the part before, which marks on to there.
    A part without such a record is marked by the part before it whole
    (dense data gives fewer, larger marking tasks, never other marks). The
    output is the parts' BGZF blocks concatenated, as
    ``fasthts.dask.sort`` assembles it. Files live in a work directory
    beside ``output`` (a filesystem the workers share), removed on
    success, error and interruption.

    ``timings``: a dict to fill with each stage's wall seconds (``plan``,
    ``sample``, ``collate``, ``fixmate``, ``sort``, ``mark``, ``place``,
    ``index``) and sizes (``splits``, ``parts``, and ``marking_tasks``:
    the parts that marked records, the others handed theirs over).
    """
    clock = _Clock(timings)
    if isinstance(inputs, (str, bytes, os.PathLike)):
        inputs = [inputs]
    elif not isinstance(inputs, (list, tuple)):
        raise TypeError(f"inputs must be a path or a list of paths, not {type(inputs).__name__}")
    paths = [_path(p, "each input") for p in inputs]
    output = _path(output, "output")
    stats_path = None if stats_file is None else _path(stats_file, "stats_file")
    marking = dict(
        remove_duplicates=bool(remove_duplicates),
        max_read_length=int(max_read_length),
        mark_supplementary=bool(mark_supplementary),
        optical_distance=int(optical_distance),
        clear_previous=bool(clear_previous),
        mode=str(mode),
        include_fails=bool(include_fails),
        no_multi_dup=bool(no_multi_dup),
        read_coords=read_coords,
        coords_order=str(coords_order),
        barcode_tag=barcode_tag,
        barcode_name=bool(barcode_name),
        barcode_rgx=barcode_rgx,
        tag_originals=bool(tag_originals),
    )
    fix = (bool(fix_remove), bool(fix_no_pair_check), bool(fix_template_cigar))
    workers = _n_threads(client)
    if write_index:
        data, index_path, index_csi = _fasthts.dask_sort_index_name(output)
    else:
        data, index_path, index_csi = output, None, False
    sizes = [os.path.getsize(p) if os.path.isfile(p) else 0 for p in paths]
    pieces = splits or max(2 * workers, -(-max(sizes) // _SPLIT_BYTES))
    n_parts = parts or max(workers, -(-sum(sizes) // _PART_BYTES))
    planned: Tuple[List[Tuple[int, int, int]], bool] = _fasthts.dask_sormadup_plan(paths, data, pieces, bool(collate), marking)
    plan, collated = planned
    clock.mark("plan")
    header = paths[0]
    command = f"fasthts.dask.sormadup({paths!r}, {output!r})"
    program = None if no_pg else (_fasthts.__version__, command)

    work = _work_directory(data)
    submit, futures = _submitter(client)
    try:
        # The coordinate parts' boundaries, from a sample of the input (the
        # records before fixmate: it moves only unmapped reads, to their
        # mates, so the sample still balances the parts).
        boundaries = _boundaries(client, submit, progress, "sormadup", plan, paths, header, n_parts, _COORDINATE)
        n_parts = len(boundaries) + 1
        clock.mark("sample")

        if collated:
            n_runs, fixed_files = _collate_and_fix(client, submit, progress, clock, work, paths, plan, fix, boundaries, n_parts, workers)
        else:
            n_runs, fixed_files = _fix_groups(client, submit, progress, clock, work, paths, plan, fix, boundaries, n_parts)

        # Every part sorted by coordinate.
        sorted_paths = [os.path.join(work, f"part{p:06}.sorted") for p in range(n_parts)]
        sorted_parts = [
            submit(_fasthts.dask_sormadup_sort, header, [fixed_files(k)[p] for k in range(n_runs)], sorted_paths[p], memory, threads)
            for p in range(n_parts)
        ]
        _watch(sorted_parts, progress, "sormadup: sorting")
        summaries = client.gather(sorted_parts)
        _remove_files(fixed_files(k) for k in range(n_runs))
        reaches = [reach for _, reach in summaries]
        clock.mark("sort")

        # Every part marked, from where markdup may start afresh in it.
        part_paths = [os.path.join(work, f"part{p:06}.bam") for p in range(n_parts)]
        marked = [
            submit(
                _fasthts.dask_sormadup_mark,
                header,
                collated,
                sorted_paths[p:],
                reaches[:p],
                p == 0,
                marking,
                part_paths[p],
                level,
                threads,
                program,
            )
            for p in range(n_parts)
        ]
        _watch(marked, progress, "sormadup: marking")
        results = client.gather(marked)
        clock.mark("mark")
        layout = [(start, end, records) for start, end, records, _, _ in results]
        if timings is not None:
            timings.update(splits=len(plan), parts=n_parts, marking_tasks=sum(1 for start, end, _ in layout if end > start))
        _assemble(client, submit, progress, "sormadup", work, part_paths, layout, data, index_path, index_csi, clock)
        counts = [c for _, _, _, c, _ in results]
        warnings = [w for _, _, _, _, ws in results for w in ws]
        return _fasthts.dask_sormadup_report(counts, warnings, command, stats_path)
    finally:
        client.cancel([f for f in futures if not f.done()])
        _remove_tree(work)


def _collate_and_fix(
    client: Any, submit: Any, progress: Optional[bool], clock: _Clock, work: str, paths: List[str], plan: List[Tuple[int, int, int]],
    fix: Tuple[bool, bool, bool], boundaries: List[bytes], n_parts: int, workers: int,
) -> Tuple[int, Callable[[int], List[str]]]:
    """Steps 1 and 2: every split's records to the files of their collate
    buckets, then runs of whole buckets collated and fixed into the parts'
    files. Returns the number of runs and each run's part files."""
    header = paths[0]

    # Every split's records to the files of their collate buckets.
    def bucket_files(j: int) -> List[str]:
        return [os.path.join(work, f"split{j:06}.bucket{b:02}") for b in range(_COLLATE_BUCKETS)]

    def collate_split(j: int, entry: Optional[int]) -> Any:
        i, s, e = plan[j]
        return submit(_fasthts.dask_sormadup_collate, paths[i], s, e, entry, bucket_files(j))

    collated = [collate_split(j, None) for j in range(len(plan))]
    _watch(collated, progress, "sormadup: collating")
    reports = client.gather(collated)
    used = _chain(plan, paths, reports, lambda r: r[0], lambda r: r[1], lambda j, entry: collate_split(j, entry).result())
    clock.mark("collate")

    # Runs of whole buckets collated and fixed, into the parts' files.
    n_runs = min(_COLLATE_BUCKETS, max(2 * workers, n_parts))
    runs = [list(range(_COLLATE_BUCKETS * k // n_runs, _COLLATE_BUCKETS * (k + 1) // n_runs)) for k in range(n_runs)]

    def fixed_files(k: int) -> List[str]:
        return [os.path.join(work, f"run{k:02}.part{p:06}") for p in range(n_parts)]

    fixed = [
        submit(
            _fasthts.dask_sormadup_fixmate,
            header,
            [[bucket_files(j)[b] for j in used] for b in run],
            k + 1 == n_runs,
            fix,
            boundaries,
            fixed_files(k),
        )
        for k, run in enumerate(runs)
    ]
    _watch(fixed, progress, "sormadup: fixmate")
    client.gather(fixed)
    # Read by now (no task runs again past its stage): the disk space back.
    _remove_files(bucket_files(j) for j in range(len(plan)))
    clock.mark("fixmate")
    return n_runs, fixed_files


def _fix_groups(
    client: Any, submit: Any, progress: Optional[bool], clock: _Clock, work: str, paths: List[str], plan: List[Tuple[int, int, int]],
    fix: Tuple[bool, bool, bool], boundaries: List[bytes], n_parts: int,
) -> Tuple[int, Callable[[int], List[str]]]:
    """For a name-grouped input (one; not collated): every split's name
    groups fixed in input order into the parts' files (a group cut by a
    split's end fixed by the split it starts in). Returns the number of
    splits that hold records and each one's part files."""

    def split_files(j: int) -> List[str]:
        return [os.path.join(work, f"split{j:06}.part{p:06}") for p in range(n_parts)]

    def fix_split(j: int, entry: Optional[int]) -> Any:
        i, s, e = plan[j]
        first = j == 0 or plan[j - 1][0] != i
        return submit(_fasthts.dask_sormadup_fixmate_split, paths[i], s, e, entry, first, fix, boundaries, split_files(j))

    fixed = [fix_split(j, None) for j in range(len(plan))]
    _watch(fixed, progress, "sormadup: fixmate")
    reports = client.gather(fixed)
    used = _chain(plan, paths, reports, lambda r: r[0], lambda r: r[1], lambda j, entry: fix_split(j, entry).result())
    clock.mark("fixmate")
    return len(used), lambda k: split_files(used[k])


def _remove_files(groups: Any) -> None:
    """Removes the work files of a finished stage (lists of paths)."""
    for files in groups:
        for f in files:
            try:
                os.remove(f)
            except FileNotFoundError:
                pass
