//! The text samtools stats 1.16 prints (`output_stats`), byte for byte:
//! its C `printf` conversions of `float`s and `double`s (Rust's `{:.N}`
//! rounds the exact binary value to nearest, ties to even, as glibc does;
//! `%e` is built from Rust's `{:e}`), its `float` arithmetic kept in `f32`.

use super::{Stats, StatsSettings, N_GC, N_QUALS};
use std::io::Write;

/// The words of the first lines (MultiQC recognises the file by
/// "This file was produced by samtools stats").
pub struct Preamble<'a> {
    /// What produced it, in the parentheses of the first line.
    pub producer: &'a str,
    /// The command line, as the third line gives it.
    pub command_line: &'a str,
    /// `-S`'s tag.
    pub split_tag: Option<[u8; 2]>,
}

/// C's `%e`: six digits after the point, an exponent of at least two digits.
fn c_exp(x: f64) -> String {
    let s = format!("{x:.6e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = exp.strip_prefix('-').map_or(('+', exp), |d| ('-', d));
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// C's `%.3f` of a `float`, `inf` and `nan` as glibc prints them.
fn c_fixed3(x: f32) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    format!("{:.3}", f64::from(x))
}

/// samtools' `gcd_percentile`, in `float` as it computes it.
fn gcd_percentile(depths: &[super::GcDepth], p: i32) -> f32 {
    let n_bins = depths.len() as i32;
    let n = p as f32 * (n_bins + 1) as f32 / 100.0;
    let k = n as i32;
    if k <= 0 {
        return depths[0].depth as f32;
    }
    if k >= n_bins {
        return depths[n_bins as usize - 1].depth as f32;
    }
    let d = n - k as f32;
    let (lo, hi) = (depths[k as usize - 1].depth, depths[k as usize].depth);
    lo as f32 + d * hi.wrapping_sub(lo) as f32
}

/// Writes the statistics as samtools prints them (after its last flush of
/// the coverage window: [`Stats::finish`]).
pub fn write_stats(out: &mut impl Write, stats: &mut Stats, settings: &StatsSettings, preamble: &Preamble<'_>) -> std::io::Result<()> {
    let s = stats;
    // Insert sizes: the main bulk, its mean and deviation.
    let n_items = s.isize.n_items();
    let (mut n_inward, mut n_outward, mut n_other, mut n_isize) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..n_items.max(0) {
        let [a, b, c] = s.isize.halved(i);
        n_inward += a;
        n_outward += b;
        n_other += c;
        n_isize += a + b + c;
    }
    let (mut ibulk, mut bulk, mut avg_isize, mut sd_isize) = (0i32, 0f64, 0f64, 0f64);
    for i in 0..n_items.max(0) {
        let [a, b, c] = s.isize.halved(i);
        let num = a + b + c;
        if num > 0 {
            ibulk = i + 1;
        }
        bulk += num as f64;
        avg_isize += (i as u64).wrapping_mul(num) as f64;
        if bulk / n_isize as f64 > f64::from(settings.main_bulk) {
            ibulk = i + 1;
            n_isize = bulk as u64;
            break;
        }
    }
    let divisor = if n_isize != 0 { n_isize } else { 1 } as f64;
    avg_isize /= divisor;
    for i in 1..ibulk {
        let [a, b, c] = s.isize.halved(i);
        let d = f64::from(i) - avg_isize;
        sd_isize += (a + b + c) as f64 * d * d / divisor;
    }
    let sd_isize = sd_isize.sqrt();

    writeln!(out, "# This file was produced by samtools stats ({}) and can be plotted using plot-bamstats", preamble.producer)?;
    match (&s.split_name, preamble.split_tag) {
        (Some(name), Some(tag)) => {
            out.write_all(b"# This file contains statistics only for reads with tag: ")?;
            out.write_all(&tag)?;
            out.write_all(b"=")?;
            out.write_all(name)?;
            out.write_all(b"\n")?;
        }
        _ => writeln!(out, "# This file contains statistics for all reads.")?,
    }
    writeln!(out, "# The command line was:  {}", preamble.command_line)?;
    writeln!(out, "# CHK, Checksum\t[2]Read Names\t[3]Sequences\t[4]Qualities")?;
    writeln!(out, "# CHK, CRC32 of reads which passed filtering followed by addition (32bit overflow)")?;
    writeln!(out, "CHK\t{:08x}\t{:08x}\t{:08x}", s.checksum[0], s.checksum[1], s.checksum[2])?;
    writeln!(out, "# Summary Numbers. Use `grep ^SN | cut -f 2-` to extract this part.")?;
    let nreads = s.nreads_1st + s.nreads_2nd + s.nreads_other;
    writeln!(out, "SN\traw total sequences:\t{}\t# excluding supplementary and secondary reads", s.nreads_filtered + nreads)?;
    writeln!(out, "SN\tfiltered sequences:\t{}", s.nreads_filtered)?;
    writeln!(out, "SN\tsequences:\t{nreads}")?;
    writeln!(out, "SN\tis sorted:\t{}", u8::from(s.is_sorted))?;
    writeln!(out, "SN\t1st fragments:\t{}", s.nreads_1st)?;
    writeln!(out, "SN\tlast fragments:\t{}", s.nreads_2nd)?;
    writeln!(out, "SN\treads mapped:\t{}", s.nreads_paired_and_mapped + s.nreads_single_mapped)?;
    writeln!(out, "SN\treads mapped and paired:\t{}\t# paired-end technology bit set + both mates mapped", s.nreads_paired_and_mapped)?;
    writeln!(out, "SN\treads unmapped:\t{}", s.nreads_unmapped)?;
    writeln!(out, "SN\treads properly paired:\t{}\t# proper-pair bit set", s.nreads_properly_paired)?;
    writeln!(out, "SN\treads paired:\t{}\t# paired-end technology bit set", s.nreads_paired_tech)?;
    writeln!(out, "SN\treads duplicated:\t{}\t# PCR or optical duplicate bit set", s.nreads_dup)?;
    writeln!(out, "SN\treads MQ0:\t{}\t# mapped and MQ=0", s.nreads_mq0)?;
    writeln!(out, "SN\treads QC failed:\t{}", s.nreads_qcfailed)?;
    writeln!(out, "SN\tnon-primary alignments:\t{}", s.nreads_secondary)?;
    writeln!(out, "SN\tsupplementary alignments:\t{}", s.nreads_supplementary)?;
    writeln!(out, "SN\ttotal length:\t{}\t# ignores clipping", s.total_len)?;
    writeln!(out, "SN\ttotal first fragment length:\t{}\t# ignores clipping", s.total_len_1st)?;
    writeln!(out, "SN\ttotal last fragment length:\t{}\t# ignores clipping", s.total_len_2nd)?;
    writeln!(out, "SN\tbases mapped:\t{}\t# ignores clipping", s.nbases_mapped)?;
    writeln!(out, "SN\tbases mapped (cigar):\t{}\t# more accurate", s.nbases_mapped_cigar as i64)?;
    writeln!(out, "SN\tbases trimmed:\t{}", s.nbases_trimmed)?;
    writeln!(out, "SN\tbases duplicated:\t{}", s.total_len_dup)?;
    writeln!(out, "SN\tmismatches:\t{}\t# from NM fields", s.nmismatches as i64)?;
    let error_rate = if s.nbases_mapped_cigar != 0 { s.nmismatches as f32 / s.nbases_mapped_cigar as f32 } else { 0.0 };
    writeln!(out, "SN\terror rate:\t{}\t# mismatches / bases mapped (cigar)", c_exp(f64::from(error_rate)))?;
    let avg_read_length: f32 = s.total_len.checked_div(nreads).map_or(0.0, |avg| avg as f32);
    writeln!(out, "SN\taverage length:\t{:.0}", f64::from(avg_read_length))?;
    let avg = |total: u64, n: u64| if n != 0 { f64::from(total as f32 / n as f32) } else { 0.0 };
    writeln!(out, "SN\taverage first fragment length:\t{:.0}", avg(s.total_len_1st, s.nreads_1st))?;
    writeln!(out, "SN\taverage last fragment length:\t{:.0}", avg(s.total_len_2nd, s.nreads_2nd))?;
    writeln!(out, "SN\tmaximum length:\t{}", s.max_len)?;
    writeln!(out, "SN\tmaximum first fragment length:\t{}", s.max_len_1st)?;
    writeln!(out, "SN\tmaximum last fragment length:\t{}", s.max_len_2nd)?;
    let avg_qual = if s.total_len != 0 { s.sum_qual / s.total_len as f64 } else { 0.0 };
    writeln!(out, "SN\taverage quality:\t{avg_qual:.1}")?;
    writeln!(out, "SN\tinsert size average:\t{avg_isize:.1}")?;
    writeln!(out, "SN\tinsert size standard deviation:\t{sd_isize:.1}")?;
    writeln!(out, "SN\tinward oriented pairs:\t{n_inward}")?;
    writeln!(out, "SN\toutward oriented pairs:\t{n_outward}")?;
    writeln!(out, "SN\tpairs with other orientation:\t{n_other}")?;
    writeln!(out, "SN\tpairs on different chromosomes:\t{}", s.nreads_anomalous / 2)?;
    let proper = if nreads != 0 { f64::from((100 * s.nreads_properly_paired) as f32 / nreads as f32) } else { 0.0 };
    writeln!(out, "SN\tpercentage of properly paired reads (%):\t{proper:.1}")?;
    if s.target_count != 0 {
        writeln!(out, "SN\tbases inside the target:\t{}", s.target_count)?;
        let from = (settings.cov_threshold + 1).max(0) as usize;
        let cov_sum: u64 = s.cov.iter().skip(from).sum();
        let pct = (100u64.wrapping_mul(cov_sum)) as f32 / s.target_count as f32;
        writeln!(out, "SN\tpercentage of target genome with coverage > {} (%):\t{:.2}", settings.cov_threshold, f64::from(pct))?;
    }

    let mut max_len = s.max_len;
    if (max_len as i64) < s.nbases as i64 {
        max_len += 1;
    }
    let mut max_qual = s.max_qual;
    if max_qual + 1 < N_QUALS as i32 {
        max_qual += 1;
    }
    let quals_rows = |out: &mut dyn Write, key: &str, hist: &[u64], rows: i32| -> std::io::Result<()> {
        let mut line = Vec::with_capacity(4096);
        for i in 0..rows.max(0) as usize {
            line.clear();
            write!(line, "{key}\t{}", i + 1)?;
            for q in 0..=max_qual as usize {
                write!(line, "\t{}", hist.get(i * N_QUALS + q).copied().unwrap_or(0))?;
            }
            line.push(b'\n');
            out.write_all(&line)?;
        }
        Ok(())
    };
    writeln!(out, "# First Fragment Qualities. Use `grep ^FFQ | cut -f 2-` to extract this part.")?;
    writeln!(out, "# Columns correspond to qualities and rows to cycles. First column is the cycle number.")?;
    let quals_1st: Vec<u64> = (0..s.nbases).flat_map(|i| (0..N_QUALS).map(move |q| (i, q))).map(|(i, q)| s.quals_1st.get(i, q)).collect();
    quals_rows(out, "FFQ", &quals_1st, s.max_len_1st)?;
    writeln!(out, "# Last Fragment Qualities. Use `grep ^LFQ | cut -f 2-` to extract this part.")?;
    writeln!(out, "# Columns correspond to qualities and rows to cycles. First column is the cycle number.")?;
    let quals_2nd: Vec<u64> = (0..s.nbases).flat_map(|i| (0..N_QUALS).map(move |q| (i, q))).map(|(i, q)| s.quals_2nd.get(i, q)).collect();
    quals_rows(out, "LFQ", &quals_2nd, s.max_len_2nd)?;
    if let Some(mpc) = &s.mpc {
        writeln!(out, "# Mismatches per cycle and quality. Use `grep ^MPC | cut -f 2-` to extract this part.")?;
        writeln!(out, "# Columns correspond to qualities, rows to cycles. First column is the cycle number, second")?;
        writeln!(out, "# is the number of N's and the rest is the number of mismatches")?;
        quals_rows(out, "MPC", mpc, max_len)?;
    }
    let gc_rows = |out: &mut dyn Write, key: &str, gc: &[u64]| -> std::io::Result<()> {
        let mut prev = 0;
        for i in 0..N_GC {
            if gc[i] == gc[prev] {
                continue;
            }
            writeln!(out, "{key}\t{:.2}\t{}", (i + prev) as f64 * 0.5 * 100.0 / (N_GC - 1) as f64, gc[prev])?;
            prev = i;
        }
        Ok(())
    };
    writeln!(out, "# GC Content of first fragments. Use `grep ^GCF | cut -f 2-` to extract this part.")?;
    gc_rows(out, "GCF", &s.gc_1st)?;
    writeln!(out, "# GC Content of last fragments. Use `grep ^GCL | cut -f 2-` to extract this part.")?;
    gc_rows(out, "GCL", &s.gc_2nd)?;
    let pct = |x: u64, sum: u64| 100.0 * x as f64 / sum as f64;
    let cycles = max_len.max(0) as usize;
    let (cycles_1st, cycles_2nd, revcomp) = (s.cycles(false), s.cycles(true), s.read_oriented());
    writeln!(out, "# ACGT content per cycle. Use `grep ^GCC | cut -f 2-` to extract this part. The columns are: cycle; A,C,G,T base counts as a percentage of all A/C/G/T bases [%]; and N and O counts as a percentage of all A/C/G/T bases [%]")?;
    for i in 0..cycles.min(cycles_1st.len()) {
        let (f, l) = (&cycles_1st[i], &cycles_2nd[i]);
        let sum = f.a + f.c + f.g + f.t + l.a + l.c + l.g + l.t;
        if sum == 0 {
            continue;
        }
        writeln!(
            out,
            "GCC\t{}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}",
            i + 1,
            pct(f.a + l.a, sum),
            pct(f.c + l.c, sum),
            pct(f.g + l.g, sum),
            pct(f.t + l.t, sum),
            pct(f.n + l.n, sum),
            pct(f.other + l.other, sum)
        )?;
    }
    writeln!(out, "# ACGT content per cycle, read oriented. Use `grep ^GCT | cut -f 2-` to extract this part. The columns are: cycle; A,C,G,T base counts as a percentage of all A/C/G/T bases [%]")?;
    for (i, c) in revcomp.iter().enumerate().take(cycles) {
        let sum = c.a + c.c + c.g + c.t;
        if sum == 0 {
            continue;
        }
        writeln!(out, "GCT\t{}\t{:.2}\t{:.2}\t{:.2}\t{:.2}", i + 1, pct(c.a, sum), pct(c.c, sum), pct(c.g, sum), pct(c.t, sum))?;
    }
    for (key, total_key, which, counts) in [("FBC", "FTC", "first", &cycles_1st), ("LBC", "LTC", "last", &cycles_2nd)] {
        writeln!(out, "# ACGT content per cycle for {which} fragments. Use `grep ^{key} | cut -f 2-` to extract this part. The columns are: cycle; A,C,G,T base counts as a percentage of all A/C/G/T bases [%]; and N and O counts as a percentage of all A/C/G/T bases [%]")?;
        let mut totals = [0u64; 5];
        for (i, c) in counts.iter().enumerate().take(cycles) {
            totals[0] += c.a;
            totals[1] += c.c;
            totals[2] += c.g;
            totals[3] += c.t;
            totals[4] += c.n;
            let sum = c.a + c.c + c.g + c.t;
            if sum != 0 {
                writeln!(
                    out,
                    "{key}\t{}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}",
                    i + 1,
                    pct(c.a, sum),
                    pct(c.c, sum),
                    pct(c.g, sum),
                    pct(c.t, sum),
                    pct(c.n, sum),
                    pct(c.other, sum)
                )?;
            }
        }
        writeln!(out, "# ACGT raw counters for {which} fragments. Use `grep ^{total_key} | cut -f 2-` to extract this part. The columns are: A,C,G,T,N base counters")?;
        writeln!(out, "{total_key}\t{}\t{}\t{}\t{}\t{}", totals[0], totals[1], totals[2], totals[3], totals[4])?;
    }
    for b in &s.barcodes {
        if b.bases.is_empty() {
            continue;
        }
        let tag = String::from_utf8_lossy(&b.tag);
        let qual_tag = String::from_utf8_lossy(&b.qual_tag);
        let place = |i: usize| {
            if b.separator < 0 || (i as i32) < b.separator {
                (1, i as i32 + 1)
            } else {
                (2, i as i32 - b.separator)
            }
        };
        writeln!(out, "# ACGT content per cycle for barcodes. Use `grep ^{tag}C | cut -f 2-` to extract this part. The columns are: cycle; A,C,G,T base counts as a percentage of all A/C/G/T bases [%]; and N counts as a percentage of all A/C/G/T bases [%]")?;
        for (i, c) in b.bases.iter().enumerate() {
            if i as i32 == b.separator {
                continue;
            }
            let sum = c.a + c.c + c.g + c.t;
            if sum != 0 {
                let (part, cycle) = place(i);
                writeln!(
                    out,
                    "{tag}C{part}\t{cycle}\t{:.2}\t{:.2}\t{:.2}\t{:.2}\t{:.2}",
                    pct(c.a, sum),
                    pct(c.c, sum),
                    pct(c.g, sum),
                    pct(c.t, sum),
                    pct(c.n, sum)
                )?;
            }
        }
        writeln!(out, "# Barcode Qualities. Use `grep ^{qual_tag}Q | cut -f 2-` to extract this part.")?;
        writeln!(out, "# Columns correspond to qualities and rows to barcode cycles. First column is the cycle number.")?;
        for i in 0..b.bases.len() {
            if i as i32 == b.separator {
                continue;
            }
            let (part, cycle) = place(i);
            write!(out, "{qual_tag}Q{part}\t{cycle}")?;
            for q in 0..=b.max_qual {
                write!(out, "\t{}", b.quals[i * N_QUALS + q as usize])?;
            }
            writeln!(out)?;
        }
    }
    writeln!(out, "# Insert sizes. Use `grep ^IS | cut -f 2-` to extract this part. The columns are: insert size, pairs total, inward oriented pairs, outward oriented pairs, other pairs")?;
    for i in 0..ibulk {
        let [a, b, c] = s.isize.halved(i);
        if !settings.sparse || a + b + c > 0 {
            writeln!(out, "IS\t{i}\t{}\t{a}\t{b}\t{c}", a + b + c)?;
        }
    }
    for (key, what, lengths, max) in [
        ("RL", "Read lengths", &s.read_lengths, max_len),
        ("FRL", "Read lengths - first fragments", &s.read_lengths_1st, s.max_len_1st),
        ("LRL", "Read lengths - last fragments", &s.read_lengths_2nd, s.max_len_2nd),
    ] {
        writeln!(out, "# {what}. Use `grep ^{key} | cut -f 2-` to extract this part. The columns are: read length, count")?;
        for len in 1..=max.max(0) as usize {
            if let Some(&n) = lengths.get(len).filter(|&&n| n > 0) {
                writeln!(out, "{key}\t{len}\t{n}")?;
            }
        }
    }
    writeln!(out, "# Indel distribution. Use `grep ^ID | cut -f 2-` to extract this part. The columns are: length, number of insertions, number of deletions")?;
    for i in 0..super::INITIAL_BASES {
        let (ins, del) = (s.insertions[i], s.deletions[i]);
        if ins > 0 || del > 0 {
            writeln!(out, "ID\t{}\t{ins}\t{del}", i + 1)?;
        }
    }
    writeln!(out, "# Indels per cycle. Use `grep ^IC | cut -f 2-` to extract this part. The columns are: cycle, number of insertions (fwd), .. (rev) , number of deletions (fwd), .. (rev)")?;
    for i in 0..=s.nbases {
        let row = [s.ins_cycles_1st[i], s.ins_cycles_2nd[i], s.del_cycles_1st[i], s.del_cycles_2nd[i]];
        if row.iter().any(|&n| n > 0) {
            writeln!(out, "IC\t{}\t{}\t{}\t{}\t{}", i + 1, row[0], row[1], row[2], row[3])?;
        }
    }
    writeln!(out, "# Coverage distribution. Use `grep ^COV | cut -f 2-` to extract this part.")?;
    let bins = super::CoverageBins::new(settings.coverage.0, settings.coverage.1, settings.coverage.2);
    let n_cov = bins.count;
    if s.cov[0] != 0 {
        writeln!(out, "COV\t[<{}]\t{}\t{}", bins.min, bins.min.wrapping_sub(1), s.cov[0])?;
    }
    for i in 1..n_cov.saturating_sub(1) {
        if s.cov[i] != 0 {
            let lo = bins.min.wrapping_add((i as i32 - 1).wrapping_mul(bins.step));
            let hi = bins.min.wrapping_add((i as i32).wrapping_mul(bins.step)).wrapping_sub(1);
            writeln!(out, "COV\t[{lo}-{hi}]\t{hi}\t{}", s.cov[i])?;
        }
    }
    if n_cov > 0 && s.cov[n_cov - 1] != 0 {
        let top = bins.min.wrapping_add((n_cov as i32 - 2).wrapping_mul(bins.step)).wrapping_sub(1);
        writeln!(out, "COV\t[{top}<]\t{top}\t{}", s.cov[n_cov - 1])?;
    }

    writeln!(out, "# GC-depth. Use `grep ^GCD | cut -f 2-` to extract this part. The columns are: GC%, unique sequence percentiles, 10th, 25th, 50th, 75th and 90th depth percentile")?;
    // samtools scales every bin but the last to a percentage, sorts them
    // all (with its unused bin 0) and prints all but the last of the sorted.
    s.last_bin_last();
    let n_gcd = s.gcd.len() - 1;
    for bin in &mut s.gcd[..n_gcd] {
        if s.mpc.is_some() {
            bin.gc = (100.0 * f64::from(bin.gc)).round_ties_even() as f32;
        } else if bin.depth != 0 {
            bin.gc = (100.0 * f64::from(bin.gc) / f64::from(bin.depth)).round_ties_even() as f32;
        }
    }
    if n_gcd > 0 {
        s.gcd.sort_by(|a, b| a.gc.partial_cmp(&b.gc).unwrap_or(std::cmp::Ordering::Equal).then(a.depth.cmp(&b.depth)));
    }
    let bin_size = settings.gcd_bin_size as f32;
    let mut i = 0;
    while i < n_gcd {
        let gc = s.gcd[i].gc;
        let mut n_bins = 0;
        while i + n_bins < n_gcd && f64::from((s.gcd[i + n_bins].gc - gc).abs()) < 0.1 {
            n_bins += 1;
        }
        let group = &s.gcd[i..i + n_bins];
        let at = |p| gcd_percentile(group, p) * avg_read_length / bin_size;
        writeln!(
            out,
            "GCD\t{:.1}\t{:.3}\t{}\t{}\t{}\t{}\t{}",
            f64::from(gc),
            (i + n_bins + 1) as f64 * 100.0 / (n_gcd + 1) as f64,
            c_fixed3(at(10)),
            c_fixed3(at(25)),
            c_fixed3(at(50)),
            c_fixed3(at(75)),
            c_fixed3(at(90))
        )?;
        i += n_bins;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::c_exp;

    #[test]
    fn exponents_are_printed_as_c_prints_them() {
        assert_eq!(c_exp(0.0), "0.000000e+00");
        assert_eq!(c_exp(0.0123456789), "1.234568e-02");
        assert_eq!(c_exp(1234.5), "1.234500e+03");
        assert_eq!(c_exp(1e-100), "1.000000e-100");
    }
}
