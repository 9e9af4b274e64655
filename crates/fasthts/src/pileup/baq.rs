//! Base alignment qualities (BAQ) and mapping-quality capping against a
//! reference, as htslib's `sam_prob_realn` and `sam_cap_mapq` compute them
//! (the versions pysam 0.24 bundles; samtools mpileup and pysam's
//! `samtools` pileup stepper call them on each read).
//!
//! BAQ realigns the read to the reference around its alignment with a
//! banded profile HMM (Li 2011, doi:10.1093/bioinformatics/btr076) and
//! lowers each base's quality to the posterior probability that the base
//! is aligned where the CIGAR puts it. The arithmetic follows htslib's
//! compiled code step for step (the same f32/f64 types, operation order
//! and libm calls), so the qualities produced are identical to the bit.
//!
//! [`Realigner`] owns the scratch matrices and is meant to live as long as
//! the pileup calling it: after the first reads nothing is allocated.

use crate::bam::edit::find_tag;
use crate::bam::{flags, CigarOp, RecordRef};
use std::sync::OnceLock;

/// Lower the record's qualities (`ZQ` tag) instead of only recording the
/// BAQ (`BQ` tag): htslib's `BAQ_APPLY`.
pub const APPLY: u32 = 1;
/// Extended BAQ (htslib's `BAQ_EXTEND`): more sensitive, the default of
/// pysam and of samtools mpileup.
pub const EXTEND: u32 = 2;
/// Recompute even when the record carries a `BQ` tag (`BAQ_REDO`).
pub const REDO: u32 = 4;

/// What [`Realigner::realign`] did to a record (htslib's return values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Realigned {
    /// Qualities and tags updated (0).
    Done,
    /// Nothing to do: unmapped, no sequence or qualities, a ref-skip in
    /// the CIGAR, or no aligned base (-1).
    NotApplicable,
    /// The record's `BQ`/`ZQ` tag already says what is asked for (-3).
    AlreadyDone,
    /// A malformed `ZQ` tag (-4); the record is left as it is.
    BadZqTag,
}

/// htslib 1.24's `seq_nt16_table` (pysam's): a reference letter's 4-bit
/// code. Unlike htslib 1.16 (and `sam::encode`), `U` is `T`; the digits
/// 0-3 are colour-space bases.
#[inline]
pub fn nt16_htslib_1_24(c: u8) -> u8 {
    NT16_1_24[usize::from(c)]
}

static NT16_1_24: [u8; 256] = {
    let mut t = [15u8; 256];
    let letters = b"=ACMGRSVTWYHKDBN";
    let mut i = 0;
    while i < letters.len() {
        t[letters[i] as usize] = i as u8;
        t[letters[i].to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    let more: [(u8, u8); 6] = [(b'U', 8), (b'u', 8), (b'0', 1), (b'1', 2), (b'2', 4), (b'3', 8)];
    let mut i = 0;
    while i < more.len() {
        t[more[i].0 as usize] = more[i].1;
        i += 1;
    }
    t
};

/// htslib's `seq_nt16_int`: a 4-bit code as 0-3 for A, C, G, T, 4 for
/// anything else.
const NT16_INT: [u8; 16] = [4, 0, 1, 4, 2, 4, 4, 4, 3, 4, 4, 4, 4, 4, 4, 4];

/// The reference base at `i` as `sam_prob_realn` and `sam_cap_mapq` read
/// it: `None` past the end (htslib stops at the string's NUL).
#[inline]
fn ref_at(reference: &[u8], i: i64) -> Option<u8> {
    usize::try_from(i).ok().and_then(|i| reference.get(i).copied()).filter(|&c| c != 0)
}

/// x86-64's conversion of a double to int (`cvttsd2si`), which htslib's
/// `(int)` casts compile to: truncation, and `INT_MIN` for what does not
/// fit (infinities, NaN), where Rust's `as` would saturate.
#[inline]
fn c_int(x: f64) -> i32 {
    if x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

/// The HMM's parameters (htslib's `probaln_par_t`; `d` and `e` are floats
/// there, and float arithmetic on them matters to the result).
#[derive(Clone, Copy)]
struct HmmParams {
    /// Gap open probability.
    d: f32,
    /// Gap extension probability.
    e: f32,
    /// Band width.
    bw: i32,
}

/// Emission probability of an insertion.
const EI: f64 = 0.25;
/// Of one mismatching base.
const EM: f64 = 0.33333333333;

/// `10^(-q/10)` as floats, htslib's `g_qual2prob`.
fn qual_to_prob() -> &'static [f32; 256] {
    static TABLE: OnceLock<[f32; 256]> = OnceLock::new();
    TABLE.get_or_init(|| std::array::from_fn(|i| 10f64.powf(-(i as f64) / 10.) as f32))
}

/// htslib's `set_u`: the column of reference position `k` in row `i` of
/// the banded matrices (3 cells per position).
#[inline]
fn band_col(bw: i64, i: i64, k: i64) -> i64 {
    let x = (i - bw).max(0);
    (k - x + 1) * 3
}

/// Scratch space of the realignment, reused from read to read.
#[derive(Default)]
pub struct Realigner {
    forward: Vec<f64>,
    backward: Vec<f64>,
    scale: Vec<f64>,
    qual: Vec<f32>,
    query: Vec<u8>,
    reference: Vec<u8>,
    state: Vec<i32>,
    posterior: Vec<u8>,
    baq: Vec<u8>,
    left: Vec<u8>,
    right: Vec<u8>,
}

impl Realigner {
    /// A realigner with no scratch space yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// htslib's `probaln_glocal` with its state and posterior outputs, on
    /// `self.reference`, `self.query` and `iqual`: fills `self.state` and
    /// `self.posterior` (one per query base); false when either sequence
    /// is empty (htslib then leaves them untouched).
    #[inline(never)]
    fn glocal(&mut self, iqual: &[u8], par: HmmParams) -> bool {
        let (l_ref, l_query) = (self.reference.len() as i64, self.query.len() as i64);
        if l_ref == 0 || l_query == 0 {
            return false;
        }
        let (rf, qy) = (&self.reference[..], &self.query[..]);
        let mut bw = l_ref.max(l_query);
        if bw > i64::from(par.bw) {
            bw = i64::from(par.bw);
        }
        if bw < (l_ref - l_query).abs() {
            bw = (l_ref - l_query).abs();
        }
        let bw2 = bw * 2 + 1;
        let i_dim = (if bw2 < l_ref { bw2 * 3 + 6 } else { l_ref * 3 + 6 }) as usize;
        let rows = (l_query + 1) as usize;
        // Zeroed as htslib's calloc: cells outside the band are read as 0
        // (and one read past a row's end lands in the next row's unused
        // first cells, also 0).
        let cells = rows * i_dim + 6;
        for m in [&mut self.forward, &mut self.backward] {
            m.clear();
            m.resize(cells, 0.0);
        }
        let (f, b) = (&mut self.forward, &mut self.backward);
        let s = &mut self.scale;
        s.clear();
        s.resize(rows + 1, 0.0);
        let table = qual_to_prob();
        self.qual.clear();
        self.qual.extend(iqual.iter().map(|&q| table[usize::from(q)]));
        let qual = &self.qual;

        let s_m = 1. / (2 * l_query + 2) as f64;
        let s_i = s_m;
        let one_d = 1.0f32 - par.d;
        let one_e = 1.0f32 - par.e;
        let m = [
            f64::from(one_d - par.d) * (1. - s_m),
            f64::from(par.d) * (1. - s_m),
            f64::from(par.d) * (1. - s_m),
            f64::from(one_e) * (1. - s_i),
            f64::from(par.e) * (1. - s_i),
            0.,
            f64::from(one_e),
            0.,
            f64::from(par.e),
        ];
        // Float divisions in htslib ((1 - d) / l_ref with d a float).
        let b_m = f64::from(one_d / l_ref as f32);
        let b_i = f64::from(par.d / l_ref as f32);
        let cond = |r: u8, q: u8| usize::from(r > 3 || q > 3) * 2 + usize::from(r == q);
        let first_emission = |r: u8| {
            let q0 = f64::from(qual[0]);
            if r > 3 || qy[0] > 3 {
                1.
            } else if r == qy[0] {
                1. - q0
            } else {
                q0 * EM
            }
        };

        // Forward.
        f[band_col(bw, 0, 0) as usize] = 1.;
        s[0] = 1.;
        {
            let end = l_ref.min(bw + 1);
            let mut sum = 0.;
            for k in 1..=end {
                let e = first_emission(rf[(k - 1) as usize]);
                let u = i_dim + band_col(bw, 1, k) as usize;
                f[u] = e * b_m;
                f[u + 1] = EI * b_i;
                sum += f[u] + f[u + 1];
            }
            s[1] = sum;
        }
        for i in 2..=l_query {
            let qli = f64::from(qual[(i - 1) as usize]);
            let qyi = qy[(i - 1) as usize];
            let beg = (i - bw).max(1);
            let end = (i + bw).min(l_ref);
            let emit = [qli * EM, 1. - qli, 1., 1.];
            let mm = 1. / s[(i - 1) as usize];
            let xm = [mm * m[0], mm * m[3], mm * m[6], EI * mm * m[1], EI * mm * m[4]];
            let mut sum = 0.;
            if beg <= end {
                let n = (end - beg + 1) as usize;
                // Row i's cells of the band, and row i-1's from position
                // beg-1 on (each cell reads 5 values from there).
                let (before, row) = f.split_at_mut(i as usize * i_dim);
                let prev = &before[(i - 1) as usize * i_dim..];
                let u = band_col(bw, i, beg) as usize;
                let v = band_col(bw, i - 1, beg - 1) as usize;
                let xs = &mut row[u..u + 3 * n];
                let ys = &prev[v..v + 3 * n + 2];
                // The previous position's match and deletion cells, times
                // their transitions into a deletion.
                let mut l_x0 = m[2] * xs[0];
                let mut l_x2 = m[8] * xs[2];
                let rs = &rf[(beg - 1) as usize..end as usize];
                for (j, &r) in rs.iter().enumerate() {
                    let y = &ys[3 * j..3 * j + 5];
                    let x = &mut xs[3 * j..3 * j + 3];
                    let z0 = xm[0] * y[0];
                    let z1 = xm[1] * y[1];
                    let z2 = xm[2] * y[2];
                    let z3 = xm[3] * y[3];
                    let z4 = xm[4] * y[4];
                    x[0] = emit[cond(r, qyi)] * (z0 + z1 + z2);
                    x[1] = z3 + z4;
                    x[2] = l_x0 + l_x2;
                    sum += x[0] + x[1] + x[2];
                    l_x0 = m[2] * x[0];
                    l_x2 = m[8] * x[2];
                }
            }
            s[i as usize] = sum;
        }
        let last = l_query as usize * i_dim;
        {
            let mm = 1. / s[l_query as usize];
            let mut sum = 0.;
            for k in 1..=l_ref {
                let u = band_col(bw, l_query, k);
                if u < 3 || u >= i_dim as i64 {
                    continue;
                }
                let u = last + u as usize;
                sum += mm * f[u] * s_m + mm * f[u + 1] * s_i;
            }
            s[l_query as usize + 1] = sum;
        }

        // Backward (its b[0] row and the likelihood are not needed here).
        let (s_last, s_end) = (s[l_query as usize], s[l_query as usize + 1]);
        for k in 1..=l_ref {
            let u = band_col(bw, l_query, k);
            if u < 3 || u >= i_dim as i64 {
                continue;
            }
            let u = last + u as usize;
            b[u] = s_m / s_last / s_end;
            b[u + 1] = s_i / s_last / s_end;
        }
        let (e1, e4) = (EI * m[1], EI * m[4]);
        for i in (1..l_query).rev() {
            let beg = (i - bw).max(1);
            let end = (i + bw).min(l_ref);
            let y = if i > 1 { 1. } else { 0. };
            let qli1 = f64::from(qual[i as usize]);
            let qyi1 = qy[i as usize];
            let emit = [qli1 * EM, 1. - qli1, 1., 1.];
            if beg > end {
                continue;
            }
            let n = (end - beg + 1) as usize;
            let (head, next) = b.split_at_mut((i + 1) as usize * i_dim);
            let row = &mut head[i as usize * i_dim..];
            let u = band_col(bw, i, beg) as usize;
            // The deletion cell after the band's last position, read as
            // htslib reads it: in the row's unused tail, or the next row's
            // unused first cells (0 either way).
            let after = u + 3 * n + 2;
            let mut xi_5 = if after < i_dim { row[after] } else { next[after - i_dim] };
            let v = band_col(bw, i + 1, beg) as usize;
            let xs = &mut row[u..u + 3 * n];
            // Row i+1 from position beg on (each cell reads 5 values).
            let ys = &next[v..v + 3 * n + 2];
            let scale = 1. / s[i as usize];
            for j in (0..n).rev() {
                let k = beg + j as i64;
                let yv = &ys[3 * j..3 * j + 5];
                let x = &mut xs[3 * j..3 * j + 3];
                let e = if k >= l_ref { 0. } else { emit[cond(rf[k as usize], qyi1)] * yv[3] };
                x[1] = e * m[3] + e4 * yv[1];
                x[0] = e * m[0] + e1 * yv[1] + m[2] * xi_5;
                x[2] = (e * m[6] + m[8] * xi_5) * y;
                xi_5 = x[2];
                x[1] *= scale;
                x[0] *= scale;
                x[2] *= scale;
            }
        }

        // Posterior decoding.
        self.state.clear();
        self.posterior.clear();
        for i in 1..=l_query {
            let beg = (i - bw).max(1);
            let end = (i + bw).min(l_ref);
            let mm = 1. / s[i as usize];
            let (mut sum, mut max, mut max_k) = (0., 0., -1i32);
            if beg <= end {
                let n = (end - beg + 1) as usize;
                let u = i as usize * i_dim + band_col(bw, i, beg) as usize;
                let (fs, bs) = (&f[u..u + 3 * n], &b[u..u + 3 * n]);
                for ((fc, bc), k) in fs.chunks_exact(3).zip(bs.chunks_exact(3)).zip(beg..=end) {
                    let z1 = mm * fc[0] * bc[0];
                    let z2 = mm * fc[1] * bc[1];
                    let which = z2 > z1;
                    let zm = if which { z2 } else { z1 };
                    if zm > max {
                        max = zm;
                        max_k = ((k - 1) as i32) << 2 | i32::from(which);
                    }
                    sum += z1 + z2;
                }
            }
            max /= sum;
            self.state.push(max_k);
            let k = c_int(-4.343 * (1. - max).ln() + 0.499);
            // As htslib: above 100 is 99 (sic), and a certain alignment
            // (an infinite phred value, INT_MIN) stores 0.
            self.posterior.push(if k > 100 { 99 } else { k as u8 });
        }
        true
    }

    /// htslib's `sam_prob_realn(b, ref, ref_len, flag)` on the record
    /// `rec` (its bytes without `block_size`), against `reference` (the
    /// whole sequence of the record's reference, as fetched from the
    /// FASTA): with [`APPLY`], lowers the qualities by the BAQ and appends
    /// `ZQ` (the difference, +64); without, appends `BQ` (qualities minus
    /// BAQ, +64). [`EXTEND`] and [`REDO`] as htslib's flags. A record
    /// carrying `BQ` or `ZQ` is converted from those instead of realigned.
    pub fn realign(&mut self, rec: &mut Vec<u8>, reference: &[u8], flag: u32) -> Realigned {
        let (apply, extend, redo) = (flag & APPLY != 0, flag & EXTEND != 0, flag & REDO != 0);
        let r = RecordRef::new_prevalidated(rec);
        let l_qseq = r.seq_len();
        let qual_at = r.aux_start() - l_qseq;
        if r.flag() & flags::UNMAPPED != 0 || l_qseq == 0 || rec[qual_at] == 0xff {
            return Realigned::NotApplicable;
        }
        let mut par = HmmParams { d: 0.001, e: 0.1, bw: 10 };
        if l_qseq > 1000 {
            // htslib's parameters for long reads.
            par.d = 1e-7;
            par.e = 1e-1;
        }

        // Existing BQ / ZQ tags: a well-formed one is `Z` of the sequence's length.
        let well_formed = |rec: &[u8], field: &std::ops::Range<usize>| rec[field.start + 2] == b'Z' && field.len() - 4 == l_qseq;
        let mut bq = find_tag(rec, *b"BQ");
        let fix_bq = matches!(&bq, Some(f) if !redo && !well_formed(rec, f));
        if matches!(find_tag(rec, *b"ZQ"), Some(f) if !well_formed(rec, &f)) {
            return Realigned::BadZqTag;
        }
        if let (Some(field), true) = (&bq, redo) {
            rec.drain(field.clone());
            bq = None;
        }
        let mut zq = find_tag(rec, *b"ZQ");
        if let (Some(_), Some(field)) = (&bq, &zq) {
            rec.drain(field.clone());
            zq = None;
            bq = find_tag(rec, *b"BQ");
        }
        if let (None, true, Some(field)) = (&zq, fix_bq, &bq) {
            rec.drain(field.clone());
            bq = None;
        }
        if bq.is_some() || zq.is_some() {
            if (apply && zq.is_some()) || (!apply && bq.is_some()) {
                return Realigned::AlreadyDone;
            }
            let field = bq.clone().or(zq).expect("one of them");
            let value = field.start + 3;
            for i in 0..l_qseq {
                let (q, t) = (i32::from(rec[qual_at + i]), i32::from(rec[value + i]));
                rec[qual_at + i] = if bq.is_some() {
                    // BQ to ZQ: lower the qualities.
                    if q + 64 < t {
                        0
                    } else {
                        (q - (t - 64)) as u8
                    }
                } else {
                    (q + (t - 64)) as u8
                };
            }
            rec[field.start] = if bq.is_some() { b'Z' } else { b'B' };
            return Realigned::Done;
        }

        // The aligned part of the reference, widened by half the band.
        let r = RecordRef::new_prevalidated(rec);
        let cigar = r.cigar();
        let (mut x, mut y) = (i64::from(r.pos()), 0i64);
        let (mut yb, mut ye, mut xb, mut xe) = (-1i64, -1i64, -1i64, -1i64);
        for (op, l) in cigar.iter() {
            let l = i64::from(l);
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    if yb < 0 {
                        yb = y;
                    }
                    if xb < 0 {
                        xb = x;
                    }
                    ye = y + l;
                    xe = x + l;
                    x += l;
                    y += l;
                }
                CigarOp::SoftClip | CigarOp::Insertion => y += l,
                CigarOp::Deletion => x += l,
                CigarOp::Skip => return Realigned::NotApplicable,
                _ => {}
            }
        }
        if xb == -1 {
            return Realigned::NotApplicable;
        }
        let lq = l_qseq as i64;
        let mut bw = 7i64;
        if ((xe - xb) - (ye - yb)).abs() > bw {
            bw = ((xe - xb) - (ye - yb)).abs() + 3;
        }
        par.bw = bw as i32;
        xb -= yb + bw / 2;
        if xb < 0 {
            xb = 0;
        }
        xe += lq - ye + bw / 2;
        if xe - xb - lq > bw {
            xb += (xe - xb - lq - bw) / 2;
            xe -= (xe - xb - lq - bw) / 2;
        }

        self.query.clear();
        self.query.extend((0..l_qseq).map(|i| NT16_INT[usize::from(r.base_code(i))]));
        self.reference.clear();
        for i in xb..xe {
            let Some(c) = ref_at(reference, i) else { break };
            self.reference.push(NT16_INT[usize::from(nt16_htslib_1_24(c))]);
        }
        let qual_range = qual_at..qual_at + l_qseq;
        if !self.glocal(&rec[qual_range.clone()], par) {
            // The read lies past the reference's end: htslib reads
            // uninitialised memory here; nothing is changed instead.
            return Realigned::NotApplicable;
        }
        let (state, q) = (&self.state, &self.posterior);
        let bq = &mut self.baq;
        bq.clear();
        bq.extend_from_slice(&rec[qual_range.clone()]);
        let qual = &rec[qual_range.clone()];
        // Whether base `i` stays where the CIGAR aligns it (at reference
        // offset `at` from xb) in the realignment.
        let kept = |i: usize, at: i64| state[i] & 3 == 0 && i64::from(state[i] >> 2) == at;
        let r = RecordRef::new_prevalidated(rec);
        let (mut x, mut y) = (i64::from(r.pos()), 0i64);
        if !extend {
            // The BAQ, capped by the base quality.
            for (op, l) in r.cigar().iter() {
                let mut l = i64::from(l);
                if l == 0 {
                    continue;
                }
                match op {
                    CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                        l = l.min(lq - y);
                        for i in y..y + l {
                            let i = i as usize;
                            bq[i] = if kept(i, x - xb + (i as i64 - y)) { bq[i].min(q[i]) } else { 0 };
                        }
                        x += l;
                        y += l;
                    }
                    CigarOp::SoftClip | CigarOp::Insertion => y += l.min(lq - y),
                    CigarOp::Deletion => x += l,
                    _ => {}
                }
            }
            for i in 0..l_qseq {
                bq[i] = qual[i].wrapping_sub(bq[i]).wrapping_add(64);
            }
        } else {
            // The BAQ may exceed the base quality here: each base gets the
            // smaller of the best posteriors on its left and its right
            // within its run of M/=/X operations.
            let (left, right) = (&mut self.left, &mut self.right);
            left.clear();
            left.resize(l_qseq, 0);
            right.clear();
            right.resize(l_qseq, 0);
            let cigar = r.cigar();
            let n = cigar.len();
            let mut run = 0i64;
            for k in 0..n {
                let (op, l) = cigar.get(k).expect("k < n");
                let mut l = i64::from(l);
                let aligned = matches!(op, CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch);
                if aligned {
                    // 50M50M as 100M.
                    if let Some((CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch, _)) = cigar.get(k + 1) {
                        run += l;
                        continue;
                    }
                    l += run;
                    run = 0;
                }
                if l == 0 {
                    continue;
                }
                match op {
                    CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                        l = l.min(lq - y);
                        if l > 0 {
                            let (ys, ye) = (y as usize, (y + l) as usize);
                            for i in ys..ye {
                                bq[i] = if kept(i, x - xb + (i as i64 - y)) { q[i] } else { 0 };
                            }
                            left[ys] = bq[ys];
                            for i in ys + 1..ye {
                                left[i] = bq[i].max(left[i - 1]);
                            }
                            right[ye - 1] = bq[ye - 1];
                            for i in (ys..ye - 1).rev() {
                                right[i] = bq[i].max(right[i + 1]);
                            }
                            for i in ys..ye {
                                bq[i] = left[i].min(right[i]);
                            }
                        }
                        x += l;
                        y += l;
                    }
                    CigarOp::SoftClip | CigarOp::Insertion => y += l.min(lq - y),
                    CigarOp::Deletion => x += l,
                    _ => {}
                }
            }
            for i in 0..l_qseq {
                bq[i] = 64u8.wrapping_add(qual[i].saturating_sub(bq[i]));
            }
        }
        if apply {
            for i in 0..l_qseq {
                rec[qual_at + i] = rec[qual_at + i].wrapping_sub(bq[i].wrapping_sub(64));
            }
        }
        rec.extend_from_slice(if apply { b"ZQZ" } else { b"BQZ" });
        rec.extend_from_slice(bq);
        rec.push(0);
        Realigned::Done
    }
}

/// htslib's `sam_cap_mapq(b, ref, ref_len, thres)`: the mapping quality
/// that the read's mismatches against `reference` (of quality 13 and up)
/// and its clipping allow, scaled to `threshold` (40 when negative);
/// -1 when they are too many for any (samtools then drops the read).
pub fn cap_mapq(rec: &[u8], reference: &[u8], threshold: i32) -> i32 {
    let thres = if threshold < 0 { 40 } else { threshold };
    let r = RecordRef::new_prevalidated(rec);
    let qual = r.qual();
    let (mut mm, mut q, mut len, mut clip_q) = (0i32, 0i32, 0i64, 0i64);
    let (mut x, mut y) = (i64::from(r.pos()), 0usize);
    for (op, l) in r.cigar().iter() {
        let lu = l as usize;
        match op {
            CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                let mut j = 0;
                while j < lu {
                    let z = y + j;
                    let Some(c) = ref_at(reference, x + j as i64) else { break };
                    let (c1, c2) = (r.base_code(z), nt16_htslib_1_24(c));
                    let qz = qual.get(z).copied().unwrap_or(0);
                    if c2 != 15 && c1 != 15 && qz >= 13 {
                        len += 1;
                        if c1 != 0 && c1 != c2 {
                            mm += 1;
                            q += i32::from(qz.min(33));
                        }
                    }
                    j += 1;
                }
                if j < lu {
                    break;
                }
                x += i64::from(l);
                y += lu;
                // htslib counts the operation's length again here.
                len += i64::from(l);
            }
            CigarOp::Deletion => {
                if (0..i64::from(l)).any(|j| ref_at(reference, x + j).is_none()) {
                    break;
                }
                x += i64::from(l);
            }
            CigarOp::SoftClip => {
                clip_q += qual.get(y..y + lu).map_or(0, |s| s.iter().map(|&v| i64::from(v)).sum());
                y += lu;
            }
            CigarOp::HardClip => clip_q += 13 * i64::from(l),
            CigarOp::Insertion => y += lu,
            CigarOp::Skip => x += i64::from(l),
            _ => {}
        }
    }
    let mut t = 1f64;
    for i in 0..mm {
        t *= len as f64 / f64::from(i + 1);
    }
    t = f64::from(q) - 4.343 * t.ln() + clip_q as f64 / 5.;
    if t > f64::from(thres) {
        return -1;
    }
    if t < 0. {
        t = 0.;
    }
    t = ((f64::from(thres) - t) / f64::from(thres)).sqrt() * f64::from(thres);
    c_int(t + 0.499)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::{Header, Reference};

    /// 80 bases without repeats of note.
    const REF: &[u8] = b"ACGTTGCAAGCTTACGGATCCGTAGCATGCCTAGGTCAACTGGATTCGAGCTAACGTTCAGGCTATCGGAATTCCGATCG";

    /// The record of a SAM line (bytes without `block_size`).
    fn record(line: &str) -> Vec<u8> {
        let header = Header { text: b"@SQ\tSN:c\tLN:80\n".to_vec(), references: vec![Reference { name: "c".into(), len: 80 }] };
        let mut out = Vec::new();
        crate::sam::encode_record(line.as_bytes(), &crate::sam::RefNames::new(&header), &mut out).unwrap();
        out.split_off(4)
    }

    fn quals(rec: &[u8]) -> Vec<u8> {
        RecordRef::new_prevalidated(rec).qual().to_vec()
    }

    fn tag(rec: &[u8], name: [u8; 2]) -> Option<Vec<u8>> {
        match RecordRef::new_prevalidated(rec).aux().find(name) {
            Some(crate::bam::AuxValue::String(s)) => Some(s.to_vec()),
            _ => None,
        }
    }

    #[test]
    fn an_exact_match_keeps_its_qualities() {
        // 30 bases equal to REF[20..50] at quality 30: every base certain
        // where the CIGAR puts it, so the BAQ (capped at 99) exceeds the
        // quality and nothing is lowered; ZQ is all offsets of 0 ('@').
        let seq = std::str::from_utf8(&REF[20..50]).unwrap();
        let mut rec = record(&format!("r\t0\tc\t21\t60\t30M\t*\t0\t0\t{seq}\t{}", "?".repeat(30)));
        let mut realigner = Realigner::new();
        assert_eq!(realigner.realign(&mut rec, REF, APPLY | EXTEND), Realigned::Done);
        assert_eq!(quals(&rec), vec![30; 30]);
        assert_eq!(tag(&rec, *b"ZQ"), Some(vec![b'@'; 30]));
        // Without APPLY: the same BAQ recorded as BQ, qualities untouched.
        let mut rec = record(&format!("r\t0\tc\t21\t60\t30M\t*\t0\t0\t{seq}\t{}", "?".repeat(30)));
        assert_eq!(realigner.realign(&mut rec, REF, EXTEND), Realigned::Done);
        assert_eq!(tag(&rec, *b"BQ"), Some(vec![b'@'; 30]));
        assert_eq!(tag(&rec, *b"ZQ"), None);
    }

    #[test]
    fn mismatches_at_the_end_lose_quality() {
        // The last 3 bases mismatch: aligning them is doubtful, their
        // qualities drop; the first ones stay.
        let mut seq = REF[20..50].to_vec();
        for b in &mut seq[27..] {
            *b = if *b == b'A' { b'C' } else { b'A' };
        }
        let seq = String::from_utf8(seq).unwrap();
        let mut rec = record(&format!("r\t0\tc\t21\t60\t30M\t*\t0\t0\t{seq}\t{}", "?".repeat(30)));
        assert_eq!(Realigner::new().realign(&mut rec, REF, APPLY | EXTEND), Realigned::Done);
        let q = quals(&rec);
        assert_eq!(&q[..10], &[30; 10]);
        assert!(q[27..].iter().all(|&v| v < 30), "{q:?}");
        let zq = tag(&rec, *b"ZQ").unwrap();
        assert!(zq.iter().zip(&q).all(|(&z, &v)| v + (z - 64) == 30));
    }

    #[test]
    fn existing_tags_are_converted_or_kept() {
        let line = "r\t0\tc\t21\t60\t4M\t*\t0\t0\tCTAG\t?????";
        let line = &line[..line.len() - 1];
        // BQ offsets 0, 1, 10, 40 become ZQ and lower the qualities
        // (30 - 40 is 0).
        let mut rec = record(&format!("{line}\tBQ:Z:@AJh"));
        assert_eq!(Realigner::new().realign(&mut rec, REF, APPLY | EXTEND), Realigned::Done);
        assert_eq!(quals(&rec), vec![30, 29, 20, 0]);
        assert_eq!((tag(&rec, *b"ZQ"), tag(&rec, *b"BQ")), (Some(b"@AJh".to_vec()), None));
        // A ZQ already applied: nothing to do.
        let mut rec = record(&format!("{line}\tZQ:Z:@AJh"));
        let before = rec.clone();
        assert_eq!(Realigner::new().realign(&mut rec, REF, APPLY | EXTEND), Realigned::AlreadyDone);
        assert_eq!(rec, before);
        // A ZQ of the wrong length: refused, the record untouched.
        let mut rec = record(&format!("{line}\tZQ:Z:@A"));
        let before = rec.clone();
        assert_eq!(Realigner::new().realign(&mut rec, REF, APPLY | EXTEND), Realigned::BadZqTag);
        assert_eq!(rec, before);
        // A BQ of the wrong length is dropped and the read realigned.
        let mut rec = record(&format!("{line}\tBQ:Z:@A\tXX:i:1"));
        assert_eq!(Realigner::new().realign(&mut rec, REF, APPLY | EXTEND), Realigned::Done);
        assert_eq!(tag(&rec, *b"BQ"), None);
        let aux: Vec<[u8; 2]> = RecordRef::new_prevalidated(&rec).aux().tags().collect();
        assert_eq!(aux, vec![*b"XX", *b"ZQ"]);
    }

    #[test]
    fn what_is_not_realigned() {
        let mut r = Realigner::new();
        for line in [
            "r\t0\tc\t21\t60\t2M5N2M\t*\t0\t0\tCTAG\t????",
            "r\t4\tc\t21\t0\t*\t*\t0\t0\tCTAG\t????",
            "r\t0\tc\t21\t60\t4M\t*\t0\t0\tCTAG\t*",
            "r\t0\tc\t21\t60\t4S\t*\t0\t0\tCTAG\t????",
        ] {
            let mut rec = record(line);
            let before = rec.clone();
            assert_eq!(r.realign(&mut rec, REF, APPLY | EXTEND), Realigned::NotApplicable, "{line}");
            assert_eq!(rec, before);
        }
    }

    #[test]
    fn cap_mapq_by_hand() {
        let seq = std::str::from_utf8(&REF[20..30]).unwrap();
        // No mismatch: t = 0, the threshold itself.
        let rec = record(&format!("r\t0\tc\t21\t60\t10M\t*\t0\t0\t{seq}\t{}", "?".repeat(10)));
        assert_eq!(cap_mapq(&rec, REF, 50), 50);
        assert_eq!(cap_mapq(&rec, REF, -1), 40);
        // One mismatch of quality 30 among 10 bases: len = 10 + 10 (htslib
        // counts the operation again), t = 30 - 4.343 ln 20 = 16.989;
        // sqrt((50 - 16.989) / 50) * 50 = 40.63, rounded 41.
        let mut mutated = seq.as_bytes().to_vec();
        mutated[4] = if mutated[4] == b'A' { b'C' } else { b'A' };
        let mutated = String::from_utf8(mutated).unwrap();
        let rec = record(&format!("r\t0\tc\t21\t60\t10M\t*\t0\t0\t{mutated}\t{}", "?".repeat(10)));
        assert_eq!(cap_mapq(&rec, REF, 50), 41);
        // 2 soft-clipped bases of quality 30: clip_q / 5 = 12 added; above
        // a threshold of 20, the read is refused.
        let rec = record(&format!("r\t0\tc\t21\t60\t2S8M\t*\t0\t0\t{mutated}\t{}", "?".repeat(10)));
        assert_eq!(cap_mapq(&rec, REF, 20), -1);
    }

    #[test]
    fn x86_int_conversion() {
        assert_eq!(c_int(f64::INFINITY), i32::MIN);
        assert_eq!(c_int(f64::NAN), i32::MIN);
        assert_eq!(c_int(99.9), 99);
        assert_eq!(c_int(-0.5), 0);
    }

    #[test]
    fn reference_codes_are_htslib_1_24s() {
        assert_eq!(nt16_htslib_1_24(b'a'), 1);
        assert_eq!(nt16_htslib_1_24(b'U'), 8);
        assert_eq!(nt16_htslib_1_24(b'2'), 4);
        assert_eq!(nt16_htslib_1_24(b'='), 0);
        assert_eq!(nt16_htslib_1_24(b'*'), 15);
    }
}
