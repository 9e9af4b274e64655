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
//! the interval). Two users: FACETS' snp-pileup ([`snp`]) and counts at
//! arbitrary positions as samtools mpileup shows them ([`counts`]).
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

pub mod baq;
pub mod base_counts;
pub mod columns;
pub mod counts;
mod engine;
pub mod snp;
pub mod vcf;

use crate::bam::{flags, BamFile, RecordReader, RecordRef};
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
    /// A reference the pileup reads against is not in the FASTA (pysam's
    /// words).
    #[error("reference sequence for '{}' (tid={tid}) not found", String::from_utf8_lossy(name))]
    MissingReference {
        /// The reference's name in the alignment file's header.
        name: Vec<u8>,
        /// Its id.
        tid: i32,
    },
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

/// Every pileup source can be a query of an indexed file.
pub use crate::region::indexed::RegionRecords;

impl RecordSource for RegionRecords<'_> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        Ok(RegionRecords::advance(self)?)
    }
    fn current(&self) -> RecordRef<'_> {
        RegionRecords::current(self)
    }
}

/// The records of a query of an indexed BAM, bgzipped SAM or CRAM file
/// ([`crate::region::indexed::IndexedFile::query`]).
impl RecordSource for crate::region::indexed::Records<'_> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        Ok(crate::region::indexed::Records::advance(self)?)
    }
    fn current(&self) -> RecordRef<'_> {
        crate::region::indexed::Records::current(self)
    }
}

/// The records of a query to the end of a reference, local or fetched as
/// read ([`crate::region::indexed::IndexedFile::query_onwards`]).
impl RecordSource for crate::region::indexed::Onwards<'_> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        Ok(crate::region::indexed::Onwards::advance(self)?)
    }
    fn current(&self) -> RecordRef<'_> {
        crate::region::indexed::Onwards::current(self)
    }
}

/// A multi-file pileup (htslib's `bam_mplp_auto` with FACETS-style read
/// filtering). See the [module documentation](self).
///
/// Columns are visited in genome order, either every covered one
/// ([`Pileup::next_column`]) or only those asked for ([`Pileup::goto`],
/// with [`Pileup::next_covered`] to find covered positions): either way no
/// work is done at the columns in between, and the results are htslib's.
pub struct Pileup<S> {
    files: Vec<PlpFile>,
    sources: Vec<S>,
    filter: ReadFilter,
    in_column: Vec<bool>,
    /// The last column returned by `next_column`.
    cur: Option<(i32, i64)>,
    /// The column `goto_depth` moved to, its reads not collected yet.
    unresolved: Option<(i32, i64)>,
}

impl<S: RecordSource> Pileup<S> {
    /// A pileup over `sources` (one per file).
    pub fn new(sources: Vec<S>, options: &PileupOptions) -> Self {
        let n = sources.len();
        Pileup {
            files: (0..n).map(|_| PlpFile::new(options.max_depth, options.overlaps)).collect(),
            sources,
            filter: options.filter.clone(),
            in_column: vec![false; n],
            cur: None,
            unresolved: None,
        }
    }

    /// Keeps a copy of every read's whole record, with its qualities as
    /// the overlap adjustment leaves them ([`PileupRead::record`]).
    pub fn keep_records(mut self) -> Self {
        self.files.iter_mut().for_each(|f| f.keep_records = true);
        self
    }

    /// Adjusts overlapping mates' qualities as htslib 1.17 and later do
    /// (pysam 0.24 bundles htslib 1.24): where one mate has a deletion and
    /// the other bases, the other's qualities there are amended too (1.16,
    /// the default here, leaves them).
    pub fn overlaps_as_htslib_1_17(mut self) -> Self {
        self.files.iter_mut().for_each(|f| f.overlap_catch_up = true);
        self
    }

    /// The source of file `i`.
    pub fn source(&self, i: usize) -> &S {
        &self.sources[i]
    }

    /// Number of files.
    pub fn n_files(&self) -> usize {
        self.files.len()
    }

    /// Adds file `i`'s next kept read to its pileup (or marks its end).
    fn push_next(&mut self, i: usize) -> Result<(), PileupError> {
        let src = &mut self.sources[i];
        while src.advance()? {
            let rec = src.current();
            if self.filter.keep(&rec) {
                return self.files[i].push(Some(&rec));
            }
        }
        self.files[i].push(None)
    }

    /// Pushes file `i`'s reads until column `(tid, pos)` is settled.
    fn settle(&mut self, i: usize, tid: i32, pos: i64) -> Result<(), PileupError> {
        // The caller asks for this column next: reads ending before it can go.
        self.files[i].raise_floor(tid, pos);
        while !self.files[i].settled(tid, pos) {
            self.push_next(i)?;
        }
        Ok(())
    }

    /// The first column at or after `(tid, pos)` (zero-based) that some file
    /// covers, i.e. that htslib would visit; `None` if there is none. Columns
    /// before it can no longer be asked for.
    pub fn next_covered(&mut self, tid: i32, pos: i64) -> Result<Option<(i32, i64)>, PileupError> {
        let mut best: Option<(i32, i64)> = None;
        for i in 0..self.files.len() {
            let found = loop {
                if let Some(c) = self.files[i].first_covered(tid, pos) {
                    break Some(c);
                }
                if self.files[i].is_eof() {
                    break None;
                }
                self.push_next(i)?;
            };
            if let Some(c) = found {
                if best.is_none_or(|b| c < b) {
                    best = Some(c);
                }
            }
        }
        Ok(best)
    }

    /// Makes column `(tid, pos)` current: [`Pileup::depth`] and
    /// [`Pileup::reads`] then describe it (empty where a file does not cover
    /// it). Returns whether any file covers it. Columns must be asked for in
    /// increasing order.
    pub fn goto(&mut self, tid: i32, pos: i64) -> Result<bool, PileupError> {
        self.unresolved = None;
        let mut any = false;
        for i in 0..self.files.len() {
            self.settle(i, tid, pos)?;
            let n = self.files[i].column(tid, pos, true)?;
            self.in_column[i] = n > 0;
            any |= n > 0;
        }
        Ok(any)
    }

    /// As [`Pileup::goto`], without collecting the reads: only
    /// [`Pileup::depth`] describes the column until
    /// [`Pileup::resolve_current`] collects them.
    pub fn goto_depth(&mut self, tid: i32, pos: i64) -> Result<bool, PileupError> {
        let mut any = false;
        for i in 0..self.files.len() {
            self.settle(i, tid, pos)?;
            let n = self.files[i].column(tid, pos, false)?;
            self.in_column[i] = n > 0;
            any |= n > 0;
        }
        self.unresolved = Some((tid, pos));
        Ok(any)
    }

    /// Collects the reads of the column [`Pileup::goto_depth`] moved to
    /// (nothing when it was not, or they are collected).
    pub fn resolve_current(&mut self) -> Result<(), PileupError> {
        let Some((tid, pos)) = self.unresolved.take() else { return Ok(()) };
        for i in 0..self.files.len() {
            if self.in_column[i] {
                self.files[i].column(tid, pos, true)?;
            }
        }
        Ok(())
    }

    /// Appends every file's covered intervals `(tid, beg, end)` before
    /// `(tid, end)` to `out` (unsorted across files, possibly overlapping),
    /// reading as far as needed to know them all; they are then forgotten.
    pub fn coverage_until(&mut self, tid: i32, end: i64, out: &mut Vec<(i32, i64, i64)>) -> Result<(), PileupError> {
        for i in 0..self.files.len() {
            self.settle(i, tid, end)?;
            self.files[i].take_coverage_before(tid, end, out);
        }
        Ok(())
    }

    /// Moves to the next covered position, `(tid, pos)` zero-based; `None`
    /// when every file is exhausted.
    pub fn next_column(&mut self) -> Result<Option<(i32, i64)>, PileupError> {
        let (t, p) = match self.cur {
            None => (0, 0),
            Some((t, p)) => (t, p + 1),
        };
        let Some(c) = self.next_covered(t, p)? else {
            self.in_column.iter_mut().for_each(|c| *c = false);
            return Ok(None);
        };
        self.goto(c.0, c.1)?;
        self.cur = Some(c);
        Ok(Some(c))
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
    /// The whole record (BAM bytes without `block_size`) with its
    /// qualities as adjusted so far, when the pileup keeps records
    /// ([`Pileup::keep_records`]).
    pub fn record(&self) -> Option<&std::sync::Arc<Vec<u8>>> {
        self.node.rec.as_ref()
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
