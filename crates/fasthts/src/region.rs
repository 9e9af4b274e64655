//! Scatter/gather over genomic regions (the mmbam idea).
//!
//! The genome is cut into regions; each region's records are read from the
//! memory-mapped BAM, starting at an offset the index gives, by one worker
//! of the rayon pool; per-region results come back in genome order.
//!
//! Records are assigned to regions by their **start**: a region
//! `[start, end)` of reference `t` receives the records with `ref_id == t`
//! and `start <= pos < end`. A read that starts before the region but
//! overlaps it belongs to the region where it starts, so tiling regions see
//! every placed record exactly once; [`Region::unplaced`] receives the
//! records without a reference, stored at the end of a sorted file.
//!
//! ```no_run
//! use fasthts::bam::BamFile;
//! use fasthts::index::Index;
//! use fasthts::region::{self, Plan};
//!
//! let bam = BamFile::open("in.bam")?;
//! let index = Index::from_path("in.bam.bai")?;
//! // Regions of about 8 MB of compressed data each, plus the unplaced reads.
//! let regions = region::plan(&bam, &index, Plan::BalancedBytes(8 << 20));
//! // Count each region's MAPQ >= 30 records on all cores...
//! let counts = region::scatter(&bam, &index, &regions, |_region, records| {
//!     let mut n = 0u64;
//!     while let Some(r) = records.next_record()? {
//!         n += u64::from(r.mapq() >= 30);
//!     }
//!     Ok(n)
//! })?;
//! // ...and gather them, in genome order.
//! println!("{}", counts.iter().sum::<u64>());
//! # Ok::<(), fasthts::Error>(())
//! ```

use crate::bam::binning;
use crate::bam::{BamError, BamFile, Header, RecordReader, RecordRef};
use crate::cram::Container;
use crate::bgzf::VirtualOffset;
use crate::index::Index;
use crate::sam::RefNames;
use crate::Error;
use rayon::prelude::*;
use std::fmt;
use std::ops::ControlFlow;
use std::path::Path;

pub mod bed;
pub mod indexed;
pub mod notation;
pub mod pieces;
pub mod remote_parts;
pub mod sam;

/// The files read through an index, at their home beside it.
pub use crate::index::Indexed;
pub use bed::BedFilter;
pub use notation::RegionSyntax;

/// A half-open interval `[start, end)` of 0-based positions on reference
/// `ref_id`, or the unplaced records (`ref_id == -1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Reference id; -1 for the unplaced records.
    pub ref_id: i32,
    /// First position (inclusive). `i64::MIN` takes records with position -1 too.
    pub start: i64,
    /// End position (exclusive). `i64::MAX` runs to the end of the reference.
    pub end: i64,
}

impl Region {
    /// The whole of reference `ref_id`, including records whose position lies
    /// outside the reference's length.
    pub fn whole(ref_id: i32) -> Region {
        Region { ref_id, start: i64::MIN, end: i64::MAX }
    }

    /// The records with no reference (unmapped, unplaced).
    pub fn unplaced() -> Region {
        Region { ref_id: -1, start: i64::MIN, end: i64::MAX }
    }

    /// Parses samtools' region notation against the file's reference
    /// `names` (an `@SQ SN:` name or an `AN:` alternative, as htslib looks
    /// them up): `*` (the unplaced records), `CONTIG` (a whole reference),
    /// `CONTIG:BEG-END` (1-based, inclusive; commas allowed in numbers),
    /// `CONTIG:BEG` (to the end) or `CONTIG:-END`. A name is looked up whole
    /// first, so a reference whose name holds a `:` is found; `{NAME}` and
    /// `{NAME}:BEG-END` quote a name as htslib's `hts_parse_region` does.
    /// Positions take htslib's forms too: `1,000`, `1k`, `2.5M`, `1e3`
    /// (`hts_parse_decimal`; a fraction left over is dropped). Parsing needs
    /// the names, which is why this is not [`std::str::FromStr`]. This is a
    /// strict reading that names what is wrong; where samtools' output is
    /// the bar (its lenient forms, `chr1:100-0`, `-M`), use
    /// [`Region::parse_samtools`].
    ///
    /// ```
    /// use fasthts::region::Region;
    /// use fasthts::sam::RefNames;
    /// let names = RefNames::of_names(["chr1", "chr2"]);
    /// assert_eq!(Region::parse("chr2:1,001-2000", &names)?, Region { ref_id: 1, start: 1000, end: 2000 });
    /// assert_eq!(Region::parse("chr1", &names)?, Region::whole(0));
    /// assert_eq!(Region::parse("*", &names)?, Region::unplaced());
    /// assert!(Region::parse("chr3:1-10", &names).is_err());
    /// let odd = RefNames::of_names(["HLA:1", "chr1"]);
    /// assert_eq!(Region::parse("{HLA:1}:1k-2e3", &odd)?, Region { ref_id: 0, start: 999, end: 2000 });
    /// assert_eq!(Region::parse("{chr1}", &odd)?, Region::whole(1));
    /// # Ok::<(), fasthts::Error>(())
    /// ```
    pub fn parse(text: &str, names: &RefNames) -> Result<Region, Error> {
        if text == "*" {
            return Ok(Region::unplaced());
        }
        let invalid = || Error::InvalidArgument(format!("invalid region {text:?} (expected CONTIG, CONTIG:BEG-END or *, 1-based)"));
        let (name, range) = if let Some(quoted) = text.strip_prefix('{') {
            let Some((name, rest)) = quoted.split_once('}') else { return Err(invalid()) };
            match rest {
                "" => return Ok(Region::whole(reference_id(names, name)?)),
                _ => (name, rest.strip_prefix(':').ok_or_else(invalid)?),
            }
        } else {
            if let Some(id) = names.id(text.as_bytes()) {
                return Ok(Region::whole(id));
            }
            text.rsplit_once(':').ok_or_else(|| unknown_reference(text))?
        };
        let ref_id = reference_id(names, name)?;
        let number = |t: &str| -> Result<Option<i64>, Error> {
            let t: String = t.chars().filter(|&c| c != ',').collect();
            if t.is_empty() {
                return Ok(None);
            }
            parse_position(&t).map(Some).ok_or_else(invalid)
        };
        let (beg, end) = match range.split_once('-') {
            Some((b, e)) => (number(b)?, number(e)?),
            None => (number(range)?, None),
        };
        let start = match beg {
            Some(b) if b < 1 => return Err(invalid()),
            Some(b) => b - 1,
            None => i64::MIN,
        };
        let end = end.unwrap_or(i64::MAX);
        if end < start {
            return Err(invalid());
        }
        Ok(Region { ref_id, start, end })
    }

    /// This region, if it can be read from a file of `n_references`
    /// references: its reference exists (or it is the unplaced records) and
    /// it does not end before it starts.
    pub fn checked(self, n_references: usize) -> Result<Region, Error> {
        if self.ref_id < -1 || i64::from(self.ref_id) >= n_references as i64 {
            let last = n_references as i64 - 1;
            return Err(Error::InvalidArgument(format!("region reference id {} is not in the file (-1 to {last})", self.ref_id)));
        }
        if self.start > self.end {
            return Err(Error::InvalidArgument(format!("region end {} is before its start {}", self.end, self.start)));
        }
        Ok(self)
    }

    /// Where a record with this reference and position falls relative to the
    /// region, in a coordinate-sorted file.
    #[inline]
    fn place(&self, ref_id: i32, pos: i64) -> Place {
        if self.ref_id < 0 {
            return if ref_id < 0 { Place::Inside } else { Place::Before };
        }
        if ref_id < 0 || ref_id > self.ref_id {
            return Place::After;
        }
        if ref_id < self.ref_id {
            return Place::Before;
        }
        if pos < self.start {
            Place::Before
        } else if pos >= self.end {
            Place::After
        } else {
            Place::Inside
        }
    }
}

/// A position as htslib's `hts_parse_decimal` reads it (commas removed
/// already): digits, an optional fraction, then an exponent (`e3`) or a
/// `k`/`m`/`g` multiplier; the fraction left over is dropped. None for
/// anything else, or a value past `i64`.
fn parse_position(t: &str) -> Option<i64> {
    let (mantissa, exponent) = match t.find(['e', 'E', 'k', 'K', 'm', 'M', 'g', 'G']) {
        Some(i) => {
            let e = match &t[i..] {
                "k" | "K" => 3,
                "m" | "M" => 6,
                "g" | "G" => 9,
                e => e[1..].parse::<i32>().ok()?,
            };
            (&t[..i], e)
        }
        None => (t, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: i128 = digits.parse().ok()?;
    let mut e = exponent.checked_sub(fraction.len() as i32)?;
    if e > 40 {
        return None;
    }
    while e > 0 {
        n = n.checked_mul(10)?;
        e -= 1;
    }
    while e < 0 {
        n /= 10;
        e += 1;
    }
    i64::try_from(n).ok()
}

/// The id of the reference called `name` (an `@SQ SN:` name or an `AN:`
/// alternative) among `names`.
pub fn reference_id(names: &RefNames, name: &str) -> Result<i32, Error> {
    names.id(name.as_bytes()).ok_or_else(|| unknown_reference(name))
}

fn unknown_reference(name: &str) -> Error {
    Error::InvalidArgument(format!("unknown reference {name:?}"))
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ref_id < 0 {
            return f.write_str("*");
        }
        write!(f, "#{}:", self.ref_id)?;
        let bound = |f: &mut fmt::Formatter<'_>, v: i64| if v == i64::MIN || v == i64::MAX { Ok(()) } else { write!(f, "{v}") };
        bound(f, self.start)?;
        f.write_str("-")?;
        bound(f, self.end)
    }
}

enum Place {
    Before,
    Inside,
    After,
}

/// How to cut the genome.
#[derive(Clone, Copy, Debug)]
pub enum Plan {
    /// Windows of this many bases.
    Windows(u64),
    /// Windows holding about this many compressed bytes each, from the index.
    BalancedBytes(u64),
}

/// Regions tiling every reference that has records in the index, plus the
/// unplaced records: a whole-file job over them sees each record once.
pub fn plan<F: Indexed + ?Sized>(bam: &F, index: &Index, plan: Plan) -> Vec<Region> {
    let mut regions = Vec::new();
    for tid in 0..index.references().len() {
        if !has_records(index, tid) {
            continue;
        }
        let tid = tid as i32;
        let mut cuts: Vec<i64> = Vec::new();
        match plan {
            Plan::Windows(width) => {
                let len = i64::from(bam.header().references.get(tid as usize).map_or(0, |r| r.len));
                let width = width.clamp(1, i64::MAX as u64) as i64;
                cuts.extend((1..).map(|i| i * width).take_while(|&p| p < len));
            }
            Plan::BalancedBytes(target) => {
                let mut last = index.reference_span(tid as usize).map_or(0, |c| c.start.compressed());
                for (pos, off) in index.checkpoints(tid as usize) {
                    if pos > 0 && off.compressed() >= last + target {
                        cuts.push(pos);
                        last = off.compressed();
                    }
                }
            }
        }
        let mut start = i64::MIN;
        for c in cuts {
            regions.push(Region { ref_id: tid, start, end: c });
            start = c;
        }
        regions.push(Region { ref_id: tid, start, end: i64::MAX });
    }
    regions.push(Region::unplaced());
    regions
}

/// As [`plan`], the regions of a CRAM file, cut where a container of
/// about `Plan::BalancedBytes` bytes begins, or every `Plan::Windows`
/// bases. Container headers do not say which references a
/// multi-reference container holds: a file with one plans every
/// reference, those without containers of their own as one region each.
pub fn plan_containers(header: &Header, containers: &[Container], plan: Plan) -> Vec<Region> {
    let multi = containers.iter().any(|c| c.ref_id == -2);
    let mut regions = Vec::new();
    for (tid, reference) in header.references.iter().enumerate() {
        let own: Vec<&Container> = containers.iter().filter(|c| c.ref_id == tid as i32).collect();
        if own.is_empty() && !multi {
            continue;
        }
        let mut cuts: Vec<i64> = Vec::new();
        match plan {
            Plan::Windows(width) => {
                let width = width.clamp(1, i64::MAX as u64) as i64;
                cuts.extend((1..).map(|i| i * width).take_while(|&p| p < i64::from(reference.len)));
            }
            Plan::BalancedBytes(target) => {
                let mut bytes = 0;
                for c in &own {
                    // A container's start (1-based) is its first record's position.
                    let at = c.start - 1;
                    if bytes >= target && at > cuts.last().copied().unwrap_or(0) {
                        cuts.push(at);
                        bytes = 0;
                    }
                    bytes += c.size;
                }
            }
        }
        let mut start = i64::MIN;
        for c in cuts {
            regions.push(Region { ref_id: tid as i32, start, end: c });
            start = c;
        }
        regions.push(Region { ref_id: tid as i32, start, end: i64::MAX });
    }
    regions.push(Region::unplaced());
    regions
}

fn has_records(index: &Index, tid: usize) -> bool {
    match index.reference(tid) {
        Some(r) => match r.metadata() {
            Some(m) => m.n_mapped + m.n_unmapped > 0,
            None => !r.bins().is_empty(),
        },
        None => false,
    }
}

/// A virtual offset at or before the first record of `ref_id` whose position
/// is at least `pos`, and that is a record start; for `ref_id == -1`, where
/// the unplaced records begin. `None` when the index has no records on
/// `ref_id`.
pub fn start_offset<F: Indexed + ?Sized>(bam: &F, index: &Index, ref_id: i32, pos: i64) -> Option<VirtualOffset> {
    let floor = bam.first_record_offset();
    if ref_id < 0 {
        // No placed records at all: the unplaced ones follow the header.
        return Some(index.unplaced_start().map_or(floor, |v| v.max(floor)));
    }
    index.start_offset(ref_id as usize, pos).map(|v| v.max(floor))
}

/// A record start at or before the first record of `region`, as close to
/// it as the index tells: the later of [`start_offset`] (the linear index,
/// which lies before every read overlapping the region's first 16 kb
/// window, reads spanning kilobases included) and the ends of the chunks of
/// every bin that lies wholly before `region.start`. A chunk's end is the
/// offset just past one of its bin's records, which starts before
/// `region.start`, so (the file being sorted) no record of the region
/// comes before it. Regions read from here re-inflate less of the region
/// before them: on chr1 of the bench BAM, cut into pieces for the Python
/// package's columns, the linear index alone made each piece re-read a
/// third of a 16 kb window (8 % more inflating), spliced reads spanning
/// kilobases reaching back that far.
pub fn region_start<F: Indexed + ?Sized>(bam: &F, index: &Index, region: Region) -> Option<VirtualOffset> {
    let floor = start_offset(bam, index, region.ref_id, region.start)?;
    let (Ok(tid), Ok(start)) = (usize::try_from(region.ref_id), u64::try_from(region.start)) else { return Some(floor) };
    let Some(reference) = index.reference(tid) else { return Some(floor) };
    let format = index.format();
    let (min_shift, depth) = (format.min_shift(), format.depth());
    // The first position past `bin`'s range, if it fits in 64 bits.
    let bin_end = |bin: u32| -> Option<u64> {
        let level = binning::bin_level(bin);
        let windows = 1u64.checked_shl(3 * depth.checked_sub(level)?)?;
        let end = binning::bin_bottom(bin, depth).checked_add(windows)?;
        end.checked_shl(min_shift).filter(|e| e >> min_shift == end)
    };
    let mut best = floor;
    for bin in reference.bins() {
        if bin.id >= format.bin_count() || !bin_end(bin.id).is_some_and(|e| e <= start) {
            continue;
        }
        for c in &bin.chunks {
            best = best.max(c.end);
        }
    }
    Some(best)
}

/// Where the records after `region` begin, in a coordinate-sorted file, as
/// far as the index tells ([`region_start`] of the rest of its reference,
/// else of the next reference with records, else the unplaced records);
/// `None` for the unplaced region or when nothing follows. A reader of
/// `region` needs little data past it (see [`RegionReader::new`]).
pub fn following_start<F: Indexed + ?Sized>(bam: &F, index: &Index, region: Region) -> Option<VirtualOffset> {
    let tid = usize::try_from(region.ref_id).ok()?;
    if region.end < i64::MAX {
        return region_start(bam, index, Region { ref_id: region.ref_id, start: region.end, end: i64::MAX });
    }
    match (tid + 1..index.references().len()).find(|&t| has_records(index, t)) {
        Some(next) => region_start(bam, index, Region::whole(next as i32)),
        None => index.unplaced_start(),
    }
}

/// Where a query of `scope` that starts at position `from` (at or before
/// `scope.start`, where records reaching into the scope may start) reads:
/// the offset to start at ([`start_offset`]) and where what follows the
/// scope begins ([`following_start`]); `None` when the index has no
/// records there. The one computation of [`RegionReader::query`],
/// [`sam::SamRegionReader::query`] and view's pieces.
pub fn query_span<F: Indexed + ?Sized>(file: &F, index: &Index, scope: Region, from: i64) -> Option<(VirtualOffset, Option<VirtualOffset>)> {
    let start = start_offset(file, index, scope.ref_id, from)?;
    let following = following_start(file, index, Region { ref_id: scope.ref_id, start: from.max(0), end: scope.end });
    Some((start, following))
}

/// Uncompressed bytes a [`RegionReader`] inflates at a time. Its blocks
/// are inflated on its own thread, so a batch need not be large enough to
/// share among threads (the 1 MiB of a pull reader's batches): at four
/// blocks, two threads reading regions hold 0.6 MB of buffers instead of
/// 2.2 MB (`stats -@2`'s peak), at the same CPU (BENCHMARKS.md, "Tuning
/// constants").
const REGION_BATCH_BYTES: usize = 256 << 10;

/// The records of one region, read in file order.
pub struct RegionReader<'a> {
    records: RecordReader<'a>,
    path: &'a Path,
    region: Region,
    done: bool,
    /// Virtual offset of the first record in the region, once seen.
    first: Option<VirtualOffset>,
    /// Where reading stopped: the first record past the region, or the end.
    stop: Option<VirtualOffset>,
}

impl<'a> RegionReader<'a> {
    /// Reads `region` of `bam` starting at `start` (a record start at or
    /// before the region's first record). `following`: where what follows
    /// the region starts (see [`following_start`]), if known.
    pub fn new(bam: &'a BamFile, region: Region, start: VirtualOffset, following: Option<VirtualOffset>) -> Result<Self, Error> {
        let mut records = bam.records_from(start)?;
        // Regions are the unit of parallelism; each is read on one thread,
        // in batches no larger than that thread needs to keep busy.
        records.set_parallel(false);
        records.set_batch_bytes(REGION_BATCH_BYTES);
        // What follows the region bounds its data, give or take a read that
        // straddles the cut: past the block holding it, blocks are loaded one
        // at a time, as htslib reads them, so a region never inflates far
        // beyond its last record (nor fails on damage there). A bound at or
        // before `start` bounds nothing.
        if let Some(end) = following.map(|v| v.compressed() + 1).filter(|&e| e > start.compressed()) {
            records.set_soft_limit(end);
        }
        Ok(RegionReader { records, path: bam.path(), region, done: false, first: None, stop: None })
    }

    /// A reader of `region` from `start`, as [`RegionReader::new`] makes
    /// one, made of the reader in `slot` when there is one: it moves within
    /// the data it has loaded when `start` lies there. A worker that reads
    /// many small regions in file order (the references of a draft
    /// assembly, a few records each, many to a block) then inflates each
    /// block once, not once per region.
    pub fn reuse<'s>(
        slot: &'s mut Option<RegionReader<'a>>,
        bam: &'a BamFile,
        region: Region,
        start: VirtualOffset,
        following: Option<VirtualOffset>,
    ) -> Result<&'s mut RegionReader<'a>, Error> {
        let moved = slot.as_mut().is_some_and(|r| r.records.seek_loaded(start));
        if let (true, Some(reader)) = (moved, slot.as_mut()) {
            // As `new` bounds its data.
            let bound = following.map(|v| v.compressed() + 1).filter(|&e| e > start.compressed());
            reader.records.set_soft_limit(bound.unwrap_or(u64::MAX));
            reader.region = region;
            reader.done = false;
            reader.first = None;
            reader.stop = None;
        } else {
            *slot = Some(RegionReader::new(bam, region, start, following)?);
        }
        Ok(slot.as_mut().expect("a reader is in the slot"))
    }

    /// Reads `scope` of `bam` with a query from position `from` (see
    /// [`query_span`]): empty when the index has no records there.
    pub fn query(bam: &'a BamFile, index: &Index, scope: Region, from: i64) -> Result<Self, Error> {
        match query_span(bam, index, scope, from) {
            Some((start, following)) => Self::new(bam, scope, start, following),
            None => Self::empty(bam, scope),
        }
    }

    /// A reader that goes on reading `region` from `at`, the
    /// [`Self::record_end`] of an earlier reader of it (`entered`: whether
    /// that reader had seen records of the region, its
    /// [`Self::has_entered`]): a reader resumed after each batch of records
    /// (the Python package's iterators) reads as one reader would.
    pub fn resume(bam: &'a BamFile, region: Region, at: VirtualOffset, following: Option<VirtualOffset>, entered: bool) -> Result<Self, Error> {
        let mut reader = Self::new(bam, region, at, following)?;
        if entered {
            reader.first = Some(at);
        }
        // Resumed past what follows the region (`new` then sets no bound):
        // still one block at a time, as `new` reads past the bound, so that
        // a cursor never inflates far beyond the region's last record (nor
        // reads past the ranges fetched of a remote file).
        if following.is_some_and(|f| at.compressed() >= f.compressed()) {
            reader.records.set_soft_limit(at.compressed() + 1);
        }
        Ok(reader)
    }

    /// Whether records of the region have been seen.
    pub fn has_entered(&self) -> bool {
        self.first.is_some()
    }

    /// A reader of a region known to hold no records.
    pub fn empty(bam: &'a BamFile, region: Region) -> Result<Self, Error> {
        let mut r = Self::new(bam, region, bam.first_record_offset(), None)?;
        r.done = true;
        Ok(r)
    }

    /// The region being read.
    pub fn region(&self) -> Region {
        self.region
    }

    /// The name errors give the file.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// Moves to the next record that starts in the region (as
    /// [`Self::next_record`]); false at the end. The record is then
    /// [`Self::current`].
    pub fn advance(&mut self) -> Result<bool, BamError> {
        Ok(self.next_record()?.is_some())
    }

    /// The record last returned by [`Self::next_record`] or moved to by
    /// [`Self::advance`].
    pub fn current(&self) -> RecordRef<'_> {
        self.records.current()
    }

    /// The next record that starts in the region. A record that sorts
    /// before the region after records of the region have been seen means
    /// the file is not coordinate-sorted: that is an error.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, BamError> {
        if self.done {
            return Ok(None);
        }
        loop {
            if !self.records.advance()? {
                self.done = true;
                self.stop = Some(self.records.record_start());
                return Ok(None);
            }
            let r = self.records.current();
            match self.region.place(r.ref_id(), i64::from(r.pos())) {
                Place::Before if self.first.is_some() => return Err(BamError::OutOfOrder { offset: self.records.record_start() }),
                Place::Before => continue,
                Place::Inside => {
                    if self.first.is_none() {
                        self.first = Some(self.records.record_start());
                    }
                    break;
                }
                Place::After => {
                    self.done = true;
                    self.stop = Some(self.records.record_start());
                    return Ok(None);
                }
            }
        }
        Ok(Some(self.records.current()))
    }

    /// Calls `f` on each remaining record of the region, as
    /// [`Self::next_record`] in a loop would, but walking the loaded data in
    /// place (see [`RecordReader::walk`]): for jobs that visit every record.
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<(), BamError> {
        // Until the region's first record is found, each record's offset
        // may be needed.
        while self.first.is_none() {
            match self.next_record()? {
                Some(r) => f(&r),
                None => return Ok(()),
            }
        }
        if self.done {
            return Ok(());
        }
        let region = self.region;
        let flow = self.records.walk(|r| match region.place(r.ref_id(), i64::from(r.pos())) {
            Place::Inside => {
                f(r);
                ControlFlow::Continue(())
            }
            outside => ControlFlow::Break(outside),
        })?;
        self.done = true;
        let stop = self.records.record_start();
        self.stop = Some(stop);
        match flow {
            ControlFlow::Break(Place::Before) => Err(BamError::OutOfOrder { offset: stop }),
            _ => Ok(()),
        }
    }

    /// Whether the next record is already inflated (see
    /// [`RecordReader::next_is_loaded`]).
    pub fn next_is_loaded(&self) -> bool {
        !self.done && self.records.next_is_loaded()
    }

    /// The virtual offset just past the record last returned by
    /// [`Self::next_record`]: a record start from which a new reader of the
    /// same region resumes reading (the Python bindings read regions in
    /// batches this way).
    pub fn record_end(&self) -> VirtualOffset {
        self.records.record_end()
    }

    /// Reads to the end of the region and returns the span of the file it
    /// covered: from its first record (or, if empty, where it stopped) to the
    /// first record after it (or the end of the file).
    fn finish(&mut self) -> Result<(VirtualOffset, VirtualOffset), BamError> {
        while self.next_record()?.is_some() {}
        let stop = self.stop.unwrap_or_default();
        Ok((self.first.unwrap_or(stop), stop))
    }
}

/// Runs `work` on each region's records on the current rayon pool and
/// returns the results in the order of `regions`. If regions fail, the error
/// of the first failing region (in that order) is returned, whatever the
/// thread count.
pub fn scatter<T, F>(bam: &BamFile, index: &Index, regions: &[Region], work: F) -> Result<Vec<T>, Error>
where
    T: Send,
    F: Fn(&Region, &mut RegionReader<'_>) -> Result<T, BamError> + Sync,
{
    Ok(scatter_with_spans(bam, index, regions, work)?.into_iter().map(|(t, _)| t).collect())
}

/// Runs `work` over every record of `bam`, region by region, as
/// [`scatter`] over [`plan`]`(bam, index, plan)`, and checks that the
/// regions together covered the file exactly: each region must end where
/// the next begins, the first begin at the first record and the last end at
/// the end of the file. An index that does not describe the file (stale,
/// or made for another file) fails this check with [`Error::IndexMismatch`]
/// instead of giving a silently wrong answer; the caller can fall back to a
/// sequential scan.
pub fn scatter_all<T, F>(bam: &BamFile, index: &Index, plan: Plan, work: F) -> Result<Vec<T>, Error>
where
    T: Send,
    F: Fn(&Region, &mut RegionReader<'_>) -> Result<T, BamError> + Sync,
{
    let regions = self::plan(bam, index, plan);
    let parts = scatter_with_spans(bam, index, &regions, work)?;
    check_coverage(bam, regions.iter().zip(parts.iter().map(|(_, span)| *span)))?;
    Ok(parts.into_iter().map(|(t, _)| t).collect())
}

/// Checks that the spans of a plan's regions, in plan order (from
/// [`scatter_with_spans`], in one call or several), covered `bam` exactly:
/// each region ends where the next begins, the first begins at the first
/// record and the last ends at the end of the file. Fails with
/// [`Error::IndexMismatch`] otherwise (the index does not describe the file).
pub fn check_coverage<'r>(bam: &BamFile, spans: impl IntoIterator<Item = (&'r Region, Span)>) -> Result<(), Error> {
    let mut expected = bam.first_record_offset();
    for (region, (first, stop)) in spans {
        if first != expected {
            return Err(Error::IndexMismatch(format!("region {region} starts at {first}, expected {expected}")));
        }
        expected = stop;
    }
    let mut tail = bam.records_from(expected)?;
    if tail.advance().map_err(|e| Error::from(e).with_path(bam.path()))? {
        return Err(Error::IndexMismatch(format!("records after {expected} belong to no region")));
    }
    Ok(())
}

/// The part of the file a region's reader covered: from its first record
/// (or, if empty, where it stopped) to the first record after it.
pub type Span = (VirtualOffset, VirtualOffset);

/// As [`scatter`], also returning each region's [`Span`], so that a caller
/// that runs the regions of one plan in several calls (or on several
/// machines) can check that they covered the file exactly, as
/// [`scatter_all`] does.
pub fn scatter_with_spans<T, F>(bam: &BamFile, index: &Index, regions: &[Region], work: F) -> Result<Vec<(T, Span)>, Error>
where
    T: Send,
    F: Fn(&Region, &mut RegionReader<'_>) -> Result<T, BamError> + Sync,
{
    // Each rayon split of the list is a run of consecutive regions read on
    // one thread, through one reader (see `RegionReader::reuse`).
    let results: Vec<Result<(T, Span), Error>> = regions
        .par_iter()
        .map_init(
            || None,
            |slot, region| {
                let mut empty;
                let reader = match region_start(bam, index, *region) {
                    Some(start) => RegionReader::reuse(slot, bam, *region, start, following_start(bam, index, *region))?,
                    None => {
                        empty = RegionReader::empty(bam, *region)?;
                        &mut empty
                    }
                };
                let wrap = |e: BamError| Error::from(e).with_path(bam.path());
                let read = work(region, reader).and_then(|value| Ok((value, reader.finish()?)));
                if read.is_err() {
                    // A reader that failed is not read on.
                    *slot = None;
                }
                read.map_err(wrap)
            },
        )
        .collect();
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 3] = ["chr1", "HLA:1-2", "chr2"];

    fn parse(text: &str) -> Result<Region, String> {
        Region::parse(text, &RefNames::of_names(NAMES)).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_samtools_notation() {
        assert_eq!(parse("*"), Ok(Region::unplaced()));
        assert_eq!(parse("chr2"), Ok(Region::whole(2)));
        assert_eq!(parse("chr1:1,001-2,000"), Ok(Region { ref_id: 0, start: 1000, end: 2000 }));
        assert_eq!(parse("chr1:1000"), Ok(Region { ref_id: 0, start: 999, end: i64::MAX }));
        assert_eq!(parse("chr1:-50"), Ok(Region { ref_id: 0, start: i64::MIN, end: 50 }));
        assert_eq!(parse("chr1:"), Ok(Region::whole(0)));
        // A name holding a colon is looked up whole before it is split.
        assert_eq!(parse("HLA:1-2"), Ok(Region::whole(1)));
        assert_eq!(parse("HLA:1-2:5-6"), Ok(Region { ref_id: 1, start: 4, end: 6 }));
    }

    #[test]
    fn parses_htslib_quoting_and_number_forms() {
        assert_eq!(parse("{HLA:1-2}"), Ok(Region::whole(1)));
        assert_eq!(parse("{HLA:1-2}:5-6"), Ok(Region { ref_id: 1, start: 4, end: 6 }));
        assert_eq!(parse("{chr1}:1-2"), Ok(Region { ref_id: 0, start: 0, end: 2 }));
        assert_eq!(parse("chr1:1k-2K"), Ok(Region { ref_id: 0, start: 999, end: 2000 }));
        assert_eq!(parse("chr1:1e3-1.5e3"), Ok(Region { ref_id: 0, start: 999, end: 1500 }));
        assert_eq!(parse("chr1:2.5m"), Ok(Region { ref_id: 0, start: 2_499_999, end: i64::MAX }));
        assert_eq!(parse("chr1:1,000-1g"), Ok(Region { ref_id: 0, start: 999, end: 1_000_000_000 }));
        // htslib drops a fraction left over (with a warning).
        assert_eq!(parse("chr1:1.5-10"), Ok(Region { ref_id: 0, start: 0, end: 10 }));
        for bad in ["{chr1", "{chr1}x", "{chr1}:5-1", "chr1:1x-5", "chr1:1e-5", "chr1:1e99", "chr1:k", "chr1:1kk"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("{chr3}:1-2"), Err("unknown reference \"chr3\"".into()));
    }

    #[test]
    fn parse_errors_name_the_problem() {
        assert_eq!(parse("chr3"), Err("unknown reference \"chr3\"".into()));
        assert_eq!(parse("chr3:1-5"), Err("unknown reference \"chr3\"".into()));
        let invalid = |t: &str| Err(format!("invalid region {t:?} (expected CONTIG, CONTIG:BEG-END or *, 1-based)"));
        for bad in ["chr1:10-5", "chr1:0-5", "chr1:x-5", "chr1:5-y"] {
            assert_eq!(parse(bad), invalid(bad), "{bad}");
        }
        assert!(matches!(Region::parse("chr3", &RefNames::of_names(NAMES)), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn checked_regions_fit_the_file() {
        assert_eq!(Region::whole(2).checked(3).map_err(|e| e.to_string()), Ok(Region::whole(2)));
        assert_eq!(Region::unplaced().checked(0).map_err(|e| e.to_string()), Ok(Region::unplaced()));
        let err = |r: Region, n| r.checked(n).unwrap_err().to_string();
        assert_eq!(err(Region::whole(3), 3), "region reference id 3 is not in the file (-1 to 2)");
        assert_eq!(err(Region::whole(-2), 3), "region reference id -2 is not in the file (-1 to 2)");
        assert_eq!(err(Region { ref_id: 0, start: 10, end: 5 }, 3), "region end 5 is before its start 10");
    }
}
