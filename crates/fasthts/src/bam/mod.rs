//! BAM: header, zero-copy records, and memory-mapped files.

pub mod binning;
mod file;
mod header;
mod reader;
pub mod record;
mod scan;
mod stream;

pub use file::BamFile;
pub use header::{Header, Reference};
pub use reader::RecordReader;
pub use scan::{scan, RecordPlace};
pub use stream::BamStream;
pub use record::{flags, Aux, AuxValue, Cigar, CigarOp, RecordRef};

use crate::bgzf::{BgzfError, VirtualOffset};
use record::RecordDefect;

/// What can be wrong with BAM data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BamError {
    /// Damaged or truncated compression layer.
    #[error(transparent)]
    Bgzf(#[from] BgzfError),
    /// The file is empty.
    #[error("empty file, not BAM")]
    Empty,
    /// The data does not start with `BAM\1`.
    #[error("not a BAM file (bad magic)")]
    NotBam,
    /// The header ends early.
    #[error("truncated BAM header (in the {0})")]
    TruncatedHeader(&'static str),
    /// A header field is impossible.
    #[error("invalid BAM header: {0}")]
    InvalidHeader(&'static str),
    /// The data ends inside a record.
    #[error("truncated BAM record at virtual offset {offset}")]
    TruncatedRecord {
        /// Where the incomplete record starts.
        offset: VirtualOffset,
    },
    /// A record sorts before records that precede it in a file read as
    /// coordinate-sorted.
    #[error("record at virtual offset {offset} is out of coordinate order")]
    OutOfOrder {
        /// Where the record starts.
        offset: VirtualOffset,
    },
    /// A stream ends inside a record.
    #[error("truncated BAM record at uncompressed offset {offset}")]
    TruncatedStreamRecord {
        /// Where the incomplete record starts in the decompressed stream.
        offset: u64,
    },
    /// A record's fields are inconsistent, in a stream.
    #[error("invalid BAM record at uncompressed offset {offset}: {defect}")]
    InvalidStreamRecord {
        /// Where the record starts in the decompressed stream.
        offset: u64,
        /// What is wrong with it.
        defect: RecordDefect,
    },
    /// A record's fields are inconsistent.
    #[error("invalid BAM record at virtual offset {offset}: {defect}")]
    InvalidRecord {
        /// Where the record starts.
        offset: VirtualOffset,
        /// What is wrong with it.
        defect: RecordDefect,
    },
}
