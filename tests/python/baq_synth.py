"""A random reference and reads drawn from it for comparing pileups with a
reference (BAQ, cap-mapq, reference marks) with pysam: mismatches,
insertions, deletions, ref-skips, soft and hard clips, reads past the
reference's end, reads without qualities, reads already carrying valid
or malformed BQ/ZQ tags, long reads (htslib's long-read BAQ
parameters), lower-case and N reference bases. Written with pysam."""

import random
from pathlib import Path

# chr3 is in the BAM's header only when `missing` is asked for.
REFS = (("chr1", 4000), ("chr2", 600))
CIGAR_SHAPES = [
    "60M", "8S52M", "52M8S", "25M2I33M", "25M3D35M", "20M200N40M", "5H55M", "30M1D4I26M",
    "29=1X30=", "12M1I1D47M", "3S25M4N25M7S", "1I59M", "59M1D1M", "30M12D30M", "20M15I25M",
]


def _ops(cigar):
    import re

    return [(int(n), op) for n, op in re.findall(r"(\d+)([MIDNSHP=X])", cigar)]


def write_reference(path: Path, seed: int) -> dict:
    rng = random.Random(seed)
    seqs = {}
    with open(path, "w") as out:
        for name, length in REFS:
            s = [rng.choice("ACGT") for _ in range(length)]
            # Soft-masked stretches and Ns: BAQ and the marks see them.
            for _ in range(length // 400):
                at = rng.randrange(length - 40)
                for i in range(at, at + 30):
                    s[i] = s[i].lower()
            for _ in range(length // 1000 + 1):
                s[rng.randrange(length)] = "N"
            seqs[name] = "".join(s)
            out.write(f">{name}\n")
            for i in range(0, length, 60):
                out.write(seqs[name][i:i + 60] + "\n")
    return seqs


def write_baq_bam(pysam, path: Path, seed: int = 5, n_reads: int = 900, missing: bool = False):
    """Writes `path` (indexed) and `<path>.fa`; returns both paths. With
    `missing`, the BAM's header has a chr3 the FASTA lacks, with reads."""
    fasta = Path(str(path) + ".fa")
    seqs = write_reference(fasta, seed)
    rng = random.Random(seed + 1)
    refs = list(REFS) + ([("chr3", 500)] if missing else [])
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": n, "LN": l} for n, l in refs]}
    recs = []
    for i in range(n_reads):
        tid = rng.choice([0, 0, 0, 1] + ([2] if missing else []))
        name, length = refs[tid]
        ref = seqs.get(name) or "".join(rng.choice("ACGT") for _ in range(length))
        if rng.random() < 0.01:
            cigar = "1200M" if length > 1300 else "60M"
        else:
            cigar = rng.choice(CIGAR_SHAPES)
        ops = _ops(cigar)
        rlen = sum(n for n, op in ops if op in "MDN=X")
        r = rng.random()
        if r < 0.04:
            pos = length - rlen + rng.randint(1, 20)  # runs past the end
        elif r < 0.08:
            pos = 0
        else:
            pos = rng.randint(0, max(0, length - rlen))
        query, x = [], pos
        for n, op in ops:
            if op in "M=X":
                for j in range(n):
                    b = ref[x + j].upper() if x + j < length else rng.choice("ACGT")
                    if b == "N" or rng.random() < 0.03 or op == "X":
                        b = rng.choice([c for c in "ACGT" if c != b])
                    query.append(b)
                x += n
            elif op in "DN":
                x += n
            elif op in "IS":
                query.extend(rng.choice("ACGTN") for _ in range(n))
        a = pysam.AlignedSegment()
        a.query_name = f"r{i}"
        a.flag = rng.choice([0, 0, 16, 16, 0x1 | 0x2 | 0x40, 0x1 | 0x2 | 0x80 | 0x10, 0x1 | 0x40, 0x400])
        a.reference_id = tid
        a.reference_start = pos
        a.mapping_quality = rng.choice([0, 3, 20, 37, 60, 60, 60, 254])
        a.cigarstring = cigar
        a.query_sequence = "".join(query)
        n = len(query)
        if rng.random() < 0.04:
            a.query_qualities = None
        else:
            a.query_qualities = pysam.qualitystring_to_array("".join(chr(33 + rng.randint(2, 41)) for _ in range(n)))
        if a.flag & 0x1:
            a.next_reference_id, a.next_reference_start = tid, pos
        t = rng.random()
        # BQ/ZQ as a previous BAQ left them (offset 64), or malformed.
        offsets = lambda: "".join(chr(64 + rng.randint(0, 20)) for _ in range(n))  # noqa: E731
        if t < 0.06:
            a.set_tag("BQ", offsets(), "Z")
        elif t < 0.10:
            a.set_tag("ZQ", offsets(), "Z")
        elif t < 0.12:
            a.set_tag("BQ", offsets(), "Z")
            a.set_tag("ZQ", offsets(), "Z")
        elif t < 0.14:
            a.set_tag("BQ", offsets()[:-1] or "@", "Z")
        elif t < 0.15:
            a.set_tag("BQ", 7, "i")
        elif t < 0.16:
            a.set_tag("ZQ", offsets() + "@", "Z")
        a.set_tag("XX", "after", "Z")
        recs.append(a)
    recs.sort(key=lambda a: (a.reference_id, a.reference_start))
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for a in recs:
            out.write(a)
    pysam.index(str(path))
    return path, fasta
