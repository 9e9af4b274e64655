"""The Python package on http:// URLs (issue 38): AlignmentFile, BamFile,
FastaFile and the k-mer readers give on a URL served by nginx on loopback
(the `nginx` fixture) what they give on the local file, and pysam's
exception for a URL that is not there."""

import shutil

import pytest

import fasthts
from conftest import require_module

pysam = require_module("pysam")


def records(it):
    return [r.to_string() for r in it]


@pytest.fixture(scope="module")
def served(nginx, gen_bam):
    """gen.bam with its .bai beside it on the server, and as a second name
    whose index is elsewhere (given by index_filename= or ##idx##)."""
    url = nginx.serve(gen_bam, "gen.bam")
    nginx.serve(str(gen_bam) + ".bai", "gen.bam.bai")
    bare = nginx.serve(gen_bam, "bare.bam")
    return url, bare


def regions_of(f):
    """A few regions of every kind pysam takes (contig, coordinates, a
    region text, the unplaced records)."""
    first, last = f.references[0], f.references[-1]
    return [
        dict(contig=first),
        dict(contig=first, start=1000, stop=20000),
        dict(region=f"{last}:5000-9000"),
        dict(contig=last, start=0, stop=1),
        dict(region="*"),
    ]


def test_alignment_file_url_equals_local_file(served, gen_bam):
    url, _ = served
    local = fasthts.AlignmentFile(str(gen_bam))
    remote = fasthts.AlignmentFile(url)
    assert str(remote.header) == str(local.header)
    assert remote.references == local.references and remote.lengths == local.lengths
    assert remote.has_index()
    assert records(remote.fetch(until_eof=True)) == records(local.fetch(until_eof=True))
    assert records(remote) == records(local)
    assert records(remote.fetch()) == records(local.fetch())
    for kw in regions_of(local):
        assert records(remote.fetch(**kw)) == records(local.fetch(**kw)), kw
        assert remote.count(**kw) == local.count(**kw), kw
    assert (remote.mapped, remote.unmapped) == (local.mapped, local.unmapped)
    assert remote.get_index_statistics() == local.get_index_statistics()
    contig = local.references[0]
    assert remote.count_coverage(contig, 1000, 3000) == local.count_coverage(contig, 1000, 3000)
    cols = lambda f: [(c.reference_pos, c.nsegments) for c in f.pileup(contig, 1000, 3000)]
    assert cols(remote) == cols(local)


def test_alignment_file_url_equals_pysam_on_the_url(served, tmp_path, monkeypatch):
    url, _ = served
    # htslib saves a remote index in the working directory.
    monkeypatch.chdir(tmp_path)
    theirs = pysam.AlignmentFile(url)
    ours = fasthts.AlignmentFile(url)
    for kw in regions_of(theirs):
        assert records(ours.fetch(**kw)) == records(theirs.fetch(**kw)), kw
    # (pysam reads until_eof from where the last read left the file: a
    # file of its own.)
    assert records(ours.fetch(until_eof=True)) == records(pysam.AlignmentFile(url).fetch(until_eof=True))
    assert ours.get_index_statistics() == theirs.get_index_statistics()


def test_index_given_as_url_local_file_or_idx(served, gen_bam):
    url, bare = served
    local = fasthts.AlignmentFile(str(gen_bam))
    contig = local.references[0]
    want = records(local.fetch(contig, 1000, 20000))
    for f in [
        fasthts.AlignmentFile(bare, index_filename=url + ".bai"),
        fasthts.AlignmentFile(bare, filepath_index=str(gen_bam) + ".bai"),
        fasthts.AlignmentFile(f"{bare}##idx##{url}.bai"),
    ]:
        assert f.has_index()
        assert records(f.fetch(contig, 1000, 20000)) == want


def test_url_without_index_as_pysam(served):
    _, bare = served
    f = fasthts.AlignmentFile(bare)
    p = pysam.AlignmentFile(bare)
    assert f.has_index() is False and p.has_index() is False
    for kw in [dict(contig=f.references[0]), dict()]:
        with pytest.raises(ValueError, match="without index"):
            f.fetch(**kw)
        with pytest.raises(ValueError, match="index"):
            p.fetch(**kw)
    assert records(f.fetch(until_eof=True)) == records(p.fetch(until_eof=True))


def test_iterators_alive_together(served, gen_bam):
    """A second query fetches its ranges while the first iterator still
    reads the ranges fetched for it."""
    url, _ = served
    local = fasthts.AlignmentFile(str(gen_bam))
    remote = fasthts.AlignmentFile(url)
    a, b = local.references[0], local.references[-1]
    first = remote.fetch(a)
    head = [next(first).to_string() for _ in range(3)]
    second = records(remote.fetch(b))
    rest = head + records(first)
    assert rest == records(local.fetch(a))
    assert second == records(local.fetch(b))


def test_bam_file_url_equals_local_file(served, gen_bam):
    url, _ = served
    local = fasthts.BamFile(str(gen_bam))
    remote = fasthts.BamFile(url)
    assert remote.references == local.references
    assert remote.plan(region_bytes=4096) == local.plan(region_bytes=4096)
    as_bytes = lambda it: [r.raw for r in it]
    assert as_bytes(remote.fetch()) == as_bytes(local.fetch())
    for region in local.plan(region_bytes=4096)[:5] + [local.references[0][0]]:
        assert as_bytes(remote.fetch(region)) == as_bytes(local.fetch(region))
        assert as_bytes(remote.fetch(region, overlap=True)) == as_bytes(local.fetch(region, overlap=True))
        want = local.columns(region)
        got = remote.columns(region)
        assert sorted(got) == sorted(want)
        assert all((got[k] == want[k]).all() for k in want)
    many = lambda f: f.columns_many(local.plan(region_bytes=4096)[:6])
    assert [sorted((k, v.tolist()) for k, v in d.items()) for d in many(remote)] == [
        sorted((k, v.tolist()) for k, v in d.items()) for d in many(local)
    ]


@pytest.mark.parametrize("cls", ["AlignmentFile", "BamFile"])
def test_missing_url_is_file_not_found_naming_it_without_credentials(nginx, cls):
    url = nginx.url("missing.bam").replace("http://", "http://someone:secret@")
    shown = nginx.url("missing.bam")
    with pytest.raises(FileNotFoundError) as e:
        getattr(fasthts, cls)(url)
    text = str(e.value)
    assert shown in text and "secret" not in text and "\n" not in text
    # pysam raises FileNotFoundError too.
    with pytest.raises(FileNotFoundError):
        pysam.AlignmentFile(nginx.url("missing.bam"))


@pytest.mark.parametrize("which", ["plain", "bgzf"])
def test_fasta_file_url_equals_local_file_and_pysam(which, nginx, tmp_path, monkeypatch):
    from test_fasta_file import queries, write_fasta
    from conftest import write_bgzf

    plain = tmp_path / "ref.fa"
    write_fasta(plain)
    path = plain
    if which == "bgzf":
        path = tmp_path / "ref.fa.gz"
        write_bgzf(plain.read_bytes(), path, block=1000)
    local = fasthts.FastaFile(path)  # writes the .fai (and .gzi) beside it
    name = f"fasta-{which}-{path.name}"
    url = nginx.serve(path, name)
    for suffix in [".fai", ".gzi"] if which == "bgzf" else [".fai"]:
        nginx.serve(str(path) + suffix, name + suffix)
    remote = fasthts.FastaFile(url)
    monkeypatch.chdir(tmp_path)  # htslib saves the remote index here
    theirs = pysam.FastaFile(url)
    assert remote.references == local.references == list(theirs.references)
    assert remote.lengths == local.lengths
    for q in queries():
        assert remote.fetch(**q) == local.fetch(**q) == theirs.fetch(**q), q
    # The index may be given, as a URL or a local file.
    given = fasthts.FastaFile(url, filepath_index=str(path) + ".fai")
    assert given.fetch("chr1", 100, 900) == local.fetch("chr1", 100, 900)


def test_fasta_file_url_without_its_index(nginx, tmp_path):
    from test_fasta_file import write_fasta

    p = tmp_path / "bare.fa"
    write_fasta(p)
    url = nginx.serve(p, "bare.fa")
    with pytest.raises(FileNotFoundError) as e:
        fasthts.FastaFile(url)
    assert str(e.value).count(url + ".fai") == 1 and "\n" not in str(e.value)


def test_kmer_readers_on_urls(nginx, fastq, fastq_gz, fastq_bgzf, tmp_path):
    """Countgraph.consume_seqfile streams a plain or compressed file from a
    URL; a plain one's parts (seqfile_split) are fetched alone."""
    k, x, n = 21, 100003, 4
    for f in [fastq, fastq_gz, fastq_bgzf]:
        url = nginx.serve(f, "kmer-" + f.name)
        local, remote = fasthts.Countgraph(k, x, n), fasthts.Countgraph(k, x, n)
        assert remote.consume_seqfile(url) == local.consume_seqfile(str(f))
        assert remote.to_bytes() == local.to_bytes()
        assert remote.abundance_distribution(url, 1) == local.abundance_distribution(str(f), 1)
    url = nginx.url("kmer-" + fastq.name)
    parts = fasthts._fasthts.seqfile_split(url, 4)
    assert parts == fasthts._fasthts.seqfile_split(str(fastq), 4)
    whole, pieces = fasthts.Countgraph(k, x, n), fasthts.Countgraph(k, x, n)
    whole.consume_seqfile(str(fastq))
    for start, end in parts:
        pieces.consume_seqfile(url, 1, start, end)
    assert pieces.to_bytes() == whole.to_bytes()
    with pytest.raises(OSError, match="kmer-missing.fq"):
        fasthts.Countgraph(k, x, n).consume_seqfile(nginx.url("kmer-missing.fq"))


@pytest.fixture(scope="module")
def larger_bam(tmp_path_factory):
    """A generated BAM of 15 MB (many BGZF blocks per region), indexed."""
    from conftest import generate_bam

    return generate_bam(tmp_path_factory.mktemp("larger") / "larger.bam", seed=9, reads=60000)


def test_regions_longer_than_a_batch(nginx, larger_bam):
    """Regions of about 6000 records: a cursor reads one in batches and
    resumes past where the records after the region begin (the index's
    floor), which once read a batch past the ranges fetched (a damaged
    block of zeros); every window of chr1 as on the local file."""
    url = nginx.serve(larger_bam, "larger.bam")
    nginx.serve(str(larger_bam) + ".bai", "larger.bam.bai")
    local, remote = fasthts.AlignmentFile(str(larger_bam)), fasthts.AlignmentFile(url)
    contig = "chr1"
    length, n = local.get_reference_length(contig), local.count(contig)
    width = length * 6000 // n
    for start in range(0, length - width, (length - width) // 25):
        assert remote.count(contig, start, start + width) == local.count(contig, start, start + width), start
    assert records(remote.fetch(contig, start, start + width)) == records(local.fetch(contig, start, start + width))


def test_mate_on_url_as_local_file_and_pysam(served, gen_bam, tmp_path, monkeypatch):
    """mate() on a URL: a region query at the mate's position, each
    window fetched before it is read; the mates pysam finds on the URL."""
    url, _ = served
    monkeypatch.chdir(tmp_path)  # htslib saves a remote index here
    local, remote, theirs = fasthts.AlignmentFile(str(gen_bam)), fasthts.AlignmentFile(url), pysam.AlignmentFile(url)
    paired = [r for r in local.fetch(local.references[0]) if r.is_paired and not r.mate_is_unmapped][:40:4]
    assert paired
    for read in paired:
        try:
            want = theirs.mate(pysam.AlignedSegment.fromstring(read.to_string(), theirs.header)).to_string()
        except ValueError as e:
            with pytest.raises(ValueError, match=str(e)):
                remote.mate(read)
            continue
        assert remote.mate(read).to_string() == local.mate(read).to_string() == want, read.query_name


def test_open_fetches_the_header_once(nginx, larger_bam):
    """Opening a URL fetches its first bytes, its end (the EOF marker) and
    its index, each once, not a stream of its start read ahead (which
    fetched 8 MB of the bench BAM, then its header again)."""
    url = nginx.serve(larger_bam, "once.bam")
    nginx.serve(str(larger_bam) + ".bai", "once.bam.bai")
    f = fasthts.AlignmentFile(url)
    assert f.has_index()
    spans = []
    for r in nginx.ranges("once.bam"):
        first, last = r.removeprefix("bytes=").split("-")
        spans.append((int(first), int(last)))
    # The first request, for the first byte, tells the length and version.
    assert spans[0] == (0, 0)
    spans = sorted(spans[1:])
    for (a, b), (c, d) in zip(spans, spans[1:]):
        assert b < c, f"bytes {c}-{min(b, d)} fetched twice: {spans}"
    fetched = sum(b - a + 1 for a, b in spans)
    assert fetched <= (64 << 10) + 28, spans
    contig = f.references[0]
    assert f.count(contig, 10000, 30000) == fasthts.AlignmentFile(str(larger_bam)).count(contig, 10000, 30000)


@pytest.fixture(scope="module")
def other_formats(tmp_path_factory, gen_bam):
    """gen.bam as a bgzipped SAM with its CSI, and as CRAM (bases stored,
    no reference) with its .crai, written and indexed by samtools."""
    import subprocess

    d = tmp_path_factory.mktemp("formats")
    sam_gz, cram = d / "gen.sam.gz", d / "gen.cram"
    subprocess.run(["samtools", "view", "-h", "--output-fmt", "sam.gz", "-o", str(sam_gz), str(gen_bam)], check=True)
    subprocess.run(["samtools", "index", "-c", str(sam_gz)], check=True)
    subprocess.run(["samtools", "view", "-C", "--output-fmt-option", "no_ref=1", "-o", str(cram), str(gen_bam)], check=True)
    subprocess.run(["samtools", "index", str(cram)], check=True)
    return [(sam_gz, ".csi"), (cram, ".crai")]


def test_sam_gz_and_cram_urls_by_region(nginx, other_formats, tmp_path, monkeypatch):
    """A remote bgzipped SAM and CRAM read by region as the local file (and
    the CRAM as pysam reads the URL)."""
    monkeypatch.chdir(tmp_path)  # htslib saves a remote index here
    for path, suffix in other_formats:
        url = nginx.serve(path, "formats-" + path.name)
        nginx.serve(str(path) + suffix, "formats-" + path.name + suffix)
        local, remote, theirs = fasthts.AlignmentFile(str(path)), fasthts.AlignmentFile(url), pysam.AlignmentFile(url)
        assert remote.has_index() and str(remote.header) == str(local.header)
        for kw in regions_of(local):
            want = records(local.fetch(**kw))
            assert records(remote.fetch(**kw)) == want, (path.name, kw)
            # (pysam reads no region of a SAM file, bgzipped or not.)
            if suffix == ".crai":
                assert records(theirs.fetch(**kw)) == want, (path.name, kw)
            assert remote.count(**kw) == len(want)
        assert records(remote.fetch(until_eof=True)) == records(local.fetch(until_eof=True))
