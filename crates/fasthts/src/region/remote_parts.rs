//! A remote BAM with an index read whole as a local one is read: in parts
//! cut at record starts the index gives (its checkpoints, the references'
//! spans, where the unplaced records begin), on the current pool. Each
//! part's byte range is fetched by the thread that inflates it, in one
//! request, into a buffer of that thread's reused for a later part (the
//! next part it claimed is fetched while it reads one): the threads fetch
//! concurrently, memory stays two parts per thread, and each byte is
//! fetched once but at a cut inside a block, where that block is fetched
//! by both parts.

use crate::bam::{BamError, BamFile, RecordReader, RecordRef};
use crate::bgzf::{BlockReader, VirtualOffset, MAX_BLOCK_SIZE};
use crate::index::Index;
use crate::Error;
use fasthts_io::sparse::PartBuffer;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Compressed bytes per part (at least; a part ends at the first cut
/// past this). Flagstat's region size: the same balance of threads, and a
/// cut's block fetched twice is well under 1 % of a part.
pub const PART_BYTES: u64 = 8 << 20;

/// The records from `start` to `stop` (`None`: to the end of the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Part {
    start: VirtualOffset,
    stop: Option<VirtualOffset>,
}

impl Part {
    /// The bytes its reader inflates, of a file of `len` bytes: to `stop`'s
    /// block, that block included when records of the part lie in it.
    fn range(&self, len: u64) -> (u64, u64) {
        let end = match self.stop {
            Some(stop) if stop.uncompressed() == 0 => stop.compressed(),
            Some(stop) => stop.compressed().saturating_add(MAX_BLOCK_SIZE as u64),
            None => len,
        };
        (self.start.compressed(), end.min(len))
    }
}

/// The parts of `bam`, each of `part_bytes` compressed bytes or more but
/// the last, which runs to the end of the file (the unplaced records
/// after the last indexed chunk included).
fn parts(bam: &BamFile, index: &Index, part_bytes: u64) -> Vec<Part> {
    let len = bam.bytes().len() as u64;
    let first = bam.first_record_offset();
    let mut cuts: Vec<VirtualOffset> = Vec::new();
    for tid in 0..index.references().len() {
        cuts.extend(index.checkpoints(tid).into_iter().map(|(_, v)| v));
        cuts.extend(index.reference_span(tid).into_iter().flat_map(|c| [c.start, c.end]));
    }
    cuts.extend(index.unplaced_start());
    cuts.retain(|v| *v > first && v.compressed() < len);
    cuts.sort_unstable();
    cuts.dedup();
    let mut parts = Vec::new();
    let mut start = first;
    for cut in cuts {
        if cut.compressed() >= start.compressed().saturating_add(part_bytes) {
            parts.push(Part { start, stop: Some(cut) });
            start = cut;
        }
    }
    parts.push(Part { start, stop: None });
    parts
}

/// The records of one part, in file order.
pub struct PartRecords<'a> {
    records: RecordReader<'a>,
    stop: Option<VirtualOffset>,
    /// Whether the records ended where the part does, once read.
    ended_at_stop: Option<bool>,
}

impl PartRecords<'_> {
    /// Calls `f` on each remaining record of the part, walking the loaded
    /// data in place (see [`RecordReader::walk`]).
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<(), BamError> {
        if self.ended_at_stop.is_some() {
            return Ok(());
        }
        let ended = match self.stop {
            Some(stop) => self.records.walk_until(stop, f)?,
            None => {
                let _: ControlFlow<()> = self.records.walk(|r| {
                    f(r);
                    ControlFlow::Continue(())
                })?;
                true
            }
        };
        self.ended_at_stop = Some(ended);
        Ok(())
    }
}

/// Runs `work` over every record of the remote `bam`, part by part on the
/// current pool ([`PART_BYTES`]), the results in file order. The outer
/// error is a failed fetch (the object unreachable, or changed while it
/// was read: an error for good); the inner one a failed reading (a damaged
/// record, or [`Error::IndexMismatch`]: the index does not describe the
/// file), which reading the file as a stream reports as samtools would.
/// A local `bam` is refused.
pub fn scatter<T, F>(bam: &BamFile, index: &Index, part_bytes: u64, work: F) -> Result<Result<Vec<T>, Error>, Error>
where
    T: Send,
    F: Fn(&mut PartRecords<'_>) -> Result<T, BamError> + Sync,
{
    let path = bam.path();
    let Some(object) = bam.remote_object() else {
        return Err(Error::Message("reading by parts is for remote files".into()).with_path(path));
    };
    let fetch_failed = |e: std::io::Error| Error::from(e).with_path(path);
    let len = bam.bytes().len() as u64;
    let n_ref = bam.header().references.len();
    // The header's bytes, fetched already: not fetched again.
    let known = &bam.bytes()[..bam.fetched_prefix() as usize];
    let parts = parts(bam, index, part_bytes);
    let claimed = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // Parts are claimed in file order until one fails to be fetched.
    let claim = || {
        let k = claimed.fetch_add(1, Ordering::Relaxed);
        (k < parts.len() && !failed.load(Ordering::Relaxed)).then_some(k)
    };
    let results: Mutex<Vec<Option<Result<Result<T, Error>, Error>>>> = Mutex::new((0..parts.len()).map(|_| None).collect());
    let store = |k: usize, result: Result<Result<T, Error>, Error>| {
        failed.fetch_or(result.is_err(), Ordering::Relaxed);
        results.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(result);
    };
    // One worker per thread of the pool, each reading a part while the
    // next it claimed is fetched, into a buffer of its own, on a thread of
    // its own: the network's wait hides behind the inflating.
    let worker = || {
        let mut buffers = [PartBuffer::new(Arc::clone(object)), PartBuffer::new(Arc::clone(object))];
        let Some(mut current) = claim() else { return };
        let (start, end) = parts[current].range(len);
        let mut fetched = buffers[0].fetch(start, end, known);
        loop {
            let following = claim();
            let (reading, fetching) = buffers.split_at_mut(1);
            let next_fetched = std::thread::scope(|threads| {
                let handle = following.map(|k| {
                    let (start, end) = parts[k].range(len);
                    let buffer = &mut fetching[0];
                    threads.spawn(move || buffer.fetch(start, end, known))
                });
                let read = match fetched {
                    Ok(()) => {
                        let (data, base) = reading[0].bytes();
                        Ok(read_part(data, base, parts[current], n_ref, &work).map_err(|e| e.with_path(path)))
                    }
                    Err(e) => Err(fetch_failed(e)),
                };
                store(current, read);
                handle.map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("the fetching thread panicked"))))
            });
            let (Some(next), Some(next_fetched)) = (following, next_fetched) else { return };
            buffers.swap(0, 1);
            current = next;
            fetched = next_fetched;
        }
    };
    rayon::scope(|scope| {
        for _ in 0..rayon::current_num_threads().min(parts.len()) {
            scope.spawn(|_| worker());
        }
    });
    let mut read = Vec::with_capacity(parts.len());
    for result in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        // A part left unread follows a failed fetch, whose error comes first.
        read.push(result.unwrap_or_else(|| Err(Error::Message("a part was not read".into()).with_path(path)))?);
    }
    Ok(read.into_iter().collect())
}

/// `work` over the records of `part` of `data`, the part's bytes, from
/// `base` in the file (offsets read are of `data`, not of the file: a
/// reading error is reported by the stream's reading instead).
fn read_part<T>(
    data: &[u8],
    base: u64,
    part: Part,
    n_ref: usize,
    work: &impl Fn(&mut PartRecords<'_>) -> Result<T, BamError>,
) -> Result<T, Error> {
    let in_data = |v: VirtualOffset| {
        v.compressed().checked_sub(base).and_then(|c| VirtualOffset::new(c, v.uncompressed())).ok_or(BamError::from(
            crate::bgzf::BgzfError::Corrupt { offset: v.compressed(), reason: "a part's offset lies before its bytes" },
        ))
    };
    let part = Part { start: in_data(part.start)?, stop: part.stop.map(in_data).transpose()? };
    let mut blocks = BlockReader::new(data, part.start).map_err(BamError::from)?;
    // Parts are the unit of parallelism; each is read on one thread.
    blocks.set_parallel(false);
    if let Some(stop) = part.stop {
        // No block past the one `stop` is in (nor that one when no record
        // of the part lies in it): those bytes were not fetched.
        blocks.set_limit(stop.compressed() + u64::from(stop.uncompressed() > 0));
    }
    let mut records = PartRecords { records: RecordReader::new(blocks, n_ref), stop: part.stop, ended_at_stop: None };
    let value = work(&mut records)?;
    records.for_each_record(|_| {})?;
    match (records.ended_at_stop, part.stop) {
        (Some(false), Some(stop)) => {
            Err(Error::IndexMismatch(format!("the records from {} do not end at {stop}, a record start by the index", part.start)))
        }
        _ => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{data, Kept};
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::AtomicU64;

    /// A loopback server of `bytes` by ranges, with ETag "v1", or "v2"
    /// once `changed` is set; its URL and the body bytes it sent.
    fn serve(bytes: Vec<u8>, changed: Arc<AtomicBool>) -> (String, Arc<AtomicU64>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}/x.bam", listener.local_addr().unwrap().port());
        let sent = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&sent);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut range = (0, bytes.len() - 1);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(spec) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                        let (a, b) = spec.trim().split_once('-').unwrap();
                        range = (a.parse().unwrap(), b.parse::<usize>().unwrap().min(bytes.len() - 1));
                    }
                }
                let etag = if changed.load(Ordering::SeqCst) { "v2" } else { "v1" };
                let body = &bytes[range.0..=range.1];
                let head = format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {}-{}/{}\r\nContent-Length: {}\r\nETag: \"{etag}\"\r\nConnection: close\r\n\r\n",
                    range.0,
                    range.1,
                    bytes.len(),
                    body.len()
                );
                counted.fetch_add(body.len() as u64, Ordering::SeqCst);
                let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
            }
        });
        (url, sent)
    }

    /// small.bam behind a loopback URL (opened), its local index, and the
    /// flag above and counter of the server.
    fn remote_small_bam() -> (BamFile, Index, Arc<AtomicBool>, Arc<AtomicU64>) {
        let changed = Arc::new(AtomicBool::new(false));
        let (url, sent) = serve(std::fs::read(data("small.bam")).unwrap(), Arc::clone(&changed));
        let object = Arc::new(fasthts_io::remote::RemoteObject::open(&url).unwrap());
        let bam = BamFile::open_remote(&url, object, &[]).unwrap();
        let local = BamFile::open(data("small.bam")).unwrap();
        let index = crate::index::find_index(&local, &Kept::default()).unwrap().unwrap();
        (bam, index, changed, sent)
    }

    fn count(records: &mut PartRecords<'_>) -> Result<crate::flagstat::FlagStat, BamError> {
        let mut tally = crate::flagstat::FlagTally::default();
        records.for_each_record(|r| tally.add(r))?;
        Ok(tally.stats())
    }

    #[test]
    fn parts_of_a_url_count_as_the_local_file() {
        let want = crate::flagstat::count_sequential(&BamFile::open(data("small.bam")).unwrap()).unwrap();
        let (bam, index, _, _) = remote_small_bam();
        // Many parts (cut inside blocks and at their starts), a few, one.
        for (threads, part_bytes) in [(1, 1), (2, 1), (2, 4096), (3, 20_000), (2, u64::MAX)] {
            let read = fasthts_io::pool::with_threads(Some(threads), || scatter(&bam, &index, part_bytes, count)).unwrap().unwrap();
            assert!(part_bytes > 4096 || read.len() > 5, "{part_bytes}: {} parts", read.len());
            let mut total = crate::flagstat::FlagStat::default();
            read.iter().for_each(|p| total.merge(p));
            assert_eq!(total, want, "{threads} threads, parts of {part_bytes} bytes");
        }
    }

    #[test]
    fn a_cut_that_is_no_record_start_is_a_mismatch() {
        let local = BamFile::open(data("small.bam")).unwrap();
        let first = local.first_record_offset();
        let n_ref = local.header().references.len();
        let inside = VirtualOffset::new(first.compressed(), first.uncompressed() + 1).unwrap();
        let read = read_part(local.bytes(), 0, Part { start: first, stop: Some(inside) }, n_ref, &count);
        assert!(matches!(read, Err(Error::IndexMismatch(_))), "{:?}", read.map(|_| ()));
        // The same part to a record start reads.
        let second = {
            let mut records = local.records().unwrap();
            records.advance().unwrap();
            records.record_end()
        };
        let read = read_part(local.bytes(), 0, Part { start: first, stop: Some(second) }, n_ref, &count).unwrap();
        assert_eq!(read.0[0].total + read.0[1].total, 1);
    }

    #[test]
    fn a_changed_object_is_an_error() {
        let (bam, index, changed, sent) = remote_small_bam();
        let before = sent.load(Ordering::SeqCst);
        changed.store(true, Ordering::SeqCst);
        let failed = fasthts_io::pool::with_threads(Some(2), || scatter(&bam, &index, 4096, count));
        let message = failed.err().expect("a fetch of another version fails").to_string();
        assert!(message.contains("the object changed while it was read (ETag differs)"), "{message}");
        assert!(sent.load(Ordering::SeqCst) > before, "parts were fetched");
    }

    #[test]
    fn parts_tile_the_file_from_the_first_record() {
        let bam = BamFile::open(crate::test_support::data("small.bam")).unwrap();
        let index = crate::index::find_index(&bam, &crate::test_support::Kept::default()).unwrap().unwrap();
        let parts = parts(&bam, &index, 4096);
        assert!(parts.len() > 2, "{parts:?}");
        assert_eq!(parts[0].start, bam.first_record_offset());
        for pair in parts.windows(2) {
            assert_eq!(pair[0].stop, Some(pair[1].start));
            assert!(pair[1].start.compressed() >= pair[0].start.compressed() + 4096);
        }
        assert_eq!(parts.last().unwrap().stop, None);
        assert_eq!(parts.last().unwrap().range(bam.bytes().len() as u64).1, bam.bytes().len() as u64);
    }
}
