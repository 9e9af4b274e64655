//! Sort orders and their comparisons, as samtools sort 1.16 defines them.

use crate::bam::{flags, AuxValue, CigarOp, RecordRef};
use std::cmp::Ordering;

/// Which order to sort in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// By reference, position, strand (`samtools sort`).
    Coordinate,
    /// By read name in samtools' natural order, then READ1/READ2 flags
    /// (`samtools sort -n`).
    QueryName,
    /// By the value of an aux tag (records without it first), then by
    /// coordinate, or by name when `then_by_name` (`samtools sort -t TAG [-n]`).
    Tag {
        /// The tag.
        tag: [u8; 2],
        /// Name order rather than coordinate order among equal tag values.
        then_by_name: bool,
    },
    /// By the 5' unclipped coordinates of both ends of the template, then
    /// library, molecular identifier (`MI`) and name
    /// (`samtools sort --template-coordinate`); needs `MC` tags on pairs.
    TemplateCoordinate,
    /// Coordinate order, with unplaced reads clustered by the minimiser of
    /// their sequence (`samtools sort -M -K kmer`); such reads are reverse
    /// complemented when their minimiser lies on the reverse strand.
    Minimiser {
        /// The k-mer size, 1 to 31.
        kmer: u8,
    },
}

impl SortOrder {
    /// The `@HD` tags samtools writes for this order: `SO`, then `GO` and
    /// `SS` when it sets them (it removes them otherwise).
    pub fn header_tags(self) -> (&'static str, Option<&'static str>, Option<&'static str>) {
        match self {
            SortOrder::Coordinate => ("coordinate", None, None),
            SortOrder::QueryName => ("queryname", None, None),
            SortOrder::Tag { .. } => ("unknown", None, None),
            SortOrder::TemplateCoordinate => ("unsorted", Some("query"), Some("unsorted:template-coordinate")),
            SortOrder::Minimiser { .. } => ("coordinate", None, Some("coordinate:minhash")),
        }
    }

    /// Whether the output is position sorted (so `--write-index` applies).
    pub fn is_positional(self) -> bool {
        matches!(self, SortOrder::Coordinate | SortOrder::Minimiser { .. })
    }
}

/// A sort order made ready for one input: what comparing two records
/// needs besides the records (the read-group → library map of the header
/// for template-coordinate order).
#[derive(Clone, Debug)]
pub struct Comparator {
    order: SortOrder,
    /// `@RG ID` → `LB`, sorted by ID, first definition of an ID kept.
    libraries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Records carry 64-bit positions at their end
    /// ([`crate::sam::Positions::Wide`]): the coordinate is read there.
    wide: bool,
}

impl Comparator {
    /// Prepares `order` for records under a header with `header_text`.
    pub fn new(order: SortOrder, header_text: &[u8]) -> Comparator {
        let libraries = if order == SortOrder::TemplateCoordinate { read_group_libraries(header_text) } else { Vec::new() };
        Comparator { order, libraries, wide: false }
    }

    /// This comparator for records with 64-bit positions at their end
    /// ([`crate::sam::Positions::Wide`]; coordinate, name and tag orders).
    pub fn with_wide_positions(mut self) -> Comparator {
        self.wide = true;
        self
    }

    /// samtools' coordinate key of `r`, its position read where it is.
    #[inline]
    fn coordinate(&self, r: &RecordRef<'_>) -> u128 {
        if self.wide {
            let (pos, _, _) = crate::sam::wide_positions(r.as_bytes());
            let tid = u128::from(r.ref_id() as u32);
            (tid << 64) | (u128::from((pos + 1) as u64) << 1) | u128::from(r.flag() & flags::REVERSE != 0)
        } else {
            record_coordinate_key(r)
        }
    }

    /// The order.
    pub fn order(&self) -> SortOrder {
        self.order
    }

    /// Refuses a record this order cannot place, with samtools' message
    /// (template-coordinate order needs `MC` on pairs with a mapped mate).
    pub fn check(&self, r: &RecordRef<'_>) -> Result<(), String> {
        match self.order {
            SortOrder::TemplateCoordinate => TemplateKey::of(r, &self.libraries).map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The key extracted once per record: the whole comparison for
    /// coordinate and minimiser orders, a prefix of it (or nothing) for the
    /// others (see [`Comparator::compare`]).
    #[inline]
    pub fn key(&self, r: &RecordRef<'_>) -> u128 {
        match self.order {
            SortOrder::Coordinate => self.coordinate(r),
            SortOrder::QueryName | SortOrder::Tag { .. } => 0,
            SortOrder::TemplateCoordinate => TemplateKey::of(r, &self.libraries).map_or(0, |k| k.prefix()),
            SortOrder::Minimiser { .. } => minimiser_order_key(r),
        }
    }

    /// Whether this order's comparison is not a total order on `r`: a tag
    /// order where `r`'s tag is a NaN float, which samtools 1.16 finds
    /// neither less nor equal to any number, from either side.
    #[inline]
    pub fn is_incomparable(&self, r: &RecordRef<'_>) -> bool {
        match self.order {
            SortOrder::Tag { tag, .. } => match r.aux().find(tag) {
                Some(AuxValue::Float(f)) => f.is_nan(),
                Some(AuxValue::Double(d)) => d.is_nan(),
                _ => false,
            },
            _ => false,
        }
    }

    /// Compares two records with equal keys.
    #[inline]
    pub fn compare(&self, a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
        match self.order {
            SortOrder::Coordinate | SortOrder::Minimiser { .. } => Ordering::Equal,
            SortOrder::QueryName => by_name(a, b),
            SortOrder::Tag { tag, then_by_name } => {
                let core = || if then_by_name { by_name(a, b) } else { self.coordinate(a).cmp(&self.coordinate(b)) };
                compare_tags(a.aux().find(tag), b.aux().find(tag)).unwrap_or_else(core)
            }
            SortOrder::TemplateCoordinate => match (TemplateKey::of(a, &self.libraries), TemplateKey::of(b, &self.libraries)) {
                (Ok(ka), Ok(kb)) => ka.compare(&kb),
                // Records are checked when they enter the sort.
                _ => Ordering::Equal,
            },
        }
    }
}

/// Sorts `v` with klib's bottom-up merge sort (`ks_mergesort`, which
/// samtools 1.16 sort runs on each in-memory block), making the same
/// comparisons in the same order. With a total order any stable sort gives
/// the same result; this one is for the orders that are not (NaN tag
/// values), where the result is that of the algorithm.
pub fn ks_mergesort<T: Copy>(v: &mut Vec<T>, lt: impl Fn(&T, &T) -> bool) {
    let n = v.len();
    let mut other = v.clone();
    let (mut from, mut to) = (v, &mut other);
    let mut swapped = false;
    let mut shift = 0u32;
    while (1usize << shift) < n {
        if shift == 0 {
            for i in (0..n).step_by(2) {
                if i == n - 1 {
                    to[i] = from[i];
                } else if lt(&from[i + 1], &from[i]) {
                    (to[i], to[i + 1]) = (from[i + 1], from[i]);
                } else {
                    (to[i], to[i + 1]) = (from[i], from[i + 1]);
                }
            }
        } else {
            let step = 1usize << shift;
            for i in (0..n).step_by(step << 1) {
                let (ea, eb) = if n < i + step { (n, i) } else { (i + step, n.min(i + (step << 1))) };
                let (mut j, mut k, mut p) = (i, i + step, i);
                while j < ea && k < eb {
                    if lt(&from[k], &from[j]) {
                        to[p] = from[k];
                        k += 1;
                    } else {
                        to[p] = from[j];
                        j += 1;
                    }
                    p += 1;
                }
                to[p..p + (ea - j)].copy_from_slice(&from[j..ea]);
                p += ea - j;
                if k < eb {
                    to[p..p + (eb - k)].copy_from_slice(&from[k..eb]);
                }
            }
        }
        std::mem::swap(&mut from, &mut to);
        swapped = !swapped;
        shift += 1;
    }
    if swapped {
        // The result is in the scratch copy.
        to.copy_from_slice(&from[..]);
    }
}

/// `@RG` IDs and their `LB` values, as samtools' `lookup_libraries`.
fn read_group_libraries(text: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut map: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for line in text.split(|&c| c == b'\n').filter(|l| l.starts_with(b"@RG\t")) {
        let field = |tag: &[u8]| line.split(|&c| c == b'\t').skip(1).find(|f| f.starts_with(tag)).map(|f| f[tag.len()..].to_vec());
        if let (Some(id), Some(lb)) = (field(b"ID:"), field(b"LB:")) {
            if let Err(at) = map.binary_search_by(|(k, _)| k.as_slice().cmp(&id)) {
                map.insert(at, (id, lb));
            }
        }
    }
    map
}

/// samtools' template-coordinate key (`template_coordinate_key` in
/// bam_sort.c 1.16): the unclipped 5' ends of the read and its mate, lower
/// end first.
#[derive(Debug)]
struct TemplateKey<'a> {
    tid1: i32,
    tid2: i32,
    pos1: i64,
    pos2: i64,
    neg1: bool,
    neg2: bool,
    library: &'a [u8],
    mid: &'a [u8],
    name: &'a [u8],
    is_upper_of_pair: bool,
}

impl<'a> TemplateKey<'a> {
    fn of(r: &RecordRef<'a>, libraries: &'a [(Vec<u8>, Vec<u8>)]) -> Result<TemplateKey<'a>, String> {
        let aux = r.aux();
        let string = |v: Option<AuxValue<'a>>| match v {
            Some(AuxValue::String(s) | AuxValue::Hex(s)) => Ok(Some(s)),
            None => Ok(None),
            Some(_) => Err(()),
        };
        let library = match aux.find(*b"RG") {
            Some(AuxValue::String(rg)) => {
                libraries.binary_search_by(|(id, _)| id.as_slice().cmp(rg)).map_or(&b""[..], |i| libraries[i].1.as_slice())
            }
            _ => b"",
        };
        let flag = r.flag();
        let mut key = TemplateKey {
            tid1: i32::MAX,
            tid2: i32::MAX,
            pos1: i64::MAX,
            pos2: i64::MAX,
            neg1: false,
            neg2: false,
            library,
            mid: b"",
            name: r.name(),
            is_upper_of_pair: false,
        };
        if flag & flags::UNMAPPED == 0 {
            key.tid1 = r.ref_id();
            key.neg1 = flag & flags::REVERSE != 0;
            key.pos1 = if key.neg1 { unclipped_end(r) } else { unclipped_start(r) };
        }
        if flag & flags::PAIRED != 0 && flag & flags::MATE_UNMAPPED == 0 {
            let mc = match string(aux.find(*b"MC")) {
                Ok(Some(mc)) => mc,
                Ok(None) => return Err("no MC tag. Please run samtools fixmate on file first.".into()),
                Err(()) => return Err("MC tag wrong type. Please use the MC tag provided by samtools fixmate.".into()),
            };
            key.tid2 = r.mate_ref_id();
            key.neg2 = flag & flags::MATE_REVERSE != 0;
            let mpos = i64::from(r.mate_pos());
            key.pos2 = if key.neg2 { mate_unclipped_end(mpos, mc) } else { mate_unclipped_start(mpos, mc) };
        }
        match string(aux.find(*b"MI")) {
            Ok(Some(mid)) => key.mid = mid,
            Ok(None) => {}
            Err(()) => return Err("MI tag wrong type (not a string).".into()),
        }
        let lower_first = (key.tid1, key.pos1) < (key.tid2, key.pos2) || ((key.tid1, key.pos1) == (key.tid2, key.pos2) && !key.neg1);
        if !lower_first {
            key.is_upper_of_pair = true;
            std::mem::swap(&mut key.tid1, &mut key.tid2);
            std::mem::swap(&mut key.pos1, &mut key.pos2);
            std::mem::swap(&mut key.neg1, &mut key.neg2);
        }
        Ok(key)
    }

    /// The leading fields (tid1, tid2, pos1) packed so that `u128` order is
    /// their order.
    fn prefix(&self) -> u128 {
        let tid = |t: i32| u128::from((i64::from(t) + 1) as u32);
        (tid(self.tid1) << 96) | (tid(self.tid2) << 64) | u128::from(self.pos1 as u64 ^ (1 << 63))
    }

    /// samtools' `bam1_cmp_template_coordinate`: reverse strands first.
    fn compare(&self, other: &TemplateKey<'_>) -> Ordering {
        self.tid1
            .cmp(&other.tid1)
            .then(self.tid2.cmp(&other.tid2))
            .then(self.pos1.cmp(&other.pos1))
            .then(self.pos2.cmp(&other.pos2))
            .then(other.neg1.cmp(&self.neg1))
            .then(other.neg2.cmp(&self.neg2))
            .then_with(|| self.library.cmp(other.library))
            .then_with(|| compare_molecular_ids(self.mid, other.mid))
            .then_with(|| self.name.cmp(other.name))
            .then(self.is_upper_of_pair.cmp(&other.is_upper_of_pair))
    }
}

/// Molecular identifiers compared without a trailing `/` and the one
/// character after it (`/A`, `/B` mark the strands of one molecule).
fn compare_molecular_ids(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |m: &[u8]| if m.len() >= 2 && m[m.len() - 2] == b'/' { m.len() - 2 } else { m.len() };
    a[..strip(a)].cmp(&b[..strip(b)])
}

fn is_clip(op: CigarOp) -> bool {
    matches!(op, CigarOp::SoftClip | CigarOp::HardClip)
}

/// 1-based position of the first base, soft and hard clips included.
fn unclipped_start(r: &RecordRef<'_>) -> i64 {
    let clipped: i64 = r.cigar().iter().take_while(|&(op, _)| is_clip(op)).map(|(_, n)| i64::from(n)).sum();
    i64::from(r.pos()) - clipped + 1
}

/// End (as `bam_endpos`) plus the trailing clips.
fn unclipped_end(r: &RecordRef<'_>) -> i64 {
    let cigar = r.cigar();
    let clipped: i64 = (0..cigar.len()).rev().map_while(|i| cigar.get(i).filter(|&(op, _)| is_clip(op))).map(|(_, n)| i64::from(n)).sum();
    r.end_pos() + clipped
}

/// The operations of a CIGAR string (an `MC` tag) as samtools' helpers
/// read them: a missing length counts 1, and parsing stops at `*` or NUL.
fn cigar_text_ops(text: &[u8]) -> impl Iterator<Item = (u8, i64)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let c = *text.get(at).filter(|&&c| c != b'*')?;
        let mut len = 1i64;
        if c.is_ascii_digit() {
            let digits = text[at..].iter().take_while(|c| c.is_ascii_digit()).count();
            len = text[at..at + digits].iter().fold(0i64, |n, &d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
            at += digits;
        }
        let op = text.get(at).copied().unwrap_or(0);
        at += 1;
        (op != 0).then_some((op, len))
    })
}

/// The mate's unclipped start from its position and CIGAR (samtools'
/// `unclipped_other_start`).
fn mate_unclipped_start(mpos: i64, cigar: &[u8]) -> i64 {
    let clipped: i64 = cigar_text_ops(cigar).take_while(|&(op, _)| op == b'S' || op == b'H').map(|(_, n)| n).sum();
    mpos - clipped + 1
}

/// The mate's unclipped end (samtools' `unclipped_other_end`: clips count
/// once an aligned operation has been seen).
fn mate_unclipped_end(mpos: i64, cigar: &[u8]) -> i64 {
    let mut refpos = 0i64;
    let mut leading = true;
    for (op, n) in cigar_text_ops(cigar) {
        match op {
            b'M' | b'D' | b'N' | b'=' | b'X' => {
                refpos += n;
                leading = false;
            }
            b'S' | b'H' if !leading => refpos += n,
            _ => {}
        }
    }
    mpos + refpos
}

/// The minimiser of a read's sequence over both strands, as samtools'
/// `minhash` (bam_sort.c 1.16): `(hash, position, on the reverse strand)`.
/// Homopolymers are moved to the middle of the hash space by an XOR; bases
/// other than ACGT count as A (forward) or T (reverse).
pub fn minimiser(r: &RecordRef<'_>, kmer: u8) -> (u64, usize, bool) {
    let kmer = usize::from(kmer.clamp(1, 31));
    let mask = (1u64 << (2 * kmer)) - 1;
    let xor = 0xdead_7878_beef_7878 & mask;
    const FORWARD: [u64; 16] = [0, 0, 1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
    const REVERSE: [u64; 16] = [0, 3, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let shift = 2 * (kmer - 1);
    let len = r.seq_len();
    let (mut hf, mut hr) = (0u64, 0u64);
    let (mut min_f, mut min_r) = (u64::MAX, u64::MAX);
    let (mut pos_f, mut pos_r) = (0usize, 0usize);
    for i in 0..len {
        let base = usize::from(r.base_code(i));
        hf = (hf << 2) | FORWARD[base];
        hr = (hr >> 2) | (REVERSE[base] << shift);
        if i + 1 < kmer {
            continue;
        }
        hf &= mask;
        if min_f > hf ^ xor {
            min_f = hf ^ xor;
            pos_f = i;
        }
        if min_r > hr ^ xor {
            min_r = hr ^ xor;
            pos_r = len - i + kmer - 2;
        }
    }
    if min_f <= min_r {
        (min_f, pos_f, false)
    } else {
        (min_r, pos_r, true)
    }
}

/// Byte offsets in a record (without its length prefix) of the fields the
/// minimiser order borrows while sorting.
const POS_FIELD: usize = 4;
const FLAG_FIELD: usize = 14;
const MATE_POS_FIELD: usize = 24;
const TLEN_FIELD: usize = 28;

/// Prepares an unplaced record in place for minimiser order, as samtools
/// does: reverse complements it when its minimiser is on the reverse
/// strand, and parks the hash in `pos`/`mpos` and the tie-break
/// (`65535 - position`, at least 0) in `tlen`, where the record carries
/// them through run files. [`restore_minimiser_fields`] clears them.
pub fn prepare_for_minimiser(record: &mut [u8], kmer: u8) {
    let r = RecordRef::new_prevalidated(record);
    if r.ref_id() != -1 {
        return;
    }
    let (hash, at, reverse) = minimiser(&r, kmer);
    let tie = 65535i64.saturating_sub(at as i64).max(0) as i32;
    if reverse {
        reverse_complement(record);
    }
    record[POS_FIELD..POS_FIELD + 4].copy_from_slice(&((hash >> 32) as u32).to_le_bytes());
    record[MATE_POS_FIELD..MATE_POS_FIELD + 4].copy_from_slice(&(hash as u32).to_le_bytes());
    record[TLEN_FIELD..TLEN_FIELD + 4].copy_from_slice(&tie.to_le_bytes());
}

/// Resets what [`prepare_for_minimiser`] borrowed: `pos` and `mpos` -1,
/// `tlen` 0 (samtools writes unplaced reads so under `-M`).
pub fn restore_minimiser_fields(record: &mut [u8]) {
    if RecordRef::new_prevalidated(record).ref_id() != -1 {
        return;
    }
    record[POS_FIELD..POS_FIELD + 4].copy_from_slice(&(-1i32).to_le_bytes());
    record[MATE_POS_FIELD..MATE_POS_FIELD + 4].copy_from_slice(&(-1i32).to_le_bytes());
    record[TLEN_FIELD..TLEN_FIELD + 4].copy_from_slice(&0i32.to_le_bytes());
}

/// samtools' `bam1_cmp_by_minhash` as a key: placed records by coordinate,
/// then unplaced ones by hash, tie-break and strand.
fn minimiser_order_key(r: &RecordRef<'_>) -> u128 {
    if r.ref_id() != -1 {
        return record_coordinate_key(r);
    }
    let hash = (u64::from(r.pos() as u32) << 32) | u64::from(r.mate_pos() as u32);
    let tie = u128::from(r.template_len() as u32 & 0x1ffff);
    (1 << 127) | (u128::from(hash) << 18) | (tie << 1) | u128::from(r.flag() & flags::REVERSE != 0)
}

/// Reverse complements a record's sequence and reverses its qualities in
/// place, toggling the reverse flag, with samtools' complement table
/// (which, unlike IUPAC, maps `Y` to itself and `=` to `N`).
fn reverse_complement(record: &mut [u8]) {
    const COMPLEMENT: [u8; 16] = [15, 8, 4, 12, 2, 10, 6, 14, 1, 9, 10, 13, 3, 11, 7, 15];
    let r = RecordRef::new_prevalidated(record);
    let len = r.seq_len();
    let seq_at = r.seq_raw().as_ptr() as usize - record.as_ptr() as usize;
    let qual_at = r.qual().as_ptr() as usize - record.as_ptr() as usize;
    let flag = r.flag() ^ flags::REVERSE;
    let code = |seq: &[u8], i: usize| if i % 2 == 0 { seq[i / 2] >> 4 } else { seq[i / 2] & 15 };
    let set = |seq: &mut [u8], i: usize, c: u8| {
        let b = &mut seq[i / 2];
        *b = if i % 2 == 0 { (*b & 0x0f) | (c << 4) } else { (*b & 0xf0) | c };
    };
    let seq = &mut record[seq_at..seq_at + len.div_ceil(2)];
    let (mut i, mut j) = (0usize, len.wrapping_sub(1));
    while len > 0 && i < j {
        let (a, b) = (code(seq, i), code(seq, j));
        set(seq, i, COMPLEMENT[usize::from(b)]);
        set(seq, j, COMPLEMENT[usize::from(a)]);
        i += 1;
        j -= 1;
    }
    if len > 0 && i == j {
        let c = code(seq, i);
        set(seq, i, COMPLEMENT[usize::from(c)]);
    }
    record[qual_at..qual_at + len].reverse();
    record[FLAG_FIELD..FLAG_FIELD + 2].copy_from_slice(&flag.to_le_bytes());
}

/// samtools' name order: [`strnum_cmp`] of the names, then the READ1/READ2 bits.
fn by_name(a: &RecordRef<'_>, b: &RecordRef<'_>) -> Ordering {
    let pair = flags::READ1 | flags::READ2;
    strnum_cmp(a.name(), b.name()).then_with(|| (a.flag() & pair).cmp(&(b.flag() & pair)))
}

/// samtools' `bam1_cmp_by_tag` up to its tie-break: records without the tag
/// first; values compared within their normalised type (integers, floats —
/// an integer against a float compares as floats —, characters, strings and
/// hex); different types by their normalised type letter. `None` means equal
/// here (or arrays, which samtools does not compare): fall back to the
/// secondary order.
fn compare_tags(a: Option<AuxValue<'_>>, b: Option<AuxValue<'_>>) -> Option<Ordering> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (None, Some(_)) => return Some(Ordering::Less),
        (Some(_), None) => return Some(Ordering::Greater),
        (Some(a), Some(b)) => (a, b),
    };
    // The type letters samtools normalises to, in its comparison order.
    let class = |v: &AuxValue<'_>| match v {
        AuxValue::Char(_) => b'A',
        AuxValue::Array { .. } => b'B',
        AuxValue::String(_) | AuxValue::Hex(_) => b'H',
        AuxValue::Int(_) => b'c',
        AuxValue::Float(_) | AuxValue::Double(_) => b'f',
    };
    let as_f64 = |v: &AuxValue<'_>| match *v {
        AuxValue::Int(i) => i as f64,
        AuxValue::Float(f) => f64::from(f),
        AuxValue::Double(d) => d,
        _ => 0.0,
    };
    // samtools returns "less" when a < b and "greater" otherwise for
    // unequal values, so incomparable floats (NaN) sort after.
    let unequal = |less: bool| Some(if less { Ordering::Less } else { Ordering::Greater });
    let (ca, cb) = (class(&a), class(&b));
    let numeric = |c: u8| c == b'c' || c == b'f';
    if ca != cb && !(numeric(ca) && numeric(cb)) {
        return Some(ca.cmp(&cb));
    }
    match (a, b) {
        (AuxValue::Int(x), AuxValue::Int(y)) => (x != y).then(|| x.cmp(&y)),
        (AuxValue::Char(x), AuxValue::Char(y)) => (x != y).then(|| x.cmp(&y)),
        (AuxValue::String(x) | AuxValue::Hex(x), AuxValue::String(y) | AuxValue::Hex(y)) => (x != y).then(|| x.cmp(y)),
        (AuxValue::Array { .. }, AuxValue::Array { .. }) => None,
        (x, y) => {
            let (x, y) = (as_f64(&x), as_f64(&y));
            if x != y {
                unequal(x < y)
            } else {
                None
            }
        }
    }
}

/// samtools' coordinate order (`bam1_cmp_core` in bam_sort.c, 1.16):
/// reference id as an unsigned number (so unplaced records, id -1, come
/// last), then `pos + 1` as unsigned (position -1 first), then forward
/// before reverse strand. Ties keep input order, which callers get from a
/// stable sort and by merging runs in input order.
///
/// ```
/// use fasthts::sort::coordinate_key;
/// // (tid, pos+1, rev) packed so that u128 order is samtools' order.
/// assert!(coordinate_key(0, 10, false) < coordinate_key(0, 10, true));
/// assert!(coordinate_key(0, 10, true) < coordinate_key(0, 11, false));
/// assert!(coordinate_key(5, 0, false) < coordinate_key(-1, -1, false));
/// assert!(coordinate_key(0, -1, false) < coordinate_key(0, 0, false));
/// ```
#[inline]
pub fn coordinate_key(ref_id: i32, pos: i32, reverse: bool) -> u128 {
    let tid = u128::from(ref_id as u32);
    let pos1 = u128::from((i64::from(pos) + 1) as u64);
    (tid << 64) | (pos1 << 1) | u128::from(reverse)
}

/// [`coordinate_key`] of a record.
#[inline]
pub fn record_coordinate_key(r: &RecordRef<'_>) -> u128 {
    coordinate_key(r.ref_id(), r.pos(), r.flag() & flags::REVERSE != 0)
}

/// samtools' natural name order (`strnum_cmp`): runs of digits compare as
/// numbers, leading zeros aside; numerically equal runs with different
/// zero padding are ordered by how far into each name the run ended, as
/// samtools does.
///
/// ```
/// use fasthts::sort::strnum_cmp;
/// use std::cmp::Ordering::*;
/// assert_eq!(strnum_cmp(b"r2", b"r10"), Less);
/// assert_eq!(strnum_cmp(b"r10", b"r10"), Equal);
/// assert_eq!(strnum_cmp(b"a01", b"a1"), Less);
/// assert_eq!(strnum_cmp(b"a", b"a1"), Less);
/// assert_eq!(strnum_cmp(b"x:9:b", b"x:9:a"), Greater);
/// ```
pub fn strnum_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let at = |s: &[u8], i: usize| s.get(i).copied().unwrap_or(0);
    let digit = |c: u8| c.is_ascii_digit();
    let (mut pa, mut pb) = (0usize, 0usize);
    while at(a, pa) != 0 && at(b, pb) != 0 {
        if digit(at(a, pa)) && digit(at(b, pb)) {
            while at(a, pa) == b'0' {
                pa += 1;
            }
            while at(b, pb) == b'0' {
                pb += 1;
            }
            while digit(at(a, pa)) && digit(at(b, pb)) && at(a, pa) == at(b, pb) {
                pa += 1;
                pb += 1;
            }
            if digit(at(a, pa)) && digit(at(b, pb)) {
                let mut i = 0;
                while digit(at(a, pa + i)) && digit(at(b, pb + i)) {
                    i += 1;
                }
                return if digit(at(a, pa + i)) {
                    Ordering::Greater
                } else if digit(at(b, pb + i)) {
                    Ordering::Less
                } else {
                    at(a, pa).cmp(&at(b, pb))
                };
            } else if digit(at(a, pa)) {
                return Ordering::Greater;
            } else if digit(at(b, pb)) {
                return Ordering::Less;
            } else if pa != pb {
                return if pa < pb { Ordering::Greater } else { Ordering::Less };
            }
        } else {
            if at(a, pa) != at(b, pb) {
                return at(a, pa).cmp(&at(b, pb));
            }
            pa += 1;
            pb += 1;
        }
    }
    if at(a, pa) != 0 {
        Ordering::Greater
    } else if at(b, pb) != 0 {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::record::tests::encode;

    fn seq_of(record: &[u8]) -> String {
        let r = RecordRef::new_prevalidated(record);
        (0..r.seq_len()).map(|i| char::from(r.base(i))).collect()
    }

    #[test]
    fn reverse_complement_uses_samtools_table() {
        // samtools' table maps Y to Y and = to N; qualities reverse too.
        let mut rec = encode("r", 4, -1, -1, 0, &[], "ACGTY=N", &[]);
        let qual_at = rec.len() - 7;
        rec[qual_at..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7]);
        reverse_complement(&mut rec);
        assert_eq!(seq_of(&rec), "NNYACGT");
        assert_eq!(&rec[qual_at..], &[7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(RecordRef::new_prevalidated(&rec).flag(), 4 | flags::REVERSE);
    }

    #[test]
    fn minimiser_is_strand_symmetric_and_clusters_reverse_complements() {
        let fwd = encode("a", 4, -1, -1, 0, &[], "GATTACAGGCATTTGCA", &[]);
        let rev = encode("b", 4, -1, -1, 0, &[], "TGCAAATGCCTGTAATC", &[]);
        let (hf, _, sf) = minimiser(&RecordRef::new_prevalidated(&fwd), 5);
        let (hr, _, sr) = minimiser(&RecordRef::new_prevalidated(&rev), 5);
        assert_eq!(hf, hr);
        assert_ne!(sf, sr);
        // Shorter than k: no k-mer, the largest hash, forward strand.
        let short = encode("c", 4, -1, -1, 0, &[], "ACG", &[]);
        assert_eq!(minimiser(&RecordRef::new_prevalidated(&short), 5), (u64::MAX, 0, false));
    }

    #[test]
    fn minimiser_fields_round_trip_and_only_unplaced_reads_change() {
        let mut placed = encode("p", 0, 0, 10, 60, &[(0, 4)], "ACGT", &[]);
        let before = placed.clone();
        prepare_for_minimiser(&mut placed, 3);
        assert_eq!(placed, before);
        let mut unplaced = encode("u", 4, -1, -1, 0, &[], "TTTTGGGGCCCA", &[]);
        prepare_for_minimiser(&mut unplaced, 3);
        assert!(minimiser_order_key(&RecordRef::new_prevalidated(&unplaced)) > minimiser_order_key(&RecordRef::new_prevalidated(&placed)));
        restore_minimiser_fields(&mut unplaced);
        let r = RecordRef::new_prevalidated(&unplaced);
        assert_eq!((r.pos(), r.mate_pos(), r.template_len()), (-1, -1, 0));
    }

    #[test]
    fn molecular_ids_ignore_strand_suffix() {
        assert_eq!(compare_molecular_ids(b"12/A", b"12/B"), Ordering::Equal);
        assert_eq!(compare_molecular_ids(b"12/A", b"12"), Ordering::Equal);
        assert_eq!(compare_molecular_ids(b"1", b"12"), Ordering::Less);
        assert_eq!(compare_molecular_ids(b"2/A", b"12/A"), Ordering::Greater);
    }

    #[test]
    fn mate_unclipped_ends_follow_samtools_parsing() {
        assert_eq!(mate_unclipped_start(100, b"5S20M"), 96);
        assert_eq!(mate_unclipped_start(100, b"3H2S20M"), 96);
        assert_eq!(mate_unclipped_end(100, b"5S20M3S"), 123);
        assert_eq!(mate_unclipped_end(100, b"10M2I5D4N"), 119);
        assert_eq!(mate_unclipped_start(100, b"*"), 101);
    }

    #[test]
    fn read_group_libraries_keep_first_definition() {
        let text = b"@HD\tVN:1.6\n@RG\tID:a\tLB:lib1\n@RG\tID:b\n@RG\tID:a\tLB:lib2\n@RG\tID:c\tLB:\n";
        let libs = read_group_libraries(text);
        assert_eq!(libs, vec![(b"a".to_vec(), b"lib1".to_vec()), (b"c".to_vec(), b"".to_vec())]);
    }
}
