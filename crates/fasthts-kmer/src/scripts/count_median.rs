//! count-median: the median, mean and standard deviation of each read's
//! k-mer counts in a countgraph, as khmer's CSV.

use super::{screed_record, BoxError};
use crate::hash::Cleaning;
use crate::table::Countgraph;
use std::io::Write;

/// khmer's `get_median_count`: (median, average, stddev), the last two
/// computed in single precision as khmer's C++ does. `counts` must not be
/// empty; it is sorted.
pub fn median_average_stddev(counts: &mut [u16]) -> (u16, f32, f32) {
    let n = counts.len() as f32;
    let mut average = 0f32;
    for &c in counts.iter() {
        average += c as f32;
    }
    average /= n;
    let mut stddev = 0f32;
    for &c in counts.iter() {
        let d = c as f32 - average;
        stddev += d * d;
    }
    stddev = (stddev / n).sqrt();
    counts.sort_unstable();
    (counts[counts.len() / 2], average, stddev)
}

/// A CSV field as Python's `csv.writer` writes it: quoted (quotes
/// doubled) when it holds a comma, a quote or a line break.
fn write_csv_field<W: Write + ?Sized>(w: &mut W, field: &[u8]) -> std::io::Result<()> {
    if field.iter().any(|&c| matches!(c, b',' | b'"' | b'\r' | b'\n')) {
        w.write_all(b"\"")?;
        for part in field.split_inclusive(|&c| c == b'"') {
            w.write_all(part)?;
            if part.ends_with(b"\"") {
                w.write_all(b"\"")?;
            }
        }
        w.write_all(b"\"")
    } else {
        w.write_all(field)
    }
}

/// count-median.py on `path`: for each read (screed's view: the name is
/// the whole header line) at least k long, its name, the median, average
/// and standard deviation of its k-mer counts (`N` read as `A`, as the
/// script does; averages rounded to 9 decimals) and its length, as CSV
/// with `\r\n` line ends, after the header row.
pub fn count_median_file(graph: &Countgraph, path: &str, out: &mut dyn Write) -> Result<(), BoxError> {
    out.write_all(b"name,median,average,stddev,seqlen\r\n")?;
    let k = graph.ksize() as usize;
    let mut reader = crate::seqio::SeqReader::open(path)?;
    let mut counts = Vec::new();
    while let Some(b) = reader.next_batch()? {
        for (i, r) in b.iter().enumerate() {
            let r = screed_record(r, path, b.first_record + i as u64 + 1)?;
            if r.seq.len() < k {
                continue;
            }
            counts.clear();
            graph.get_counts(r.seq, Cleaning::Screed, &mut counts);
            let (median, average, stddev) = median_average_stddev(&mut counts);
            write_csv_field(out, r.name)?;
            let average = crate::pyfmt::py_round_repr(average as f64, 9);
            let stddev = crate::pyfmt::py_round_repr(stddev as f64, 9);
            write!(out, ",{median},{average},{stddev},{}\r\n", r.seq.len())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_in_single_precision() {
        let (m, a, s) = median_average_stddev(&mut [3, 1, 2, 10]);
        assert_eq!((m, a), (3, 4.0));
        assert_eq!(s, (((1.0f32 + 4.0 + 9.0 + 36.0) / 4.0) as f32).sqrt());
    }

    #[test]
    fn csv_quoting() {
        let mut v = Vec::new();
        write_csv_field(&mut v, b"a,\"b\"").unwrap();
        assert_eq!(v, b"\"a,\"\"b\"\"\"");
    }
}
