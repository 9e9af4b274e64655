//! Records whose CIGAR is held in a `CG:B,I` tag (more than 65,535
//! operations, as long-read aligners write them): htslib moves the tag
//! into the CIGAR as it reads a record and back when it writes BAM, so
//! `view -x CG`, `-x ^TAGS` and `--keep-tag` keep the alignment, a `CG`
//! field in the middle of the tags moves to the end, and one of no more
//! than 65,535 operations becomes the CIGAR. Compared with samtools 1.16
//! on a BAM written byte by byte (samtools itself only writes the
//! canonical form), for view (SAM and BAM, whole file and regions), sort
//! and depth.

use crate::common::*;
use crate::view::compare_on;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// A CIGAR as (length, operation letter) pairs, BAM-encoded.
fn encode_cigar(ops: &[(u32, u8)]) -> Vec<u8> {
    ops.iter().flat_map(|&(n, op)| (n << 4 | b"MIDNSHP=X".iter().position(|&c| c == op).unwrap() as u32).to_le_bytes()).collect()
}

fn sum(ops: &[(u32, u8)], letters: &[u8]) -> u32 {
    ops.iter().filter(|(_, op)| letters.contains(op)).map(|(n, _)| n).sum()
}

/// The SAM spec's reg2bin for `[beg, end)`.
fn reg2bin(beg: u32, end: u32) -> u16 {
    let end = end - 1;
    for (shift, offset) in [(14, 4681), (17, 585), (20, 73), (23, 9), (26, 1)] {
        if beg >> shift == end >> shift {
            return (offset + (beg >> shift)) as u16;
        }
    }
    0
}

fn cg_field(subtype: u8, ops: &[(u32, u8)]) -> Vec<u8> {
    let mut f = vec![b'C', b'G', b'B', subtype];
    f.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    f.extend_from_slice(&encode_cigar(ops));
    f
}

/// One placed BAM record (with its `block_size`) whose stored CIGAR is
/// `stored` and whose sequence fits `real`.
fn record(name: &str, pos: u32, stored: &[(u32, u8)], real: &[(u32, u8)], tags: &[Vec<u8>], seed: &mut u64) -> Vec<u8> {
    let l_seq = sum(real, b"MIS=X");
    let mut body = Vec::new();
    let name = [name.as_bytes(), b"\0"].concat();
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&pos.to_le_bytes());
    body.push(name.len() as u8);
    body.push(60);
    body.extend_from_slice(&reg2bin(pos, pos + sum(real, b"MDN=X").max(1)).to_le_bytes());
    body.extend_from_slice(&(stored.len() as u16).to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&l_seq.to_le_bytes());
    body.extend_from_slice(&(-1i32).to_le_bytes());
    body.extend_from_slice(&(-1i32).to_le_bytes());
    body.extend_from_slice(&0i32.to_le_bytes());
    body.extend_from_slice(&name);
    body.extend_from_slice(&encode_cigar(stored));
    for _ in 0..l_seq.div_ceil(2) {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let base = |k: u64| [1u8, 2, 4, 8][(k & 3) as usize];
        body.push(base(*seed >> 33) << 4 | base(*seed >> 40));
    }
    body.extend(std::iter::repeat(30u8).take(l_seq as usize));
    for t in tags {
        body.extend_from_slice(t);
    }
    [(body.len() as u32).to_le_bytes().to_vec(), body].concat()
}

/// `<l_seq>S<ref_len>N`, the placeholder htslib writes.
fn placeholder(real: &[(u32, u8)]) -> Vec<(u32, u8)> {
    vec![(sum(real, b"MIS=X"), b'S'), (sum(real, b"MDN=X"), b'N')]
}

/// A coordinate-sorted, indexed BAM of records with CIGARs in CG tags in
/// every form htslib reads, and the directory holding it.
fn odd_bam() -> Option<(TempDir, PathBuf)> {
    let dir = with_samtools("long-cigars")?;
    let text = b"@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:2000000\n";
    let mut raw = b"BAM\x01".to_vec();
    raw.extend_from_slice(&(text.len() as u32).to_le_bytes());
    raw.extend_from_slice(text);
    raw.extend_from_slice(&1u32.to_le_bytes());
    raw.extend_from_slice(&5u32.to_le_bytes());
    raw.extend_from_slice(b"chr1\0");
    raw.extend_from_slice(&2_000_000u32.to_le_bytes());
    let seed = &mut 7u64;
    let int_tag = |t: &[u8; 2], v: i32| [&t[..], b"i", &v.to_le_bytes()].concat();
    let text_tag = |t: &[u8; 2], v: &str| [&t[..], b"Z", v.as_bytes(), b"\0"].concat();
    // 70,001 operations, the CG field between two others.
    let mut long: Vec<(u32, u8)> = (0..35_000).flat_map(|_| [(1, b'M'), (1, b'D')]).collect();
    long.push((5, b'M'));
    raw.extend(record("middle", 100, &placeholder(&long), &long, &[int_tag(b"NM", 3), cg_field(b'I', &long), text_tag(b"XA", "a")], seed));
    // Five operations held in CG: htslib writes them as the CIGAR.
    let short = [(10, b'M'), (2, b'I'), (10, b'M'), (3, b'D'), (5, b'M')];
    raw.extend(record("short", 200, &placeholder(&short), &short, &[text_tag(b"XA", "x"), cg_field(b'I', &short), int_tag(b"NM", 1)], seed));
    // A CG shorter than the placeholder is a tag like any other.
    let stored = [(27, b'S'), (27, b'N')];
    raw.extend(record("tag", 300, &stored, &stored, &[cg_field(b'I', &[(27, b'M')]), int_tag(b"NM", 0)], seed));
    // A placeholder whose N disagrees with the real CIGAR's length.
    let wrong: Vec<(u32, u8)> = (0..33_000).flat_map(|_| [(2, b'M'), (1, b'I')]).collect();
    raw.extend(record("wrong_n", 400, &[(99_000, b'S'), (5, b'N')], &wrong, &[cg_field(b'I', &wrong), text_tag(b"RG", "g")], seed));
    // CG:B:i (signed) counts too.
    let signed = [(3, b'M'), (1, b'D'), (4, b'M')];
    raw.extend(record("signed", 500, &placeholder(&signed), &signed, &[cg_field(b'i', &signed)], seed));
    raw.extend(record("plain", 600, &[(20, b'M')], &[(20, b'M')], &[int_tag(b"NM", 0)], seed));
    let bam = dir.path("odd.bam");
    let mut w = fasthts::bgzf::BgzfWriter::new(std::fs::File::create(&bam).unwrap(), 6);
    w.write_all(&raw).unwrap();
    w.finish().unwrap();
    let mut index = Command::new("samtools");
    index.arg("index").arg(&bam);
    assert!(run(index).status.success());
    Some((dir, bam))
}

#[test]
fn view_keeps_cigars_held_in_cg_tags_as_samtools_does() {
    let Some((_dir, bam)) = odd_bam() else { return };
    let sets: &[&[&str]] = &[
        &[],
        &["-u"],
        &["-x", "CG"],
        &["-u", "-x", "CG"],
        &["-x", "^NM"],
        &["-u", "-x", "^NM,XA"],
        &["--keep-tag", "NM"],
        &["-u", "--remove-tag", "NM,CG"],
        &["-u", "-p", "-q", "100"],
        &["-e", "ncigar > 3"],
        &["-c", "-e", "ncigar == 1"],
        // htslib took the CG tag out as it moved the CIGAR; the one left
        // (shorter than the placeholder) is a B array, which -e fails on.
        &["-e", "!exists([CG])"],
        &["-c", "-e", "[CG] || 1"],
        &["-e", "length(cigar) > 50 || cigar =~ \"^10M2I\" || rlen > 1000"],
    ];
    let mut lines = 0;
    for options in sets {
        lines += compare_on(options, &bam, &[]);
        compare_on(options, &bam, &["chr1:150-450", "chr1:600"]);
    }
    assert!(lines >= 30, "too little compared: {lines} lines");
}

#[test]
fn sort_and_depth_read_cigars_held_in_cg_tags_as_samtools_does() {
    let Some((dir, bam)) = odd_bam() else { return };
    for order in [&[][..], &["-n"]] {
        let (ours, theirs) = (dir.path("ours.bam"), dir.path("theirs.bam"));
        let mut sam = Command::new("samtools");
        sam.args(["sort", "--no-PG"]).args(order).arg("-o").arg(&theirs).arg(&bam);
        assert!(run(sam).status.success());
        let mut fast = fasthts();
        fast.args(["sort", "--no-PG"]).args(order).arg("-o").arg(&ours).arg(&bam);
        let out = run(fast);
        assert!(out.status.success(), "sort {order:?}: {}", text(&out.stderr));
        let read = |p: &PathBuf| fasthts::bgzf::decompress_all(&std::fs::read(p).unwrap()).unwrap();
        assert!(read(&ours) == read(&theirs), "sort {order:?}: records differ from samtools'");
    }
    let mut sam = Command::new("samtools");
    sam.args(["depth", "-a"]).arg(&bam);
    let expected = run(sam);
    let mut fast = fasthts();
    fast.args(["depth", "-a"]).arg(&bam);
    let got = run(fast);
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert!(expected.stdout.len() > 1000 && got.stdout == expected.stdout, "depth -a differs from samtools'");
}
