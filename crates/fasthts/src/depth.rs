//! Per-base read depth, as `samtools depth` 1.16 counts and prints it.
//!
//! samtools depth (1.13 on) does not pile reads up: it adds each read's
//! aligned bases to a running histogram and prints a position once no
//! later read can start before it. [`Counter`] does the same with a
//! difference array (two updates per CIGAR operation instead of one per
//! base), fed records in coordinate order; the rules it reproduces:
//!
//! - a read counts unless it is unplaced, has a flag of
//!   [`DepthOptions::exclude_flags`] (samtools' default: unmapped,
//!   secondary, QC-failed, duplicate; `-g` removes from it, `-G` adds), has
//!   a MAPQ below `min_mapping_quality`, or (with `min_read_length`)
//!   aligns fewer bases than that (the sequence less its outer soft
//!   clips, or, without a sequence, the M/I/=/X lengths);
//! - `M`, `=` and `X` bases count when their quality is at least
//!   `min_base_quality` (without a stored sequence, samtools compares the
//!   bytes after the record for all but the last `len % 8` bases of an
//!   operation: the tags, then zeros here, where samtools reads whatever
//!   its buffer holds);
//!   `D` counts only with `count_deletions` (`-J`), judged by the quality
//!   of the base after it; `N` never;
//! - a position is printed when a read's span (start to `bam_endpos`)
//!   covers it, so a deletion or skip inside a read prints depth 0;
//!   `all_positions` 1 (`-a`) also prints every other position of the
//!   references that have reads, 2 (`-aa`) of every reference (with a
//!   region, of the region only);
//! - `remove_overlaps` (`-s`): a paired read whose mate is mapped is
//!   remembered by name with its end when its mate may overlap it; the
//!   next read of that name does not count below that end.
//!
//! With an index and without `-s` the genome is cut into windows that
//! are counted in parallel, each reading the records that overlap it (as
//! a region query does), and printed in order
//! ([`crate::command::depth_to`]).

use crate::bam::{flags, CigarOp, RecordRef};
use crate::region::BedFilter;
use crate::Error;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

/// samtools depth's default flag filter: unmapped, secondary, QC-failed
/// and duplicate reads do not count.
pub const DEFAULT_EXCLUDE_FLAGS: u16 = flags::UNMAPPED | flags::SECONDARY | flags::QC_FAIL | flags::DUPLICATE;

/// Positions per window when counting in parallel: small enough that a
/// window's text (~20 MB) and counts stay modest, large enough that
/// re-reading the reads that cross a cut costs little.
pub const WINDOW_BASES: u64 = 1 << 20;

/// What to count and print: samtools depth's options.
#[derive(Clone, Debug)]
pub struct DepthOptions {
    /// Reads with any of these flags do not count (`-g`/`-G` change
    /// [`DEFAULT_EXCLUDE_FLAGS`]).
    pub exclude_flags: u16,
    /// Bases below this quality do not count (`-q`).
    pub min_base_quality: i32,
    /// Reads below this mapping quality do not count (`-Q`).
    pub min_mapping_quality: i32,
    /// Reads aligning fewer query bases do not count (`-l`; 0: no limit).
    pub min_read_length: i64,
    /// Deletions count as covered (`-J`).
    pub count_deletions: bool,
    /// 0: covered positions; 1: all positions of references with reads
    /// (`-a`); 2: of all references (`-aa`).
    pub all_positions: u8,
    /// Overlapping mates count once (`-s`).
    pub remove_overlaps: bool,
    /// Print `#CHROM  POS  <file names>` first (`-H`).
    pub header: bool,
    /// Only this region (`-r`, samtools notation); needs indexes.
    pub region: Option<String>,
    /// Only print positions inside this BED file's intervals (`-b`).
    pub bed: Option<PathBuf>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Positions per parallel window (at most).
    pub window_bases: u64,
    /// The reference FASTA of CRAM inputs (samtools' `--reference`);
    /// `None`: as htslib finds it ([`crate::cram`]).
    pub reference: Option<PathBuf>,
    /// The index of each input, in input order (`-X`); `None`: the one
    /// beside each input. samtools' `-H` line names these files then.
    pub indexes: Option<Vec<PathBuf>>,
}

impl Default for DepthOptions {
    fn default() -> Self {
        DepthOptions {
            exclude_flags: DEFAULT_EXCLUDE_FLAGS,
            min_base_quality: 0,
            min_mapping_quality: 0,
            min_read_length: 0,
            count_deletions: false,
            all_positions: 0,
            remove_overlaps: false,
            header: false,
            region: None,
            bed: None,
            threads: None,
            window_bases: WINDOW_BASES,
            reference: None,
            indexes: None,
        }
    }
}

/// The flags whose reads do not count, from samtools depth's `-g` (flags
/// taken off [`DEFAULT_EXCLUDE_FLAGS`]) and `-G` (flags added) values, each
/// read by [`parse_flags`]: every `-g`, then every `-G` (for callers without
/// an order, as Python's keywords; the command line goes through
/// [`exclude_flags_in_order`]).
pub fn exclude_flags<S: AsRef<str>>(include: &[S], exclude: &[S]) -> Result<u16, Error> {
    let edits = include.iter().map(|g| (false, g.as_ref())).chain(exclude.iter().map(|g| (true, g.as_ref())));
    exclude_flags_in_order(edits)
}

/// [`exclude_flags`] from `-g` (`false`) and `-G` (`true`) values in
/// command-line order, as samtools applies them: `-G 0x400 -g 0x400`
/// counts duplicates, `-g 0x400 -G 0x400` does not.
pub fn exclude_flags_in_order<'a>(edits: impl IntoIterator<Item = (bool, &'a str)>) -> Result<u16, Error> {
    let mut mask = DEFAULT_EXCLUDE_FLAGS;
    for (add, text) in edits {
        let flags = parse_flags(text)?;
        if add {
            mask |= flags;
        } else {
            mask &= !flags;
        }
    }
    Ok(mask)
}

/// Reads a flag value as samtools' `-g`/`-G` (htslib's `bam_str2flag`):
/// a number (decimal, `0x` hex or `0` octal; digits up to the first other
/// character), or a comma-separated list of flag names, each of which may
/// be abbreviated to any prefix (`PAIRED,UNMAP`; case ignored). An
/// unknown name is an error (where samtools would take it as -1).
///
/// ```
/// use fasthts::depth::parse_flags;
/// assert_eq!(parse_flags("0x904").unwrap(), 0x904);
/// assert_eq!(parse_flags("UNMAP,DUP").unwrap(), 0x404);
/// assert!(parse_flags("NOPE").is_err());
/// ```
pub fn parse_flags(text: &str) -> Result<u16, Error> {
    let bad = || Error::InvalidArgument(format!("invalid flag value {text:?}"));
    if let Some(n) = leading_c_long(text) {
        return Ok(n as u16);
    }
    const NAMES: [(&str, u16); 12] = [
        ("PAIRED", flags::PAIRED),
        ("PROPER_PAIR", flags::PROPER_PAIR),
        ("UNMAP", flags::UNMAPPED),
        ("MUNMAP", flags::MATE_UNMAPPED),
        ("REVERSE", flags::REVERSE),
        ("MREVERSE", flags::MATE_REVERSE),
        ("READ1", flags::READ1),
        ("READ2", flags::READ2),
        ("SECONDARY", flags::SECONDARY),
        ("QCFAIL", flags::QC_FAIL),
        ("DUP", flags::DUPLICATE),
        ("SUPPLEMENTARY", flags::SUPPLEMENTARY),
    ];
    let mut flag = 0;
    for part in text.split(',') {
        // htslib compares the part's length of each name: a prefix matches.
        let part = part.to_ascii_uppercase();
        match NAMES.iter().find(|(name, _)| name.starts_with(&part)) {
            Some((_, f)) => flag |= f,
            None => return Err(bad()),
        }
        if part.is_empty() {
            break;
        }
    }
    Ok(flag)
}

/// C's `strtol(text, &end, 0)` when it converts something: leading
/// spaces, a sign, then `0x` hex, `0` octal or decimal digits.
fn leading_c_long(text: &str) -> Option<i64> {
    let s = text.trim_start();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let b = s.as_bytes();
    let (radix, digits) = if b.len() > 2 && b[0] == b'0' && (b[1] | 0x20) == b'x' && b[2].is_ascii_hexdigit() {
        (16, &s[2..])
    } else if b.first() == Some(&b'0') {
        (8, s)
    } else {
        (10, s)
    };
    let n = digits.bytes().take_while(|c| (*c as char).is_digit(radix)).count();
    if n == 0 {
        return None;
    }
    let v = i64::from_str_radix(&digits[..n], radix).unwrap_or(i64::MAX);
    Some(if negative { v.wrapping_neg() } else { v })
}

/// C's `atoi`: leading spaces, a sign and decimal digits; 0 when there are
/// none (samtools reads `-q`, `-Q` and `-l` so).
pub fn atoi(text: &str) -> i64 {
    let s = text.trim_start();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: i64 = 0;
    for c in s.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    let v = if negative { -v } else { v };
    // atoi returns an int.
    v as i32 as i64
}

/// What every counter shares: the options resolved against the inputs.
pub(crate) struct Setup<'r> {
    pub(crate) options: DepthOptions,
    /// References (for their names) and lengths (of the first input); the
    /// references borrowed from its header unless reading takes the
    /// inputs (a draft assembly's 600,000 names are not copied for
    /// nothing).
    pub(crate) names: std::borrow::Cow<'r, [crate::bam::Reference]>,
    pub(crate) lengths: Vec<i64>,
    pub(crate) bed: Option<BedFilter>,
    /// The region (`-r`): reference, start and end (end exclusive).
    pub(crate) region: Option<(i32, i64, i64)>,
    pub(crate) n_files: usize,
    /// How rows are written.
    pub(crate) encoding: RowEncoding,
}

/// How rows are written into the pieces gathered: samtools' text, or
/// fixed-size binary rows that [`DepthColumns`] takes apart into columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum RowEncoding {
    /// `name<TAB>pos<TAB>depth...<NEWLINE>`.
    #[default]
    Text,
    /// The reference id (`i32`), the 0-based position (`i64`) and a depth
    /// (`u32`) per input, native-endian.
    Binary,
}

impl Setup<'_> {
    /// Whether a read counts at all (before its bases are looked at).
    #[inline]
    pub(crate) fn keeps(&self, r: &RecordRef<'_>) -> bool {
        let o = &self.options;
        r.ref_id() >= 0
            && r.flag() & o.exclude_flags == 0
            && i32::from(r.mapq()) >= o.min_mapping_quality
            && (o.min_read_length == 0 || aligned_query_len(r) >= o.min_read_length)
    }

    /// The BED intervals of reference `tid`, if printing is filtered.
    fn bed_of(&self, tid: i32) -> Option<&[(i64, i64)]> {
        self.bed.as_ref().map(|b| b.intervals(&self.names[tid as usize].name))
    }
}

/// The query bases that take part in the alignment, as samtools depth's
/// `-l` measures them: the sequence less its leading and trailing soft
/// clips, or without a sequence the M, I, = and X lengths.
fn aligned_query_len(r: &RecordRef<'_>) -> i64 {
    let cigar = r.cigar();
    let n = cigar.len();
    if r.seq_len() > 0 {
        let mut len = r.seq_len() as i64;
        let mut left = 0;
        while left < n {
            match cigar.get(left) {
                Some((CigarOp::SoftClip, l)) => len -= i64::from(l),
                _ => break,
            }
            left += 1;
        }
        let mut right = n;
        while right > left + 1 {
            match cigar.get(right - 1) {
                Some((CigarOp::SoftClip, l)) => len -= i64::from(l),
                _ => break,
            }
            right -= 1;
        }
        len
    } else {
        cigar
            .iter()
            .filter(|(op, _)| matches!(op, CigarOp::Match | CigarOp::Insertion | CigarOp::SequenceMatch | CigarOp::SequenceMismatch))
            .map(|(_, l)| i64::from(l))
            .sum()
    }
}

/// Why counting stopped.
#[derive(Debug)]
pub(crate) enum CountError {
    /// A read ends before positions already printed.
    NotSorted,
    /// A CIGAR operation code samtools depth does not know.
    UnsupportedCigar(u8),
}

impl std::fmt::Display for CountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountError::NotSorted => f.write_str("data is not position sorted"),
            CountError::UnsupportedCigar(op) => write!(f, "unsupported CIGAR operation {op}"),
        }
    }
}

/// Names of reads waiting for their mate (`-s`), kept in one arena: a
/// lookup or an insert allocates nothing once the arena and table have
/// grown.
#[derive(Default)]
struct MateEnds {
    hasher: std::collections::hash_map::RandomState,
    /// Name hash → (start in the arena, length, end of the read).
    table: HashMap<u64, (usize, usize, i64)>,
    /// Names whose hash another waiting name holds already (rare).
    collided: HashMap<Vec<u8>, i64>,
    arena: Vec<u8>,
    live_bytes: usize,
}

impl MateEnds {
    fn hash(&self, name: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(name);
        h.finish()
    }

    /// The end stored for `name`, removed; else `None`, and `end` is
    /// stored when `remember`.
    fn take_or_remember(&mut self, name: &[u8], end: i64, remember: bool) -> Option<i64> {
        let key = self.hash(name);
        match self.table.get(&key) {
            Some(&(at, len, stored)) if &self.arena[at..at + len] == name => {
                self.table.remove(&key);
                self.live_bytes -= len;
                return Some(stored);
            }
            Some(_) => {
                if let Some(stored) = self.collided.remove(name) {
                    return Some(stored);
                }
                if remember {
                    self.collided.insert(name.to_vec(), end);
                }
                return None;
            }
            None => {}
        }
        if let Some(stored) = self.collided.remove(name) {
            return Some(stored);
        }
        if remember {
            if self.arena.len() > (1 << 20) && self.arena.len() > 4 * self.live_bytes {
                self.compact();
            }
            let at = self.arena.len();
            self.arena.extend_from_slice(name);
            self.live_bytes += name.len();
            self.table.insert(key, (at, name.len(), end));
        }
        None
    }

    /// Drops the names no longer waiting from the arena.
    fn compact(&mut self) {
        let mut arena = Vec::with_capacity(self.live_bytes * 2);
        for entry in self.table.values_mut() {
            let (at, len, _) = *entry;
            entry.0 = arena.len();
            arena.extend_from_slice(&self.arena[at..at + len]);
        }
        self.arena = arena;
    }
}

/// What a counted piece printed.
#[derive(Default)]
pub(crate) struct Piece {
    /// The rows, samtools' text.
    pub(crate) text: Vec<u8>,
    /// Whether any read counted.
    pub(crate) had_reads: bool,
}

/// Counts reads handed in coordinate order (each file's reads sorted,
/// files merged by position) and prints rows as positions become final,
/// as samtools depth does for a whole file or a region. See the module
/// documentation for the rules.
pub(crate) struct Counter<'s> {
    setup: &'s Setup<'s>,
    stride: usize,
    /// Where the rows go; `spill` empties it when it grows large.
    pub(crate) out: Vec<u8>,
    /// Printed bounds of every reference: `[beg, end)`.
    beg: i64,
    end: i64,
    /// Whether the bounds are a region (`-r`) or the piece of one, rather
    /// than the whole file: no empty references are printed (`-aa`).
    bounded: bool,
    /// The reference being counted (-1: none yet).
    tid: i32,
    last_ref: i32,
    /// Positions before this are printed.
    flushed: i64,
    /// Position of `diffs[0]`.
    base: i64,
    /// Depth changes per position and file (`stride` files per position).
    diffs: Vec<i32>,
    /// Running depth per file at `flushed`.
    running: Vec<i32>,
    /// The furthest end of a counted read on this reference (clipped).
    max_end: i64,
    rows: RowText,
    bed: Option<&'s [(i64, i64)]>,
    mates: Vec<MateEnds>,
    pub(crate) had_reads: bool,
    /// Where rows go once `out` holds [`SPILL_BYTES`] (in one pass over
    /// whole files; a window keeps its rows), and the first write error.
    sink: Option<&'s mut (dyn std::io::Write + Send)>,
    pub(crate) sink_error: Option<std::io::Error>,
    /// The reads are SAM records of [`crate::sam::Positions::Wide`]
    /// (positions past 2^31 kept, as samtools depth reads them).
    pub(crate) wide_positions: bool,
}

/// Rows are handed to the sink in pieces of about this size.
const SPILL_BYTES: usize = 1 << 20;

impl<'s> Counter<'s> {
    /// A counter printing positions `[beg, end)` of every reference;
    /// `bounded` as for a region.
    pub(crate) fn new(setup: &'s Setup<'s>, beg: i64, end: i64, bounded: bool) -> Self {
        let n = setup.n_files;
        let mates = if setup.options.remove_overlaps { (0..n).map(|_| MateEnds::default()).collect() } else { Vec::new() };
        Counter {
            setup,
            stride: n,
            out: Vec::new(),
            beg,
            end,
            bounded,
            tid: -1,
            last_ref: -1,
            flushed: 0,
            base: 0,
            diffs: Vec::new(),
            running: vec![0; n],
            max_end: i64::MIN,
            rows: RowText::new(setup.encoding),
            bed: None,
            mates,
            had_reads: false,
            sink: None,
            sink_error: None,
            wide_positions: false,
        }
    }

    /// Hands rows to `sink` as they accumulate rather than keeping them.
    pub(crate) fn spill_to(&mut self, sink: &'s mut (dyn std::io::Write + Send)) {
        self.sink = Some(sink);
    }

    /// Writes the rows held to the sink when they are many (`all`: any).
    pub(crate) fn spill(&mut self, all: bool) {
        if let Some(sink) = self.sink.as_mut() {
            if (all || self.out.len() >= SPILL_BYTES) && !self.out.is_empty() {
                if self.sink_error.is_none() {
                    if let Err(e) = sink.write_all(&self.out) {
                        self.sink_error = Some(e);
                    }
                }
                self.out.clear();
            }
        }
    }

    /// Counts read `r` of file `file` (a read [`Setup::keeps`]).
    pub(crate) fn add(&mut self, file: usize, r: &RecordRef<'_>) -> Result<(), CountError> {
        if self.wide_positions {
            let bytes = r.as_bytes();
            let (pos, mate_pos, _) = crate::sam::wide_positions(bytes);
            let core = RecordRef::new_prevalidated(&bytes[..bytes.len() - crate::sam::wide_positions_len(bytes)]);
            return self.add_at(file, &core, pos, mate_pos);
        }
        self.add_at(file, r, i64::from(r.pos()), i64::from(r.mate_pos()))
    }

    /// [`Counter::add`] of `r` placed at `pos`, its mate at `mate_pos`
    /// (which `r`'s 32-bit fields may not hold).
    fn add_at(&mut self, file: usize, r: &RecordRef<'_>, pos: i64, mate_pos: i64) -> Result<(), CountError> {
        let tid = r.ref_id();
        if tid != self.tid {
            self.change_reference(Some((tid, pos)));
        } else if self.flushed < pos {
            self.flush_to(pos);
        }
        self.had_reads = true;
        let end_pos = pos + (r.end_pos() - i64::from(r.pos()));
        if end_pos < self.flushed {
            return Err(CountError::NotSorted);
        }
        let flag = r.flag();
        let mut clip = 0;
        if !self.mates.is_empty() && flag & flags::PAIRED != 0 && flag & flags::MATE_UNMAPPED == 0 {
            let may_overlap = mate_pos == -1 || (r.ref_id() == r.mate_ref_id() && mate_pos <= end_pos);
            if let Some(end) = self.mates[file].take_or_remember(r.name(), end_pos, may_overlap) {
                clip = end;
            }
        }
        let limit = end_pos.min(self.end);
        self.reserve(limit);
        // Contributions below what is printed, or past the read's end or
        // the bounds, are never seen.
        let floor = self.flushed.max(clip);
        let min_q = self.setup.options.min_base_quality;
        let qual = r.qual();
        let mut at = pos;
        let mut q = 0usize;
        for (op, len) in r.cigar().iter() {
            let len = i64::from(len);
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    if min_q <= 0 {
                        self.add_range(file, at.max(floor), (at + len).min(limit));
                    } else {
                        // Runs of bases that pass; bases past the sequence pass,
                        // except that without a sequence samtools' loop, eight
                        // bases at a time, reads its "qualities" from the bytes
                        // after it (the tags, then what follows: taken as 0).
                        let (a, b) = (at.max(floor), (at + len).min(limit));
                        let from = at.max(clip);
                        let unrolled_end = from + ((at + len - from).max(0) & !7);
                        let aux = if qual.is_empty() { r.aux_bytes() } else { &[] };
                        let mut run_start = -1;
                        for p in a..b.max(a) {
                            let qi = q + (p - at) as usize;
                            let pass = if qi < qual.len() {
                                i32::from(qual[qi]) >= min_q
                            } else if qual.is_empty() && p < unrolled_end {
                                i32::from(aux.get(qi).copied().unwrap_or(0)) >= min_q
                            } else {
                                true
                            };
                            if pass && run_start < 0 {
                                run_start = p;
                            } else if !pass && run_start >= 0 {
                                self.add_range(file, run_start, p);
                                run_start = -1;
                            }
                        }
                        if run_start >= 0 {
                            self.add_range(file, run_start, b);
                        }
                    }
                    at += len;
                    q += len as usize;
                }
                CigarOp::Deletion => {
                    // Judged by the quality of the base after the deletion.
                    if self.setup.options.count_deletions && (q >= qual.len() || i32::from(qual[q]) >= min_q) {
                        self.add_range(file, at.max(floor), (at + len).min(limit));
                    }
                    at += len;
                }
                CigarOp::Skip => at += len,
                CigarOp::Insertion | CigarOp::SoftClip => q += len as usize,
                CigarOp::HardClip | CigarOp::Pad => {}
                CigarOp::Unknown(code) => return Err(CountError::UnsupportedCigar(code)),
            }
        }
        self.max_end = self.max_end.max(limit);
        Ok(())
    }

    /// Makes room in `diffs` up to position `end` (inclusive).
    fn reserve(&mut self, end: i64) {
        let need = ((end - self.base + 1).max(0) as usize) * self.stride;
        if self.diffs.len() < need {
            self.diffs.resize(need, 0);
        }
    }

    #[inline]
    fn add_range(&mut self, file: usize, from: i64, to: i64) {
        if from < to {
            let s = self.stride;
            self.diffs[(from - self.base) as usize * s + file] += 1;
            self.diffs[(to - self.base) as usize * s + file] -= 1;
        }
    }

    /// Finishes the current reference and starts `next` (reference and
    /// position of its first read), or finishes the input (`None`), printing
    /// what samtools prints between them.
    fn change_reference(&mut self, next: Option<(i32, i64)>) {
        if self.tid >= 0 {
            self.flush_to(self.max_end);
            if self.setup.options.all_positions > 0 {
                let tid = self.tid;
                self.zero_rows(tid, self.flushed.max(self.max_end), self.setup.lengths[tid as usize]);
            }
        }
        if self.setup.options.all_positions > 1 && !self.bounded {
            let from = if self.last_ref < 0 { 0 } else { self.last_ref + 1 };
            let to = next.map_or(self.setup.names.len() as i32, |(t, _)| t);
            for t in from..to {
                self.zero_rows(t, 0, self.setup.lengths[t as usize]);
            }
        }
        let Some((tid, pos)) = next else { return };
        self.tid = tid;
        self.last_ref = tid;
        self.bed = self.setup.bed_of(tid);
        self.flushed = pos.max(self.beg);
        self.base = self.flushed;
        self.diffs.clear();
        self.running.iter_mut().for_each(|d| *d = 0);
        self.max_end = i64::MIN;
        if self.setup.options.all_positions > 0 {
            self.zero_rows(tid, 0, pos);
        }
    }

    /// Prints what is final once no read starts before `to`: the covered
    /// positions from `flushed` (all of them with `-a`), then forgets them.
    fn flush_to(&mut self, to: i64) {
        if to <= self.flushed {
            return;
        }
        let covered_to = to.min(self.max_end).max(self.flushed);
        if covered_to > self.flushed {
            self.print_counted(self.flushed, covered_to);
            self.spill(false);
        }
        if self.setup.options.all_positions > 0 && to > covered_to {
            let tid = self.tid;
            self.zero_rows_unclipped(tid, covered_to, to);
        }
        // The changes at the positions skipped (the ends of the last reads).
        let s = self.stride;
        let have = (self.diffs.len() / s) as i64 + self.base;
        for q in covered_to..to.min(have) {
            let at = (q - self.base) as usize * s;
            for (run, delta) in self.running.iter_mut().zip(&self.diffs[at..at + s]) {
                *run += delta;
            }
        }
        self.flushed = to;
        // Forget the printed positions once they are a good part of the array.
        let done = ((self.flushed - self.base) as usize * self.stride).min(self.diffs.len());
        if done == self.diffs.len() {
            // All printed: the next read may start far on (a gap of
            // billions of bases must not become array).
            self.diffs.clear();
            self.base = self.flushed;
        } else if done >= (64 << 10) && 2 * done >= self.diffs.len() {
            self.diffs.drain(..done);
            self.base += (done / self.stride) as i64;
        }
    }

    /// Prints positions `[from, to)` (counted; within the arrays as far as
    /// they go), applying the BED filter.
    fn print_counted(&mut self, from: i64, to: i64) {
        let tid = self.tid;
        self.rows.start_reference(tid, &self.setup.names[tid as usize].name);
        let mut p = from;
        while p < to {
            let (inside, until) = match self.bed {
                None => (true, to),
                Some(bed) => bed_segment(bed, p, to),
            };
            let s = self.stride;
            // The arrays reach past the furthest read end, so past every
            // position printed here.
            debug_assert!((self.diffs.len() / s) as i64 + self.base >= until);
            let counted_until = until;
            if inside {
                if s == 1 {
                    let mut d = self.running[0];
                    let diffs = &self.diffs[(p - self.base) as usize..(counted_until - self.base) as usize];
                    self.rows.seek(p, &mut self.out);
                    for &delta in diffs {
                        d += delta;
                        self.rows.row1(d, &mut self.out);
                    }
                    self.running[0] = d;
                } else {
                    self.rows.seek(p, &mut self.out);
                    for q in p..counted_until {
                        let at = (q - self.base) as usize * s;
                        for (run, delta) in self.running.iter_mut().zip(&self.diffs[at..at + s]) {
                            *run += delta;
                        }
                        self.rows.row(&self.running, &mut self.out);
                    }
                }
            } else {
                for q in p..counted_until {
                    let at = (q - self.base) as usize * s;
                    for (run, delta) in self.running.iter_mut().zip(&self.diffs[at..at + s]) {
                        *run += delta;
                    }
                }
            }
            p = until;
        }
    }

    /// samtools' zero rows of reference `tid` over `[from, to)` within the
    /// bounds, BED-filtered.
    fn zero_rows(&mut self, tid: i32, from: i64, to: i64) {
        self.zero_rows_unclipped(tid, from.max(self.beg), to.min(self.end));
    }

    fn zero_rows_unclipped(&mut self, tid: i32, from: i64, to: i64) {
        // In slices, so that a long stretch is handed on as it is written.
        let mut p = from;
        while p < to {
            let q = to.min(p.saturating_add(1 << 16));
            write_zero_rows(self.setup, tid, p, q, &mut self.rows, &mut self.out);
            self.spill(false);
            p = q;
        }
    }

    /// Ends the input: the last reference and, with `-aa`, the references
    /// after it; with a region and `-a`, the region when no read counted.
    pub(crate) fn finish(&mut self) {
        self.change_reference(None);
        if let Some((tid, beg, end)) = self.setup.region {
            if self.setup.options.all_positions > 0 && self.last_ref < 0 {
                let len = self.setup.lengths[tid as usize];
                self.zero_rows_unclipped(tid, beg.max(0), end.min(len));
            }
        }
        self.spill(true);
    }

    /// Ends one window of a reference: what follows the last read, when a
    /// read counted (see [`window_zero_rows`] otherwise).
    pub(crate) fn finish_window(&mut self) {
        if self.tid >= 0 {
            self.flush_to(self.max_end);
            if self.setup.options.all_positions > 0 {
                let tid = self.tid;
                self.zero_rows(tid, self.flushed.max(self.max_end), self.setup.lengths[tid as usize]);
            }
        }
    }
}

/// Whether `p` lies in one of the sorted, disjoint `bed` intervals, and
/// where (before `to`) that changes.
fn bed_segment(bed: &[(i64, i64)], p: i64, to: i64) -> (bool, i64) {
    // The first interval ending after p.
    let k = bed.partition_point(|&(_, e)| e <= p);
    match bed.get(k) {
        Some(&(b, e)) if b <= p => (true, e.min(to)),
        Some(&(b, _)) => (false, b.min(to)),
        None => (false, to),
    }
}

/// Zero rows of reference `tid` over `[from, to)`, BED-filtered.
pub(crate) fn write_zero_rows(setup: &Setup, tid: i32, from: i64, to: i64, rows: &mut RowText, out: &mut Vec<u8>) {
    rows.start_reference(tid, &setup.names[tid as usize].name);
    let zeros = vec![0i32; setup.n_files];
    let bed = setup.bed_of(tid);
    let mut p = from;
    while p < to {
        let (inside, until) = match bed {
            None => (true, to),
            Some(bed) => bed_segment(bed, p, to),
        };
        if inside {
            rows.seek(p, out);
            if setup.n_files == 1 {
                for _ in p..until {
                    rows.row1(0, out);
                }
            } else {
                for _ in p..until {
                    rows.row(&zeros, out);
                }
            }
        }
        p = until;
    }
}

/// The text of rows: `name<TAB>pos<TAB>depth...<NEWLINE>`, with the
/// position kept as decimal digits and counted up in place (or the rows
/// in [`RowEncoding::Binary`]).
pub(crate) struct RowText {
    encoding: RowEncoding,
    /// `name<TAB>`.
    prefix: Vec<u8>,
    tid: i32,
    /// The 1-based position of the next row, right-aligned in `digits`.
    digits: [u8; 20],
    first_digit: usize,
    /// The 0-based position of the next row.
    next: i64,
}

impl Default for RowText {
    fn default() -> Self {
        RowText::new(RowEncoding::Text)
    }
}

impl RowText {
    pub(crate) fn new(encoding: RowEncoding) -> Self {
        // No position yet: the first `seek` writes the digits.
        RowText { encoding, prefix: Vec::new(), tid: -1, digits: [b'0'; 20], first_digit: 20, next: -1 }
    }

    fn start_reference(&mut self, tid: i32, name: &str) {
        self.tid = tid;
        self.prefix.clear();
        self.prefix.extend_from_slice(name.as_bytes());
        self.prefix.push(b'\t');
    }

    /// A binary row's reference and position.
    #[inline]
    fn binary_start(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.tid.to_ne_bytes());
        out.extend_from_slice(&self.next.to_ne_bytes());
    }

    /// The next row is for 0-based position `p`.
    #[inline]
    fn seek(&mut self, p: i64, _out: &mut Vec<u8>) {
        if p == self.next && self.first_digit < self.digits.len() {
            return;
        }
        self.next = p;
        let mut v = (p + 1) as u64;
        let mut i = self.digits.len();
        loop {
            i -= 1;
            self.digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.first_digit = i;
    }

    /// Moves to the next position.
    #[inline]
    fn step(&mut self) {
        self.next += 1;
        let mut i = self.digits.len() - 1;
        loop {
            if self.digits[i] < b'9' {
                self.digits[i] += 1;
                return;
            }
            self.digits[i] = b'0';
            if i == self.first_digit {
                i -= 1;
                self.digits[i] = b'1';
                self.first_digit = i;
                return;
            }
            i -= 1;
        }
    }

    #[inline]
    fn row1(&mut self, depth: i32, out: &mut Vec<u8>) {
        if self.encoding == RowEncoding::Binary {
            self.binary_start(out);
            out.extend_from_slice(&(depth as u32).to_ne_bytes());
            self.next += 1;
            return;
        }
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(&self.digits[self.first_digit..]);
        out.push(b'\t');
        push_depth(out, depth);
        out.push(b'\n');
        self.step();
    }

    #[inline]
    fn row(&mut self, depths: &[i32], out: &mut Vec<u8>) {
        if self.encoding == RowEncoding::Binary {
            self.binary_start(out);
            for &d in depths {
                out.extend_from_slice(&(d as u32).to_ne_bytes());
            }
            self.next += 1;
            return;
        }
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(&self.digits[self.first_digit..]);
        for &d in depths {
            out.push(b'\t');
            push_depth(out, d);
        }
        out.push(b'\n');
        self.step();
    }
}

/// A depth in decimal, as kstring's `kputuw` prints an unsigned int.
#[inline]
fn push_depth(out: &mut Vec<u8>, d: i32) {
    let v = d as u32;
    if v < 10 {
        out.push(b'0' + v as u8);
    } else if v < 100 {
        out.extend_from_slice(&[b'0' + (v / 10) as u8, b'0' + (v % 10) as u8]);
    } else if v < 1000 {
        out.extend_from_slice(&[b'0' + (v / 100) as u8, b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8]);
    } else {
        let mut buf = [0u8; 10];
        let mut i = buf.len();
        let mut v = v;
        while v > 0 {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&buf[i..]);
    }
}

/// Depth rows as columns (the Python package's `fasthts.depth`): what
/// [`crate::command::depth_columns`] gives, the rows that `depth_to`
/// prints as text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DepthColumns {
    /// The reference names (of the first input), which `tid` numbers.
    pub references: Vec<String>,
    /// Each row's reference id.
    pub tid: Vec<i32>,
    /// Each row's 0-based position.
    pub pos: Vec<i64>,
    /// Each row's depths, one per input.
    pub depth: Vec<u32>,
    n_files: usize,
    /// The bytes of a row cut between two writes.
    partial: Vec<u8>,
}

impl DepthColumns {
    pub(crate) fn new(n_files: usize) -> DepthColumns {
        DepthColumns { n_files, ..DepthColumns::default() }
    }

    fn take_row(&mut self, row: &[u8]) {
        let int = |at: usize| i32::from_ne_bytes(row[at..at + 4].try_into().expect("4 bytes"));
        self.tid.push(int(0));
        self.pos.push(i64::from_ne_bytes(row[4..12].try_into().expect("8 bytes")));
        self.depth.extend((0..self.n_files).map(|i| int(12 + 4 * i) as u32));
    }
}

/// Takes [`RowEncoding::Binary`] rows apart as they are written.
impl std::io::Write for DepthColumns {
    fn write(&mut self, mut buf: &[u8]) -> std::io::Result<usize> {
        let size = 12 + 4 * self.n_files;
        let written = buf.len();
        if !self.partial.is_empty() {
            let need = (size - self.partial.len()).min(buf.len());
            self.partial.extend_from_slice(&buf[..need]);
            buf = &buf[need..];
            if self.partial.len() == size {
                let row = std::mem::take(&mut self.partial);
                self.take_row(&row);
            }
        }
        let whole = buf.len() / size * size;
        for row in buf[..whole].chunks_exact(size) {
            self.take_row(row);
        }
        self.partial.extend_from_slice(&buf[whole..]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// samtools depth's `-H` line: `#CHROM  POS` and the inputs as named.
pub fn header_line(inputs: &[PathBuf]) -> Vec<u8> {
    let mut line = b"#CHROM\tPOS".to_vec();
    for p in inputs {
        line.push(b'\t');
        line.extend_from_slice(p.as_os_str().as_encoded_bytes());
    }
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_as_htslib_reads_them() {
        assert_eq!(parse_flags("1024").unwrap(), 1024);
        assert_eq!(parse_flags("0x10").unwrap(), 16);
        assert_eq!(parse_flags("010").unwrap(), 8);
        assert_eq!(parse_flags("4abc").unwrap(), 4);
        assert_eq!(parse_flags("secondary,SUPP").unwrap(), 0x900);
        assert_eq!(parse_flags("P").unwrap(), flags::PAIRED);
        assert!(parse_flags("UNMAPPED").is_err());
    }

    #[test]
    fn atoi_as_c() {
        assert_eq!(atoi("12"), 12);
        assert_eq!(atoi(" -3x"), -3);
        assert_eq!(atoi("x"), 0);
    }

    #[test]
    fn printed_positions_follow_the_bed_intervals() {
        assert_eq!(bed_segment(&[(10, 30)], 5, 100), (false, 10));
        assert_eq!(bed_segment(&[(10, 30)], 12, 100), (true, 30));
        assert_eq!(bed_segment(&[(10, 30)], 30, 100), (false, 100));
    }

    #[test]
    fn row_positions_count_up_in_place() {
        let mut rows = RowText::default();
        let mut out = Vec::new();
        rows.start_reference(0, "c");
        rows.seek(7, &mut out);
        for _ in 0..5 {
            rows.row1(3, &mut out);
        }
        rows.seek(98, &mut out);
        rows.row(&[1000, 12], &mut out);
        rows.row(&[0, 123], &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "c\t8\t3\nc\t9\t3\nc\t10\t3\nc\t11\t3\nc\t12\t3\nc\t99\t1000\t12\nc\t100\t0\t123\n");
    }

    #[test]
    fn mate_names_are_taken_once() {
        let mut m = MateEnds::default();
        assert_eq!(m.take_or_remember(b"a", 10, true), None);
        assert_eq!(m.take_or_remember(b"b", 20, false), None);
        assert_eq!(m.take_or_remember(b"b", 21, true), None);
        assert_eq!(m.take_or_remember(b"a", 11, true), Some(10));
        assert_eq!(m.take_or_remember(b"a", 12, true), None);
        assert_eq!(m.take_or_remember(b"b", 0, true), Some(21));
        assert_eq!(m.take_or_remember(b"a", 0, true), Some(12));
    }
}
