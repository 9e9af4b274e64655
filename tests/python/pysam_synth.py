"""A small random BAM for comparing pileups with pysam: pairs whose mates
overlap (proper and not), insertions, deletions, ref-skips (N), soft and
hard clips, secondary, duplicate, QC-failed and unmapped-but-placed reads,
reads without qualities, low base and mapping qualities, reads at both
ends of the references. Written and indexed with pysam."""

import random
from pathlib import Path

REFS = (("chr1", 3000), ("chr2", 400), ("empty", 1000))
CIGARS = [
    "50M", "10S40M", "40M10S", "20M2I28M", "20M3D30M", "15M100N35M", "5H45M5S", "30M1D5I15M",
    "25=1X24=", "12M1I1D37M", "3S20M4N20M7S", "1I49M", "49M1D1M",
]


def _query_len(cigar: str) -> int:
    import re

    return sum(int(n) for n, op in re.findall(r"(\d+)([MIDNSHP=X])", cigar) if op in "MIS=X")


def _ref_len(cigar: str) -> int:
    import re

    return sum(int(n) for n, op in re.findall(r"(\d+)([MIDNSHP=X])", cigar) if op in "MDN=X")


def write_synthetic_bam(pysam, path: Path, seed: int = 7, n_pairs: int = 700) -> Path:
    rng = random.Random(seed)
    header = {"HD": {"VN": "1.6", "SO": "coordinate"}, "SQ": [{"SN": n, "LN": l} for n, l in REFS]}
    recs = []

    def make(name, tid, pos, cigar, flag, mtid, mpos, tlen):
        a = pysam.AlignedSegment()
        a.query_name = name
        a.flag = flag
        a.reference_id = tid
        a.reference_start = pos
        a.mapping_quality = rng.choice([0, 1, 5, 20, 30, 60, 60, 60])
        a.cigarstring = cigar
        n = _query_len(cigar)
        a.query_sequence = "".join(rng.choice("ACGTACGTACGTN") for _ in range(n))
        r = rng.random()
        if r < 0.05:
            a.query_qualities = None
        elif r < 0.15:
            a.query_qualities = pysam.qualitystring_to_array("".join(chr(33 + rng.randint(0, 14)) for _ in range(n)))
        else:
            a.query_qualities = pysam.qualitystring_to_array("".join(chr(33 + rng.randint(5, 41)) for _ in range(n)))
        a.next_reference_id = mtid
        a.next_reference_start = mpos
        a.template_length = tlen
        return a

    for i in range(n_pairs):
        tid = 0 if rng.random() < 0.8 else 1
        length = REFS[tid][1]
        c1, c2 = rng.choice(CIGARS), rng.choice(CIGARS)
        l1, l2 = _ref_len(c1), _ref_len(c2)
        edge = rng.random()
        if edge < 0.05:
            p1 = 0
        elif edge < 0.1:
            p1 = length - l1
        else:
            p1 = rng.randint(0, length - l1)
        # Mates overlap often (short inserts).
        p2 = min(max(0, p1 + rng.randint(-20, 60)), length - l2)
        name = f"p{i}"
        kind = rng.random()
        extra = 0
        for bit, prob in ((0x100, 0.04), (0x400, 0.05), (0x200, 0.03)):
            if rng.random() < prob:
                extra |= bit
        if kind < 0.1:
            # Unpaired.
            recs.append(make(name, tid, p1, c1, 0x0 | extra | (0x10 if rng.random() < 0.5 else 0), -1, -1, 0))
            continue
        proper = 0x2 if kind > 0.25 else 0
        lo, hi = min(p1, p2), max(p1 + l1, p2 + l2)
        tlen = hi - lo
        r1rev, r2rev = (0, 0x10) if p1 <= p2 else (0x10, 0)
        if kind < 0.15:
            # Mate unmapped (placed at the read's position), the read kept.
            f1 = 0x1 | 0x8 | 0x40 | r1rev | extra
            f2 = 0x1 | 0x4 | 0x80
            recs.append(make(name, tid, p1, c1, f1, tid, p1, 0))
            recs.append(make(name, tid, p1, c2, f2, tid, p1, 0))
            continue
        f1 = 0x1 | proper | 0x40 | r1rev | (0x20 if r2rev else 0) | extra
        f2 = 0x1 | proper | 0x80 | r2rev | (0x20 if r1rev else 0)
        recs.append(make(name, tid, p1, c1, f1, tid, p2, tlen if p1 <= p2 else -tlen))
        if rng.random() < 0.03:
            # The mate is missing from the file.
            continue
        recs.append(make(name, tid, p2, c2, f2, tid, p1, -tlen if p1 <= p2 else tlen))
    recs.sort(key=lambda a: (a.reference_id, a.reference_start))
    with pysam.AlignmentFile(str(path), "wb", header=header) as out:
        for a in recs:
            out.write(a)
    pysam.index(str(path))
    return path
