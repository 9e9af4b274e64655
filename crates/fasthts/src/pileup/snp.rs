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
//! What a cut must preserve is the *pileup state* at the region start:
//! htslib's depth cap (`-d`) and mate-overlap table depend on reads seen
//! before. A region starting at `X > 0` therefore loads reads from
//! `L = X - warmup` and is accepted only when (a) no file ever buffered
//! more than `-d` reads during the region's run (so the cap dropped
//! nothing, here or in FACETS' run, whose buffers can only be smaller), and
//! (b) every read starting at or before `L` ends before `X` (so reads FACETS
//! saw before `L` cannot reach `X`, and the overlap adjustments they took
//! part in lie before `X`). Otherwise the reference is redone as one region
//! from position 0, where the state is exactly FACETS' (the buffer is
//! empty when a new reference starts). A region starting at 0 is always
//! exact.

use super::vcf::Sites;
use super::{Pileup, PileupError, PileupOptions, ReadFilter, RecordSource, RegionRecords};
use crate::bam::{BamFile, RecordRef};
use crate::index::Index;
use rayon::prelude::*;
use std::io::Write;

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
#[derive(Clone, Copy, Debug)]
struct Job {
    tid: usize,
    start: i64,
    end: i64,
    /// Range of `order` (site indices sorted by position) in this region.
    sites: (usize, usize),
}

/// What a region learned.
#[derive(Default)]
struct RegionResult {
    /// Covered positions in `[start, end)` as half-open intervals, plus the
    /// lookahead column as a one-base interval.
    covered: Vec<(i64, i64)>,
    /// Pseudo-SNP candidates (covered, `(pos + 1) % P == 0`): position and
    /// index into `pseudo_counts` (n_files pairs (depth, passing bases)).
    pseudo: Vec<i64>,
    pseudo_counts: Vec<(u32, u32)>,
    /// Counts at each site of the region (n_files each), in `order`;
    /// `None` when the site's position is not covered.
    site_counts: Vec<Option<Vec<Counts>>>,
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
    bams: &'a [BamFile],
    indexes: &'a [Index],
    opts: &'a SnpPileupOptions,
    popts: PileupOptions,
    /// Site index → (tid, pos, ref, alt), used sites with a known contig only.
    sites: &'a [(i32, i64, u8, u8)],
    /// Site indices sorted by (tid, pos, index).
    order: &'a [usize],
}

impl Ctx<'_> {
    fn run_region(&self, job: &Job, warmup: i64) -> Result<RegionResult, PileupError> {
        let n = self.bams.len();
        let warm_start = (job.start - warmup).max(0);
        let mut sources = Vec::with_capacity(n);
        for (bam, index) in self.bams.iter().zip(self.indexes) {
            let mut inner = RegionRecords::new(bam, index, job.tid, warm_start, i64::MAX);
            inner.expect_end(index, job.end);
            sources.push(Watch { inner, warm_start, region_start: job.start, filter: self.popts.filter.clone(), violated: None });
        }
        let mut pileup = Pileup::new(sources, &self.popts);
        let mut res = RegionResult::default();
        let p = i64::from(self.opts.pseudo_snps);
        let min_q = self.opts.min_base_quality;
        res.site_counts = vec![None; job.sites.1 - job.sites.0];
        let (tid, start, end) = (job.tid as i32, job.start, job.end);
        // Columns whose reads are looked at, in order: the sites and the
        // pseudo-SNP candidates ((pos + 1) % p == 0) of the region.
        let sites = &self.order[job.sites.0..job.sites.1];
        let mut next_site = 0;
        let mut next_pseudo = if p > 0 { ((start + 1 + p - 1) / p) * p - 1 } else { i64::MAX };
        loop {
            let site_pos = sites.get(next_site).map_or(i64::MAX, |&k| self.sites[k].1);
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
                while next_site < sites.len() && self.sites[sites[next_site]].1 == pos {
                    let (_, _, rb, ab) = self.sites[sites[next_site]];
                    let mut counts = Vec::with_capacity(n);
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
                        counts.push(c);
                    }
                    res.site_counts[next_site] = Some(counts);
                    next_site += 1;
                }
            }
            while next_site < sites.len() && self.sites[sites[next_site]].1 == pos {
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
        // Loaded from the reference's start: FACETS' own state. Otherwise
        // conditions (a) and (b) of the module docs.
        let capped = pileup.max_buffered() > i64::from(self.opts.max_depth);
        res.exact = warm_start == 0 || (violated.is_none() && !capped);
        if !res.exact && !capped {
            res.long_read_start = violated;
        }
        Ok(res)
    }
}

impl Ctx<'_> {
    /// [`Ctx::run_region`], loading reads from further back while a read
    /// that starts before the warm-up reaches the region (long deletions,
    /// ref-skips, long reads): from the warm-up length before that read's
    /// start, until the region is exact or the cut fails for another reason.
    fn run_region_widening(&self, job: &Job) -> Result<RegionResult, PileupError> {
        let mut warmup = self.opts.warmup;
        loop {
            let r = self.run_region(job, warmup)?;
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

/// Per-reference facts gathered from the regions.
#[derive(Default)]
struct ContigFacts {
    covered: Vec<(i64, i64)>,
    pseudo: Vec<i64>,
    pseudo_counts: Vec<(u32, u32)>,
}

impl ContigFacts {
    fn add(&mut self, r: &RegionResult, n: usize) {
        for &(s, e) in &r.covered {
            match self.covered.last_mut() {
                Some(last) if s < last.1 => {
                    // A lookahead column repeated by the next region.
                    last.1 = last.1.max(e);
                }
                Some(last) if s == last.1 => last.1 = e,
                _ => self.covered.push((s, e)),
            }
        }
        for (k, &p) in r.pseudo.iter().enumerate() {
            if self.pseudo.last().is_some_and(|&l| l >= p) {
                continue;
            }
            self.pseudo.push(p);
            self.pseudo_counts.extend_from_slice(&r.pseudo_counts[k * n..(k + 1) * n]);
        }
    }

    /// First covered position at or after `q` on this reference.
    fn next_covered(&self, q: i64) -> Option<i64> {
        let i = self.covered.partition_point(|&(_, e)| e <= q);
        self.covered.get(i).map(|&(s, _)| s.max(q))
    }
}

/// Statistics of a run.
#[derive(Clone, Debug, Default)]
pub struct SnpPileupStats {
    /// Rows written (sites and pseudo-SNPs, without the header).
    pub rows: u64,
    /// Regions run (including re-runs of whole references).
    pub regions: usize,
    /// References redone as a single region because a cut was not safe.
    pub references_redone: usize,
}

/// Runs snp-pileup: `sites` against `bams` (each with its index), writing
/// the CSV (header included) to `out`. Work runs on the current rayon pool.
pub fn run(
    sites: &Sites,
    bams: &[BamFile],
    indexes: &[Index],
    opts: &SnpPileupOptions,
    out: &mut dyn Write,
) -> Result<SnpPileupStats, PileupError> {
    let n = bams.len();
    if n == 0 || indexes.len() != n {
        return Err(PileupError::Message("snp-pileup needs at least one BAM and an index for each".into()));
    }
    let names: Vec<&str> = bams[0].header().references.iter().map(|r| r.name.as_str()).collect();
    let n_refs = names.len();
    let contig_tid: Vec<i32> = sites.contigs.iter().map(|c| map_contig(c, &names)).collect();
    let resolved: Vec<(i32, i64, u8, u8)> =
        sites.sites.iter().map(|s| (contig_tid[s.contig as usize], s.pos, s.ref_base, s.alt_base)).collect();

    // Sites with a known reference, sorted by position.
    let mut order: Vec<usize> = (0..resolved.len()).filter(|&i| resolved[i].0 >= 0).collect();
    order.sort_by_key(|&i| (resolved[i].0, resolved[i].1, i));

    // Plan: tile every reference with sites from 0 to its last site + 2 (with
    // pseudo-SNPs; otherwise only tiles holding sites), and give every other
    // reference a lookahead-only job (its first covered column).
    let size = opts.region_size.max(1);
    let mut jobs: Vec<Job> = Vec::new();
    let mut k = 0;
    for tid in 0..n_refs {
        let from = k;
        while k < order.len() && resolved[order[k]].0 as usize == tid {
            k += 1;
        }
        if from == k {
            jobs.push(Job { tid, start: 0, end: 0, sites: (from, from) });
            continue;
        }
        let last = resolved[order[k - 1]].1 + 2;
        let mut start = 0;
        let mut s = from;
        while start < last {
            let end = (start + size).min(last);
            let s0 = s;
            while s < k && resolved[order[s]].1 < end {
                s += 1;
            }
            if opts.pseudo_snps > 0 || s > s0 || start == 0 {
                jobs.push(Job { tid, start, end, sites: (s0, s) });
            }
            start = end;
        }
    }

    let ctx = Ctx { bams, indexes, opts, popts: opts.pileup_options(), sites: &resolved, order: &order };
    let mut results: Vec<RegionResult> = jobs.par_iter().map(|j| ctx.run_region_widening(j)).collect::<Result<_, _>>()?;
    let mut stats = SnpPileupStats { regions: jobs.len(), ..SnpPileupStats::default() };

    // References where some cut was not safe: one region from 0.
    let mut redo: Vec<usize> = jobs.iter().zip(&results).filter(|(_, r)| !r.exact).map(|(j, _)| j.tid).collect();
    redo.dedup();
    if !redo.is_empty() {
        stats.references_redone = redo.len();
        let whole: Vec<(usize, Job)> = redo
            .iter()
            .map(|&tid| {
                let idx: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].tid == tid).collect();
                let first = jobs[idx[0]];
                let last = jobs[*idx.last().unwrap_or(&idx[0])];
                (tid, Job { tid, start: 0, end: last.end, sites: (first.sites.0, last.sites.1) })
            })
            .collect();
        let redone: Vec<RegionResult> = whole.par_iter().map(|(_, j)| ctx.run_region(j, 0)).collect::<Result<_, _>>()?;
        stats.regions += whole.len();
        let mut whole_by_tid: std::collections::HashMap<usize, (Job, RegionResult)> =
            whole.into_iter().zip(redone).map(|((tid, j), r)| (tid, (j, r))).collect();
        let mut new_jobs = Vec::with_capacity(jobs.len());
        let mut new_results = Vec::with_capacity(jobs.len());
        for (j, r) in jobs.into_iter().zip(results) {
            if redo.contains(&j.tid) {
                if let Some((wj, wr)) = whole_by_tid.remove(&j.tid) {
                    new_jobs.push(wj);
                    new_results.push(wr);
                }
            } else {
                new_jobs.push(j);
                new_results.push(r);
            }
        }
        jobs = new_jobs;
        results = new_results;
    }

    // Gather.
    let mut facts: Vec<ContigFacts> = (0..n_refs).map(|_| ContigFacts::default()).collect();
    let mut site_counts: Vec<Option<Vec<Counts>>> = vec![None; resolved.len()];
    for (j, r) in jobs.iter().zip(results) {
        facts[j.tid].add(&r, n);
        for (slot, c) in r.site_counts.into_iter().enumerate() {
            site_counts[order[j.sites.0 + slot]] = c;
        }
    }

    let mut w = Walk { facts: &facts, names: &names, n, opts, out, rows: 0, line: String::new() };
    w.out.write_all(header(n).as_bytes()).map_err(io_err)?;
    w.walk(&resolved, &site_counts)?;
    stats.rows = w.rows;
    Ok(stats)
}

fn io_err(e: std::io::Error) -> PileupError {
    PileupError::Read(e.into())
}

/// The sequential replay of FACETS' VCF/pileup merge.
struct Walk<'a> {
    facts: &'a [ContigFacts],
    names: &'a [&'a str],
    n: usize,
    opts: &'a SnpPileupOptions,
    out: &'a mut dyn Write,
    rows: u64,
    line: String,
}

impl Walk<'_> {
    /// First covered column at or after `(tid, pos)` in genome order.
    fn next_covered(&self, tid: i32, pos: i64) -> Option<(i32, i64)> {
        let mut t = tid.max(0) as usize;
        let mut q = if tid < 0 { 0 } else { pos };
        while t < self.facts.len() {
            if let Some(p) = self.facts[t].next_covered(q) {
                return Some((t as i32, p));
            }
            t += 1;
            q = 0;
        }
        None
    }

    fn pseudo_check(&mut self, tid: i32, pos: i64) -> Result<(), PileupError> {
        let p = i64::from(self.opts.pseudo_snps);
        if p == 0 || (pos + 1) % p != 0 {
            return Ok(());
        }
        let f = &self.facts[tid as usize];
        let Ok(k) = f.pseudo.binary_search(&pos) else {
            return Err(PileupError::Message(format!("internal error: no pileup data for {}:{}", self.names[tid as usize], pos + 1)));
        };
        let counts = &f.pseudo_counts[k * self.n..(k + 1) * self.n];
        let fails = counts.iter().enumerate().any(|(i, c)| i64::from(c.0) < self.opts.threshold(i));
        let nonzero = counts.iter().any(|c| c.1 != 0);
        if nonzero && !fails {
            use std::fmt::Write as _;
            self.line.clear();
            let _ = write!(self.line, "{},{},.,.", self.names[tid as usize], pos + 1);
            for c in counts {
                let _ = write!(self.line, ",{},0,0,0", c.1);
            }
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes()).map_err(io_err)?;
            self.rows += 1;
        }
        Ok(())
    }

    /// Pseudo-SNP checks for every covered candidate in `[from, to)` of `tid`.
    fn pseudo_range(&mut self, tid: i32, from: i64, to: i64) -> Result<(), PileupError> {
        if self.opts.pseudo_snps == 0 || from >= to {
            return Ok(());
        }
        let f = &self.facts[tid as usize];
        let a = f.pseudo.partition_point(|&p| p < from);
        let b = f.pseudo.partition_point(|&p| p < to);
        for k in a..b {
            let pos = self.facts[tid as usize].pseudo[k];
            self.pseudo_check(tid, pos)?;
        }
        Ok(())
    }

    fn emit_site(&mut self, tid: i32, site: &(i32, i64, u8, u8), counts: &Option<Vec<Counts>>) -> Result<(), PileupError> {
        let Some(counts) = counts else {
            return Err(PileupError::Message(format!("internal error: no counts at {}:{}", self.names[tid as usize], site.1 + 1)));
        };
        let fails = counts.iter().enumerate().any(|(i, c)| i64::from(c.n) < self.opts.threshold(i));
        let nonzero = counts.iter().any(|c| c.r != 0 || c.a != 0 || c.e != 0);
        if nonzero && !fails {
            use std::fmt::Write as _;
            self.line.clear();
            let _ = write!(self.line, "{},{},{},{}", self.names[tid as usize], site.1 + 1, site.2 as char, site.3 as char);
            for c in counts {
                let _ = write!(self.line, ",{},{},{},{}", c.r, c.a, c.e, c.d);
            }
            self.line.push('\n');
            self.out.write_all(self.line.as_bytes()).map_err(io_err)?;
            self.rows += 1;
        }
        Ok(())
    }

    fn walk(&mut self, sites: &[(i32, i64, u8, u8)], counts: &[Option<Vec<Counts>>]) -> Result<(), PileupError> {
        // The pileup's current column; None before the first.
        let mut state: Option<(i32, i64)> = None;
        for (k, site) in sites.iter().enumerate() {
            let (vt, vp) = (site.0, site.1);
            if let Some((t, p)) = state {
                if t > vt || (t == vt && vp < p) {
                    continue;
                }
            }
            // The next column after the current one.
            let first = match state {
                None => self.next_covered(0, 0),
                Some((t, p)) => self.next_covered(t, p + 1),
            };
            let Some(mut c) = first else { return Ok(()) };
            if vt > c.0 {
                // Columns before the site's reference: nothing happens there.
                match self.next_covered(vt, 0) {
                    Some(x) => c = x,
                    None => return Ok(()),
                }
            }
            if c.0 == vt && c.1 < vp {
                // Columns before the site on its reference: pseudo-SNPs.
                self.pseudo_range(vt, c.1, vp)?;
                match self.next_covered(vt, vp) {
                    Some(x) => c = x,
                    None => return Ok(()),
                }
            }
            state = Some(c);
            if c == (vt, vp) {
                self.emit_site(vt, site, &counts[k])?;
                continue;
            }
            self.pseudo_check(c.0, c.1)?;
            // Here c is past the site: stop advancing.
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
