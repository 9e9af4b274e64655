//! mosdepth 0.3.3's everyday outputs: per-base depth runs, the mean depth
//! of windows or BED regions, bases at or above thresholds, the cumulative
//! distributions and the summary, with mosdepth's numbers.
//!
//! What counts, as mosdepth counts it (checked against mosdepth 0.3.3):
//!
//! - a read counts unless its MAPQ is below `min_mapq` (`-Q`), it has a
//!   flag of `exclude_flags` (`-F`, default 1796: unmapped, secondary,
//!   QC-failed, duplicate) or, with `include_flags` (`-i`) set, none of
//!   those;
//! - by default the `M`, `=` and `X` blocks of its CIGAR count (a deletion
//!   or skip does not); with `fast_mode` (`-x`) its whole span, start to
//!   end;
//! - without `fast_mode`, a proper pair (not supplementary) whose reads
//!   overlap counts the overlap once: the first read is remembered (when it
//!   ends past its mate's start), and when the mate comes the positions both
//!   cover are taken off once; two reads of a single CIGAR operation each
//!   take off `[mate start, first read's end)` (mosdepth's shortcut, kept).
//!
//! The genome is counted in windows in parallel (each reading the records
//! that reach it through the index), cut only between regions of `--by`,
//! and gathered in order: the output does not depend on the thread count.

use crate::bam::{flags, CigarOp, RecordRef};
use crate::Error;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

/// mosdepth's default `-F`: unmapped, secondary, QC-failed, duplicate.
pub const DEFAULT_EXCLUDE_FLAGS: u16 = 1796;

/// Depths above this are counted in the distributions as
/// `MAX_COVERAGE - 10`, as mosdepth does.
const MAX_COVERAGE: i64 = 400_000;

/// Positions per parallel window (at most, unless a region is longer).
pub const WINDOW_BASES: u64 = 1 << 20;

/// What `--by` asks for.
#[derive(Clone, Debug)]
pub enum By {
    /// Windows of this many bases over every reference.
    Window(u32),
    /// The intervals of a BED file (optionally bgzipped).
    Bed(PathBuf),
}

/// mosdepth's options.
#[derive(Clone, Debug)]
pub struct MosdepthOptions {
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Only this reference (`-c`; a `chr:beg-end` form names its reference).
    pub chrom: Option<String>,
    /// Regions whose mean depth is written (`-b`).
    pub by: Option<By>,
    /// No per-base output (`-n`).
    pub no_per_base: bool,
    /// Reads with any of these flags do not count (`-F`).
    pub exclude_flags: u16,
    /// When not 0, reads with none of these flags do not count (`-i`).
    pub include_flags: u16,
    /// Whole read spans, no mate overlap correction (`-x`).
    pub fast_mode: bool,
    /// Reads below this mapping quality do not count (`-Q`).
    pub min_mapq: i64,
    /// Bases at or above each of these depths per region (`-T`; sorted).
    pub thresholds: Vec<i64>,
    /// The reference FASTA of a CRAM input (`-f`).
    pub fasta: Option<PathBuf>,
    /// Positions per parallel window (at most; output does not depend on it).
    pub window_bases: u64,
}

impl Default for MosdepthOptions {
    fn default() -> Self {
        MosdepthOptions {
            threads: None,
            chrom: None,
            by: None,
            no_per_base: false,
            exclude_flags: DEFAULT_EXCLUDE_FLAGS,
            include_flags: 0,
            fast_mode: false,
            min_mapq: 0,
            thresholds: Vec::new(),
            fasta: None,
            window_bases: WINDOW_BASES,
        }
    }
}

/// mosdepth's `-T` value: comma-separated integers, sorted.
pub fn parse_thresholds(text: &str) -> Result<Vec<i64>, Error> {
    let mut v = Vec::new();
    for part in text.split(',') {
        v.push(part.trim().parse::<i64>().map_err(|_| Error::InvalidArgument(format!("invalid threshold {part:?} in {text:?}")))?);
    }
    v.sort_unstable();
    Ok(v)
}

/// A region of `--by`: `[start, end)` and its BED name.
#[derive(Clone, Debug)]
pub struct ByRegion {
    /// First position (0-based).
    pub start: i64,
    /// Past the last position.
    pub end: i64,
    /// The BED's fourth field.
    pub name: Option<String>,
}

/// Reads a BED file as mosdepth does: `track ` and `#` lines skipped, lines
/// of fewer than three fields skipped with a warning, reading stopping at
/// the first empty line (htslib's `hts_getline` returns its length, 0);
/// each reference's intervals sorted by start (stably). Returns the
/// references in order of first appearance with their intervals.
pub fn read_bed(path: &std::path::Path, warn: &mut dyn FnMut(String)) -> Result<Vec<(String, Vec<ByRegion>)>, Error> {
    let text = {
        use std::io::Read;
        let (mut r, _) = fasthts_io::compression::open(path, 1).map_err(|e| Error::from(e).with_path(path))?;
        let mut text = Vec::new();
        r.read_to_end(&mut text).map_err(|e| Error::from(e).with_path(path))?;
        text
    };
    let mut out: Vec<(String, Vec<ByRegion>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        if line.starts_with(b"track ") || line[0] == b'#' {
            continue;
        }
        let line = String::from_utf8_lossy(line);
        let fields: Vec<&str> = line.trim().splitn(5, '\t').collect();
        if fields.len() < 3 {
            warn(format!("[mosdepth] skipping bad bed line:{}", line.trim()));
            continue;
        }
        let num = |s: &str| s.parse::<i64>().map_err(|_| Error::Message(format!("invalid integer: {s}")).with_path(path));
        let (start, end) = (num(fields[1])?, num(fields[2])?);
        if start > end {
            return Err(Error::Message(format!("start > end in bed line: {line}")).with_path(path));
        }
        let name = fields.get(3).map(|s| s.to_string());
        let i = *at.entry(fields[0].to_string()).or_insert_with(|| {
            out.push((fields[0].to_string(), Vec::new()));
            out.len() - 1
        });
        out[i].1.push(ByRegion { start, end, name });
    }
    for (_, regions) in &mut out {
        regions.sort_by_key(|r| r.start);
    }
    Ok(out)
}

/// mosdepth's summary numbers of some positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepthStat {
    /// Positions.
    pub length: i64,
    /// The sum of their depths.
    pub bases: u64,
    /// The least depth (`u32::MAX`: none yet).
    pub min: u32,
    /// The greatest depth.
    pub max: u32,
}

impl DepthStat {
    /// Nothing counted, as mosdepth's `clear` leaves it.
    pub const CLEARED: DepthStat = DepthStat { length: 0, bases: 0, min: u32::MAX, max: 0 };
    /// Nothing counted, as a fresh (zeroed) one: its minimum stays 0.
    pub const ZERO: DepthStat = DepthStat { length: 0, bases: 0, min: 0, max: 0 };

    /// Adds `o`'s positions, as mosdepth's `+`.
    pub fn add(&mut self, o: &DepthStat) {
        self.length += o.length;
        self.bases = self.bases.wrapping_add(o.bases);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    fn of(depths: &[i32]) -> DepthStat {
        let mut s = DepthStat::CLEARED;
        s.length = depths.len() as i64;
        for &d in depths {
            // mosdepth takes the depth as unsigned.
            s.bases = s.bases.wrapping_add(i64::from(d) as u64);
            s.min = s.min.min(d as u32);
            s.max = s.max.max(d as u32);
        }
        s
    }
}

/// Appends a summary line: name, length, bases, mean (2 decimals), min, max.
pub fn write_summary_line(out: &mut Vec<u8>, name: &str, s: &DepthStat) {
    use std::io::Write;
    let mean = if s.length > 0 { s.bases as f64 / s.length as f64 } else { 0.0 };
    let min = if s.min == u32::MAX { 0 } else { s.min };
    let _ = writeln!(out, "{name}\t{}\t{}\t{mean:.2}\t{min}\t{}", s.length, s.bases, s.max);
}

/// Adds depths to a distribution as mosdepth does (negative depths
/// skipped, those above [`MAX_COVERAGE`] counted at `MAX_COVERAGE - 10`).
fn add_to_distribution(dist: &mut Vec<u64>, depths: &[i32]) {
    for &d in depths {
        let mut v = i64::from(d);
        if v > MAX_COVERAGE {
            v = MAX_COVERAGE - 10;
        }
        if v < 0 {
            continue;
        }
        let v = v as usize;
        if v >= dist.len() {
            dist.resize(v + 10, 0);
        }
        dist[v] += 1;
    }
}

/// Appends the cumulative distribution lines of `dist` (`name  depth
/// fraction-at-or-above`, from the highest depth down), as mosdepth writes
/// them: nothing for an empty one; depths above 300 only when some base
/// has them; fractions below 8e-5 left out.
pub fn write_distribution(out: &mut Vec<u8>, name: &str, dist: &[u64]) {
    use std::io::Write;
    let sum: u64 = dist.iter().sum();
    if sum < 1 {
        return;
    }
    // mosdepth's arrays hold at least 1,000 depths.
    let top = dist.len().max(1000) - 1;
    let mut cum = 0.0f64;
    for irev in (0..=top).rev() {
        let v = dist.get(irev).copied().unwrap_or(0);
        if irev > 300 && v == 0 {
            continue;
        }
        cum += v as f64 / sum as f64;
        if cum < 8e-5 {
            continue;
        }
        let _ = writeln!(out, "{name}\t{irev}\t{cum:.2}");
    }
}

/// The windows `[beg, end)` of a reference of length `len` counted apart:
/// at most `width` wide, cut only at positions no region covers (a region
/// longer than a window has one to itself); `merged` holds the regions'
/// union, sorted.
pub(crate) fn plan_cuts(len: i64, width: i64, merged: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let width = width.max(1);
    let mut windows = Vec::new();
    let mut beg = 0;
    let mut m = 0;
    while beg < len {
        let mut cut = beg.saturating_add(width);
        while m < merged.len() && merged[m].1 <= cut {
            m += 1;
        }
        if m < merged.len() && merged[m].0 < cut && cut < merged[m].1 {
            cut = merged[m].1;
        }
        let cut = cut.min(len);
        windows.push((beg, cut));
        beg = cut;
    }
    if windows.is_empty() {
        windows.push((0, len.max(0)));
    }
    windows
}

/// The union of `regions` (clipped to `[0, len)`), sorted.
pub(crate) fn merge_regions(regions: &[ByRegion], len: i64) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = regions.iter().map(|r| (r.start.clamp(0, len), r.end.clamp(0, len))).filter(|(s, e)| s < e).collect();
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s < last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The start and end events of a read's counted blocks, as mosdepth makes
/// them (`+1` where a block starts, `-1` where one ends; neighbouring
/// blocks joined), appended to `out` in mosdepth's order.
fn start_ends(r: &RecordRef<'_>, out: &mut Vec<(i64, i32)>) {
    let cigar = r.cigar();
    block_events(i64::from(r.pos()), cigar.len(), cigar.iter(), out);
}

/// [`start_ends`] of a read at `pos` whose CIGAR is `ops` (`n_ops` of them).
fn block_events(pos: i64, n_ops: usize, ops: impl Iterator<Item = (CigarOp, u32)>, out: &mut Vec<(i64, i32)>) {
    let mut ops = ops.peekable();
    if n_ops == 1 {
        if let Some(&(CigarOp::Match, len)) = ops.peek() {
            out.push((pos, 1));
            out.push((pos + i64::from(len), -1));
            return;
        }
    }
    let mut pos = pos;
    let mut last_stop = -1i64;
    for (op, len) in ops {
        let len = i64::from(len);
        let (query, reference) = match op {
            CigarOp::Match | CigarOp::SequenceMatch | CigarOp::SequenceMismatch => (true, true),
            CigarOp::Deletion | CigarOp::Skip => (false, true),
            _ => (false, false),
        };
        if !reference {
            continue;
        }
        if query {
            if pos != last_stop {
                out.push((pos, 1));
                if last_stop != -1 {
                    out.push((last_stop, -1));
                }
            }
            last_stop = pos + len;
        }
        pos += len;
    }
    if last_stop != -1 {
        out.push((last_stop, -1));
    }
}

/// Reads remembered for their mate (one window's worth), names and CIGARs
/// kept in arenas: nothing is allocated per read once they have grown.
#[derive(Default)]
struct Seen {
    hasher: std::collections::hash_map::RandomState,
    /// Name hash → first entry of that hash.
    table: HashMap<u64, usize>,
    entries: Vec<SeenEntry>,
    free: Vec<usize>,
    names: Vec<u8>,
    cigars: Vec<u32>,
}

#[derive(Clone, Copy)]
struct SeenEntry {
    name: (usize, usize),
    cigar: (usize, usize),
    pos: i64,
    end: i64,
    next: Option<usize>,
}

impl Seen {
    fn clear(&mut self) {
        self.table.clear();
        self.entries.clear();
        self.free.clear();
        self.names.clear();
        self.cigars.clear();
    }

    fn key(&self, name: &[u8]) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(name);
        h.finish()
    }

    fn find(&self, key: u64, name: &[u8]) -> Option<(Option<usize>, usize)> {
        let mut prev = None;
        let mut at = *self.table.get(&key)?;
        loop {
            let e = &self.entries[at];
            if &self.names[e.name.0..e.name.0 + e.name.1] == name {
                return Some((prev, at));
            }
            prev = Some(at);
            at = e.next?;
        }
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.find(self.key(name), name).is_some()
    }

    /// Remembers `r` (replacing a read of its name).
    fn store(&mut self, r: &RecordRef<'_>) {
        let name = r.name();
        let key = self.key(name);
        let cigar_at = self.cigars.len();
        let cigar = r.cigar();
        for i in 0..cigar.len() {
            let (op, len) = cigar.get(i).expect("in range");
            self.cigars.push(len << 4 | u32::from(op.code()));
        }
        let cigar = (cigar_at, cigar.len());
        let (pos, end) = (i64::from(r.pos()), r.end_pos());
        if let Some((_, at)) = self.find(key, name) {
            let e = &mut self.entries[at];
            e.cigar = cigar;
            e.pos = pos;
            e.end = end;
            return;
        }
        let name_at = self.names.len();
        self.names.extend_from_slice(name);
        let next = self.table.get(&key).copied();
        let entry = SeenEntry { name: (name_at, name.len()), cigar, pos, end, next };
        let at = match self.free.pop() {
            Some(i) => {
                self.entries[i] = entry;
                i
            }
            None => {
                self.entries.push(entry);
                self.entries.len() - 1
            }
        };
        self.table.insert(key, at);
    }

    /// Takes the read remembered under `name`.
    fn take(&mut self, name: &[u8]) -> Option<SeenEntry> {
        let key = self.key(name);
        let (prev, at) = self.find(key, name)?;
        let e = self.entries[at];
        match prev {
            Some(p) => self.entries[p].next = e.next,
            None => match e.next {
                Some(n) => {
                    self.table.insert(key, n);
                }
                None => {
                    self.table.remove(&key);
                }
            },
        }
        self.free.push(at);
        Some(e)
    }

    /// The start/end events of a remembered read (as [`start_ends`]).
    fn start_ends(&self, e: &SeenEntry, out: &mut Vec<(i64, i32)>) {
        let words = &self.cigars[e.cigar.0..e.cigar.0 + e.cigar.1];
        block_events(e.pos, words.len(), words.iter().map(|&w| (CigarOp::from_code((w & 0xf) as u8), w >> 4)), out);
    }
}

/// A thread's counting state, reused across its windows.
#[derive(Default)]
pub(crate) struct WindowCounter {
    /// Depth changes at `beg..=end`.
    diffs: Vec<i32>,
    /// The sum of changes before `beg`.
    below: i32,
    beg: i64,
    end: i64,
    seen: Seen,
    events: Vec<(i64, i32)>,
}

impl WindowCounter {
    pub(crate) fn start(&mut self, beg: i64, end: i64) {
        self.beg = beg;
        self.end = end;
        self.below = 0;
        self.diffs.clear();
        self.diffs.resize((end - beg + 1).max(0) as usize, 0);
        self.seen.clear();
    }

    #[inline]
    fn change(&mut self, pos: i64, by: i32) {
        if pos < self.beg {
            self.below += by;
        } else if pos < self.end {
            self.diffs[(pos - self.beg) as usize] += by;
        }
    }

    /// Counts `r` (any record of the window's query, in file order).
    pub(crate) fn add(&mut self, o: &MosdepthOptions, r: &RecordRef<'_>) {
        let flag = r.flag();
        if i64::from(r.mapq()) < o.min_mapq || flag & o.exclude_flags != 0 || (o.include_flags != 0 && flag & o.include_flags == 0) {
            return;
        }
        let start = i64::from(r.pos());
        let stop = r.end_pos();
        if !o.fast_mode && flag & flags::PROPER_PAIR != 0 && flag & flags::SUPPLEMENTARY == 0 {
            let mate_pos = i64::from(r.mate_pos());
            if r.ref_id() == r.mate_ref_id()
                && stop > mate_pos
                && (start < mate_pos || (start == mate_pos && !self.seen.contains(r.name())))
            {
                self.seen.store(r);
            } else if let Some(mate) = self.seen.take(r.name()) {
                if r.cigar().len() == 1 && mate.cigar.1 == 1 {
                    self.change(start, -1);
                    self.change(mate.end, 1);
                } else {
                    let mut events = std::mem::take(&mut self.events);
                    events.clear();
                    start_ends(r, &mut events);
                    self.seen.start_ends(&mate, &mut events);
                    // Stable, by position only, as mosdepth sorts them.
                    events.sort_by_key(|e| e.0);
                    let mut pair_depth = 0;
                    let mut last_pos = 0;
                    for &(pos, value) in &events {
                        if value == -1 && pair_depth == 2 {
                            self.change(last_pos, -1);
                            self.change(pos, 1);
                        }
                        pair_depth += value;
                        last_pos = pos;
                    }
                    self.events = events;
                }
            }
        }
        if o.fast_mode {
            self.change(start, 1);
            self.change(stop, -1);
        } else {
            let mut events = std::mem::take(&mut self.events);
            events.clear();
            start_ends(r, &mut events);
            for &(pos, value) in &events {
                self.change(pos, value);
            }
            self.events = events;
        }
    }

    /// Turns the changes into the depths of `[beg, end)`, in place (a
    /// window as long as a chromosome holds one array, as mosdepth).
    pub(crate) fn finish(&mut self) -> &[i32] {
        let n = (self.end - self.beg).max(0) as usize;
        let mut d = self.below;
        for c in &mut self.diffs[..n] {
            d += *c;
            *c = d;
        }
        &self.diffs[..n]
    }
}

/// What a window gives the gathering: text of its middle per-base runs,
/// its first and last runs, regions and thresholds lines, and its numbers.
#[derive(Default)]
pub(crate) struct WindowResult {
    /// Per-base runs `(start, end, depth)` other than the first and last,
    /// as text.
    pub(crate) runs_text: Vec<u8>,
    pub(crate) first_run: Option<(i64, i64, i32)>,
    pub(crate) last_run: Option<(i64, i64, i32)>,
    pub(crate) regions_text: Vec<u8>,
    pub(crate) thresholds_text: Vec<u8>,
    pub(crate) stat: Option<DepthStat>,
    pub(crate) region_stat: Option<DepthStat>,
    pub(crate) dist: Vec<u64>,
    pub(crate) region_dist: Vec<u64>,
}

impl WindowResult {
    pub(crate) fn clear(&mut self) {
        self.runs_text.clear();
        self.first_run = None;
        self.last_run = None;
        self.regions_text.clear();
        self.thresholds_text.clear();
        self.stat = None;
        self.region_stat = None;
        self.dist.clear();
        self.region_dist.clear();
    }
}

/// How a window's regions are summed into the region distribution.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionDist {
    /// `--by` a window size: one count per region, at its mean (rounded).
    ByMean,
    /// `--by` a BED: every base of every region.
    PerBase,
}

/// Fills `res` from the depths of a window `[beg, end)` of reference
/// `name` (depths of `None`: no record on the reference, all zero and no
/// numbers, as mosdepth treats such a reference).
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_outputs(
    o: &MosdepthOptions,
    name: &str,
    beg: i64,
    end: i64,
    depths: Option<&[i32]>,
    regions: &[ByRegion],
    region_dist: RegionDist,
    res: &mut WindowResult,
) {
    use std::io::Write;
    res.clear();
    let len = (end - beg) as usize;
    if !o.no_per_base {
        match depths {
            None => {
                res.first_run = Some((beg, end, 0));
            }
            Some(d) => {
                let mut run_start = 0usize;
                let mut first = true;
                for i in 1..=len {
                    if i == len || d[i] != d[run_start] {
                        let run = (beg + run_start as i64, beg + i as i64, d[run_start]);
                        if first {
                            res.first_run = Some(run);
                            first = false;
                        } else {
                            if let Some((s, e, v)) = res.last_run.take() {
                                let _ = writeln!(res.runs_text, "{name}\t{s}\t{e}\t{v}");
                            }
                            res.last_run = Some(run);
                        }
                        run_start = i;
                    }
                }
            }
        }
    }
    if let Some(d) = depths {
        res.stat = Some(DepthStat::of(d));
        add_to_distribution(&mut res.dist, d);
    }
    let mut region_stat = DepthStat::CLEARED;
    let mut counts = vec![0i64; o.thresholds.len()];
    for r in regions {
        // Within the window (regions past the reference's end are clipped).
        let s = r.start.clamp(beg, end);
        let e = r.end.clamp(s, end);
        let slice = depths.map(|d| &d[(s - beg) as usize..(e - beg) as usize]);
        let mean = match slice {
            Some(v) => {
                let l = (r.end - r.start) as f64;
                let mut m = 0.0f64;
                for &x in v {
                    m += f64::from(x) / l;
                }
                m
            }
            None => 0.0,
        };
        let _ = write!(res.regions_text, "{name}\t{}\t{}\t", r.start, r.end);
        if let Some(n) = &r.name {
            let _ = write!(res.regions_text, "{n}\t");
        }
        let _ = writeln!(res.regions_text, "{mean:.2}");
        if let Some(v) = slice {
            region_stat.add(&DepthStat::of(v));
            match region_dist {
                RegionDist::ByMean => {
                    if res.region_dist.len() < 1000 {
                        res.region_dist.resize(1000, 0);
                    }
                    let i = (mean.round() as i64).clamp(0, 999) as usize;
                    res.region_dist[i] += 1;
                }
                RegionDist::PerBase => add_to_distribution(&mut res.region_dist, v),
            }
        }
        if !o.thresholds.is_empty() {
            counts.iter_mut().for_each(|c| *c = 0);
            if let Some(v) = slice {
                for &x in v {
                    for (c, &t) in counts.iter_mut().zip(&o.thresholds) {
                        if i64::from(x) < t {
                            break;
                        }
                        *c += 1;
                    }
                }
            }
            let _ = write!(res.thresholds_text, "{name}\t{}\t{}\t{}", r.start, r.end, r.name.as_deref().unwrap_or("unknown"));
            for c in &counts {
                let _ = write!(res.thresholds_text, "\t{c}");
            }
            res.thresholds_text.push(b'\n');
        }
    }
    if depths.is_some() && !regions.is_empty() {
        res.region_stat = Some(region_stat);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_between_regions() {
        assert_eq!(plan_cuts(10, 4, &[]), vec![(0, 4), (4, 8), (8, 10)]);
        assert_eq!(plan_cuts(10, 4, &[(3, 6)]), vec![(0, 6), (6, 10)]);
        assert_eq!(plan_cuts(10, 4, &[(3, 12)]), vec![(0, 10)]);
        assert_eq!(plan_cuts(0, 4, &[]), vec![(0, 0)]);
    }

    #[test]
    fn distribution_as_mosdepth_writes_it() {
        let mut out = Vec::new();
        write_distribution(&mut out, "c", &[1, 2, 1]);
        assert_eq!(String::from_utf8(out).unwrap(), "c\t2\t0.25\nc\t1\t0.75\nc\t0\t1.00\n");
    }
}
