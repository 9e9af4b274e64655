//! `samtools index` and `samtools idxstats` over a BAM file.
//!
//! ```no_run
//! use fasthts::bam::BamFile;
//! use fasthts::index::IndexFormat;
//! let bam = BamFile::open("in.bam")?;
//! let index = fasthts::indexer::build(&bam, IndexFormat::Bai)?;
//! fasthts::indexer::write_index(&index, "in.bam.bai")?;
//! print!("{}", fasthts::indexer::idxstats(&bam, &index));
//! # Ok::<(), fasthts::Error>(())
//! ```

use crate::bam::{flags, BamFile, Header};
use crate::index::{self, Index, IndexBuilder, IndexFormat};
use crate::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Builds the index of a coordinate-sorted BAM as `samtools index` does
/// (BAI, or CSI with the given `min_shift`; the CSI depth follows from the
/// longest reference as in samtools). Blocks are inflated on the current
/// rayon pool while records are indexed.
pub fn build(bam: &BamFile, format: IndexFormat) -> Result<Index, Error> {
    let format = format_for(bam.header(), format);
    let n_refs = bam.header().references.len();
    let mut builder = IndexBuilder::new(format, n_refs, bam.first_record_offset());
    let end = crate::bam::scan(bam, |r, at| {
        let mapped = r.flag() & flags::UNMAPPED == 0;
        builder.push(r.ref_id(), i64::from(r.pos()), r.end_pos(), at.end(), mapped).map_err(|e| Error::from(e).with_path(bam.path()))
    })?;
    builder.finish(end).map_err(|e| Error::from(e).with_path(bam.path()))
}

/// Builds the index of a coordinate-sorted bgzipped SAM (`file`, the whole
/// compressed file; `path` names it in errors) as `samtools index` does:
/// the records as that SAM read into BAM records, each with the virtual
/// offset of its line's end ([`crate::sam::BgzfSamReader`]).
pub fn build_sam(file: &[u8], path: &Path, format: IndexFormat) -> Result<Index, Error> {
    let with_path = |e: Error| e.with_path(path);
    let mut sam = crate::sam::BgzfSamReader::new(file).map_err(|e| with_path(e.into()))?;
    let format = format_for(sam.header(), format);
    let mut builder = IndexBuilder::new(format, sam.header().references.len(), sam.first_record_offset());
    let end = sam.for_each_record(|r, pos, end_pos, end| {
        let mapped = r.flag() & flags::UNMAPPED == 0;
        builder.push(r.ref_id(), pos, end_pos, end, mapped).map_err(|e| with_path(e.into()))
    });
    let end = end.map_err(|e: Error| match e {
        Error::WithPath { .. } => e,
        e => with_path(e),
    })?;
    builder.finish(end).map_err(|e| with_path(e.into()))
}

/// The index format for a BAM with `header`: a CSI's depth follows from the
/// longest reference, as samtools computes it (the depth in `format` is
/// ignored).
pub fn format_for(header: &Header, format: IndexFormat) -> IndexFormat {
    match format {
        IndexFormat::Bai => IndexFormat::Bai,
        IndexFormat::Csi { min_shift, .. } => {
            let longest = (0..header.references.len()).map(|i| header.reference_len(i)).max().unwrap_or(0);
            IndexFormat::Csi { min_shift, depth: index::csi_depth(min_shift, longest) }
        }
    }
}

/// Writes `index` to `path` through a temporary file in the same directory,
/// renamed into place only once complete.
pub fn write_index(index: &Index, path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    Ok(crate::output::write_atomically(path, |w| w.write_all(&index.to_bytes()))?)
}

/// `samtools idxstats` text from the index (per reference: name, length,
/// mapped and unmapped records; then the records without coordinate).
pub fn idxstats(bam: &BamFile, index: &Index) -> String {
    let h = bam.header();
    let refs: Vec<(&str, u64)> = h.references.iter().enumerate().map(|(i, r)| (r.name.as_str(), h.reference_len(i))).collect();
    index::idxstats(index, &refs)
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

/// The index file beside `bam_path`, if there is one: `IN.csi`, `IN.bai`,
/// or the same with the last extension replaced (`x.csi` for `x.bam`,
/// `x.sam.csi` for `x.sam.gz`), in htslib's order.
pub fn locate(bam_path: &Path) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    for ext in ["csi", "bai"] {
        let mut p = bam_path.as_os_str().to_owned();
        p.push(format!(".{ext}"));
        candidates.push(PathBuf::from(p));
        if bam_path.extension().is_some() {
            candidates.push(bam_path.with_extension(ext));
        }
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Where the index of `data` goes unless another name is given:
/// `DATA.bai`, or `DATA.csi` for a CSI (samtools index's and sort
/// `--write-index`'s default).
pub fn index_path_for(data: &Path, format: IndexFormat) -> PathBuf {
    let mut p = data.as_os_str().to_owned();
    p.push(match format {
        IndexFormat::Bai => ".bai",
        IndexFormat::Csi { .. } => ".csi",
    });
    PathBuf::from(p)
}

/// An output name that may name its index too, as htslib's
/// `DATA##idx##INDEX`: the data file, the index file (`DATA.csi` when not
/// named) and the index format its name asks for (BAI when it ends in
/// `.bai`, else CSI with samtools' default interval).
///
/// ```
/// use fasthts::index::IndexFormat;
/// use fasthts::indexer::split_index_name;
/// use std::path::{Path, PathBuf};
/// let (data, index, format) = split_index_name(Path::new("out.bam##idx##out.bai"));
/// assert_eq!((data, index, format), (PathBuf::from("out.bam"), PathBuf::from("out.bai"), IndexFormat::Bai));
/// let (data, index, _) = split_index_name(Path::new("out.bam"));
/// assert_eq!((data, index), (PathBuf::from("out.bam"), PathBuf::from("out.bam.csi")));
/// ```
pub fn split_index_name(output: &Path) -> (PathBuf, PathBuf, IndexFormat) {
    let csi = IndexFormat::Csi { min_shift: index::DEFAULT_MIN_SHIFT, depth: 0 };
    let (data, index) = match output.to_str().and_then(|o| o.split_once("##idx##")) {
        Some((data, index)) => (PathBuf::from(data), PathBuf::from(index)),
        None => (output.to_path_buf(), index_path_for(output, csi)),
    };
    let format = if index.extension().is_some_and(|e| e == "bai") { IndexFormat::Bai } else { csi };
    (data, index, format)
}
