//! FACETS-compatible `snp-pileup`, byte for byte, on all cores.
//!
//! FACETS walks one htslib multi-file pileup over whole BAMs and the VCF
//! together (see `shared/snp-pileup.md`). Its output depends on the walk's
//! state — the column where the pileup last stopped — in ways that lose
//! sites (the "overshoot" quirk) and place pseudo-SNPs. This module splits
//! the work in two:
//!
//! 1. **Columns, in parallel.** The genome is cut into regions; for each,
//!    a [`Pileup`] over the reads overlapping it (read through the index)
//!    records which positions are covered (as intervals), the counts at
//!    every VCF site and every pseudo-SNP candidate, and the first covered
//!    position after the region ("lookahead"). These facts do not depend
//!    on the walk, only on the reads.
//! 2. **The walk, sequentially.** FACETS' merge of VCF records and pileup
//!    columns is replayed exactly over those facts. It only ever needs
//!    "the first covered column at or after q" and the counts at covered
//!    columns, so no walk quirk can cross a region cut: any position is a
//!    valid cut *for the walk*.
//!
//! The two run interleaved so that memory does not follow the genome or
//! the VCF: a first pass over the VCF only notes which tiles hold sites
//! (to plan the regions); the walk then reads the VCF again, and regions
//! are run a batch (2 x threads) at a time when it reaches them, their
//! facts dropped once it has passed them. The walk only moves forward in
//! genome order, and a record it can still emit lies in a region whose
//! batch read the VCF up to the first record beyond that batch.
//!
//! What a cut must preserve is the *pileup state* at the region start:
//! htslib's depth cap (`-d`) and mate-overlap table depend on reads seen
//! before. A region starting at `X > 0` therefore loads reads from
//! `L = X - warmup` and is accepted only when (a) no file ever buffered
//! more than `-d` reads during the region's run (so the cap dropped
//! nothing, here or in FACETS' run, whose buffers can only be smaller), and
//! (b) every read starting at or before `L` ends before `X` (so reads FACETS
//! saw before `L` cannot reach `X`, and the overlap adjustments they took
//! part in lie before `X`). When (b) fails the region is run again with
//! `L` before the offending read (long ref-skips and deletions are seen in
//! the first reads, so the failed run costs little); when (a) fails the
//! reference is redone as one region from position 0, where the state is
//! exactly FACETS' (the buffer is empty when a new reference starts) —
//! then memory follows that reference's sites. A region starting at 0 is
//! always exact.

mod exact;
pub use exact::map_contig_exact;

use super::vcf::{VcfReader, VcfSource, VcfSummary};
use super::{Pileup, PileupError, PileupOptions, ReadFilter, RecordSource};
use crate::bam::RecordRef;
use crate::region::indexed::IndexedFile;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};

/// snp-pileup's options, FACETS' defaults in [`Default`].
#[derive(Clone, Debug)]
pub struct SnpPileupOptions {
    /// `-A`: keep paired reads not flagged proper pair.
    pub count_orphans: bool,
    /// `-d`: htslib `maxcnt` per file.
    pub max_depth: i32,
    /// `-x`: no mate-overlap quality adjustment.
    pub ignore_overlaps: bool,
    /// `-q`: minimum mapping quality (0 is always dropped).
    pub min_map_quality: i32,
    /// `-Q`: minimum base quality (0 is always ignored).
    pub min_base_quality: i32,
    /// `-P`: pseudo-SNP spacing (0: off).
    pub pseudo_snps: i32,
    /// `-r`: per-file minimum depth (missing values are 0).
    pub min_read_counts: Vec<i32>,
    /// Region size in base pairs for the parallel walk.
    pub region_size: i64,
    /// Reads are loaded from this many bases before a region's start.
    pub warmup: i64,
    /// `--exact-sites`: every usable VCF site, contigs matched per name,
    /// rows in VCF order, none of FACETS' walk losses (docs/snp-pileup.md).
    pub exact_sites: bool,
}

impl Default for SnpPileupOptions {
    fn default() -> Self {
        SnpPileupOptions {
            count_orphans: false,
            max_depth: 4000,
            ignore_overlaps: false,
            min_map_quality: 0,
            min_base_quality: 0,
            pseudo_snps: 0,
            min_read_counts: Vec::new(),
            region_size: 4 << 20,
            warmup: 2000,
            exact_sites: false,
        }
    }
}

impl SnpPileupOptions {
    fn pileup_options(&self) -> PileupOptions {
        PileupOptions {
            max_depth: self.max_depth,
            overlaps: !self.ignore_overlaps,
            filter: ReadFilter { min_mapq: self.min_map_quality, proper_pairs_only: !self.count_orphans, ..ReadFilter::default() },
        }
    }

    fn threshold(&self, file: usize) -> i64 {
        i64::from(self.min_read_counts.get(file).copied().unwrap_or(0))
    }
}

/// The output's header line (with its newline).
pub fn header(n_files: usize) -> String {
    let mut s = String::from("Chromosome,Position,Ref,Alt");
    for i in 1..=n_files {
        s.push_str(&format!(",File{i}R,File{i}A,File{i}E,File{i}D"));
    }
    s.push('\n');
    s
}

/// FACETS' contig matching: VCF name (leading `chr` stripped) against the
/// BAM names, or against the BAM names minus their first three characters
/// when the first BAM name starts with `chr`. -1 when nothing matches.
pub fn map_contig(vcf_name: &str, bam_names: &[&str]) -> i32 {
    let v = vcf_name.strip_prefix("chr").unwrap_or(vcf_name);
    let prefixed = bam_names.first().is_some_and(|n| n.starts_with("chr"));
    for (i, n) in bam_names.iter().enumerate() {
        let cand = if prefixed { n.get(3..) } else { Some(*n) };
        if cand == Some(v) {
            return i as i32;
        }
    }
    -1
}

/// The text FACETS' `-p` progress bar writes to stdout over a VCF of
/// `n_records` data lines (bars end in `\r`).
pub fn progress_text(n_records: u64) -> String {
    let mut out = String::new();
    let count = n_records as f32;
    let mut last: f32 = 100.0;
    for current in 1..=n_records {
        let progress = current as f32 / count;
        if (last * 100.0) as i32 != (progress * 100.0) as i32 {
            let bar = 70;
            out.push('[');
            let p = (bar as f32 * progress) as i32;
            for i in 0..bar {
                out.push(if i < p {
                    '='
                } else if i == p {
                    '>'
                } else {
                    ' '
                });
            }
            out.push_str(&format!("] {} %\r", (f64::from(progress) * 100.0) as i32));
            last = progress;
        }
    }
    out
}

/// Per-file counts at a site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    /// Reads in the column (htslib `n_plp`).
    n: u32,
    r: u32,
    a: u32,
    e: u32,
    d: u32,
}

/// A unit of parallel work: columns `[start, end)` of reference `tid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    tid: usize,
    start: i64,
    end: i64,
}

/// A site a region resolves: position, REF and ALT characters.
type SiteAt = (i64, u8, u8);

/// What a region learned.
#[derive(Default)]
struct RegionResult {
    /// Covered positions in `[start, end)` as half-open intervals, plus the
    /// lookahead column as a one-base interval.
    covered: Vec<(i64, i64)>,
    /// Pseudo-SNP candidates (covered, `(pos + 1) % P == 0`), and n_files
    /// pairs (depth, passing bases) for each in `pseudo_counts`.
    pseudo: Vec<i64>,
    pseudo_counts: Vec<(u32, u32)>,
    /// Covered sites, and n_files counts for each in `site_counts`.
    site_pos: Vec<i64>,
    site_counts: Vec<Counts>,
    /// Whether the region's pileup state is known to equal FACETS'.
    exact: bool,
    /// When the region was inexact only because of condition (b): the
    /// start of the first read that broke it.
    long_read_start: Option<i64>,
}

/// Watches the reads a region loads for condition (b) of the module docs.
struct Watch<S> {
    inner: S,
    warm_start: i64,
    region_start: i64,
    /// Only reads that enter the pileup matter.
    filter: ReadFilter,
    /// Start of the first read breaking condition (b); no more reads are
    /// given once it is set (the region will be run again).
    violated: Option<i64>,
}

impl<S: RecordSource> RecordSource for Watch<S> {
    fn advance(&mut self) -> Result<bool, PileupError> {
        if self.violated.is_some() {
            return Ok(false);
        }
        let more = self.inner.advance()?;
        if more && self.warm_start > 0 {
            let r = self.inner.current();
            if i64::from(r.pos()) <= self.warm_start && r.end_pos() > self.region_start - 1 && self.filter.keep(&r) {
                self.violated = Some(i64::from(r.pos()));
                return Ok(false);
            }
        }
        Ok(more)
    }
    fn current(&self) -> RecordRef<'_> {
        self.inner.current()
    }
}

struct Ctx<'a> {
    inputs: &'a [IndexedFile],
    opts: &'a SnpPileupOptions,
    popts: PileupOptions,
}

impl Ctx<'_> {
    /// The facts of `job` (`sites` sorted by position, one per position),
    /// reading from `warmup` bases before its start.
    fn run_region(&self, job: &Job, sites: &[SiteAt], warmup: i64) -> Result<RegionResult, PileupError> {
        let n = self.inputs.len();
        let warm_start = (job.start - warmup).max(0);
        let mut sources = Vec::with_capacity(n);
        for input in self.inputs {
            // To the reference's end: the region's lookahead column may lie
            // anywhere after it (a remote file is fetched only as far as read).
            let inner = input.query_onwards(job.tid as i32, warm_start, job.end)?;
            sources.push(Watch { inner, warm_start, region_start: job.start, filter: self.popts.filter.clone(), violated: None });
        }
        let mut pileup = Pileup::new(sources, &self.popts);
        let mut res = RegionResult::default();
        let p = i64::from(self.opts.pseudo_snps);
        let min_q = self.opts.min_base_quality;
        let (tid, start, end) = (job.tid as i32, job.start, job.end);
        // Columns whose reads are looked at, in order: the sites and the
        // pseudo-SNP candidates ((pos + 1) % p == 0) of the region.
        let mut next_site = 0;
        let mut next_pseudo = if p > 0 { ((start + 1 + p - 1) / p) * p - 1 } else { i64::MAX };
        loop {
            let site_pos = sites.get(next_site).map_or(i64::MAX, |s| s.0);
            let pos = site_pos.min(next_pseudo);
            if pos >= end {
                break;
            }
            let covered = pileup.goto(tid, pos)?;
            if pileup.sources.iter().any(|s| s.violated.is_some()) {
                break;
            }
            if covered {
                if pos == next_pseudo {
                    res.pseudo.push(pos);
                    self.pseudo_counts(&pileup, min_q, &mut res.pseudo_counts);
                }
                if site_pos == pos {
                    let (_, rb, ab) = sites[next_site];
                    res.site_pos.push(pos);
                    for i in 0..n {
                        let mut c = Counts { n: pileup.depth(i) as u32, ..Counts::default() };
                        for r in pileup.reads(i) {
                            let q = r.qual();
                            if q == 0 || i32::from(q) < min_q {
                                continue;
                            }
                            if r.is_del() {
                                c.d += 1;
                            } else {
                                let b = r.base();
                                if b == rb {
                                    c.r += 1;
                                } else if b == ab {
                                    c.a += 1;
                                } else {
                                    c.e += 1;
                                }
                            }
                        }
                        res.site_counts.push(c);
                    }
                }
            }
            if site_pos == pos {
                next_site += 1;
            }
            if pos == next_pseudo {
                next_pseudo += p;
            }
        }
        // Every column of the region, then the first one after it.
        let mut intervals = Vec::new();
        pileup.coverage_until(tid, end, &mut intervals)?;
        intervals.retain(|&(t, _, e)| t == tid && e > start);
        intervals.sort_unstable_by_key(|&(_, s, _)| s);
        for (_, s, e) in intervals {
            let (s, e) = (s.max(start), e.min(end));
            match res.covered.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => res.covered.push((s, e)),
            }
        }
        if let Some((t, la)) = pileup.next_covered(tid, end)? {
            if t == tid {
                res.covered.push((la, la + 1));
                if p > 0 && (la + 1) % p == 0 && pileup.goto(tid, la)? {
                    res.pseudo.push(la);
                    self.pseudo_counts(&pileup, min_q, &mut res.pseudo_counts);
                }
            }
        }
        let violated = pileup.sources.iter().filter_map(|s| s.violated).min();
        let capped = pileup.max_buffered() > i64::from(self.opts.max_depth);
        // Loaded from the reference's start: FACETS' own state. Otherwise
        // conditions (a) and (b) of the module docs.
        res.exact = warm_start == 0 || (violated.is_none() && !capped);
        if !res.exact && !capped {
            res.long_read_start = violated;
        }
        Ok(res)
    }

    /// [`Ctx::run_region`], loading reads from further back while a read
    /// that starts before the warm-up reaches the region (long deletions,
    /// ref-skips, long reads): from the warm-up length before that read's
    /// start, until the region is exact or the cut fails for another reason.
    fn run_region_widening(&self, job: &Job, sites: &[SiteAt]) -> Result<RegionResult, PileupError> {
        let mut warmup = self.opts.warmup;
        loop {
            let r = self.run_region(job, sites, warmup)?;
            match r.long_read_start {
                Some(s) if !r.exact && s < job.start - warmup + 1 => warmup = job.start - (s - self.opts.warmup).max(0),
                _ => return Ok(r),
            }
        }
    }

    /// Per file: (depth, reads with a usable quality) at the current column.
    fn pseudo_counts<S: RecordSource>(&self, pileup: &Pileup<S>, min_q: i32, out: &mut Vec<(u32, u32)>) {
        for i in 0..pileup.n_files() {
            let pass = pileup.reads(i).filter(|r| r.qual() != 0 && i32::from(r.qual()) >= min_q).count();
            out.push((pileup.depth(i) as u32, pass as u32));
        }
    }
}

/// Positions in increasing order, each with `n` counts (one per BAM).
struct CountsAt<C> {
    pos: VecDeque<i64>,
    counts: VecDeque<C>,
}

impl<C> Default for CountsAt<C> {
    fn default() -> Self {
        CountsAt { pos: VecDeque::new(), counts: VecDeque::new() }
    }
}

impl<C: Copy> CountsAt<C> {
    /// Appends the positions of a region (with their `n` counts each) that
    /// lie past the last one known (a region's lookahead repeats the next
    /// region's first positions).
    fn append_after(&mut self, pos: &[i64], counts: &[C], n: usize) {
        for (k, &p) in pos.iter().enumerate() {
            if self.pos.back().is_some_and(|&l| l >= p) {
                continue;
            }
            self.pos.push_back(p);
            self.counts.extend(&counts[k * n..(k + 1) * n]);
        }
    }

    /// Forgets the positions at or before `q`.
    fn forget_through(&mut self, q: i64, n: usize) {
        while self.pos.front().is_some_and(|&p| p <= q) {
            self.pos.pop_front();
            self.counts.drain(..n);
        }
    }

    /// The `n` counts of position number `k`.
    fn counts_of(&self, k: usize, n: usize) -> std::collections::vec_deque::Iter<'_, C> {
        self.counts.range(k * n..(k + 1) * n)
    }
}

/// Facts of one reference from the regions computed and not yet passed by
/// the walk, in position order.
#[derive(Default)]
struct ContigFacts {
    covered: VecDeque<(i64, i64)>,
    pseudo: CountsAt<(u32, u32)>,
    sites: CountsAt<Counts>,
}

impl ContigFacts {
    fn add(&mut self, r: RegionResult, n: usize) {
        for (s, e) in r.covered {
            match self.covered.back_mut() {
                Some(last) if s < last.1 => {
                    // A lookahead column repeated by the next region.
                    last.1 = last.1.max(e);
                }
                Some(last) if s == last.1 => last.1 = e,
                _ => self.covered.push_back((s, e)),
            }
        }
        self.pseudo.append_after(&r.pseudo, &r.pseudo_counts, n);
        self.sites.append_after(&r.site_pos, &r.site_counts, n);
    }

    /// First covered position at or after `q` known here.
    fn next_covered(&self, q: i64) -> Option<i64> {
        let i = self.covered.partition_point(|&(_, e)| e <= q);
        self.covered.get(i).map(|&(s, _)| s.max(q))
    }

    /// Forgets what lies at or before `q`.
    fn forget_through(&mut self, q: i64, n: usize) {
        while self.covered.front().is_some_and(|&(_, e)| e <= q + 1) {
            self.covered.pop_front();
        }
        self.pseudo.forget_through(q, n);
        self.sites.forget_through(q, n);
    }

    fn clear(&mut self) {
        *self = ContigFacts::default();
    }
}

/// Statistics of a run.
#[derive(Clone, Debug, Default)]
pub struct SnpPileupStats {
    /// Rows written (sites and pseudo-SNPs, without the header).
    pub rows: u64,
    /// Regions run (including re-runs).
    pub regions: usize,
    /// References redone as a single region because a cut was not safe.
    pub references_redone: usize,
}

/// Regions are cut so that they hold at most about this many sites.
const MAX_REGION_SITES: u64 = 50_000;

/// A used VCF record: reference id (-1: no BAM contig), 0-based position,
/// REF and ALT characters.
type Rec = (i32, i64, u8, u8);

/// The used VCF records numbered `records` (counting used records only),
/// in file order, contig names resolved against the BAM header.
struct RecordStream<'a> {
    reader: VcfReader,
    names: &'a [&'a str],
    last: Option<(Vec<u8>, i32)>,
    records: Range<u64>,
    /// Used records read so far.
    used: u64,
}

impl RecordStream<'_> {
    fn next(&mut self) -> Result<Option<Rec>, PileupError> {
        loop {
            if self.used >= self.records.end {
                return Ok(None);
            }
            let Some(r) = self.reader.next_record()? else { return Ok(None) };
            let Some((rb, ab)) = r.alleles else { continue };
            self.used += 1;
            if self.used <= self.records.start {
                continue;
            }
            let tid = match &self.last {
                Some((name, tid)) if name.as_slice() == r.chrom => *tid,
                _ => {
                    let tid = map_contig(&String::from_utf8_lossy(r.chrom), self.names);
                    self.last = Some((r.chrom.to_vec(), tid));
                    tid
                }
            };
            return Ok(Some((tid, r.pos, rb, ab)));
        }
    }
}

/// The regions' facts, computed ahead of the walk on the thread pool and
/// forgotten once the walk has passed them: memory follows the regions in
/// flight, not the genome or the VCF.
///
/// Regions run continuously, not in batches: up to `in_flight` (4 per
/// thread, as region costs vary widely) regions past the next one the walk
/// needs are queued (oldest first), so a slow region never leaves the other
/// threads waiting at a barrier. The walking thread helps with queued
/// regions while it waits for the one it needs.
struct Window<'a, 's> {
    ctx: &'a Ctx<'a>,
    scope: &'s rayon::ScopeFifo<'a>,
    n: usize,
    /// Planned regions in genome order; `jobs[next_job..]` not yet added to
    /// `facts`.
    jobs: Vec<Job>,
    next_job: usize,
    /// `jobs[next_job..spawned]` are queued or running (or done, in `done`).
    spawned: usize,
    in_flight: usize,
    results_tx: Sender<(usize, Result<RegionResult, PileupError>)>,
    results_rx: Receiver<(usize, Result<RegionResult, PileupError>)>,
    /// Results that arrived before the walk needed them, by job index.
    done: BTreeMap<usize, Result<RegionResult, PileupError>>,
    facts: Vec<ContigFacts>,
    stream: RecordStream<'a>,
    /// Records read but not yet walked (the first is the one being walked).
    buffer: VecDeque<Rec>,
    stream_done: bool,
    stats: SnpPileupStats,
}

impl Window<'_, '_> {
    /// Reads records until one lies at or after `(tid, pos)` in genome order
    /// (it is kept), or the end.
    fn read_through(&mut self, tid: usize, pos: i64) -> Result<(), PileupError> {
        let beyond = |r: &Rec| r.0 >= 0 && (r.0 as usize > tid || (r.0 as usize == tid && r.1 >= pos));
        if self.buffer.back().is_some_and(beyond) {
            return Ok(());
        }
        while !self.stream_done {
            match self.stream.next()? {
                Some(r) => {
                    self.buffer.push_back(r);
                    if beyond(&r) {
                        break;
                    }
                }
                None => self.stream_done = true,
            }
        }
        Ok(())
    }

    /// The sites of `job` among the buffered records: sorted, the first
    /// record (in file order) at each position.
    fn sites_of(&self, job: &Job) -> Vec<SiteAt> {
        let mut v: Vec<(i64, usize, u8, u8)> = self
            .buffer
            .iter()
            .enumerate()
            .filter(|(_, r)| r.0 >= 0 && r.0 as usize == job.tid && r.1 >= job.start && r.1 < job.end)
            .map(|(k, r)| (r.1, k, r.2, r.3))
            .collect();
        v.sort_unstable();
        v.dedup_by_key(|x| x.0);
        v.into_iter().map(|(p, _, r, a)| (p, r, a)).collect()
    }

    /// Queues regions up to `in_flight` past the next one the walk needs.
    fn spawn_ahead(&mut self) -> Result<(), PileupError> {
        self.spawned = self.spawned.max(self.next_job);
        let until = (self.next_job + 1 + self.in_flight).min(self.jobs.len());
        while self.spawned < until {
            let (i, job) = (self.spawned, self.jobs[self.spawned]);
            self.read_through(job.tid, job.end)?;
            let sites = self.sites_of(&job);
            let (ctx, tx) = (self.ctx, self.results_tx.clone());
            self.scope.spawn_fifo(move |_| {
                // A panic must still send a result: the walk may be blocked
                // waiting for this one, and the scope would never end.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ctx.run_region_widening(&job, &sites)))
                    .unwrap_or_else(|p| Err(region_panic(&job, p.as_ref())));
                // Fails only when the walk has stopped (on an error) and
                // dropped the receiver: the result is not wanted then.
                let _ = tx.send((i, r));
            });
            self.spawned += 1;
        }
        Ok(())
    }

    /// The result of job `i` (already spawned), helping with queued regions
    /// while it is not ready.
    fn wait_for(&mut self, i: usize) -> Result<RegionResult, PileupError> {
        loop {
            if let Some(r) = self.done.remove(&i) {
                return r;
            }
            let (k, r) = fasthts_io::pool::recv_helping(&self.results_rx);
            // Regions of a reference that was redone whole are dropped.
            if k >= self.next_job {
                self.done.insert(k, r);
            }
        }
    }

    /// Adds the next region's facts.
    fn run_next(&mut self) -> Result<(), PileupError> {
        self.spawn_ahead()?;
        let i = self.next_job;
        let r = self.wait_for(i)?;
        let j = self.jobs[i];
        self.next_job += 1;
        self.stats.regions += 1;
        if r.exact {
            self.facts[j.tid].add(r, self.n);
            return Ok(());
        }
        // The depth cap may have acted before the cut: the reference is
        // run as one region from its start (its facts replace what was
        // known of it), and its remaining regions are not used.
        self.stats.references_redone += 1;
        let end = self.jobs.iter().filter(|x| x.tid == j.tid).map(|x| x.end).max().unwrap_or(j.end);
        let whole = Job { tid: j.tid, start: 0, end };
        self.read_through(j.tid, end)?;
        let sites = self.sites_of(&whole);
        let r = self.ctx.run_region(&whole, &sites, 0)?;
        self.stats.regions += 1;
        self.facts[j.tid].clear();
        self.facts[j.tid].add(r, self.n);
        while self.next_job < self.jobs.len() && self.jobs[self.next_job].tid == j.tid {
            self.next_job += 1;
        }
        let next_job = self.next_job;
        self.done.retain(|&k, _| k >= next_job);
        Ok(())
    }

    /// Runs regions until every one starting at or before `(tid, pos)` has run.
    fn ensure(&mut self, tid: usize, pos: i64) -> Result<(), PileupError> {
        while self.next_job < self.jobs.len() && {
            let j = &self.jobs[self.next_job];
            j.tid < tid || (j.tid == tid && j.start <= pos)
        } {
            self.run_next()?;
        }
        Ok(())
    }

    /// Regions of references before `tid` that have not run are not run:
    /// the walk has passed them.
    fn skip_references_before(&mut self, tid: usize) {
        let first = self.jobs.partition_point(|j| j.tid < tid);
        if self.next_job < first {
            self.next_job = first;
            self.done.retain(|&k, _| k >= first);
        }
    }

    /// First covered column at or after `(tid, pos)` in genome order.
    fn next_covered(&mut self, tid: i32, pos: i64) -> Result<Option<(i32, i64)>, PileupError> {
        let mut t = tid.max(0) as usize;
        let mut q = if tid < 0 { 0 } else { pos };
        while t < self.facts.len() {
            self.ensure(t, q)?;
            if let Some(p) = self.facts[t].next_covered(q) {
                return Ok(Some((t as i32, p)));
            }
            match self.jobs.get(self.next_job) {
                Some(j) if j.tid == t => q = j.start,
                _ => {
                    t += 1;
                    q = 0;
                }
            }
        }
        Ok(None)
    }

    /// The walk is at `(tid, pos)`: nothing at or before it is asked for again.
    fn forget_through(&mut self, tid: i32, pos: i64) {
        for f in self.facts.iter_mut().take(tid.max(0) as usize) {
            if !f.covered.is_empty() || !f.sites.pos.is_empty() || !f.pseudo.pos.is_empty() {
                f.clear();
            }
        }
        if let Some(f) = self.facts.get_mut(tid.max(0) as usize) {
            f.forget_through(pos, self.n);
        }
    }
}

/// What a snp-pileup run reads: the VCF (held in memory if it came from a
/// stream), its plan, and the BAMs with their indexes or CRAMs with their
/// `.crai` (in the order of the CSV's columns).
pub struct SnpInputs {
    /// The VCF of the sites.
    pub vcf: VcfSource,
    /// From [`super::vcf::scan`] (or `scan_records` for a block) with the
    /// options' `region_size`.
    pub summary: VcfSummary,
    /// The BAMs and CRAMs, one column group each in the CSV.
    pub inputs: Vec<IndexedFile>,
}

impl SnpInputs {
    fn check(&self) -> Result<(), PileupError> {
        if self.inputs.is_empty() {
            return Err(PileupError::Message("snp-pileup needs at least one BAM".into()));
        }
        Ok(())
    }
}

/// Runs snp-pileup over `inputs`, writing the CSV (header included) to
/// `out`. Work runs on the current rayon pool.
pub fn run(inputs: &SnpInputs, opts: &SnpPileupOptions, out: &mut dyn Write) -> Result<SnpPileupStats, PileupError> {
    if opts.exact_sites {
        return exact::run(inputs, opts, out);
    }
    run_from(inputs, opts, out, 0..u64::MAX, None).map(|(stats, _)| stats)
}

/// Where FACETS' walk stands: the pileup column (reference id, 0-based
/// position) it last stopped at; `None` before the first.
pub type WalkState = Option<(i32, i64)>;

/// The walk's state once the pileup has no more columns: past every site.
pub const EXHAUSTED: (i32, i64) = (i32::MAX, i64::MAX);

/// [`run`] over the block `records` of the VCF's used records (biallelic
/// single-base ones, numbered from 0 in file order) with the walk starting
/// at `state` instead of before the first column, also returning the state
/// after the block's last record. `summary` must be
/// [`super::vcf::scan_records`]`(vcf, opts.region_size, records)`. Running a VCF
/// in consecutive blocks, each from the state the previous block ended in,
/// writes exactly what one run over all of it writes (each block with its
/// header line); the Python package's dask layer runs the blocks on several
/// machines this way ([`plan_blocks`] cuts them).
///
/// Regions lying wholly before `state` are not run: the walk never looks
/// back, so a block costs what its own records cost.
pub fn run_from(
    inputs: &SnpInputs,
    opts: &SnpPileupOptions,
    out: &mut dyn Write,
    records: Range<u64>,
    state: WalkState,
) -> Result<(SnpPileupStats, WalkState), PileupError> {
    inputs.check()?;
    let SnpInputs { vcf, summary, inputs } = inputs;
    let n = inputs.len();
    if opts.exact_sites {
        // Blocks replay FACETS' walk state, which exact mode does not have.
        return Err(PileupError::Message("exact sites mode runs over the whole VCF (use run, not run_from)".into()));
    }
    let names: Vec<&str> = inputs[0].header().references.iter().map(|r| r.name.as_str()).collect();
    let n_refs = names.len();

    // Per reference: the last site and the tiles holding sites.
    let size = opts.region_size.max(1);
    let mut last_site: Vec<i64> = vec![-1; n_refs];
    let mut tiles: Vec<Vec<(i64, u64)>> = vec![Vec::new(); n_refs];
    for (name, last, t) in &summary.contigs {
        let tid = map_contig(name, &names);
        if tid >= 0 {
            let tid = tid as usize;
            last_site[tid] = last_site[tid].max(*last);
            // (Two VCF names may map to one reference: tiles are merged below.)
            tiles[tid].extend_from_slice(t);
        }
    }
    // Plan: tile every reference with sites from 0 to its last site + 2 (with
    // pseudo-SNPs; otherwise only tiles holding sites, and the first), and
    // give every other reference a lookahead-only job (its first covered
    // column). A tile with many sites is cut further, so that a region's
    // facts (counts at every site) stay small whatever the VCF's density.
    let mut jobs: Vec<Job> = Vec::new();
    for tid in 0..n_refs {
        if last_site[tid] < 0 {
            jobs.push(Job { tid, start: 0, end: 0 });
            continue;
        }
        let t = &mut tiles[tid];
        t.sort_unstable_by_key(|x| x.0);
        t.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 += b.1;
                true
            } else {
                false
            }
        });
        let last = last_site[tid] + 2;
        let mut start = 0;
        while start < last {
            let end = (start + size).min(last);
            let found = t.binary_search_by_key(&(start / size), |x| x.0);
            if opts.pseudo_snps > 0 || start == 0 || found.is_ok() {
                let n_sites = found.map_or(0, |k| t[k].1);
                let pieces = n_sites.div_ceil(MAX_REGION_SITES).max(1) as i64;
                let step = ((end - start + pieces - 1) / pieces).max(1);
                let mut s = start;
                while s < end {
                    jobs.push(Job { tid, start: s, end: (s + step).min(end) });
                    s += step;
                }
            }
            start = end;
        }
    }
    split_tail(&mut jobs, 2 * rayon::current_num_threads().max(1));

    let ctx = Ctx { inputs, opts, popts: opts.pileup_options() };
    let next_job = first_needed_job(&jobs, state);
    let mut walk = Walk { names: &names, n, opts, rows: Rows { names: &names, opts, out, rows: 0, line: String::new() } };
    walk.rows.out.write_all(header(n).as_bytes()).map_err(io_err)?;
    let (results_tx, results_rx) = channel();
    rayon::in_place_scope_fifo(|scope| {
        let mut w = Window {
            ctx: &ctx,
            scope,
            n,
            jobs,
            next_job,
            spawned: next_job,
            in_flight: 4 * rayon::current_num_threads().max(1),
            results_tx,
            results_rx,
            done: BTreeMap::new(),
            facts: (0..n_refs).map(|_| ContigFacts::default()).collect(),
            stream: RecordStream { reader: VcfReader::open(vcf)?, names: &names, last: None, records, used: 0 },
            buffer: VecDeque::new(),
            stream_done: false,
            stats: SnpPileupStats::default(),
        };
        let end = if state == Some(EXHAUSTED) { state } else { walk.walk(&mut w, state)? };
        let mut stats = w.stats;
        stats.rows = walk.rows.rows;
        Ok((stats, end))
    })
}

/// The error a panic in a region's work becomes.
fn region_panic(job: &Job, payload: &(dyn std::any::Any + Send)) -> PileupError {
    let what = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned());
    PileupError::Message(format!("internal error in region {}:{}-{}: {}", job.tid, job.start, job.end, what.unwrap_or_default()))
}

/// Cuts each of the last `tail` regions in four. The regions at the end
/// are what the other threads wait on once the rest are done; smaller ones
/// there shorten that wait (guided scheduling) at the cost of a few more
/// region starts.
fn split_tail(jobs: &mut Vec<Job>, tail: usize) {
    let from = jobs.len().saturating_sub(tail);
    let last: Vec<Job> = jobs.drain(from..).collect();
    for j in last {
        let step = (j.end - j.start + 3) / 4;
        if step < TAIL_MIN_REGION {
            jobs.push(j);
            continue;
        }
        let mut s = j.start;
        while s < j.end {
            jobs.push(Job { tid: j.tid, start: s, end: (s + step).min(j.end) });
            s += step;
        }
    }
}

/// Regions at the end are not cut below this many bases.
const TAIL_MIN_REGION: i64 = 64 << 10;

/// The first planned region a walk standing at `state` can ask about. The
/// walk only asks about columns after `state`'s `(t, p)`: regions of earlier
/// references are never consulted, and on `t` only the last region starting
/// at or before `p + 1` and those after it (what an earlier region knows
/// beyond `p + 1`, its lookahead column included, the later one knows too).
fn first_needed_job(jobs: &[Job], state: WalkState) -> usize {
    let Some((t, p)) = state else { return 0 };
    if t < 0 {
        return 0;
    }
    let t = t as usize;
    let q = p.saturating_add(1);
    let on_t = jobs.partition_point(|j| j.tid < t);
    let through_q = jobs.partition_point(|j| j.tid < t || (j.tid == t && j.start <= q));
    if through_q > on_t {
        through_q - 1
    } else {
        on_t
    }
}

/// The state to run a block of [`plan_blocks`] from (with [`run_from`])
/// when FACETS' walk enters it at `state`, the block's first contig being
/// reference `block_tid` (-1: none): `None` when the walk stands before
/// that contig (or has not started), where it acts as one that has not
/// started, so that a run from the file's start gives the same rows and end
/// state; else `state`. A scheduler can run every block from `None` ahead
/// and run again only the blocks this sends elsewhere.
pub fn block_entry_state(state: WalkState, block_tid: i32) -> WalkState {
    match state {
        Some((tid, _)) if block_tid >= 0 && tid < block_tid => None,
        state => state,
    }
}

/// Cuts the VCF's used records (see [`run_from`]) into about `parts`
/// consecutive blocks `(first, end, tid)`, cutting only where the contig
/// changes; `tid` is the reference id in `bam_names` of the block's first
/// contig (FACETS' matching; -1: none). Reads the VCF once, keeping only
/// its runs of records on one contig.
pub fn plan_blocks(vcf: &VcfSource, bam_names: &[&str], parts: usize) -> Result<Vec<(u64, u64, i32)>, PileupError> {
    let mut reader = VcfReader::open(vcf)?;
    let mut runs: Vec<(Vec<u8>, u64)> = Vec::new();
    while let Some(r) = reader.next_record()? {
        if r.alleles.is_none() {
            continue;
        }
        match runs.last_mut() {
            Some((name, count)) if name.as_slice() == r.chrom => *count += 1,
            _ => runs.push((r.chrom.to_vec(), 1)),
        }
    }
    let total: u64 = runs.iter().map(|r| r.1).sum();
    let target = total.div_ceil(parts.max(1) as u64).max(1);
    let mut blocks = Vec::new();
    let (mut start, mut end) = (0u64, 0u64);
    let mut first_name: &[u8] = &[];
    for (k, (name, count)) in runs.iter().enumerate() {
        if end == start {
            first_name = name;
        }
        end += count;
        if end - start >= target || k + 1 == runs.len() {
            blocks.push((start, end, map_contig(&String::from_utf8_lossy(first_name), bam_names)));
            start = end;
        }
    }
    Ok(blocks)
}

fn io_err(e: std::io::Error) -> PileupError {
    PileupError::Read(e.into())
}

/// Writes CSV rows with FACETS' row rules (FACETS' walk and exact mode).
struct Rows<'a> {
    names: &'a [&'a str],
    opts: &'a SnpPileupOptions,
    out: &'a mut dyn Write,
    rows: u64,
    line: String,
}

impl Rows<'_> {
    /// A site row (one count per file), unless a file's depth is under its
    /// `-r` threshold or no file has an R, A or E read.
    fn site<'c>(
        &mut self,
        tid: usize,
        pos: i64,
        ref_base: u8,
        alt_base: u8,
        counts: impl Iterator<Item = &'c Counts> + Clone,
    ) -> Result<(), PileupError> {
        let fails = counts.clone().enumerate().any(|(i, c)| i64::from(c.n) < self.opts.threshold(i));
        let nonzero = counts.clone().any(|c| c.r != 0 || c.a != 0 || c.e != 0);
        if nonzero && !fails {
            use std::fmt::Write as _;
            self.line.clear();
            let _ = write!(self.line, "{},{},{},{}", self.names[tid], pos + 1, ref_base as char, alt_base as char);
            for c in counts {
                let _ = write!(self.line, ",{},{},{},{}", c.r, c.a, c.e, c.d);
            }
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes()).map_err(io_err)?;
            self.rows += 1;
        }
        Ok(())
    }

    /// A pseudo-SNP row, with the same rules on (depth, passing reads).
    fn pseudo<'c>(&mut self, tid: usize, pos: i64, counts: impl Iterator<Item = &'c (u32, u32)> + Clone) -> Result<(), PileupError> {
        let fails = counts.clone().enumerate().any(|(i, c)| i64::from(c.0) < self.opts.threshold(i));
        let nonzero = counts.clone().any(|c| c.1 != 0);
        if nonzero && !fails {
            use std::fmt::Write as _;
            self.line.clear();
            let _ = write!(self.line, "{},{},.,.", self.names[tid], pos + 1);
            for c in counts {
                let _ = write!(self.line, ",{},0,0,0", c.1);
            }
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes()).map_err(io_err)?;
            self.rows += 1;
        }
        Ok(())
    }
}

/// The sequential replay of FACETS' VCF/pileup merge.
struct Walk<'a> {
    names: &'a [&'a str],
    n: usize,
    opts: &'a SnpPileupOptions,
    rows: Rows<'a>,
}

impl Walk<'_> {
    fn pseudo_check(&mut self, w: &Window<'_, '_>, tid: i32, pos: i64) -> Result<(), PileupError> {
        let p = i64::from(self.opts.pseudo_snps);
        if p == 0 || (pos + 1) % p != 0 {
            return Ok(());
        }
        let f = &w.facts[tid as usize];
        let Ok(k) = f.pseudo.pos.binary_search(&pos) else {
            return Err(PileupError::Message(format!("internal error: no pileup data for {}:{}", self.names[tid as usize], pos + 1)));
        };
        self.rows.pseudo(tid as usize, pos, f.pseudo.counts_of(k, self.n))
    }

    /// Pseudo-SNP checks for every covered candidate in `[from, to)` of `tid`.
    fn pseudo_range(&mut self, w: &mut Window<'_, '_>, tid: i32, from: i64, to: i64) -> Result<(), PileupError> {
        if self.opts.pseudo_snps == 0 || from >= to {
            return Ok(());
        }
        // Every candidate before `to` is known once the regions up to it ran.
        w.ensure(tid as usize, to - 1)?;
        let f = &w.facts[tid as usize];
        let a = f.pseudo.pos.partition_point(|&p| p < from);
        let b = f.pseudo.pos.partition_point(|&p| p < to);
        for k in a..b {
            let pos = w.facts[tid as usize].pseudo.pos[k];
            self.pseudo_check(w, tid, pos)?;
        }
        Ok(())
    }

    fn emit_site(&mut self, w: &Window<'_, '_>, site: &Rec) -> Result<(), PileupError> {
        let (tid, pos) = (site.0, site.1);
        let f = &w.facts[tid as usize];
        let Ok(k) = f.sites.pos.binary_search(&pos) else {
            return Err(PileupError::Message(format!("internal error: no counts at {}:{}", self.names[tid as usize], pos + 1)));
        };
        self.rows.site(tid as usize, pos, site.2, site.3, f.sites.counts_of(k, self.n))
    }

    /// Replays the walk over the window's records from `state`; returns the
    /// state after the last record ([`EXHAUSTED`] once the columns have run
    /// out: FACETS stops there, and every later record is skipped).
    fn walk(&mut self, w: &mut Window<'_, '_>, mut state: WalkState) -> Result<WalkState, PileupError> {
        // `state`: the pileup's current column; None before the first.
        loop {
            if w.buffer.is_empty() {
                if w.stream_done {
                    return Ok(state);
                }
                match w.stream.next()? {
                    Some(r) => w.buffer.push_back(r),
                    None => return Ok(state),
                }
            }
            let site = w.buffer[0];
            if !self.step(w, &mut state, &site)? {
                // The pileup is exhausted: the remaining records produce nothing.
                return Ok(Some(EXHAUSTED));
            }
            w.buffer.pop_front();
            if let Some((t, p)) = state {
                w.forget_through(t, p);
            }
        }
    }

    /// One VCF record of the walk; false when the pileup is exhausted.
    fn step(&mut self, w: &mut Window<'_, '_>, state: &mut Option<(i32, i64)>, site: &Rec) -> Result<bool, PileupError> {
        let (vt, vp) = (site.0, site.1);
        if let Some((t, p)) = *state {
            if t > vt || (t == vt && vp < p) {
                return Ok(true);
            }
        }
        // The next column after the current one. A walk standing before
        // the site's reference goes straight to that reference: on the
        // columns it passes first nothing happens (3a), so their regions
        // are not read (a block of the dask layer costs what its own
        // references cost, however many come before them).
        let first = match *state {
            _ if vt >= 0 && state.is_none_or(|(t, _)| t < vt) => {
                w.skip_references_before(vt as usize);
                w.next_covered(vt, 0)?
            }
            None => w.next_covered(0, 0)?,
            Some((t, p)) => w.next_covered(t, p + 1)?,
        };
        let Some(mut c) = first else { return Ok(false) };
        if vt > c.0 {
            // Columns before the site's reference: nothing happens there.
            match w.next_covered(vt, 0)? {
                Some(x) => c = x,
                None => return Ok(false),
            }
        }
        if c.0 == vt && c.1 < vp {
            // Columns before the site on its reference: pseudo-SNPs.
            self.pseudo_range(w, vt, c.1, vp)?;
            match w.next_covered(vt, vp)? {
                Some(x) => c = x,
                None => return Ok(false),
            }
        }
        *state = Some(c);
        if c == (vt, vp) {
            self.emit_site(w, site)?;
        } else {
            // Here c is past the site: stop advancing.
            self.pseudo_check(w, c.0, c.1)?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_before_the_blocks_contig_enters_it_as_a_fresh_one() {
        assert_eq!(block_entry_state(None, 3), None);
        assert_eq!(block_entry_state(Some((2, 500)), 3), None);
        // On the block's contig or past it, or a block on no BAM contig:
        // the state matters.
        assert_eq!(block_entry_state(Some((3, 10)), 3), Some((3, 10)));
        assert_eq!(block_entry_state(Some((4, 0)), 3), Some((4, 0)));
        assert_eq!(block_entry_state(Some((0, 0)), -1), Some((0, 0)));
        assert_eq!(block_entry_state(Some(EXHAUSTED), 3), Some(EXHAUSTED));
    }

    #[test]
    fn the_tail_is_cut_finer_and_still_tiles_the_same_columns() {
        let j = |tid, start, end| Job { tid, start, end };
        let mut jobs = vec![j(0, 0, 4 << 20), j(0, 4 << 20, 6 << 20), j(1, 0, 0), j(2, 0, 100_000), j(2, 100_000, 1_000_001)];
        split_tail(&mut jobs, 3);
        // Untouched head; the lookahead-only and the small job kept whole.
        assert_eq!(&jobs[..4], &[j(0, 0, 4 << 20), j(0, 4 << 20, 6 << 20), j(1, 0, 0), j(2, 0, 100_000)]);
        assert_eq!(&jobs[4..], &[j(2, 100_000, 325_001), j(2, 325_001, 550_002), j(2, 550_002, 775_003), j(2, 775_003, 1_000_001)]);
    }

    #[test]
    fn contig_matching_follows_facets() {
        let plain = ["I", "II", "X", "MtDNA"];
        assert_eq!(map_contig("chrX", &plain), 2);
        assert_eq!(map_contig("X", &plain), 2);
        assert_eq!(map_contig("V", &plain), -1);
        let chr = ["chrIII", "chrX", "MtDNA"];
        assert_eq!(map_contig("X", &chr), 1);
        assert_eq!(map_contig("MtDNA", &chr), -1);
        assert_eq!(map_contig("NA", &chr), 2);
    }

    #[test]
    fn header_names_files() {
        assert_eq!(header(2), "Chromosome,Position,Ref,Alt,File1R,File1A,File1E,File1D,File2R,File2A,File2E,File2D\n");
    }

    #[test]
    fn progress_bar_shape() {
        let t = progress_text(4);
        assert!(t.ends_with("] 100 %\r"));
        assert_eq!(t.matches('\r').count(), 4);
    }
}
