//! Where the index of a file is, and whether it may be used: htslib's
//! names beside the data file, an index older than its data, one made for
//! another file, one that points outside this one.

use super::{Index, IndexFormat, Indexed};
use crate::bam::BamFile;
use crate::bgzf::{Block, VirtualOffset};
use crate::report::{Report, Warning};
use crate::Error;
use std::path::{Path, PathBuf};

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
/// use fasthts::index::{split_index_name, IndexFormat};
/// use std::path::{Path, PathBuf};
/// let (data, index, format) = split_index_name(Path::new("out.bam##idx##out.bai"));
/// assert_eq!((data, index, format), (PathBuf::from("out.bam"), PathBuf::from("out.bai"), IndexFormat::Bai));
/// let (data, index, _) = split_index_name(Path::new("out.bam"));
/// assert_eq!((data, index), (PathBuf::from("out.bam"), PathBuf::from("out.bam.csi")));
/// ```
pub fn split_index_name(output: &Path) -> (PathBuf, PathBuf, IndexFormat) {
    let csi = IndexFormat::Csi { min_shift: super::DEFAULT_MIN_SHIFT, depth: 0 };
    let (data, index) = match output.to_str().and_then(|o| o.split_once("##idx##")) {
        Some((data, index)) => (PathBuf::from(data), PathBuf::from(index)),
        None => (output.to_path_buf(), index_path_for(output, csi)),
    };
    let format = if index.extension().is_some_and(|e| e == "bai") { IndexFormat::Bai } else { csi };
    (data, index, format)
}

/// What lies beside a BAM for an index (see [`locate_index`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexLocation {
    /// No index file.
    Missing,
    /// An index file older than the BAM: not to be used.
    Stale(PathBuf),
    /// An index file to use.
    Found(PathBuf),
}

/// The index file beside `bam_path` ([`locate`]'s names), unless it is older than the BAM: a BAM written again after it
/// was indexed has another layout, and htslib does not trust such an index.
pub fn locate_index(bam_path: &Path) -> IndexLocation {
    let Some(found) = locate(bam_path) else { return IndexLocation::Missing };
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (modified(&found), modified(bam_path)) {
        (Some(index), Some(data)) if index < data => IndexLocation::Stale(found),
        _ => IndexLocation::Found(found),
    }
}

/// Reads the index at `path` for `bam`, refusing (with
/// [`Error::IndexMismatch`]) one whose number of references differs from
/// the BAM header's: htslib writes one entry per header reference, so such
/// an index was made for another file, and reading through it would skip
/// data silently.
pub fn load_index<F: Indexed + ?Sized>(bam: &F, path: &Path) -> Result<Index, Error> {
    let index = Index::from_path(path).map_err(|e| Error::from(e).with_path(path))?;
    let (in_index, in_header) = (index.references().len(), bam.header().references.len());
    if in_index != in_header {
        let what = format!("{in_index} references in the index, {in_header} in the header of {}", bam.path().display());
        return Err(Error::IndexMismatch(what).with_path(path));
    }
    Ok(index)
}

/// The index of `bam` if it has one beside it ([`locate_index`], then
/// [`load_index`]), its spans checked against the file
/// ([`verify_index`]). One older than the BAM is used with a warning, as
/// htslib does, after a closer check (each chunk must start at a BGZF
/// block of the file). An index that cannot be read, was made for another
/// file or points outside this one is an error
/// ([`Error::IndexMismatch`] for the last two).
pub fn find_index<F: Indexed + ?Sized>(bam: &F, report: &dyn Report) -> Result<Option<Index>, Error> {
    let Some((index, path, stale)) = find_unchecked_index(bam, report)? else { return Ok(None) };
    verify_index(bam, &index, stale).map_err(|e| e.with_path(&path))?;
    Ok(Some(index))
}

/// [`find_index`] before [`verify_index`]: the index, its path, and
/// whether it is stale (to be checked block by block).
fn find_unchecked_index<F: Indexed + ?Sized>(bam: &F, report: &dyn Report) -> Result<Option<(Index, PathBuf, bool)>, Error> {
    let (path, stale) = match locate_index(bam.path()) {
        IndexLocation::Missing => return Ok(None),
        IndexLocation::Stale(index) => {
            report.warning(Warning::StaleIndex { index: index.clone(), data: bam.path().to_path_buf() });
            (index, true)
        }
        IndexLocation::Found(path) => (path, false),
    };
    let index = load_index(bam, &path)?;
    Ok(Some((index, path, stale)))
}

/// Checks the spans of `index` against `bam`: every offset it holds
/// (chunks, linear index, metadata) lies within the file, so reading
/// through it cannot silently stop short; with `thorough`, each chunk also
/// starts at a BGZF block of the file holding its offset. Fails with
/// [`Error::IndexMismatch`]. Costs no reading of the file unless
/// `thorough` (then one block header per chunk).
pub fn verify_index<F: Indexed + ?Sized>(bam: &F, index: &Index, thorough: bool) -> Result<(), Error> {
    let file = bam.bytes();
    let len = file.len() as u64;
    let names = &bam.header().references;
    for (tid, reference) in index.references().iter().enumerate() {
        let name = names.get(tid).map_or("?", |r| r.name.as_str());
        let outside = |what: &str, at: VirtualOffset| {
            Error::IndexMismatch(format!("{what} of {name} at {at} lies past the end of the file ({len} bytes)"))
        };
        for bin in reference.bins() {
            for chunk in &bin.chunks {
                if chunk.start.compressed() > len || chunk.end.compressed() > len {
                    return Err(outside("a chunk", chunk.start.max(chunk.end)));
                }
                if thorough && chunk.start < chunk.end {
                    let fits = Block::parse(file, chunk.start.compressed())
                        .is_ok_and(|b| u32::from(chunk.start.uncompressed()) <= b.uncompressed_size);
                    if !fits {
                        return Err(Error::IndexMismatch(format!("a chunk of {name} at {} is not the start of a record", chunk.start)));
                    }
                }
            }
        }
        if let Some(&at) = reference.linear_index().iter().find(|o| o.compressed() > len) {
            return Err(outside("the linear index", at));
        }
        if let Some(m) = reference.metadata() {
            if m.ref_beg.compressed() > len || m.ref_end.compressed() > len {
                return Err(outside("the span", m.ref_beg.max(m.ref_end)));
            }
        }
    }
    Ok(())
}

/// The error of a region query on SAM text that no index can describe
/// (plain or gzip-compressed SAM, a pipe, standard input): only a bgzipped
/// SAM file is read by region, through its CSI or BAI. `view`'s wording,
/// for the Python package's readers too.
pub fn sam_not_indexable(path: &Path) -> Error {
    Error::Message(
        "random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files (a bgzipped SAM file is read through its index; plain or gzip SAM, pipes and standard input cannot be: bgzip it to a file, then fasthts index it)".into(),
    )
    .with_path(path)
}

/// The error of a region query on a file (a bgzipped SAM) that has no
/// index beside it and was given none; `view`'s wording.
pub fn no_index_for_regions(path: &Path) -> Error {
    Error::Message("cannot load index (regions are read through the index: fasthts index it first)".into()).with_path(path)
}

/// The index a whole-file job (flagstat, `view -c`) of `bam` reads
/// through, if any. The index is only a way to read in parallel: one that
/// cannot be read or was made for another file means reading sequentially;
/// one that points outside the file ([`verify_index`]) too, and that is
/// reported, as a failed coverage check is.
pub(crate) fn usable_index(bam: &BamFile, report: &dyn Report) -> Option<Index> {
    let (index, _, stale) = find_unchecked_index(bam, report).unwrap_or(None)?;
    match verify_index(bam, &index, stale) {
        Ok(()) => Some(index),
        Err(e) => {
            report.warning(Warning::ReadingSequentially { path: bam.path().to_path_buf(), reason: e.to_string() });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{age, data, scratch, Kept};

    #[test]
    fn index_lookup_skips_stale_and_refuses_foreign_indexes() {
        let dir = scratch("lookup");
        let bam_path = dir.join("a.bam");
        std::fs::copy(data("small.bam"), &bam_path).unwrap();
        let bam = BamFile::open(&bam_path).unwrap();
        let kept = Kept::default();
        assert_eq!(locate_index(&bam_path), IndexLocation::Missing);
        assert!(find_index(&bam, &kept).unwrap().is_none());

        // An index of this file, newer than it: used.
        let bai = dir.join("a.bam.bai");
        std::fs::copy(data("small.bam.bai"), &bai).unwrap();
        assert_eq!(locate_index(&bam_path), IndexLocation::Found(bai.clone()));
        assert!(find_index(&bam, &kept).unwrap().is_some());
        assert!(kept.warnings().is_empty());

        // Older than the BAM: reported, checked block by block, and used.
        age(&bai, 3600);
        assert!(find_index(&bam, &kept).unwrap().is_some());
        assert_eq!(kept.warnings(), [format!("the index file {} is older than the data file {}", bai.display(), bam_path.display())]);
        // Stale and made for another layout: its chunks do not start at blocks.
        let other = dir.join("other.bam");
        crate::command::sort_file(&bam_path, &other, &crate::command::SortFileOptions { level: Some(1), memory_per_thread: 1 << 20, threads: Some(1), ..Default::default() }, &kept).unwrap();
        crate::index::write_index(&crate::index::build(&BamFile::open(&other).unwrap(), crate::index::IndexFormat::Bai).unwrap(), &bai).unwrap();
        let index = load_index(&bam, &bai).unwrap();
        let err = verify_index(&bam, &index, true).unwrap_err().to_string();
        assert!(err.contains("is not the start of a record") || err.contains("past the end of the file"), "{err}");
        age(&bai, 3600);
        assert!(find_index(&bam, &kept).is_err());
        std::fs::remove_file(&bai).unwrap();

        // Made for a file with another number of references: an error.
        std::fs::copy(data("long_ref.bam.csi"), dir.join("a.bam.csi")).unwrap();
        let err = find_index(&bam, &kept).unwrap_err();
        let n_refs = bam.header().references.len();
        assert!(err.to_string().ends_with(&format!("references in the index, {n_refs} in the header of {})", bam_path.display())), "{err}");
        assert!(matches!(err, Error::WithPath { ref source, .. } if matches!(**source, Error::IndexMismatch(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
