//! [`BgzfSamReader`]: a bgzipped SAM held whole (mapped or in memory), read
//! line by line with the BGZF virtual offset after each line, which is what
//! an index of it records (htslib's `sam_index`).

use super::header::HeaderBuilder;
use super::reader::qname_of;
use super::{encode_record_with, Positions, RefNames, SamError, SamHeader};
use crate::bam::{Header, RecordRef};
use crate::bgzf::{BgzfError, BlockReader, VirtualOffset};
use std::io;

/// Uncompressed bytes asked for at a time while looking for a line end.
const FILL_STEP: usize = 1 << 16;

/// Reads the records of a bgzipped SAM (the whole compressed file in
/// `file`) in order, on the current rayon pool's threads for inflating.
pub struct BgzfSamReader<'a> {
    reader: BlockReader<'a>,
    sam_header: SamHeader,
    first_record: VirtualOffset,
    line_no: u64,
}

pub(crate) fn bgzf_error(e: BgzfError) -> SamError {
    let kind = if matches!(e, BgzfError::Truncated { .. }) { io::ErrorKind::UnexpectedEof } else { io::ErrorKind::InvalidData };
    SamError::Io(io::Error::new(kind, e))
}

impl<'a> BgzfSamReader<'a> {
    /// Reads the header: the leading lines that start with `@`. The first
    /// record's offset is htslib's: the start of the first record line,
    /// except in a file without header lines, where htslib has read the
    /// first line (to look at it) before the index starts, and it is the
    /// offset after that line.
    pub fn new(file: &'a [u8]) -> Result<BgzfSamReader<'a>, SamError> {
        let reader = BlockReader::new(file, VirtualOffset::default()).map_err(bgzf_error)?;
        let mut r = BgzfSamReader {
            reader,
            sam_header: SamHeader { header: Header::default(), names: RefNames::default(), warnings: Vec::new() },
            first_record: VirtualOffset::default(),
            line_no: 0,
        };
        let mut b = HeaderBuilder::default();
        let mut header_lines = 0;
        while let Some((len, next)) = r.next_line()? {
            let line = &r.reader.available()[..len];
            if line.first() != Some(&b'@') {
                if header_lines == 0 {
                    r.first_record = r.reader.virtual_offset_at(next);
                } else {
                    r.first_record = r.reader.virtual_offset();
                }
                break;
            }
            header_lines += 1;
            r.line_no += 1;
            b.add_line(line)?;
            r.reader.consume(next);
            r.first_record = r.reader.virtual_offset();
        }
        r.sam_header = b.finish()?;
        Ok(r)
    }

    /// The BAM header.
    pub fn header(&self) -> &Header {
        &self.sam_header.header
    }

    /// Where the records start, as htslib's index has it (see [`BgzfSamReader::new`]).
    pub fn first_record_offset(&self) -> VirtualOffset {
        self.first_record
    }

    /// The next line as (its length without the line end, the length to
    /// consume), made available in the reader; `None` at the end.
    fn next_line(&mut self) -> Result<Option<(usize, usize)>, SamError> {
        next_line(&mut self.reader)
    }

    /// The parsed header (the BAM header and the name lookup of records),
    /// for a reader of this file's records from other offsets
    /// ([`crate::region::sam::SamGzFile`]).
    pub fn into_header(self) -> SamHeader {
        self.sam_header
    }

    /// Calls `f` with each record, its position and end (0-based, 64-bit:
    /// SAM's positions may lie past BAM's 32-bit fields, which then hold
    /// -1 in the record, see [`Positions::Unread`]) and the virtual offset
    /// after its line; returns the offset at the end of the data (after the
    /// last line).
    pub fn for_each_record<E, F>(&mut self, mut f: F) -> Result<VirtualOffset, E>
    where
        E: From<SamError>,
        F: FnMut(RecordRef<'_>, i64, i64, VirtualOffset) -> Result<(), E>,
    {
        let n_ref = self.sam_header.header.references.len();
        let mut record = Vec::new();
        while let Some((len, next)) = self.next_line()? {
            self.line_no += 1;
            let line = &self.reader.available()[..len];
            record.clear();
            if let Err(source) = encode_record_with(line, &self.sam_header.names, &mut record, Positions::Unread) {
                return Err(E::from(SamError::Record { line: self.line_no, name: qname_of(line), source }));
            }
            let rec = RecordRef::new(&record[4..], n_ref)
                .map_err(|defect| E::from(SamError::InvalidRecord { line: self.line_no, defect }))?;
            // A placed record at -1 had a POS past 2^31: read it again from the text.
            let pos = match (rec.ref_id(), rec.pos()) {
                (0.., -1) => line.split(|&c| c == b'\t').nth(3).and_then(parse_i64).map_or(-1, |p| p - 1),
                (_, p) => i64::from(p),
            };
            let end_pos = pos + (rec.end_pos() - i64::from(rec.pos()));
            let end = self.reader.virtual_offset_at(next);
            f(rec, pos, end_pos, end)?;
            self.reader.consume(next);
        }
        Ok(self.reader.virtual_offset())
    }
}

/// The next line of `reader` as (its length without the line end, the
/// length to consume), made available in the reader; `None` at the end.
pub(crate) fn next_line(reader: &mut BlockReader<'_>) -> Result<Option<(usize, usize)>, SamError> {
    let mut searched = 0;
    loop {
        let have = reader.available();
        if let Some(k) = have[searched..].iter().position(|&c| c == b'\n') {
            let nl = searched + k;
            let len = if nl > 0 && have[nl - 1] == b'\r' { nl - 1 } else { nl };
            return Ok(Some((len, nl + 1)));
        }
        searched = have.len();
        let got = reader.fill(searched + FILL_STEP).map_err(bgzf_error)?;
        if got == searched {
            // The end: a last line without a line end, or nothing.
            return Ok((got > 0).then_some((got, got)));
        }
    }
}

/// A decimal POS (the encoder has already read it as a number).
fn parse_i64(field: &[u8]) -> Option<i64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_those_of_line_ends_across_blocks() {
        let mut text = String::from("@SQ\tSN:c\tLN:100000\n");
        for i in 0..5000 {
            text.push_str(&format!("r{i}\t0\tc\t{}\t60\t4M\t*\t0\t0\tACGT\tIIII\n", i + 1));
        }
        let bytes = crate::bgzf::compress_all(text.as_bytes(), 1);
        let mut r = BgzfSamReader::new(&bytes).unwrap();
        assert_eq!(r.header().references.len(), 1);
        // Each end offset, read back from the file, is where the next line starts.
        let mut ends = Vec::new();
        let end = r
            .for_each_record(|rec, pos, _, at| {
                assert_eq!(i64::from(rec.pos()), pos);
                ends.push((rec.pos(), at));
                Ok::<(), SamError>(())
            })
            .unwrap();
        assert_eq!(ends.len(), 5000);
        for w in ends.windows(2).step_by(397) {
            let mut b = BlockReader::new(&bytes, w[0].1).unwrap();
            b.fill(8).unwrap();
            assert!(b.available().starts_with(format!("r{}\t", w[1].0).as_bytes()));
        }
        assert_eq!(ends.last().unwrap().1, end);
        assert!(u64::from(r.first_record_offset()) > 0);
    }

    #[test]
    fn without_header_lines_the_records_start_after_the_first() {
        let text = b"r1\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\nr2\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI";
        let bytes = crate::bgzf::compress_all(text, 1);
        let mut r = BgzfSamReader::new(&bytes).unwrap();
        let first_line = text.iter().position(|&c| c == b'\n').unwrap() as u64 + 1;
        assert_eq!(u64::from(r.first_record_offset()), first_line);
        let mut n = 0;
        let end = r.for_each_record(|_, _, _, _| Ok::<(), SamError>(n += 1)).unwrap();
        assert_eq!((n, end.uncompressed()), (2, 0), "a last line without a line end; ends at a block end");
    }
}
