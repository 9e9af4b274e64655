//! `quickcheck`: samtools quickcheck's checks, failures and exit status
//! bits.

use crate::bam::BamFile;
use crate::input::{sniff, Kind};
use crate::sam::SamReader;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// How to check files.
#[derive(Clone, Debug, Default)]
pub struct QuickcheckOptions {
    /// Unmapped input: a header without references is fine (samtools' `-u`).
    pub unmapped: bool,
}

/// A check a file failed. `Display` gives samtools' text, which follows
/// the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuickcheckFailure {
    /// The file cannot be opened.
    CannotOpen,
    /// Neither BAM nor SAM.
    NotSequenceData,
    /// The header cannot be read.
    BadHeader,
    /// The header has no references (and `unmapped` is not set).
    NoTargets,
    /// A BAM without BGZF's end-of-file marker.
    MissingEofBlock,
}

impl QuickcheckFailure {
    /// samtools quickcheck's exit status bit for this failure: the exit
    /// status is the OR of the bits of every failure of every file.
    pub fn status(self) -> u8 {
        match self {
            QuickcheckFailure::CannotOpen => 2,
            QuickcheckFailure::NotSequenceData => 4,
            QuickcheckFailure::BadHeader | QuickcheckFailure::NoTargets => 8,
            QuickcheckFailure::MissingEofBlock => 16,
        }
    }
}

impl fmt::Display for QuickcheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuickcheckFailure::CannotOpen => "could not be opened for reading.",
            QuickcheckFailure::NotSequenceData => "was not identified as sequence data.",
            QuickcheckFailure::BadHeader => "caused an error whilst reading its header.",
            QuickcheckFailure::NoTargets => "had no targets in header.",
            QuickcheckFailure::MissingEofBlock => "was missing EOF block when one should be present.",
        })
    }
}

/// samtools quickcheck's checks of the file at `path`: readable, BAM or
/// SAM, a readable header with references, and (BAM) the EOF marker. The
/// failures, in the order found; none when the file passes.
pub fn quickcheck(path: &Path, options: &QuickcheckOptions) -> Vec<QuickcheckFailure> {
    let prefix = std::fs::File::open(path).and_then(|f| {
        let mut v = Vec::new();
        f.take(1 << 16).read_to_end(&mut v).map(|_| v)
    });
    let Ok(prefix) = prefix else { return vec![QuickcheckFailure::CannotOpen] };
    // The number of references, if the header can be read, and whether
    // the EOF marker is missing.
    let (n_references, no_eof_marker) = match sniff(&prefix) {
        Kind::Bam => match BamFile::open(path) {
            Err(_) => (None, false),
            Ok(bam) => (Some(bam.header().references.len()), !bam.has_eof_marker()),
        },
        Kind::Sam => {
            let sam = std::fs::File::open(path).ok().and_then(|f| SamReader::new(f).ok());
            (sam.map(|s| s.header().references.len()), false)
        }
        Kind::Compressed | Kind::Empty | Kind::Unknown => return vec![QuickcheckFailure::NotSequenceData],
    };
    let mut failures = Vec::new();
    match n_references {
        None => failures.push(QuickcheckFailure::BadHeader),
        Some(0) if !options.unmapped => failures.push(QuickcheckFailure::NoTargets),
        Some(_) => {}
    }
    if no_eof_marker {
        failures.push(QuickcheckFailure::MissingEofBlock);
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch};
    use super::*;
    use QuickcheckFailure::*;

    #[test]
    fn samtools_checks() {
        let dir = scratch("quickcheck");
        let check = |p: &Path, unmapped| quickcheck(p, &QuickcheckOptions { unmapped });
        assert_eq!(check(&data("small.bam"), false), []);
        assert_eq!(check(&dir.join("missing.bam"), false), [CannotOpen]);
        std::fs::write(dir.join("text.txt"), "hello\n").unwrap();
        assert_eq!(check(&dir.join("text.txt"), false), [NotSequenceData]);
        // A header without references, and no EOF marker.
        let bytes = std::fs::read(data("small.bam")).unwrap();
        std::fs::write(dir.join("cut.bam"), &bytes[..bytes.len() - 28]).unwrap();
        assert_eq!(check(&dir.join("cut.bam"), false), [MissingEofBlock]);
        std::fs::write(dir.join("bare.sam"), "@HD\tVN:1.6\nr\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n").unwrap();
        assert_eq!(check(&dir.join("bare.sam"), false), [NoTargets]);
        assert_eq!(check(&dir.join("bare.sam"), true), []);
        let statuses: Vec<u8> = [CannotOpen, NotSequenceData, BadHeader, NoTargets, MissingEofBlock].map(|f| f.status()).to_vec();
        assert_eq!(statuses, [2, 4, 8, 8, 16]);
        assert_eq!(NoTargets.to_string(), "had no targets in header.");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
