"""Countgraph against the CLI's `fasthts kmer count` / `abundance-dist`."""

import pickle

import pytest

import fasthts
from conftest import run

K, X, N = 21, 200003, 4


def cli_count(cli, tmp_path, reads, *extra):
    ct = tmp_path / "cli.ct"
    run(cli, "kmer", "count", "-q", "-k", K, "-x", X, "-N", N, *extra, ct, reads)
    return ct


def test_consume_seqfile_equals_cli(cli, fastq, fastq_gz, fastq_bgzf, tmp_path):
    ct = cli_count(cli, tmp_path, fastq)
    for reads in [fastq, fastq_gz, fastq_bgzf]:
        for threads in [1, 2]:
            g = fasthts.Countgraph(K, X, N, bigcount=True)
            n_reads, n_kmers = g.consume_seqfile(str(reads), threads)
            assert n_reads == 6000 and n_kmers == 6000 * (100 - K + 1)
            out = tmp_path / "py.ct"
            g.save(str(out))
            assert out.read_bytes() == ct.read_bytes()
    # bigcount was exercised: some k-mer above 255.
    g = fasthts.Countgraph.load(str(ct))
    assert max(g.get_kmer_counts(open(fastq).read().split("\n")[1])) > 255


def test_abundance_distribution_equals_cli(cli, fastq, tmp_path):
    ct = cli_count(cli, tmp_path, fastq)
    csv = tmp_path / "hist.csv"
    run(cli, "kmer", "abundance-dist", "-q", ct, fastq, csv)
    g = fasthts.Countgraph.load(str(ct))
    hist = g.abundance_distribution(str(fastq))
    assert len(hist) == 65536
    rows = [line.split(",") for line in csv.read_text().splitlines()[1:]]
    want = {int(r[0]): int(r[1]) for r in rows}
    got = {i: c for i, c in enumerate(hist) if c or i in want}
    assert {i: c for i, c in got.items() if i in want} == want
    assert all(c == 0 for i, c in enumerate(hist) if i not in want)


def test_get_and_median():
    g = fasthts.Countgraph(4, 1000, 2)
    assert g.consume("ACGTACGT") == 5
    assert g.get("ACGT") == 2 and g.get("CGTA") == 2 and g.get("TTTT") == 0
    assert g.get(g.hash("ACGT")) == 2
    med, avg, sd = g.get_median_count("ACGTACGT")
    counts = sorted(g.get_kmer_counts("ACGTACGT"))
    assert med == counts[len(counts) // 2]
    assert avg == pytest.approx(sum(counts) / len(counts))
    with pytest.raises(ValueError):
        g.get("ACG")
    with pytest.raises(ValueError):
        fasthts.Countgraph(0, 1000, 2)


def test_merge_of_parts_equals_whole(fastq, tmp_path):
    whole = fasthts.Countgraph(K, X, N)  # bigcount off: the .ct is exact
    whole.consume_seqfile(str(fastq))
    parts = fasthts.seqfile_split(str(fastq), 3)
    assert len(parts) == 3 and parts[0][0] == 0
    graphs = []
    for s, e in parts:
        g = fasthts.Countgraph(K, X, N)
        g.consume_seqfile(str(fastq), 1, s, e)
        graphs.append(g)
    assert sum(g.n_occupied() for g in graphs) >= whole.n_occupied()
    merged = graphs[0] + graphs[1]
    merged += graphs[2]
    assert merged.to_bytes() == whole.to_bytes()
    # In place, and through pickling (what dask does).
    a = pickle.loads(pickle.dumps(graphs[0]))
    a.merge(graphs[1])
    a.merge(graphs[2])
    assert a.to_bytes() == whole.to_bytes()


def test_merge_bigcount_semantics():
    k = 5
    seq = "ACGTT"
    a, b = fasthts.Countgraph(k, 1000, 2, True), fasthts.Countgraph(k, 1000, 2, True)
    for _ in range(300):
        a.consume(seq)
    for _ in range(100):
        b.consume(seq)
    assert (a + b).get(seq) == 400  # above 255 in one part: exact
    c, d = fasthts.Countgraph(k, 1000, 2, True), fasthts.Countgraph(k, 1000, 2, True)
    for _ in range(200):
        c.consume(seq)
        d.consume(seq)
    assert (c + d).get(seq) == 255  # above 255 only in the sum: saturates
    with pytest.raises(ValueError, match="different k"):
        a.merge(fasthts.Countgraph(k, 2000, 2))


def test_errors(tmp_path):
    g = fasthts.Countgraph(K, X, N)
    with pytest.raises(FileNotFoundError, match="missing.fq"):
        g.consume_seqfile(str(tmp_path / "missing.fq"))
    with pytest.raises(FileNotFoundError, match="missing.fq"):
        fasthts.seqfile_split(str(tmp_path / "missing.fq"), 2)
    bad = tmp_path / "bad.ct"
    bad.write_bytes(b"nope")
    with pytest.raises(fasthts.Error, match="bad.ct"):
        fasthts.Countgraph.load(str(bad))


@pytest.mark.parametrize("parts", [2, 5, 17])
def test_bgzf_ranges_partition_the_reads(fastq, fastq_bgzf, parts):
    whole = fasthts.Countgraph(K, X, N)
    whole.consume_seqfile(str(fastq))
    ranges = fasthts.seqfile_split(str(fastq_bgzf), parts)
    assert len(ranges) == parts and ranges[0][0] == 0 and ranges[-1][1] is None
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(len(ranges) - 1))
    merged, n = None, 0
    for s, e in ranges:
        g = fasthts.Countgraph(K, X, N)
        n += g.consume_seqfile(str(fastq_bgzf), 1, s, e)[0]
        merged = g if merged is None else merged + g
    assert n == 6000
    assert merged.to_bytes() == whole.to_bytes()


def test_plain_gzip_is_one_part(fastq_gz):
    assert fasthts.seqfile_split(str(fastq_gz), 4) == [(0, None)]


def test_fasta_ranges_plain_and_bgzf(fastq, tmp_path):
    from conftest import write_bgzf

    lines = fastq.read_text().split("\n")
    fa = tmp_path / "reads.fa"
    fa.write_text("".join(f">{lines[i][1:]}\n{lines[i + 1]}\n" for i in range(0, len(lines) - 1, 4)))
    fz = tmp_path / "reads.fa.gz"
    write_bgzf(fa.read_bytes(), fz)
    whole = fasthts.Countgraph(K, X, N)
    whole.consume_seqfile(str(fa))
    for path in [fa, fz]:
        merged = None
        for s, e in fasthts.seqfile_split(str(path), 4):
            g = fasthts.Countgraph(K, X, N)
            g.consume_seqfile(str(path), 1, s, e)
            merged = g if merged is None else merged + g
        assert merged.to_bytes() == whole.to_bytes(), path
