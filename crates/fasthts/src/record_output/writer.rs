//! [`AlignmentWriter`]: records written one at a time, as pysam's
//! `AlignmentFile` opened for writing writes them (the Python binding's
//! write side): a BAM in htslib's blocks (a record starts a block rather
//! than straddle two) compressed as pysam's htslib compresses them (the
//! system zlib), or SAM text; the output complete or absent.

use crate::bam::{Header, RecordRef, Reference};
use crate::bgzf::BgzfWriter;
use crate::output::TempOutput;
use crate::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an [`AlignmentWriter`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteFormat {
    /// BAM at zlib `level` (0–9; htslib's default is 6).
    Bam {
        /// zlib's scale; 0 stores the data in BGZF blocks (pysam's `wb0`, `wbu`).
        level: u32,
    },
    /// SAM text, header first (none for a header without text: htslib's
    /// `sam_hdr_write` writes nothing for one, as pysam's
    /// `reference_names=` with `add_sq_text=False` makes).
    Sam {
        /// The header has text (even empty); false: no text at all.
        header_text: bool,
    },
    /// CRAM 3.1, encoded by htslib ([`crate::cram::CramWriter`]) against
    /// `reference` (None: as htslib finds it, else embedded).
    Cram {
        /// The reference FASTA.
        reference: Option<PathBuf>,
    },
}

enum Stream {
    Bam(BgzfWriter<Box<dyn Write + Send>>),
    Sam(Box<dyn Write + Send>),
    Cram(crate::cram::CramWriter<Box<dyn Write + Send>>),
}

/// An alignment file being written record by record: to a temporary name
/// beside the path, renamed into place by [`AlignmentWriter::finish`]
/// (dropped unfinished, or failed, it leaves nothing), or to standard
/// output for the path `-`.
pub struct AlignmentWriter {
    stream: Option<Stream>,
    temp: Option<TempOutput>,
    path: PathBuf,
    references: Arc<[Reference]>,
    /// The record (or SAM line) being written, reused.
    scratch: Vec<u8>,
}

impl AlignmentWriter {
    /// Creates `path` (`-`: standard output) and writes `header`, as
    /// htslib's `sam_hdr_write` does. `pool` compresses BAM blocks (None:
    /// rayon's current pool; a CRAM is encoded on as many threads of
    /// htslib's). Errors name the path.
    pub fn create(
        path: &Path,
        header: &Header,
        format: WriteFormat,
        pool: Option<Arc<rayon::ThreadPool>>,
    ) -> Result<AlignmentWriter, Error> {
        let (temp, sink): (Option<TempOutput>, Box<dyn Write + Send>) = if path == Path::new("-") {
            (None, Box::new(std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())))
        } else {
            let (temp, file) = TempOutput::create(path)?;
            (Some(temp), Box::new(std::io::BufWriter::with_capacity(1 << 16, file)))
        };
        let mut w = AlignmentWriter {
            stream: None,
            temp,
            path: path.to_path_buf(),
            references: header.references.clone().into(),
            scratch: Vec::new(),
        };
        let stream = match format {
            WriteFormat::Bam { level } => {
                let mut bgzf = BgzfWriter::as_htslib_with_zlib(sink, level);
                if let Some(pool) = pool {
                    bgzf = bgzf.on_pool(pool);
                }
                // bam_hdr_write: the header, then the block ends.
                let r = bgzf.write_all(&header.to_bytes()).and_then(|()| bgzf.end_block());
                r.map_err(|e| w.error(e.into()))?;
                Stream::Bam(bgzf)
            }
            WriteFormat::Sam { header_text } => {
                let mut sink = sink;
                let mut text = Vec::new();
                if header_text {
                    crate::sam::format_header(header, &mut text).map_err(|e| w.error(e))?;
                }
                sink.write_all(&text).map_err(|e| w.error(e.into()))?;
                Stream::Sam(sink)
            }
            WriteFormat::Cram { reference } => {
                let threads = pool.as_ref().map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
                // CRAM 3.1, pysam's default (its htslib's; samtools 1.16's is 3.0).
                let options = crate::cram::CramWriteOptions { reference, options: vec!["version=3.1".into()], ..Default::default() };
                // Its errors name the path already.
                Stream::Cram(crate::cram::CramWriter::create(path, header, &options, threads, None, sink)?)
            }
        };
        w.stream = Some(stream);
        Ok(w)
    }

    fn error(&self, e: Error) -> Error {
        e.with_path(&self.path)
    }

    /// Writes one record (its data, without `block_size`) as htslib's
    /// `sam_write1` writes it; returns what that returns: the bytes of
    /// the BAM record (`block_size` included) or of the SAM line; 0 for CRAM.
    pub fn write(&mut self, record: &[u8]) -> Result<usize, Error> {
        let r = RecordRef::new_prevalidated(record);
        self.scratch.clear();
        let result = match self.stream.as_mut() {
            None => return Err(Error::InvalidArgument(format!("{}: write to a closed file", self.path.display()))),
            Some(Stream::Bam(w)) => {
                // A CIGAR held in the CG tag goes out as htslib writes it.
                let rewritten =
                    crate::bam::record::append_as_htslib_writes(&r, &mut self.scratch).map_err(|e| Error::Message(e.to_string()))?;
                if !rewritten {
                    self.scratch.extend_from_slice(&(record.len() as u32).to_le_bytes());
                    self.scratch.extend_from_slice(record);
                }
                w.write_unsplit(&self.scratch).map_err(Error::from)
            }
            Some(Stream::Sam(w)) => match crate::sam::format_record(&r, &self.references, &mut self.scratch) {
                Ok(()) => w.write_all(&self.scratch).map_err(Error::from),
                Err(e) => Err(e),
            },
            // Its errors name the path already.
            Some(Stream::Cram(w)) => return w.write_record(record).map(|()| 0),
        };
        match result {
            Ok(()) => Ok(self.scratch.len()),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Ends the output (a BAM's EOF block) and renames it into place.
    pub fn finish(mut self) -> Result<(), Error> {
        let ended = match self.stream.take() {
            None => return Ok(()),
            Some(Stream::Bam(w)) => w.finish().and_then(|mut inner| inner.flush()).map_err(Error::from),
            Some(Stream::Sam(mut w)) => w.flush().map_err(Error::from),
            // Its errors name the path already.
            Some(Stream::Cram(w)) => w.finish().and_then(|mut inner| inner.flush().map_err(|e| self.error(e.into()))),
        };
        ended.map_err(|e| if matches!(e, Error::WithPath { .. }) { e } else { self.error(e) })?;
        if let Some(temp) = self.temp.take() {
            temp.commit()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::BamFile;
    use crate::test_support::{data, scratch};

    /// The records of `path`'s BAM, each with its data as read.
    fn records(path: &Path) -> Vec<Vec<u8>> {
        let bam = BamFile::open(path).unwrap();
        let mut reader = bam.records().unwrap();
        let mut out = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            out.push(r.as_bytes().to_vec());
        }
        out
    }

    #[test]
    fn a_bam_appears_whole_on_finish_and_not_before() {
        let dir = scratch("alignment-writer");
        let source = data("small.bam");
        let header = BamFile::open(&source).unwrap().header().clone();
        let want = records(&source);
        let out = dir.join("out.bam");
        let mut w = AlignmentWriter::create(&out, &header, WriteFormat::Bam { level: 1 }, None).unwrap();
        for r in &want {
            assert_eq!(w.write(r).unwrap(), r.len() + 4);
        }
        assert!(!out.exists(), "the output is visible before it is finished");
        w.finish().unwrap();
        assert_eq!(records(&out), want);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "a temporary is left beside the output");

        // Dropped unfinished (an error in the caller): nothing is left.
        let unfinished = dir.join("unfinished.bam");
        let mut w = AlignmentWriter::create(&unfinished, &header, WriteFormat::Sam { header_text: true }, None).unwrap();
        w.write(&want[0]).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }
}
