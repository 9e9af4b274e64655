//! Output size and single-thread speed of BGZF compression at each
//! libdeflate level, on the uncompressed stream of a BAM: which level gives
//! output within a tolerance of samtools' for the least CPU.
//!
//! `cargo run --release --example deflate_levels -- IN.bam`

use fasthts::bgzf::BLOCK_DATA_SIZE;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: deflate_levels IN.bam")?;
    let data = fasthts::bgzf::decompress_all(&std::fs::read(&path)?)?;
    let mut out = Vec::new();
    println!("libdeflate_level\tbytes\tseconds\tMB_per_s");
    for level in 1..=12 {
        let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).expect("1..=12"));
        out.resize(1 << 16, 0);
        let t = Instant::now();
        let mut total = 0usize;
        for chunk in data.chunks(BLOCK_DATA_SIZE) {
            // Deflate payload plus BGZF's 26 bytes of header and trailer.
            total += c.deflate_compress(chunk, &mut out)? + 26;
        }
        let s = t.elapsed().as_secs_f64();
        println!("{level}\t{total}\t{s:.3}\t{:.1}", data.len() as f64 / s / 1e6);
    }
    Ok(())
}
