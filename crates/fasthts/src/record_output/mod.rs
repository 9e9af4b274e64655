//! Records written out as BAM, SAM, BGZF-compressed SAM or CRAM
//! ([`OutputFormat`]), with the index built as a BAM is written: what sort
//! writes its sorted records through, and view its selected ones.

mod format;
mod sam_text;
mod writer;

pub use format::{cram_output_options, parse_output_options, OutputFormat};
pub use writer::{AlignmentWriter, WriteFormat};

use crate::bam::{Header, RecordRef};
use crate::bgzf::BgzfWriter;
use crate::index::{Index, IndexBuilder, IndexFormat};
use crate::Error;
use sam_text::SamText;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A CRAM output's particulars (with [`OutputFormat::Cram`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CramOutput {
    /// The name the user gave the output, `-` for standard output: htslib
    /// writes it into the file definition (so samtools' bytes need it).
    pub name: PathBuf,
    /// The reference and htslib's format options.
    pub options: crate::cram::CramWriteOptions,
    /// Where htslib saves the `.crai` it builds while writing (`--write-index`).
    pub index: Option<PathBuf>,
}

impl Default for CramOutput {
    /// Standard output, the reference as htslib finds it, no index.
    fn default() -> Self {
        CramOutput { name: PathBuf::from("-"), options: Default::default(), index: None }
    }
}

/// Records between progress counter updates.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 12;

/// The record (with its `block_size` prefix) stored at `offset` of an arena.
#[inline]
pub(crate) fn record_at(data: &[u8], offset: usize) -> &[u8] {
    let n = u32::from_le_bytes(data[offset..offset + 4].try_into().expect("4 bytes")) as usize;
    &data[offset..offset + 4 + n]
}

/// Records written out as BAM, SAM, BGZF-compressed SAM or CRAM under a header
/// already edited as the command edits it, with the index built as the
/// BAM is written when asked (sort's output; `view`'s outputs).
pub(crate) struct RecordOutput<'p, W: Write> {
    out: Out<W>,
    sink: Sink<'p>,
}

impl<'p, W: Write> RecordOutput<'p, W> {
    /// Writes the header (for SAM only with `sam_header`; BAM always has
    /// one) and readies the records' writer; `index`: build an index of a
    /// BAM output (ignored for SAM). A CRAM output is opened with
    /// [`RecordOutput::open_cram`].
    pub(crate) fn open(
        header: &Header,
        format: OutputFormat,
        level: u32,
        index: Option<IndexFormat>,
        sam_header: bool,
        out: W,
    ) -> Result<RecordOutput<'p, W>, Error> {
        let mut w = match format {
            OutputFormat::Bam => {
                let mut w = BgzfWriter::new(out, level);
                w.write_all(&header.to_bytes())?;
                w.end_block()?;
                Out::Bgzf(w)
            }
            OutputFormat::Cram => return Err(Error::Message("internal error: a CRAM output is opened with open_cram".into())),
            OutputFormat::Sam | OutputFormat::SamGz => {
                let mut text = Vec::new();
                if sam_header {
                    crate::sam::format_header(header, &mut text)?;
                }
                let mut w = if format == OutputFormat::Sam { Out::Plain(out) } else { Out::Bgzf(BgzfWriter::new(out, level)) };
                w.write_all(&text)?;
                w
            }
        };
        let mut sink = Sink {
            index: None,
            text: (format != OutputFormat::Bam).then(|| SamText::new(header)),
            edit: None,
            scratch: Vec::new(),
            long_cigar: Vec::new(),
            progress: None,
            written: 0,
        };
        if let (Some(index), OutputFormat::Bam, Out::Bgzf(w)) = (index, format, &mut w) {
            w.track_virtual_offsets();
            let start = w.virtual_offset_of(w.uncompressed_position()).expect("header blocks are written");
            let builder = IndexBuilder::new(crate::index::format_for(header, index), header.references.len(), start);
            sink.index = Some((builder, VecDeque::new()));
        }
        Ok(RecordOutput { out: w, sink })
    }

    /// Writes the header of a CRAM output and readies the records' writer
    /// (htslib's, on the pool's thread count; see [`crate::cram::CramWriter`]).
    pub(crate) fn open_cram(header: &Header, cram: &CramOutput, out: W) -> Result<RecordOutput<'p, W>, Error> {
        let threads = rayon::current_num_threads();
        let writer = crate::cram::CramWriter::create(&cram.name, header, &cram.options, threads, cram.index.as_deref(), out)?;
        let sink = Sink { index: None, text: None, edit: None, scratch: Vec::new(), long_cigar: Vec::new(), progress: None, written: 0 };
        Ok(RecordOutput { out: Out::Cram(writer), sink })
    }

    /// Records may end with 64-bit positions ([`crate::sam::Positions::Wide`]):
    /// a SAM output prints them (a BAM or CRAM output has no room for them).
    pub(crate) fn keep_wide_positions(&mut self) {
        if let Some(text) = &mut self.sink.text {
            text.wide = true;
        }
    }

    /// Counts the records written in `counter` (every [`PROGRESS_EVERY`]
    /// records, and at the end), for a progress display to read.
    pub(crate) fn count_written(&mut self, counter: Option<&'p AtomicU64>) {
        self.sink.progress = counter;
    }

    /// Has `edit` change each record's data (after `block_size`) before
    /// it is written.
    pub(crate) fn edit_records(&mut self, edit: fn(&mut [u8])) {
        self.sink.edit = Some(edit);
    }

    /// Writes one record (`block_size` and data).
    pub(crate) fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        self.sink.write(&mut self.out, record)
    }

    /// Writes SAM lines formatted elsewhere, after the records given before.
    pub(crate) fn write_text(&mut self, text: &[u8]) -> Result<(), Error> {
        if let Some(batch) = &mut self.sink.text {
            batch.flush(&mut self.out)?;
        }
        Ok(self.out.write_all(text)?)
    }

    /// Writes the SAM text of the records whose formatting was handed to
    /// the pool (all but the last few given), or returns the error of the
    /// first that failed. A caller whose input fails calls this first: the
    /// formatting of records read before the failure, done in the
    /// background, would have failed first when done as they were read.
    pub(crate) fn write_formatted(&mut self) -> Result<(), Error> {
        match &mut self.sink.text {
            Some(text) => text.write_submitted(&mut self.out),
            None => Ok(()),
        }
    }

    /// Writes what is batched, ends the output and returns the index, if
    /// asked for, and the writer, flushed.
    pub(crate) fn finish(mut self) -> Result<(Option<Index>, W), Error> {
        let index = self.sink.finish(&mut self.out)?;
        Ok((index, self.out.finish()?))
    }
}

/// A record written whose end offset is not known yet (its block is still
/// being compressed).
struct Pending {
    ref_id: i32,
    beg: i64,
    end: i64,
    mapped: bool,
    /// Uncompressed position just past the record.
    end_pos: u64,
}

/// The output stream: BGZF blocks (BAM, SAM.gz), plain bytes (SAM) or
/// htslib's CRAM encoder (records, not bytes).
enum Out<W: Write> {
    Bgzf(BgzfWriter<W>),
    Plain(W),
    Cram(crate::cram::CramWriter<W>),
}

impl<W: Write> Out<W> {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Out::Bgzf(w) => w.write_all(bytes),
            Out::Plain(w) => w.write_all(bytes),
            Out::Cram(_) => Err(std::io::Error::other("internal error: bytes written to a CRAM output")),
        }
    }

    fn finish(self) -> Result<W, Error> {
        match self {
            Out::Bgzf(w) => Ok(w.finish()?),
            Out::Plain(mut w) => Ok(w.flush().map(|()| w)?),
            Out::Cram(w) => w.finish(),
        }
    }
}

/// Where sorted records go: the output (BAM records, or SAM lines), and
/// the index builder when `--write-index` asked for one (BAM only).
struct Sink<'p> {
    index: Option<(IndexBuilder, VecDeque<Pending>)>,
    text: Option<SamText>,
    /// Counts the records written, for a progress display (sort's).
    progress: Option<&'p AtomicU64>,
    written: u64,
    /// Applied to each record's data before it is written (sort's
    /// minimiser order: unplaced records get back the fields that carried
    /// their hash).
    edit: Option<fn(&mut [u8])>,
    scratch: Vec<u8>,
    /// A record whose CIGAR is held in its CG tag, as htslib writes it.
    long_cigar: Vec<u8>,
}

impl Sink<'_> {
    fn write<W: Write>(&mut self, out: &mut Out<W>, record: &[u8]) -> Result<(), Error> {
        let record = if let Some(edit) = self.edit {
            self.scratch.clear();
            self.scratch.extend_from_slice(record);
            edit(&mut self.scratch[4..]);
            &self.scratch[..]
        } else {
            record
        };
        match (&mut self.text, &mut *out) {
            (_, Out::Cram(w)) => w.write_record(&record[4..])?,
            (Some(text), _) => text.push(record, out)?,
            (None, _) => {
                // A CIGAR held in the CG tag goes out as htslib writes it.
                self.long_cigar.clear();
                let r = RecordRef::new_prevalidated(&record[4..]);
                match crate::bam::record::append_as_htslib_writes(&r, &mut self.long_cigar) {
                    Ok(true) => out.write_all(&self.long_cigar)?,
                    Ok(false) => out.write_all(record)?,
                    Err(e) => return Err(Error::Message(e.to_string())),
                }
            }
        }
        self.written += 1;
        if self.written % PROGRESS_EVERY == 0 {
            if let Some(p) = self.progress {
                p.store(self.written, Relaxed);
            }
        }
        if let (Some((builder, pending)), Out::Bgzf(w)) = (&mut self.index, out) {
            let r = RecordRef::new_prevalidated(&record[4..]);
            pending.push_back(Pending {
                ref_id: r.ref_id(),
                beg: i64::from(r.pos()),
                end: r.end_pos(),
                mapped: r.flag() & crate::bam::flags::UNMAPPED == 0,
                end_pos: w.uncompressed_position(),
            });
            Self::drain(builder, pending, w)?;
        }
        Ok(())
    }

    /// Indexes the pending records whose blocks have been written.
    fn drain<W: Write>(builder: &mut IndexBuilder, pending: &mut VecDeque<Pending>, w: &mut BgzfWriter<W>) -> Result<(), Error> {
        let mut last = None;
        while let Some(p) = pending.front() {
            let Some(end) = w.virtual_offset_of(p.end_pos) else { break };
            builder.push(p.ref_id, p.beg, p.end, end, p.mapped)?;
            last = Some(p.end_pos);
            pending.pop_front();
        }
        if let Some(pos) = last {
            w.forget_before(pos);
        }
        Ok(())
    }

    /// Writes what is still batched, flushes the writer's last block and
    /// completes the index.
    fn finish<W: Write>(mut self, out: &mut Out<W>) -> Result<Option<Index>, Error> {
        if let Some(p) = self.progress {
            p.store(self.written, Relaxed);
        }
        if let Some(text) = &mut self.text {
            text.flush(out)?;
        }
        let (Some((mut builder, mut pending)), Out::Bgzf(w)) = (self.index, out) else { return Ok(None) };
        w.end_block()?;
        Self::drain(&mut builder, &mut pending, w)?;
        debug_assert!(pending.is_empty());
        let end = w.virtual_offset_of(w.uncompressed_position()).expect("all blocks are written");
        Ok(Some(builder.finish(end)?))
    }
}
