//! The physical limit of a BAM job: inflate every BGZF block of a file on one
//! thread (with the CRC32 check fasthts always does), as fast as possible.
//!
//! `cargo run --release --example inflate_bound -- IN.bam [REPEATS]` prints the
//! uncompressed size, the median time of REPEATS passes (default 3) and the
//! throughput in MB/s of uncompressed output per core.

use fasthts::bgzf::Block;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: inflate_bound IN.bam [REPEATS]")?;
    let repeats: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let file = std::fs::File::open(&path)?;
    // SAFETY: read-only map of a file this benchmark does not modify.
    let map = unsafe { memmap2::Mmap::map(&file)? };
    let mut blocks = Vec::new();
    let mut off = 0u64;
    while off < map.len() as u64 {
        let b = Block::parse(&map, off)?;
        off = b.next_offset();
        blocks.push(b);
    }
    let total: u64 = blocks.iter().map(|b| u64::from(b.uncompressed_size)).sum();
    let mut out = vec![0u8; 1 << 16];
    let mut d = libdeflater::Decompressor::new();
    let mut times = Vec::new();
    for _ in 0..repeats {
        let t = Instant::now();
        for b in &blocks {
            b.inflate_into(&map, &mut d, &mut out[..b.uncompressed_size as usize])?;
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{path}\tblocks={}\tcompressed={}\tuncompressed={total}\tmedian_s={median:.3}\tMB_per_s={:.0}",
        blocks.len(),
        map.len(),
        total as f64 / median / 1e6
    );
    Ok(())
}
