//! `mosdepth`: mosdepth 0.3.3's outputs for an indexed BAM (or CRAM),
//! counted in parallel windows through the index and gathered in order
//! (see [`crate::mosdepth`] for what counts).

use super::depth::{overlapping, window_in_place};
use super::{with_threads, Report};
use crate::mosdepth::{
    merge_regions, plan_cuts, read_bed, window_outputs, write_distribution, write_summary_line, By, ByRegion, DepthStat, MosdepthOptions,
    RegionDist, WindowCounter, WindowResult,
};
use crate::output::TempOutput;
use crate::region::indexed::{IndexedFile, IndexedOptions};
use crate::region::RegionReader;
use crate::Error;
use fasthts_io::bgzf::BgzfWriter;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What a run of mosdepth leaves besides its files.
#[derive(Debug, Default)]
pub struct MosdepthRun {
    /// mosdepth's warnings (a BED reference the input does not have, a bad
    /// BED line), one line each.
    pub warnings: Vec<String>,
    /// The files written.
    pub outputs: Vec<PathBuf>,
}

/// The regions of one reference: `--by`'s windows, made as needed, or a
/// BED's intervals.
enum Regions {
    None,
    Tiles(i64),
    Bed(Vec<ByRegion>),
}

/// A window counted apart.
struct Job {
    /// Index in `targets`.
    target: usize,
    beg: i64,
    end: i64,
    /// The window's BED regions (by index), when `--by` is a BED.
    regions: Range<usize>,
    first: bool,
    last: bool,
}

/// The name of the reference of mosdepth's `-c` value: `chr`, or `chr`
/// of `chr:beg-end`.
fn chrom_name(text: &str) -> &str {
    if !text.contains(':') {
        return text;
    }
    // mosdepth splits off two fields from the right at ':' or '-'.
    let mut s = text;
    for _ in 0..2 {
        match s.rfind([':', '-']) {
            Some(i) => s = &s[..i],
            None => break,
        }
    }
    s
}

/// A bgzipped output, written through a temporary.
struct Bgz {
    temp: TempOutput,
    w: BgzfWriter<BufWriter<std::fs::File>>,
    path: PathBuf,
}

impl Bgz {
    fn create(path: PathBuf, level: u32) -> Result<Bgz, Error> {
        let (temp, file) = TempOutput::create(&path)?;
        Ok(Bgz { temp, w: BgzfWriter::new(BufWriter::with_capacity(1 << 20, file), level), path })
    }

    fn finish(self) -> Result<(), Error> {
        let path = self.path;
        let inner = self.w.finish().map_err(|e| Error::from(e).with_path(&path))?;
        let file = inner.into_inner().map_err(|e| Error::from(e.into_error()).with_path(&path))?;
        drop(file);
        Ok(self.temp.commit()?)
    }
}

fn write_text(path: &Path, text: &[u8]) -> Result<TempOutput, Error> {
    let (temp, mut file) = TempOutput::create(path)?;
    file.write_all(text).map_err(|e| Error::from(e).with_path(path))?;
    Ok(temp)
}

/// mosdepth of the indexed BAM or CRAM `input`, writing mosdepth's files
/// named from `prefix`: `.mosdepth.global.dist.txt`,
/// `.mosdepth.summary.txt`, `.per-base.bed.gz` (unless `no_per_base`),
/// and with `by` `.regions.bed.gz` and `.mosdepth.region.dist.txt`, with
/// thresholds `.thresholds.bed.gz`. Every file is written completely or
/// not at all.
pub fn mosdepth(prefix: &str, input: &Path, options: &MosdepthOptions, report: &dyn Report) -> Result<MosdepthRun, Error> {
    if !options.thresholds.is_empty() && options.by.is_none() {
        return Err(Error::InvalidArgument("--thresholds can only be used when --by is specified".into()));
    }
    if let Some(By::Window(0)) = options.by {
        return Err(Error::InvalidArgument("--by window size must be positive".into()));
    }
    let mut run = MosdepthRun::default();
    let mut bed = match &options.by {
        Some(By::Bed(path)) => Some(read_bed(path, &mut |w| run.warnings.push(w))?),
        _ => None,
    };
    with_threads(options.threads, || {
        let cram = crate::cram::CramOptions { reference: options.fasta.clone(), ..Default::default() };
        let open = IndexedOptions { cram, ..Default::default() };
        let file = IndexedFile::open(input, &open, report)?;
        let refs = &file.header().references;
        let targets: Vec<usize> = match &options.chrom {
            None => (0..refs.len()).collect(),
            Some(c) => {
                let name = chrom_name(c);
                match refs.iter().position(|r| r.name == name) {
                    Some(i) => vec![i],
                    None => return Err(Error::InvalidArgument(format!("chromosome {name} not found"))),
                }
            }
        };
        // Each target's regions, and the jobs.
        let width = options.window_bases.clamp(1, i64::MAX as u64) as i64;
        let mut regions: Vec<Regions> = Vec::with_capacity(targets.len());
        let mut jobs = Vec::new();
        for (t, &tid) in targets.iter().enumerate() {
            let name = &refs[tid].name;
            let len = i64::from(refs[tid].len);
            let r = match (&options.by, &mut bed) {
                (Some(By::Window(w)), _) => Regions::Tiles(i64::from(*w)),
                (_, Some(bed)) => match bed.iter().position(|(n, _)| n == name) {
                    Some(i) => Regions::Bed(bed.remove(i).1),
                    None => {
                        if options.no_per_base && options.thresholds.is_empty() {
                            // mosdepth skips such a reference entirely.
                            regions.push(Regions::None);
                            continue;
                        }
                        Regions::Bed(Vec::new())
                    }
                },
                _ => Regions::None,
            };
            let windows = match &r {
                Regions::Tiles(w) => plan_cuts(len, (width / w).max(1) * w, &[]),
                Regions::Bed(b) => plan_cuts(len, width, &merge_regions(b, len)),
                Regions::None => plan_cuts(len, width, &[]),
            };
            let mut next_region = 0;
            let n = windows.len();
            for (i, (beg, end)) in windows.into_iter().enumerate() {
                let mut upto = next_region;
                if let Regions::Bed(b) = &r {
                    while upto < b.len() && (i + 1 == n || b[upto].start < end) {
                        upto += 1;
                    }
                }
                jobs.push(Job { target: t, beg, end, regions: next_region..upto, first: i == 0, last: i + 1 == n });
                next_region = upto;
            }
            regions.push(r);
        }
        if options.chrom.is_none() {
            if let Some(bed) = &bed {
                for (name, r) in bed {
                    run.warnings.push(format!("[mosdepth] warning chromosome:{name} from bed with {} regions not found", r.len()));
                }
            }
        }

        // The outputs.
        let path = |suffix: &str| PathBuf::from(format!("{prefix}{suffix}"));
        let mut per_base = if options.no_per_base { None } else { Some(Bgz::create(path(".per-base.bed.gz"), 1)?) };
        let mut regions_out = if options.by.is_some() { Some(Bgz::create(path(".regions.bed.gz"), 6)?) } else { None };
        let mut thresholds_out = if options.thresholds.is_empty() { None } else { Some(Bgz::create(path(".thresholds.bed.gz"), 1)?) };
        if let Some(t) = &mut thresholds_out {
            let mut header = b"#chrom\tstart\tend\tregion".to_vec();
            for x in &options.thresholds {
                header.extend_from_slice(format!("\t{x}X").as_bytes());
            }
            header.push(b'\n');
            t.w.write_all(&header).map_err(|e| Error::from(e).with_path(&t.path))?;
        }
        let region_dist_kind = match options.by {
            Some(By::Window(_)) => RegionDist::ByMean,
            _ => RegionDist::PerBase,
        };

        let zero_threshold = options.thresholds.first().is_some_and(|&t| t <= 0);
        let mut g = Gathered::default();
        let mut summary = b"chrom\tlength\tbases\tmean\tmin\tmax\n".to_vec();
        let mut global_dist_text = Vec::new();
        let mut region_dist_text = Vec::new();
        let mut next = 0;
        crate::gather::fill_in_order_with(
            jobs.len(),
            || (None::<RegionReader<'_>>, WindowCounter::default(), Vec::<ByRegion>::new()),
            |_| (WindowResult::default(), false),
            |i, (slot, counter, tiles), (res, found)| {
                let job = &jobs[i];
                let tid = targets[job.target];
                let (beg, end) = (job.beg, job.end);
                counter.start(beg, end);
                *found = false;
                if let Some((bam, index)) = file.bam() {
                    window_in_place(slot, bam, index, overlapping(tid as i32, end), beg, input, |r| {
                        *found = true;
                        counter.add(options, r);
                        Ok::<(), std::convert::Infallible>(())
                    })?;
                } else {
                    let mut records = file.piece(overlapping(tid as i32, end), beg)?;
                    while records.advance().map_err(|e| e.with_path(input))? {
                        *found = true;
                        counter.add(options, &records.current());
                    }
                }
                let depths = counter.finish();
                let window_regions: &[ByRegion] = match &regions[job.target] {
                    Regions::None => &[],
                    Regions::Bed(b) => &b[job.regions.clone()],
                    Regions::Tiles(w) => {
                        tiles.clear();
                        let len = i64::from(refs[tid].len);
                        let mut s = beg;
                        while s < end {
                            let e = (s + w).min(len);
                            tiles.push(ByRegion { start: s, end: e, name: None });
                            s = e;
                        }
                        tiles
                    }
                };
                window_outputs(options, &refs[tid].name, beg, end, Some(depths), window_regions, region_dist_kind, res);
                Ok::<(), Error>(())
            },
            |(res, found)| {
                let job = &jobs[next];
                next += 1;
                let name = &refs[targets[job.target]].name;
                if job.first {
                    g.start_reference();
                }
                let io = |e: std::io::Error, p: &Path| Error::from(e).with_path(p);
                if let Some(pb) = &mut per_base {
                    g.per_base(name, res, &mut pb.w).map_err(|e| io(e, &pb.path))?;
                    if job.last {
                        g.flush_run(name, &mut pb.w).map_err(|e| io(e, &pb.path))?;
                    }
                }
                if let Some(r) = &mut regions_out {
                    r.w.write_all(&res.regions_text).map_err(|e| io(e, &r.path))?;
                }
                g.add(res, *found);
                if let Some(t) = &mut thresholds_out {
                    if zero_threshold && !g.found {
                        // A reference without records has all counts 0 in
                        // mosdepth, even at depth 0: held until known.
                        g.held_thresholds.extend_from_slice(&res.thresholds_text);
                    } else {
                        t.w.write_all(&g.held_thresholds).map_err(|e| io(e, &t.path))?;
                        g.held_thresholds.clear();
                        t.w.write_all(&res.thresholds_text).map_err(|e| io(e, &t.path))?;
                    }
                    if job.last && !g.found && !g.held_thresholds.is_empty() {
                        let zeros = zero_counts(&g.held_thresholds);
                        g.held_thresholds.clear();
                        t.w.write_all(&zeros).map_err(|e| io(e, &t.path))?;
                    }
                }
                if job.last {
                    g.finish_reference(name, options.by.is_some(), &mut summary, &mut global_dist_text, &mut region_dist_text);
                }
                Ok(())
            },
        )?;
        write_summary_line(&mut summary, "total", &g.global_stat);
        if options.by.is_some() {
            write_summary_line(&mut summary, "total_region", &g.global_region_stat);
        }
        write_distribution(&mut global_dist_text, "total", &g.global_dist);
        if options.by.is_some() {
            write_distribution(&mut region_dist_text, "total", &g.global_region_dist);
        }
        // Every file complete, then all committed.
        let mut temps = vec![write_text(&path(".mosdepth.global.dist.txt"), &global_dist_text)?];
        run.outputs.push(path(".mosdepth.global.dist.txt"));
        if options.by.is_some() {
            temps.push(write_text(&path(".mosdepth.region.dist.txt"), &region_dist_text)?);
            run.outputs.push(path(".mosdepth.region.dist.txt"));
        }
        temps.push(write_text(&path(".mosdepth.summary.txt"), &summary)?);
        run.outputs.push(path(".mosdepth.summary.txt"));
        for out in [per_base, regions_out, thresholds_out].into_iter().flatten() {
            run.outputs.push(out.path.clone());
            out.finish()?;
        }
        for t in temps {
            t.commit()?;
        }
        Ok(run)
    })
}

/// The gathering side: per-base runs joined across windows, and the
/// numbers of the reference being gathered and of the whole genome.
struct Gathered {
    /// The per-base run not yet written.
    run: Option<(i64, i64, i32)>,
    found: bool,
    stat: DepthStat,
    region_acc: DepthStat,
    dist: Vec<u64>,
    region_dist: Vec<u64>,
    /// mosdepth's reference region summary: starts zeroed (its minimum
    /// 0), cleared after each reference with reads.
    chrom_region_stat: DepthStat,
    global_stat: DepthStat,
    global_region_stat: DepthStat,
    global_dist: Vec<u64>,
    global_region_dist: Vec<u64>,
    line: Vec<u8>,
    /// Thresholds lines of a reference not yet known to have records.
    held_thresholds: Vec<u8>,
}

impl Default for Gathered {
    fn default() -> Self {
        Gathered {
            run: None,
            found: false,
            stat: DepthStat::CLEARED,
            region_acc: DepthStat::CLEARED,
            dist: Vec::new(),
            region_dist: Vec::new(),
            chrom_region_stat: DepthStat::ZERO,
            global_stat: DepthStat::ZERO,
            global_region_stat: DepthStat::ZERO,
            global_dist: Vec::new(),
            global_region_dist: Vec::new(),
            line: Vec::new(),
            held_thresholds: Vec::new(),
        }
    }
}

impl Gathered {
    fn start_reference(&mut self) {
        self.run = None;
        self.found = false;
        self.held_thresholds.clear();
        self.stat = DepthStat::CLEARED;
        self.region_acc = DepthStat::CLEARED;
        self.dist.clear();
        self.region_dist.clear();
    }

    fn write_run(&mut self, name: &str, w: &mut dyn Write) -> std::io::Result<()> {
        if let Some((s, e, v)) = self.run.take() {
            self.line.clear();
            let _ = writeln!(self.line, "{name}\t{s}\t{e}\t{v}");
            w.write_all(&self.line)?;
        }
        Ok(())
    }

    fn flush_run(&mut self, name: &str, w: &mut dyn Write) -> std::io::Result<()> {
        self.write_run(name, w)
    }

    fn per_base(&mut self, name: &str, res: &WindowResult, w: &mut dyn Write) -> std::io::Result<()> {
        if let Some(f) = res.first_run {
            match &mut self.run {
                Some(run) if run.2 == f.2 && run.1 == f.0 => run.1 = f.1,
                _ => {
                    self.write_run(name, w)?;
                    self.run = Some(f);
                }
            }
        }
        if let Some(last) = res.last_run {
            self.write_run(name, w)?;
            w.write_all(&res.runs_text)?;
            self.run = Some(last);
        }
        Ok(())
    }

    fn add(&mut self, res: &WindowResult, found: bool) {
        self.found |= found;
        if let Some(s) = &res.stat {
            self.stat.add(s);
        }
        if let Some(s) = &res.region_stat {
            self.region_acc.add(s);
        }
        add_counts(&mut self.dist, &res.dist);
        add_counts(&mut self.region_dist, &res.region_dist);
    }

    fn finish_reference(&mut self, name: &str, by: bool, summary: &mut Vec<u8>, dist: &mut Vec<u8>, region_dist: &mut Vec<u8>) {
        if !self.found {
            // mosdepth writes no numbers of a reference without records.
            return;
        }
        write_summary_line(summary, name, &self.stat);
        self.global_stat.add(&self.stat);
        if by {
            self.chrom_region_stat.add(&self.region_acc);
            write_summary_line(summary, &format!("{name}_region"), &self.chrom_region_stat);
            self.global_region_stat.add(&self.chrom_region_stat);
            self.chrom_region_stat = DepthStat::CLEARED;
        }
        write_distribution(dist, name, &self.dist);
        add_counts(&mut self.global_dist, &self.dist);
        if by {
            write_distribution(region_dist, name, &self.region_dist);
            add_counts(&mut self.global_region_dist, &self.region_dist);
        }
    }
}

fn add_counts(to: &mut Vec<u64>, from: &[u64]) {
    if from.len() > to.len() {
        to.resize(from.len(), 0);
    }
    for (t, f) in to.iter_mut().zip(from) {
        *t += f;
    }
}

/// Thresholds lines with every count 0 (the fields after the fourth).
fn zero_counts(lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.split(|&b| b == b'\t');
        for (i, f) in fields.by_ref().take(4).enumerate() {
            if i > 0 {
                out.push(b'\t');
            }
            out.extend_from_slice(f);
        }
        for _ in fields {
            out.extend_from_slice(b"\t0");
        }
        out.push(b'\n');
    }
    out
}
