//! `BamFile` on SAM text in a regular file: plain, bgzipped or
//! gzip-compressed, as the CLI reads them (`fasthts::input`). Each
//! whole-file call reads the file from its start as one stream, inflated
//! ahead and parsed in chunks on the call's threads, records handed on in
//! file order (`SamReader::for_each_record`, flagstat's path for SAM): the
//! same records at any thread count. Regions of a bgzipped SAM are read
//! through its CSI or BAI (given, or beside it, found as the CLI finds a
//! BAM's) with the library's reader (`fasthts::region::sam`), as `fasthts
//! view` reads them; other SAM is refused region queries in one line.

use crate::columns::Columns;
use fasthts::bam::Header;
use fasthts::command::{self, Report, Warning};
use fasthts::input::{Format, Input, Peeked};
use fasthts::region::sam::SamGzFile;
use fasthts::region::Indexed;
use fasthts::sam::SamReader;
use fasthts::Error;
use fasthts_io::compression::Compression;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A SAM file opened by `BamFile`.
pub(crate) struct SamFile {
    path: PathBuf,
    header: Header,
    /// A bgzipped SAM without BGZF's end-of-file block.
    missing_eof: bool,
}

/// Whether `format` is SAM text that `SamFile` reads.
pub(crate) fn is_sam_text(format: Format) -> bool {
    matches!(format, Format::Sam | Format::CompressedSam(Compression::Bgzf | Compression::Gzip))
}

/// Whether `format` is bgzipped SAM (read by region through its index).
pub(crate) fn is_bgzipped(format: Format) -> bool {
    format == Format::CompressedSam(Compression::Bgzf)
}

impl SamFile {
    /// Reads the header of the SAM text `peeked` (a regular file at `path`,
    /// recognised as SAM text: see `is_sam_text`): a bgzipped one from its
    /// mapping, other SAM text as a stream. Only a bgzipped one is read by
    /// region, and so can be `indexed` (given an index).
    pub(crate) fn open(peeked: Peeked, path: &Path, indexed: bool) -> Result<SamFile, Error> {
        let bgzf = is_bgzipped(peeked.format());
        let missing_eof = bgzf && peeked.ends_with_eof_marker() == Some(false);
        if !bgzf && indexed {
            return Err(command::sam_not_indexable(path));
        }
        let header =
            if bgzf { Indexed::header(&SamGzFile::open(path)?).clone() } else { sam_reader(peeked.open()?, path)?.header().clone() };
        Ok(SamFile { path: path.to_path_buf(), header, missing_eof })
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
        let more = sam.warning_count().saturating_sub(kept.len() as u64);
        warnings.extend(kept.into_iter().map(|warning| Warning::SamRecord { path: self.path.clone(), warning }.to_string()));
        if more > 0 {
            warnings.push(format!("{}: {more} more SAM records had warnings", self.path.display()));
        }
        read.map_err(|e| e.with_path(&self.path))?;
        Ok(c)
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
