"""``python -m fasthts.dask``: the cluster jobs for people who do not write
Python.

    python -m fasthts.dask sort --scheduler tcp://HOST:8786 -o out.bam in.bam [in2.bam ...]
    python -m fasthts.dask sort --local-workers 4 -n -o by-name.bam in.bam
    python -m fasthts.dask index --scheduler tcp://HOST:8786 sorted.bam
    python -m fasthts.dask sort --local-workers 4 --reference ref.fa -o out.bam in.cram
    python -m fasthts.dask sort --scheduler tcp://HOST:8786 -o out.bam https://host/in.bam s3://bucket/lane2.bam

Options are samtools sort's and index's (as ``fasthts`` takes them); the
work is ``fasthts.dask.sort`` and ``fasthts.dask.index``. A progress bar is shown on a terminal.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import List, Optional

from . import Error


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fasthts.dask",
        description="fasthts jobs on a dask.distributed cluster. sort reads local files (on a filesystem the workers share) "
        "or URLs (http(s)://, s3://, gs://: each task fetches its ranges, and the output is written by this process); "
        "index reads a local BAM the workers share.",
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
