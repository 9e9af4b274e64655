//! abundance-dist: the histogram of the counts of distinct k-mers, and its
//! CSV.

use crate::hash::{hashes_into, Cleaning};
use crate::seqio::SeqError;
use crate::table::{Countgraph, Nodegraph};
use std::io::{self, Write};

/// abundance-dist's histogram: for each k-mer of each read (C++ cleaning) in
/// order, skip it if a Bloom filter with the graph's table sizes says
/// "seen", else mark it and count `hist[graph.get(h)]`. Index 0..=65535.
///
/// With `threads` ≥ 2 the count lookups of a batch run on a second thread
/// while this one does the (order-dependent) Bloom tests; the histogram is
/// the same.
pub fn abundance_histogram(graph: &Countgraph, path: &str, threads: usize) -> Result<Vec<u64>, SeqError> {
    let mut tracking = Nodegraph::with_sizes(graph.sizes());
    let mut hist = vec![0u64; 65536];
    let rx = crate::seqio::spawn_reader(path, 4);
    let k = graph.ksize();
    let mut hashes = Vec::new();
    let mut seen = Vec::new();
    for msg in rx {
        let b = msg?;
        hashes.clear();
        for (i, r) in b.iter().enumerate() {
            if r.seq.is_empty() {
                // the k-mers before the bad record still count (as in khmer,
                // which fails at this point)
                return Err(SeqError {
                    msg: format!("{path}: record {}: Sequence is empty", b.first_record + i as u64 + 1),
                    empty_sequence: true,
                });
            }
            hashes_into(r.seq, k, Cleaning::CppParser, &mut hashes);
        }
        if threads <= 1 {
            graph.abundance_update(&mut tracking, &hashes, &mut hist);
        } else {
            seen.clear();
            let hs = &hashes;
            let counts = std::thread::scope(|s| {
                let h = s.spawn(|| {
                    let mut c = Vec::with_capacity(hs.len());
                    graph.get_many(hs, &mut c);
                    c
                });
                tracking.test_and_set_many(hs, &mut seen);
                h.join().unwrap()
            });
            for (&sn, &c) in seen.iter().zip(&counts) {
                if !sn {
                    hist[c as usize] += 1;
                }
            }
        }
    }
    Ok(hist)
}

/// Write abundance-dist's CSV (Python `csv.writer`, `\r\n` line ends).
/// Returns false (writing only the header) when the histogram is empty, which
/// khmer treats as an error.
pub fn write_abundance_csv<W: Write + ?Sized>(hist: &[u64], no_zero: bool, w: &mut W) -> io::Result<bool> {
    // khmer passes bins 0..65534 only (a count of 65535 is dropped)
    let hist = &hist[..hist.len().min(65535)];
    let total: u64 = hist.iter().sum();
    w.write_all(b"abundance,count,cumulative,cumulative_fraction\r\n")?;
    if total == 0 {
        return Ok(false);
    }
    let mut cumulative = 0u64;
    for (a, &count) in hist.iter().enumerate() {
        if count == 0 && no_zero {
            continue;
        }
        cumulative += count;
        let frac = crate::pyfmt::py_round_repr(cumulative as f64 / total as f64, 3);
        writeln!(w, "{a},{count},{cumulative},{frac}\r")?;
        if cumulative == total {
            break;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_format() {
        let mut h = vec![0u64; 65536];
        h[1] = 3;
        h[2] = 1;
        let mut v = Vec::new();
        write_abundance_csv(&h, false, &mut v).unwrap();
        assert_eq!(
            String::from_utf8(v).unwrap(),
            "abundance,count,cumulative,cumulative_fraction\r\n0,0,0,0.0\r\n1,3,3,0.75\r\n2,1,4,1.0\r\n"
        );
        let mut v = Vec::new();
        write_abundance_csv(&h, true, &mut v).unwrap();
        assert_eq!(String::from_utf8(v).unwrap(), "abundance,count,cumulative,cumulative_fraction\r\n1,3,3,0.75\r\n2,1,4,1.0\r\n");
    }
}
