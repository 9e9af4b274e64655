//! Whole-file record scans with inflate and record walking overlapped.
//!
//! A pull reader ([`super::RecordReader`]) inflates a batch on all threads,
//! then walks it on one, leaving the other threads idle during the walk.
//! `scan` instead walks batch *k* while jobs on the pool inflate the next
//! few batches, one job per batch ([`crate::bgzf::inflate_ahead`]): no
//! thread waits for another at a batch end, and a sequential pass over a
//! BAM without an index runs near the inflate bound.

use super::record::{RecordDefect, RecordRef, MAX_RECORD_SIZE};
use super::{BamError, BamFile};
use crate::bgzf::{inflate_ahead, AheadBatch, AheadError, VirtualOffset};
use crate::Error;


/// Where the record handed to a [`scan`] callback lies in the file.
#[derive(Clone, Copy)]
pub struct RecordPlace<'b> {
    batch: &'b AheadBatch,
    start: usize,
    end: usize,
}

impl RecordPlace<'_> {
    /// Virtual offset of the record's first byte.
    pub fn start(&self) -> VirtualOffset {
        self.batch.virtual_offset(self.start)
    }

    /// Virtual offset just past the record, canonical as htslib's
    /// `bgzf_tell` after reading it.
    pub fn end(&self) -> VirtualOffset {
        self.batch.virtual_offset(self.end)
    }
}

/// Calls `f` on every record of `bam` from the first, in file order. The
/// callback runs on the calling pool thread while batches further on are
/// inflated on the pool; an error it returns stops the scan. Returns the
/// virtual offset where reading stopped (htslib's `bgzf_tell` at end of
/// file).
pub fn scan<F>(bam: &BamFile, mut f: F) -> Result<VirtualOffset, Error>
where
    F: FnMut(&RecordRef<'_>, RecordPlace<'_>) -> Result<(), Error> + Send,
{
    let n_ref = bam.header().references.len();
    let wrap = |e: BamError| Error::from(e).with_path(bam.path());
    let walked = inflate_ahead(bam.bytes(), bam.first_record_offset(), bam.is_mapped(), |batch| walk(batch, n_ref, &mut f, &wrap));
    match walked {
        Ok(end) => match end.left_over {
            Some(offset) => Err(wrap(BamError::TruncatedRecord { offset })),
            None => Ok(end.stop),
        },
        Err(AheadError::Bgzf(e)) => Err(wrap(e.into())),
        Err(AheadError::Use(e)) => Err(e),
    }
}

/// Walks complete records of `batch`, leaving a partial one unread.
/// Record defects are reported through `wrap` (which names the file);
/// the callback's own errors pass through as they are.
fn walk<F>(batch: &mut AheadBatch, n_ref: usize, f: &mut F, wrap: &impl Fn(BamError) -> Error) -> Result<(), Error>
where
    F: FnMut(&RecordRef<'_>, RecordPlace<'_>) -> Result<(), Error>,
{
    let mut p = batch.pos();
    let result = loop {
        let rest = &batch.data()[p..];
        if rest.len() < 4 {
            break Ok(());
        }
        let size = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        if size > MAX_RECORD_SIZE {
            break Err(wrap(BamError::InvalidRecord { offset: batch.virtual_offset(p), defect: RecordDefect::BlockSizeTooLarge }));
        }
        if rest.len() < 4 + size {
            break Ok(());
        }
        let rec = match RecordRef::new(&rest[4..4 + size], n_ref) {
            Ok(r) => r,
            Err(defect) => break Err(wrap(BamError::InvalidRecord { offset: batch.virtual_offset(p), defect })),
        };
        if let Err(e) = f(&rec, RecordPlace { batch, start: p, end: p + 4 + size }) {
            break Err(e);
        }
        p += 4 + size;
    };
    batch.set_pos(p);
    result
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bam::record::tests::encode;
    use crate::bam::{Header, Reference};
    use crate::bgzf::{BgzfWriter, Block};
    use std::io::Write;

    /// A BAM of one 100 Mb reference holding `records` (encoded, without
    /// their `block_size`), the header in its own block.
    pub(crate) fn bam_of(records: impl IntoIterator<Item = Vec<u8>>) -> Vec<u8> {
        let header = Header {
            text: b"@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:100000000\n".to_vec(),
            references: vec![Reference { name: "c1".into(), len: 100_000_000 }],
        };
        let mut w = BgzfWriter::new(Vec::new(), 1);
        w.write_all(&header.to_bytes()).unwrap();
        w.end_block().unwrap();
        for rec in records {
            w.write_all(&(rec.len() as u32).to_le_bytes()).unwrap();
            w.write_all(&rec).unwrap();
        }
        w.finish().unwrap()
    }

    /// A BAM with records of many sizes, some far larger than a block and
    /// than the carry room, written with the header in its own block.
    pub(crate) fn synthetic_bam(n: usize) -> Vec<u8> {
        let mut x = 7u64;
        bam_of((0..n).map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let big = if i % 97 == 5 { 300_000 } else if i % 31 == 3 { 70_000 } else { (x >> 52) as usize };
            let mut aux = b"ZBBC".to_vec();
            aux.extend_from_slice(&(big as u32).to_le_bytes());
            aux.extend((0..big).map(|j| (j * 7 + i) as u8));
            encode(&format!("r{i}"), 0, 0, i as i32 * 10, 60, &[(0, 4)], "ACGT", &aux)
        }))
    }

    /// `bytes` written as `s.bam` in a fresh directory of its own (the
    /// caller removes it), and opened.
    pub(crate) fn open_bam(bytes: &[u8], tag: &str) -> (BamFile, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("fasthts-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("s.bam"), bytes).unwrap();
        (BamFile::open(dir.join("s.bam")).unwrap(), dir)
    }

    /// The error a read of every record with the pull reader meets.
    pub(crate) fn pull_reader_error(bam: &BamFile) -> BamError {
        let mut rr = bam.records().unwrap();
        loop {
            match rr.next_record() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the damaged file read to its end"),
                Err(e) => break e,
            }
        }
    }

    #[test]
    fn scan_agrees_with_pull_reader_on_records_and_offsets() {
        let bytes = synthetic_bam(600);
        let (bam, dir) = open_bam(&bytes, "scan");
        let path = dir.join("s.bam");
        let mut expected = Vec::new();
        let mut rr = bam.records().unwrap();
        while let Some(r) = rr.next_record().unwrap() {
            let name = r.name().to_vec();
            expected.push((name, rr.record_start(), rr.record_end()));
        }
        assert_eq!(expected.len(), 600);
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut got = Vec::new();
            let end = pool.install(|| {
                scan(&bam, |r, at| {
                    got.push((r.name().to_vec(), at.start(), at.end()));
                    Ok(())
                })
            });
            let end = end.unwrap();
            assert!(got == expected, "scan and pull reader disagree at {threads} threads");
            assert_eq!(end, expected.last().unwrap().2);
        }
        // Every record start is a valid place to resume.
        for (name, start, _) in expected.iter().step_by(37) {
            let mut rr = bam.records_from(*start).unwrap();
            assert_eq!(rr.next_record().unwrap().unwrap().name(), &name[..]);
        }
        // A cut anywhere inside the records is an error, never a short
        // success (cutting only the EOF marker leaves complete records).
        for cut in [bytes.len() - 29, bytes.len() / 2, bytes.len() / 3 + 5] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let bam = BamFile::open(&path).unwrap();
            assert!(scan(&bam, |_, _| Ok(())).is_err(), "cut at {cut}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_first_defect_in_file_order_is_reported_though_a_later_one_is_inflated_first() {
        // About 3 MB of records; the one at 1.5 MB has an empty name.
        let mut bytes = bam_of((0..6000u32).map(|i| {
            let aux: Vec<u8> = b"ZBZ".iter().copied().chain((0..480).map(|j| b'A' + ((i + j) % 26) as u8)).chain([0]).collect();
            let mut rec = encode(&format!("r{i}"), 0, 0, i as i32 * 10, 60, &[(0, 4)], "ACGT", &aux);
            if i == 3000 {
                rec[8] = 0;
            }
            rec
        }));
        // A damaged block header 1.2 MB of data further on: within the
        // scan's look-ahead, beyond the pull reader's 1 MB batch.
        let (mut offset, mut data) = (0u64, 0u64);
        while data < 2_700_000 {
            let b = Block::parse(&bytes, offset).unwrap();
            data += u64::from(b.uncompressed_size);
            offset = b.next_offset();
        }
        bytes[offset as usize] = 0;
        let (bam, dir) = open_bam(&bytes, "scan-order");
        let sequential = pull_reader_error(&bam);
        assert!(matches!(sequential, BamError::InvalidRecord { defect: RecordDefect::EmptyReadName, .. }), "{sequential}");
        let expected = Error::from(sequential).with_path(bam.path()).to_string();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let got = pool.install(|| scan(&bam, |_, _| Ok(()))).expect_err("the damaged file passed the scan");
            assert_eq!(got.to_string(), expected, "at {threads} threads");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damaged_eof_marker_is_an_error() {
        let mut bytes = synthetic_bam(20);
        let eof = bytes.len() - crate::bgzf::EOF_MARKER.len();
        bytes[eof + 20] ^= 1; // its CRC32
        let (bam, dir) = open_bam(&bytes, "scan-eof");
        let result = scan(&bam, |_, _| Ok(()));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(result.is_err(), "a damaged EOF marker block passed the scan");
    }
}
