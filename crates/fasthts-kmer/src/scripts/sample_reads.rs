//! sample-reads-randomly: reservoir sampling of reads (pairs kept together
//! unless forced single), drawing the same numbers as khmer's Python
//! `random` for the same seed, so the same seed picks the same reads.

use super::pairing::{for_each_read_unit, ReadUnit};
use super::BoxError;
use crate::pyrandom::PyRandom;
use crate::seqio::OwnedRecord;
use std::io::{self, Write};

/// What sample-reads-randomly samples.
#[derive(Clone, Copy, Debug)]
pub struct SampleOptions {
    /// `-N`: units (reads or pairs) per sample.
    pub num_reads: i64,
    /// `-M`: stop reading a file at this many units (checked, as khmer
    /// does, only at multiples of 10,000).
    pub max_reads: i64,
    /// `-S`: independent samples (at least 1).
    pub samples: usize,
    /// `--force_single`: every read is a unit of its own.
    pub force_single: bool,
}

/// A sampled unit: a read, or a pair.
#[derive(Clone, Debug, Default)]
pub struct SampledUnit {
    /// The (first) read.
    pub first: OwnedRecord,
    /// Its mate, for a pair.
    pub second: Option<OwnedRecord>,
}

impl SampledUnit {
    fn set(&mut self, unit: &ReadUnit<'_>) {
        match unit {
            ReadUnit::Single(r) => {
                self.first.set_from(r);
                self.second = None;
            }
            ReadUnit::Pair(a, b) => {
                self.first.set_from(a);
                self.second.get_or_insert_with(OwnedRecord::default).set_from(b);
            }
        }
    }

    fn from_unit(unit: &ReadUnit<'_>) -> SampledUnit {
        let mut s = SampledUnit::default();
        s.set(unit);
        s
    }

    /// Writes the read(s).
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        self.first.write(out)?;
        match &self.second {
            Some(r) => r.write(out),
            None => Ok(()),
        }
    }
}

/// Progress of [`Reservoirs::add_file`], as khmer prints it.
pub enum SampleProgress {
    /// `... N reads scanned` (every 10,000 units, from 0).
    Scanned(u64),
    /// `-M` reached: the rest of the file is skipped.
    LimitReached,
}

/// Ends the reading of a file at `-M` (not an error).
#[derive(Debug)]
struct StopReading;

impl std::fmt::Display for StopReading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("read limit reached")
    }
}
impl std::error::Error for StopReading {}

/// The samples being drawn: one reservoir per sample.
pub struct Reservoirs {
    options: SampleOptions,
    rng: PyRandom,
    /// One list of units per sample.
    pub samples: Vec<Vec<SampledUnit>>,
}

impl Reservoirs {
    /// Empty reservoirs drawing from `rng`.
    pub fn new(options: SampleOptions, rng: PyRandom) -> Self {
        let samples = (0..options.samples.max(1)).map(|_| Vec::new()).collect();
        Reservoirs { options, rng, samples }
    }

    /// Samples the units of one more file. As in khmer the unit count
    /// starts again at 0 for each file, so the first `-N` units of every
    /// file join the reservoirs (which then outgrow `-N`, and khmer's
    /// `assert` stops a later file that gets past `-N` units: an error here
    /// too).
    pub fn add_file(&mut self, path: &str, mut progress: impl FnMut(SampleProgress)) -> Result<(), BoxError> {
        let SampleOptions { num_reads, max_reads, force_single, .. } = self.options;
        let mut count: u64 = 0;
        let r = for_each_read_unit(path, force_single, false, |_, unit| {
            if count % 10_000 == 0 {
                progress(SampleProgress::Scanned(count));
                if count as i64 >= max_reads {
                    progress(SampleProgress::LimitReached);
                    return Err(Box::new(StopReading));
                }
            }
            if (count as i64) < num_reads {
                for s in &mut self.samples {
                    s.push(SampledUnit::from_unit(&unit));
                }
            } else {
                if self.samples.iter().any(|s| s.len() as u64 > count) {
                    return Err("AssertionError".into());
                }
                for s in &mut self.samples {
                    if count == 0 {
                        return Err("ValueError: empty range for randrange() (1, 1, 0)".into());
                    }
                    let guess = self.rng.randint(1, count);
                    if guess as i64 <= num_reads {
                        s[(guess - 1) as usize].set(&unit);
                    }
                }
            }
            count += 1;
            Ok(())
        });
        match r {
            Err(e) if e.is::<StopReading>() => Ok(()),
            r => r,
        }
    }
}
