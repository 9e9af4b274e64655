//! `BamFile` on SAM text in a regular file: plain, bgzipped or
//! gzip-compressed, as the CLI reads them (`fasthts::input`). Each
//! whole-file call reads the file from its start as one stream, inflated
//! ahead and parsed in chunks on the call's threads, records handed on in
//! file order (`SamReader::for_each_record`, flagstat's path for SAM): the
//! same records at any thread count. Regions of a bgzipped SAM are read
//! through its CSI or BAI (given, or beside it, found as the CLI finds a
//! BAM's) with the library's reader (`fasthts::region::sam`), as `fasthts
//! view` reads them; other SAM is refused region queries in one line.

use crate::bam::{Columns, IndexSlot};
use fasthts::bam::Header;
use fasthts::command::{self, Report, Warning};
use fasthts::index::Index;
use fasthts::input::{Format, Input, Peeked};
use fasthts::region::sam::SamGzFile;
use fasthts::region::Indexed;
use fasthts::sam::SamReader;
use fasthts::Error;
use fasthts_io::compression::Compression;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A SAM file opened by `BamFile`.
pub(crate) struct SamFile {
    path: PathBuf,
    header: Header,
    pub(crate) names: Arc<Vec<String>>,
    /// A bgzipped SAM, mapped for region queries (None: not bgzipped).
    pub(crate) regions: Option<Arc<SamGzRegions>>,
    /// A bgzipped SAM without BGZF's end-of-file block.
    missing_eof: bool,
}

/// A bgzipped SAM file read by region through its index.
pub(crate) struct SamGzRegions {
    pub(crate) file: SamGzFile,
    pub(crate) index: IndexSlot,
}

impl SamGzRegions {
    /// Maps the bgzipped SAM at `path` (a regular file); its index is
    /// `index`, else looked for beside it when a region is first read.
    pub(crate) fn open(path: &Path, index: Option<PathBuf>) -> Result<SamGzRegions, Error> {
        Ok(SamGzRegions { file: SamGzFile::open(path)?, index: IndexSlot::new(index) })
    }

    /// The index: the file given, else the usable one beside the SAM, found
    /// and checked as a BAM's; without either, the CLI's error.
    pub(crate) fn index(&self, report: &dyn Report) -> Result<Arc<Index>, Error> {
        self.index.get(&self.file, report, || Err(command::no_index_for_regions(Indexed::path(&self.file))))
    }

    /// The index for a plan of the whole file: as `index`, once checked to
    /// describe the whole file; else (made for a prefix of the file)
    /// reported, and one built in memory instead, in its format.
    pub(crate) fn whole_file_index(&self, report: &dyn Report) -> Result<Arc<Index>, Error> {
        let path = Indexed::path(&self.file);
        let refuse = || Err(command::no_index_for_regions(path));
        self.index.get_whole_file(&self.file, report, refuse, |format| fasthts::index::build_sam(Indexed::bytes(&self.file), path, format))
    }

    /// Whether an index file (given, or beside the file) exists.
    pub(crate) fn has_index_file(&self) -> bool {
        self.index.has_file(Indexed::path(&self.file))
    }
}

/// Whether `format` is SAM text that `SamFile` reads.
pub(crate) fn is_sam_text(format: Format) -> bool {
    matches!(format, Format::Sam | Format::CompressedSam(Compression::Bgzf | Compression::Gzip))
}

impl SamFile {
    /// Reads the header of the SAM text `peeked` (a regular file at `path`,
    /// recognised as SAM text: see `is_sam_text`). A bgzipped one is mapped
    /// for region queries; `index`, the index file to read them through, is
    /// loaded now (a foreign or unreadable one fails here, as for a BAM);
    /// other SAM cannot have one.
    pub(crate) fn open(peeked: Peeked, path: &Path, index: Option<PathBuf>, report: &dyn Report) -> Result<SamFile, Error> {
        let bgzf = peeked.format() == Format::CompressedSam(Compression::Bgzf);
        let missing_eof = bgzf && peeked.ends_with_eof_marker() == Some(false);
        if !bgzf && index.is_some() {
            return Err(command::sam_not_indexable(path));
        }
        // A bgzipped SAM is mapped, its header read there once; other SAM
        // text is read as a stream for its header.
        let (header, regions) = if bgzf {
            let regions = SamGzRegions::open(path, index)?;
            if regions.index.given.is_some() {
                regions.index(report)?;
            }
            (Indexed::header(&regions.file).clone(), Some(Arc::new(regions)))
        } else {
            (sam_reader(peeked.open()?, path)?.header().clone(), None)
        };
        let names = Arc::new(header.references.iter().map(|r| r.name.clone()).collect());
        Ok(SamFile { path: path.to_path_buf(), header, names, regions, missing_eof })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn header(&self) -> &Header {
        &self.header
    }

    /// As for a BAM (and as htslib warns when it reaches the end of a
    /// bgzipped SAM): a file without BGZF's end-of-file block is warned about.
    pub(crate) fn warn_if_truncated(&self, report: &dyn Report) {
        if self.missing_eof {
            report.warning(Warning::MissingEofMarker { path: self.path.clone() });
        }
    }

    /// The file from its first record, decompressed ahead on the current
    /// pool's threads.
    pub(crate) fn records(&self) -> Result<Box<SamReader<Box<dyn Read + Send>>>, Error> {
        sam_reader(fasthts::input::open(&self.path)?, &self.path)
    }

    /// Every record's columns, in file order, parsed on the current pool;
    /// the text of each record warning (at most `MAX_KEPT_WARNINGS`, then
    /// one line counting the rest) is added to `warnings`.
    pub(crate) fn whole_file_columns(&self, warnings: &mut Vec<String>) -> Result<Columns, Error> {
        let mut sam = self.records()?;
        let mut c = Columns::with_capacity(0);
        let read = sam.for_each_record(|r| {
            c.push(&r);
            Ok::<(), Error>(())
        });
        let kept = sam.take_warnings();
        warnings.extend(kept.iter().map(|w| crate::alignment::sam_warning_text(&self.path, w)));
        let more = sam.warning_count().saturating_sub(kept.len() as u64);
        if more > 0 {
            warnings.push(format!("{}: {more} more SAM records had warnings", self.path.display()));
        }
        read.map_err(|e| e.with_path(&self.path))?;
        Ok(c)
    }

    /// The bgzipped SAM and its index, for a region query (`fetch`/`columns`
    /// with a region, `columns_many`, `plan`); SAM that is not bgzipped, or
    /// has no index, is refused with the CLI's error.
    pub(crate) fn regions(&self, report: &dyn Report) -> Result<(Arc<SamGzRegions>, Arc<Index>), Error> {
        let Some(regions) = &self.regions else { return Err(command::sam_not_indexable(&self.path)) };
        Ok((regions.clone(), regions.index(report)?))
    }
}

/// The SAM reader of an input opened from `path`, which was SAM text
/// when it was looked at.
fn sam_reader(input: Input, path: &Path) -> Result<Box<SamReader<Box<dyn Read + Send>>>, Error> {
    match input {
        Input::Sam(reader) => Ok(reader),
        _ => Err(Error::Message("is no longer SAM text (the file has changed since it was opened)".into()).with_path(path)),
    }
}
