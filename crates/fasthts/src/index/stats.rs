//! `samtools idxstats`: from the index, or by counting every record.

use super::Index;
use crate::bam::{flags, BamFile, Header};
use crate::Error;
use std::fmt::Write as _;

/// `samtools idxstats` output from an index and the header's references
/// (name, length), byte for byte: one `name\tlength\tmapped\tunmapped` line
/// per reference, then `*\t0\t0\t<records without coordinate>`.
///
/// As samtools 1.16 does, a reference without a metadata pseudo-bin (no
/// records, or an index made by a tool that omits it) shows `0\t0`, and a
/// missing trailing count shows 0. References beyond those the index covers
/// also show `0\t0` (samtools reads past its table there).
///
/// ```
/// use fasthts::index::{idxstats, Index, IndexFormat, ReferenceIndex};
/// let index = Index::new(IndexFormat::Bai, vec![ReferenceIndex::new(vec![], vec![], None)], None);
/// assert_eq!(idxstats(&index, &[("chrM", 16569u64)]), "chrM\t16569\t0\t0\n*\t0\t0\t0\n");
/// ```
pub fn idxstats<N: AsRef<str>>(index: &Index, references: &[(N, u64)]) -> String {
    let mut out = String::new();
    for (tid, (name, len)) in references.iter().enumerate() {
        let (mapped, unmapped) = index.mapped_unmapped(tid).unwrap_or((0, 0));
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{}\t{}\t{}\t{}", name.as_ref(), len, mapped, unmapped);
    }
    let _ = writeln!(out, "*\t0\t0\t{}", index.n_no_coor.unwrap_or(0));
    out
}

/// `samtools idxstats` text of `bam` from its index (per reference: name,
/// length, mapped and unmapped records; then the records without
/// coordinate): [`idxstats`] with the header's references.
pub fn idxstats_for(bam: &BamFile, index: &Index) -> String {
    let h = bam.header();
    let refs: Vec<(&str, u64)> = h.references.iter().enumerate().map(|(i, r)| (r.name.as_str(), h.reference_len(i))).collect();
    idxstats(index, &refs)
}

/// `samtools idxstats` without an index: counts every record, as samtools'
/// "slow method" does (including its quirk of reporting unplaced records
/// without the unmapped flag as mapped on the `*` line). Fails, as samtools
/// does, when a reference's records are not contiguous.
pub fn idxstats_by_scan(bam: &BamFile) -> Result<String, Error> {
    let mut counts = IdxstatsCounts::new(bam.header());
    crate::bam::scan(bam, |r, _| counts.add(r).map_err(|e| e.with_path(bam.path())))?;
    Ok(counts.text(bam.header()))
}

/// samtools idxstats' slow method, record by record (for a stream: a
/// pipe, SAM): see [`idxstats_by_scan`].
pub struct IdxstatsCounts {
    /// Slot 0 is the unplaced records; slot tid + 1 is reference tid;
    /// `[mapped, unmapped]`.
    counts: Vec<[u64; 2]>,
    /// The reference ids of the first and the last record counted (-2:
    /// none yet).
    first_tid: i32,
    last_tid: i32,
}

impl IdxstatsCounts {
    /// No records counted yet, for a file with `header`.
    pub fn new(header: &Header) -> Self {
        IdxstatsCounts { counts: vec![[0u64; 2]; header.references.len() + 1], first_tid: -2, last_tid: -2 }
    }

    /// Counts one record; an error when its reference's records are not
    /// contiguous (the caller adds the path).
    #[inline]
    pub fn add(&mut self, r: &crate::bam::RecordRef<'_>) -> Result<(), Error> {
        self.add_fields(r.ref_id(), r.flag())
    }

    /// [`IdxstatsCounts::add`] of a record's reference id (in range) and
    /// flag.
    #[inline]
    pub fn add_fields(&mut self, tid: i32, flag: u16) -> Result<(), Error> {
        let slot = (tid + 1) as usize;
        if tid != self.last_tid {
            if self.last_tid >= -1 && self.counts[slot][0] + self.counts[slot][1] > 0 {
                return Err(not_sorted());
            }
            if self.last_tid == -2 {
                self.first_tid = tid;
            }
            self.last_tid = tid;
        }
        self.counts[slot][usize::from(flag & flags::UNMAPPED != 0)] += 1;
        Ok(())
    }

    /// Adds the counts of the records that follow those counted here in
    /// the file (counted apart, as a part of it): the same error as
    /// counting them here when a reference's records are not contiguous.
    pub fn append(&mut self, later: &IdxstatsCounts) -> Result<(), Error> {
        if later.last_tid == -2 {
            return Ok(());
        }
        for (slot, (mine, theirs)) in self.counts.iter_mut().zip(&later.counts).enumerate() {
            let tid = slot as i32 - 1;
            let in_both = mine[0] + mine[1] > 0 && theirs[0] + theirs[1] > 0;
            // Only the reference whose run goes on across the join is in both.
            if in_both && !(tid == self.last_tid && tid == later.first_tid) {
                return Err(not_sorted());
            }
            mine[0] += theirs[0];
            mine[1] += theirs[1];
        }
        if self.last_tid == -2 {
            self.first_tid = later.first_tid;
        }
        self.last_tid = later.last_tid;
        Ok(())
    }

    /// samtools idxstats' text of the records counted.
    pub fn text(&self, header: &Header) -> String {
        let mut out = String::new();
        for ((i, r), c) in header.references.iter().enumerate().zip(&self.counts[1..]) {
            out.push_str(&format!("{}\t{}\t{}\t{}\n", r.name, header.reference_len(i), c[0], c[1]));
        }
        out.push_str(&format!("*\t0\t{}\t{}\n", self.counts[0][0], self.counts[0][1]));
        out
    }
}

fn not_sorted() -> Error {
    Error::Message("file is not position sorted".into())
}
