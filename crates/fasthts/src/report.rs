//! What a job says besides its result, as it goes: [`Warning`]s and a
//! tool's own progress text, told to a [`Report`] that the front end
//! provides (the CLI prints, the Python package issues Python warnings).
//! Below every job that reports, so that the library's lower layers (the
//! index's lookup, the distributed sort) report alike.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where a job reports what it has to say besides its result, as it
/// happens: the CLI prints, the Python package issues Python warnings.
pub trait Report: Sync {
    /// A warning: something is odd, and the job goes on.
    fn warning(&self, warning: Warning);

    /// Text a tool writes to its standard output as it goes (FACETS
    /// snp-pileup's `-v` and `-p` lines, which end in newlines or `\r`).
    /// Dropped unless the front end shows it.
    fn message(&self, text: &str) {
        let _ = text;
    }
}

/// A closure reports warnings; messages are dropped.
impl<F: Fn(Warning) + Sync> Report for F {
    fn warning(&self, warning: Warning) {
        self(warning)
    }
}

/// A warning from a job. `Display` gives the text the CLI prints after
/// `warning: `.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// A BAM without BGZF's end-of-file marker, as htslib warns.
    MissingEofMarker {
        /// The BAM.
        path: PathBuf,
    },
    /// An index older than its data file: used (its spans checked), as
    /// htslib does, with a warning.
    StaleIndex {
        /// The index.
        index: PathBuf,
        /// Its data file.
        data: PathBuf,
    },
    /// The index did not describe the file, which is read sequentially.
    ReadingSequentially {
        /// The data file.
        path: PathBuf,
        /// How the index failed.
        reason: String,
    },
    /// idxstats found no usable index and counts every record instead.
    CountingEveryRecord {
        /// The data file.
        path: PathBuf,
    },
    /// Sort was asked to index an output whose order is not by position.
    IndexNeedsPositionOrder,
    /// A SAM record htslib warns about as it reads it (and changes as
    /// the warning says: made unmapped, mate reference dropped).
    SamRecord {
        /// The SAM input.
        path: PathBuf,
        /// The record's line, name and warnings.
        warning: crate::sam::RecordWarning,
    },
    /// SAM records with warnings past those reported one by one.
    MoreSamRecords {
        /// The SAM input.
        path: PathBuf,
        /// How many.
        count: u64,
    },
    /// view's `-e` expression failed on records (samtools prints
    /// "Couldn't process filter expression" for each), which are not
    /// selected, as by samtools.
    ExpressionFailed {
        /// How many evaluations failed.
        count: u64,
        /// Why the first did.
        reason: &'static str,
    },
    /// cat found that a BAM did not end in an empty block: its last 28
    /// bytes were copied, as samtools copies them.
    UnexpectedBlockStructure {
        /// The BAM.
        path: PathBuf,
    },
    /// A line samtools prints as it is, in its own words and with its own
    /// prefix (merge's header and tag warnings, which samtools' tests
    /// compare).
    Verbatim {
        /// The line, without its end.
        text: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::MissingEofMarker { path } => write!(f, "{}: EOF marker is absent. The input is probably truncated", path.display()),
            Warning::StaleIndex { index, data } => {
                write!(f, "the index file {} is older than the data file {}", index.display(), data.display())
            }
            Warning::ReadingSequentially { path, reason } => write!(f, "{}: {reason}; reading the file sequentially", path.display()),
            Warning::CountingEveryRecord { path } => {
                write!(f, "no usable index for \"{}\"; counting every record instead", path.display())
            }
            Warning::IndexNeedsPositionOrder => f.write_str("ignoring --write-index as it only works for position sorted files"),
            Warning::SamRecord { path, warning } => {
                write!(f, "{}: SAM line {} (read {:?}): {}", path.display(), warning.line, warning.name, warning.warnings)
            }
            Warning::MoreSamRecords { path, count } => write!(f, "{}: {count} more SAM records with warnings", path.display()),
            Warning::UnexpectedBlockStructure { path } => {
                write!(f, "{}: unexpected block structure (no empty block at its end). Possible output corruption", path.display())
            }
            Warning::ExpressionFailed { count, reason } => {
                write!(f, "the -e expression failed {count} times ({reason}, the first time); those records are not selected, as by samtools")
            }
            Warning::Verbatim { text } => f.write_str(text),
        }
    }
}

/// Reports the record warnings a SAM input met (htslib prints one for each
/// record as it reads it): those kept one by one
/// ([`crate::sam::MAX_KEPT_WARNINGS`]), then how many more.
pub fn report_sam_warnings<R: std::io::Read>(sam: &mut crate::sam::SamReader<R>, path: &Path, report: &dyn Report) {
    let kept = sam.take_warnings();
    let more = sam.warning_count().saturating_sub(kept.len() as u64);
    for warning in kept {
        report.warning(Warning::SamRecord { path: path.to_path_buf(), warning });
    }
    if more > 0 {
        report.warning(Warning::MoreSamRecords { path: path.to_path_buf(), count: more });
    }
}
