//! A whole alignment file read from its first record, batch by batch, by a
//! cursor that owns it: the sequential counterpart of
//! [`crate::region::indexed::Cursor`], for callers that read with pauses
//! between batches, each batch on whatever thread asks (the Python
//! package's iterators).
//!
//! Whatever the format ([`Input`]: a mapped BAM, a BAM stream, CRAM, SAM
//! text), records come back in file order through [`WholeFileCursor::fill`].
//!
//! ```
//! use fasthts::whole_file::WholeFileCursor;
//! # let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam"));
//! let mut cursor = WholeFileCursor::open(path, &Default::default())?;
//! let mut n = 0;
//! while cursor.fill(1000, &mut |_| n += 1)? > 0 {}
//! assert!(n > 0);
//! # Ok::<(), fasthts::Error>(())
//! ```

use crate::bam::{BamFile, BamStream, RecordRef};
use crate::bgzf::VirtualOffset;
use crate::report::Warning;
use crate::cram::{CramOptions, CramReader};
use crate::input::{self, Input};
use crate::sam::SamReader;
use crate::Error;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Encoded bytes a SAM batch reads at a time (at least; until it holds
/// the records asked for).
const SAM_BATCH_BYTES: usize = 1 << 20;

/// An alignment file read from its first record, in batches. It owns what
/// it reads: between batches a mapped BAM keeps only where to read on (a
/// virtual offset), a stream its reader.
pub struct WholeFileCursor {
    path: PathBuf,
    source: Source,
    /// SAM record warnings met and not yet taken.
    warnings: Vec<Warning>,
}

enum Source {
    /// A mapped BAM from `next` on (`None`: read to its end).
    Mapped {
        bam: BamFile,
        next: Option<VirtualOffset>,
    },
    Stream(Box<BamStream>),
    Cram(Box<CramReader>),
    Sam(Box<SamReader<Box<dyn Read + Send>>>),
}

impl WholeFileCursor {
    /// Reads `input`, opened from `path` (errors and warnings name it),
    /// from its first record.
    pub fn new(input: Input, path: &Path) -> WholeFileCursor {
        let source = match input {
            Input::Bam(bam) => {
                let next = Some(bam.first_record_offset());
                Source::Mapped { bam, next }
            }
            Input::Stream(s) => Source::Stream(s),
            Input::Cram(c) => Source::Cram(c),
            Input::Sam(s) => Source::Sam(s),
        };
        WholeFileCursor { path: path.to_path_buf(), source, warnings: Vec::new() }
    }

    /// Opens the file at `path` ([`input::open_with`]) and reads it from its
    /// first record.
    pub fn open(path: &Path, cram: &CramOptions) -> Result<WholeFileCursor, Error> {
        Ok(WholeFileCursor::new(input::open_with(path, cram)?, path))
    }

    /// The name errors give the file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Calls `f` on the next records, at least `max` of them unless the
    /// file ends first (a mapped BAM reads on while the next record is
    /// already inflated, so that the next batch inflates no block again;
    /// SAM text is read in chunks of encoded bytes). Returns how many; 0
    /// at the end of the file.
    pub fn fill(&mut self, max: usize, f: &mut dyn FnMut(&RecordRef<'_>)) -> Result<usize, Error> {
        let mut n = 0;
        match &mut self.source {
            Source::Mapped { bam, next } => {
                let Some(start) = *next else { return Ok(0) };
                let wrap = |e: crate::bam::BamError| Error::from(e).with_path(bam.path());
                let mut records = bam.records_from(start)?;
                *next = None;
                while n < max || records.next_is_loaded() {
                    match records.next_record().map_err(wrap)? {
                        Some(r) => f(&r),
                        None => return Ok(n),
                    }
                    n += 1;
                }
                *next = Some(records.record_end());
            }
            Source::Stream(s) => {
                while n < max {
                    let Some(r) = s.next_record()? else { break };
                    f(&r);
                    n += 1;
                }
            }
            Source::Cram(c) => {
                while n < max {
                    let Some(r) = c.next_record()? else { break };
                    f(&r);
                    n += 1;
                }
            }
            Source::Sam(reader) => {
                let mut encoded = Vec::new();
                while n < max {
                    encoded.clear();
                    let read = reader.next_batch(&mut encoded, SAM_BATCH_BYTES);
                    let path = &self.path;
                    self.warnings.extend(reader.take_warnings().into_iter().map(|w| Warning::SamRecord { path: path.clone(), warning: w }));
                    let got = read.map_err(|e| Error::from(e).with_path(path))?;
                    if got == 0 {
                        break;
                    }
                    let mut rest = &encoded[..];
                    for _ in 0..got {
                        let size = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                        // The SAM reader made and checked the record.
                        f(&RecordRef::new_prevalidated(&rest[4..4 + size]));
                        rest = &rest[4 + size..];
                    }
                    n += got;
                }
            }
        }
        Ok(n)
    }

    /// The warnings about SAM records met so far (htslib's, one per record
    /// it changes as it reads it), each given once.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn small() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/small.bam")
    }

    /// Every record's bytes, read in batches of `max` (at least).
    fn read_all(cursor: &mut WholeFileCursor, max: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let mut got = 0;
            let n = cursor
                .fill(max, &mut |r| {
                    out.push(r.as_bytes().to_vec());
                    got += 1;
                })
                .unwrap();
            assert_eq!(n, got);
            if n == 0 {
                return out;
            }
            assert!(n >= max || cursor.fill(max, &mut |_| panic!("a short batch ends the file")).unwrap() == 0);
            if n < max {
                return out;
            }
        }
    }

    #[test]
    fn batches_of_a_mapped_bam_stream_and_sam_give_the_file_in_order() {
        let bam = BamFile::open(small()).unwrap();
        let mut want = Vec::new();
        crate::bam::scan(&bam, |r, _| {
            want.push(r.as_bytes().to_vec());
            Ok(())
        })
        .unwrap();
        assert!(want.len() > 100);
        for max in [1, 7, 4096] {
            let mut mapped = WholeFileCursor::open(&small(), &CramOptions::default()).unwrap();
            assert!(matches!(mapped.source, Source::Mapped { .. }));
            assert_eq!(read_all(&mut mapped, max), want, "mapped, {max}");
            let stream = BamStream::bgzf(&small(), Box::new(std::fs::File::open(small()).unwrap()), 1).unwrap();
            let mut stream = WholeFileCursor::new(Input::Stream(Box::new(stream)), &small());
            assert_eq!(read_all(&mut stream, max), want, "stream, {max}");
        }
        // The same records as SAM text, with a record htslib warns about.
        let dir = std::env::temp_dir().join(format!("fasthts-whole-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sam = dir.join("x.sam");
        let mut text = Vec::new();
        crate::sam::format_header(bam.header(), &mut text).unwrap();
        let name = &bam.header().references[0].name;
        writeln!(text, "r1\t0\t{name}\t5\t60\t4M\tnowhere\t1\t0\tACGT\t*").unwrap();
        std::fs::write(&sam, &text).unwrap();
        let mut cursor = WholeFileCursor::open(&sam, &CramOptions::default()).unwrap();
        assert_eq!(read_all(&mut cursor, 1).len(), 1);
        let warnings = cursor.take_warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].to_string().starts_with(&sam.display().to_string()), "{}", warnings[0]);
        assert!(cursor.take_warnings().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
