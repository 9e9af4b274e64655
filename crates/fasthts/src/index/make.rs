//! Making the index of a BAM or bgzipped SAM file as `samtools index`
//! does, and writing it.
//!
//! ```no_run
//! use fasthts::bam::BamFile;
//! use fasthts::index::IndexFormat;
//! let bam = BamFile::open("in.bam")?;
//! let index = fasthts::index::build(&bam, IndexFormat::Bai)?;
//! fasthts::index::write_index(&index, "in.bam.bai")?;
//! print!("{}", fasthts::index::idxstats_for(&bam, &index));
//! # Ok::<(), fasthts::Error>(())
//! ```

use super::{Index, IndexBuilder, IndexFormat};
use crate::bam::{flags, BamFile, Header};
use crate::Error;
use std::io::Write;
use std::path::Path;

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
            IndexFormat::Csi { min_shift, depth: super::csi_depth(min_shift, longest) }
        }
    }
}

/// Writes `index` to `path` through a temporary file in the same directory,
/// renamed into place only once complete.
pub fn write_index(index: &Index, path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    Ok(crate::output::write_atomically(path, |w| w.write_all(&index.to_bytes()))?)
}

/// The sort order the header of `bam` declares (`@HD SO:`), if any.
fn declared_order(bam: &BamFile) -> Option<String> {
    let text = String::from_utf8_lossy(&bam.header().text);
    let hd = text.lines().find(|l| l.starts_with("@HD"))?;
    hd.split('\t').find_map(|f| f.strip_prefix("SO:")).map(str::to_owned)
}

/// The error for a BAM that is to be read through an index but is not
/// sorted by coordinate (what its header declares, else what indexing
/// found, `found`), or `None` when neither says so.
pub fn not_coordinate_sorted(bam: &BamFile, found: Option<&Error>) -> Option<Error> {
    let why = match declared_order(bam) {
        Some(order) if order != "coordinate" => format!("header says SO:{order}"),
        _ => {
            let unsorted = |e: &crate::index::IndexError| {
                use crate::index::IndexError::*;
                matches!(e, Unsorted { .. } | NotContinuous { .. } | NoCoorNotAtEnd { .. })
            };
            let mut e = found?;
            while let Error::WithPath { source, .. } = e {
                e = source;
            }
            match e {
                Error::Index(ix) if unsorted(ix) => ix.to_string(),
                _ => return None,
            }
        }
    };
    Some(Error::Message(format!("not coordinate-sorted ({why}); sort it by coordinate first (fasthts sort)")).with_path(bam.path()))
}

/// An index of `bam` made in memory, for a reader given no index file
/// (Python's `BamFile`); a BAM not sorted by coordinate is said to be so
/// ([`not_coordinate_sorted`]).
pub fn build_index(bam: &BamFile) -> Result<Index, Error> {
    if let Some(e) = not_coordinate_sorted(bam, None) {
        return Err(e);
    }
    crate::index::build(bam, crate::index::IndexFormat::Bai).map_err(|e| not_coordinate_sorted(bam, Some(&e)).unwrap_or(e))
}
