//! extract-long-sequences: the reads at least a given length long.

use super::pairing::{screed_check_after, screed_view};
use super::BoxError;
use crate::seqio::spawn_reader;
use std::io::Write;

/// Writes the records of `path` whose sequence is at least `min_length`
/// long to `out` (FASTA or FASTQ as read, names as screed gives them).
pub fn extract_long_sequences(path: &str, min_length: i64, out: &mut dyn Write) -> Result<(), BoxError> {
    for batch in spawn_reader(path, 4) {
        let b = batch?;
        for (i, r) in b.iter().enumerate() {
            let r = screed_view(r);
            if r.seq.len() as i64 >= min_length {
                r.write(out)?;
            }
            screed_check_after(&r, path, b.first_record + i as u64 + 1)?;
        }
    }
    Ok(())
}
