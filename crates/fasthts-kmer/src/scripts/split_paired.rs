//! split-paired-reads: interleaved pairs into a file of first mates and one
//! of second mates (and orphans into a third, when one is given).

use super::pairing::{for_each_read_unit, ReadUnit};
use super::BoxError;
use std::io::Write;

/// How many reads went where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitCounts {
    /// First mates written.
    pub left: u64,
    /// Second mates written.
    pub right: u64,
    /// Orphans written.
    pub orphans: u64,
}

/// Splits the pairs of `path` into `first` and `second`. Without an
/// `orphans` output an unpaired read is an error
/// ([`super::UnpairedReads`]). `progress` gets khmer's running index
/// whenever it is a multiple of 10,000 (khmer's `... N` lines).
pub fn split_paired_reads(
    path: &str,
    first: &mut dyn Write,
    second: &mut dyn Write,
    mut orphans: Option<&mut dyn Write>,
    mut progress: impl FnMut(u64),
) -> Result<SplitCounts, BoxError> {
    let mut counts = SplitCounts::default();
    let require_paired = orphans.is_none();
    for_each_read_unit(path, false, require_paired, |index, unit| {
        if index % 10_000 == 0 {
            progress(index);
        }
        match unit {
            ReadUnit::Pair(a, b) => {
                a.write(first)?;
                counts.left += 1;
                b.write(second)?;
                counts.right += 1;
            }
            ReadUnit::Single(r) => {
                if let Some(o) = orphans.as_mut() {
                    r.write(*o)?;
                    counts.orphans += 1;
                }
            }
        }
        Ok(())
    })?;
    Ok(counts)
}
