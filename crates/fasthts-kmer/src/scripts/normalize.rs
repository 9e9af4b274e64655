//! normalize-by-median: digital normalisation, on one thread or with the
//! tables split between two.

use super::pairing::for_each_unit;
use super::BoxError;
use crate::hash::{hashes_into, Cleaning};
use crate::table::{median_at_least_counts, merge_partition_flags, Countgraph};
use std::io::{self, Write};
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Running totals and the `-R` report of normalize-by-median.
pub struct Diagnostics {
    /// Reads seen (after the min-length filter).
    pub total: u64,
    /// Reads kept.
    pub kept: u64,
    report_frequency: u64,
    next_report_at: u64,
    last_report_at: u64,
    report: Option<Box<dyn Write + Send>>,
}

impl Diagnostics {
    /// New counters; writes the report header when a report is given.
    pub fn new(report: Option<Box<dyn Write + Send>>, frequency: u64) -> io::Result<Self> {
        let mut d =
            Diagnostics { total: 0, kept: 0, report_frequency: frequency, next_report_at: frequency, last_report_at: frequency, report };
        if let Some(r) = d.report.as_mut() {
            r.write_all(b"total,kept,f_kept\n")?;
        }
        Ok(d)
    }

    fn line(&mut self) -> io::Result<()> {
        let (t, k) = (self.total, self.kept);
        if let Some(r) = self.report.as_mut() {
            let f = crate::pyfmt::py_general(k as f64 / t as f64, 4);
            writeln!(r, "{t},{k},{f}")?;
            r.flush()?;
        }
        Ok(())
    }

    fn after_unit(&mut self) -> io::Result<()> {
        if self.total >= self.next_report_at {
            self.next_report_at += self.report_frequency;
            self.last_report_at = self.total;
            self.line()?;
        }
        Ok(())
    }

    fn end_file(&mut self) -> io::Result<()> {
        if self.report.is_some() && self.total != self.last_report_at {
            if self.total == 0 {
                return Err(io::Error::other("division by zero in report (empty first input)"));
            }
            self.line()?;
        }
        Ok(())
    }

    /// Flush the report.
    pub fn finish(&mut self) -> io::Result<()> {
        if let Some(r) = self.report.as_mut() {
            r.flush()?;
        }
        Ok(())
    }
}

/// What normalize-by-median decides with, besides its table.
#[derive(Clone, Copy, Debug)]
pub struct NormalizeOptions {
    /// `-C`: a unit is dropped when every read's median count reaches it.
    pub cutoff: u16,
    /// `-p`: reads come in pairs; an orphan is an error.
    pub require_paired: bool,
    /// `--force_single`: every read is a unit of its own.
    pub force_single: bool,
    /// Threads (two or more split the tables between two threads).
    pub threads: usize,
}

/// Digital normalisation of one input file (normalize-by-median's inner
/// loop): a unit is dropped iff every read in it has median ≥ cutoff;
/// otherwise its reads are written and then consumed.
pub fn normalize_file(
    graph: &mut Countgraph,
    path: &str,
    options: &NormalizeOptions,
    out: &mut dyn Write,
    diag: &mut Diagnostics,
) -> Result<(), BoxError> {
    let NormalizeOptions { cutoff, require_paired, force_single, threads } = *options;
    let k = graph.ksize() as usize;
    if threads >= 2 && graph.n_tables() >= 2 {
        return normalize_split(graph, path, options, out, diag);
    }
    let mut hashes = Vec::new();
    for_each_unit(path, k, force_single, require_paired, true, true, |u| {
        let reads = u.reads();
        diag.total += reads.len() as u64;
        let all_high = reads.iter().all(|r| {
            hashes.clear();
            hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
            graph.median_at_least_hashes(&hashes, cutoff)
        });
        if !all_high {
            for r in reads {
                r.write(out)?;
                hashes.clear();
                hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
                let order = graph.reserve_order(1);
                graph.consume_hashes(&hashes, order);
                diag.kept += 1;
            }
        }
        diag.after_unit()?;
        Ok(())
    })?;
    diag.end_file()?;
    Ok(())
}

/// What the two threads of [`normalize_split`] exchange. `step` orders
/// them: for unit `u`, 3u+1 = its hashes are in `hashes`; 3u+2 = the helper
/// has put its partial minimums in `partial` (and its update flags of the
/// previous kept unit in `flags`); 3u+3 = `keep` holds the decision.
/// `u64::MAX` = no more units.
struct SplitShared {
    step: AtomicU64,
    aborted: AtomicBool,
    /// The helper thread left the lockstep by panicking.
    helper_failed: AtomicBool,
    keep: AtomicBool,
    hashes: Mutex<Vec<u64>>,
    partial: Mutex<Vec<u8>>,
    flags: Mutex<Vec<u8>>,
}

/// How long a wait spins before its thread parks: a unit takes ~15 µs, so
/// the other thread nearly always answers within this, and a parked
/// thread takes a wake-up (a system call and a reschedule, ~10-50 µs) to
/// resume. Longer waits (the other thread descheduled on a loaded machine,
/// or the reader thread's turn) no longer burn a core: they park.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(50);

/// Waits until `step` reaches `target` and returns it, or returns
/// `u64::MAX` at once when `peer_failed` is set (the other thread gave up).
/// The other thread unparks this one after each change ([`advance`],
/// [`LeaveOnPanic`]).
fn wait_step(step: &AtomicU64, target: u64, peer_failed: &AtomicBool) -> u64 {
    let mut spins = 0u32;
    let mut since: Option<Instant> = None;
    loop {
        let v = step.load(Acquire);
        if v >= target {
            return v;
        }
        if peer_failed.load(Acquire) {
            return u64::MAX;
        }
        spins = spins.wrapping_add(1);
        // the clock read every 64 spins only
        if spins % 64 != 0 || since.get_or_insert_with(Instant::now).elapsed() < SPIN_BEFORE_PARK {
            std::hint::spin_loop();
        } else {
            // an unpark since the checks above makes this return at once;
            // the timeout only bounds the cost of a wake-up gone missing
            std::thread::park_timeout(Duration::from_millis(100));
        }
    }
}

/// Sets `step` to `value` and wakes `peer` if it parked waiting for it
/// (cheap when it did not: one atomic swap).
fn advance(step: &AtomicU64, value: u64, peer: &Thread) {
    step.store(value, Release);
    peer.unpark();
}

/// Ends the other thread's waits when one side of [`normalize_split`]
/// unwinds: without it a panic on either side left the other waiting for
/// ever, and the thread scope waiting for it, instead of the panic
/// surfacing.
struct LeaveOnPanic<'a> {
    shared: &'a SplitShared,
    helper: bool,
    peer: Thread,
}

impl Drop for LeaveOnPanic<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        if self.helper {
            self.shared.helper_failed.store(true, Release);
            self.peer.unpark();
        } else {
            self.shared.aborted.store(true, Release);
            advance(&self.shared.step, u64::MAX, &self.peer);
        }
    }
}

/// The last kept unit of [`normalize_split`] on the deciding thread: its
/// statistics and bigcount hits wait for the helper's flags of that unit.
#[derive(Default)]
struct PendingUnit {
    hashes: Vec<u64>,
    flags: Vec<u8>,
    /// (table 0's 0 → 1 transitions, order number) when a unit is pending
    stats: Option<(u64, u64)>,
}

impl PendingUnit {
    fn apply(&mut self, graph: &Countgraph, helper_flags: &[u8]) {
        if let Some((occupied, order)) = self.stats.take() {
            merge_partition_flags(&mut self.flags, helper_flags);
            graph.apply_merged_flags(&self.hashes, &self.flags, occupied, (order as u128) << 64);
        }
    }
}

/// normalize-by-median with the tables split between two threads (this one
/// owns tables 0, 2, …, a helper 1, 3, …), in lockstep unit by unit: both
/// look up their share of the unit's k-mers at once, this thread combines
/// the minimums and decides, and both update their own tables if the unit
/// is kept. Each decision sees exactly the counts of every earlier unit, so
/// the output equals the single-thread run; the gain is twice the cache
/// misses in flight (the job is bound by random access to the tables).
fn normalize_split(
    graph: &Countgraph,
    path: &str,
    options: &NormalizeOptions,
    out: &mut dyn Write,
    diag: &mut Diagnostics,
) -> Result<(), BoxError> {
    let NormalizeOptions { cutoff, require_paired, force_single, .. } = *options;
    let k = graph.ksize() as usize;
    let mine = graph.partition_tables(0, 2);
    let theirs = graph.partition_tables(1, 2);
    let shared = SplitShared {
        step: AtomicU64::new(0),
        aborted: AtomicBool::new(false),
        helper_failed: AtomicBool::new(false),
        keep: AtomicBool::new(false),
        hashes: Mutex::new(Vec::new()),
        partial: Mutex::new(Vec::new()),
        flags: Mutex::new(Vec::new()),
    };
    let mut pending = PendingUnit::default();
    let res = std::thread::scope(|s| -> Result<(), BoxError> {
        let sh = &shared;
        let theirs = &theirs;
        let pending = &mut pending;
        let main_thread = std::thread::current();
        let helper = s.spawn(move || {
            let _leave = LeaveOnPanic { shared: sh, helper: true, peer: main_thread.clone() };
            let (mut hashes, mut partial, mut flags) = (Vec::new(), Vec::new(), Vec::new());
            let mut base = 0u64;
            loop {
                if wait_step(&sh.step, base + 1, &sh.aborted) == u64::MAX {
                    return;
                }
                hashes.clear();
                hashes.extend_from_slice(&sh.hashes.lock().unwrap());
                graph.partial_mins(&hashes, theirs, &mut partial);
                std::mem::swap(&mut *sh.partial.lock().unwrap(), &mut partial);
                advance(&sh.step, base + 2, &main_thread);
                wait_step(&sh.step, base + 3, &sh.aborted);
                if sh.aborted.load(Acquire) {
                    return;
                }
                if sh.keep.load(Acquire) {
                    flags.clear();
                    flags.resize(hashes.len(), 0);
                    graph.update_partition(&hashes, theirs, &mut flags);
                    std::mem::swap(&mut *sh.flags.lock().unwrap(), &mut flags);
                }
                base += 3;
            }
        });
        let helper = helper.thread().clone();
        // this thread: parse, decide, write, update tables 0, 2, …
        let mut hashes: Vec<u64> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        let (mut partial, mut counts) = (Vec::new(), Vec::new());
        let mut base = 0u64;
        let _leave = LeaveOnPanic { shared: sh, helper: false, peer: helper.clone() };
        let res = for_each_unit(path, k, force_single, require_paired, true, true, |u| {
            let reads = u.reads();
            diag.total += reads.len() as u64;
            hashes.clear();
            ends.clear();
            for r in reads {
                hashes_into(&r.seq, k as u32, Cleaning::Screed, &mut hashes);
                ends.push(hashes.len());
            }
            {
                let mut h = sh.hashes.lock().unwrap();
                h.clear();
                h.extend_from_slice(&hashes);
            }
            advance(&sh.step, base + 1, &helper);
            graph.partial_mins(&hashes, &mine, &mut partial);
            if wait_step(&sh.step, base + 2, &sh.helper_failed) == u64::MAX {
                return Err("normalize: the table thread failed".into());
            }
            pending.apply(graph, &sh.flags.lock().unwrap());
            graph.combine_partial_mins(&hashes, &partial, &sh.partial.lock().unwrap(), &mut counts);
            let mut start = 0;
            let all_high = ends.iter().all(|&end| {
                let high = median_at_least_counts(&counts[start..end], cutoff);
                start = end;
                high
            });
            sh.keep.store(!all_high, Release);
            advance(&sh.step, base + 3, &helper);
            base += 3;
            if !all_high {
                for r in reads {
                    r.write(out)?;
                    diag.kept += 1;
                }
                // one order number per read, as the single-thread path
                // reserves them; the unit's hashes are consumed as one run
                let order = graph.reserve_order(reads.len() as u64);
                pending.flags.clear();
                pending.flags.resize(hashes.len(), 0);
                let occupied = graph.update_partition(&hashes, &mine, &mut pending.flags);
                // the unit's hashes move to `pending`; its old buffer is
                // refilled by the next unit
                std::mem::swap(&mut hashes, &mut pending.hashes);
                pending.stats = Some((occupied, order));
            }
            diag.after_unit()?;
            Ok(())
        });
        // On an error too the helper finishes the unit decided last (it
        // is kept with the units before it, as on one thread), then stops
        // at the next unit's wait.
        advance(&sh.step, u64::MAX, &helper);
        res
    });
    // the helper has finished (scope joined): its flags of the last kept
    // unit are in place
    pending.apply(graph, &shared.flags.lock().unwrap());
    res?;
    diag.end_file()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU time the calling thread has used.
    fn thread_cpu_time() -> std::time::Duration {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `t` is a valid timespec to fill
        assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) }, 0);
        std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }

    /// A long wait of the split normalize parks its thread instead of
    /// spinning (which burnt a core, or on a loaded machine the other
    /// thread's share of one): half a second's wait uses a few
    /// milliseconds of CPU at most.
    #[test]
    fn long_wait_parks() {
        let (step, failed) = (AtomicU64::new(0), AtomicBool::new(false));
        std::thread::scope(|s| {
            let waiter = s.spawn(|| (wait_step(&step, 3, &failed), thread_cpu_time()));
            std::thread::sleep(Duration::from_millis(500));
            advance(&step, 3, waiter.thread());
            let (reached, cpu) = waiter.join().unwrap();
            assert_eq!(reached, 3);
            assert!(cpu < Duration::from_millis(20), "waiting used {cpu:?} of CPU");
        });
        // a failed peer ends the wait too
        std::thread::scope(|s| {
            let waiter = s.spawn(|| wait_step(&step, 4, &failed));
            std::thread::sleep(Duration::from_millis(50));
            failed.store(true, Release);
            waiter.thread().unpark();
            assert_eq!(waiter.join().unwrap(), u64::MAX);
        });
    }

    /// A panic on the deciding thread of the split normalize (here: its
    /// output writer) reaches the caller; it used to leave the table
    /// thread spinning and the call hanging for ever.
    #[test]
    fn split_normalize_panic_does_not_hang() {
        struct PanickingWriter;
        impl Write for PanickingWriter {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                panic!("writer failed");
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let dir = std::env::temp_dir().join(format!("fasthts-split-panic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fa = dir.join("r.fa");
        std::fs::write(&fa, ">a\nACGTACGGTTACGATCGATCGGATCGATTTACG\n>b\nTTGACGATCGGCTAGCTAGCATCGATCGGGAC\n").unwrap();
        let path = fa.to_str().unwrap().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut g = Countgraph::new(20, 100_000, 4).unwrap();
                let mut diag = Diagnostics::new(None, 0).unwrap();
                normalize_file(
                    &mut g,
                    &path,
                    &NormalizeOptions { cutoff: 20, require_paired: false, force_single: false, threads: 2 },
                    &mut PanickingWriter,
                    &mut diag,
                )
            }));
            let _ = tx.send(outcome.is_err());
        });
        let panicked = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("split normalize hung after a panic");
        assert!(panicked);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
