//! readstats: bases, sequences and average length per file, as a report
//! or CSV.

use super::pairing::screed_check_after;
use super::BoxError;
use crate::seqio::spawn_reader;

/// Counts the bases and sequences of `path`. `progress` gets the number of
/// sequences so far before every 100,000th (khmer's `... FILE N` lines).
pub fn read_stats(path: &str, mut progress: impl FnMut(u64)) -> Result<(u64, u64), BoxError> {
    let (mut bases, mut seqs) = (0u64, 0u64);
    for batch in spawn_reader(path, 4) {
        let b = batch?;
        for (i, r) in b.iter().enumerate() {
            if seqs % 100_000 == 0 {
                progress(seqs);
            }
            bases += r.seq.len() as u64;
            seqs += 1;
            screed_check_after(&r, path, b.first_record + i as u64 + 1)?;
        }
    }
    Ok((bases, seqs))
}

/// One file's statistics.
#[derive(Clone, Debug)]
pub struct FileStats {
    /// Bases.
    pub bases: u64,
    /// Sequences (at least one).
    pub seqs: u64,
    /// The file as named on the command line.
    pub name: String,
}

/// Python's `'%.1f' % (bases / float(seqs))` (both round the exact binary
/// value, ties to even).
pub fn average_length(bases: u64, seqs: u64) -> String {
    format!("{:.1}", bases as f64 / seqs as f64)
}

/// readstats' report of `stats` (files with sequences, in order): khmer's
/// text table with a total line, or with `csv` its CSV (`\r\n` lines, as
/// Python's csv module writes them, no total).
pub fn format_read_stats(stats: &[FileStats], csv: bool) -> String {
    let mut s = String::new();
    if csv {
        s.push_str("bp,seqs,avg_len,filename\r\n");
        for f in stats {
            s.push_str(&format!("{},{},{},{}\r\n", f.bases, f.seqs, average_length(f.bases, f.seqs), csv_field(&f.name)));
        }
        return s;
    }
    s.push_str("---------------\n");
    let (mut bases, mut seqs) = (0u64, 0u64);
    for f in stats {
        bases += f.bases;
        seqs += f.seqs;
        s.push_str(&format!("{} bp / {} seqs; {} average length -- {}\n", f.bases, f.seqs, average_length(f.bases, f.seqs), f.name));
    }
    s.push_str("---------------\n");
    s.push_str(&format!("{bases} bp / {seqs} seqs; {} average length -- total\n", average_length(bases, seqs)));
    s
}

/// A field as Python's csv writer quotes it by default (QUOTE_MINIMAL).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
