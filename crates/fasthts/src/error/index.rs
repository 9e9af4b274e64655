//! Errors of the index layer, below the `index` module that re-exports
//! them (`fasthts::index::IndexError`).

use std::path::PathBuf;

/// What went wrong reading, building or writing a BAI/CSI index.
///
/// Decoding errors name the byte offset in the index's (uncompressed) byte
/// stream; builder errors repeat samtools' wording so that users who know
/// `samtools index` recognise them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// An I/O error on an index file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file being read or written.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Any other error, with the file it concerns.
    #[error("{}: {source}", path.display())]
    WithPath {
        /// The index file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: Box<IndexError>,
    },
    /// A BGZF-compressed index (CSI) could not be inflated.
    #[error("index is not valid BGZF: {0}")]
    Bgzf(#[from] fasthts_io::bgzf::BgzfError),
    /// The first four bytes are neither `BAI\1` nor `CSI\1`.
    #[error("not a BAI or CSI index: magic bytes {found:02x?}")]
    BadMagic {
        /// The bytes found.
        found: Vec<u8>,
    },
    /// A tabix index, which this crate does not read.
    #[error("TBI (tabix) indexes are not supported; only BAI and CSI")]
    Tabix,
    /// The data ended in the middle of a field.
    #[error(
        "index truncated at byte {offset}: {what} needs {needed} bytes, only {available} remain"
    )]
    Truncated {
        /// Offset (in the uncompressed stream) where the field starts.
        offset: u64,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the input.
        available: u64,
        /// The field being read.
        what: &'static str,
    },
    /// A count read from the file is negative or cannot fit in the bytes left.
    #[error(
        "index corrupt at byte {offset}: {what} is {count}, but only {remaining} bytes remain"
    )]
    AbsurdCount {
        /// Offset of the count.
        offset: u64,
        /// The count field.
        what: &'static str,
        /// The value read (as a signed 64-bit number).
        count: i64,
        /// Bytes left after the count.
        remaining: u64,
    },
    /// The same bin appears twice for one reference.
    #[error("index corrupt: bin {bin} appears twice for reference #{reference}")]
    DuplicateBin {
        /// Zero-based reference id.
        reference: usize,
        /// The repeated bin number.
        bin: u32,
    },
    /// The metadata pseudo-bin does not hold exactly two chunks.
    #[error("index corrupt: metadata pseudo-bin of reference #{reference} has {chunks} chunks, expected 2")]
    BadMetadata {
        /// Zero-based reference id.
        reference: usize,
        /// Chunks found.
        chunks: usize,
    },
    /// CSI parameters this crate cannot represent.
    #[error("unsupported CSI parameters: min_shift {min_shift}, depth {depth} (need depth <= 10 and min_shift + 3 * depth <= 62)")]
    UnsupportedCsi {
        /// Minimum interval shift read.
        min_shift: i64,
        /// Depth read.
        depth: i64,
    },
    /// Records out of coordinate order within a reference (samtools' message,
    /// with one-based positions and reference number).
    #[error("Unsorted positions on sequence #{}: {} followed by {}", tid + 1, previous + 1, next + 1)]
    Unsorted {
        /// Zero-based reference id.
        tid: i32,
        /// Zero-based position of the previous record.
        previous: i64,
        /// Zero-based position of this record.
        next: i64,
    },
    /// A reference's records are not contiguous in the file.
    #[error("Chromosome blocks not continuous")]
    NotContinuous {
        /// Zero-based reference id met again.
        tid: i32,
    },
    /// A placed record after records without a coordinate.
    #[error("NO_COOR reads not in a single block at the end {tid} {last_tid}")]
    NoCoorNotAtEnd {
        /// Reference id of the offending record.
        tid: i32,
        /// Reference id of the record before it.
        last_tid: i32,
    },
    /// A record ends before it begins.
    #[error("Invalid record on sequence #{}: end {end} < begin {}", tid + 1, beg + 1)]
    InvalidRecord {
        /// Zero-based reference id.
        tid: i32,
        /// Zero-based start.
        beg: i64,
        /// Exclusive end.
        end: i64,
    },
    /// Coordinates beyond what the index format can address (samtools'
    /// message; a BAI addresses 2^29 bases).
    #[error("Region {beg}..{end} cannot be stored in a {} index. {}", if *is_csi { "csi" } else { "bai" }, if *is_csi { "Please check headers match the data" } else { "Try using a csi index" })]
    OutOfRange {
        /// Zero-based start.
        beg: i64,
        /// Exclusive end.
        end: i64,
        /// Whether the index being built is a CSI.
        is_csi: bool,
    },
    /// A record's reference id is not in the header (samtools reports the
    /// file as corrupted).
    #[error("record has reference id {tid}, but the header has {n_refs} references")]
    InvalidReference {
        /// The reference id found.
        tid: i32,
        /// References in the header.
        n_refs: usize,
    },
    /// A bin would hold more chunks than the format can count.
    #[error("bin {bin} of sequence #{} has too many chunks for the index format", tid + 1)]
    TooManyChunks {
        /// Zero-based reference id.
        tid: i32,
        /// The bin.
        bin: u32,
    },
}

impl IndexError {
    /// Wraps this error with the path of the index file it concerns.
    pub fn with_path(self, path: impl Into<PathBuf>) -> Self {
        match self {
            IndexError::Io { .. } | IndexError::WithPath { .. } => self,
            other => IndexError::WithPath {
                path: path.into(),
                source: Box::new(other),
            },
        }
    }
}
