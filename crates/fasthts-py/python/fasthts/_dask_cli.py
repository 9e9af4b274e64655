"""``python -m fasthts.dask``: the cluster jobs for people who do not write
Python.

    python -m fasthts.dask sort --scheduler tcp://HOST:8786 -o out.bam in.bam [in2.bam ...]
    python -m fasthts.dask sort --local-workers 4 -n -o by-name.bam in.bam
    python -m fasthts.dask index --scheduler tcp://HOST:8786 sorted.bam
    python -m fasthts.dask sort --local-workers 4 --reference ref.fa -o out.bam in.cram
    python -m fasthts.dask sort --scheduler tcp://HOST:8786 -o out.bam https://host/in.bam s3://bucket/lane2.bam
    python -m fasthts.dask sormadup --local-workers 2 -d 100 -f dups.txt -o marked.bam aligned.bam

Options are samtools sort's and index's and ``fasthts sormadup``'s (as
``fasthts`` takes them); the work is ``fasthts.dask.sort``,
``fasthts.dask.index`` and ``fasthts.dask.sormadup``. A progress bar is shown on a terminal.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from typing import List, Optional

from . import Error


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fasthts.dask",
        description="fasthts jobs on a dask.distributed cluster. sort reads local files (on a filesystem the workers share) "
        "or URLs (http(s)://, s3://, gs://: each task fetches its ranges, and the output is written by this process); "
        "index reads a local BAM the workers share; sormadup reads and writes on a filesystem the workers share.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "sort",
        help="samtools sort on the cluster",
        description="Sorts BAM or CRAM files into one BAM whose content equals `samtools cat IN... | samtools sort` "
        "(see fasthts.dask.sort).",
        epilog="examples:\n"
        "  python -m fasthts.dask sort --scheduler tcp://head:8786 -o sorted.bam lane1.bam lane2.bam\n"
        "  python -m fasthts.dask sort --local-workers 2 -n -o by-name.bam in.bam\n"
        "  python -m fasthts.dask sort --local-workers 2 --reference ref.fa -o sorted.bam in.cram\n"
        "  python -m fasthts.dask sort --scheduler tcp://head:8786 -o sorted.bam https://host/in.bam\n"
        "\n"
        "With a URL input (or --no-shared-filesystem) the workers need no shared filesystem: the shuffle travels\n"
        "through the cluster's memory (spilled to the workers' local disks by dask) and this process writes the output.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "inputs", nargs="+", metavar="IN.bam", help="BGZF-compressed BAM or CRAM files, or BAM URLs (http(s)://, s3://, gs://), joined in this order"
    )
    s.add_argument(
        "-o", dest="output", required=True, metavar="FILE", help="output BAM (BAM only; a path the workers can write with a shared filesystem)"
    )
    s.add_argument(
        "--no-shared-filesystem",
        dest="shared_filesystem",
        action="store_false",
        default=None,
        help="the workers share no filesystem with this process (the default with a URL input)",
    )
    s.add_argument("--reference", metavar="FASTA", help="reference sequence FASTA of CRAM inputs [as htslib finds it]")
    where = s.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDRESS", help="address of a running dask scheduler, e.g. tcp://HOST:8786")
    where.add_argument("--local-workers", type=int, metavar="N", help="start a local cluster of N worker processes instead")
    s.add_argument("-n", dest="by_name", action="store_true", help="sort by read name")
    s.add_argument("-t", dest="tag", metavar="TAG", help="sort by the value of TAG, then by position (or name with -n)")
    s.add_argument("--template-coordinate", action="store_true", help="sort by template coordinate (needs MC tags)")
    s.add_argument("-M", dest="minimiser", action="store_true", help="cluster unplaced reads by minimiser")
    s.add_argument("-K", dest="kmer", type=int, default=20, metavar="INT", help="k-mer size of -M [20]")
    s.add_argument("-l", dest="level", type=int, metavar="INT", help="compression level, 0 to 9 [6]")
    s.add_argument("-m", dest="memory", default=None, metavar="INT", help="memory per thread of each part's sort, e.g. 768M [768M]")
    s.add_argument("-@", dest="threads", type=int, default=1, metavar="INT", help="threads per task on its worker [1]")
    s.add_argument("--write-index", action="store_true", help="write OUT.csi (or OUT##idx##INDEX) too")
    s.add_argument("--no-PG", dest="no_pg", action="store_true", help="do not add a @PG line to the header")
    s.add_argument("--parts", type=int, metavar="N", help="output parts [one per 192 MB of input, at least one per worker thread]")
    s.add_argument("--splits", type=int, metavar="N", help="splits per input [one per 256 MB, at least two per worker thread]")
    s.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    m = sub.add_parser(
        "sormadup",
        help="fasthts sormadup (samtools collate | fixmate -m | sort | markdup) on the cluster",
        description="From an aligner's output to a duplicate-marked, coordinate-sorted BAM with the records of "
        "`fasthts sormadup` on one machine (see fasthts.dask.sormadup). Inputs and output on a filesystem the workers share.",
        epilog="examples:\n"
        "  python -m fasthts.dask sormadup --scheduler tcp://head:8786 -o marked.bam aligned.bam\n"
        "  python -m fasthts.dask sormadup --local-workers 2 -d 100 -f dups.txt --write-index -o marked.bam lane1.bam lane2.bam",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    m.add_argument("inputs", nargs="+", metavar="IN.bam", help="an aligner's BAM output (unsorted or grouped by name), or several joined in this order")
    m.add_argument("-o", dest="output", required=True, metavar="FILE", help="output BAM")
    where = m.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDRESS", help="address of a running dask scheduler, e.g. tcp://HOST:8786")
    where.add_argument("--local-workers", type=int, metavar="N", help="start a local cluster of N worker processes instead")
    m.add_argument("-r", dest="remove_duplicates", action="store_true", help="remove duplicate reads")
    m.add_argument("-s", dest="report", action="store_true", help="report stats (to standard error)")
    m.add_argument("-f", dest="stats_file", metavar="NAME", help="write stats to named file; implies -s")
    m.add_argument("-d", dest="optical_distance", type=int, default=0, metavar="INT", help="optical distance (if set, marks with dt tag) [0]")
    m.add_argument("-c", dest="clear_previous", action="store_true", help="clear previous duplicate settings and tags")
    m.add_argument("--include-fails", action="store_true", help="include quality check failed reads")
    m.add_argument("--no-multi-dup", action="store_true", help="reduced duplicates of duplicates checking")
    m.add_argument("--read-coords", metavar="STR", help="regex for coords from read name (POSIX extended, as samtools)")
    m.add_argument("--coords-order", default="txy", metavar="STR", help="order of regex elements [txy]")
    m.add_argument("--barcode-tag", metavar="STR", help="use a barcode tag that duplicates must match")
    m.add_argument("--barcode-name", action="store_true", help="use the UMI/barcode in the read name (eighth colon delimited part)")
    m.add_argument("--barcode-rgx", metavar="STR", help="regex for barcode in the readname (alternative to --barcode-name)")
    m.add_argument("-t", dest="tag_originals", action="store_true", help="mark primary duplicates with the name of the original in a 'do' tag")
    m.add_argument("--max-read-length", type=int, default=300, metavar="INT", help="markdup's -l: max read length [300]")
    m.add_argument("--mode", choices=("t", "s"), default="t", help="markdup's -m: duplicate decision method for paired reads [t]")
    m.add_argument("--collate", action="store_true", help="collate even an input whose header says it is grouped by name")
    m.add_argument("--fix-remove", action="store_true", help="fixmate's -r: remove unmapped and secondary reads")
    m.add_argument("--fix-no-pair-check", action="store_true", help="fixmate's -p: keep PROPER_PAIR on pairs that cannot be FR pairs")
    m.add_argument("--fix-template-cigar", action="store_true", help="fixmate's -c: add the template cigar ct tag")
    m.add_argument("-l", dest="level", type=int, metavar="INT", help="compression level, 0 to 9 [6]")
    m.add_argument("-m", dest="memory", default=None, metavar="INT", help="memory per thread of each task, e.g. 768M [768M]")
    m.add_argument("-@", dest="threads", type=int, default=1, metavar="INT", help="threads per task on its worker [1]")
    m.add_argument("--write-index", action="store_true", help="write OUT.csi (or OUT##idx##INDEX) too")
    m.add_argument("--no-PG", dest="no_pg", action="store_true", help="do not add a @PG line to the header")
    m.add_argument("--parts", type=int, metavar="N", help="coordinate parts of the output [as fasthts.dask.sort]")
    m.add_argument("--splits", type=int, metavar="N", help="splits per input [as fasthts.dask.sort]")
    m.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    i = sub.add_parser(
        "index",
        help="samtools index on the cluster",
        description="Indexes a coordinate-sorted BAM (or CRAM: a .crai, in one task), byte for byte as samtools index "
        "(see fasthts.dask.index).",
        epilog="examples:\n"
        "  python -m fasthts.dask index --scheduler tcp://head:8786 sorted.bam\n"
        "  python -m fasthts.dask index --local-workers 2 -c sorted.bam",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    i.add_argument("input", metavar="IN.bam", help="a coordinate-sorted, BGZF-compressed BAM, or a CRAM (a local file the workers share)")
    i.add_argument("output", nargs="?", metavar="OUT.index", help="the index [IN.bam.bai, or IN.bam.csi with -c/-m; IN.cram.crai]")
    where = i.add_mutually_exclusive_group(required=True)
    where.add_argument("--scheduler", metavar="ADDRESS", help="address of a running dask scheduler, e.g. tcp://HOST:8786")
    where.add_argument("--local-workers", type=int, metavar="N", help="start a local cluster of N worker processes instead")
    i.add_argument("-c", dest="csi", action="store_true", help="write a CSI index [BAI]")
    i.add_argument("-m", dest="min_shift", type=int, metavar="INT", help="CSI with 2^INT-base windows [14]")
    i.add_argument("--splits", type=int, metavar="N", help="splits of the BAM [one per 256 MB, at least two per worker thread]")
    i.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("python -m fasthts.dask: needs dask.distributed (pip install 'dask[distributed]')", file=sys.stderr)
        return 1
    # fasthts.dask's sort and index (defined in _dask_sort): this module
    # is what `python -m fasthts.dask` runs, so it does not import that one.
    from ._dask_sort import index as dask_index, sort as dask_sort
    from ._dask_sormadup import sormadup as dask_sormadup

    # A local cluster's start and stop are logged at INFO: not news here.
    logging.getLogger("distributed").setLevel(logging.WARNING)
    cluster = None
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            # A task's failure is said once, in this command's one line: the
            # workers' own "Compute Failed" log (ERROR) would follow it, from
            # other processes, in any order.
            cluster = LocalCluster(n_workers=args.local_workers, threads_per_worker=1, dashboard_address=":0", silence_logs=logging.CRITICAL)
            client = Client(cluster)
        with client:
            if args.command == "sormadup":
                # -s alone: the report -f writes, shown on stderr as the CLI's.
                report_only = args.report and not args.stats_file
                if report_only:
                    handle, args.stats_file = tempfile.mkstemp(prefix="fasthts-dask-sormadup-", suffix=".txt")
                    os.close(handle)
                try:
                    dask_sormadup(
                        client,
                        args.inputs,
                        args.output,
                        remove_duplicates=args.remove_duplicates,
                        max_read_length=args.max_read_length,
                        optical_distance=args.optical_distance,
                        clear_previous=args.clear_previous,
                        mode=args.mode,
                        include_fails=args.include_fails,
                        no_multi_dup=args.no_multi_dup,
                        read_coords=args.read_coords,
                        coords_order=args.coords_order,
                        barcode_tag=args.barcode_tag,
                        barcode_name=args.barcode_name,
                        barcode_rgx=args.barcode_rgx,
                        tag_originals=args.tag_originals,
                        stats_file=args.stats_file,
                        level=args.level,
                        memory=args.memory,
                        write_index=args.write_index,
                        no_pg=args.no_pg,
                        collate=args.collate,
                        fix_remove=args.fix_remove,
                        fix_no_pair_check=args.fix_no_pair_check,
                        fix_template_cigar=args.fix_template_cigar,
                        parts=args.parts,
                        splits=args.splits,
                        threads=args.threads,
                        progress=False if args.quiet else None,
                    )
                    if report_only:
                        with open(args.stats_file) as report:
                            sys.stderr.write(report.read())
                finally:
                    if report_only:
                        os.remove(args.stats_file)
                return 0
            if args.command == "index":
                dask_index(
                    client, args.input, args.output, csi=args.csi, min_shift=args.min_shift, splits=args.splits, progress=False if args.quiet else None
                )
                return 0
            dask_sort(
                client,
                args.inputs,
                args.output,
                by_name=args.by_name,
                tag=args.tag,
                template_coordinate=args.template_coordinate,
                minimiser=args.minimiser,
                kmer=args.kmer,
                level=args.level,
                memory=args.memory,
                write_index=args.write_index,
                no_pg=args.no_pg,
                parts=args.parts,
                splits=args.splits,
                threads=args.threads,
                progress=False if args.quiet else None,
                reference=args.reference,
                shared_filesystem=args.shared_filesystem,
            )
    except (Error, OSError, ValueError, TypeError) as e:
        # OSError's str() starts "[Errno N]": the message is enough.
        message = e.strerror if isinstance(e, OSError) and e.strerror else e
        print(f"python -m fasthts.dask {args.command}: {message}", file=sys.stderr)
        return 1
    finally:
        if cluster is not None:
            cluster.close()
    return 0
