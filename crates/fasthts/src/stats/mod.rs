//! `samtools stats`: the statistics samtools stats 1.16 collects from an
//! alignment file, printed byte for byte as it prints them ([`text`]).
//!
//! What stats counts is of two kinds. Most of it adds up: per-cycle
//! qualities and bases, read lengths, GC histograms, insert sizes, indels,
//! the summary counts, checksums (added modulo 2^32). The rest depends on
//! the records before, as samtools keeps it: the coverage ring buffer, the
//! GC-depth bins (a new bin where a read starts more than the bin size past
//! the bin's first read; each bin's GC a running `f32` sum), the "is
//! sorted" flag that switches both off for the rest of the file, `-p`'s
//! table of mates (with its periodic clean-up, which changes which mate is
//! compared to which), the per-cycle arrays' growth (samtools grows them,
//! and its coverage window, at the first read of 300 cycles or more, by an
//! amount that depends on that read) and the barcode layout (set by the
//! first barcode seen). samtools' quirks in that state show in its output
//! (a flush that leaves the window's last slot, a window grown by copying
//! bytes where ints were meant, the last GC-depth bin printed unscaled), so
//! it is kept exactly as samtools keeps it ([`Stats::collect`], one record
//! after another).
//!
//! That state starts afresh at each reference of a sorted file (the window
//! is flushed, a new GC-depth bin begins, the mates table is emptied), so a
//! BAM whose index describes it is counted one reference per part on all
//! cores (`command::stats`), each part on its own [`Stats`], and the parts
//! summed ([`Stats::merge`]; GC-depth bins keep their place in the file).
//! Each part says ([`Stats::end_part`]) what would make its counts differ
//! from one pass over the file: its reads out of order or a read that grew
//! its arrays (both seen as they come: [`Stats::rules_out_parts`], and the
//! other parts stop counting), a depth left in its window (which samtools
//! carries into the next reference), barcodes (in more than one part);
//! then the whole file is counted again in one pass, as are other
//! inputs (SAM, CRAM, a pipe, a BAM without an index, regions), with the
//! BGZF blocks inflated ahead on the other threads. Either way the bytes
//! do not depend on the thread count.

pub mod bytes;
mod coverage;
pub mod reference;
pub mod text;

use crate::bam::{flags, CigarOp, RecordRef};
use coverage::{CoverageBins, RingBuffer};
use reference::Fasta;
use std::collections::HashMap;
use std::path::PathBuf;

/// The quality values a histogram row holds (all a byte can give).
const N_QUALS: usize = 256;
/// GC-content bins of a read.
const N_GC: usize = 200;
/// Cycles (and indel lengths) the arrays hold at first.
const INITIAL_BASES: usize = 300;
/// The number of coverage bins samtools allocates for `-c min,max,step`
/// (0 or less: its allocation fails).
pub fn coverage_bin_count(min: i32, max: i32, step: i32) -> i64 {
    let mut step = i64::from(step);
    let (min, max) = (i64::from(min), i64::from(max));
    if step > max - min + 1 {
        step = (max - min).max(1);
    }
    3 + (max - min) / step
}

/// The number of G and C bases in a byte of packed sequence.
const GC_IN_BYTE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let (hi, lo) = (b >> 4, b & 0xf);
        table[b] = (hi == 2 || hi == 4) as u8 + (lo == 2 || lo == 4) as u8;
        b += 1;
    }
    table
};
/// bwa's minimum read length for `-q` trimming.
const BWA_MIN_READ_LEN: i32 = 35;
/// `-p`: pairs kept before the table of mates is cleaned up.
const PAIR_MAX: u32 = 10_000;
/// Barcode warnings printed per stats before they stop.
const ERROR_LIMIT: u32 = 200;

/// How stats counts: samtools stats' options, read.
#[derive(Clone, Debug)]
pub struct StatsSettings {
    /// `-f`: flags a record must have.
    pub require_flags: u16,
    /// `-F` (and `-d`): flags a record must not have.
    pub filter_flags: u16,
    /// `-r`: reference FASTA for GC-depth and mismatches per cycle.
    pub reference: Option<PathBuf>,
    /// `--GC-depth`: the GC-depth bin size (samtools reads a float and keeps an int).
    pub gcd_bin_size: i32,
    /// `-i`: largest insert size counted (0 or less: no limit).
    pub max_insert_size: i32,
    /// `-q`: bwa's trimming quality.
    pub trim_quality: i32,
    /// `-m`: the main part of inserts reported.
    pub main_bulk: f32,
    /// `-c min,max,step`.
    pub coverage: (i32, i32, i32),
    /// `-l`: only reads of this length (-1: all).
    pub read_length: i32,
    /// `-S`: tag whose values split the statistics into files.
    pub split_tag: Option<[u8; 2]>,
    /// `-p`: overlaps of mates not counted twice.
    pub remove_overlaps: bool,
    /// `-g`: coverage above this counts in the target percentage.
    pub cov_threshold: i32,
    /// `-x`: IS rows without inserts are not printed.
    pub sparse: bool,
    /// `-I`: only these read groups (or samples).
    pub group_id: Option<String>,
}

impl Default for StatsSettings {
    fn default() -> Self {
        StatsSettings {
            require_flags: 0,
            filter_flags: 0,
            reference: None,
            gcd_bin_size: 20_000,
            max_insert_size: 8000,
            trim_quality: 0,
            main_bulk: 0.99,
            coverage: (1, 1000, 1),
            read_length: -1,
            split_tag: None,
            remove_overlaps: false,
            cov_threshold: 0,
            sparse: false,
            group_id: None,
        }
    }
}

/// An error that stops stats, in samtools' words (it prints them and
/// exits with status 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsError(pub String);

impl std::fmt::Display for StatsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StatsError {}

impl From<coverage::RingError> for StatsError {
    fn from(e: coverage::RingError) -> Self {
        StatsError(e.to_string())
    }
}

/// Target intervals of one reference: 1-based inclusive `(beg, end)`,
/// sorted and merged, and how far a sorted file has passed them.
#[derive(Clone, Debug, Default)]
pub(crate) struct TargetList {
    intervals: Vec<(i64, i64)>,
    passed: usize,
}

/// The target regions (`-t`, or the regions after the file): by reference id.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    by_tid: Vec<TargetList>,
    /// The largest number of intervals of a reference (samtools' chunk array).
    max_chunks: usize,
    /// Bases inside the targets.
    pub target_count: u64,
}

impl Targets {
    /// Targets from per-reference lists of 1-based inclusive intervals
    /// (`i64::MAX` as an end: to the end of the reference, whose length is
    /// `lengths[tid]`), sorted and merged as samtools merges them.
    /// `slots` is samtools' count of regions for its arrays (its chunk
    /// array has as many entries as the longest list before merging, or as
    /// many as regions were given).
    pub fn new(mut by_tid: Vec<Vec<(i64, i64)>>, lengths: &[u64], slots: usize, merge: bool) -> Targets {
        let mut target_count = 0u64;
        let mut lists = Vec::with_capacity(by_tid.len());
        for (tid, list) in by_tid.iter_mut().enumerate() {
            if merge && list.len() > 1 {
                list.sort();
                let mut merged: Vec<(i64, i64)> = Vec::with_capacity(list.len());
                for &(b, e) in list.iter() {
                    match merged.last_mut() {
                        Some(last) if last.1 >= b => last.1 = last.1.max(e),
                        _ => merged.push((b, e)),
                    }
                }
                *list = merged;
            }
            for &(b, e) in list.iter() {
                if e < i64::MAX {
                    target_count = target_count.wrapping_add((e - b + 1) as u64);
                } else {
                    let len = lengths.get(tid).copied().unwrap_or(0);
                    if len > 0 {
                        target_count = target_count.wrapping_add(len.wrapping_sub(b as u64).wrapping_add(1));
                    }
                }
            }
            lists.push(TargetList { intervals: std::mem::take(list), passed: 0 });
        }
        Targets { by_tid: lists, max_chunks: slots, target_count }
    }
}

/// One insert-size histogram: samtools' dense arrays (`-i` > 0) or its
/// sparse table (`-i 0`).
#[derive(Clone, Debug)]
enum InsertSizes {
    Dense(Vec<[u64; 3]>),
    Sparse { counts: HashMap<i32, [u64; 3]>, max: i32 },
}

/// Which way a pair points.
#[derive(Clone, Copy)]
enum Orientation {
    Inward = 0,
    Outward = 1,
    Other = 2,
}

impl InsertSizes {
    fn new(max_insert_size: i32) -> InsertSizes {
        let bound = if max_insert_size != 0 { max_insert_size.wrapping_add(1) } else { 0 };
        if bound <= 0 {
            InsertSizes::Sparse { counts: HashMap::new(), max: 0 }
        } else {
            InsertSizes::Dense(vec![[0; 3]; bound as usize])
        }
    }

    fn add(&mut self, isize: i32, way: Orientation) {
        match self {
            InsertSizes::Dense(v) => {
                if let Some(c) = usize::try_from(isize).ok().and_then(|i| v.get_mut(i)) {
                    c[way as usize] += 1;
                }
            }
            InsertSizes::Sparse { counts, max } => {
                counts.entry(isize).or_default()[way as usize] += 1;
                *max = (*max).max(isize);
            }
        }
    }

    fn n_items(&self) -> i32 {
        match self {
            InsertSizes::Dense(v) => v.len() as i32,
            InsertSizes::Sparse { max, .. } => max + 1,
        }
    }

    /// The counts at `isize` (each pair counted once: samtools halves them
    /// before printing, as each pair was seen twice).
    fn halved(&self, isize: i32) -> [u64; 3] {
        let raw = match self {
            InsertSizes::Dense(v) => v[isize as usize],
            InsertSizes::Sparse { counts, .. } => counts.get(&isize).copied().unwrap_or_default(),
        };
        raw.map(|c| (c as f64 * 0.5) as u64)
    }
}

/// Counts of qualities by cycle, kept quality by quality: a read's bases
/// mostly share a few qualities, so a read walks a few rows of cycles in
/// order instead of touching a row per cycle.
#[derive(Clone, Debug)]
struct QualityHistogram {
    /// Cycles per value.
    cycles: usize,
    /// Values counted (256 qualities, or 16 base codes).
    values: usize,
    counts: Vec<u64>,
}

impl QualityHistogram {
    /// A histogram of qualities: rows are added up to the highest quality
    /// counted (most data stay below 45), so a part of a file counted on its
    /// own starts small.
    fn new(cycles: usize) -> QualityHistogram {
        QualityHistogram::with_values(cycles, 0)
    }

    /// Rows for values up to `value`.
    fn ensure_value(&mut self, value: usize) {
        if value >= self.values {
            self.values = value + 1;
            // A fresh zeroed allocation, not `resize`: a large one is pages
            // the kernel maps on first write, so the rows of qualities never
            // met cost no memory (a read without qualities, 0xff, asks for
            // all 256 rows: 614 KB a histogram, where `resize` wrote zeros
            // through every one).
            let mut counts = vec![0; self.values * self.cycles];
            counts[..self.counts.len()].copy_from_slice(&self.counts);
            self.counts = counts;
        }
    }

    fn with_values(cycles: usize, values: usize) -> QualityHistogram {
        QualityHistogram { cycles, values, counts: vec![0; cycles * values] }
    }

    /// Counts the 4-bit base codes of a packed sequence of `len` bases by
    /// cycle (reversed for a reverse-strand read), a byte (two cycles) at a
    /// time.
    #[inline]
    fn add_bases(&mut self, seq: &[u8], len: usize, reverse: bool) {
        let n = self.cycles;
        let len = len.min(n);
        let seq = &seq[..len.div_ceil(2)];
        assert!(self.values >= 16 && self.counts.len() == self.values * n);
        let counts = self.counts.as_mut_ptr();
        // SAFETY: a code is a nibble (< 16 <= values) and every cycle is
        // below `len <= n` (forward: 2j + 1 < len for the whole bytes, len - 1
        // for the odd last base; reverse: len - 1 - i for i < len), so each
        // index `code * n + cycle` is below `values * n == counts.len()`
        // (asserted above). Raw increments because the bounds checks and
        // reloads of the checked form were a third of the counting's time.
        let bump = |code: u8, cycle: usize| unsafe { *counts.add(usize::from(code) * n + cycle) += 1 };
        let whole = &seq[..len / 2];
        if reverse {
            for (j, &b) in whole.iter().enumerate() {
                bump(b >> 4, len - 1 - 2 * j);
                bump(b & 0xf, len - 2 - 2 * j);
            }
            if len % 2 == 1 {
                bump(seq[len / 2] >> 4, 0);
            }
        } else {
            for (j, &b) in whole.iter().enumerate() {
                bump(b >> 4, 2 * j);
                bump(b & 0xf, 2 * j + 1);
            }
            if len % 2 == 1 {
                bump(seq[len / 2] >> 4, len - 1);
            }
        }
    }

    /// The count of quality `q` at `cycle` (0 past the arrays).
    fn get(&self, cycle: usize, q: usize) -> u64 {
        if cycle < self.cycles && q < self.values {
            self.counts[q * self.cycles + cycle]
        } else {
            0
        }
    }

    /// Room for `cycles` cycles.
    fn grow(&mut self, cycles: usize) {
        if cycles <= self.cycles {
            return;
        }
        let mut counts = vec![0; cycles * self.values];
        for q in 0..self.values {
            counts[q * cycles..q * cycles + self.cycles].copy_from_slice(&self.counts[q * self.cycles..(q + 1) * self.cycles]);
        }
        *self = QualityHistogram { cycles, values: self.values, counts };
    }

    /// Counts a read's qualities in sequencing order (reversed when the
    /// read is on the reverse strand); returns the read's highest quality.
    #[inline]
    fn add_read(&mut self, quals: &[u8], reverse: bool) -> u8 {
        let max_qual = quals.iter().copied().max().unwrap_or(0);
        self.ensure_value(usize::from(max_qual));
        let n = self.cycles;
        let len = quals.len().min(n);
        assert!(self.counts.len() == self.values * n);
        let counts = self.counts.as_mut_ptr();
        // SAFETY: every quality is at most `max_qual < values` (ensure_value)
        // and every cycle below `len <= n`, so `q * n + cycle` is below
        // `values * n == counts.len()` (asserted above). Unchecked for the
        // same reason as `add_bases`.
        let bump = |q: u8, cycle: usize| unsafe { *counts.add(usize::from(q) * n + cycle) += 1 };
        if reverse {
            for (cycle, &q) in quals[quals.len() - len..].iter().rev().enumerate() {
                bump(q, cycle);
            }
        } else {
            for (cycle, &q) in quals[..len].iter().enumerate() {
                bump(q, cycle);
            }
        }
        max_qual
    }

    fn merge(&mut self, other: &QualityHistogram) {
        self.grow(other.cycles);
        if other.values > 0 {
            self.ensure_value(other.values - 1);
        }
        for q in 0..other.values {
            for cycle in 0..other.cycles {
                let count = other.counts[q * other.cycles + cycle];
                // Zeros are not added: rows never written stay unmapped.
                if count != 0 {
                    self.counts[q * self.cycles + cycle] += count;
                }
            }
        }
    }
}

/// Base counts of one cycle.
#[derive(Clone, Copy, Debug, Default)]
struct Acgtno {
    a: u64,
    c: u64,
    g: u64,
    t: u64,
    n: u64,
    other: u64,
}

impl Acgtno {
    /// The counts of forward and reverse reads' codes, the reverse ones
    /// complemented when `complement` (only A, C, G and T then).
    fn of(fwd: &[u64; 16], rev: &[u64; 16], complement: bool) -> Acgtno {
        if complement {
            return Acgtno { a: fwd[1] + rev[8], c: fwd[2] + rev[4], g: fwd[4] + rev[2], t: fwd[8] + rev[1], n: 0, other: 0 };
        }
        let sum = |code: usize| fwd[code] + rev[code];
        let other = [0, 3, 5, 6, 7, 9, 10, 11, 12, 13, 14].iter().map(|&c| sum(c)).sum();
        Acgtno { a: sum(1), c: sum(2), g: sum(4), t: sum(8), n: sum(15), other }
    }
}

/// One barcode tag's statistics (`BC`/`QT`, `CR`/`CY`, `OX`/`BZ`, `RX`/`QX`).
#[derive(Clone, Debug)]
struct Barcode {
    tag: [u8; 2],
    qual_tag: [u8; 2],
    bases: Vec<Acgtno>,
    quals: Vec<u64>,
    separator: i32,
    max_qual: i32,
}

/// One GC-depth bin.
#[derive(Clone, Copy, Debug, Default)]
struct GcDepth {
    gc: f32,
    depth: u32,
    /// Where the bin started in the file (which bin is the last one,
    /// whatever order parts of the file were summed in).
    order: u64,
}

/// A record's positions, 64-bit (SAM can give positions past BAM's
/// 32-bit fields: see [`crate::sam::wide_positions`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Place {
    /// POS, 0-based.
    pub pos: i64,
    /// PNEXT, 0-based.
    pub mate_pos: i64,
    /// TLEN.
    pub template_len: i64,
}

impl Place {
    /// The positions of a BAM record.
    pub fn of(r: &RecordRef<'_>) -> Place {
        Place { pos: i64::from(r.pos()), mate_pos: i64::from(r.mate_pos()), template_len: i64::from(r.template_len()) }
    }
}

/// samtools' read order of a record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None = 0,
    First = 1,
    Last = 2,
    Middle = 3,
}

fn order_of(flag: u16) -> Order {
    if flag & flags::PAIRED == 0 {
        return Order::First;
    }
    raw_order(flag)
}

fn raw_order(flag: u16) -> Order {
    match (flag & flags::READ1 != 0, flag & flags::READ2 != 0) {
        (false, false) => Order::None,
        (true, false) => Order::First,
        (false, true) => Order::Last,
        (true, true) => Order::Middle,
    }
}

/// The statistics of one group of reads (all of them, or one value of `-S`'s tag).
pub struct Stats {
    /// `-S`'s tag value these statistics are for (`None`: all reads).
    pub split_name: Option<Vec<u8>>,
    nbases: usize,
    quals_1st: QualityHistogram,
    quals_2nd: QualityHistogram,
    gc_1st: Vec<u64>,
    gc_2nd: Vec<u64>,
    /// Bases by read cycle and 4-bit code: `[first, last][forward, reverse]`
    /// (samtools' per-cycle and read-oriented counts are sums of these).
    bases: [[QualityHistogram; 2]; 2],
    read_lengths: Vec<u64>,
    read_lengths_1st: Vec<u64>,
    read_lengths_2nd: Vec<u64>,
    insertions: Vec<u64>,
    deletions: Vec<u64>,
    ins_cycles_1st: Vec<u64>,
    ins_cycles_2nd: Vec<u64>,
    del_cycles_1st: Vec<u64>,
    del_cycles_2nd: Vec<u64>,
    /// Mismatches per cycle and quality (with `-r`).
    mpc: Option<Vec<u64>>,
    isize: InsertSizes,
    max_len: i32,
    max_len_1st: i32,
    max_len_2nd: i32,
    max_qual: i32,
    is_sorted: bool,
    total_len: u64,
    total_len_1st: u64,
    total_len_2nd: u64,
    total_len_dup: u64,
    nreads_1st: u64,
    nreads_2nd: u64,
    nreads_other: u64,
    nreads_filtered: u64,
    nreads_dup: u64,
    nreads_unmapped: u64,
    nreads_single_mapped: u64,
    nreads_paired_and_mapped: u64,
    nreads_properly_paired: u64,
    nreads_paired_tech: u64,
    nreads_anomalous: u64,
    nreads_mq0: u64,
    nbases_mapped: u64,
    nbases_mapped_cigar: u64,
    nbases_trimmed: u64,
    nmismatches: u64,
    nreads_qcfailed: u64,
    nreads_secondary: u64,
    nreads_supplementary: u64,
    checksum: [u32; 3],
    /// GC-depth bins; the first is samtools' unused bin 0.
    gcd: Vec<GcDepth>,
    tid: i32,
    gcd_pos: i64,
    pos: i64,
    cov: Vec<u64>,
    ring: RingBuffer,
    rseq: Vec<u8>,
    rseq_capacity: usize,
    rseq_pos: i64,
    rseq_len: i64,
    targets: Option<Targets>,
    /// The current read's pieces inside the targets (1-based inclusive).
    chunks: Vec<(i64, i64)>,
    reg_from: i64,
    reg_to: i64,
    sum_qual: f64,
    read_groups: Option<Vec<Vec<u8>>>,
    pair_count: u32,
    target_count: u64,
    last_pair_tid: i32,
    last_read_flush: u32,
    barcodes: [Barcode; 4],
    error_number: u32,
    /// The positions of the record being counted.
    place: Place,
    /// Whether a record has been counted (or looked at) at all.
    seen: bool,
    /// The part of the file these statistics count (0: all of it), which
    /// orders GC-depth bins of parts summed out of order.
    part: u64,
}

/// What a part of a file counted on its own ([`Stats::end_part`]) says
/// about whether its counts are what one pass over the file would give.
#[derive(Clone, Copy, Debug, Default)]
pub struct PartSummary {
    /// It saw a record.
    pub seen: bool,
    /// Its mapped reads were in order.
    pub sorted: bool,
    /// A read of 300 cycles or more grew its arrays (and coverage window),
    /// which depends on the reads before.
    pub grew: bool,
    /// A depth stayed in the coverage window after its last flush (samtools
    /// carries it into the next reference).
    pub left_depth: bool,
    /// It counted barcodes (whose layout the first barcode seen decides).
    pub barcodes: bool,
}

/// `-p`'s record of a template's first-seen read: its aligned pieces.
struct Pair {
    first: Order,
    chunks: Vec<(i64, i64)>,
}

/// `-p`'s table of mates, shared by every group (as samtools shares it).
#[derive(Default)]
pub struct Pairs {
    table: HashMap<Vec<u8>, Pair>,
}

impl Pairs {
    /// Forgets the templates whose last piece ends before `max`; returns how many.
    fn clean_up(&mut self, max: i64) -> u32 {
        let before = self.table.len();
        self.table.retain(|_, p| p.chunks.last().is_some_and(|c| c.1 >= max));
        (before - self.table.len()) as u32
    }
}

/// What the counting needs besides the record: the header's names and
/// lengths, the reference, `-r`'s reading buffer.
pub struct Context<'a> {
    /// Reference names by id.
    pub names: &'a [Vec<u8>],
    fasta: Option<&'a Fasta>,
    fetched: Vec<u8>,
}

impl Stats {
    /// Empty statistics. `targets` restricts them to regions; `read_groups`
    /// to records of those `RG`s.
    pub fn new(settings: &StatsSettings, targets: Option<Targets>, read_groups: Option<Vec<Vec<u8>>>, with_reference: bool) -> Stats {
        let bins = CoverageBins::new(settings.coverage.0, settings.coverage.1, settings.coverage.2);
        let nbases = INITIAL_BASES;
        let barcode = |tag: &[u8; 2], qual: &[u8; 2]| Barcode {
            tag: *tag,
            qual_tag: *qual,
            bases: Vec::new(),
            quals: Vec::new(),
            separator: -1,
            max_qual: -1,
        };
        let max_chunks = targets.as_ref().map_or(0, |t| t.max_chunks);
        let target_count = targets.as_ref().map_or(0, |t| t.target_count);
        Stats {
            split_name: None,
            nbases,
            quals_1st: QualityHistogram::new(nbases),
            quals_2nd: QualityHistogram::new(nbases),
            gc_1st: vec![0; N_GC],
            gc_2nd: vec![0; N_GC],
            bases: std::array::from_fn(|_| std::array::from_fn(|_| QualityHistogram::with_values(nbases, 16))),
            read_lengths: vec![0; nbases],
            read_lengths_1st: vec![0; nbases],
            read_lengths_2nd: vec![0; nbases],
            insertions: vec![0; nbases],
            deletions: vec![0; nbases],
            ins_cycles_1st: vec![0; nbases + 1],
            ins_cycles_2nd: vec![0; nbases + 1],
            del_cycles_1st: vec![0; nbases + 1],
            del_cycles_2nd: vec![0; nbases + 1],
            mpc: with_reference.then(|| vec![0; nbases * N_QUALS]),
            isize: InsertSizes::new(settings.max_insert_size),
            max_len: 0,
            max_len_1st: 0,
            max_len_2nd: 0,
            max_qual: 0,
            is_sorted: true,
            total_len: 0,
            total_len_1st: 0,
            total_len_2nd: 0,
            total_len_dup: 0,
            nreads_1st: 0,
            nreads_2nd: 0,
            nreads_other: 0,
            nreads_filtered: 0,
            nreads_dup: 0,
            nreads_unmapped: 0,
            nreads_single_mapped: 0,
            nreads_paired_and_mapped: 0,
            nreads_properly_paired: 0,
            nreads_paired_tech: 0,
            nreads_anomalous: 0,
            nreads_mq0: 0,
            nbases_mapped: 0,
            nbases_mapped_cigar: 0,
            nbases_trimmed: 0,
            nmismatches: 0,
            nreads_qcfailed: 0,
            nreads_secondary: 0,
            nreads_supplementary: 0,
            checksum: [0; 3],
            gcd: vec![GcDepth::default()],
            tid: -1,
            gcd_pos: -1,
            pos: 0,
            cov: vec![0; bins.count],
            ring: RingBuffer::new(nbases * 5),
            rseq: Vec::new(),
            rseq_capacity: (nbases * 10).max(settings.gcd_bin_size.max(0) as usize),
            rseq_pos: -1,
            rseq_len: 0,
            targets,
            chunks: Vec::with_capacity(max_chunks),
            reg_from: 0,
            reg_to: 0,
            sum_qual: 0.0,
            read_groups,
            pair_count: 0,
            target_count,
            last_pair_tid: -2,
            last_read_flush: 0,
            barcodes: [barcode(b"BC", b"QT"), barcode(b"CR", b"CY"), barcode(b"OX", b"BZ"), barcode(b"RX", b"QX")],
            error_number: 0,
            place: Place::default(),
            seen: false,
            part: 0,
        }
    }

    /// Whether the record overlaps the targets (always, without them);
    /// remembers its pieces inside them (samtools' `is_in_regions`).
    fn in_targets(&mut self, r: &RecordRef<'_>) -> Result<bool, StatsError> {
        let Some(targets) = self.targets.as_mut() else { return Ok(true) };
        let tid = r.ref_id();
        // samtools' region array has room past the last reference with targets.
        let Some(list) = usize::try_from(tid).ok().and_then(|t| targets.by_tid.get_mut(t)) else { return Ok(false) };
        if !self.is_sorted {
            return Err(StatsError("The BAM must be sorted in order for -t to work.".into()));
        }
        if list.passed == list.intervals.len() {
            return Ok(false);
        }
        let pos = self.place.pos;
        let mut i = list.passed;
        while i < list.intervals.len() && list.intervals[i].1 <= pos {
            i += 1;
        }
        if i >= list.intervals.len() {
            list.passed = list.intervals.len();
            return Ok(false);
        }
        let end = self.place.pos + (r.end_pos() - i64::from(r.pos()));
        if end < list.intervals[i].0 {
            return Ok(false);
        }
        list.passed = i;
        self.reg_from = list.intervals[i].0;
        self.reg_to = list.intervals[i].1;
        self.chunks.clear();
        for &(b, e) in &list.intervals[i..] {
            if pos < e && end >= b {
                self.chunks.push(((pos + 1).max(b), end.min(e)));
            }
        }
        Ok(true)
    }

    /// Grows the per-cycle arrays for a read of `read_len` cycles, as
    /// samtools' `realloc_buffers` does (the coverage window too).
    fn grow(&mut self, read_len: usize) {
        let n = 2 * (1 + read_len - self.nbases) + self.nbases;
        self.quals_1st.grow(n);
        self.quals_2nd.grow(n);
        if let Some(mpc) = self.mpc.as_mut() {
            mpc.resize(n * N_QUALS, 0);
        }
        for v in self.bases.iter_mut().flatten() {
            v.grow(n);
        }
        for v in [&mut self.read_lengths, &mut self.read_lengths_1st, &mut self.read_lengths_2nd, &mut self.insertions, &mut self.deletions]
        {
            v.resize(n, 0);
        }
        for v in [&mut self.ins_cycles_1st, &mut self.ins_cycles_2nd, &mut self.del_cycles_1st, &mut self.del_cycles_2nd] {
            v.resize(n + 1, 0);
        }
        self.nbases = n;
        self.ring.grow(read_len * 5);
        self.rseq_capacity = self.rseq_capacity.max(n * 10);
    }

    fn count_indels(&mut self, r: &RecordRef<'_>, names: &[Vec<u8>]) -> Result<(), StatsError> {
        let flag = r.flag();
        let is_fwd = flag & flags::REVERSE == 0;
        let order = order_of(flag);
        let read_len = r.seq_len() as i64;
        let mut icycle: i64 = 0;
        for (op, len) in r.cigar().iter() {
            let ncig = i64::from(len);
            if ncig == 0 {
                continue;
            }
            match op {
                CigarOp::Insertion => {
                    let idx = if is_fwd { icycle } else { read_len - icycle - ncig };
                    if idx < 0 {
                        return Err(StatsError(format!("FIXME: read_len={read_len} vs icycle={icycle}")));
                    }
                    if idx as usize >= self.nbases {
                        return Err(StatsError(format!(
                            "FIXME: {idx} vs {}, {}:{} {}",
                            self.nbases,
                            name_of(names, r.ref_id()),
                            self.place.pos + 1,
                            String::from_utf8_lossy(r.name())
                        )));
                    }
                    match order {
                        Order::First => self.ins_cycles_1st[idx as usize] += 1,
                        Order::Last => self.ins_cycles_2nd[idx as usize] += 1,
                        _ => {}
                    }
                    icycle += ncig;
                    if ncig as usize <= INITIAL_BASES {
                        self.insertions[ncig as usize - 1] += 1;
                    }
                }
                CigarOp::Deletion => {
                    let idx = if is_fwd { icycle - 1 } else { read_len - icycle - 1 };
                    if idx < 0 {
                        continue;
                    }
                    if idx as usize >= self.nbases {
                        return Err(StatsError(format!("FIXME: {idx} vs {}", self.nbases)));
                    }
                    match order {
                        Order::First => self.del_cycles_1st[idx as usize] += 1,
                        Order::Last => self.del_cycles_2nd[idx as usize] += 1,
                        _ => {}
                    }
                    if ncig as usize <= INITIAL_BASES {
                        self.deletions[ncig as usize - 1] += 1;
                    }
                }
                CigarOp::Skip | CigarOp::HardClip | CigarOp::Pad => {}
                _ => icycle += ncig,
            }
        }
        Ok(())
    }

    fn update_checksum(&mut self, r: &RecordRef<'_>) {
        let name = r.name();
        let name = name.iter().position(|&c| c == 0).map_or(name, |n| &name[..n]);
        self.checksum[0] = self.checksum[0].wrapping_add(libdeflater::crc32(name));
        let len = r.seq_len();
        if len == 0 {
            return;
        }
        let half = len.div_ceil(2);
        self.checksum[1] = self.checksum[1].wrapping_add(libdeflater::crc32(&r.seq_raw()[..half]));
        // samtools sums the CRC of the first half of the qualities only.
        self.checksum[2] = self.checksum[2].wrapping_add(libdeflater::crc32(&r.qual()[..half]));
    }

    /// Counts the barcode tags of a record that has one of them ([`is_barcode_tag`]).
    fn collect_barcodes(&mut self, r: &RecordRef<'_>, notes: &mut Vec<String>) {
        let aux = r.aux();
        let name = || String::from_utf8_lossy(r.name()).into_owned();
        for b in &mut self.barcodes {
            let Some(code) = aux_string(&aux, b.tag) else { continue };
            let code = code.iter().position(|&c| c == 0).map_or(code, |n| &code[..n]);
            if b.bases.is_empty() {
                b.bases = vec![Acgtno::default(); code.len()];
                b.quals = vec![0; code.len() * N_QUALS];
            }
            if code.len() > b.bases.len() {
                notes.push(format!("Barcodes with tag {} differ in length at sequence '{}'", tag_text(b.tag), name()));
                continue;
            }
            let mut failed = false;
            for (i, &c) in code.iter().enumerate() {
                let counts = &mut b.bases[i];
                match c {
                    b'A' => counts.a += 1,
                    b'C' => counts.c += 1,
                    b'G' => counts.g += 1,
                    b'T' => counts.t += 1,
                    b'N' => counts.n += 1,
                    _ => {
                        if b.separator >= 0 {
                            if b.separator != i as i32 {
                                if self.error_number < ERROR_LIMIT {
                                    notes.push(format!(
                                        "Barcode separator for tag {} is in a different position or wrong barcode content('{}') at sequence '{}'",
                                        tag_text(b.tag),
                                        String::from_utf8_lossy(code),
                                        name()
                                    ));
                                    self.error_number += 1;
                                }
                                failed = true;
                            }
                        } else {
                            b.separator = i as i32;
                        }
                    }
                }
                if failed {
                    break;
                }
            }
            if failed {
                continue;
            }
            let Some(quals) = aux_string(&aux, b.qual_tag) else { continue };
            let quals = quals.iter().position(|&c| c == 0).map_or(quals, |n| &quals[..n]);
            if quals.len() == code.len() {
                for (i, &q) in quals.iter().enumerate() {
                    // A C char: signed on the platforms samtools is built for.
                    let q = i32::from(q as i8) - 33;
                    if (0..N_QUALS as i32).contains(&q) {
                        b.quals[i * N_QUALS + q as usize] += 1;
                        b.max_qual = b.max_qual.max(q);
                    }
                }
            } else {
                let n = self.error_number;
                self.error_number += 1;
                if n < ERROR_LIMIT {
                    notes.push(format!(
                        "{} length and {} length don't match for sequence '{}'",
                        tag_text(b.tag),
                        tag_text(b.qual_tag),
                        name()
                    ));
                }
            }
        }
    }

    /// The counts of a primary (or unflagged) read with a sequence:
    /// samtools' `collect_orig_read_stats`; `barcodes`: the read has a
    /// barcode tag. Returns the read's GC count.
    fn collect_original(&mut self, r: &RecordRef<'_>, settings: &StatsSettings, barcodes: bool, notes: &mut Vec<String>) -> u32 {
        let flag = r.flag();
        let seq_len = r.seq_len();
        self.total_len += seq_len as u64;
        if flag & flags::QC_FAIL != 0 {
            self.nreads_qcfailed += 1;
        }
        if flag & flags::PAIRED != 0 {
            self.nreads_paired_tech += 1;
        }
        let order = order_of(flag);
        let reverse = flag & flags::REVERSE != 0;
        let seq = r.seq_raw();
        // Bases by cycle; the GC count from whole bytes (a padding nibble is `=`).
        let gc_count: u32 = seq.iter().map(|&b| u32::from(GC_IN_BYTE[usize::from(b)])).sum();
        if matches!(order, Order::First | Order::Last) {
            self.bases[usize::from(order == Order::Last)][usize::from(reverse)].add_bases(seq, seq_len, reverse);
        }
        let gc_count = if matches!(order, Order::First | Order::Last) { gc_count } else { 0 };
        let gc_min = gc_count as usize * (N_GC - 1) / seq_len;
        let gc_max = ((gc_count as usize + 1) * (N_GC - 1) / seq_len).min(N_GC - 1);
        let quals = r.qual();
        let hist = match order {
            Order::First => {
                self.nreads_1st += 1;
                self.total_len_1st += seq_len as u64;
                self.gc_1st[gc_min..gc_max.max(gc_min)].iter_mut().for_each(|c| *c += 1);
                Some(&mut self.quals_1st)
            }
            Order::Last => {
                self.nreads_2nd += 1;
                self.total_len_2nd += seq_len as u64;
                self.gc_2nd[gc_min..gc_max.max(gc_min)].iter_mut().for_each(|c| *c += 1);
                Some(&mut self.quals_2nd)
            }
            _ => {
                self.nreads_other += 1;
                None
            }
        };
        if settings.trim_quality > 0 {
            self.nbases_trimmed += bwa_trim_read(settings.trim_quality, quals, reverse) as u64;
        }
        if let Some(hist) = hist {
            let read_max = hist.add_read(quals, reverse);
            self.max_qual = self.max_qual.max(i32::from(read_max));
            // Integers, exact in a double: the same sum as samtools' one by one.
            self.sum_qual += quals.iter().map(|&q| u64::from(q)).sum::<u64>() as f64;
        }
        if order == Order::First && barcodes {
            self.collect_barcodes(r, notes);
        }
        if flag & flags::UNMAPPED != 0 {
            self.nreads_unmapped += 1;
        } else {
            self.nbases_mapped += seq_len as u64;
            if r.mapq() == 0 {
                self.nreads_mq0 += 1;
            }
            if !is_paired_and_mapped(flag) {
                self.nreads_single_mapped += 1;
            } else {
                self.nreads_paired_and_mapped += 1;
                if flag & (flags::PAIRED | flags::PROPER_PAIR) == flags::PAIRED | flags::PROPER_PAIR {
                    self.nreads_properly_paired += 1;
                }
                if r.ref_id() != r.mate_ref_id() {
                    self.nreads_anomalous += 1;
                }
            }
        }
        gc_count
    }

    /// Counts one record (samtools' `collect_stats`).
    pub fn collect(
        &mut self,
        r: &RecordRef<'_>,
        place: Place,
        settings: &StatsSettings,
        pairs: &mut Pairs,
        context: &mut Context<'_>,
        notes: &mut Vec<String>,
    ) -> Result<(), StatsError> {
        self.place = place;
        self.seen = true;
        if !self.in_targets(r)? {
            return Ok(());
        }
        if let Some(groups) = &self.read_groups {
            let Some(rg) = aux_string(&r.aux(), *b"RG") else { return Ok(()) };
            if !groups.iter().any(|g| g.as_slice() == rg) {
                return Ok(());
            }
        }
        let flag = r.flag();
        if settings.require_flags != 0 && flag & settings.require_flags != settings.require_flags {
            self.nreads_filtered += 1;
            return Ok(());
        }
        if settings.filter_flags != 0 && flag & settings.filter_flags != 0 {
            self.nreads_filtered += 1;
            return Ok(());
        }
        if settings.read_length != -1 && r.seq_len() as i64 != i64::from(settings.read_length) {
            return Ok(());
        }
        self.update_checksum(r);
        if flag & flags::SECONDARY != 0 {
            self.nreads_secondary += 1;
            return Ok(());
        }
        if flag & flags::SUPPLEMENTARY != 0 {
            self.nreads_supplementary += 1;
        }
        let seq_len = r.seq_len();
        if seq_len == 0 {
            return Ok(());
        }
        if flag & flags::DUPLICATE != 0 {
            self.total_len_dup += seq_len as u64;
            self.nreads_dup += 1;
        }
        let order = order_of(flag);
        let cigar = r.cigar();
        let shape = CigarShape::of(cigar);
        let read_len = seq_len + shape.hard_clipped;
        if read_len >= self.nbases {
            self.grow(read_len);
        }
        let read_len_i = read_len as i32;
        self.max_len = self.max_len.max(read_len_i);
        if order == Order::First {
            self.max_len_1st = self.max_len_1st.max(read_len_i);
        }
        if order == Order::Last {
            self.max_len_2nd = self.max_len_2nd.max(read_len_i);
        }
        let original = flag & (flags::SECONDARY | flags::SUPPLEMENTARY) == 0;
        let mapped = flag & flags::UNMAPPED == 0;
        // One walk over the tags for the barcodes (first fragments) and NM
        // (mapped reads); most records have no barcode tag.
        let first_fragment = original && order == Order::First;
        let aux = r.aux();
        let (nm, barcodes) = match (mapped, first_fragment) {
            (true, true) => aux.find_and_any(*b"NM", is_barcode_tag),
            (true, false) => (aux.find(*b"NM"), false),
            (false, true) => (None, aux.tags().any(is_barcode_tag)),
            (false, false) => (None, false),
        };
        let mut gc_count = 0;
        if original {
            self.read_lengths[read_len] += 1;
            if order == Order::First {
                self.read_lengths_1st[read_len] += 1;
            }
            if order == Order::Last {
                self.read_lengths_2nd[read_len] += 1;
            }
            gc_count = self.collect_original(r, settings, barcodes, notes);
        }
        if !mapped {
            return Ok(());
        }
        if shape.has_indels {
            self.count_indels(r, context.names)?;
        }
        if is_paired_and_mapped(flag) && original {
            self.count_insert(r, settings);
        }
        if let Some(crate::bam::AuxValue::Int(nm)) = nm {
            self.nmismatches = self.nmismatches.wrapping_add(nm as u64);
        }
        if cigar.is_empty() {
            return Err(StatsError("FIXME: mapped read with no cigar?".into()));
        }
        let pos = self.place.pos;
        let mut readlen = seq_len as i64;
        if self.targets.is_some() {
            // Only the bases inside the target interval.
            let mut iref = pos + 1;
            for (op, len) in cigar.iter() {
                let mut ncig = i64::from(len);
                if ncig == 0 {
                    continue;
                }
                match op {
                    CigarOp::Deletion => readlen += ncig,
                    CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                        if iref < self.reg_from {
                            ncig -= self.reg_from - iref;
                        } else if iref + ncig - 1 > self.reg_to {
                            ncig -= iref + ncig - 1 - self.reg_to;
                        }
                        if ncig < 0 {
                            ncig = 0;
                        }
                        self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_add(ncig as u64);
                        iref += i64::from(len);
                    }
                    CigarOp::Insertion => {
                        iref += ncig;
                        if iref >= self.reg_from && iref <= self.reg_to {
                            self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_add(ncig as u64);
                        }
                    }
                    _ => {}
                }
            }
        } else {
            self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_add(shape.mapped);
            readlen += shape.deleted;
        }
        let tid = r.ref_id();
        if self.tid == tid && pos < self.pos {
            self.is_sorted = false;
        }
        self.pos = pos;
        if !self.is_sorted {
            return Ok(());
        }
        let bins = CoverageBins::new(settings.coverage.0, settings.coverage.1, settings.coverage.2);
        if self.tid == -1 || self.tid != tid {
            self.ring.flush(None, &bins, &mut self.cov)?;
        }
        self.last_read_flush += 1;
        if self.pair_count > PAIR_MAX && self.last_read_flush > PAIR_MAX {
            self.pair_count = self.pair_count.wrapping_sub(pairs.clean_up(pos));
            self.last_read_flush = 0;
        }
        if self.last_pair_tid != tid {
            self.pair_count = self.pair_count.wrapping_sub(pairs.clean_up(i64::MAX - 1));
            self.last_pair_tid = tid;
            self.last_read_flush = 0;
        }
        let bin_size = i64::from(settings.gcd_bin_size);
        if let Some(fasta) = context.fasta {
            let (mut inc_ref, mut inc_gcd) = (false, false);
            // A first read, a new reference, or a read past the loaded reference.
            if self.rseq_pos == -1 || self.tid != tid || self.rseq_pos + self.rseq_len < pos + readlen {
                (inc_ref, inc_gcd) = (true, true);
            } else if self.gcd_pos + bin_size < pos + readlen {
                inc_gcd = true;
                if self.rseq_pos + self.rseq_len < pos + bin_size {
                    inc_ref = true;
                }
            }
            if inc_gcd {
                self.gcd.push(GcDepth { order: self.next_bin_order(), ..GcDepth::default() });
                if inc_ref {
                    self.read_reference(fasta, context.names, tid, pos, &mut context.fetched)?;
                }
                self.gcd_pos = pos;
                let gc = self.reference_gc(pos, bin_size);
                self.gcd.last_mut().expect("a bin").gc = gc;
            }
            self.count_mismatches(r, read_len as i64, context.names)?;
        } else if self.gcd_pos == -1 || self.tid != tid || pos - self.gcd_pos > bin_size {
            self.tid = tid;
            self.gcd_pos = pos;
            self.gcd.push(GcDepth { order: self.next_bin_order(), ..GcDepth::default() });
        }
        let bin = self.gcd.last_mut().expect("a bin");
        bin.depth = bin.depth.wrapping_add(1);
        if context.fasta.is_none() {
            bin.gc += gc_count as f32 / seq_len as f32;
        }
        self.ring.flush(Some(pos), &bins, &mut self.cov)?;
        let mut p = pos;
        if self.targets.is_some() {
            let (mut j, mut i) = (0, 0);
            let n_ops = cigar.len();
            while j < n_ops && i < self.chunks.len() {
                let (op, len) = cigar.get(j).expect("an operation");
                let len = i64::from(len);
                let (beg, end) = self.chunks[i];
                if matches!(op, CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch) {
                    let pmin = p.max(beg - 1);
                    let pmax = (p + len).min(end);
                    if pmax > pmin {
                        self.add_coverage(r, pairs, settings, pmin, pmax)?;
                    }
                }
                let next = p + if op.consumes_reference() { len } else { 0 };
                if next >= end {
                    i += 1;
                } else {
                    j += 1;
                    p = next;
                }
            }
        } else if let Some(blocks) = shape.blocks() {
            for &(from, to) in blocks {
                self.add_coverage(r, pairs, settings, pos + from, pos + to)?;
            }
        } else {
            for (op, len) in cigar.iter() {
                let len = i64::from(len);
                if matches!(op, CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch) {
                    self.add_coverage(r, pairs, settings, p, p + len)?;
                }
                if op.consumes_reference() {
                    p += len;
                }
            }
        }
        if settings.remove_overlaps {
            self.remove_overlaps(r, pairs, None)?;
        }
        Ok(())
    }

    fn add_coverage(
        &mut self,
        r: &RecordRef<'_>,
        pairs: &mut Pairs,
        settings: &StatsSettings,
        from: i64,
        to: i64,
    ) -> Result<(), StatsError> {
        if settings.remove_overlaps {
            self.remove_overlaps(r, pairs, Some((from, to)))
        } else {
            Ok(self.ring.insert(from, to)?)
        }
    }

    /// `-p`: adds `piece` (`None`: the read is done) to the coverage
    /// without the parts its mate, seen before, already covered
    /// (samtools' `remove_overlaps`).
    fn remove_overlaps(&mut self, r: &RecordRef<'_>, pairs: &mut Pairs, piece: Option<(i64, i64)>) -> Result<(), StatsError> {
        let flag = r.flag();
        let order = raw_order(flag);
        let (mut pmin, pmax) = piece.unwrap_or((-1, -1));
        if flag & flags::PAIRED == 0
            || flag & flags::MATE_UNMAPPED != 0
            || self.place.template_len.wrapping_abs() >= 2 * r.seq_len() as i64
            || !matches!(order, Order::First | Order::Last)
        {
            if pmin >= 0 {
                self.ring.insert(pmin, pmax)?;
            }
            return Ok(());
        }
        let name = r.name();
        let name = name.iter().position(|&c| c == 0).map_or(name, |n| &name[..n]);
        let Some(pair) = pairs.table.get_mut(name) else {
            if piece.is_none() {
                return Ok(());
            }
            let mut chunks = Vec::with_capacity(8);
            chunks.push((pmin, pmax));
            pairs.table.insert(name.to_vec(), Pair { first: order, chunks });
            self.pair_count = self.pair_count.wrapping_add(1);
            return Ok(self.ring.insert(pmin, pmax)?);
        };
        if order == pair.first {
            if piece.is_some() {
                pair.chunks.push((pmin, pmax));
                self.ring.insert(pmin, pmax)?;
            }
            return Ok(());
        }
        if piece.is_none() {
            pairs.table.remove(name);
            self.pair_count = self.pair_count.wrapping_sub(1);
            return Ok(());
        }
        for &(beg, end) in &pair.chunks {
            if pmin >= end {
                continue;
            }
            if pmax <= beg {
                break;
            }
            if pmin < beg {
                self.ring.insert(pmin, beg)?;
                pmin = beg;
            }
            if pmax <= end {
                self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_sub((pmax - pmin) as u64);
                return Ok(());
            }
            self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_sub((end - pmin) as u64);
            pmin = end;
        }
        Ok(self.ring.insert(pmin, pmax)?)
    }

    fn count_insert(&mut self, r: &RecordRef<'_>, settings: &StatsSettings) {
        let flag = r.flag();
        // samtools keeps TLEN in an int32 here.
        let mut isize = (self.place.template_len as i32).wrapping_abs();
        if settings.max_insert_size > 0 && isize > settings.max_insert_size {
            isize = settings.max_insert_size;
        }
        if !(isize > 0 || r.ref_id() == r.mate_ref_id()) {
            return;
        }
        let pos_fst = self.place.mate_pos - self.place.pos;
        let is_fst: i64 = if flag & flags::READ1 != 0 { 1 } else { -1 };
        let is_fwd: i64 = if flag & flags::REVERSE != 0 { -1 } else { 1 };
        let is_mfwd: i64 = if flag & flags::MATE_REVERSE != 0 { -1 } else { 1 };
        let way = if is_fwd * is_mfwd > 0 {
            Orientation::Other
        } else if is_fst * pos_fst >= 0 {
            if is_fst * is_fwd > 0 {
                Orientation::Inward
            } else {
                Orientation::Outward
            }
        } else if is_fst * is_fwd > 0 {
            Orientation::Outward
        } else {
            Orientation::Inward
        };
        self.isize.add(isize, way);
    }

    /// `-r`: loads the reference from `pos` into the buffer (samtools' `read_ref_seq`).
    fn read_reference(&mut self, fasta: &Fasta, names: &[Vec<u8>], tid: i32, pos: i64, fetched: &mut Vec<u8>) -> Result<(), StatsError> {
        let name = name_of(names, tid);
        let end = pos + self.rseq_capacity as i64 - 1;
        if fasta.fetch(name.as_bytes(), pos, end, fetched).is_none() {
            return Err(StatsError(format!("Failed to fetch the sequence \"{name}\"")));
        }
        self.rseq.clear();
        self.rseq.extend(fetched.iter().map(|&c| match c {
            b'A' | b'a' => 1,
            b'C' | b'c' => 2,
            b'G' | b'g' => 4,
            b'T' | b't' => 8,
            _ => 0,
        }));
        self.rseq_len = self.rseq.len() as i64;
        self.rseq.resize(self.rseq_capacity.max(self.rseq.len()), 0);
        self.rseq_pos = pos;
        self.tid = tid;
        Ok(())
    }

    /// The GC fraction of the loaded reference from `pos` over `len` bases.
    fn reference_gc(&self, pos: i64, len: i64) -> f32 {
        let from = (pos - self.rseq_pos).max(0);
        let to = (from + len).min(self.rseq_len);
        let (mut gc, mut count) = (0u32, 0u32);
        for &c in self.rseq.get(from as usize..to.max(from) as usize).unwrap_or(&[]) {
            match c {
                2 | 4 => {
                    gc += 1;
                    count += 1;
                }
                1 | 8 => count += 1,
                _ => {}
            }
        }
        if count > 0 {
            gc as f32 / count as f32
        } else {
            0.0
        }
    }

    /// `-r`: mismatches against the reference by cycle and quality.
    fn count_mismatches(&mut self, r: &RecordRef<'_>, read_len: i64, names: &[Vec<u8>]) -> Result<(), StatsError> {
        let flag = r.flag();
        let is_fwd = flag & flags::REVERSE == 0;
        let (mut iread, mut icycle) = (0usize, 0i64);
        let mut iref = self.place.pos - self.rseq_pos;
        let quals = r.qual();
        let max_len = self.max_len;
        let nbases = self.nbases;
        let Some(mpc) = self.mpc.as_mut() else { return Ok(()) };
        let at = self.place.pos;
        let place = || format!("{}:{} {}", name_of(names, r.ref_id()), at + 1, String::from_utf8_lossy(r.name()));
        for (op, len) in r.cigar().iter() {
            let ncig = i64::from(len);
            match op {
                CigarOp::Insertion => {
                    iread += len as usize;
                    icycle += ncig;
                    continue;
                }
                CigarOp::Deletion => {
                    iref += ncig;
                    continue;
                }
                CigarOp::SoftClip => {
                    icycle += ncig;
                    iread += len as usize;
                    continue;
                }
                CigarOp::HardClip => {
                    icycle += ncig;
                    continue;
                }
                CigarOp::Skip | CigarOp::Pad => continue,
                _ => {}
            }
            if ncig + iref > self.rseq_len {
                return Err(StatsError(format!(
                    "FIXME: {ncig}+{iref} > {}, {}, {}:{}",
                    self.rseq_len,
                    String::from_utf8_lossy(r.name()),
                    name_of(names, r.ref_id()),
                    at + 1
                )));
            }
            for _ in 0..ncig {
                let cread = r.base_code(iread);
                let cref = self.rseq[iref as usize];
                let idx = if is_fwd { icycle } else { read_len - icycle - 1 };
                if cread == 15 {
                    if idx > i64::from(max_len) {
                        return Err(StatsError(format!("mpc: {idx}>{max_len}")));
                    }
                    let at = idx as usize * N_QUALS;
                    if at >= N_QUALS * nbases {
                        return Err(StatsError("FIXME: mpc_buf overflow".into()));
                    }
                    mpc[at] += 1;
                } else if cref != 0 && cread != 0 && cref != cread {
                    let qual = quals[iread].wrapping_add(1);
                    if idx > i64::from(max_len) {
                        return Err(StatsError(format!("mpc: {idx}>{max_len} ({})", place())));
                    }
                    let at = idx as usize * N_QUALS + usize::from(qual);
                    if at >= N_QUALS * nbases {
                        return Err(StatsError("FIXME: mpc_buf overflow".into()));
                    }
                    mpc[at] += 1;
                }
                iref += 1;
                iread += 1;
                icycle += 1;
            }
        }
        Ok(())
    }

    /// Base counts by cycle of first (`last == false`) or last fragments.
    fn cycles(&self, last: bool) -> Vec<Acgtno> {
        let [fwd, rev] = &self.bases[usize::from(last)];
        let at = |h: &QualityHistogram, i: usize| -> [u64; 16] { std::array::from_fn(|code| h.get(i, code)) };
        (0..self.nbases).map(|i| Acgtno::of(&at(fwd, i), &at(rev, i), false)).collect()
    }

    /// Base counts by cycle, read oriented (reverse reads complemented).
    fn read_oriented(&self) -> Vec<Acgtno> {
        let [[f1, r1], [f2, r2]] = &self.bases;
        (0..self.nbases)
            .map(|i| {
                let fwd: [u64; 16] = std::array::from_fn(|code| f1.get(i, code) + f2.get(i, code));
                let rev: [u64; 16] = std::array::from_fn(|code| r1.get(i, code) + r2.get(i, code));
                Acgtno::of(&fwd, &rev, true)
            })
            .collect()
    }

    /// The order of the next GC-depth bin: its part, then its rank in it.
    fn next_bin_order(&self) -> u64 {
        self.part << 32 | self.gcd.len() as u64
    }

    /// Counts part `part` of a file (parts numbered from 1 in file order):
    /// GC-depth bins of later parts come after those of earlier ones.
    pub fn set_part(&mut self, part: u64) {
        self.part = part;
    }

    /// Moves the GC-depth bin that started last in the file to the end,
    /// where samtools' printing expects its last bin (parts may have been
    /// summed in any order).
    pub(crate) fn last_bin_last(&mut self) {
        if let Some((at, _)) = self.gcd.iter().enumerate().skip(1).max_by_key(|(_, b)| b.order) {
            let end = self.gcd.len() - 1;
            self.gcd.swap(at, end);
        }
    }

    /// Whether what has been counted so far already rules out summing parts
    /// of the file counted on their own: reads out of order, or a read that
    /// grew the arrays (see [`Stats::end_part`]).
    pub fn rules_out_parts(&self) -> bool {
        !self.is_sorted || self.nbases != INITIAL_BASES
    }

    /// Ends a part of the file counted on its own (the records of one
    /// reference): flushes the coverage window as the next reference's
    /// first read, or the end of the file, flushes it in one pass.
    pub fn end_part(&mut self, settings: &StatsSettings) -> Result<PartSummary, StatsError> {
        self.finish(settings)?;
        Ok(PartSummary {
            seen: self.seen,
            sorted: self.is_sorted,
            grew: self.nbases != INITIAL_BASES,
            left_depth: self.ring.holds_depth(),
            barcodes: self.barcodes.iter().any(|b| !b.bases.is_empty()) || self.error_number > 0,
        })
    }

    /// Adds the counts of `later`, another part of the file (see
    /// [`Stats::end_part`] for when the sum is exact; parts may be added
    /// in any order): counts add up, maxima are the larger, GC-depth bins
    /// join these (their order is kept in them).
    pub fn merge(&mut self, later: &Stats) {
        let add = |a: &mut Vec<u64>, b: &[u64]| {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            // Zeros are not added: pages never written stay unmapped.
            a.iter_mut().zip(b).filter(|(_, y)| **y != 0).for_each(|(x, y)| *x += y);
        };
        self.quals_1st.merge(&later.quals_1st);
        self.quals_2nd.merge(&later.quals_2nd);
        add(&mut self.gc_1st, &later.gc_1st);
        add(&mut self.gc_2nd, &later.gc_2nd);
        for (mine, theirs) in self.bases.iter_mut().flatten().zip(later.bases.iter().flatten()) {
            mine.merge(theirs);
        }
        add(&mut self.read_lengths, &later.read_lengths);
        add(&mut self.read_lengths_1st, &later.read_lengths_1st);
        add(&mut self.read_lengths_2nd, &later.read_lengths_2nd);
        add(&mut self.insertions, &later.insertions);
        add(&mut self.deletions, &later.deletions);
        add(&mut self.ins_cycles_1st, &later.ins_cycles_1st);
        add(&mut self.ins_cycles_2nd, &later.ins_cycles_2nd);
        add(&mut self.del_cycles_1st, &later.del_cycles_1st);
        add(&mut self.del_cycles_2nd, &later.del_cycles_2nd);
        if let (Some(a), Some(b)) = (self.mpc.as_mut(), later.mpc.as_ref()) {
            add(a, b);
        }
        match (&mut self.isize, &later.isize) {
            (InsertSizes::Dense(a), InsertSizes::Dense(b)) => {
                a.iter_mut().zip(b).filter(|(_, y)| **y != [0; 3]).for_each(|(x, y)| (0..3).for_each(|k| x[k] += y[k]));
            }
            (InsertSizes::Sparse { counts, max }, InsertSizes::Sparse { counts: b, max: bmax }) => {
                for (k, v) in b {
                    let c = counts.entry(*k).or_default();
                    (0..3).for_each(|i| c[i] += v[i]);
                }
                *max = (*max).max(*bmax);
            }
            _ => unreachable!("parts share their settings"),
        }
        self.nbases = self.nbases.max(later.nbases);
        self.max_len = self.max_len.max(later.max_len);
        self.max_len_1st = self.max_len_1st.max(later.max_len_1st);
        self.max_len_2nd = self.max_len_2nd.max(later.max_len_2nd);
        self.max_qual = self.max_qual.max(later.max_qual);
        self.is_sorted &= later.is_sorted;
        for (a, b) in [
            (&mut self.total_len, later.total_len),
            (&mut self.total_len_1st, later.total_len_1st),
            (&mut self.total_len_2nd, later.total_len_2nd),
            (&mut self.total_len_dup, later.total_len_dup),
            (&mut self.nreads_1st, later.nreads_1st),
            (&mut self.nreads_2nd, later.nreads_2nd),
            (&mut self.nreads_other, later.nreads_other),
            (&mut self.nreads_filtered, later.nreads_filtered),
            (&mut self.nreads_dup, later.nreads_dup),
            (&mut self.nreads_unmapped, later.nreads_unmapped),
            (&mut self.nreads_single_mapped, later.nreads_single_mapped),
            (&mut self.nreads_paired_and_mapped, later.nreads_paired_and_mapped),
            (&mut self.nreads_properly_paired, later.nreads_properly_paired),
            (&mut self.nreads_paired_tech, later.nreads_paired_tech),
            (&mut self.nreads_anomalous, later.nreads_anomalous),
            (&mut self.nreads_mq0, later.nreads_mq0),
            (&mut self.nbases_mapped, later.nbases_mapped),
            (&mut self.nbases_trimmed, later.nbases_trimmed),
            (&mut self.nreads_qcfailed, later.nreads_qcfailed),
            (&mut self.nreads_secondary, later.nreads_secondary),
            (&mut self.nreads_supplementary, later.nreads_supplementary),
        ] {
            *a += b;
        }
        self.nbases_mapped_cigar = self.nbases_mapped_cigar.wrapping_add(later.nbases_mapped_cigar);
        self.nmismatches = self.nmismatches.wrapping_add(later.nmismatches);
        for k in 0..3 {
            self.checksum[k] = self.checksum[k].wrapping_add(later.checksum[k]);
        }
        self.gcd.extend_from_slice(&later.gcd[1..]);
        add(&mut self.cov, &later.cov);
        self.sum_qual += later.sum_qual;
        if later.barcodes.iter().any(|b| !b.bases.is_empty()) {
            self.barcodes = later.barcodes.clone();
            self.error_number = later.error_number;
        }
        self.seen |= later.seen;
    }

    /// Counts the depths still in the coverage window (at the end).
    pub fn finish(&mut self, settings: &StatsSettings) -> Result<(), StatsError> {
        let bins = CoverageBins::new(settings.coverage.0, settings.coverage.1, settings.coverage.2);
        Ok(self.ring.flush(None, &bins, &mut self.cov)?)
    }
}

/// The tags of the barcodes stats counts.
fn is_barcode_tag(tag: [u8; 2]) -> bool {
    matches!(&tag, b"BC" | b"CR" | b"OX" | b"RX")
}

/// Aligned blocks of a read kept in [`CigarShape`]: most reads have one
/// or a few, and a read with more walks its CIGAR again.
const INLINE_BLOCKS: usize = 8;

/// What the counting of a record reads of its CIGAR, from one walk over it
/// (it took four, one for each use): the hard-clipped bases (in the read's
/// length), the bases mapped (`M I = X`) and deleted, whether it has
/// indels (most reads have none: their walk for the indel counts is
/// skipped), and its aligned blocks (`M = X`, empty ones too) as reference
/// offsets from its position.
struct CigarShape {
    hard_clipped: usize,
    mapped: u64,
    deleted: i64,
    has_indels: bool,
    blocks: [(i64, i64); INLINE_BLOCKS],
    /// All the aligned blocks, kept or not.
    n_blocks: usize,
}

impl CigarShape {
    #[inline]
    fn of(cigar: crate::bam::Cigar<'_>) -> CigarShape {
        let mut shape =
            CigarShape { hard_clipped: 0, mapped: 0, deleted: 0, has_indels: false, blocks: [(0, 0); INLINE_BLOCKS], n_blocks: 0 };
        let mut at = 0i64;
        for (op, len) in cigar.iter() {
            let n = i64::from(len);
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    shape.mapped += u64::from(len);
                    if let Some(block) = shape.blocks.get_mut(shape.n_blocks) {
                        *block = (at, at + n);
                    }
                    shape.n_blocks += 1;
                    at += n;
                }
                CigarOp::Insertion => {
                    shape.mapped += u64::from(len);
                    shape.has_indels = true;
                }
                CigarOp::Deletion => {
                    shape.deleted += n;
                    shape.has_indels = true;
                    at += n;
                }
                CigarOp::Skip => at += n,
                CigarOp::HardClip => shape.hard_clipped += len as usize,
                _ => {}
            }
        }
        shape
    }

    /// The aligned blocks in order, when there were few enough to keep.
    #[inline]
    fn blocks(&self) -> Option<&[(i64, i64)]> {
        self.blocks.get(..self.n_blocks)
    }
}

fn is_paired_and_mapped(flag: u16) -> bool {
    flag & flags::PAIRED != 0 && flag & flags::UNMAPPED == 0 && flag & flags::MATE_UNMAPPED == 0
}

/// bwa's count of bases trimmed from a read's 3' end at quality `trim`.
fn bwa_trim_read(trim: i32, quals: &[u8], reverse: bool) -> i32 {
    let len = quals.len() as i32;
    if len < BWA_MIN_READ_LEN {
        return 0;
    }
    let max_trimmed = len - BWA_MIN_READ_LEN + 1;
    let (mut sum, mut max_sum, mut max_l) = (0i32, 0i32, 0i32);
    for l in 0..max_trimmed {
        let q = quals[if reverse { l } else { len - 1 - l } as usize];
        sum += trim - i32::from(q);
        if sum < 0 {
            break;
        }
        if sum > max_sum {
            max_sum = sum;
            // bwa clips one base less than the best cut, and so does samtools.
            max_l = l;
        }
    }
    max_l
}

/// A `Z` (or `H`) tag's text, as htslib's `bam_aux2Z` gives it.
fn aux_string<'a>(aux: &crate::bam::Aux<'a>, tag: [u8; 2]) -> Option<&'a [u8]> {
    match aux.find(tag)? {
        crate::bam::AuxValue::String(s) | crate::bam::AuxValue::Hex(s) => Some(s),
        _ => None,
    }
}

fn tag_text(tag: [u8; 2]) -> String {
    String::from_utf8_lossy(&tag).into_owned()
}

fn name_of(names: &[Vec<u8>], tid: i32) -> String {
    usize::try_from(tid).ok().and_then(|t| names.get(t)).map_or_else(|| "*".to_string(), |n| String::from_utf8_lossy(n).into_owned())
}

/// A whole run: the statistics of all reads, those of each `-S` value,
/// the table of mates they share and the reference.
pub struct Collector<'a> {
    settings: &'a StatsSettings,
    /// The statistics of every read.
    pub all: Stats,
    /// `-S`: the statistics of each tag value, in the order first seen.
    pub split: Vec<Stats>,
    split_index: HashMap<Vec<u8>, usize>,
    /// The targets each `-S` group starts with (`-t`'s, not the regions after the file).
    split_targets: Option<Targets>,
    pairs: Pairs,
    context: Context<'a>,
    /// Messages samtools prints on stderr as it goes (barcode problems).
    pub notes: Vec<String>,
}

impl<'a> Collector<'a> {
    /// A run over records of a file whose references are `names`;
    /// `targets` restricts all reads' statistics, `split_targets` each
    /// `-S` group's; `read_groups` are `-I`'s.
    pub fn new(
        settings: &'a StatsSettings,
        names: &'a [Vec<u8>],
        fasta: Option<&'a Fasta>,
        targets: Option<Targets>,
        split_targets: Option<Targets>,
        read_groups: Option<Vec<Vec<u8>>>,
    ) -> Collector<'a> {
        Collector {
            settings,
            all: Stats::new(settings, targets, read_groups, fasta.is_some()),
            split: Vec::new(),
            split_index: HashMap::new(),
            split_targets,
            pairs: Pairs::default(),
            context: Context { names, fasta, fetched: Vec::new() },
            notes: Vec::new(),
        }
    }

    /// The statistics of all reads and the messages, for a part counted on its own.
    pub fn into_all(self) -> (Stats, Vec<String>) {
        (self.all, self.notes)
    }

    /// Counts one record, into its `-S` group first, then into all reads'.
    pub fn add(&mut self, r: &RecordRef<'_>) -> Result<(), StatsError> {
        self.add_placed(r, Place::of(r))
    }

    /// [`Collector::add`] of a record whose positions are `place` (wider
    /// than its fields hold).
    pub fn add_placed(&mut self, r: &RecordRef<'_>, place: Place) -> Result<(), StatsError> {
        if let Some(tag) = self.settings.split_tag {
            let Some(value) = aux_string(&r.aux(), tag) else {
                return Err(StatsError(format!("Tag '{}' not found in bam_line.", tag_text(tag))));
            };
            let at = match self.split_index.get(value) {
                Some(&at) => at,
                None => {
                    let mut stats = Stats::new(self.settings, self.split_targets.clone(), None, self.context.fasta.is_some());
                    stats.split_name = Some(value.to_vec());
                    self.split.push(stats);
                    self.split_index.insert(value.to_vec(), self.split.len() - 1);
                    self.split.len() - 1
                }
            };
            self.split[at].collect(r, place, self.settings, &mut self.pairs, &mut self.context, &mut self.notes)?;
        }
        self.all.collect(r, place, self.settings, &mut self.pairs, &mut self.context, &mut self.notes)
    }
}
