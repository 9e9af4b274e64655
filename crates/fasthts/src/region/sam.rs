//! Regions of a bgzipped SAM read through its index (a CSI or BAI that
//! `samtools index` or `fasthts index` wrote): the index's virtual offsets
//! point at line starts in the BGZF stream of SAM text, so a region is read
//! by seeking there and encoding lines into BAM records until one lies past
//! the region, as htslib's iterator reads a `.sam.gz`. Records are assigned
//! to regions by their start, as [`super::RegionReader`] assigns a BAM's.
//!
//! ```no_run
//! use fasthts::index::Index;
//! use fasthts::region::{sam::SamGzFile, Region};
//!
//! let sam = SamGzFile::open("in.sam.gz")?;
//! let index = Index::from_path("in.sam.gz.csi")?;
//! let region = Region::parse("chr1:1,001-2,000", sam.ref_names())?;
//! // The records starting in the region (a caller wanting those that
//! // overlap it reads from `Region { start: i64::MIN, .. }` and checks ends).
//! let mut records = sam.region_records(&index, region)?;
//! while let Some(r) = records.next_record()? {
//!     println!("{}", r.pos());
//! }
//! # Ok::<(), fasthts::Error>(())
//! ```

use super::{Indexed, Place, Region};
use crate::bam::{BamError, Header, RecordRef};
use crate::bgzf::{BlockReader, VirtualOffset};
use crate::index::Index;
use crate::sam::{encode_record_with, Positions, RefNames};
use crate::Error;
use fasthts_io::compression::Compression;
use fasthts_io::remote::RemoteObject;
use fasthts_io::sparse::SparseCopy;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A bgzipped SAM file, mapped, with its header read: the records of its
/// regions are read through an index ([`SamGzFile::region_records`]). (Or
/// plain or gzip SAM text compressed into BGZF in memory, for a job that
/// indexes its inputs in memory: [`SamGzFile::from_text`].)
pub struct SamGzFile {
    path: PathBuf,
    map: Stored,
    /// How the file itself is compressed (BGZF, unless made from text).
    compression: Compression,
    header: Header,
    names: RefNames,
    first_record: VirtualOffset,
    /// How records with positions past BAM's 32 bits are read.
    positions: Positions,
}

/// The BGZF bytes: a file's mapping, text compressed in memory, or a
/// remote object's ranges fetched (the rest zeros: [`SamGzFile::prefetch`]).
enum Stored {
    Mapped(memmap2::Mmap),
    Memory(Vec<u8>),
    Remote(Box<SparseCopy>),
}

impl std::ops::Deref for Stored {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Stored::Mapped(map) => map,
            Stored::Memory(bytes) => bytes,
            Stored::Remote(sparse) => sparse.bytes(),
        }
    }
}

impl SamGzFile {
    /// Maps the bgzipped SAM at `path` (a regular file) and reads its
    /// header. Errors name `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SamGzFile, Error> {
        let path = path.as_ref();
        let with_path = |e: Error| e.with_path(path);
        let file = std::fs::File::open(path).map_err(|e| with_path(e.into()))?;
        // SAFETY: a read-only private map of a regular file, under the same
        // contract as a mapped BAM (not truncated while read).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| with_path(e.into()))?;
        Self::from_bgzf(path, Stored::Mapped(map), Compression::Bgzf)
    }

    /// The bgzipped SAM behind a remote `object`, named `path` in
    /// messages, whose first bytes `known` were fetched already: its header
    /// and last bytes (the EOF marker) are fetched; the ranges a region
    /// reads are fetched before it is read ([`SamGzFile::prefetch`]).
    pub fn open_remote(path: &Path, object: Arc<RemoteObject>, known: &[u8]) -> Result<SamGzFile, Error> {
        let io = |e: std::io::Error| Error::from(e).with_path(path);
        let len = object.len();
        let mut sparse = SparseCopy::new(object, known).map_err(io)?;
        sparse.fetch(&[(len.saturating_sub(crate::bgzf::EOF_MARKER.len() as u64), len)]).map_err(io)?;
        sparse.fetch_start_until(|bytes| crate::sam::BgzfSamReader::new(bytes).is_ok()).map_err(io)?;
        Self::from_bgzf(path, Stored::Remote(Box::new(sparse)), Compression::Bgzf)
    }

    /// Fetches the byte ranges `[start, end)` of a remote file not fetched
    /// yet, in parallel on the current pool (nothing for a local file).
    pub fn prefetch(&mut self, ranges: &[(u64, u64)]) -> Result<(), Error> {
        match &mut self.map {
            Stored::Remote(sparse) => sparse.fetch(ranges).map_err(|e| Error::from(e).with_path(&self.path)),
            _ => Ok(()),
        }
    }

    /// Whether `[start, end)` may be read: always for a local file; for a
    /// remote one, when it was fetched ([`SamGzFile::prefetch`]).
    pub fn is_fetched(&self, start: u64, end: u64) -> bool {
        match &self.map {
            Stored::Remote(sparse) => sparse.is_fetched(start, end),
            _ => true,
        }
    }

    /// Whether the bytes are a remote object's, fetched as they are needed.
    pub fn is_remote(&self) -> bool {
        matches!(self.map, Stored::Remote(_))
    }

    /// Another handle on a remote file holding only its header and last
    /// bytes (copied, not fetched again), as [`crate::bam::BamFile::remote_copy`].
    /// `None` for a local file.
    pub fn remote_copy(&self) -> Option<Result<SamGzFile, Error>> {
        let Stored::Remote(sparse) = &self.map else { return None };
        Some(sparse.copy_ends().map_err(|e| Error::from(e).with_path(&self.path)).map(|copy| SamGzFile {
            path: self.path.clone(),
            map: Stored::Remote(Box::new(copy)),
            compression: self.compression,
            header: self.header.clone(),
            names: self.names.clone(),
            first_record: self.first_record,
            positions: self.positions,
        }))
    }

    fn from_bgzf(path: &Path, map: Stored, compression: Compression) -> Result<SamGzFile, Error> {
        let reader = crate::sam::BgzfSamReader::new(&map).map_err(|e| Error::from(e).with_path(path))?;
        let first_record = reader.first_record_offset();
        let sam_header = reader.into_header();
        let (header, names) = (sam_header.header, sam_header.names);
        Ok(SamGzFile { path: path.to_path_buf(), header, names, first_record, map, compression, positions: Positions::Bam })
    }

    /// The plain or gzip-compressed SAM text at `path` (a regular file,
    /// `compression` as found), read once and compressed into BGZF in
    /// memory (libdeflate's fastest level, on the current pool), so that an
    /// index made in memory can describe it: for a job that reads every
    /// file by region and indexes its inputs itself (FACETS snp-pileup,
    /// which reads any SAM). It holds about a third of the text's size.
    pub fn from_text(path: &Path, compression: Compression) -> Result<SamGzFile, Error> {
        let with_path = |e: std::io::Error| Error::from(e).with_path(path);
        let file = std::fs::File::open(path).map_err(with_path)?;
        let (mut text, _) = fasthts_io::compression::decompress(file, rayon::current_num_threads()).map_err(with_path)?;
        let mut bgzf = crate::bgzf::BgzfWriter::with_libdeflate_level(Vec::new(), 1);
        std::io::copy(&mut text, &mut bgzf).map_err(with_path)?;
        let bytes = bgzf.finish().map_err(with_path)?;
        Self::from_bgzf(path, Stored::Memory(bytes), compression)
    }

    /// How the file is compressed: BGZF, or as the text was
    /// ([`SamGzFile::from_text`]).
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Records with positions past BAM's 32 bits read as `positions` says:
    /// refused ([`Positions::Bam`], the default: BAM cannot hold them) or
    /// kept 64-bit ([`Positions::Wide`]: such a record ends with the field
    /// [`crate::sam::wide_positions`] reads; for depth, which counts them
    /// as samtools does).
    pub fn with_positions(self, positions: Positions) -> SamGzFile {
        SamGzFile { positions, ..self }
    }

    /// How records with positions past BAM's 32 bits are read.
    pub fn positions(&self) -> Positions {
        self.positions
    }

    /// The bgzipped SAM at `path` if it is one in a regular file (which an
    /// index can describe); `None` for any other input (plain or gzip SAM,
    /// BAM, CRAM, a pipe, standard input), left for the caller to refuse.
    pub fn open_for_regions(path: impl AsRef<Path>) -> Result<Option<SamGzFile>, Error> {
        let path = path.as_ref();
        if path.as_os_str() == "-" {
            return Ok(None);
        }
        let peeked = crate::input::peek(path)?;
        let bgzf_sam = peeked.format() == crate::input::Format::CompressedSam(fasthts_io::compression::Compression::Bgzf);
        if !bgzf_sam || !peeked.is_regular_file() {
            return Ok(None);
        }
        Self::open(path).map(Some)
    }

    /// The reference names → ids, as htslib looks them up (for
    /// [`Region::parse`]).
    pub fn ref_names(&self) -> &RefNames {
        &self.names
    }

    /// The reference names, in header order.
    pub fn reference_names(&self) -> Vec<String> {
        self.header.references.iter().map(|r| r.name.clone()).collect()
    }

    /// The records of `region` (by start position) in file order, read
    /// from where `index` says the region begins.
    pub fn region_records(&self, index: &Index, region: Region) -> Result<SamRegionReader<'_>, Error> {
        match super::region_start(self, index, region) {
            Some(start) => SamRegionReader::new(self, region, start, super::following_start(self, index, region)),
            None => SamRegionReader::empty(self, region),
        }
    }
}

impl Indexed for SamGzFile {
    fn path(&self) -> &Path {
        &self.path
    }
    fn header(&self) -> &Header {
        &self.header
    }
    fn bytes(&self) -> &[u8] {
        &self.map
    }
    fn first_record_offset(&self) -> VirtualOffset {
        self.first_record
    }
    fn first_placed_from(&self, from: VirtualOffset) -> Result<Option<(VirtualOffset, i32)>, Error> {
        let with_path = |e: Error| e.with_path(&self.path);
        let mut reader = BlockReader::new(&self.map, from).map_err(|e| with_path(crate::sam::bgzf_error(e).into()))?;
        while let Some((len, next)) = crate::sam::next_bgzf_line(&mut reader).map_err(|e| with_path(e.into()))? {
            // RNAME, the third field: `*`, or a name the header does not
            // hold (htslib reads such a record as unplaced), has no reference.
            let rname = reader.available()[..len].split(|&c| c == b'\t').nth(2).unwrap_or(b"*");
            if let Ok(Some(ref_id)) = self.names.get(rname) {
                return Ok(Some((reader.virtual_offset(), ref_id)));
            }
            reader.consume(next);
        }
        Ok(None)
    }
}

/// The records of one region of a [`SamGzFile`], SAM lines encoded as
/// BAM records (positions past BAM's 32 bits refused, as for any SAM
/// written as BAM records), read in file order from a line start.
pub struct SamRegionReader<'a> {
    file: &'a SamGzFile,
    reader: BlockReader<'a>,
    region: Region,
    record: Vec<u8>,
    done: bool,
    /// A record of the region has been seen (a later record before it
    /// means the file is not sorted).
    inside: bool,
}

impl<'a> SamRegionReader<'a> {
    /// Reads `region` of `file` from `start` (a line start at or before the
    /// region's first record). `following`: where what follows the region
    /// starts, if known ([`super::following_start`]): past it blocks are
    /// inflated one at a time, so a region does not inflate far beyond its
    /// last record.
    pub fn new(file: &'a SamGzFile, region: Region, start: VirtualOffset, following: Option<VirtualOffset>) -> Result<Self, Error> {
        let mut reader = BlockReader::new(file.bytes(), start).map_err(|e| Error::from(crate::sam::bgzf_error(e)).with_path(&file.path))?;
        // Regions are the unit of parallelism; each is read on one thread.
        reader.set_parallel(false);
        if let Some(end) = following.map(|v| v.compressed() + 1).filter(|&e| e > start.compressed()) {
            reader.set_soft_limit(end);
        }
        Ok(SamRegionReader { file, reader, region, record: Vec::new(), done: false, inside: false })
    }

    /// Reads `scope` of `file` with a query from position `from` (see
    /// [`super::query_span`]): empty when the index has no records there.
    pub fn query(file: &'a SamGzFile, index: &Index, scope: Region, from: i64) -> Result<Self, Error> {
        match super::query_span(file, index, scope, from) {
            Some((start, following)) => Self::new(file, scope, start, following),
            None => Self::empty(file, scope),
        }
    }

    /// A reader that goes on reading `region` from `at`, the
    /// [`Self::resume_offset`] of an earlier reader of it (`entered`: its
    /// [`Self::has_entered`]), as [`super::RegionReader::resume`].
    pub fn resume(file: &'a SamGzFile, region: Region, at: VirtualOffset, following: Option<VirtualOffset>, entered: bool) -> Result<Self, Error> {
        Ok(SamRegionReader { inside: entered, ..Self::new(file, region, at, following)? })
    }

    /// Where a reader resumed after the record last returned starts: the
    /// next line.
    pub fn resume_offset(&self) -> VirtualOffset {
        self.reader.virtual_offset()
    }

    /// Whether records of the region have been seen.
    pub fn has_entered(&self) -> bool {
        self.inside
    }

    /// Whether the next line is already inflated whole (a reader resumed
    /// at [`Self::resume_offset`] would inflate its block again).
    pub fn next_is_loaded(&self) -> bool {
        !self.done && self.reader.available().contains(&b'\n')
    }

    /// A reader of a region the index says holds no records.
    pub fn empty(file: &'a SamGzFile, region: Region) -> Result<Self, Error> {
        Ok(SamRegionReader { done: true, ..Self::new(file, region, file.first_record, None)? })
    }

    /// The next record that starts in the region; an error names the file.
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        let with_path = |e: Error, file: &SamGzFile| e.with_path(&file.path);
        while !self.done {
            let Some((len, next)) = crate::sam::next_bgzf_line(&mut self.reader).map_err(|e| with_path(e.into(), self.file))? else {
                self.done = true;
                break;
            };
            let at = self.reader.virtual_offset();
            let line = &self.reader.available()[..len];
            self.record.clear();
            if let Err(source) = encode_record_with(line, &self.file.names, &mut self.record, self.file.positions) {
                // A record past BAM's 32-bit positions that lies after the
                // region only ends it (such records are refused when read).
                if matches!(source, crate::sam::RecordError::PositionTooLarge(_)) && self.lies_after(line) {
                    self.done = true;
                    break;
                }
                let name = crate::sam::qname_of(line);
                return Err(with_path(Error::Message(format!("SAM record at {at} (read {name:?}): {source}")), self.file));
            }
            self.reader.consume(next);
            let r = RecordRef::new(&self.record[4..], self.file.header.references.len())
                .map_err(|defect| with_path(Error::Message(format!("SAM record at {at}: {defect}")), self.file))?;
            let pos = match self.file.positions {
                Positions::Wide => crate::sam::wide_positions(&self.record[4..]).0,
                _ => i64::from(r.pos()),
            };
            match self.region.place(r.ref_id(), pos) {
                Place::Before if self.inside => return Err(with_path(BamError::OutOfOrder { offset: at }.into(), self.file)),
                Place::Before => {}
                Place::Inside => {
                    self.inside = true;
                    return Ok(Some(RecordRef::new_prevalidated(&self.record[4..])));
                }
                Place::After => self.done = true,
            }
        }
        Ok(None)
    }

    /// Moves to the next record that starts in the region (as
    /// [`Self::next_record`]); false at the end. The record is then
    /// [`Self::current`].
    pub fn advance(&mut self) -> Result<bool, Error> {
        Ok(self.next_record()?.is_some())
    }

    /// The record last returned by [`Self::next_record`].
    pub fn current(&self) -> RecordRef<'_> {
        RecordRef::new_prevalidated(&self.record[4..])
    }

    /// Whether the SAM `line` (its RNAME and 64-bit POS) lies after the region.
    fn lies_after(&self, line: &[u8]) -> bool {
        let mut fields = line.split(|&c| c == b'\t').skip(2);
        let (Some(rname), Some(pos)) = (fields.next(), fields.next()) else { return false };
        let (Ok(Some(tid)), Some(pos)) = (self.file.names.get(rname), std::str::from_utf8(pos).ok().and_then(|p| p.parse::<i64>().ok()))
        else {
            return false;
        };
        self.region.ref_id >= 0 && (tid > self.region.ref_id || (tid == self.region.ref_id && pos - 1 >= self.region.end))
    }

    /// Calls `f` on each remaining record of the region.
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<(), Error> {
        while let Some(r) = self.next_record()? {
            f(&r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexFormat;

    /// Records on two references (one read spanning 30 kb), unplaced
    /// records at the end, in BGZF blocks small enough that regions start
    /// mid-file; indexed as `samtools index -c` would.
    fn sorted_sam_gz(dir: &Path) -> (PathBuf, Index, Vec<(i32, i64, String)>) {
        let mut text = String::from("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:a\tLN:100000\n@SQ\tSN:b\tLN:100000\n@SQ\tSN:empty\tLN:10\n");
        let mut expected = Vec::new();
        for (tid, name) in [(0, "a"), (1, "b")] {
            for i in 0..3000 {
                let pos = i * 30 + 1;
                let cigar = if i == 100 { "10M30000D10M" } else { "20M" };
                let qname = format!("{name}{i}");
                text.push_str(&format!("{qname}\t0\t{name}\t{pos}\t60\t{cigar}\t*\t0\t0\tACGTACGTACGTACGTACGT\t*\n"));
                expected.push((tid, i64::from(pos - 1), qname));
            }
        }
        for i in 0..5 {
            let qname = format!("u{i}");
            text.push_str(&format!("{qname}\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\t*\n"));
            expected.push((-1, -1, qname));
        }
        let bytes = crate::bgzf::compress_all(text.as_bytes(), 1);
        let path = dir.join("x.sam.gz");
        std::fs::write(&path, &bytes).unwrap();
        let index = crate::index::build_sam(&bytes, &path, IndexFormat::Csi { min_shift: 14, depth: 5 }).unwrap();
        (path, index, expected)
    }

    #[test]
    fn region_records_are_those_starting_in_the_region_in_file_order() {
        let dir = std::env::temp_dir().join(format!("fasthts-region-sam-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, index, all) = sorted_sam_gz(&dir);
        let sam = SamGzFile::open(&path).unwrap();
        assert_eq!(sam.reference_names(), ["a", "b", "empty"]);
        let regions = [
            Region::whole(0),
            Region::whole(1),
            Region::whole(2),
            Region::unplaced(),
            Region { ref_id: 0, start: 0, end: 1 },
            Region { ref_id: 0, start: 29_990, end: 31_000 },
            Region { ref_id: 1, start: 45_000, end: 90_000 },
            Region { ref_id: 1, start: 89_971, end: i64::MAX },
            Region { ref_id: 1, start: 95_000, end: 99_000 },
        ];
        for region in regions {
            let mut got = Vec::new();
            let mut reader = sam.region_records(&index, region).unwrap();
            while let Some(r) = reader.next_record().unwrap() {
                got.push(String::from_utf8(r.name().to_vec()).unwrap());
            }
            let want: Vec<String> = all
                .iter()
                .filter(|(tid, pos, _)| *tid == region.ref_id && (region.ref_id < 0 || (*pos >= region.start && *pos < region.end)))
                .map(|(_, _, name)| name.clone())
                .collect();
            assert_eq!(got, want, "{region}");
        }
        // Reading from the offset for a position reaches back to the read
        // that spans it (a3000's 30 kb deletion), as a region query does.
        let start = crate::region::start_offset(&sam, &index, 0, 20_000).unwrap();
        let scope = Region { ref_id: 0, start: i64::MIN, end: 20_040 };
        let mut overlapping = Vec::new();
        SamRegionReader::new(&sam, scope, start, None)
            .unwrap()
            .for_each_record(|r| {
                if r.end_pos() > 20_000 {
                    overlapping.push(String::from_utf8(r.name().to_vec()).unwrap());
                }
            })
            .unwrap();
        assert_eq!(overlapping, ["a100", "a667"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 39: an index made for a prefix of the file (its leading BGZF
    /// blocks, re-terminated, then indexed) holds only valid offsets, yet
    /// places records only as far as the prefix: found when records with a
    /// reference follow. A prefix that holds every placed record (it ends
    /// among the unplaced ones) places all that a job by position reads.
    #[test]
    fn an_index_of_a_prefix_places_only_the_prefix() {
        let dir = std::env::temp_dir().join(format!("fasthts-region-sam-prefix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, _, _) = sorted_sam_gz(&dir);
        let text = crate::bgzf::decompress_all(&std::fs::read(&path).unwrap()).unwrap();
        let format = IndexFormat::Csi { min_shift: 14, depth: 5 };
        for (last_line, covers) in [("b1500\t", false), ("a2999\t", false), ("b2999\t", true), ("u2\t", true)] {
            let start = text.windows(last_line.len()).position(|w| w == last_line.as_bytes()).unwrap();
            let cut = start + text[start..].iter().position(|&c| c == b'\n').unwrap() + 1;
            let mut head = crate::bgzf::compress_all(&text[..cut], 1);
            head.truncate(head.len() - crate::bgzf::EOF_MARKER.len());
            let whole = [&head[..], &crate::bgzf::compress_all(&text[cut..], 1)[..]].concat();
            let prefix = [&head[..], &crate::bgzf::EOF_MARKER[..]].concat();
            let whole_path = dir.join("whole.sam.gz");
            std::fs::write(&whole_path, &whole).unwrap();
            let sam = SamGzFile::open(&whole_path).unwrap();
            let whole_index = crate::index::build_sam(&whole, &whole_path, format).unwrap();
            crate::index::check_placed_coverage(&sam, &whole_index).unwrap();
            let prefix_index = crate::index::build_sam(&prefix, &whole_path, format).unwrap();
            let checked = crate::index::check_placed_coverage(&sam, &prefix_index);
            match (covers, checked) {
                (true, Ok(())) => {}
                (false, Err(Error::IndexMismatch(why))) => {
                    assert!(why.contains("but a record on b follows at") && why.ends_with("it describes only the start of the file"), "{last_line}: {why}");
                }
                (_, checked) => panic!("cut after {last_line:?}: {checked:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
