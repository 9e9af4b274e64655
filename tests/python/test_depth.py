"""fasthts.depth (numpy arrays) against samtools depth's rows and the
fasthts CLI's."""

import subprocess

import numpy as np
import pytest

import fasthts
from conftest import require_tool


def rows_of(text, n_files):
    tids, pos, depth, names = [], [], [], {}
    for line in text.splitlines():
        f = line.split("\t")
        tids.append(names.setdefault(f[0], len(names)))
        pos.append(int(f[1]) - 1)
        depth.append([int(x) for x in f[2 : 2 + n_files]])
    return list(names), tids, pos, depth


def check(got, text, n_files):
    names, tids, pos, depth = rows_of(text, n_files)
    assert len(got["pos"]) == len(pos)
    assert [got["references"][t] for t in got["tid"].tolist()] == [names[t] for t in tids]
    assert got["pos"].tolist() == pos
    assert got["depth"].shape == (len(pos), n_files)
    assert got["depth"].tolist() == depth


CASES = [
    ([], {}),
    (["-a"], {"all_positions": 1}),
    (["-Q", "20", "-q", "10"], {"min_mapping_quality": 20, "min_base_quality": 10}),
    (["-J"], {"count_deletions": True}),
    (["-s"], {"remove_overlaps": True}),
    (["-g", "DUP", "-G", "READ2"], {"include_flags": "DUP", "exclude_flags": "READ2"}),
    (["-G", "0x10"], {"exclude_flags": 0x10}),
    (["-l", "100"], {"min_read_length": 100}),
]


@pytest.mark.parametrize("args,kw", CASES)
def test_depth_equals_samtools(gen_bam, args, kw):
    samtools = require_tool("samtools", "samtools")
    text = subprocess.run([samtools, "depth", *args, str(gen_bam)], capture_output=True, text=True, check=True).stdout
    assert text
    for threads in [1, 2]:
        check(fasthts.depth(gen_bam, threads=threads, **kw), text, 1)


def test_depth_of_regions_and_several_files(gen_bam, golden, tmp_path):
    samtools = require_tool("samtools", "samtools")
    contig = fasthts.BamFile(str(gen_bam)).references[0][0]
    region = f"{contig}:5,001-60,000"
    text = subprocess.run([samtools, "depth", "-a", "-r", region, str(gen_bam), str(gen_bam)], capture_output=True, text=True, check=True).stdout
    check(fasthts.depth([gen_bam, str(gen_bam)], region=region, all_positions=1), text, 2)
    bed = tmp_path / "r.bed"
    bed.write_text(f"{contig}\t100\t2000\n{contig}\t30000\t30500\n")
    text = subprocess.run([samtools, "depth", "-b", str(bed), str(gen_bam)], capture_output=True, text=True, check=True).stdout
    check(fasthts.depth(gen_bam, bed=bed), text, 1)


def test_depth_equals_the_cli(cli, gen_bam):
    text = subprocess.run([cli, "depth", "-a", "-Q", "5", str(gen_bam)], capture_output=True, text=True, check=True).stdout
    check(fasthts.depth(str(gen_bam), all_positions=1, min_mapping_quality=5), text, 1)


def test_depth_arguments(gen_bam):
    with pytest.raises(ValueError, match="invalid flag"):
        fasthts.depth(gen_bam, exclude_flags="NOPE")
    with pytest.raises(FileNotFoundError):
        fasthts.depth("missing.bam")
    with pytest.raises(ValueError, match="threads"):
        fasthts.depth(gen_bam, threads=-1)
    empty = fasthts.depth(gen_bam, region=fasthts.BamFile(str(gen_bam)).references[0][0] + ":1-1")
    assert empty["depth"].shape[1] == 1 and empty["pos"].dtype == np.int64
