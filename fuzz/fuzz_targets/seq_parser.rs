//! FASTA/FASTQ parser (fasthts-kmer's `SeqReader`), with small batches so
//! records straddle refills; gzip input is inflated as `open_input` does.
//! Every record's k-mers are hashed as the counting scripts do.
#![no_main]

use fasthts_kmer::seqio::SeqReader;
use fasthts_kmer::{Cleaning, KmerIter};
use libfuzzer_sys::fuzz_target;
use std::io::Read;

fuzz_target!(|data: &[u8]| {
    let src: Box<dyn Read + Send> = if data.starts_with(&[0x1f, 0x8b]) {
        Box::new(fasthts_kmer::flate2::read::MultiGzDecoder::new(std::io::Cursor::new(data.to_vec())))
    } else {
        Box::new(std::io::Cursor::new(data.to_vec()))
    };
    let mut reader = SeqReader::from_reader(src, "fuzz").with_batch_bytes(1024);
    let mut total = 0usize;
    while let Ok(Some(batch)) = reader.next_batch() {
        for r in batch.iter() {
            if let Some(q) = r.qual {
                assert_eq!(q.len(), r.seq.len(), "FASTQ record accepted with unequal sequence and quality");
            }
            total += r.name.len();
            for k in [4u32, 20] {
                for h in KmerIter::new(r.seq, k, Cleaning::CppParser) {
                    total = total.wrapping_add(h as usize);
                }
            }
        }
        if total > 1 << 40 {
            break;
        }
    }
    std::hint::black_box(total);
});
