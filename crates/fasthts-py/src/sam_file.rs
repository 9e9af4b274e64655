//! `BamFile` on SAM text in a regular file: plain, bgzipped or
//! gzip-compressed, as the CLI reads them (`fasthts::input`). Each
//! whole-file call reads the file from its start as one stream, inflated
//! ahead and parsed in chunks on the call's threads, records handed on in
//! file order (`SamReader::for_each_record`, flagstat's path for SAM): the
//! same records at any thread count. Regions are not read: that needs an
//! index of the text, which no library reader queries yet.

use crate::bam::Columns;
use fasthts::bam::Header;
use fasthts::command::{Report, Warning};
use fasthts::input::{Format, Input, Peeked};
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
    bgzf: bool,
    /// A bgzipped SAM without BGZF's end-of-file block.
    missing_eof: bool,
}

/// Whether `format` is SAM text that `SamFile` reads.
pub(crate) fn is_sam_text(format: Format) -> bool {
    matches!(format, Format::Sam | Format::CompressedSam(Compression::Bgzf | Compression::Gzip))
}

impl SamFile {
    /// Reads the header of the SAM text `peeked` (a regular file at `path`,
    /// recognised as SAM text: see `is_sam_text`).
    pub(crate) fn open(peeked: Peeked, path: &Path) -> Result<SamFile, Error> {
        let bgzf = peeked.format() == Format::CompressedSam(Compression::Bgzf);
        let missing_eof = bgzf && peeked.ends_with_eof_marker() == Some(false);
        let reader = sam_reader(peeked.open()?, path)?;
        let header = reader.header().clone();
        let names = Arc::new(header.references.iter().map(|r| r.name.clone()).collect());
        Ok(SamFile { path: path.to_path_buf(), header, names, bgzf, missing_eof })
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

    /// The error of every region query (`fetch`/`columns` with a region,
    /// `columns_many`, `plan`).
    pub(crate) fn no_regions(&self) -> Error {
        let why = if self.bgzf {
            "region queries on bgzipped SAM are not supported here (BamFile reads it whole; a .csi beside it is not used)"
        } else {
            "region queries on SAM that is not bgzipped are not possible (it cannot be indexed; BamFile reads it whole)"
        };
        Error::Message(format!("{why}: an indexed BAM or CRAM is needed (fasthts sort --write-index -o OUT.bam converts)"))
            .with_path(&self.path)
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
