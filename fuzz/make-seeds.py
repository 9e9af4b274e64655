#!/usr/bin/env python3
"""Writes the fuzz seed corpora (fuzz/seeds/<target>/) from the repository's
test fixtures and golden inputs (tests/data/golden). Each seed is a few KB at most;
rerun to regenerate (the output is deterministic)."""
import gzip
import os
import struct
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
data = os.path.join(root, "tests", "data")
golden = os.environ.get("FASTHTS_GOLDEN", os.path.join(data, "golden"))
out = os.path.join(root, "fuzz", "seeds")


def put(target, name, blob):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(blob)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def blocks(bgzf):
    """(offset, size) of each BGZF block."""
    off = 0
    while off + 18 <= len(bgzf):
        xlen = struct.unpack_from("<H", bgzf, off + 10)[0]
        extra = bgzf[off + 12 : off + 12 + xlen]
        bsize = None
        i = 0
        while i + 4 <= len(extra):
            si, slen = extra[i : i + 2], struct.unpack_from("<H", extra, i + 2)[0]
            if si == b"BC":
                bsize = struct.unpack_from("<H", extra, i + 4)[0]
            i += 4 + slen
        yield off, bsize + 1
        off += bsize + 1


def records(raw):
    """(n_ref, header bytes, list of record bodies) of an uncompressed BAM."""
    l_text = struct.unpack_from("<I", raw, 4)[0]
    p = 8 + l_text
    n_ref = struct.unpack_from("<I", raw, p)[0]
    p += 4
    for _ in range(n_ref):
        l_name = struct.unpack_from("<I", raw, p)[0]
        p += 4 + l_name + 4
    header = raw[:p]
    recs = []
    while p + 4 <= len(raw):
        size = struct.unpack_from("<I", raw, p)[0]
        recs.append(raw[p + 4 : p + 4 + size])
        p += 4 + size
    return n_ref, header, recs


# BGZF: the EOF marker, a header-only BAM, the first blocks of BAMs and a CSI.
small = read(os.path.join(data, "small.bam"))
put("bgzf_block", "header_only.bam", read(os.path.join(data, "header_only.bam")))
put("bgzf_block", "long_ref.bam.csi", read(os.path.join(data, "long_ref.bam.csi")))
b = list(blocks(small))
put("bgzf_block", "eof", small[-28:])
put("bgzf_block", "small-block0-and-eof", small[: b[0][1]] + small[-28:])
for name in ("unmapped_only.bam", "long_ref.bam"):
    f = read(os.path.join(data, name))
    first = next(blocks(f))
    if first[1] <= 8192:
        put("bgzf_block", name + "-block0", f[: first[1]])

# Records, each prefixed by the reference count byte the target reads first.
picked = 0
for name in ("small.bam", "long_cigar.bam", "unmapped_only.bam", "refs_without_reads.bam"):
    raw = gzip.decompress(read(os.path.join(data, name)))
    n_ref, header, recs = records(raw)
    for i, r in enumerate(recs[:: max(1, len(recs) // 4)][:4]):
        if len(r) <= 4096:
            put("bam_record", f"{name}-{i}", bytes([min(n_ref, 255)]) + r)
            picked += 1
    # Header plus a few records, uncompressed (the bam_header target
    # wraps its input in BGZF itself).
    stream = header
    for r in recs[:6]:
        if len(stream) + len(r) > 6000:
            break
        stream += struct.pack("<I", len(r)) + r
    put("bam_header", name, stream[:6000])

# Indexes.
for name in ("small.bam.bai", "refs_without_reads.bam.bai", "long_ref.bam.csi"):
    put("index", name, read(os.path.join(data, name)))
put("index", "normal.bam.bai", read(os.path.join(golden, "snp-pileup", "normal.bam.bai")))

# VCF: the golden site list's header and first records, and malformed lines.
vcf = read(os.path.join(golden, "snp-pileup", "sites.vcf")).split(b"\n")
head = [l for l in vcf if l.startswith(b"#")][-5:]
body = [l for l in vcf if l and not l.startswith(b"#")]
put("vcf_sites", "sites", b"\n".join(head + body[:30]) + b"\n")
put("vcf_sites", "crlf-multiallelic", b"#CHROM\tPOS\tID\tREF\tALT\r\n1\t5\t.\tA\tC,G\r\n1\t6\t.\tAT\tA\r\n2\t0\t.\tN\t.\r\n")

# FASTA/FASTQ from the golden reference.
ref = b"".join(l for l in read(os.path.join(golden, "snp-pileup", "ref.fa")).split(b"\n")[1:80])
reads = [ref[i * 97 : i * 97 + 60] for i in range(20)]
fasta = b"".join(b">r%d desc\n%s\n" % (i, s) for i, s in enumerate(reads))
fastq = b"".join(b"@r%d\n%s\n+\n%s\n" % (i, s, b"I" * len(s)) for i, s in enumerate(reads))
multiline = b"".join(b"@r%d\n%s\n%s\n+r%d\n%s\n%s\n" % (i, s[:30], s[30:], i, b"#" * 30, b"F" * (len(s) - 30)) for i, s in enumerate(reads[:8]))
put("seq_parser", "reads.fa", fasta)
put("seq_parser", "reads.fq", fastq)
put("seq_parser", "multiline.fq", multiline)
put("seq_parser", "wrapped.fa", b">chr\n" + b"\n".join(ref[i : i + 60] for i in range(0, 1800, 60)) + b"\n")
put("seq_parser", "crlf.fq", fastq[:600].replace(b"\n", b"\r\n"))
put("seq_parser", "reads.fq.gz", gzip.compress(fastq, mtime=0))
print(f"seeds written to {out} ({picked} records)", file=sys.stderr)
