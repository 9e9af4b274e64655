//! The errors of BAM data, below the `bam` module that re-exports them
//! (`fasthts::bam::BamError`, `fasthts::bam::record::RecordDefect`).

use fasthts_io::bgzf::{BgzfError, VirtualOffset};
use std::fmt;

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

/// Why a record's bytes cannot be a BAM record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordDefect {
    /// `block_size` is below the 32 bytes of fixed fields.
    BlockSizeTooSmall,
    /// `block_size` is larger than any valid record.
    BlockSizeTooLarge,
    /// `l_read_name` is zero.
    EmptyReadName,
    /// `l_seq` is negative.
    NegativeSequenceLength,
    /// Name, CIGAR, sequence and qualities do not fit in `block_size`.
    FieldsOverrunRecord,
    /// Reference id outside `-1..n_ref`.
    RefIdOutOfRange,
    /// Mate reference id outside `-1..n_ref`.
    MateRefIdOutOfRange,
    /// A mapped record whose CIGAR consumes a different number of bases
    /// than its sequence has.
    CigarSequenceMismatch,
}

impl fmt::Display for RecordDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordDefect::BlockSizeTooSmall => "block_size below 32",
            RecordDefect::BlockSizeTooLarge => "block_size too large",
            RecordDefect::EmptyReadName => "l_read_name is 0",
            RecordDefect::NegativeSequenceLength => "negative l_seq",
            RecordDefect::FieldsOverrunRecord => "name, CIGAR, sequence and qualities overrun block_size",
            RecordDefect::RefIdOutOfRange => "reference id out of range",
            RecordDefect::MateRefIdOutOfRange => "mate reference id out of range",
            RecordDefect::CigarSequenceMismatch => "CIGAR and query sequence lengths differ",
        })
    }
}
