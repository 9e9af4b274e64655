//! SAM text written behind the reading: records formatted in batches on
//! the pool.

use super::{record_at, Out};
use crate::bam::{Header, RecordRef};
use crate::Error;
use std::collections::VecDeque;
use std::io::Write;

/// SAM output: records are gathered into batches, each formatted by a job
/// on the pool while the caller reads on, and written in order.
///
/// Formatting in the caller's thread (even with a batch shared out over
/// the threads) left reading, routing and writing records on one core and
/// the pool idle meanwhile: `view -@2` of a BAM to SAM ran on one core,
/// as fast as at `-@1`. Now the caller only copies records into a batch
/// and hands full ones to the pool; jobs format them (the caller helping
/// when it waits), and the oldest is written as soon as it is done, so
/// that reading, inflating and formatting overlap. At most a few batches
/// are in flight; their buffers are reused.
pub(super) struct SamText {
    references: std::sync::Arc<[crate::bam::Reference]>,
    /// The batch being gathered: records, each with its `block_size`.
    staged: Vec<u8>,
    count: usize,
    /// Batches handed to the pool, oldest first; each answers on its channel.
    in_flight: VecDeque<std::sync::mpsc::Receiver<TextBatch>>,
    /// Most batches in flight before the caller waits for the oldest.
    max_in_flight: usize,
    /// Written batches, for reuse.
    spare: Vec<TextBatch>,
    /// The records may end with 64-bit positions ([`crate::sam::Positions::Wide`]).
    pub(super) wide: bool,
    /// A staged record does (the batch is then written one by one, here).
    staged_wide: bool,
    line: Vec<u8>,
    /// A line of 64-bit positions, put together.
    edited: Vec<u8>,
}

/// A batch of records and, once a job has formatted them, their text (or
/// the first failing record's error: then no text).
#[derive(Default)]
struct TextBatch {
    records: Vec<u8>,
    text: Vec<u8>,
    result: Option<Error>,
}

impl TextBatch {
    /// The same bytes as [`crate::sam::format_record`] on each record in turn.
    fn format(&mut self, references: &[crate::bam::Reference]) {
        self.text.clear();
        self.result = None;
        let mut at = 0;
        while at < self.records.len() {
            let record = record_at(&self.records, at);
            at += record.len();
            if let Err(e) = crate::sam::format_record(&RecordRef::new_prevalidated(&record[4..]), references, &mut self.text) {
                self.text.clear();
                self.result = Some(e);
                return;
            }
        }
    }
}

impl SamText {
    /// Records per batch at most.
    const BATCH: usize = 1 << 14;
    /// Record bytes per batch at most: small batches keep the threads
    /// evenly busy and the memory in flight small (a few MiB).
    const BATCH_BYTES: usize = 1 << 20;

    pub(super) fn new(header: &Header) -> SamText {
        SamText {
            references: header.references.clone().into(),
            staged: Vec::new(),
            count: 0,
            in_flight: VecDeque::new(),
            // Two per thread: one formatting, one done or queued behind it.
            max_in_flight: 2 * rayon::current_num_threads() + 2,
            spare: Vec::new(),
            wide: false,
            staged_wide: false,
            line: Vec::new(),
            edited: Vec::new(),
        }
    }

    pub(super) fn push<W: Write>(&mut self, record: &[u8], out: &mut Out<W>) -> Result<(), Error> {
        self.staged.extend_from_slice(record);
        self.staged_wide |= self.wide && crate::sam::wide_positions_len(&record[4..]) > 0;
        self.count += 1;
        if self.count == Self::BATCH || self.staged.len() >= Self::BATCH_BYTES {
            if self.staged_wide {
                return self.flush(out);
            }
            self.submit();
            while self.in_flight.len() >= self.max_in_flight {
                self.write_oldest(out)?;
            }
        }
        Ok(())
    }

    /// Hands the staged records (if any) to the pool as one batch.
    fn submit(&mut self) {
        if self.count == 0 {
            return;
        }
        let mut batch = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut batch.records, &mut self.staged);
        self.staged.clear();
        self.count = 0;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let references = self.references.clone();
        rayon::spawn(move || {
            batch.format(&references);
            let _ = tx.send(batch);
        });
        self.in_flight.push_back(rx);
    }

    /// Waits for the oldest batch in flight (running pool work meanwhile:
    /// on a pool thread, its job may be queued behind this very caller)
    /// and writes its text, or returns its error.
    fn write_oldest<W: Write>(&mut self, out: &mut Out<W>) -> Result<(), Error> {
        let rx = self.in_flight.pop_front().expect("a batch is in flight");
        let mut batch = fasthts_io::pool::recv_helping(&rx);
        let result = match batch.result.take() {
            Some(e) => Err(e),
            None => out.write_all(&batch.text).map_err(Error::from),
        };
        self.spare.push(batch);
        result
    }

    /// Writes the batches handed to the pool so far (not the one being
    /// gathered), or returns the first one's formatting error.
    pub(super) fn write_submitted<W: Write>(&mut self, out: &mut Out<W>) -> Result<(), Error> {
        while !self.in_flight.is_empty() {
            self.write_oldest(out)?;
        }
        Ok(())
    }

    /// Writes every record given so far, in order.
    pub(super) fn flush<W: Write>(&mut self, out: &mut Out<W>) -> Result<(), Error> {
        if !self.staged_wide {
            self.submit();
        }
        while !self.in_flight.is_empty() {
            self.write_oldest(out)?;
        }
        if self.staged_wide {
            return self.flush_wide(out);
        }
        Ok(())
    }
}

impl SamText {
    /// Writes a batch that holds records of 64-bit positions one by one
    /// ([`crate::sam::format_wide_record`]).
    fn flush_wide<W: Write>(&mut self, out: &mut Out<W>) -> Result<(), Error> {
        let mut at = 0;
        while at < self.staged.len() {
            let record = record_at(&self.staged, at);
            at += record.len();
            self.edited.clear();
            crate::sam::format_wide_record(&record[4..], &self.references, &mut self.edited, &mut self.line)?;
            out.write_all(&self.edited)?;
        }
        self.staged.clear();
        self.count = 0;
        self.staged_wide = false;
        Ok(())
    }
}
