//! What the CRC32 check costs on read: inflates every BGZF block of a file
//! on one thread, then computes only the CRC32 of the inflated data, in
//! alternating passes, and prints the CPU seconds of each and the CRC's
//! share of "inflate + check" (what every read pays).
//!
//! `cargo run --release --example crc_cost -- IN.bam [PASSES]` (default 5).

use fasthts::bgzf::Block;

/// CPU seconds used by this thread so far.
fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage on the calling thread into a zeroed out-struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: crc_cost IN.bam [PASSES]")?;
    let passes: usize = args.next().map_or(Ok(5), |s| s.parse())?;
    let bytes = std::fs::read(&path)?;
    let mut blocks = Vec::new();
    let mut off = 0u64;
    while off < bytes.len() as u64 {
        let b = Block::parse(&bytes, off)?;
        off = b.next_offset();
        blocks.push(b);
    }
    let total: usize = blocks.iter().map(|b| b.uncompressed_size as usize).sum();
    let mut out = vec![0u8; total];
    let mut d = libdeflater::Decompressor::new();
    let (mut with_check, mut crc_only) = (Vec::new(), Vec::new());
    for _ in 0..passes {
        let t = thread_cpu_seconds();
        let mut at = 0;
        for b in &blocks {
            let n = b.uncompressed_size as usize;
            b.inflate_into(&bytes, &mut d, &mut out[at..at + n])?;
            at += n;
        }
        with_check.push(thread_cpu_seconds() - t);
        let t = thread_cpu_seconds();
        let mut at = 0;
        let mut x = 0u32;
        for b in &blocks {
            let n = b.uncompressed_size as usize;
            x ^= libdeflater::crc32(&out[at..at + n]);
            at += n;
        }
        std::hint::black_box(x);
        crc_only.push(thread_cpu_seconds() - t);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (inflate, crc) = (median(&mut with_check), median(&mut crc_only));
    println!(
        "{path}\tblocks={}\tcompressed={}\tuncompressed={total}\tinflate+crc_cpu_s={inflate:.3}\tcrc_cpu_s={crc:.3}\tcrc_share={:.1}%\tcrc_GB_per_s={:.1}",
        blocks.len(),
        bytes.len(),
        100.0 * crc / inflate,
        total as f64 / crc / 1e9
    );
    Ok(())
}
