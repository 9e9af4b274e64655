//! fastq-to-fasta: FASTQ records written as FASTA, reads with an `N`
//! dropped unless kept.

use super::pairing::{screed_check_after, screed_view};
use super::BoxError;
use crate::seqio::{spawn_reader, write_record};
use std::io::Write;

/// Converts `path` into FASTA on `out`; returns the number of reads dropped
/// for containing `N` (upper case only, as khmer tests; none with
/// `keep_n`). `progress` gets the record index before every 10,000th
/// record (khmer's `... N` lines). A FASTA record that is not dropped is
/// khmer's `KeyError: 'quality'`.
pub fn fastq_to_fasta(path: &str, keep_n: bool, out: &mut dyn Write, mut progress: impl FnMut(u64)) -> Result<u64, BoxError> {
    let mut dropped = 0u64;
    for batch in spawn_reader(path, 4) {
        let b = batch?;
        for (i, r) in b.iter().enumerate() {
            let n = b.first_record + i as u64;
            if n % 10_000 == 0 {
                progress(n);
            }
            let r = screed_view(r);
            if !keep_n && memchr::memchr(b'N', r.seq).is_some() {
                dropped += 1;
                continue;
            }
            if r.qual.is_none() {
                return Err("KeyError: 'quality'".into());
            }
            write_record(out, r.name, r.seq, None)?;
            screed_check_after(&r, path, n + 1)?;
        }
    }
    Ok(dropped)
}
