//! Multi-sample pileup engine, and FACETS-compatible `snp-pileup` on top.
//!
//! [`Pileup`] walks the reads of N BAMs together and stops at every
//! reference position covered by at least one kept read, giving for each
//! file the reads there ([`PileupRead`]: base, base quality, deletion /
//! ref-skip state, mapping quality, strand, mate information). It follows
//! htslib 1.16's `bam_mplp_*` exactly — which positions are visited, the
//! per-file read buffer and its `maxcnt` test (`-d`), and optionally the
//! mate-overlap quality adjustment (`bam_mplp_init_overlaps`) — so callers
//! can reproduce samtools/FACETS numbers. Reads come from any
//! [`RecordSource`]: a whole file ([`FileRecords`]) or an index query
//! ([`RegionRecords`], htslib's iterator semantics: every read overlapping
//! the interval).
//!
//! Nothing is allocated per read once the buffers have grown to the depth
//! of the data: read copies live in recycled nodes.
//!
//! ```
//! use fasthts::bam::BamFile;
//! use fasthts::pileup::{FileRecords, Pileup, PileupOptions};
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let bam = BamFile::open(path)?;
//! let mut pileup = Pileup::new(vec![FileRecords::new(&bam)?], &PileupOptions::default());
//! let mut columns = 0;
//! while let Some((_tid, _pos)) = pileup.next_column()? {
//!     // Reads with a base (not a deletion) of quality 20 or more.
//!     let _good = pileup.reads(0).filter(|r| !r.is_del() && r.qual() >= 20).count();
//!     columns += 1;
//! }
//! assert!(columns > 0);
//! # Ok::<(), fasthts::pileup::PileupError>(())
//! ```

mod engine;
pub mod snp;
pub mod vcf;

use crate::bam::{flags, BamFile, RecordReader, RecordRef};
use crate::index::{Chunk, Index};
use engine::{Entry, Node, PlpFile};

/// What can go wrong in a pileup.
#[derive(Debug, thiserror::Error)]
pub enum PileupError {
    /// The input is not coordinate-sorted (htslib: "The input is not sorted").
    #[error("the input is not coordinate-sorted ({what} at reference {tid}, position {pos})")]
    Unsorted {
        /// Reference id of the read concerned.
        tid: i32,
        /// Its 0-based position.
        pos: i64,
        /// What was out of order.
        what: &'static str,
    },
    /// A mapped read whose CIGAR has no reference-consuming operation where
    /// the pileup needs one, or an unknown operation.
    #[error("unusable CIGAR in a read at reference {tid}, position {pos}")]
    BadCigar {
        /// Reference id of the read.
        tid: i32,
        /// Its 0-based position.
        pos: i64,
    },
    /// Reading a file failed.
    #[error(transparent)]
    Read(#[from] crate::Error),
    /// Anything else, described.
    #[error("{0}")]
    Message(String),
}

impl From<crate::bam::BamError> for PileupError {
    fn from(e: crate::bam::BamError) -> Self {
        PileupError::Read(e.into())
    }
}

/// Which reads enter the pileup (applied before htslib sees them, like
/// FACETS' and samtools mpileup's read callbacks).
#[derive(Clone, Debug)]
pub struct ReadFilter {
    /// Reads with any of these flags are dropped (unmapped reads and reads
    /// without a reference are always dropped).
    pub skip_flags: u16,
    /// Reads with a lower mapping quality are dropped.
    pub min_mapq: i32,
    /// Drop reads with mapping quality 0 whatever `min_mapq` is (FACETS).
    pub skip_mapq_zero: bool,
    /// Drop paired reads not flagged proper pair (FACETS without `-A`).
    pub proper_pairs_only: bool,
}

impl Default for ReadFilter {
    /// FACETS snp-pileup's defaults.
    fn default() -> Self {
        ReadFilter {
            skip_flags: flags::UNMAPPED | flags::SECONDARY | flags::QC_FAIL | flags::DUPLICATE,
            min_mapq: 0,
            skip_mapq_zero: true,
            proper_pairs_only: true,
        }
    }
}

impl ReadFilter {
    /// Whether `r` enters the pileup.
    #[inline]
    pub fn keep(&self, r: &RecordRef<'_>) -> bool {
        let flag = r.flag();
        if flag & (self.skip_flags | flags::UNMAPPED) != 0 || r.ref_id() < 0 {
            return false;
        }
        let q = i32::from(r.mapq());
        if q < self.min_mapq || (self.skip_mapq_zero && q == 0) {
            return false;
        }
        !(self.proper_pairs_only && flag & flags::PAIRED != 0 && flag & flags::PROPER_PAIR == 0)
    }
}

/// How the pileup is built.
#[derive(Clone, Debug)]
pub struct PileupOptions {
    /// htslib's `maxcnt` per file (`-d`): a read starting at the current
    /// pileup position is dropped when the file already buffers this many.
    pub max_depth: i32,
    /// Apply htslib's mate-overlap quality adjustment.
    pub overlaps: bool,
    /// Which reads are used.
    pub filter: ReadFilter,
}

impl Default for PileupOptions {
    /// FACETS snp-pileup's defaults: `-d 4000`, overlap adjustment on.
    fn default() -> Self {
        PileupOptions { max_depth: 4000, overlaps: true, filter: ReadFilter::default() }
    }
}

/// Where a pileup's reads come from, in coordinate order.
pub trait RecordSource {
    /// Moves to the next record; false at the end.
    fn advance(&mut self) -> Result<bool, PileupError>;
    /// The record `advance` moved to.
    fn current(&self) -> RecordRef<'_>;
}

/// Every record of a BAM, in file order.
pub struct FileRecords<'a> {
    reader: RecordReader<'a>,
}

impl<'a> FileRecords<'a> {
    /// Records from the first one on.
    pub fn new(bam: &'a BamFile) -> Result<Self, PileupError> {
        Ok(FileRecords { reader: bam.records()? })
    }
}

impl RecordSource for FileRecords<'_> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        Ok(self.reader.advance()?)
    }
    fn current(&self) -> RecordRef<'_> {
        self.reader.current()
    }
}

/// The records overlapping `[beg, end)` of one reference, read through the
/// index as htslib's `sam_itr_queryi` + `sam_itr_next` read them.
pub struct RegionRecords<'a> {
    bam: &'a BamFile,
    chunks: Vec<Chunk>,
    /// Index of the chunk being read (`usize::MAX` before the first).
    chunk: usize,
    reader: Option<RecordReader<'a>>,
    tid: i32,
    beg: i64,
    end: i64,
    done: bool,
    /// Compressed offset past which blocks are inflated one at a time.
    soft_end: u64,
}

impl<'a> RegionRecords<'a> {
    /// Reads overlapping zero-based `[beg, end)` of reference `tid`.
    pub fn new(bam: &'a BamFile, index: &Index, tid: usize, beg: i64, end: i64) -> Self {
        let chunks = index.query(tid, beg, end);
        RegionRecords {
            bam,
            done: chunks.is_empty(),
            chunks,
            chunk: usize::MAX,
            reader: None,
            tid: tid as i32,
            beg,
            end,
            soft_end: u64::MAX,
        }
    }

    /// Hints that reading will probably stop soon after position
    /// `likely_end` (say, a region's end while the query runs to the end of
    /// the reference): blocks past the data of `[beg, likely_end)` are then
    /// inflated one at a time, not in batches.
    pub fn expect_end(&mut self, index: &Index, likely_end: i64) {
        let tid = self.tid as usize;
        if let Some(c) = index.query(tid, self.beg, likely_end.max(self.beg + 1)).last() {
            self.soft_end = c.end.compressed();
        }
    }
}

impl RecordSource for RegionRecords<'_> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        loop {
            if self.done {
                return Ok(false);
            }
            // htslib moves on when the offset after the last record read
            // (`bgzf_tell`) reaches the chunk's end.
            let need_next = match (&self.reader, self.chunks.get(self.chunk)) {
                (Some(r), Some(c)) => r.record_end() >= c.end,
                _ => true,
            };
            if need_next {
                let next = self.chunk.wrapping_add(1);
                if next >= self.chunks.len() {
                    self.done = true;
                    return Ok(false);
                }
                let contiguous = self.chunk != usize::MAX && self.chunks[self.chunk].end == self.chunks[next].start;
                if !contiguous || self.reader.is_none() {
                    let mut r = self.bam.records_from(self.chunks[next].start).map_err(|e| e.with_path(self.bam.path()))?;
                    r.set_parallel(false);
                    self.reader = Some(r);
                }
                self.chunk = next;
                if let (Some(r), Some(c)) = (self.reader.as_mut(), self.chunks.get(next)) {
                    r.set_soft_limit(c.end.compressed().min(self.soft_end));
                }
            }
            let Some(reader) = self.reader.as_mut() else { return Ok(false) };
            let more = reader.advance().map_err(|e| crate::Error::from(e).with_path(self.bam.path()))?;
            if !more {
                self.done = true;
                return Ok(false);
            }
            let r = reader.current();
            if r.ref_id() != self.tid || i64::from(r.pos()) >= self.end {
                self.done = true;
                return Ok(false);
            }
            if r.end_pos() > self.beg {
                return Ok(true);
            }
        }
    }

    fn current(&self) -> RecordRef<'_> {
        match &self.reader {
            Some(r) => r.current(),
            None => panic!("RegionRecords::current called before a successful advance"),
        }
    }
}

const HTS_POS_MAX: i64 = ((i32::MAX as i64) << 32) | i32::MAX as i64;

/// A multi-file pileup (htslib's `bam_mplp_auto` with FACETS-style read
/// filtering). See the [module documentation](self).
pub struct Pileup<S> {
    files: Vec<PlpFile>,
    sources: Vec<S>,
    filter: ReadFilter,
    tid: Vec<i32>,
    pos: Vec<i64>,
    has: Vec<bool>,
    in_column: Vec<bool>,
    min_tid: u32,
    min_pos: i64,
}

impl<S: RecordSource> Pileup<S> {
    /// A pileup over `sources` (one per file).
    pub fn new(sources: Vec<S>, options: &PileupOptions) -> Self {
        let n = sources.len();
        Pileup {
            files: (0..n).map(|_| PlpFile::new(options.max_depth, options.overlaps)).collect(),
            sources,
            filter: options.filter.clone(),
            tid: vec![-1; n],
            pos: vec![HTS_POS_MAX; n],
            has: vec![false; n],
            in_column: vec![false; n],
            min_tid: u32::MAX,
            min_pos: HTS_POS_MAX,
        }
    }

    /// Number of files.
    pub fn n_files(&self) -> usize {
        self.files.len()
    }

    /// `bam_plp64_auto` for file `i`.
    fn file_next(&mut self, i: usize, want: &dyn Fn(i32, i64) -> bool) -> Result<Option<(i32, i64)>, PileupError> {
        if let Some(c) = self.files[i].next(want)? {
            return Ok(Some(c));
        }
        if self.files[i].is_eof_pub() {
            return Ok(None);
        }
        loop {
            let src = &mut self.sources[i];
            let mut found = false;
            while src.advance()? {
                if self.filter.keep(&src.current()) {
                    found = true;
                    break;
                }
            }
            if !found {
                break;
            }
            let rec = self.sources[i].current();
            self.files[i].push(Some(&rec))?;
            if let Some(c) = self.files[i].next(want)? {
                return Ok(Some(c));
            }
        }
        self.files[i].push(None)?;
        self.files[i].next(want)
    }

    /// Moves to the next covered position, `(tid, pos)` zero-based; `None`
    /// when every file is exhausted.
    pub fn next_column(&mut self) -> Result<Option<(i32, i64)>, PileupError> {
        self.next_column_where(&|_, _| true)
    }

    /// As [`Pileup::next_column`], but the reads of a column are only
    /// resolved (made available to [`Pileup::reads`]) where `want(tid, pos)`
    /// holds; elsewhere [`Pileup::depth`] is still right and `reads` is
    /// empty. Skipping columns a caller does not look at saves most of the
    /// work; which columns are visited does not change.
    pub fn next_column_where(&mut self, want: &dyn Fn(i32, i64) -> bool) -> Result<Option<(i32, i64)>, PileupError> {
        let mut new_min_pos = HTS_POS_MAX;
        let mut new_min_tid = u32::MAX;
        for i in 0..self.files.len() {
            if self.pos[i] == self.min_pos && self.tid[i] as u32 == self.min_tid {
                match self.file_next(i, want)? {
                    Some((t, p)) => {
                        self.has[i] = true;
                        self.tid[i] = t;
                        self.pos[i] = p;
                    }
                    None => {
                        self.has[i] = false;
                        self.tid[i] = 0;
                        self.pos[i] = 0;
                    }
                }
            }
            if self.has[i] {
                let t = self.tid[i] as u32;
                if t < new_min_tid {
                    new_min_tid = t;
                    new_min_pos = self.pos[i];
                } else if t == new_min_tid && self.pos[i] < new_min_pos {
                    new_min_pos = self.pos[i];
                }
            }
        }
        self.min_pos = new_min_pos;
        self.min_tid = new_min_tid;
        if new_min_pos == HTS_POS_MAX {
            self.in_column.iter_mut().for_each(|c| *c = false);
            return Ok(None);
        }
        for i in 0..self.files.len() {
            self.in_column[i] = self.has[i] && self.pos[i] == new_min_pos && self.tid[i] as u32 == new_min_tid;
        }
        Ok(Some((new_min_tid as i32, new_min_pos)))
    }

    /// Number of reads of file `i` at the current column (htslib's
    /// `n_plp`: reads covering it, deletions and ref-skips included).
    pub fn depth(&self, i: usize) -> usize {
        if self.in_column[i] {
            self.files[i].n_plp
        } else {
            0
        }
    }

    /// The reads of file `i` at the current column.
    pub fn reads(&self, i: usize) -> impl Iterator<Item = PileupRead<'_>> + '_ {
        let f = &self.files[i];
        let plp: &[Entry] = if self.in_column[i] { &f.plp } else { &[] };
        plp.iter().map(move |e| PileupRead { node: &f.nodes[e.node as usize], entry: e })
    }

    /// Largest number of buffered reads (+1, htslib's node count) seen in
    /// any file when a read was added: when it never exceeded `max_depth`,
    /// the depth cap dropped nothing.
    pub fn max_buffered(&self) -> i64 {
        self.files.iter().map(|f| f.max_cnt_seen).max().unwrap_or(0)
    }

    /// Reads dropped by the depth cap, over all files.
    pub fn dropped(&self) -> u64 {
        self.files.iter().map(|f| f.dropped).sum()
    }
}

/// One read at a pileup column.
#[derive(Clone, Copy)]
pub struct PileupRead<'a> {
    node: &'a Node,
    entry: &'a Entry,
}

impl PileupRead<'_> {
    /// Query position of the base (for a deletion or ref-skip: of the base
    /// after it, as htslib).
    #[inline]
    pub fn qpos(&self) -> usize {
        self.entry.qpos as usize
    }
    /// The read is in a deletion or ref-skip here.
    #[inline]
    pub fn is_del(&self) -> bool {
        self.entry.is_del
    }
    /// The read is in a ref-skip (CIGAR N) here.
    #[inline]
    pub fn is_refskip(&self) -> bool {
        self.entry.is_refskip
    }
    /// Length of an insertion (positive) or deletion (negative) following
    /// this position, 0 if none.
    #[inline]
    pub fn indel(&self) -> i32 {
        self.entry.indel
    }
    /// This is the read's first aligned position.
    pub fn is_head(&self) -> bool {
        self.entry.is_head
    }
    /// This is the read's last aligned position.
    pub fn is_tail(&self) -> bool {
        self.entry.is_tail
    }
    /// The base quality at [`PileupRead::qpos`] (after any overlap
    /// adjustment), 0 past the end of the sequence.
    #[inline]
    pub fn qual(&self) -> u8 {
        self.node.qual.get(self.qpos()).copied().unwrap_or(0)
    }
    /// The 4-bit base code at [`PileupRead::qpos`].
    #[inline]
    pub fn base_code(&self) -> u8 {
        self.node.base_code(self.qpos())
    }
    /// The base at [`PileupRead::qpos`] as an uppercase letter (`=ACMGRSVTWYHKDBN`).
    #[inline]
    pub fn base(&self) -> u8 {
        b"=ACMGRSVTWYHKDBN"[usize::from(self.base_code())]
    }
    /// Mapping quality.
    pub fn mapq(&self) -> u8 {
        self.node.mapq
    }
    /// SAM flag.
    pub fn flag(&self) -> u16 {
        self.node.flag
    }
    /// The read is on the reverse strand.
    pub fn is_reverse(&self) -> bool {
        self.node.flag & flags::REVERSE != 0
    }
    /// Mate's reference id.
    pub fn mate_tid(&self) -> i32 {
        self.node.mtid
    }
    /// Mate's 0-based position.
    pub fn mate_pos(&self) -> i64 {
        self.node.mpos
    }
    /// Template length.
    pub fn template_len(&self) -> i32 {
        self.node.isize
    }
    /// Read name.
    pub fn name(&self) -> &[u8] {
        &self.node.name
    }
    /// 0-based start and (exclusive) end on the reference.
    pub fn span(&self) -> (i64, i64) {
        (self.node.beg, self.node.end)
    }
}
