//! The errors of SAM text, below the `sam` module that re-exports them
//! (`fasthts::sam::{SamError, RecordError, Field, HeaderError}`).

use std::fmt;
use std::io;

use super::bam::RecordDefect;

/// Everything that can go wrong reading SAM.
#[derive(Debug, thiserror::Error)]
pub enum SamError {
    /// Reading the input failed.
    #[error("error reading SAM: {0}")]
    Io(#[from] io::Error),
    /// A header line is invalid.
    #[error("SAM header line {line}: {source}")]
    Header {
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        #[source]
        source: HeaderError,
    },
    /// A record line cannot be encoded.
    #[error("SAM line {line} (read {name:?}): {source}")]
    Record {
        /// 1-based line number.
        line: u64,
        /// The read name (QNAME, lossily decoded, at most 254 bytes).
        name: String,
        /// What is wrong.
        #[source]
        source: RecordError,
    },
    /// The input is gzip/BGZF-compressed (compressed SAM or BAM), which this
    /// reader does not decode.
    #[error("input is gzip/BGZF-compressed; only plain-text SAM is supported")]
    Compressed,
    /// An encoded record failed the BAM record checks (only for ids past the
    /// header's references, which htslib can produce from odd headers).
    #[error("SAM line {line}: encoded record is invalid: {defect}")]
    InvalidRecord {
        /// 1-based line number.
        line: u64,
        /// The failed check.
        defect: RecordDefect,
    },
}

/// The SAM columns, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Column 1, QNAME.
    Qname,
    /// Column 2, FLAG.
    Flag,
    /// Column 3, RNAME.
    Rname,
    /// Column 4, POS.
    Pos,
    /// Column 5, MAPQ.
    Mapq,
    /// Column 6, CIGAR.
    Cigar,
    /// Column 7, RNEXT.
    Rnext,
    /// Column 8, PNEXT.
    Pnext,
    /// Column 9, TLEN.
    Tlen,
    /// Column 10, SEQ.
    Seq,
    /// Column 11, QUAL.
    Qual,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Qname => "QNAME",
            Field::Flag => "FLAG",
            Field::Rname => "RNAME",
            Field::Pos => "POS",
            Field::Mapq => "MAPQ",
            Field::Cigar => "CIGAR",
            Field::Rnext => "RNEXT",
            Field::Pnext => "PNEXT",
            Field::Tlen => "TLEN",
            Field::Seq => "SEQ",
            Field::Qual => "QUAL",
        })
    }
}

/// Why one SAM line cannot become a BAM record (each is a hard error in
/// htslib 1.16 too).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The line ends before this column (fewer than 11 tab-separated fields).
    #[error("missing {0} field")]
    MissingField(Field),
    /// The column is not followed by a tab where htslib expects one (junk
    /// after a number, an unparsable number, ...).
    #[error("malformed {0} field")]
    MalformedField(Field),
    /// QNAME longer than 254 bytes.
    #[error("query name too long ({0} bytes, at most 254)")]
    NameTooLong(usize),
    /// A reference name is given but the header has no `@SQ` line.
    #[error("no SQ lines present in the header")]
    NoReferences,
    /// htslib's full header parser rejects the header, which makes every
    /// reference name lookup fail.
    #[error("failed to parse header: {0}")]
    HeaderUnparsable(String),
    /// The CIGAR string is invalid.
    #[error("invalid CIGAR: {0}")]
    InvalidCigar(&'static str),
    /// The alignment ends beyond the largest position htslib supports.
    #[error("read ends beyond highest supported position")]
    EndTooLarge,
    /// The CIGAR consumes a different number of query bases than SEQ has.
    #[error("CIGAR and query sequence are of different length (CIGAR {cigar}, SEQ {seq})")]
    CigarSeqMismatch {
        /// Query length of the CIGAR.
        cigar: i64,
        /// Length of SEQ.
        seq: usize,
    },
    /// SEQ longer than `i32::MAX`.
    #[error("read sequence is too long")]
    SeqTooLong,
    /// QUAL has a different length from SEQ.
    #[error("SEQ and QUAL are of different length")]
    SeqQualMismatch,
    /// A QUAL character outside `!`..=`\xa0` (Phred 0..=127).
    #[error("invalid QUAL character")]
    InvalidQual,
    /// An optional field is malformed.
    #[error("invalid aux field: {0}")]
    InvalidAux(&'static str),
    /// An integer optional field does not fit its type.
    #[error("numeric value out of allowed range in aux field")]
    AuxOutOfRange,
    /// POS, PNEXT or TLEN do not fit BAM's 32-bit fields.
    #[error("positional data is too large for BAM format ({0})")]
    PositionTooLarge(&'static str),
    /// A CIGAR of more than 65,535 operations covering 2^28 or more
    /// reference bases cannot be stored in BAM.
    #[error("{n_cigar} CIGAR operations with reference length {ref_len} cannot be written in BAM")]
    LongCigarTooLong {
        /// Number of CIGAR operations.
        n_cigar: u32,
        /// Reference length covered.
        ref_len: i64,
    },
    /// The record would exceed BAM's 2 GiB record size.
    #[error("record too large for BAM")]
    RecordTooLarge,
}

/// Why a SAM header cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// A header line that is not `@HD`, `@SQ`, `@RG`, `@PG` or `@CO`.
    #[error("invalid header line: must start with @HD/@SQ/@RG/@PG/@CO")]
    InvalidLine,
    /// A reference name that is not UTF-8 (the library keeps names as
    /// `String`; htslib would accept it).
    #[error("reference name is not UTF-8")]
    NonUtf8Name,
    /// More references than BAM can count.
    #[error("too many references")]
    TooManyReferences,
}
