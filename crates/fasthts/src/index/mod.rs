//! BAI and CSI indexes: data model, reading, writing, building, querying and
//! `samtools idxstats`.
//!
//! An [`Index`] holds, for every reference sequence, the bins of the
//! hierarchical binning scheme ([`binning`]) with their chunks of virtual
//! offsets, the BAI linear index, and the metadata pseudo-bin samtools adds
//! (where the reference's records start and end, how many are mapped and
//! unmapped). [`IndexBuilder`] makes one from a coordinate-sorted record
//! stream exactly as `samtools index` does; [`Index::query`] turns a region
//! into the chunks a reader must scan, as htslib's iterator does. Which
//! index a file ([`Indexed`]: a BAM, a bgzipped SAM) is read through is
//! decided here too: the one beside it ([`locate_index`], [`find_index`]),
//! its spans checked ([`verify_index`]), whether it places every record
//! ([`check_placed_coverage`]), and so whether a whole-file job reads
//! through it or sequentially ([`by_index_or_sequentially`]); [`build`]
//! makes one from the file.
//!
//! Compatibility with samtools 1.16: an index built here serializes byte for
//! byte as `samtools index` (`-b`, `-c`, `-m N`) writes it for the same BAM.
//! The builder replays htslib's `hts_idx_push`/`hts_idx_finish` and keeps
//! bins in a model of htslib's hash table, so even the bin order matches; a
//! BAI file is identical, a CSI identical once inflated (and compressed too
//! whenever the bundled libdeflate emits the same stream as the system's,
//! which it did on every test file but a few of under 100 bytes). The tests
//! check this against samtools on generated BAMs and on the fixtures in
//! `tests/data/index`, and check that `samtools idxstats` and
//! `samtools view IN REGION` print the same with either index.
//!
//! Read a samtools-made index and print `samtools idxstats`:
//!
//! ```
//! use fasthts::index::{idxstats, Index};
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/index/small.bam.bai");
//! let index = Index::from_path(path)?;
//! let refs = [("chr1", 200_000u64), ("empty", 5_000), ("chr3", 40_000)];
//! assert_eq!(
//!     idxstats(&index, &refs),
//!     "chr1\t200000\t54\t6\nempty\t5000\t0\t0\nchr3\t40000\t10\t0\n*\t0\t0\t3\n"
//! );
//! // Where to start reading for records overlapping chr1:100,001-101,000.
//! let chunks = index.query(0, 100_000, 101_000);
//! assert!(!chunks.is_empty());
//! # Ok::<(), fasthts::index::IndexError>(())
//! ```
//!
//! Build, write, read back and query:
//!
//! ```
//! use fasthts::bgzf::VirtualOffset;
//! use fasthts::index::{Index, IndexBuilder, IndexFormat};
//!
//! let vo = |c, u| VirtualOffset::new(c, u).unwrap();
//! // Two references; records of reference 0 in one BGZF block at offset 100.
//! let mut builder = IndexBuilder::new(IndexFormat::Bai, 2, vo(0, 200));
//! builder.push(0, 1000, 1100, vo(0, 300), true)?;
//! builder.push(0, 1050, 1150, vo(0, 400), true)?;
//! builder.push(0, 1060, 1061, vo(0, 500), false)?; // unmapped, placed
//! builder.push(-1, -1, 0, vo(0, 600), false)?; // no coordinate
//! let index = builder.finish(vo(700, 0))?;
//!
//! let bytes = index.to_bytes();
//! let index = Index::from_bytes(&bytes)?;
//! assert_eq!(index.mapped_unmapped(0), Some((2, 1)));
//! assert_eq!(index.n_no_coor(), Some(1));
//! let chunks = index.query(0, 1099, 1101);
//! assert_eq!(chunks.len(), 1);
//! assert_eq!(chunks[0].start, vo(0, 200));
//! let stats = fasthts::index::idxstats(&index, &[("chr1", 5000u64), ("chr2", 300)]);
//! assert_eq!(stats, "chr1\t5000\t2\t1\nchr2\t300\t0\t0\n*\t0\t0\t1\n");
//! # Ok::<(), fasthts::index::IndexError>(())
//! ```

mod builder;
mod codec;
mod covering;
mod indexed;
mod khash;
mod locate;
mod make;
mod query;
mod stats;
#[cfg(test)]
mod tests;

use crate::bgzf::VirtualOffset;

/// The binning scheme, which BAM records' `bin` field uses too.
pub use crate::bam::binning;
pub use builder::{csi_depth, IndexBuilder, IndexSegment, DEFAULT_MIN_SHIFT};
pub use covering::{by_index_or_sequentially, check_placed_coverage, index_covers, replace_if_not_covering};
pub(crate) use covering::{covering_index, indexed_or_sequential};
pub use crate::error::index::IndexError;
pub use indexed::Indexed;
pub use locate::{
    find_index, index_path_for, load_index, locate, locate_index, no_index_for_regions, sam_not_indexable, split_index_name, verify_index,
    IndexLocation,
};
pub(crate) use locate::usable_index;
pub use make::{build, build_index, build_sam, format_for, not_coordinate_sorted, write_index};
pub use stats::{idxstats, idxstats_by_scan, idxstats_for, IdxstatsCounts};

/// BAI's smallest window: 2^14 = 16384 bases.
pub const BAI_MIN_SHIFT: u32 = 14;
/// BAI's number of levels below the root.
pub const BAI_DEPTH: u32 = 5;

/// Which index format, with its binning parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexFormat {
    /// BAI: 16 kb windows, 5 levels, a linear index, 2^29 bases per reference.
    Bai,
    /// CSI: windows of `2^min_shift` bases and `depth` levels below the root;
    /// no linear index, a per-bin minimum offset instead.
    Csi {
        /// log2 of the smallest window (samtools' `-m`, default 14).
        min_shift: u32,
        /// Levels below the root (htslib's `n_lvls`).
        depth: u32,
    },
}

impl IndexFormat {
    /// log2 of the smallest window.
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Bai.min_shift(), 14);
    /// ```
    pub fn min_shift(self) -> u32 {
        match self {
            IndexFormat::Bai => BAI_MIN_SHIFT,
            IndexFormat::Csi { min_shift, .. } => min_shift,
        }
    }

    /// Levels below the root.
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Csi { min_shift: 14, depth: 6 }.depth(), 6);
    /// ```
    pub fn depth(self) -> u32 {
        match self {
            IndexFormat::Bai => BAI_DEPTH,
            IndexFormat::Csi { depth, .. } => depth,
        }
    }

    /// Number of real bins (ids `0..bin_count`).
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Bai.bin_count(), 37449);
    /// ```
    pub fn bin_count(self) -> u32 {
        binning::bin_count(self.depth())
    }

    /// Id of the metadata pseudo-bin (`bin_count + 1`: 37450 for BAI).
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Bai.metadata_bin(), 37450);
    /// ```
    pub fn metadata_bin(self) -> u32 {
        self.bin_count() + 1
    }

    /// One past the largest coordinate the index can address,
    /// `2^(min_shift + 3 * depth)`.
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Bai.max_position(), 1 << 29);
    /// ```
    pub fn max_position(self) -> i64 {
        let (min_shift, depth) = binning::clamp(self.min_shift(), self.depth());
        1i64 << (min_shift + 3 * depth)
    }

    /// Checks that the parameters are supported: a CSI needs
    /// `depth <= 10` and `min_shift + 3 * depth <= 62`.
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert!(IndexFormat::Csi { min_shift: 14, depth: 6 }.validate().is_ok());
    /// assert!(IndexFormat::Csi { min_shift: 40, depth: 8 }.validate().is_err());
    /// ```
    pub fn validate(self) -> Result<(), IndexError> {
        match self {
            IndexFormat::Bai => Ok(()),
            IndexFormat::Csi { min_shift, depth } => {
                if depth <= binning::MAX_DEPTH
                    && u64::from(min_shift) + 3 * u64::from(depth)
                        <= u64::from(binning::MAX_SPAN_SHIFT)
                {
                    Ok(())
                } else {
                    Err(IndexError::UnsupportedCsi {
                        min_shift: i64::from(min_shift),
                        depth: i64::from(depth),
                    })
                }
            }
        }
    }

    /// `"bai"` or `"csi"`.
    ///
    /// ```
    /// use fasthts::index::IndexFormat;
    /// assert_eq!(IndexFormat::Bai.name(), "bai");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            IndexFormat::Bai => "bai",
            IndexFormat::Csi { .. } => "csi",
        }
    }

    fn is_csi(self) -> bool {
        matches!(self, IndexFormat::Csi { .. })
    }
}

/// A half-open range `[start, end)` of virtual offsets: records whose first
/// byte lies in it.
///
/// ```
/// use fasthts::bgzf::VirtualOffset;
/// use fasthts::index::Chunk;
/// let c = Chunk::new(VirtualOffset::from(10), VirtualOffset::from(20));
/// assert!(c.start < c.end);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Chunk {
    /// Virtual offset of the first record.
    pub start: VirtualOffset,
    /// Virtual offset just past the last record.
    pub end: VirtualOffset,
}

impl Chunk {
    /// A chunk from its two ends.
    ///
    /// ```
    /// use fasthts::bgzf::VirtualOffset;
    /// use fasthts::index::Chunk;
    /// let c = Chunk::new(VirtualOffset::from(1), VirtualOffset::from(2));
    /// assert_eq!(u64::from(c.end), 2);
    /// ```
    pub fn new(start: VirtualOffset, end: VirtualOffset) -> Self {
        Self { start, end }
    }
}

/// One bin of a reference: its id and the chunks of records it holds.
///
/// ```
/// use fasthts::index::Bin;
/// let bin = Bin { id: 4681, loffset: 0.into(), chunks: Vec::new() };
/// assert_eq!(fasthts::index::binning::bin_level(bin.id), 5);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bin {
    /// Bin number.
    pub id: u32,
    /// Smallest virtual offset of a record overlapping the bin's first
    /// smallest window. Stored in CSI files; for BAI it is not in the file
    /// and is derived from the linear index when the [`Index`] is made, as
    /// htslib does when it loads a BAI.
    pub loffset: VirtualOffset,
    /// Chunks, in the order stored.
    pub chunks: Vec<Chunk>,
}

/// The metadata pseudo-bin samtools writes for every reference with records.
///
/// ```
/// use fasthts::index::Metadata;
/// let m = Metadata { ref_beg: 100.into(), ref_end: 900.into(), n_mapped: 3, n_unmapped: 1 };
/// assert_eq!(m.n_mapped + m.n_unmapped, 4);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Metadata {
    /// Virtual offset of the reference's first record.
    pub ref_beg: VirtualOffset,
    /// Virtual offset just past its last record.
    pub ref_end: VirtualOffset,
    /// Records without the unmapped flag (0x4).
    pub n_mapped: u64,
    /// Records with the unmapped flag placed on this reference.
    pub n_unmapped: u64,
}

/// The index of one reference sequence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceIndex {
    bins: Vec<Bin>,
    /// The rest, boxed: most references of a draft assembly's index hold
    /// nothing, and 600,000 of them at 32 bytes each load in a fraction of
    /// the time (and memory) they took at 144. `None` when all of it is
    /// empty.
    rest: Option<Box<ReferenceRest>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
struct ReferenceRest {
    linear: Vec<VirtualOffset>,
    metadata: Option<Metadata>,
    /// How many of `bins` precede the metadata pseudo-bin on disk.
    metadata_slot: usize,
    /// The BAI linear index as htslib sees it after loading (zeros and
    /// all-ones entries filled); empty for CSI.
    effective_linear: Vec<u64>,
    /// `(bin id, position in bins)`, sorted by id.
    lookup: Vec<(u32, u32)>,
}

impl ReferenceIndex {
    /// A reference index from its bins (in on-disk order, without the
    /// metadata pseudo-bin), its linear index (empty for CSI) and its
    /// metadata, which is written after the bins.
    ///
    /// ```
    /// use fasthts::index::{Bin, Chunk, ReferenceIndex};
    /// let r = ReferenceIndex::new(
    ///     vec![Bin { id: 4681, loffset: 0.into(), chunks: vec![Chunk::new(10.into(), 20.into())] }],
    ///     vec![10.into()],
    ///     None,
    /// );
    /// assert_eq!(r.bins().len(), 1);
    /// ```
    pub fn new(bins: Vec<Bin>, linear: Vec<VirtualOffset>, metadata: Option<Metadata>) -> Self {
        let slot = bins.len();
        Self::with_slot(bins, linear, metadata, slot)
    }

    pub(crate) fn with_slot(
        bins: Vec<Bin>,
        linear: Vec<VirtualOffset>,
        metadata: Option<Metadata>,
        slot: usize,
    ) -> Self {
        let mut lookup: Vec<(u32, u32)> = bins
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id, i as u32))
            .collect();
        lookup.sort_unstable();
        let rest = ReferenceRest {
            metadata_slot: slot.min(bins.len()),
            linear,
            metadata,
            effective_linear: Vec::new(),
            lookup,
        };
        let mut r = Self { bins, rest: None };
        r.set_rest(rest);
        r
    }

    /// Keeps `rest` boxed unless it is all empty.
    fn set_rest(&mut self, rest: ReferenceRest) {
        self.rest = (rest != ReferenceRest::default()).then(|| Box::new(rest));
    }

    fn linear(&self) -> &[VirtualOffset] {
        self.rest.as_ref().map_or(&[], |r| &r.linear)
    }

    /// How many of the bins precede the metadata pseudo-bin on disk.
    fn metadata_slot(&self) -> usize {
        self.rest.as_ref().map_or(0, |r| r.metadata_slot)
    }

    /// The BAI linear index as htslib sees it after loading (zeros and
    /// all-ones entries filled); empty for CSI.
    fn effective_linear(&self) -> &[u64] {
        self.rest.as_ref().map_or(&[], |r| &r.effective_linear)
    }

    /// `(bin id, position in bins)`, sorted by id.
    fn lookup(&self) -> &[(u32, u32)] {
        self.rest.as_ref().map_or(&[], |r| &r.lookup)
    }

    /// Bins in on-disk order, without the metadata pseudo-bin.
    pub fn bins(&self) -> &[Bin] {
        &self.bins
    }

    /// The bin with this id, if present.
    pub fn bin(&self, id: u32) -> Option<&Bin> {
        let lookup = self.lookup();
        lookup
            .binary_search_by_key(&id, |&(k, _)| k)
            .ok()
            .and_then(|i| self.bins.get(lookup[i].1 as usize))
    }

    /// The BAI linear index as stored: for each window of 2^14 bases, the
    /// smallest virtual offset of a record overlapping it or a later window.
    /// Empty for CSI.
    pub fn linear_index(&self) -> &[VirtualOffset] {
        self.linear()
    }

    /// The metadata pseudo-bin, if the reference has one.
    pub fn metadata(&self) -> Option<&Metadata> {
        self.rest.as_ref().and_then(|r| r.metadata.as_ref())
    }

    /// Number of bins written for this reference, the pseudo-bin included.
    fn n_bins_on_disk(&self) -> usize {
        self.bins.len() + usize::from(self.metadata().is_some())
    }

    /// Derives what htslib derives when it loads a BAI: the linear index
    /// with missing entries filled, and each bin's `loffset`.
    fn derive_bai(&mut self) {
        let mut lin: Vec<u64> = self.linear().iter().map(|&v| u64::from(v)).collect();
        // Zeros after the first non-zero entry take the next entry's value.
        if let Some(k) = lin.iter().position(|&v| v != 0) {
            for j in (k + 1..lin.len()).rev() {
                if lin[j - 1] == 0 {
                    lin[j - 1] = lin[j];
                }
            }
        }
        // Unset (all-ones) entries take the next entry's value.
        for l in (0..lin.len().saturating_sub(1)).rev() {
            if lin[l] == u64::MAX {
                lin[l] = lin[l + 1];
            }
        }
        let n_bins = binning::bin_count(BAI_DEPTH);
        for bin in &mut self.bins {
            let loff = if bin.id < n_bins {
                let bot = binning::bin_bottom(bin.id, BAI_DEPTH);
                usize::try_from(bot)
                    .ok()
                    .and_then(|b| lin.get(b))
                    .copied()
                    .unwrap_or(0)
            } else {
                0
            };
            bin.loffset = VirtualOffset::from(loff);
        }
        let mut rest = self.rest.take().map_or_else(ReferenceRest::default, |r| *r);
        rest.effective_linear = lin;
        self.set_rest(rest);
    }
}

/// A BAI or CSI index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    format: IndexFormat,
    references: Vec<ReferenceIndex>,
    n_no_coor: Option<u64>,
    aux: Vec<u8>,
}

impl Index {
    /// An index from its parts. For BAI, each bin's `loffset` is derived from
    /// the linear index (as htslib does on load); for CSI it is kept.
    /// `n_no_coor` is the trailing count of records without a coordinate,
    /// absent in some old files.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat, ReferenceIndex};
    /// let index = Index::new(IndexFormat::Bai, vec![ReferenceIndex::new(vec![], vec![], None)], Some(0));
    /// assert_eq!(index.references().len(), 1);
    /// ```
    pub fn new(
        format: IndexFormat,
        references: Vec<ReferenceIndex>,
        n_no_coor: Option<u64>,
    ) -> Self {
        let mut references = references;
        if format == IndexFormat::Bai {
            for r in &mut references {
                r.derive_bai();
            }
        }
        Self {
            format,
            references,
            n_no_coor,
            aux: Vec::new(),
        }
    }

    /// Sets the CSI auxiliary data (htslib's `meta`: a tabix header for
    /// VCF/BED CSI files; empty for BAM). Ignored when writing a BAI.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat};
    /// let index = Index::new(IndexFormat::Csi { min_shift: 14, depth: 5 }, vec![], None).with_aux(vec![1, 2]);
    /// assert_eq!(index.aux(), &[1, 2]);
    /// ```
    pub fn with_aux(mut self, aux: Vec<u8>) -> Self {
        self.aux = aux;
        self
    }

    /// The format and its binning parameters.
    pub fn format(&self) -> IndexFormat {
        self.format
    }

    /// Per-reference indexes, by reference id.
    pub fn references(&self) -> &[ReferenceIndex] {
        &self.references
    }

    /// The index of reference `tid`, if the index covers it.
    pub fn reference(&self, tid: usize) -> Option<&ReferenceIndex> {
        self.references.get(tid)
    }

    /// Records without a coordinate, when the file records the count.
    pub fn n_no_coor(&self) -> Option<u64> {
        self.n_no_coor
    }

    /// CSI auxiliary data (empty for BAM indexes and BAI).
    pub fn aux(&self) -> &[u8] {
        &self.aux
    }

    /// Mapped and unmapped record counts of reference `tid` from its
    /// metadata pseudo-bin; `None` when the reference has none.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat, Metadata, ReferenceIndex};
    /// let meta = Metadata { ref_beg: 1.into(), ref_end: 2.into(), n_mapped: 5, n_unmapped: 2 };
    /// let index = Index::new(IndexFormat::Bai, vec![ReferenceIndex::new(vec![], vec![], Some(meta))], Some(0));
    /// assert_eq!(index.mapped_unmapped(0), Some((5, 2)));
    /// assert_eq!(index.mapped_unmapped(1), None);
    /// ```
    pub fn mapped_unmapped(&self, tid: usize) -> Option<(u64, u64)> {
        self.reference(tid)
            .and_then(|r| r.metadata())
            .map(|m| (m.n_mapped, m.n_unmapped))
    }
}
