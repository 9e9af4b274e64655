//! Building one alignment record: CIGAR, SEQ, QUAL, MD and NM that agree
//! with each other and with the reference.
//!
//! SEQ is generated directly in reference orientation (as SAM stores it), by
//! walking the reference and applying the sample's heterozygous SNPs,
//! sequencing errors and indels. MD/NM are computed during the same walk, so
//! they are correct by construction.

use crate::genome::BASES;
use crate::rng::{splitmix64, Prob, Rng};

pub const OP_M: u8 = b'M';
pub const OP_I: u8 = b'I';
pub const OP_D: u8 = b'D';
pub const OP_N: u8 = b'N';
pub const OP_S: u8 = b'S';
pub const OP_H: u8 = b'H';
pub const OP_EQ: u8 = b'=';
pub const OP_X: u8 = b'X';

/// Whether a record is the primary line of its read or an extra alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Primary,
    Secondary,
    Supplementary,
}

/// One SAM record in the making. Instances live in a pool and are reused
/// between templates, so their vectors keep their capacity.
#[derive(Clone, Debug, Default)]
pub struct Aln {
    /// 0 = read 1, 1 = read 2, 2 = unpaired read.
    pub read: u8,
    pub kind: Kind,
    pub mapped: bool,
    /// -1 for unplaced (RNAME `*`).
    pub tid: i32,
    /// 0-based leftmost aligned base (for unmapped-but-placed reads, the mate's).
    pub pos: u32,
    pub rev: bool,
    pub mapq: u8,
    pub cigar: Vec<(u32, u8)>,
    /// Reference bases covered (M/D/N/=/X).
    pub span: u32,
    pub seq: Vec<u8>,
    pub qual: Vec<u8>,
    /// Write `*` for SEQ (secondary alignments, as bwa does) / QUAL.
    pub seq_star: bool,
    pub qual_star: bool,
    pub md: Vec<u8>,
    pub nm: u32,
    pub score: i32,
    /// Suboptimal alignment score (XS:i), if any.
    pub sub_score: Option<i32>,
    /// Text of the SA:Z tag (without `SA:Z:`), empty if none.
    pub sa: Vec<u8>,
    /// Elements of a large `B:I` tag to make this record bigger than 64 kB.
    pub big_array: u32,
}

impl Aln {
    pub fn reset(&mut self) {
        self.read = 0;
        self.kind = Kind::Primary;
        self.mapped = false;
        self.tid = -1;
        self.pos = 0;
        self.rev = false;
        self.mapq = 0;
        self.cigar.clear();
        self.span = 0;
        self.seq.clear();
        self.qual.clear();
        self.seq_star = false;
        self.qual_star = false;
        self.md.clear();
        self.nm = 0;
        self.score = 0;
        self.sub_score = None;
        self.sa.clear();
        self.big_array = 0;
    }

    /// Copy everything from `o`, reusing this instance's buffers.
    pub fn copy_from(&mut self, o: &Aln) {
        self.read = o.read;
        self.kind = o.kind;
        self.mapped = o.mapped;
        self.tid = o.tid;
        self.pos = o.pos;
        self.rev = o.rev;
        self.mapq = o.mapq;
        self.cigar.clone_from(&o.cigar);
        self.span = o.span;
        self.seq.clone_from(&o.seq);
        self.qual.clone_from(&o.qual);
        self.seq_star = o.seq_star;
        self.qual_star = o.qual_star;
        self.md.clone_from(&o.md);
        self.nm = o.nm;
        self.score = o.score;
        self.sub_score = o.sub_score;
        self.sa.clone_from(&o.sa);
        self.big_array = o.big_array;
    }

    /// Number of query bases the CIGAR consumes (M/I/S/=/X).
    pub fn cigar_query_len(&self) -> u64 {
        self.cigar
            .iter()
            .filter(|(_, op)| matches!(*op, OP_M | OP_I | OP_S | OP_EQ | OP_X))
            .map(|&(n, _)| n as u64)
            .sum()
    }

    /// Number of reference bases the CIGAR consumes (M/D/N/=/X).
    pub fn cigar_ref_len(&self) -> u64 {
        self.cigar
            .iter()
            .filter(|(_, op)| matches!(*op, OP_M | OP_D | OP_N | OP_EQ | OP_X))
            .map(|&(n, _)| n as u64)
            .sum()
    }

    /// Append an op, merging with the previous one if it is the same.
    #[inline]
    pub fn push_op(&mut self, n: u32, op: u8) {
        if n == 0 {
            return;
        }
        if let Some(last) = self.cigar.last_mut() {
            if last.1 == op {
                last.0 += n;
                return;
            }
        }
        self.cigar.push((n, op));
    }
}

/// An indel or reference skip, placed before aligned-query offset `at`.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    Ins(u32),
    Del(u32),
    Skip(u32),
}

/// How one end of a read is clipped.
#[derive(Clone, Copy, Debug)]
pub enum Clip<'a> {
    None,
    /// Soft clip; with `Some(seq)` those exact bases, otherwise random ones.
    Soft(u32, Option<&'a [u8]>),
    Hard(u32),
}

impl Clip<'_> {
    #[cfg(test)]
    pub fn query_len(&self) -> u32 {
        match *self {
            Clip::None | Clip::Hard(_) => 0,
            Clip::Soft(n, _) => n,
        }
    }
}

/// Per-base rates and the sample's SNPs, fixed for a run.
pub struct ErrorModel {
    pub mismatch: Prob,
    pub n_base: Prob,
    /// Seed of the hash that decides which reference positions are the
    /// sample's heterozygous SNPs (consistent across all reads, so pileups
    /// see real allele fractions).
    pub snp_seed: u64,
}

impl ErrorModel {
    /// Alternate base if `(tid,pos)` is a heterozygous SNP of the sample
    /// (about 1 in 1000 positions).
    #[inline]
    pub fn snp_alt(&self, tid: u32, pos: u32, ref_base: u8) -> Option<u8> {
        let h = splitmix64(self.snp_seed ^ ((tid as u64) << 32 | pos as u64));
        if h % 1000 != 0 {
            return None;
        }
        let idx = BASES.iter().position(|&b| b == ref_base).unwrap_or(0);
        Some(BASES[(idx + 1 + ((h >> 20) % 3) as usize) % 4])
    }
}

/// Choose indel/skip events for an aligned part of `qlen` query bases.
/// Returns the reference span. Events are at least 8 bases from either end and
/// from each other, so every CIGAR starts and ends with an M-type op.
pub fn choose_events(
    rng: &mut Rng,
    qlen: u32,
    allow_skip: bool,
    out: &mut Vec<(u32, Event)>,
) -> u32 {
    out.clear();
    if qlen < 40 {
        return qlen;
    }
    // ~10% of reads carry one indel, ~2% two; ~0.5% have an N (splice-like) skip.
    let n_indel = if rng.chance(0.02) {
        2
    } else if rng.chance(0.10) {
        1
    } else {
        0
    };
    for _ in 0..n_indel {
        let at = rng.range(8, (qlen - 8) as u64) as u32;
        let len = 1
            + rng.below(4) as u32
            + if rng.chance(0.1) {
                rng.below(8) as u32
            } else {
                0
            };
        if rng.chance(0.5) {
            // Insertion must leave >= 8 M bases after it.
            if at + len + 8 <= qlen {
                out.push((at, Event::Ins(len)));
            }
        } else {
            out.push((at, Event::Del(len)));
        }
    }
    if allow_skip && rng.chance(0.005) {
        let at = rng.range(8, (qlen - 8) as u64) as u32;
        out.push((at, Event::Skip(rng.range(100, 5_000) as u32)));
    }
    out.sort_by_key(|e| e.0);
    // Keep events well separated (and never inside an insertion).
    let mut last_end: i64 = -100;
    out.retain(|&(at, ev)| {
        let ok = at as i64 >= last_end + 8;
        if ok {
            last_end = at as i64 + if let Event::Ins(n) = ev { n as i64 } else { 0 };
        }
        ok
    });
    events_span(qlen, out)
}

/// Reference span of a set of events for `qlen` aligned query bases.
pub fn events_span(qlen: u32, events: &[(u32, Event)]) -> u32 {
    let mut span = qlen;
    for &(_, ev) in events {
        match ev {
            Event::Ins(n) => span -= n,
            Event::Del(n) | Event::Skip(n) => span += n,
        }
    }
    span
}

/// Everything needed to walk one alignment.
pub struct WalkSpec<'a> {
    pub tid: u32,
    pub pos: u32,
    /// Reference bases starting at `pos`, at least the span long.
    pub refw: &'a [u8],
    /// Aligned query bases (M/I/=/X), excluding clips.
    pub qlen: u32,
    pub events: &'a [(u32, Event)],
    pub left: Clip<'a>,
    pub right: Clip<'a>,
    /// Use `=`/`X` instead of `M`.
    pub eqx: bool,
}

/// Fill `a.cigar/seq/md/nm/span` (appending to empty buffers). QUAL is
/// generated separately as it depends on the read group's profile.
pub fn walk(rng: &mut Rng, em: &ErrorModel, s: &WalkSpec, a: &mut Aln) {
    a.cigar.clear();
    a.seq.clear();
    a.md.clear();
    a.nm = 0;
    match s.left {
        Clip::None => {}
        Clip::Hard(n) => a.push_op(n, OP_H),
        Clip::Soft(n, bases) => {
            a.push_op(n, OP_S);
            push_clip_bases(rng, n, bases, &mut a.seq);
        }
    }
    let mut q = 0u32; // aligned query offset
    let mut r = 0u32; // reference offset
    let mut run = 0u32; // MD match run
    let mut ev = 0usize;
    let mut mismatches = 0u32;
    while q < s.qlen {
        if ev < s.events.len() && s.events[ev].0 == q {
            match s.events[ev].1 {
                Event::Ins(n) => {
                    a.push_op(n, OP_I);
                    for _ in 0..n {
                        a.seq.push(BASES[rng.below(4) as usize]);
                    }
                    a.nm += n;
                    q += n;
                }
                Event::Del(n) => {
                    a.push_op(n, OP_D);
                    push_num(&mut a.md, run);
                    run = 0;
                    a.md.push(b'^');
                    a.md.extend_from_slice(&s.refw[r as usize..(r + n) as usize]);
                    a.nm += n;
                    r += n;
                }
                Event::Skip(n) => {
                    // N is not part of MD and not an edit.
                    a.push_op(n, OP_N);
                    r += n;
                }
            }
            ev += 1;
            continue;
        }
        let rb = s.refw[r as usize];
        let mut b = rb;
        if let Some(alt) = em.snp_alt(s.tid, s.pos + r, rb) {
            if rng.next_u64() & 1 == 1 {
                b = alt;
            }
        }
        if rng.hit(em.mismatch) {
            // Sequencing error: any base other than the current one.
            let idx = BASES.iter().position(|&x| x == b).unwrap_or(0);
            b = BASES[(idx + 1 + rng.below(3) as usize) % 4];
        } else if rng.hit(em.n_base) {
            b = b'N';
        }
        a.seq.push(b);
        if b == rb {
            run += 1;
            a.push_op(1, if s.eqx { OP_EQ } else { OP_M });
        } else {
            push_num(&mut a.md, run);
            run = 0;
            a.md.push(rb);
            a.nm += 1;
            mismatches += 1;
            a.push_op(1, if s.eqx { OP_X } else { OP_M });
        }
        q += 1;
        r += 1;
    }
    push_num(&mut a.md, run);
    match s.right {
        Clip::None => {}
        Clip::Hard(n) => a.push_op(n, OP_H),
        Clip::Soft(n, bases) => {
            a.push_op(n, OP_S);
            push_clip_bases(rng, n, bases, &mut a.seq);
        }
    }
    a.span = r;
    // bwa-like score: +1 per match, -4 per mismatch, -6-1*len per gap.
    let gaps: i32 = s
        .events
        .iter()
        .map(|e| match e.1 {
            Event::Ins(n) | Event::Del(n) => 6 + n as i32,
            Event::Skip(_) => 0,
        })
        .sum();
    let matched = s.qlen as i32 - mismatches as i32;
    a.score = (matched - 4 * mismatches as i32 - gaps).max(0);
}

fn push_clip_bases(rng: &mut Rng, n: u32, bases: Option<&[u8]>, seq: &mut Vec<u8>) {
    match bases {
        Some(b) => {
            debug_assert_eq!(b.len(), n as usize);
            seq.extend_from_slice(b);
        }
        None => {
            for _ in 0..n {
                seq.push(BASES[rng.below(4) as usize]);
            }
        }
    }
}

/// Append the decimal form of `n` (hand-rolled, no allocation).
#[inline]
pub fn push_num(out: &mut Vec<u8>, n: u32) {
    push_u64(out, n as u64);
}

#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

#[inline]
pub fn push_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, n.unsigned_abs());
}

/// Build the long-CIGAR alignment: `(1M1D1M1I) x units` between two M
/// flanks, i.e. more than 65,535 operations, which BAM cannot hold in the
/// CIGAR field (samtools moves it to a CG:B:I tag). No sequencing errors or
/// SNPs: the point of this record is its shape, not its content.
pub fn walk_long_cigar(rng: &mut Rng, refw: &[u8], units: u32, flank: u32, a: &mut Aln) {
    a.cigar.clear();
    a.seq.clear();
    a.md.clear();
    a.nm = 0;
    let mut r = 0usize;
    let mut run = 0u32;
    a.cigar.push((flank, OP_M));
    a.seq.extend_from_slice(&refw[..flank as usize]);
    r += flank as usize;
    run += flank;
    for _ in 0..units {
        // 1M
        a.cigar.push((1, OP_M));
        a.seq.push(refw[r]);
        r += 1;
        run += 1;
        // 1D
        a.cigar.push((1, OP_D));
        push_num(&mut a.md, run);
        run = 0;
        a.md.push(b'^');
        a.md.push(refw[r]);
        r += 1;
        a.nm += 1;
        // 1M
        a.cigar.push((1, OP_M));
        a.seq.push(refw[r]);
        r += 1;
        run += 1;
        // 1I
        a.cigar.push((1, OP_I));
        a.seq.push(BASES[rng.below(4) as usize]);
        a.nm += 1;
    }
    a.cigar.push((flank, OP_M));
    a.seq.extend_from_slice(&refw[r..r + flank as usize]);
    r += flank as usize;
    run += flank;
    push_num(&mut a.md, run);
    a.span = r as u32;
    a.score = (a.seq.len() as i32 - 7 * units as i32 * 2).max(0);
}

/// Reference span of [`walk_long_cigar`].
pub fn long_cigar_span(units: u32, flank: u32) -> u32 {
    3 * units + 2 * flank
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ErrorModel {
        ErrorModel {
            mismatch: Prob::new(0.01),
            n_base: Prob::new(0.001),
            snp_seed: 5,
        }
    }

    /// Check MD/NM against SEQ and the reference by replaying the CIGAR.
    fn check_md(a: &Aln, refw: &[u8]) {
        let mut q = 0usize;
        let mut r = 0usize;
        let mut md = Vec::new();
        let mut run = 0u32;
        let mut nm = 0u32;
        for &(n, op) in &a.cigar {
            let n = n as usize;
            match op {
                OP_S => q += n,
                OP_H => {}
                OP_M | OP_EQ | OP_X => {
                    for _ in 0..n {
                        if a.seq[q] == refw[r] {
                            assert_ne!(op, OP_X);
                            run += 1;
                        } else {
                            assert_ne!(op, OP_EQ);
                            push_num(&mut md, run);
                            run = 0;
                            md.push(refw[r]);
                            nm += 1;
                        }
                        q += 1;
                        r += 1;
                    }
                }
                OP_I => {
                    q += n;
                    nm += n as u32;
                }
                OP_D => {
                    push_num(&mut md, run);
                    run = 0;
                    md.push(b'^');
                    md.extend_from_slice(&refw[r..r + n]);
                    r += n;
                    nm += n as u32;
                }
                OP_N => r += n,
                _ => panic!("bad op"),
            }
        }
        push_num(&mut md, run);
        assert_eq!(q, a.seq.len());
        assert_eq!(r as u32, a.span);
        assert_eq!(md, a.md, "MD");
        assert_eq!(nm, a.nm, "NM");
    }

    #[test]
    fn walked_alignments_are_self_consistent() {
        let mut rng = Rng::new(3);
        let em = model();
        let mut refw = vec![0u8; 20_000];
        for b in refw.iter_mut() {
            *b = BASES[rng.below(4) as usize];
        }
        let mut events = Vec::new();
        let mut a = Aln::default();
        for i in 0..5_000u32 {
            let qlen = rng.range(20, 300) as u32;
            let span = choose_events(&mut rng, qlen, true, &mut events);
            assert_eq!(span, events_span(qlen, &events));
            let left = if i % 3 == 0 {
                Clip::Soft(5, None)
            } else {
                Clip::None
            };
            let right = if i % 7 == 0 {
                Clip::Hard(9)
            } else {
                Clip::None
            };
            let spec = WalkSpec {
                tid: 0,
                pos: 100,
                refw: &refw[100..],
                qlen,
                events: &events,
                left,
                right,
                eqx: i % 11 == 0,
            };
            walk(&mut rng, &em, &spec, &mut a);
            assert_eq!(a.span, span);
            // CIGAR query length must equal SEQ length (the property samtools checks).
            assert_eq!(a.cigar_query_len(), a.seq.len() as u64);
            assert_eq!(
                a.cigar_query_len(),
                (qlen + left.query_len() + right.query_len()) as u64
            );
            assert_eq!(a.cigar_ref_len(), span as u64);
            // First and last non-clip ops are match-type.
            let core: Vec<_> = a
                .cigar
                .iter()
                .filter(|c| c.1 != OP_S && c.1 != OP_H)
                .collect();
            assert!(matches!(core.first().unwrap().1, OP_M | OP_EQ | OP_X));
            assert!(matches!(core.last().unwrap().1, OP_M | OP_EQ | OP_X));
            check_md(&a, &refw[100..]);
        }
    }

    #[test]
    fn long_cigar_has_more_than_65535_ops() {
        let mut rng = Rng::new(1);
        let units = 17_000;
        let flank = 50;
        let span = long_cigar_span(units, flank);
        let refw: Vec<u8> = (0..span).map(|i| BASES[(i % 4) as usize]).collect();
        let mut a = Aln::default();
        walk_long_cigar(&mut rng, &refw, units, flank, &mut a);
        assert!(a.cigar.len() > 65_535);
        assert_eq!(a.cigar_query_len(), a.seq.len() as u64);
        assert_eq!(a.span, span);
        check_md(&a, &refw);
    }

    #[test]
    fn number_formatting() {
        let mut v = Vec::new();
        push_i64(&mut v, -2_147_483_648);
        v.push(b' ');
        push_u64(&mut v, 0);
        v.push(b' ');
        push_u64(&mut v, u64::MAX);
        assert_eq!(v, b"-2147483648 0 18446744073709551615");
    }
}
