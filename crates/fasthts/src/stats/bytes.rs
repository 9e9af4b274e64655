//! A part of a stats run as bytes, to be counted on one machine and summed
//! on another (the Python package's `fasthts.dask.stats`): what
//! [`Stats::merge`] and the printing read of a part's [`Stats`], and each
//! of its regions' [`PartSummary`], messages and span of the file.
//!
//! The form is this crate's own and versioned: a magic, a version, the
//! settings the part was counted with (as text: a part counted with other
//! options is refused, not summed), then the fields, integers as LEB128
//! varints (the arrays are mostly zeros: a byte each) and floats as their
//! bits. Every length is checked against what is left and against the
//! settings, so a damaged or foreign input fails in words and never
//! panics; beyond the arrays the settings call for, nothing larger than
//! eight bytes per byte of input is allocated. What only counting
//! more records needs (the coverage window, the loaded reference, the
//! targets' progress, `-S`'s groups) is not kept: a decoded [`Stats`] is
//! summed and printed, not counted into.

use super::{Acgtno, GcDepth, InsertSizes, PartSummary, QualityHistogram, Stats, StatsError, StatsSettings, N_GC, N_QUALS};
use crate::bgzf::VirtualOffset;
use crate::region::Span;
use std::collections::HashMap;

const MAGIC: &[u8; 14] = b"fasthts-stats\0";
/// The form's version: raised whenever a field is added, removed or read differently.
const VERSION: u32 = 1;

/// What one part of a planned stats run counted (`command::stats_regions`).
pub struct StatsPart {
    /// The sum of its regions' statistics, or `None` when one of them
    /// ruled summing out (reads out of order, a long read) or failed: the
    /// file is then counted in one pass.
    pub stats: Option<Stats>,
    /// Its regions in plan order (empty with `stats` `None`).
    pub regions: Vec<RegionPart>,
}

/// One region of a [`StatsPart`].
pub struct RegionPart {
    /// Whether its counts are what one pass gives.
    pub summary: PartSummary,
    /// The messages samtools would print while counting it.
    pub notes: Vec<String>,
    /// The part of the file its reader covered.
    pub span: Span,
}

impl StatsPart {
    /// The part as bytes; `settings` are those it was counted with.
    pub fn to_bytes(&self, settings: &StatsSettings) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(1 << 16));
        w.0.extend_from_slice(MAGIC);
        w.0.extend_from_slice(&VERSION.to_le_bytes());
        w.bytes(settings_text(settings).as_bytes());
        match &self.stats {
            None => w.uint(0),
            Some(stats) => {
                w.uint(1);
                stats.write_to(&mut w);
            }
        }
        w.uint(self.regions.len() as u64);
        for region in &self.regions {
            let s = &region.summary;
            w.uint(
                u64::from(s.seen)
                    | u64::from(s.sorted) << 1
                    | u64::from(s.grew) << 2
                    | u64::from(s.left_depth) << 3
                    | u64::from(s.barcodes) << 4,
            );
            w.uint(region.notes.len() as u64);
            for note in &region.notes {
                w.bytes(note.as_bytes());
            }
            w.uint(u64::from(region.span.0));
            w.uint(u64::from(region.span.1));
        }
        w.0
    }

    /// The part `bytes` hold ([`StatsPart::to_bytes`]), to be summed under
    /// `settings`; an error in words when they are not such a part, of this
    /// version, counted with these settings.
    pub fn from_bytes(bytes: &[u8], settings: &StatsSettings) -> Result<StatsPart, StatsError> {
        let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
            return Err(StatsError("not a part of a fasthts stats run (no such header)".into()));
        };
        let mut r = Reader { bytes: rest };
        let version = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(StatsError(format!(
                "a part of a fasthts stats run of version {version}, this fasthts reads version {VERSION} (run the same fasthts everywhere)"
            )));
        }
        if r.bytes_field()? != settings_text(settings).as_bytes() {
            return Err(StatsError("a part of a fasthts stats run counted with other options".into()));
        }
        let stats = match r.uint()? {
            0 => None,
            1 => Some(Stats::read_from(&mut r, settings)?),
            _ => return Err(r.damaged()),
        };
        let n = r.len()?;
        let mut regions = Vec::with_capacity(n);
        for _ in 0..n {
            let bits = r.uint()?;
            if bits >= 1 << 5 {
                return Err(r.damaged());
            }
            let bit = |i: u32| bits >> i & 1 != 0;
            let summary = PartSummary { seen: bit(0), sorted: bit(1), grew: bit(2), left_depth: bit(3), barcodes: bit(4) };
            let count = r.len()?;
            let mut notes = Vec::with_capacity(count);
            for _ in 0..count {
                notes.push(String::from_utf8(r.bytes_field()?.to_vec()).map_err(|_| r.damaged())?);
            }
            let span = (VirtualOffset::from(r.uint()?), VirtualOffset::from(r.uint()?));
            regions.push(RegionPart { summary, notes, span });
        }
        if !r.bytes.is_empty() {
            return Err(r.damaged());
        }
        Ok(StatsPart { stats, regions })
    }
}

/// The settings as compared between the counting and the summing side.
fn settings_text(settings: &StatsSettings) -> String {
    format!("{settings:?}")
}

struct Writer(Vec<u8>);

impl Writer {
    fn uint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A signed integer, zigzag coded (small magnitudes in a byte).
    fn int(&mut self, v: i64) {
        self.uint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.uint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn uints(&mut self, values: &[u64]) {
        self.uint(values.len() as u64);
        values.iter().for_each(|&v| self.uint(v));
    }

    fn histogram(&mut self, h: &QualityHistogram) {
        self.uint(h.cycles as u64);
        self.uint(h.values as u64);
        self.uints(&h.counts);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn damaged(&self) -> StatsError {
        StatsError(format!("a damaged part of a fasthts stats run ({} bytes from its end)", self.bytes.len()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], StatsError> {
        if n > self.bytes.len() {
            return Err(StatsError("a part of a fasthts stats run cut short".into()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn uint(&mut self) -> Result<u64, StatsError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.damaged());
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.damaged())
    }

    fn int(&mut self) -> Result<i64, StatsError> {
        let v = self.uint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32, StatsError> {
        i32::try_from(self.int()?).map_err(|_| self.damaged())
    }

    fn u32(&mut self) -> Result<u32, StatsError> {
        u32::try_from(self.uint()?).map_err(|_| self.damaged())
    }

    fn bool(&mut self) -> Result<bool, StatsError> {
        match self.uint()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.damaged()),
        }
    }

    /// A count of items that each take at least a byte: no more than the
    /// bytes left (so nothing larger than the input is allocated).
    fn len(&mut self) -> Result<usize, StatsError> {
        let n = self.uint()?;
        if n > self.bytes.len() as u64 {
            return Err(StatsError("a part of a fasthts stats run cut short".into()));
        }
        Ok(n as usize)
    }

    fn bytes_field(&mut self) -> Result<&'a [u8], StatsError> {
        let n = self.len()?;
        self.take(n)
    }

    fn f32(&mut self) -> Result<f32, StatsError> {
        Ok(f32::from_bits(self.u32()?))
    }

    fn f64(&mut self) -> Result<f64, StatsError> {
        Ok(f64::from_bits(self.uint()?))
    }

    /// An array of `expected` integers.
    fn uints(&mut self, expected: usize) -> Result<Vec<u64>, StatsError> {
        let n = self.len()?;
        if n != expected {
            return Err(self.damaged());
        }
        (0..n).map(|_| self.uint()).collect()
    }

    /// A histogram of `cycles` cycles and `values` values (or any number up
    /// to `values` when `any_values`).
    fn histogram(&mut self, cycles: usize, values: usize, any_values: bool) -> Result<QualityHistogram, StatsError> {
        let (c, v) = (self.uint()?, self.uint()?);
        if c != cycles as u64 || (v != values as u64 && !(any_values && v <= values as u64)) {
            return Err(self.damaged());
        }
        let values = v as usize;
        let counts = self.uints(cycles * values)?;
        Ok(QualityHistogram { cycles, values, counts })
    }
}

impl Stats {
    fn write_to(&self, w: &mut Writer) {
        w.uint(self.nbases as u64);
        w.histogram(&self.quals_1st);
        w.histogram(&self.quals_2nd);
        w.uints(&self.gc_1st);
        w.uints(&self.gc_2nd);
        self.bases.iter().flatten().for_each(|h| w.histogram(h));
        for v in [
            &self.read_lengths,
            &self.read_lengths_1st,
            &self.read_lengths_2nd,
            &self.insertions,
            &self.deletions,
            &self.ins_cycles_1st,
            &self.ins_cycles_2nd,
            &self.del_cycles_1st,
            &self.del_cycles_2nd,
        ] {
            w.uints(v);
        }
        if let Some(mpc) = &self.mpc {
            w.uints(mpc);
        }
        match &self.isize {
            InsertSizes::Dense(v) => {
                w.uint(v.len() as u64);
                v.iter().flatten().for_each(|&c| w.uint(c));
            }
            InsertSizes::Sparse { counts, max } => {
                w.int(i64::from(*max));
                // In order of size: the same part gives the same bytes.
                let mut sizes: Vec<(&i32, &[u64; 3])> = counts.iter().collect();
                sizes.sort_unstable_by_key(|(size, _)| **size);
                w.uint(sizes.len() as u64);
                for (size, c) in sizes {
                    w.int(i64::from(*size));
                    c.iter().for_each(|&c| w.uint(c));
                }
            }
        }
        for v in [self.max_len, self.max_len_1st, self.max_len_2nd, self.max_qual] {
            w.int(i64::from(v));
        }
        w.uint(u64::from(self.is_sorted));
        for v in self.counters() {
            w.uint(*v);
        }
        self.checksum.iter().for_each(|&c| w.uint(u64::from(c)));
        w.uint(self.gcd.len() as u64);
        for bin in &self.gcd {
            w.uint(u64::from(bin.gc.to_bits()));
            w.uint(u64::from(bin.depth));
            w.uint(bin.order);
        }
        w.uints(&self.cov);
        w.uint(self.sum_qual.to_bits());
        w.uint(self.target_count);
        for b in &self.barcodes {
            w.uint(b.bases.len() as u64);
            for c in &b.bases {
                [c.a, c.c, c.g, c.t, c.n, c.other].iter().for_each(|&v| w.uint(v));
            }
            w.uints(&b.quals);
            w.int(i64::from(b.separator));
            w.int(i64::from(b.max_qual));
        }
        w.uint(u64::from(self.error_number));
        w.uint(u64::from(self.seen));
        w.uint(self.part);
    }

    /// The counters summed as they are (in one order for writing and reading).
    fn counters(&self) -> [&u64; 23] {
        [
            &self.total_len,
            &self.total_len_1st,
            &self.total_len_2nd,
            &self.total_len_dup,
            &self.nreads_1st,
            &self.nreads_2nd,
            &self.nreads_other,
            &self.nreads_filtered,
            &self.nreads_dup,
            &self.nreads_unmapped,
            &self.nreads_single_mapped,
            &self.nreads_paired_and_mapped,
            &self.nreads_properly_paired,
            &self.nreads_paired_tech,
            &self.nreads_anomalous,
            &self.nreads_mq0,
            &self.nbases_mapped,
            &self.nbases_mapped_cigar,
            &self.nbases_trimmed,
            &self.nmismatches,
            &self.nreads_qcfailed,
            &self.nreads_secondary,
            &self.nreads_supplementary,
        ]
    }

    fn counters_mut(&mut self) -> [&mut u64; 23] {
        [
            &mut self.total_len,
            &mut self.total_len_1st,
            &mut self.total_len_2nd,
            &mut self.total_len_dup,
            &mut self.nreads_1st,
            &mut self.nreads_2nd,
            &mut self.nreads_other,
            &mut self.nreads_filtered,
            &mut self.nreads_dup,
            &mut self.nreads_unmapped,
            &mut self.nreads_single_mapped,
            &mut self.nreads_paired_and_mapped,
            &mut self.nreads_properly_paired,
            &mut self.nreads_paired_tech,
            &mut self.nreads_anomalous,
            &mut self.nreads_mq0,
            &mut self.nbases_mapped,
            &mut self.nbases_mapped_cigar,
            &mut self.nbases_trimmed,
            &mut self.nmismatches,
            &mut self.nreads_qcfailed,
            &mut self.nreads_secondary,
            &mut self.nreads_supplementary,
        ]
    }

    /// Statistics as [`Stats::write_to`] wrote them, every array's length
    /// checked against `settings` and the cycles they hold.
    fn read_from(r: &mut Reader<'_>, settings: &StatsSettings) -> Result<Stats, StatsError> {
        let mut s = Stats::new(settings, None, None, settings.reference.is_some());
        let nbases = r.uint()?;
        // Each cycle takes at least a byte in each per-cycle array.
        if nbases < s.nbases as u64 || nbases > r.bytes.len() as u64 {
            return Err(r.damaged());
        }
        let n = nbases as usize;
        s.nbases = n;
        s.quals_1st = r.histogram(n, N_QUALS, true)?;
        s.quals_2nd = r.histogram(n, N_QUALS, true)?;
        s.gc_1st = r.uints(N_GC)?;
        s.gc_2nd = r.uints(N_GC)?;
        for h in s.bases.iter_mut().flatten() {
            *h = r.histogram(n, 16, false)?;
        }
        for (v, len) in [
            (&mut s.read_lengths, n),
            (&mut s.read_lengths_1st, n),
            (&mut s.read_lengths_2nd, n),
            (&mut s.insertions, n),
            (&mut s.deletions, n),
            (&mut s.ins_cycles_1st, n + 1),
            (&mut s.ins_cycles_2nd, n + 1),
            (&mut s.del_cycles_1st, n + 1),
            (&mut s.del_cycles_2nd, n + 1),
        ] {
            *v = r.uints(len)?;
        }
        if s.mpc.is_some() {
            s.mpc = Some(r.uints(n * N_QUALS)?);
        }
        s.isize = match &s.isize {
            InsertSizes::Dense(v) => {
                let len = v.len();
                if r.len()? != len || len * 3 > r.bytes.len() {
                    return Err(r.damaged());
                }
                InsertSizes::Dense((0..len).map(|_| Ok([r.uint()?, r.uint()?, r.uint()?])).collect::<Result<_, StatsError>>()?)
            }
            InsertSizes::Sparse { .. } => {
                let max = r.i32()?;
                let count = r.len()?;
                let mut counts = HashMap::with_capacity(count);
                for _ in 0..count {
                    let size = r.i32()?;
                    counts.insert(size, [r.uint()?, r.uint()?, r.uint()?]);
                }
                // The largest size counted, as counting keeps it.
                if counts.len() != count || max != counts.keys().copied().max().unwrap_or(0).max(0) {
                    return Err(r.damaged());
                }
                InsertSizes::Sparse { counts, max }
            }
        };
        s.max_len = r.i32()?;
        s.max_len_1st = r.i32()?;
        s.max_len_2nd = r.i32()?;
        s.max_qual = r.i32()?;
        // Lengths below the cycles held (a longer read grows them), qualities a byte.
        let cycles = 0..n as i32;
        if ![s.max_len, s.max_len_1st, s.max_len_2nd].iter().all(|l| cycles.contains(l)) || !(0..N_QUALS as i32).contains(&s.max_qual) {
            return Err(r.damaged());
        }
        s.is_sorted = r.bool()?;
        for v in s.counters_mut() {
            *v = r.uint()?;
        }
        for c in &mut s.checksum {
            *c = r.u32()?;
        }
        let bins = r.len()?;
        if bins == 0 {
            return Err(r.damaged());
        }
        s.gcd = (0..bins).map(|_| Ok(GcDepth { gc: r.f32()?, depth: r.u32()?, order: r.uint()? })).collect::<Result<_, StatsError>>()?;
        let cov_len = s.cov.len();
        s.cov = r.uints(cov_len)?;
        s.sum_qual = r.f64()?;
        s.target_count = r.uint()?;
        for b in &mut s.barcodes {
            let len = r.len()?;
            b.bases = (0..len)
                .map(|_| Ok(Acgtno { a: r.uint()?, c: r.uint()?, g: r.uint()?, t: r.uint()?, n: r.uint()?, other: r.uint()? }))
                .collect::<Result<_, StatsError>>()?;
            b.quals = r.uints(len * N_QUALS)?;
            b.separator = r.i32()?;
            b.max_qual = r.i32()?;
            if b.separator < -1 || b.separator >= len.max(1) as i32 || b.max_qual < -1 || b.max_qual >= N_QUALS as i32 {
                return Err(r.damaged());
            }
        }
        s.error_number = r.u32()?;
        s.seen = r.bool()?;
        s.part = r.uint()?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::text::{write_stats, Preamble};
    use crate::stats::Collector;
    use crate::test_support::data;

    /// small.bam counted with `settings`, as one part.
    fn counted(settings: &StatsSettings) -> Stats {
        let bam = crate::bam::BamFile::open(data("small.bam")).unwrap();
        let names: Vec<Vec<u8>> = bam.header().references.iter().map(|r| r.name.as_bytes().to_vec()).collect();
        let mut collector = Collector::new(settings, &names, None, None, None, None);
        crate::bam::scan(&bam, |r, _| {
            collector.add(r).unwrap();
            Ok(())
        })
        .unwrap();
        let (mut stats, _) = collector.into_all();
        stats.set_part(3);
        stats.end_part(settings).unwrap();
        stats
    }

    fn text(stats: &mut Stats, settings: &StatsSettings) -> String {
        let mut out = Vec::new();
        write_stats(&mut out, stats, settings, &Preamble { producer: "test", command_line: "stats", split_tag: None }).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn part(stats: Stats) -> StatsPart {
        let summary = PartSummary { seen: true, sorted: true, grew: false, left_depth: true, barcodes: false };
        let span = (VirtualOffset::from(1234 << 16 | 5), VirtualOffset::from(99 << 16));
        StatsPart { stats: Some(stats), regions: vec![RegionPart { summary, notes: vec!["a note".into(), String::new()], span }] }
    }

    #[test]
    fn a_counted_part_comes_back_from_its_bytes_as_it_was() {
        let sparse = StatsSettings { max_insert_size: 0, ..StatsSettings::default() };
        for settings in [StatsSettings::default(), sparse] {
            let mut stats = counted(&settings);
            assert!(stats.nreads_1st > 0 && stats.gcd.len() > 1 && stats.quals_1st.values > 0, "a populated part");
            // Barcodes and the other fields small.bam leaves empty.
            stats.barcodes[1].bases = vec![Acgtno { a: 1, c: 2, g: 3, t: 4, n: 5, other: 6 }; 3];
            stats.barcodes[1].quals = (0..3 * N_QUALS as u64).collect();
            (stats.barcodes[1].separator, stats.barcodes[1].max_qual, stats.error_number) = (1, 40, 7);
            let part = part(stats);
            let bytes = part.to_bytes(&settings);
            let mut back = StatsPart::from_bytes(&bytes, &settings).unwrap();
            assert_eq!(back.to_bytes(&settings), bytes);
            let (mut a, mut b) = (part.stats.unwrap(), back.stats.take().unwrap());
            assert_eq!(text(&mut a, &settings), text(&mut b, &settings));
            assert_eq!((b.part, b.seen, b.error_number), (3, true, 7));
            let region = &back.regions[0];
            assert_eq!(region.notes, ["a note", ""]);
            assert_eq!(region.span, part.regions[0].span);
            assert!(region.summary.left_depth && region.summary.sorted && !region.summary.grew);
        }
    }

    #[test]
    fn damaged_foreign_or_mismatched_bytes_are_refused_in_words() {
        let settings = StatsSettings::default();
        let bytes = part(counted(&settings)).to_bytes(&settings);
        let refused = |b: &[u8], s: &StatsSettings| StatsPart::from_bytes(b, s).err().expect("refused").0;
        assert!(refused(b"BAM\x01", &settings).contains("not a part"));
        let mut other_version = bytes.clone();
        other_version[MAGIC.len()] = 2;
        assert!(refused(&other_version, &settings).contains("of version 2, this fasthts reads version 1"));
        let other = StatsSettings { remove_overlaps: true, ..StatsSettings::default() };
        assert!(refused(&bytes, &other).contains("other options"));
        // Every cut is refused, never a panic.
        for len in (0..bytes.len()).step_by(97).chain([bytes.len() - 1]) {
            assert!(StatsPart::from_bytes(&bytes[..len], &settings).is_err(), "cut at {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(refused(&longer, &settings).contains("damaged"));
        // Flipped bytes: refused or read, never a panic or a huge allocation.
        for at in (MAGIC.len() + 4..bytes.len()).step_by(31) {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0xff;
            let _ = StatsPart::from_bytes(&flipped, &settings);
        }
    }
}
