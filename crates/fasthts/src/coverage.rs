//! Coverage per reference (or region), as `samtools coverage` 1.16 counts
//! and prints it: its table and its `-m` histograms.
//!
//! samtools coverage runs htslib's pileup over the inputs; the numbers it
//! prints come down to these rules, which [`CoverageCounter`] follows
//! without piling reads up (a difference array of counted bases, as
//! `depth` counts):
//!
//! - `numreads` counts the reads of a reference that pass the filters
//!   ([`Selection`]: `--ff`, `--rf` (any of its bits), `-q`, `-l` measured
//!   as the CIGAR's query length), and the `(N filtered)` of the histogram
//!   every other record placed on it, unmapped or not; `meanmapq` is the
//!   mean MAPQ of the reads counted. Overlapping mates both count.
//! - Of the selected reads, the pileup takes the mapped ones, except that
//!   a read starting where the read before it (in that input) starts is
//!   dropped once `-d` reads are in the pileup's buffer ([`PileupLimit`],
//!   htslib's `maxcnt` rule exactly, with its quirks).
//! - A base of an `M`, `=` or `X` operation inside the reference (or the
//!   region) counts when its quality is at least `-Q`; a read without a
//!   sequence counts every base, its "qualities" being the bytes that
//!   follow in the record (its tags; zero past them, where samtools reads
//!   whatever its buffer holds). `covbases` is the positions where a base
//!   counts, `meandepth` the counted bases over the length, `meanbaseq`
//!   their mean quality.
//! - References the pileup reaches (a selected mapped read with a
//!   reference length) are printed in order, then (without `-r`) every
//!   other reference, in order: samtools prints its table so.
//!
//! The counts of a reference are sums over positions and reads, so pieces
//! of the genome counted apart (windows, in parallel) add up to the same
//! numbers: the output does not depend on the thread count.

use crate::bam::{flags, CigarOp, RecordRef};
use crate::sam::put_printf_g_precision;
use std::io::Write;

/// samtools coverage's default `--ff`: unmapped, secondary, QC-failed and
/// duplicate reads do not count.
pub const DEFAULT_EXCLUDE_FLAGS: u16 = flags::UNMAPPED | flags::SECONDARY | flags::QC_FAIL | flags::DUPLICATE;

/// samtools coverage's default `-d`.
pub const DEFAULT_MAX_DEPTH: i64 = 1_000_000;

/// htslib's pileup limit when samtools leaves it unset (a negative `-d`).
const HTSLIB_DEFAULT_MAXCNT: i64 = 8000;

/// What to count and print: samtools coverage's options.
#[derive(Clone, Debug)]
pub struct CoverageOptions {
    /// Reads with any of these flags do not count (`--ff`).
    pub exclude_flags: u16,
    /// When not 0, reads with none of these flags do not count (`--rf`).
    pub require_flags: u16,
    /// Reads below this mapping quality do not count (`-q`).
    pub min_mapping_quality: i64,
    /// Bases below this quality do not count (`-Q`).
    pub min_base_quality: i64,
    /// Reads whose CIGAR consumes fewer query bases do not count (`-l`; 0: no limit).
    pub min_read_length: i64,
    /// `-d` as samtools reads it: the pileup's limit when positive, none
    /// when 0, htslib's default (8000) when negative.
    pub max_depth: i64,
    /// Only this region (`-r`, samtools notation); needs indexes.
    pub region: Option<String>,
    /// The `#rname ...` line of the table (`-H` turns it off).
    pub header: bool,
    /// Histograms instead of the table (`-m`, `-A`, `-w`).
    pub histogram: Option<HistogramOptions>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Positions per parallel window (at most).
    pub window_bases: u64,
    /// The reference FASTA of CRAM inputs (samtools' `--reference`).
    pub reference: Option<std::path::PathBuf>,
}

impl Default for CoverageOptions {
    fn default() -> Self {
        CoverageOptions {
            exclude_flags: DEFAULT_EXCLUDE_FLAGS,
            require_flags: 0,
            min_mapping_quality: 0,
            min_base_quality: 0,
            min_read_length: 0,
            max_depth: DEFAULT_MAX_DEPTH,
            region: None,
            header: true,
            histogram: None,
            threads: None,
            window_bases: crate::depth::WINDOW_BASES,
            reference: None,
        }
    }
}

impl CoverageOptions {
    /// The pileup's `maxcnt` that `-d` gives.
    pub fn pileup_limit(&self) -> i64 {
        match self.max_depth {
            d if d > 0 => d.min(i64::from(i32::MAX)),
            0 => i64::from(i32::MAX),
            _ => HTSLIB_DEFAULT_MAXCNT,
        }
    }
}

/// How histograms are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistogramOptions {
    /// Columns (`-w`; samtools' terminal width less 40, 50 with `-o`):
    /// fewer for a reference shorter than this.
    pub bins: i64,
    /// `.` and `:` instead of block characters (`-A`).
    pub ascii: bool,
}

/// Reads a flag value of `--ff`/`--rf` as htslib's `bam_str2flag` does:
/// a number (decimal, `0x` hex, `0` octal) or names (`UNMAP,DUP`); a
/// negative number, or an unknown name, is refused as samtools refuses it.
pub fn parse_flag_value(text: &str) -> Result<u16, crate::Error> {
    let value = crate::depth::parse_flags(text)?;
    let t = text.trim_start();
    // strtol read a negative number: bam_str2flag's error value.
    if t.starts_with('-') && t[1..].starts_with(|c: char| c.is_ascii_digit()) && value != 0 {
        return Err(crate::Error::InvalidArgument(format!("invalid flag value {text:?}")));
    }
    Ok(value)
}

/// Which reads count, as samtools coverage's reader filters them.
#[derive(Clone, Copy, Debug)]
pub struct Selection {
    exclude: u16,
    require: u16,
    min_mapq: i64,
    min_len: i64,
}

impl Selection {
    /// The filters of `options`.
    pub fn new(options: &CoverageOptions) -> Selection {
        Selection {
            exclude: options.exclude_flags,
            require: options.require_flags,
            min_mapq: options.min_mapping_quality,
            min_len: options.min_read_length,
        }
    }

    /// Whether `r` passes the flag, MAPQ and length filters.
    #[inline]
    pub fn selects(&self, r: &RecordRef<'_>) -> bool {
        let flag = r.flag();
        flag & self.exclude == 0
            && (self.require == 0 || flag & self.require != 0)
            && i64::from(r.mapq()) >= self.min_mapq
            && (self.min_len == 0 || r.cigar().query_len() >= self.min_len)
    }
}

/// The counts of one reference: what its line (or histogram) prints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContigCoverage {
    /// Records placed on it (`n_reads`, 32 bits as samtools keeps it).
    pub records: u32,
    /// Of those, the reads that pass the filters (`numreads`).
    pub selected_reads: u32,
    /// Their mapping qualities, summed.
    pub summed_mapq: u64,
    /// Positions where a base counts.
    pub covered_bases: u64,
    /// Bases counted.
    pub summed_depth: u64,
    /// Their qualities, summed.
    pub summed_base_quality: u64,
    /// Whether the pileup reached the reference (it is printed in order).
    pub piled: bool,
    /// Covered positions per histogram bin (with `-m`; empty until one).
    pub histogram: Vec<u32>,
}

impl ContigCoverage {
    /// Adds the counts of another piece of the same reference.
    pub fn merge(&mut self, other: &ContigCoverage) {
        self.records = self.records.wrapping_add(other.records);
        self.selected_reads = self.selected_reads.wrapping_add(other.selected_reads);
        self.summed_mapq = self.summed_mapq.wrapping_add(other.summed_mapq);
        self.covered_bases += other.covered_bases;
        self.summed_depth += other.summed_depth;
        self.summed_base_quality += other.summed_base_quality;
        self.piled |= other.piled;
        if self.histogram.len() < other.histogram.len() {
            self.histogram.resize(other.histogram.len(), 0);
        }
        for (a, b) in self.histogram.iter_mut().zip(&other.histogram) {
            *a = a.wrapping_add(*b);
        }
    }

    /// Counts a record placed on this reference (`selected`: it passed the
    /// filters).
    #[inline]
    pub fn count_record(&mut self, r: &RecordRef<'_>, selected: bool) {
        self.records = self.records.wrapping_add(1);
        if selected {
            self.selected_reads = self.selected_reads.wrapping_add(1);
            self.summed_mapq += u64::from(r.mapq());
        }
    }
}

/// Where a reference is measured and how its histogram is cut: samtools'
/// `beg`, `end`, bins and bin width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// 0-based first position.
    pub beg: i64,
    /// End (exclusive): the reference's length, or the region's end.
    pub end: i64,
}

impl Bounds {
    /// The histogram's bins and bin width for at most `bins` bins.
    pub fn bins(&self, bins: i64) -> (i64, i64) {
        let span = self.end - self.beg;
        let n = if bins > span { span } else { bins };
        (n, if n > 0 { span / n } else { span })
    }
}

/// htslib's pileup limit for one input: a read starting where the
/// previous read of the pileup started is dropped when the pileup holds
/// `maxcnt` reads (one node of its pool is always spare). The reads it
/// holds then are those not yet passed: ending (raw CIGAR end) at or past
/// the read's start. The first read at a position is never dropped.
pub(crate) struct PileupLimit {
    limit: i64,
    last_start: (i32, i64),
    /// Ends of the reads held (some may have passed: see `compact`).
    ends: Vec<i64>,
    /// The position up to which `ends` was last cleaned.
    cleaned_at: i64,
    /// Length of `ends` after its last cleaning.
    live_after_clean: usize,
    /// Whether a read was dropped.
    pub(crate) dropped: bool,
}

impl PileupLimit {
    pub(crate) fn new(limit: i64) -> PileupLimit {
        // htslib's pileup starts at reference 0, position 0.
        PileupLimit { limit, last_start: (0, 0), ends: Vec::new(), cleaned_at: i64::MIN, live_after_clean: 0, dropped: false }
    }

    /// Whether the pileup takes a read of `tid` at `pos` ending (by its
    /// CIGAR) at `end`.
    #[inline]
    pub(crate) fn takes(&mut self, tid: i32, pos: i64, end: i64) -> bool {
        if self.last_start.0 != tid {
            // The reads of the previous reference have all been passed.
            self.ends.clear();
            self.live_after_clean = 0;
            self.cleaned_at = i64::MIN;
        }
        let same_start = self.last_start == (tid, pos);
        self.last_start = (tid, pos);
        if same_start {
            if self.ends.len() as i64 >= self.limit {
                self.clean(pos);
                if self.ends.len() as i64 >= self.limit {
                    self.dropped = true;
                    return false;
                }
            }
            // A read of no reference length here passes at once.
            if end > pos {
                self.hold(end, pos);
            }
        } else {
            self.hold(end, pos);
        }
        true
    }

    #[inline]
    fn hold(&mut self, end: i64, pos: i64) {
        if self.ends.len() >= (2 * self.live_after_clean).max(4096) {
            self.clean(pos);
        }
        self.ends.push(end);
    }

    /// Forgets the reads that end before `pos` (passed for good: reads
    /// come in position order).
    fn clean(&mut self, pos: i64) {
        // Reads held since a cleaning at `pos` all reach past it.
        if self.cleaned_at != pos {
            self.ends.retain(|&e| e >= pos);
            self.cleaned_at = pos;
            self.live_after_clean = self.ends.len();
        }
    }
}

/// Why counting stopped.
#[derive(Debug)]
pub(crate) enum CountError {
    /// A read starts before the one before it.
    NotSorted,
}

impl std::fmt::Display for CountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CountError::NotSorted => f.write_str("data is not position sorted"),
        }
    }
}

/// Counts the bases of selected reads over positions: of one window of a
/// reference (the reads of each input in turn, `streaming` false), or of
/// whole inputs merged by position (`streaming`), whose positions are
/// settled as the reads move on.
pub(crate) struct CoverageCounter<'s> {
    bounds: &'s (dyn Fn(i32) -> Bounds + Sync),
    /// Bins asked for (0: no histogram).
    bins: i64,
    min_base_quality: i64,
    /// Bases are counted in `[window_beg, window_end)` only.
    window_beg: i64,
    window_end: i64,
    streaming: bool,
    /// The reference being counted (-1: none yet).
    tid: i32,
    /// Positions counted on it: its bounds within the window.
    lo: i64,
    hi: i64,
    n_bins: i64,
    bin_width: i64,
    /// The position of the first bin's start (the bounds' start).
    bin_origin: i64,
    /// Positions before this are settled (streaming).
    settled: i64,
    /// Position of `diffs[0]`.
    base: i64,
    diffs: Vec<i32>,
    running: i32,
    limits: Vec<PileupLimit>,
    /// Per input: the last read's reference and position (sort check).
    last: Vec<(i32, i64)>,
    /// The counts of `tid`.
    pub(crate) current: ContigCoverage,
    /// References finished (streaming), in order.
    pub(crate) finished: Vec<(i32, ContigCoverage)>,
}

impl<'s> CoverageCounter<'s> {
    pub(crate) fn new(
        bounds: &'s (dyn Fn(i32) -> Bounds + Sync),
        options: &CoverageOptions,
        n_files: usize,
        window: (i64, i64),
        streaming: bool,
    ) -> Self {
        CoverageCounter {
            bounds,
            bins: options.histogram.map_or(0, |h| h.bins),
            min_base_quality: options.min_base_quality,
            window_beg: window.0,
            window_end: window.1,
            streaming,
            tid: -1,
            lo: 0,
            hi: 0,
            n_bins: 0,
            bin_width: 1,
            bin_origin: 0,
            settled: i64::MIN,
            base: 0,
            diffs: Vec::new(),
            running: 0,
            limits: (0..n_files).map(|_| PileupLimit::new(options.pileup_limit())).collect(),
            last: vec![(-1, i64::MIN); n_files],
            current: ContigCoverage::default(),
            finished: Vec::new(),
        }
    }

    /// Counts with `scratch` as its position array (a window's thread
    /// reuses one, so that its pages are not faulted in again).
    pub(crate) fn with_scratch(mut self, mut scratch: Vec<i32>) -> Self {
        scratch.clear();
        self.diffs = scratch;
        self
    }

    /// The position array, for the next window.
    pub(crate) fn into_scratch(self) -> Vec<i32> {
        self.diffs
    }

    /// Whether the pileup limit dropped a read.
    pub(crate) fn dropped(&self) -> bool {
        self.limits.iter().any(|l| l.dropped)
    }

    /// Starts counting reference `tid`.
    pub(crate) fn start(&mut self, tid: i32) {
        let b = (self.bounds)(tid);
        self.tid = tid;
        self.lo = b.beg.max(self.window_beg);
        self.hi = b.end.min(self.window_end).max(self.lo);
        let (n, w) = b.bins(self.bins);
        self.n_bins = if self.bins > 0 { n } else { 0 };
        self.bin_width = w.max(1);
        self.bin_origin = b.beg;
        self.base = self.lo;
        self.settled = self.lo;
        self.diffs.clear();
        self.running = 0;
        self.current = ContigCoverage::default();
    }

    /// Counts a selected read of input `file` (a record of the reference
    /// being counted, in streaming mode any reference at or after it).
    pub(crate) fn add(&mut self, file: usize, r: &RecordRef<'_>) -> Result<(), CountError> {
        let tid = r.ref_id();
        if tid < 0 || r.flag() & flags::UNMAPPED != 0 {
            return Ok(());
        }
        let pos = i64::from(r.pos());
        let last = self.last[file];
        if tid < last.0 || (tid == last.0 && pos < last.1) {
            return Err(CountError::NotSorted);
        }
        self.last[file] = (tid, pos);
        if tid != self.tid {
            if self.streaming && self.tid >= 0 {
                self.finish_reference();
            }
            self.start(tid);
        }
        let cigar = r.cigar();
        let end = pos + cigar.reference_len();
        if !self.limits[file].takes(tid, pos, end) {
            return Ok(());
        }
        if end > pos {
            self.current.piled = true;
        }
        if self.streaming && pos > self.settled {
            self.settle(pos.min(self.hi));
        }
        let (lo, hi) = (self.lo.max(pos), self.hi.min(end));
        if lo >= hi {
            return Ok(());
        }
        if self.diffs.is_empty() {
            self.base = lo;
        } else if lo < self.base {
            // A window's next input may count before the first: the array
            // grows at its front (once per input, whose reads are sorted).
            let grow = (self.base - lo) as usize;
            self.diffs.splice(0..0, std::iter::repeat(0).take(grow));
            self.base = lo;
        }
        if self.diffs.len() < (hi - self.base + 1) as usize {
            self.diffs.resize((hi - self.base + 1) as usize, 0);
        }
        let qual = r.qual();
        // Bases past the sequence: samtools reads their "qualities" from
        // the bytes after it (the tags), and does not filter them.
        let after = r.aux_bytes();
        let min_q = self.min_base_quality;
        let mut at = pos;
        let mut q = 0usize;
        for (op, len) in cigar.iter() {
            let len = i64::from(len);
            match op {
                CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => {
                    let (a, b) = (at.max(lo), (at + len).min(hi));
                    if a < b {
                        let first = q + (a - at) as usize;
                        let last = q + (b - at) as usize;
                        if last <= qual.len() && min_q <= 0 {
                            self.add_range(a, b);
                            self.current.summed_depth += (b - a) as u64;
                            self.current.summed_base_quality += qual[first..last].iter().map(|&v| u64::from(v)).sum::<u64>();
                        } else {
                            let mut run = -1;
                            for p in a..b {
                                let qi = q + (p - at) as usize;
                                let (pass, value) = match qual.get(qi) {
                                    Some(&v) => (i64::from(v) >= min_q, v),
                                    None => (true, after.get(qi - qual.len()).copied().unwrap_or(0)),
                                };
                                if pass {
                                    self.current.summed_depth += 1;
                                    self.current.summed_base_quality += u64::from(value);
                                    if run < 0 {
                                        run = p;
                                    }
                                } else if run >= 0 {
                                    self.add_range(run, p);
                                    run = -1;
                                }
                            }
                            if run >= 0 {
                                self.add_range(run, b);
                            }
                        }
                    }
                    at += len;
                    q += len as usize;
                }
                CigarOp::Deletion | CigarOp::Skip => at += len,
                CigarOp::Insertion | CigarOp::SoftClip => q += len as usize,
                CigarOp::HardClip | CigarOp::Pad | CigarOp::Unknown(_) => {}
            }
        }
        Ok(())
    }

    #[inline]
    fn add_range(&mut self, from: i64, to: i64) {
        self.diffs[(from - self.base) as usize] += 1;
        self.diffs[(to - self.base) as usize] -= 1;
    }

    /// Counts the covered positions before `to` (all counted bases there
    /// known), then forgets them when they are a good part of the array.
    fn settle(&mut self, to: i64) {
        if to <= self.settled {
            return;
        }
        if self.diffs.is_empty() {
            // No read since the last settled position: nothing covered.
            self.settled = to;
            return;
        }
        // Before `base` no base was counted (the array starts at the first).
        let scan_from = self.settled.max(self.base);
        let have = self.base + self.diffs.len() as i64;
        let upto = to.min(have);
        if upto > scan_from {
            let from = (scan_from - self.base) as usize;
            let until = (upto - self.base) as usize;
            let mut running = self.running;
            if self.n_bins > 0 {
                for (p, &d) in (scan_from..).zip(&self.diffs[from..until]) {
                    running += d;
                    if running > 0 {
                        self.current.covered_bases += 1;
                        let bin = (p - self.bin_origin) / self.bin_width;
                        if bin < self.n_bins {
                            if self.current.histogram.is_empty() {
                                self.current.histogram = vec![0; self.n_bins as usize];
                            }
                            self.current.histogram[bin as usize] += 1;
                        }
                    }
                }
            } else {
                let mut covered = 0u64;
                for &d in &self.diffs[from..until] {
                    running += d;
                    covered += u64::from(running > 0);
                }
                self.current.covered_bases += covered;
            }
            self.running = running;
        }
        self.settled = to;
        let done = (self.settled - self.base).max(0) as usize;
        if done >= self.diffs.len() {
            // Everything counted: the next read may start far on (the
            // array starts again at its first counted base).
            debug_assert!(self.running == 0);
            self.diffs.clear();
            self.running = 0;
        } else if done >= (64 << 10) && 2 * done >= self.diffs.len() {
            self.diffs.drain(..done);
            self.base += done as i64;
        }
    }

    /// Ends the reference being counted (its positions all settled).
    pub(crate) fn finish_reference(&mut self) {
        if self.tid < 0 {
            return;
        }
        self.settle(self.hi.max(self.settled));
        let counts = std::mem::take(&mut self.current);
        self.finished.push((self.tid, counts));
        self.tid = -1;
    }
}

/// The table's header line.
pub const TABLE_HEADER: &[u8] = b"#rname\tstartpos\tendpos\tnumreads\tcovbases\tcoverage\tmeandepth\tmeanbaseq\tmeanmapq\n";

/// `a / b` as C divides doubles on x86: 0/0 is a NaN with its sign bit
/// set (glibc prints `-nan`).
fn c_div(a: f64, b: f64) -> f64 {
    if b == 0.0 && a == 0.0 {
        -f64::NAN
    } else {
        a / b
    }
}

fn put_g(out: &mut Vec<u8>, d: f64, precision: usize) {
    // The references without reads, most of a draft assembly's: no need
    // to go through the float formatter.
    if d == 0.0 && d.is_sign_positive() {
        out.push(b'0');
    } else {
        put_printf_g_precision(out, d, precision);
    }
}

/// A reference's line of the table.
pub fn write_table_line(out: &mut Vec<u8>, name: &str, bounds: Bounds, c: &ContigCoverage) {
    let region_len = (bounds.end - bounds.beg) as f64;
    out.extend_from_slice(name.as_bytes());
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\t{}\t{}\t{}\t{}\t", bounds.beg + 1, bounds.end, c.selected_reads, c.covered_bases);
    put_g(out, c_div(100.0 * c.covered_bases as f64, region_len), 6);
    out.push(b'\t');
    put_g(out, c_div(c.summed_depth as f64, region_len), 6);
    out.push(b'\t');
    put_g(out, if c.summed_depth > 0 { c.summed_base_quality as f64 / c.summed_depth as f64 } else { 0.0 }, 3);
    out.push(b'\t');
    put_g(out, if c.selected_reads > 0 { c.summed_mapq as f64 / f64::from(c.selected_reads) } else { 0.0 }, 3);
    out.push(b'\n');
}

/// samtools' `readable_bps`: `%.Nf` and a unit, N the thousands divided.
fn readable_bps(mut base_pairs: f64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut i = 0;
    while base_pairs >= 1000.0 && i < UNITS.len() - 1 {
        base_pairs /= 1000.0;
        i += 1;
    }
    format!("{base_pairs:.i$}{}", UNITS[i])
}

/// samtools' `center_text` in 10 columns.
fn center_text(text: &str) -> String {
    let len = text.len() as i64;
    let padding = (10 - len) / 2;
    let padding_ex = (10 - len) % 2;
    if padding >= 1 {
        let w1 = (len + padding) as usize;
        let w2 = (padding - 1 + padding_ex).max(0) as usize;
        format!(" {text:>w1$}{:>w2$}", " ")
    } else {
        text.to_string()
    }
}

/// C's conversion of a double to `int` on x86: out of range (and NaN)
/// gives `INT_MIN`.
fn c_int(d: f64) -> i64 {
    if !(-2147483648.0..2147483648.0).contains(&d) {
        i64::from(i32::MIN)
    } else {
        d.trunc() as i64
    }
}

/// A reference's histogram, as samtools coverage `-m` draws it (no blank
/// line after it).
pub fn write_histogram(out: &mut Vec<u8>, name: &str, length: i64, bounds: Bounds, c: &ContigCoverage, options: HistogramOptions) {
    const BLOCKS8: [&str; 8] = ["\u{2581}", "\u{2582}", "\u{2583}", "\u{2584}", "\u{2585}", "\u{2586}", "\u{2587}", "\u{2588}"];
    const BLOCKS2: [&str; 2] = [".", ":"];
    let blocks: &[&str] = if options.ascii { &BLOCKS2 } else { &BLOCKS8 };
    let line = if options.ascii { "|" } else { "\u{2502}" };
    let (n_bins, bin_width) = bounds.bins(options.bins);
    let n_bins = n_bins.max(0) as usize;
    let region_len = (bounds.end - bounds.beg) as f64;
    let mut data = Vec::with_capacity(n_bins);
    let mut max_val = 0.0f64;
    for i in 0..n_bins {
        // `100 * hist[i]` is an unsigned int product in samtools.
        let covered = c.histogram.get(i).copied().unwrap_or(0);
        let v = f64::from(100u32.wrapping_mul(covered)) / bin_width as f64;
        if v > max_val {
            max_val = v;
        }
        data.push(v);
    }
    out.extend_from_slice(format!("{name} ({}bp)\n", readable_bps(length as f64)).as_bytes());
    let n_rows = 10;
    let row_bin_size = max_val / f64::from(n_rows);
    let width = blocks.len() as f64;
    for i in (0..n_rows).rev() {
        let current_bin = row_bin_size * f64::from(i);
        out.extend_from_slice(format!(">{current_bin:7.2}% {line}").as_bytes());
        for &v in &data {
            let diff = c_int(((width * (v - current_bin)) / row_bin_size).round() - 1.0);
            if diff < 0 {
                out.push(b' ');
            } else {
                out.extend_from_slice(blocks[(diff as usize).min(blocks.len() - 1)].as_bytes());
            }
        }
        out.extend_from_slice(line.as_bytes());
        out.push(b' ');
        match i {
            9 => out.extend_from_slice(format!("Number of reads: {}", c.selected_reads).as_bytes()),
            8 => {
                let filtered = c.records.wrapping_sub(c.selected_reads);
                if filtered > 0 {
                    out.extend_from_slice(format!("    ({} filtered)", filtered as i32).as_bytes());
                }
            }
            7 => out.extend_from_slice(format!("Covered bases:   {}bp", readable_bps(c.covered_bases as f64)).as_bytes()),
            6 => {
                out.extend_from_slice(b"Percent covered: ");
                put_g(out, c_div(100.0 * c.covered_bases as f64, region_len), 4);
                out.push(b'%');
            }
            5 => {
                out.extend_from_slice(b"Mean coverage:   ");
                put_g(out, c_div(c.summed_depth as f64, region_len), 3);
                out.push(b'x');
            }
            4 => {
                out.extend_from_slice(b"Mean baseQ:      ");
                put_g(out, c_div(c.summed_base_quality as f64, c.summed_depth as f64), 3);
            }
            3 => {
                out.extend_from_slice(b"Mean mapQ:       ");
                put_g(out, c_div(c.summed_mapq as f64, f64::from(c.selected_reads)), 3);
            }
            1 => out.extend_from_slice(format!("Histo bin width: {}bp", readable_bps(bin_width as f64)).as_bytes()),
            0 => {
                out.extend_from_slice(b"Histo max bin:   ");
                put_g(out, max_val, 5);
                out.push(b'%');
            }
            _ => {}
        }
        out.push(b'\n');
    }
    out.extend_from_slice(b"     ");
    out.extend_from_slice(center_text(&readable_bps((bounds.beg + 1) as f64)).as_bytes());
    let mut rest = 10;
    while rest < 10 * (n_bins / 10) {
        out.extend_from_slice(center_text(&readable_bps((bounds.beg + bin_width * rest as i64) as f64)).as_bytes());
        rest += 10;
    }
    let last_padding = n_bins % 10;
    out.extend_from_slice(format!("{:>last_padding$}", " ").as_bytes());
    out.extend_from_slice(center_text(&readable_bps(bounds.end as f64)).as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centred_labels_as_samtools_pads_them() {
        assert_eq!(center_text("1"), "     1    ");
        assert_eq!(center_text("103.0K"), "   103.0K ");
        assert_eq!(center_text("1.0K"), "    1.0K  ");
        assert_eq!(center_text("1234.5678T"), "1234.5678T");
        assert_eq!(readable_bps(309000.0), "309.0K");
        assert_eq!(readable_bps(999.0), "999");
        assert_eq!(readable_bps(82767.0), "82.8K");
    }

    #[test]
    fn pileup_limit_drops_reads_at_a_start_once_full() {
        let mut l = PileupLimit::new(3);
        assert!(l.takes(0, 10, 20));
        assert!(l.takes(0, 10, 20));
        assert!(l.takes(0, 10, 20));
        // Three held: the fourth at the same start is dropped.
        assert!(!l.takes(0, 10, 20));
        // The first at a new start is never dropped.
        assert!(l.takes(0, 11, 30));
        assert!(!l.takes(0, 11, 30));
        // At 20 the reads ending at 20 are still held (they end there).
        assert!(l.takes(0, 20, 40));
        assert!(!l.takes(0, 20, 40));
        assert!(l.takes(0, 21, 40));
        // Ends at 20 passed: two held (30, 40) and 40 again.
        assert!(!l.takes(0, 21, 40));
        assert!(l.dropped);
    }
}
