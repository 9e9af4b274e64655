"""BamFile, records, columns, regions and scatter, checked against pysam
and against each other."""

import pickle
from pathlib import Path

import numpy as np
import pytest

import fasthts
from conftest import require_module

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests/data/small.bam"

CIGAR_OPS = "MIDNSHP=XB"


def pysam_tags(a):
    out = []
    for tag, value, vtype in a.get_tags(with_value_type=True):
        if hasattr(value, "tolist"):
            value = value.tolist()
        elif isinstance(value, bytes):
            value = value.decode()
        elif vtype == "I" and value < 0:
            # pysam returns uint32 ('I') tags above 2^31 as negative
            # numbers; samtools view (and fasthts) print the unsigned value.
            value += 1 << 32
        out.append((tag, value))
    return out


def norm_tags(tags):
    # float tags: compare as float32 round trips.
    return [(t, [float(np.float32(x)) for x in v] if isinstance(v, list) and v and isinstance(v[0], float) else (float(np.float32(v)) if isinstance(v, float) else v)) for t, v in tags]


def cross_check(path: Path, limit=None):
    pysam = require_module("pysam")
    bam = fasthts.BamFile(str(path))
    n = 0
    with pysam.AlignmentFile(str(path), "rb") as ps:
        assert [(r, l) for r, l in bam.references] == list(zip(ps.references, ps.lengths))
        mine = bam.fetch()
        for a in ps.fetch(until_eof=True):
            r = next(mine)
            assert r.name == a.query_name
            assert r.flag == a.flag
            assert r.tid == a.reference_id
            assert r.ref == (a.reference_name if a.reference_id >= 0 else None)
            assert r.pos == a.reference_start
            assert r.mapq == a.mapping_quality
            assert r.cigar == [tuple(c) for c in (a.cigartuples or [])]
            assert r.cigarstring == (a.cigarstring or "")
            assert r.seq == (a.query_sequence or "")
            q = a.query_qualities
            assert r.qual == (None if q is None else bytes(q))
            assert r.mate_tid == a.next_reference_id
            assert r.mate_pos == a.next_reference_start
            assert r.tlen == a.template_length
            assert norm_tags(r.tags) == norm_tags(pysam_tags(a))
            if not a.is_unmapped and a.reference_end is not None and a.reference_end > a.reference_start:
                assert r.end == a.reference_end
            n += 1
            if limit and n >= limit:
                return n
        with pytest.raises(StopIteration):
            next(mine)
    return n


def test_pysam_crosscheck_generated(gen_bam):
    assert cross_check(gen_bam) > 4096  # more than one read batch


def test_pysam_crosscheck_small():
    cross_check(SMALL)


@pytest.mark.parametrize("name", ["normal.bam", "tumour.bam"])
def test_pysam_crosscheck_golden(golden, name):
    assert cross_check(golden / name, limit=20000) > 1000


def test_columns_equal_records(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    cols = bam.columns()
    recs = list(bam.fetch())
    assert len(cols["pos"]) == len(recs)
    for key, get in [
        ("tid", lambda r: r.tid),
        ("pos", lambda r: r.pos),
        ("end", lambda r: r.end),
        ("flag", lambda r: r.flag),
        ("mapq", lambda r: r.mapq),
        ("len", lambda r: len(r.seq)),
        ("mate_tid", lambda r: r.mate_tid),
        ("mate_pos", lambda r: r.mate_pos),
        ("tlen", lambda r: r.tlen),
    ]:
        assert cols[key].tolist() == [get(r) for r in recs], key


def test_columns_any_thread_count_or_plan(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    whole = bam.columns(threads=1)
    for threads in [1, 2]:
        for plan in [bam.plan(4096), bam.plan(window=10000), bam.plan()]:
            parts = bam.columns_many(plan, threads=threads)
            for k in whole:
                assert np.array_equal(np.concatenate([p[k] for p in parts]), whole[k]), k


def test_region_columns_equal_in_pieces(gen_bam):
    # A region read on several threads is cut into pieces (the smaller
    # piece_bytes, the more), each started from the index: the columns
    # equal the one-thread read of the whole region.
    bam = fasthts.BamFile(str(gen_bam))
    regions = [name for name, _ in bam.references] + ["*"]
    name, length = bam.references[0]
    regions += [f"{name}:1001-{length // 2}", f"{name}:{length // 3}-", (name, 20000, 20001)]
    pieced = 0
    for region in regions:
        one = bam.columns(region, threads=1)
        for piece_bytes in [1, 4096, 1 << 16]:
            got = fasthts._arrays(bam._columns(region, threads=2, piece_bytes=piece_bytes))
            assert got.keys() == one.keys()
            for k in one:
                assert got[k].dtype == one[k].dtype, (region, k)
                assert np.array_equal(got[k], one[k]), (region, piece_bytes, k)
        pieced += len(one["pos"])
    assert pieced > 1000


def test_region_columns_report_the_first_bad_block_at_any_thread_count(gen_bam, tmp_path):
    # Damage the deflate data of a block in the middle of the first
    # reference: reading it in pieces on 2 threads fails with the same
    # error as reading it whole on 1 thread. (Damage past the reference's
    # last record is never read, as htslib would not read it.)
    import struct

    import zlib

    data = bytearray(gen_bam.read_bytes())
    # Each block's offset and inflated bytes, then the block in which the
    # middle record of the first reference starts (walking the records).
    blocks, stream, at = [], bytearray(), 0
    while at < len(data):
        size = struct.unpack_from("<H", data, at + 16)[0] + 1
        blocks.append((at, len(stream)))
        stream += zlib.decompress(bytes(data[at + 18 : at + size - 8]), -15)
        at = at + size
    l_text = struct.unpack_from("<i", stream, 4)[0]
    pos, n_ref = 8 + l_text, struct.unpack_from("<i", stream, 8 + l_text)[0]
    pos += 4
    for _ in range(n_ref):
        pos += 8 + struct.unpack_from("<i", stream, pos)[0]
    first_ref_starts = []
    while pos < len(stream):
        if struct.unpack_from("<i", stream, pos + 4)[0] == 0:
            first_ref_starts.append(pos)
        pos += 4 + struct.unpack_from("<i", stream, pos)[0]
    middle = first_ref_starts[len(first_ref_starts) // 2]
    bad = max(offset for offset, start in blocks if start <= middle)
    data[bad + 40] ^= 0x55
    broken = tmp_path / "broken.bam"
    broken.write_bytes(bytes(data))
    bam = fasthts.BamFile(str(broken), index=str(gen_bam) + ".bai")
    name = bam.references[0][0]
    errors = set()
    for threads, piece_bytes in [(1, None), (2, 1), (2, 4096)]:
        with pytest.raises(fasthts.Error) as e:
            bam._columns(name, threads=threads, piece_bytes=piece_bytes)
        errors.add(str(e.value))
    assert len(errors) == 1 and str(bad) in errors.pop()


def test_columns_are_writable_arrays_owning_their_memory(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    cols = bam.columns(threads=2)
    pos = cols["pos"]
    assert pos.flags.writeable and pos.flags.c_contiguous and pos.dtype == np.int32
    first = int(pos[0])
    pos += 1
    assert int(pos[0]) == first + 1
    view = pos[:10]
    del cols, pos
    import gc

    gc.collect()
    # The slice keeps the memory alive.
    assert int(view[0]) == first + 1


def test_region_is_start_based(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    whole = bam.columns()
    name, length = bam.references[0]
    cols = bam.columns(f"{name}:1001-5000")
    sel = (whole["tid"] == 0) & (whole["pos"] >= 1000) & (whole["pos"] < 5000)
    assert len(cols["pos"]) == sel.sum() > 0
    assert np.array_equal(cols["pos"], whole["pos"][sel])
    # The same region as a tuple (0-based, half-open) and as a Region.
    assert np.array_equal(bam.columns((name, 1000, 5000))["pos"], cols["pos"])
    assert np.array_equal(bam.columns(bam.region(f"{name}:1001-5000"))["pos"], cols["pos"])
    # Records as objects: the same ones.
    assert [r.pos for r in bam.fetch(f"{name}:1001-5000")] == cols["pos"].tolist()
    # Unplaced records.
    unplaced = bam.columns("*")
    assert (unplaced["tid"] == -1).all()
    assert len(unplaced["tid"]) == (whole["tid"] == -1).sum()


def test_whole_contig_fetch_crosses_batches(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    whole = bam.columns()
    name = bam.references[0][0]
    got = [(r.pos, r.flag) for r in bam.fetch(name)]
    sel = whole["tid"] == 0
    assert got == list(zip(whole["pos"][sel].tolist(), whole["flag"][sel].tolist()))


@pytest.mark.parametrize("name", ["normal.bam", "tumour.bam"])
def test_region_fetch_across_many_batches_equals_columns(golden, name):
    # 12-27 thousand records per reference: many read batches, each
    # reading on past its 4096th record while records are already inflated.
    bam = fasthts.BamFile(str(golden / name))
    for region in ["I", "II", "I:20001-40000"]:
        cols = bam.columns(region)
        got = [(r.pos, r.flag, r.name) for r in bam.fetch(region)]
        assert len(got) > 4096 or region == "I:20001-40000"
        assert [(p, f) for p, f, _ in got] == list(zip(cols["pos"].tolist(), cols["flag"].tolist())), region
        assert len({(p, f, n) for p, f, n in got}) == len(got), region


def test_region_parsing_errors():
    bam = fasthts.BamFile(str(SMALL))
    with pytest.raises(ValueError, match="unknown reference"):
        bam.columns("nope:1-10")
    with pytest.raises(ValueError, match="invalid region"):
        bam.columns("chr1:10-5")
    with pytest.raises(TypeError):
        bam.columns(42)
    with pytest.raises(ValueError, match="not in the file"):
        bam.columns(fasthts.Region(99))
    with pytest.raises(ValueError, match="before its start"):
        bam.columns_many([fasthts.Region(0, 10, 5)])
    r = bam.region("chr1:1,001-2,000")
    assert (r.contig, r.start, r.end) == ("chr1", 1000, 2000)
    assert str(r) == "chr1:1001-2000"


def test_pickles_by_path():
    bam = fasthts.BamFile(str(SMALL))
    b2 = pickle.loads(pickle.dumps(bam))
    assert isinstance(b2, fasthts.BamFile) and b2.path == bam.path
    assert len(pickle.dumps(bam)) < 1000  # the path, not the data
    r = bam.plan()[0]
    assert pickle.loads(pickle.dumps(r)) == r


def test_scatter_runs_fn_per_region_in_order(gen_bam):
    bam = fasthts.BamFile(str(gen_bam))
    regions = bam.plan(4096)
    got = fasthts.scatter(bam, regions, lambda r, c: (r, len(c["pos"]), int(c["mapq"].sum())), threads=2)
    assert [g[0] for g in got] == regions
    whole = bam.columns()
    assert sum(g[1] for g in got) == len(whole["pos"])
    assert sum(g[2] for g in got) == int(whole["mapq"].sum())
    # regions=None: the default plan, every record once.
    assert sum(fasthts.scatter(str(gen_bam), None, lambda r, c: len(c["pos"]))) == len(whole["pos"])


def test_scatter_reraises():
    def boom(r, c):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fasthts.scatter(str(SMALL), None, boom)


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file"):
        fasthts.BamFile(str(tmp_path / "missing.bam"))
    text = tmp_path / "text.bam"
    text.write_text("hello\n")
    with pytest.raises(fasthts.Error, match="text.bam"):
        fasthts.BamFile(str(text))
    # A truncated BAM: an error when reading, never a crash.
    data = SMALL.read_bytes()
    cut = tmp_path / "cut.bam"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(fasthts.Error):
        b = fasthts.BamFile(str(cut))
        list(b.fetch())
    # As the CLI: the missing EOF marker is a warning, then the error.
    with pytest.raises(fasthts.Error), pytest.warns(UserWarning, match="EOF marker is absent"):
        fasthts.flagstat(str(cut))
    with pytest.raises(OSError):
        fasthts.flagstat(str(tmp_path))


def test_progress_bar_only_when_asked(capsys):
    fasthts.scatter(str(SMALL), None, lambda r, c: 0, progress=True)
    err = capsys.readouterr().err
    assert "scatter [" in err and err.rstrip().endswith("5/5")
    fasthts.scatter(str(SMALL), None, lambda r, c: 0)  # stderr is not a terminal here
    assert capsys.readouterr().err == ""


def test_whole_file_columns_read_as_flagstat_reads(tmp_path):
    # An index that does not describe the file: reported, and the file is
    # read sequentially (fasthts::command::by_index_or_sequentially), as
    # flagstat does; an index of a file with other references is refused
    # for region queries.
    import shutil
    import warnings

    from test_shared_decisions import DATA, bai_without_reference

    bam = tmp_path / "x.bam"
    shutil.copy(SMALL, bam)
    want = fasthts.BamFile(str(bam)).columns()
    (tmp_path / "x.bam.bai").write_bytes(bai_without_reference((DATA / "small.bam.bai").read_bytes(), 1))
    with pytest.warns(UserWarning, match="the index does not match the data file .*; reading the file sequentially"):
        got = fasthts.BamFile(str(bam)).columns(threads=2)
    assert all((got[k] == want[k]).all() for k in want)
    (tmp_path / "x.bam.bai").unlink()
    shutil.copy(DATA / "long_ref.bam.csi", tmp_path / "x.bam.csi")
    with pytest.raises(fasthts.Error, match="6 references in the index, 7 in the header"):
        fasthts.BamFile(str(bam)).columns("chr1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fasthts.flagstat(str(bam)) == fasthts.flagstat(str(SMALL))


def test_wrong_inputs_are_named_as_the_cli_names_them(cli, tmp_path):
    # One recognition function in the library: BamFile says what `fasthts
    # index` says (an index needs a BGZF-compressed BAM or SAM; BamFile
    # reads other alignments whole instead: tests/python/test_bam_sam.py).
    import gzip
    import subprocess

    sam = b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:100\n"
    fq = tmp_path / "x.fq"
    fq.write_bytes(b"@r\nACGT\n+\nIIII\n")
    with pytest.raises(fasthts.Error) as e:
        fasthts.BamFile(str(fq))
    assert str(e.value).startswith(f"{fq}: FASTQ sequences, not BAM or SAM alignments")
    c = subprocess.run([cli, "index", str(fq)], capture_output=True)
    assert c.stderr.decode() == f"fasthts index: {e.value}\n"
    # Uncompressed BAM: read whole; a region, refused in `fasthts index`'s words.
    ubam = tmp_path / "x.ubam"
    ubam.write_bytes(gzip.decompress(SMALL.read_bytes()))
    b = fasthts.BamFile(str(ubam))
    assert len(b.columns()["pos"]) == len(fasthts.BamFile(str(SMALL)).columns()["pos"])
    with pytest.raises(fasthts.Error) as e:
        b.fetch("chr1")
    assert str(e.value).startswith(f"{ubam}: uncompressed BAM cannot be indexed or read through an index")
    c = subprocess.run([cli, "index", str(ubam)], capture_output=True)
    assert c.stderr.decode() == f"fasthts index: {e.value}\n"
    for name, data, reason in (("x.sam.gz", gzip.compress(sam), "SAM compressed with gzip, not BGZF, cannot be indexed"),
                               ("x.sam", sam, "SAM cannot be indexed or read through an index")):
        p = tmp_path / name
        p.write_bytes(data)
        assert fasthts.BamFile(str(p)).is_sam
        c = subprocess.run([cli, "index", str(p)], capture_output=True)
        assert c.stderr.decode().startswith(f"fasthts index: {p}: {reason}")


def test_a_name_sorted_bam_is_said_to_be_not_coordinate_sorted(cli, tmp_path):
    import subprocess

    by_name = tmp_path / "n.bam"
    subprocess.run([cli, "sort", "-n", "-o", str(by_name), str(SMALL)], check=True)
    bam = fasthts.BamFile(str(by_name))
    with pytest.raises(fasthts.Error, match=r"n\.bam: not coordinate-sorted \(header says SO:queryname\)"):
        list(bam.fetch("chr1"))
