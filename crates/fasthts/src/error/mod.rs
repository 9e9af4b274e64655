//! The library's error type, and below it the error types it wraps, of
//! BAM data, SAM text and indexes; the `bam`, `sam` and `index` modules
//! re-export them (`fasthts::bam::BamError`, `fasthts::sam::SamError`,
//! `fasthts::index::IndexError`, ...).

pub mod bam;
pub mod index;
pub mod sam;

use bam::BamError;
use fasthts_io::bgzf::BgzfError;
use index::IndexError;
use sam::SamError;
use std::io;
use std::path::{Path, PathBuf};

/// Any error fasthts reports. Layers add context by wrapping
/// (`WithPath`), so a message reads `in.bam: truncated BGZF block at offset 123`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error.
    #[error("{}", fasthts_io::os_message(.0))]
    Io(#[from] io::Error),
    /// A directory was given where a file was expected.
    #[error("is a directory")]
    IsADirectory,
    /// Damaged BGZF data.
    #[error(transparent)]
    Bgzf(#[from] BgzfError),
    /// Damaged or invalid BAM data.
    #[error(transparent)]
    Bam(#[from] BamError),
    /// Unparsable SAM text.
    #[error(transparent)]
    Sam(#[from] SamError),
    /// A damaged, unusable or unbuildable index.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The index does not describe the data file.
    #[error("the index does not match the data file ({0})")]
    IndexMismatch(String),
    /// An argument given to a job is not valid: an option value, a region,
    /// an output name, or options that do not go together. (The Python
    /// package raises `ValueError` for these.)
    #[error("{0}")]
    InvalidArgument(String),
    /// Anything else, described.
    #[error("{0}")]
    Message(String),
    /// A message that says all there is to say about an underlying error
    /// (`Failed to read VCF file: x.vcf: No such file or directory`), kept
    /// for callers that tell errors apart by kind (the Python package
    /// raises `FileNotFoundError` for it).
    #[error("{message}")]
    Described {
        /// The whole message.
        message: String,
        /// The error it describes.
        source: Box<Error>,
    },
    /// An error about a particular file.
    #[error("{}: {source}", path.display())]
    WithPath {
        /// The file concerned.
        path: PathBuf,
        /// What went wrong.
        source: Box<Error>,
    },
}

impl From<fasthts_io::PathError> for Error {
    fn from(e: fasthts_io::PathError) -> Error {
        Error::Io(e.source).with_path(e.path)
    }
}

impl Error {
    /// Wraps this error with the file it concerns, unless it names that
    /// file already (an index error does: `x.csi: index corrupt`, not
    /// `x.csi: x.csi: index corrupt`).
    pub fn with_path(self, path: impl AsRef<Path>) -> Error {
        if self.path() == Some(path.as_ref()) {
            return self;
        }
        Error::WithPath { path: path.as_ref().to_path_buf(), source: Box::new(self) }
    }

    /// The file this error names first, if any.
    fn path(&self) -> Option<&Path> {
        match self {
            Error::WithPath { path, .. } | Error::Index(IndexError::Io { path, .. } | IndexError::WithPath { path, .. }) => Some(path),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_named_once() {
        let corrupt = IndexError::Tabix.with_path("x.csi");
        assert_eq!(Error::from(corrupt).with_path("x.csi").to_string(), "x.csi: TBI (tabix) indexes are not supported; only BAI and CSI");
        let io = Error::Io(io::Error::from(io::ErrorKind::NotFound)).with_path("a.bam");
        assert_eq!(io.with_path("a.bam").to_string().matches("a.bam").count(), 1);
        // Another file is still named.
        assert!(Error::from(IndexError::Tabix.with_path("x.csi")).with_path("x.bam").to_string().starts_with("x.bam: x.csi: "));
    }
}
