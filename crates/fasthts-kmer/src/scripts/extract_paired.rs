//! extract-paired-reads: a mixture of pairs and orphans into an interleaved
//! file of the pairs and a file of the orphans.

use super::pairing::{for_each_read_unit, ReadUnit};
use super::BoxError;
use std::io::Write;

/// Writes the pairs of `path` to `paired` and the other reads to `single`;
/// returns (pairs, singles). `progress` gets khmer's running index whenever
/// it is a non-zero multiple of 100,000 (khmer's `... N` lines).
pub fn extract_paired_reads(
    path: &str,
    paired: &mut dyn Write,
    single: &mut dyn Write,
    mut progress: impl FnMut(u64),
) -> Result<(u64, u64), BoxError> {
    let (mut n_pairs, mut n_single) = (0u64, 0u64);
    for_each_read_unit(path, false, false, |index, unit| {
        if index % 100_000 == 0 && index > 0 {
            progress(index);
        }
        match unit {
            ReadUnit::Pair(a, b) => {
                a.write(paired)?;
                b.write(paired)?;
                n_pairs += 1;
            }
            ReadUnit::Single(r) => {
                r.write(single)?;
                n_single += 1;
            }
        }
        Ok(())
    })?;
    Ok((n_pairs, n_single))
}
