//! trim-low-abund: two-pass streaming abundance trimming.

use super::pairing::for_each_unit;
use super::trimming::{trim_record, ReadScratch, Trim};
use super::BoxError;
use crate::hash::{hashes_into, Cleaning};
use crate::seqio::{OwnedRecord, Record};
use crate::table::{median_of_counts, Countgraph};
use std::io::{self, Write};

/// Options of trim-low-abund.
#[derive(Clone, Debug)]
pub struct TrimOptions {
    /// `-C`
    pub cutoff: u16,
    /// `-Z`
    pub trim_at_coverage: u16,
    /// `-V`
    pub variable_coverage: bool,
    /// `--diginorm` coverage, if on
    pub diginorm: Option<u16>,
    /// `--ignore-pairs`
    pub ignore_pairs: bool,
    /// `--single-pass`
    pub single_pass: bool,
}

/// Counters of trim-low-abund.
#[derive(Default, Debug, Clone)]
pub struct TrimStats {
    /// reads read
    pub n_reads: u64,
    /// bases read
    pub n_bp: u64,
    /// reads trimmed or dropped by trimming
    pub trimmed_reads: u64,
    /// reads saved for pass 2
    pub n_saved: u64,
    /// reads written
    pub written_reads: u64,
    /// bases written
    pub written_bp: u64,
    /// reads emitted untrimmed by pass 2 (`-V`, low coverage)
    pub n_skipped: u64,
    /// khmer adds 1 per skipped *read* here (a khmer quirk)
    pub bp_skipped: u64,
}

impl TrimStats {
    /// The counters trim-low-abund's summary reports: khmer takes
    /// reads/bases read and the skip counters right after pass 1, the
    /// written and trimmed counters after pass 2.
    pub fn summary(after_pass1: &TrimStats, end: &TrimStats) -> TrimStats {
        TrimStats {
            n_reads: after_pass1.n_reads,
            n_bp: after_pass1.n_bp,
            n_skipped: after_pass1.n_skipped,
            bp_skipped: after_pass1.bp_skipped,
            ..end.clone()
        }
    }
}

/// Trims `r` at k-mers below `cutoff`, emits what is left (if anything)
/// and counts it in `stats`.
fn trim_and_emit(
    graph: &Countgraph,
    r: &OwnedRecord,
    cutoff: u16,
    stats: &mut TrimStats,
    scratch: &mut ReadScratch,
    emit: &mut dyn FnMut(Record<'_>, &TrimStats) -> io::Result<()>,
) -> io::Result<()> {
    let r = r.as_record();
    let decision = trim_record(graph, &r, cutoff, false, 0, scratch);
    if decision != Trim::Keep {
        stats.trimmed_reads += 1;
    }
    let kept = match decision {
        Trim::Keep => Some(r),
        Trim::Drop => None,
        Trim::Cut(t) => Some(r.truncated(t)),
    };
    if let Some(t) = kept {
        emit(t, stats)?;
        stats.written_reads += 1;
        stats.written_bp += t.seq.len() as u64;
    }
    Ok(())
}

/// trim-low-abund pass 1 over one file: emit (via `emit`, which also sees
/// the counters as they stand, for khmer's progress lines) trimmed reads of
/// high-coverage units, consume and save (to `saver`) the others.
pub fn trim_pass1(
    graph: &mut Countgraph,
    path: &str,
    opt: &TrimOptions,
    saver: &mut dyn Write,
    stats: &mut TrimStats,
    emit: &mut dyn FnMut(Record<'_>, &TrimStats) -> io::Result<()>,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    let mut scratch = ReadScratch::default();
    for_each_unit(path, k, opt.ignore_pairs, false, false, false, |u| {
        let reads = u.reads();
        stats.n_reads += reads.len() as u64;
        stats.n_bp += reads.iter().map(|r| r.seq.len() as u64).sum::<u64>();
        let min_cov = reads.iter().map(|r| median_of_counts(scratch.counts(graph, &r.seq))).min().unwrap();
        if let Some(d) = opt.diginorm {
            if min_cov >= d {
                return Ok(());
            }
        }
        if min_cov >= opt.trim_at_coverage {
            for r in reads {
                trim_and_emit(graph, r, opt.cutoff, stats, &mut scratch, emit)?;
            }
        } else {
            for r in reads {
                let hashes = &mut scratch.hashes;
                hashes.clear();
                hashes_into(&r.seq, k as u32, Cleaning::CppParser, hashes);
                let order = graph.reserve_order(1);
                graph.consume_hashes(hashes, order);
                r.write(saver)?;
                stats.n_saved += 1;
            }
        }
        Ok(())
    })
}

/// trim-low-abund pass 2 over one saved file.
pub fn trim_pass2(
    graph: &Countgraph,
    pass2_path: &str,
    opt: &TrimOptions,
    stats: &mut TrimStats,
    emit: &mut dyn FnMut(Record<'_>, &TrimStats) -> io::Result<()>,
) -> Result<(), BoxError> {
    let k = graph.ksize() as usize;
    let mut scratch = ReadScratch::default();
    for_each_unit(pass2_path, k, true, false, false, false, |u| {
        let reads = u.reads();
        stats.n_reads += reads.len() as u64;
        stats.n_bp += reads.iter().map(|r| r.seq.len() as u64).sum::<u64>();
        let trim = !opt.variable_coverage || reads.iter().all(|r| graph.median_at_least(&r.seq, opt.trim_at_coverage, Cleaning::CppParser));
        for r in reads {
            if trim {
                trim_and_emit(graph, r, opt.cutoff, stats, &mut scratch, emit)?;
            } else {
                stats.n_skipped += 1;
                stats.bp_skipped += 1;
                emit(r.as_record(), stats)?;
                stats.written_reads += 1;
                stats.written_bp += r.seq.len() as u64;
            }
        }
        Ok(())
    })
}
