//! `samtools flagstat`: counts of records by flag category, QC-passed and
//! QC-failed apart, printed in samtools 1.16's three formats.
//!
//! ```
//! use fasthts::flagstat::FlagStat;
//! let stats = FlagStat::default();
//! assert!(stats.to_default_text().starts_with("0 + 0 in total (QC-passed reads + QC-failed reads)\n"));
//! ```

use crate::bam::{flags, RecordRef};
use std::fmt::Write;

/// Counters for one QC class (passed or failed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// All records.
    pub total: u64,
    /// Neither secondary nor supplementary.
    pub primary: u64,
    /// Secondary (0x100).
    pub secondary: u64,
    /// Supplementary (0x800) and not secondary.
    pub supplementary: u64,
    /// Duplicates (0x400).
    pub duplicates: u64,
    /// Primary duplicates.
    pub primary_duplicates: u64,
    /// Mapped (no 0x4).
    pub mapped: u64,
    /// Primary and mapped.
    pub primary_mapped: u64,
    /// Primary and paired (0x1).
    pub paired: u64,
    /// Primary, paired, read 1.
    pub read1: u64,
    /// Primary, paired, read 2.
    pub read2: u64,
    /// Primary, paired, properly paired and mapped.
    pub properly_paired: u64,
    /// Primary, paired, both mapped.
    pub both_mapped: u64,
    /// Primary, paired, mapped with mate unmapped.
    pub singletons: u64,
    /// Primary, both mapped, mate on another reference.
    pub mate_other_chr: u64,
    /// As above with MAPQ >= 5.
    pub mate_other_chr_mapq5: u64,
}

impl Counts {
    fn merge(&mut self, o: &Counts) {
        self.total += o.total;
        self.primary += o.primary;
        self.secondary += o.secondary;
        self.supplementary += o.supplementary;
        self.duplicates += o.duplicates;
        self.primary_duplicates += o.primary_duplicates;
        self.mapped += o.mapped;
        self.primary_mapped += o.primary_mapped;
        self.paired += o.paired;
        self.read1 += o.read1;
        self.read2 += o.read2;
        self.properly_paired += o.properly_paired;
        self.both_mapped += o.both_mapped;
        self.singletons += o.singletons;
        self.mate_other_chr += o.mate_other_chr;
        self.mate_other_chr_mapq5 += o.mate_other_chr_mapq5;
    }
}

/// Flag statistics: `[QC-passed, QC-failed]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlagStat(pub [Counts; 2]);

impl FlagStat {
    /// Counts one record, with samtools' rules.
    #[inline]
    pub fn add(&mut self, r: &RecordRef<'_>) {
        self.add_many(r.flag(), r.mate_ref_id() != r.ref_id(), r.mapq() >= 5, 1);
    }

    /// Counts `n` records with flag `flag`, mates on another reference or
    /// not, with MAPQ >= 5 or not.
    fn add_many(&mut self, flag: u16, mate_other_chr: bool, mapq5: bool, n: u64) {
        let c = &mut self.0[usize::from(flag & flags::QC_FAIL != 0)];
        let mapped = flag & flags::UNMAPPED == 0;
        let dup = flag & flags::DUPLICATE != 0;
        let count = |yes: bool| if yes { n } else { 0 };
        c.total += n;
        c.mapped += count(mapped);
        c.duplicates += count(dup);
        if flag & flags::SECONDARY != 0 {
            c.secondary += n;
            return;
        }
        if flag & flags::SUPPLEMENTARY != 0 {
            c.supplementary += n;
            return;
        }
        c.primary += n;
        c.primary_mapped += count(mapped);
        c.primary_duplicates += count(dup);
        if flag & flags::PAIRED != 0 {
            let mate_mapped = flag & flags::MATE_UNMAPPED == 0;
            c.paired += n;
            c.properly_paired += count(flag & flags::PROPER_PAIR != 0 && mapped);
            c.read1 += count(flag & flags::READ1 != 0);
            c.read2 += count(flag & flags::READ2 != 0);
            c.singletons += count(mapped && !mate_mapped);
            if mapped && mate_mapped {
                c.both_mapped += n;
                if mate_other_chr {
                    c.mate_other_chr += n;
                    c.mate_other_chr_mapq5 += count(mapq5);
                }
            }
        }
    }

    /// Adds another set of counts (order does not matter).
    pub fn merge(&mut self, other: &FlagStat) {
        self.0[0].merge(&other.0[0]);
        self.0[1].merge(&other.0[1]);
    }

    /// samtools' default text.
    pub fn to_default_text(&self) -> String {
        let [p, f] = &self.0;
        let mut s = String::with_capacity(1024);
        let mut line = |a: u64, b: u64, what: &str| {
            let _ = writeln!(s, "{a} + {b} {what}");
        };
        line(p.total, f.total, "in total (QC-passed reads + QC-failed reads)");
        line(p.primary, f.primary, "primary");
        line(p.secondary, f.secondary, "secondary");
        line(p.supplementary, f.supplementary, "supplementary");
        line(p.duplicates, f.duplicates, "duplicates");
        line(p.primary_duplicates, f.primary_duplicates, "primary duplicates");
        let pct = |n: u64, t: u64| percent(n, t, "%", "N/A");
        line(p.mapped, f.mapped, &format!("mapped ({} : {})", pct(p.mapped, p.total), pct(f.mapped, f.total)));
        line(
            p.primary_mapped,
            f.primary_mapped,
            &format!("primary mapped ({} : {})", pct(p.primary_mapped, p.primary), pct(f.primary_mapped, f.primary)),
        );
        line(p.paired, f.paired, "paired in sequencing");
        line(p.read1, f.read1, "read1");
        line(p.read2, f.read2, "read2");
        line(
            p.properly_paired,
            f.properly_paired,
            &format!("properly paired ({} : {})", pct(p.properly_paired, p.paired), pct(f.properly_paired, f.paired)),
        );
        line(p.both_mapped, f.both_mapped, "with itself and mate mapped");
        line(p.singletons, f.singletons, &format!("singletons ({} : {})", pct(p.singletons, p.paired), pct(f.singletons, f.paired)));
        line(p.mate_other_chr, f.mate_other_chr, "with mate mapped to a different chr");
        line(p.mate_other_chr_mapq5, f.mate_other_chr_mapq5, "with mate mapped to a different chr (mapQ>=5)");
        s
    }

    /// samtools' `-O tsv` text.
    pub fn to_tsv(&self) -> String {
        let [p, f] = &self.0;
        let (p, f) = (p.figures("%", "N/A"), f.figures("%", "N/A"));
        let mut s = String::with_capacity(1024);
        for ((a, b), (name, _)) in p.iter().zip(&f).zip(FIGURE_NAMES) {
            let _ = writeln!(s, "{a}\t{b}\t{name}");
        }
        s
    }

    /// samtools' `-O json` text (its exact spacing, trailing spaces included).
    pub fn to_json(&self) -> String {
        let mut s = String::from("{\n");
        for (i, (c, title)) in self.0.iter().zip(["QC-passed reads", "QC-failed reads"]).enumerate() {
            let _ = write!(s, " \"{title}\": {{ \n");
            for (j, (v, (_, name))) in c.figures("", "null").iter().zip(FIGURE_NAMES).enumerate() {
                let sep = if j + 1 < FIGURE_NAMES.len() { "," } else { "" };
                let _ = write!(s, "  \"{name}\": {v}{sep} \n");
            }
            s.push_str(if i == 0 { " },\n" } else { " }\n" });
        }
        s.push_str("}\n");
        s
    }
}

/// The names of [`Counts::figures`] in samtools' tsv and json outputs.
const FIGURE_NAMES: [(&str, &str); 20] = [
    ("total (QC-passed reads + QC-failed reads)", "total"),
    ("primary", "primary"),
    ("secondary", "secondary"),
    ("supplementary", "supplementary"),
    ("duplicates", "duplicates"),
    ("primary duplicates", "primary duplicates"),
    ("mapped", "mapped"),
    ("mapped %", "mapped %"),
    ("primary mapped", "primary mapped"),
    ("primary mapped %", "primary mapped %"),
    ("paired in sequencing", "paired in sequencing"),
    ("read1", "read1"),
    ("read2", "read2"),
    ("properly paired", "properly paired"),
    ("properly paired %", "properly paired %"),
    ("with itself and mate mapped", "with itself and mate mapped"),
    ("singletons", "singletons"),
    ("singletons %", "singletons %"),
    ("with mate mapped to a different chr", "with mate mapped to a different chr"),
    ("with mate mapped to a different chr (mapQ>=5)", "with mate mapped to a different chr (mapQ >= 5)"),
];

impl Counts {
    /// The figures samtools' tsv and json outputs list, in their order
    /// (percentages with `suffix`, or `none` when undefined).
    fn figures(&self, suffix: &str, none: &str) -> [String; 20] {
        let pct = |n: u64, t: u64| percent(n, t, suffix, none);
        [
            self.total.to_string(),
            self.primary.to_string(),
            self.secondary.to_string(),
            self.supplementary.to_string(),
            self.duplicates.to_string(),
            self.primary_duplicates.to_string(),
            self.mapped.to_string(),
            pct(self.mapped, self.total),
            self.primary_mapped.to_string(),
            pct(self.primary_mapped, self.primary),
            self.paired.to_string(),
            self.read1.to_string(),
            self.read2.to_string(),
            self.properly_paired.to_string(),
            pct(self.properly_paired, self.paired),
            self.both_mapped.to_string(),
            self.singletons.to_string(),
            pct(self.singletons, self.paired),
            self.mate_other_chr.to_string(),
            self.mate_other_chr_mapq5.to_string(),
        ]
    }
}

/// samtools' `percent`: single-precision division, then `%.2f` of it times
/// 100 (in double), or `none` when the total is 0.
fn percent(n: u64, total: u64, suffix: &str, none: &str) -> String {
    if total == 0 {
        return none.to_string();
    }
    let ratio = n as f32 / total as f32;
    format!("{:.2}{suffix}", f64::from(ratio) * 100.0)
}

/// Records counted by what flagstat's rules read of them: the flag bits
/// they test, whether the mate is on another reference and whether MAPQ is
/// at least 5. A whole-file count adds one to a slot per record, instead of
/// taking the rules' branches for every record, and applies the rules once
/// per slot at the end.
#[derive(Clone)]
pub struct FlagTally {
    slots: Box<[u64; FlagTally::SLOTS]>,
}

impl Default for FlagTally {
    fn default() -> Self {
        FlagTally { slots: Box::new([0; FlagTally::SLOTS]) }
    }
}

impl FlagTally {
    /// Flag bits 0x1–0x8 and 0x40–0x800 (strand bits are not counted),
    /// then the mate and MAPQ bits.
    const SLOTS: usize = 1 << 12;
    const MATE_OTHER_CHR: usize = 1 << 10;
    const MAPQ5: usize = 1 << 11;

    /// Counts one record.
    #[inline]
    pub fn add(&mut self, r: &RecordRef<'_>) {
        self.add_fields(r.flag(), r.ref_id(), r.mate_ref_id(), r.mapq());
    }

    /// Counts one record from the fields flagstat reads (a CRAM record's,
    /// without its BAM bytes).
    #[inline]
    pub fn add_fields(&mut self, flag: u16, ref_id: i32, mate_ref_id: i32, mapq: u8) {
        let flag = usize::from(flag);
        let other_chr = usize::from(mate_ref_id != ref_id);
        let mapq5 = usize::from(mapq >= 5);
        let slot = (flag & 0xf) | (flag >> 2 & 0x3f0) | (other_chr * Self::MATE_OTHER_CHR) | ((other_chr & mapq5) * Self::MAPQ5);
        self.slots[slot] += 1;
    }

    /// Adds another tally's counts.
    pub fn merge(&mut self, other: &FlagTally) {
        for (a, b) in self.slots.iter_mut().zip(other.slots.iter()) {
            *a += b;
        }
    }

    /// The flag statistics of the records counted.
    pub fn stats(&self) -> FlagStat {
        let mut stats = FlagStat::default();
        for (slot, &n) in self.slots.iter().enumerate() {
            if n > 0 {
                let flag = (slot & 0xf | (slot & 0x3f0) << 2) as u16;
                stats.add_many(flag, slot & Self::MATE_OTHER_CHR != 0, slot & Self::MAPQ5 != 0, n);
            }
        }
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_matches_c_rounding() {
        // Values checked against printf("%.2f", (float)n/total*100.0).
        assert_eq!(percent(1, 3, "%", "N/A"), "33.33%");
        assert_eq!(percent(2, 3, "%", "N/A"), "66.67%");
        assert_eq!(percent(1, 8, "", "null"), "12.50");
        assert_eq!(percent(0, 0, "%", "N/A"), "N/A");
        assert_eq!(percent(0, 0, "", "null"), "null");
        assert_eq!(percent(7, 7, "%", "N/A"), "100.00%");
        // A tie in binary: glibc rounds half to even on the exact value.
        assert_eq!(format!("{:.2}", 0.125f64), "0.12");
        assert_eq!(format!("{:.2}", 0.375f64), "0.38");
    }

    #[test]
    fn tally_gives_the_stats_of_counting_each_record() {
        use crate::bam::record::tests::encode;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut direct = FlagStat::default();
        let mut tally = FlagTally::default();
        let mut halves = [FlagTally::default(), FlagTally::default()];
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let flag = (x & 0xfff) as u16;
            let mut rec = encode("r", flag, (x >> 12 & 3) as i32 - 1, 100, (x >> 14 & 7) as u8, &[], "", &[]);
            rec[20..24].copy_from_slice(&((x >> 17 & 3) as i32 - 1).to_le_bytes());
            let r = RecordRef::new(&rec, 4).unwrap();
            direct.add(&r);
            tally.add(&r);
            halves[i % 2].add(&r);
        }
        assert_eq!(tally.stats(), direct);
        let [mut merged, other] = halves;
        merged.merge(&other);
        assert_eq!(merged.stats(), direct);
        for c in &direct.0 {
            assert!(c.mate_other_chr_mapq5 > 0 && c.mate_other_chr > c.mate_other_chr_mapq5 && c.singletons > 0);
        }
    }

    #[test]
    fn json_shape_matches_samtools() {
        let j = FlagStat::default().to_json();
        assert!(j.starts_with("{\n \"QC-passed reads\": { \n  \"total\": 0, \n"));
        assert!(j.contains("  \"mapped %\": null, \n"));
        assert!(j.ends_with("  \"with mate mapped to a different chr (mapQ >= 5)\": 0 \n }\n}\n"));
        assert!(j.contains(" },\n \"QC-failed reads\": { \n"));
    }
}

/// Flag statistics of every record of `bam`, reading it in file order with
/// blocks inflated on the current rayon pool while records are counted.
pub fn count_sequential(bam: &crate::bam::BamFile) -> Result<FlagStat, crate::Error> {
    let mut tally = FlagTally::default();
    crate::bam::scan(bam, |r, _| {
        tally.add(r);
        Ok(())
    })?;
    Ok(tally.stats())
}

/// Flag statistics of the records of one region, visited in place.
pub fn count_region(records: &mut crate::region::RegionReader<'_>) -> Result<FlagStat, crate::bam::BamError> {
    // The tally (32 KiB of slots) becomes its few counts at once: the parts
    // of a whole-file count are held until every region is done, and a
    // large file has hundreds of regions. A region's first records are
    // counted one by one instead: a draft assembly has a region for each of
    // its hundreds of thousands of contigs, a few records each, and
    // clearing and reading 32 KiB for each would cost more than its records.
    const ONE_BY_ONE: u64 = 256;
    let mut stats = FlagStat::default();
    let mut tally: Option<FlagTally> = None;
    let mut seen = 0u64;
    records.for_each_record(|r| {
        seen += 1;
        if seen <= ONE_BY_ONE {
            stats.add(r);
        } else {
            tally.get_or_insert_with(FlagTally::default).add(r);
        }
    })?;
    if let Some(tally) = tally {
        stats.merge(&tally.stats());
    }
    Ok(stats)
}

/// Flag statistics of every record of `bam`, with the genome cut into
/// regions of about `region_bytes` compressed bytes by `index` and the
/// regions counted in parallel. Fails with [`crate::Error::IndexMismatch`]
/// when the index does not describe the file (see
/// [`crate::region::scatter_all`]).
pub fn count_indexed(bam: &crate::bam::BamFile, index: &crate::index::Index, region_bytes: u64) -> Result<FlagStat, crate::Error> {
    use crate::region::{self, Plan};
    let parts = region::scatter_all(bam, index, Plan::BalancedBytes(region_bytes), |_, records| count_region(records))?;
    let mut total = FlagStat::default();
    for part in &parts {
        total.merge(part);
    }
    Ok(total)
}
