//! `quickcheck`: samtools quickcheck's checks, failures and exit status
//! bits.

use crate::input::{self, Format, Input};
use crate::sam::SamReader;
use fasthts_io::compression;
use std::fmt;
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
    /// A BAM without BGZF's end-of-file marker, a CRAM without its EOF
    /// container.
    MissingEofBlock,
    /// Looking for the end-of-file marker failed (a CRAM cut inside its
    /// header).
    EofCheckFailed,
    /// htslib could not close the file cleanly (a CRAM cut off).
    CloseFailed,
}

impl QuickcheckFailure {
    /// samtools quickcheck's exit status bit for this failure: the exit
    /// status is the OR of the bits of every failure of every file.
    pub fn status(self) -> u8 {
        match self {
            QuickcheckFailure::CannotOpen => 2,
            QuickcheckFailure::NotSequenceData => 4,
            QuickcheckFailure::BadHeader | QuickcheckFailure::NoTargets => 8,
            QuickcheckFailure::MissingEofBlock | QuickcheckFailure::EofCheckFailed => 16,
            QuickcheckFailure::CloseFailed => 32,
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
            QuickcheckFailure::EofCheckFailed => "caused an error whilst checking for EOF block.",
            QuickcheckFailure::CloseFailed => "did not close cleanly.",
        })
    }
}

/// samtools quickcheck's checks of the file at `path` (`-` for standard
/// input; a pipe or FIFO is read up to its header): readable, sequence
/// data (BAM, SAM, and as htslib FASTA/FASTQ, which have no references),
/// a readable header with references, and (a BAM file) the EOF marker;
/// CRAM is checked by htslib itself, as samtools does.
/// The failures, in the order found; none when the file passes.
pub fn quickcheck(path: &Path, options: &QuickcheckOptions) -> Vec<QuickcheckFailure> {
    let Ok(peeked) = input::peek(path) else { return vec![QuickcheckFailure::CannotOpen] };
    // The number of references, if the header can be read, and whether
    // the EOF marker is missing.
    let (n_references, no_eof_marker) = match peeked.format() {
        // htslib opens an index, then fails to read it as data.
        Format::Index(_) => return vec![QuickcheckFailure::CannotOpen],
        Format::Sequences(_) => (Some(0), false),
        Format::CompressedSam(kind) => {
            // Its header is all that is read, as samtools does; a bgzipped
            // file (not gzip, not a stream) must end with the EOF marker.
            let no_eof_marker = kind == compression::Compression::Bgzf && peeked.ends_with_eof_marker() == Some(false);
            let sam = compression::decompress(peeked.into_reader(), 1).ok().and_then(|(text, _)| SamReader::new(text).ok());
            (sam.map(|s| s.header().references.len()), no_eof_marker)
        }
        Format::Bam(_) | Format::Sam => {
            // A remote BGZF BAM's end is fetched on its own, as htslib seeks to it.
            let remote_eof = peeked.format() == Format::Bam(compression::Compression::Bgzf) && peeked.is_remote();
            let no_remote_eof = remote_eof && peeked.ends_with_eof_marker() == Some(false);
            match peeked.open() {
                Err(_) => (None, false),
                Ok(Input::Bam(bam)) => (Some(bam.header().references.len()), !bam.has_eof_marker()),
                // A stream's end is not looked at (htslib cannot seek to it).
                Ok(opened) => (Some(opened.header().references.len()), no_remote_eof),
            }
        }
        Format::Cram => return quickcheck_cram(path, peeked, options),
        Format::Vcf | Format::OtherCompressed(_) | Format::Empty | Format::Unknown => return vec![QuickcheckFailure::NotSequenceData],
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

/// samtools quickcheck's steps on a CRAM input, through htslib: open,
/// header, EOF container (a regular file only), close.
fn quickcheck_cram(path: &Path, peeked: input::Peeked, options: &QuickcheckOptions) -> Vec<QuickcheckFailure> {
    let stream = (!peeked.is_regular_file() || path.as_os_str() == "-").then(|| peeked.into_reader());
    let Some(check) = crate::cram::check(path, stream) else { return vec![QuickcheckFailure::CannotOpen] };
    let mut failures = Vec::new();
    match check.references {
        None => failures.push(QuickcheckFailure::BadHeader),
        Some(0) if !options.unmapped => failures.push(QuickcheckFailure::NoTargets),
        Some(_) => {}
    }
    match check.eof {
        e if e < 0 => failures.push(QuickcheckFailure::EofCheckFailed),
        0 => failures.push(QuickcheckFailure::MissingEofBlock),
        _ => {}
    }
    if !check.closed {
        failures.push(QuickcheckFailure::CloseFailed);
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
