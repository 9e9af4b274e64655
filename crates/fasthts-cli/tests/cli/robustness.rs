//! The bad-input corpus on every command (issue 8).
//!
//! A corpus of damaged inputs is generated in a temporary directory from
//! the fixtures (nothing big is committed): BAMs truncated at many offsets,
//! with bytes flipped in block headers, compressed data, CRCs and sizes,
//! with absurd lengths and out-of-range ids and positions re-encoded into
//! valid BGZF; foreign formats, empty files, directories and missing files;
//! damaged, mismatched, missing and stale indexes; malformed VCFs; broken
//! FASTA/FASTQ; damaged k-mer tables. Every command runs on every case that
//! concerns it, each run in an empty output directory, under an
//! address-space limit and a time limit, and must:
//!
//! * fail with exit status 1 and exactly one error line on stderr
//!   (`fasthts <command>: ...`, warnings allowed before it), or succeed
//!   only where the reference tool succeeds too (samtools for the BAM
//!   commands, when installed; otherwise, and for the other commands, only
//!   the cases listed as documented successes);
//! * never panic or die of a signal, finish within `TIME_LIMIT`, stay under
//!   `RSS_LIMIT_KIB`;
//! * leave its output directory empty when it fails (no output, no
//!   temporary or run file), and holding only its outputs when it succeeds.
//!
//! The test prints `N passed, M failed` and fails unless M is 0.

use crate::common::*;
use crate::harness::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A run that takes longer is a failure (a hang, or quadratic work on bad input).
const TIME_LIMIT: Duration = Duration::from_secs(15);
/// Peak RSS allowed for any run on the (small) corpus inputs.
const RSS_LIMIT_KIB: i64 = 1 << 20;

/// What an input file is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Bam,
    /// A damaged index next to an intact BAM (the case's `file` is the BAM).
    BamIndex,
    Vcf,
    Seq,
    Table,
}

struct Case {
    name: String,
    kind: Kind,
    file: PathBuf,
    /// May succeed without a reference tool to confirm it (why, for the report).
    documented_success: Option<&'static str>,
}

struct Corpus {
    dir: TempDir,
    cases: Vec<Case>,
    good_bam: PathBuf,
    good_vcf: PathBuf,
    /// The good VCF's sites as BED, for samtools.
    good_bed: PathBuf,
    good_fastq: PathBuf,
    good_table: PathBuf,
}

fn read(p: impl AsRef<Path>) -> Vec<u8> {
    std::fs::read(p.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", p.as_ref().display()))
}

/// An uncompressed BAM stream split into its parts.
struct Parsed {
    raw: Vec<u8>,
    /// Offset of `l_text`, `n_ref`, the first `l_name`, and the first record.
    l_text_at: usize,
    n_ref_at: usize,
    first_l_name_at: usize,
    n_ref: i32,
    /// Start (block_size field) of each record.
    records: Vec<usize>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn parse_bam(raw: Vec<u8>) -> Parsed {
    let l_text = u32_at(&raw, 4) as usize;
    let n_ref_at = 8 + l_text;
    let n_ref = u32_at(&raw, n_ref_at) as i32;
    let mut p = n_ref_at + 4;
    for _ in 0..n_ref {
        p += 4 + u32_at(&raw, p) as usize + 4;
    }
    let mut records = Vec::new();
    while p + 4 <= raw.len() {
        records.push(p);
        p += 4 + u32_at(&raw, p) as usize;
    }
    Parsed { raw, l_text_at: 4, n_ref_at, first_l_name_at: n_ref_at + 4, n_ref, records }
}

/// `(offset, size)` of every BGZF block of a well-formed file.
fn blocks(bgzf: &[u8]) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut off = 0;
    while off < bgzf.len() {
        let b = fasthts::bgzf::Block::parse(bgzf, off as u64).unwrap();
        v.push((off, b.size as usize));
        off = b.next_offset() as usize;
    }
    v
}

/// The BAI `bai` with every chunk's end moved past `file_len`.
fn past_the_end(bai: &[u8], file_len: u64) -> Vec<u8> {
    let mut b = bai.to_vec();
    let n_ref = u32_at(&b, 4);
    let mut p = 8;
    let past = (file_len + (1 << 20)) << 16;
    for _ in 0..n_ref {
        let n_bin = u32_at(&b, p);
        p += 4;
        for _ in 0..n_bin {
            let bin = u32_at(&b, p);
            let n_chunk = u32_at(&b, p + 4);
            p += 8;
            for _ in 0..n_chunk {
                if bin != 37450 {
                    b[p + 8..p + 16].copy_from_slice(&past.to_le_bytes());
                }
                p += 16;
            }
        }
        let n_intv = u32_at(&b, p);
        p += 4 + 8 * n_intv as usize;
    }
    b
}

/// `raw` with `bytes` written at `at`.
fn patched(raw: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = raw.to_vec();
    v[at..at + bytes.len()].copy_from_slice(bytes);
    v
}

fn bgzf(raw: &[u8]) -> Vec<u8> {
    fasthts::bgzf::compress_all(raw, 6)
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(raw).unwrap();
    e.finish().unwrap()
}

impl Corpus {
    fn new() -> Corpus {
        let dir = TempDir::new("robustness");
        let mut c = Corpus {
            good_bam: dir.path("good.bam"),
            good_vcf: dir.path("good.vcf"),
            good_bed: dir.path("good.bed"),
            good_fastq: dir.path("good.fq"),
            good_table: dir.path("good.ct"),
            dir,
            cases: Vec::new(),
        };
        std::fs::copy(data("small.bam"), &c.good_bam).unwrap();
        std::fs::copy(data("small.bam.bai"), c.dir.path("good.bam.bai")).unwrap();
        c.bam_cases();
        c.index_cases();
        c.vcf_cases();
        c.seq_cases();
        c.table_cases();
        c
    }

    fn add(&mut self, kind: Kind, name: String, ext: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path(&format!("{name}.{ext}"));
        std::fs::write(&path, bytes).unwrap();
        self.cases.push(Case { name, kind, file: path.clone(), documented_success: None });
        path
    }

    fn add_special(&mut self, kind: Kind, name: &str, ext: &str) {
        // A directory given as the file, and a path that does not exist.
        let d = self.dir.path(&format!("{name}-directory.{ext}"));
        std::fs::create_dir_all(&d).unwrap();
        self.cases.push(Case { name: format!("{name}-directory"), kind, file: d, documented_success: None });
        let m = self.dir.path(&format!("{name}-missing.{ext}"));
        self.cases.push(Case { name: format!("{name}-missing"), kind, file: m, documented_success: None });
    }

    /// Damaged bgzipped SAM (read by every BAM command, as samtools reads
    /// it): cut inside a block and before the EOF marker, a deflate byte
    /// flipped, a bad record line in intact BGZF.
    fn bgzipped_sam_cases(&mut self) {
        let bam = fasthts::bam::BamFile::open(&self.good_bam).unwrap();
        let mut w = fasthts::sam::SamWriter::new(Vec::new(), bam.header());
        w.write_header().unwrap();
        let mut records = bam.records().unwrap();
        while let Some(r) = records.next_record().unwrap() {
            w.write_record(&r).unwrap();
        }
        let text = w.finish().unwrap();
        let good = fasthts::bgzf::compress_all(&text, 6);
        let bl = blocks(&good);
        assert!(bl.len() > 3, "several blocks");
        self.add(Kind::Bam, "bgzipped-sam-cut".into(), "sam.gz", &good[..bl[2].0 + bl[2].1 / 2]);
        self.add(Kind::Bam, "bgzipped-sam-no-eof-marker".into(), "sam.gz", &good[..good.len() - 28]);
        let mut flipped = good.clone();
        flipped[bl[1].0 + 18 + (bl[1].1 - 26) / 2] ^= 0x40;
        self.add(Kind::Bam, "bgzipped-sam-flipped".into(), "sam.gz", &flipped);
        let mid = text.len() / 2 + text[text.len() / 2..].iter().position(|&c| c == b'\n').unwrap() + 1;
        let bad_line = [&text[..mid], b"r1\tnot-a-flag\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n", &text[mid..]].concat();
        self.add(Kind::Bam, "bgzipped-sam-bad-line".into(), "sam.gz", &fasthts::bgzf::compress_all(&bad_line, 6));
    }

    /// Adds a damaged BAM with a copy of the intact index beside it (newer
    /// than the BAM), so index-using commands reach the damage too.
    fn add_bam(&mut self, name: String, bytes: &[u8]) {
        let p = self.add(Kind::Bam, name, "bam", bytes);
        let mut bai = p.clone().into_os_string();
        bai.push(".bai");
        std::fs::copy(self.dir.path("good.bam.bai"), &bai).unwrap();
        age(&p, 60);
    }

    fn bam_cases(&mut self) {
        let good = read(&self.good_bam);
        let len = good.len();
        self.add(Kind::Bam, "empty".into(), "bam", b"");
        self.add(Kind::Bam, "sam-text-garbage".into(), "bam", b"@HD\tVN:1.6\nthis is not a BAM file\n");
        self.add(
            Kind::Bam,
            "binary-garbage".into(),
            "bam",
            &(0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<_>>(),
        );
        self.add_special(Kind::Bam, "bam", "bam");
        let parsed = parse_bam(fasthts::bgzf::decompress_all(&good).unwrap());
        // Non-BGZF gzip of a valid BAM stream, and the stream uncompressed
        // (htslib reads both; so do we, but neither can be indexed).
        self.add_bam("plain-gzip".into(), &gzip(&parsed.raw));
        self.add_bam("uncompressed".into(), &parsed.raw);
        self.add_bam("uncompressed-cut".into(), &parsed.raw[..parsed.raw.len() - 100]);
        // Inputs of other kinds named as such (CRAM, bgzipped SAM, an index).
        self.add(Kind::Bam, "cram-magic".into(), "cram", b"CRAM\x03\x00 and no container");
        self.add(Kind::Bam, "bgzipped-sam".into(), "sam.gz", &bgzf(b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:100\n"));
        self.bgzipped_sam_cases();
        self.add(Kind::Bam, "an-index".into(), "bam", &read(data("small.bam.bai")));
        // Truncations: in the first block byte by byte, around every block
        // boundary of the first blocks, and spread over the file.
        let bl = blocks(&good);
        let mut cuts: Vec<usize> = vec![1, 2, 3, 4, 10, 11, 12, 16, 17, 18, 19, 27, 40, 100];
        for &(off, size) in bl.iter().take(4) {
            cuts.extend([off + 1, off + 18, off + size - 8, off + size - 4, off + size - 1]);
        }
        cuts.extend((1..24).map(|i| i * len / 24));
        cuts.extend([len - 29, len - 28, len - 27, len - 1]);
        cuts.sort();
        cuts.dedup();
        for cut in cuts {
            let name = if cut == len - 28 { "cut-before-eof-marker".to_string() } else { format!("cut{cut}") };
            self.add_bam(name, &good[..cut]);
        }
        // Byte flips in block headers, deflate data, CRC32 and ISIZE of the
        // first, second, a middle and the last data block, and the EOF marker.
        let mid = bl.len() / 2;
        for (i, &(off, size)) in bl.iter().enumerate() {
            if ![0, 1, mid, bl.len() - 2, bl.len() - 1].contains(&i) {
                continue;
            }
            let fields: [(&str, usize); 12] = [
                ("id1", 0),
                ("cm", 2),
                ("flg", 3),
                ("mtime", 4),
                ("xlen", 10),
                ("si1", 12),
                ("bsize", 16),
                ("bsize-hi", 17),
                ("deflate", 18 + (size - 26) / 2),
                ("deflate-first", 18),
                ("crc", size - 8),
                ("isize", size - 4),
            ];
            for (what, at) in fields {
                if at >= size {
                    continue;
                }
                for mask in [0x01u8, 0x80] {
                    let mut b = good.clone();
                    b[off + at] ^= mask;
                    self.add_bam(format!("flip-block{i}-{what}-{mask:02x}"), &b);
                }
            }
        }
        self.absurd_lengths(&parsed);
    }

    /// BAM streams with one field set to an absurd value, re-compressed
    /// into valid BGZF so the damage reaches the BAM decoder.
    fn absurd_lengths(&mut self, p: &Parsed) {
        let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
        let set32 = |v: &mut Vec<(String, Vec<u8>)>, name: &str, at: usize, value: u32| {
            v.push((name.to_string(), patched(&p.raw, at, &value.to_le_bytes())));
        };
        for (tag, v) in [("max", u32::MAX), ("2g", 1 << 31), ("over-file", 50_000_000), ("plus1", u32_at(&p.raw, 4) + 1)] {
            set32(&mut variants, &format!("l_text-{tag}"), p.l_text_at, v);
        }
        for (tag, v) in [("neg1", u32::MAX), ("max", i32::MAX as u32), ("huge", 50_000_000), ("plus1", p.n_ref as u32 + 1), ("zero", 0)] {
            set32(&mut variants, &format!("n_ref-{tag}"), p.n_ref_at, v);
        }
        for (tag, v) in [("zero", 0), ("neg1", u32::MAX), ("huge", 1 << 30)] {
            set32(&mut variants, &format!("l_name-{tag}"), p.first_l_name_at, v);
        }
        // The first reference's length, negative.
        let first_l_name = u32_at(&p.raw, p.first_l_name_at) as usize;
        set32(&mut variants, "ref-len-neg", p.first_l_name_at + 4 + first_l_name, u32::MAX);
        // Record fields, in the first record, a middle one and the last one.
        let picks = [("first", p.records[0]), ("mid", p.records[p.records.len() / 2]), ("last", *p.records.last().unwrap())];
        for (which, at) in picks {
            for (tag, v) in [("max", u32::MAX), ("2g", 1 << 31), ("1g", 1 << 30), ("31", 31), ("0", 0), ("short", u32_at(&p.raw, at) - 1)] {
                set32(&mut variants, &format!("{which}-block_size-{tag}"), at, v);
            }
            let d = at + 4;
            for (tag, v) in [("neg5", -5i32 as u32), ("n_ref", p.n_ref as u32), ("max", i32::MAX as u32)] {
                set32(&mut variants, &format!("{which}-ref_id-{tag}"), d, v);
                set32(&mut variants, &format!("{which}-next_ref_id-{tag}"), d + 20, v);
            }
            for (tag, v) in [("neg7", -7i32 as u32), ("past-ref", 100_000_000), ("max", i32::MAX as u32)] {
                set32(&mut variants, &format!("{which}-pos-{tag}"), d + 4, v);
                set32(&mut variants, &format!("{which}-next_pos-{tag}"), d + 24, v);
            }
            for (tag, v) in [("neg1", u32::MAX), ("max", i32::MAX as u32), ("plus1", u32_at(&p.raw, d + 16) + 1)] {
                set32(&mut variants, &format!("{which}-l_seq-{tag}"), d + 16, v);
            }
            variants.push((format!("{which}-l_read_name-0"), patched(&p.raw, d + 8, &[0])));
            variants.push((format!("{which}-l_read_name-255"), patched(&p.raw, d + 8, &[255])));
            variants.push((format!("{which}-n_cigar_op-65535"), patched(&p.raw, d + 12, &[0xff, 0xff])));
        }
        // A record cut short by the end of the stream (valid BGZF around it).
        variants.push(("stream-ends-mid-record".into(), p.raw[..p.records[3] + 20].to_vec()));
        variants.push(("stream-ends-mid-header".into(), p.raw[..p.n_ref_at + 2].to_vec()));
        for (name, raw) in variants {
            self.add_bam(format!("absurd-{name}"), &bgzf(&raw));
        }
    }

    /// Damaged, mismatched, missing and stale indexes next to an intact BAM.
    fn index_cases(&mut self) {
        let good_bam = read(&self.good_bam);
        let bai = read(self.dir.path("good.bam.bai"));
        let add_index = |c: &mut Corpus, name: String, ext: &str, index: Option<&[u8]>, stale: bool| {
            let bam = c.dir.path(&format!("{name}.bam"));
            std::fs::write(&bam, &good_bam).unwrap();
            if let Some(bytes) = index {
                let idx = c.dir.path(&format!("{name}.bam.{ext}"));
                std::fs::write(&idx, bytes).unwrap();
                if stale {
                    age(&idx, 3600);
                } else {
                    age(&bam, 60);
                }
            }
            c.cases.push(Case { name, kind: Kind::BamIndex, file: bam, documented_success: None });
        };
        add_index(self, "idx-missing".into(), "bai", None, false);
        add_index(self, "idx-stale".into(), "bai", Some(&bai), true);
        // An index whose chunks point past the end of the file (made for a
        // longer one), fresh and stale: used to make snp-pileup miss sites.
        let past = past_the_end(&bai, good_bam.len() as u64);
        add_index(self, "idx-past-eof".into(), "bai", Some(&past), false);
        add_index(self, "idx-past-eof-stale".into(), "bai", Some(&past), true);
        // Stale and made for another layout of the same records.
        let relaid = self.dir.path("relaid.bam.tmp");
        let level1 = fasthts::command::SortFileOptions { level: Some(1), threads: Some(1), ..Default::default() };
        fasthts::command::sort_file(&self.good_bam, &relaid, &level1, &|_| {}).unwrap();
        let other_layout = fasthts::index::build(&fasthts::bam::BamFile::open(&relaid).unwrap(), fasthts::index::IndexFormat::Bai).unwrap();
        std::fs::remove_file(&relaid).unwrap();
        add_index(self, "idx-stale-other-layout".into(), "bai", Some(&other_layout.to_bytes()), true);
        add_index(self, "idx-empty".into(), "bai", Some(b""), false);
        add_index(self, "idx-tabix-magic".into(), "bai", Some(b"TBI\x01\0\0\0\0"), false);
        for cut in [3, 4, 8, 12, 20, 100, bai.len() / 2, bai.len() - 8, bai.len() - 1] {
            add_index(self, format!("idx-cut{cut}"), "bai", Some(&bai[..cut]), false);
        }
        // n_ref, then the first reference's n_bin, first bin's n_chunk.
        let n_bin_at = 8;
        let n_chunk_at = n_bin_at + 4 + 4;
        for (what, at) in [("n_ref", 4usize), ("n_bin", n_bin_at), ("n_chunk", n_chunk_at)] {
            for (tag, v) in [("neg1", u32::MAX), ("max", i32::MAX as u32), ("huge", 100_000_000), ("plus1", u32_at(&bai, at) + 1)] {
                let mut b = bai.clone();
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                add_index(self, format!("idx-{what}-{tag}"), "bai", Some(&b), false);
            }
        }
        for at in [0, 5, 30, bai.len() / 2, bai.len() - 3] {
            let mut b = bai.clone();
            b[at] ^= 0xa5;
            add_index(self, format!("idx-flip{at}"), "bai", Some(&b), false);
        }
        // An index made for another BAM (different reference count).
        add_index(self, "idx-other-bam".into(), "bai", Some(&read(data("refs_without_reads.bam.bai"))), false);
        let csi = read(data("long_ref.bam.csi"));
        add_index(self, "idx-other-bam-csi".into(), "csi", Some(&csi), false);
        // CSI with absurd parameters (uncompressed CSI is accepted, as htslib does).
        let raw_csi = fasthts::bgzf::decompress_all(&csi).unwrap();
        for (what, at) in [("min_shift", 4usize), ("depth", 8), ("l_aux", 12)] {
            for (tag, v) in [("neg1", u32::MAX), ("huge", 1 << 30), ("big", 40)] {
                let mut b = raw_csi.clone();
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                add_index(self, format!("idx-csi-{what}-{tag}"), "csi", Some(&bgzf(&b)), false);
            }
        }
        let mut cut_csi = csi.clone();
        cut_csi.truncate(csi.len() - 40);
        add_index(self, "idx-csi-truncated".into(), "csi", Some(&cut_csi), false);
    }

    fn vcf_cases(&mut self) {
        let head = "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
        let mut good = head.to_string();
        for pos in (1000..300_000).step_by(997) {
            good.push_str(&format!("chr1\t{pos}\t.\tA\tC\t.\t.\t.\n"));
        }
        for pos in (1000..150_000).step_by(1409) {
            good.push_str(&format!("chr4\t{pos}\t.\tG\tT\t.\t.\t.\n"));
        }
        std::fs::write(&self.good_vcf, &good).unwrap();
        let bed: String = good
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                let pos: u64 = f[1].parse().unwrap();
                format!("{}\t{}\t{pos}\n", f[0], pos - 1)
            })
            .collect();
        std::fs::write(&self.good_bed, bed).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        let with_line = |bad: &str| -> String {
            let mut v: Vec<&str> = lines.clone();
            v.insert(40, bad);
            v.join("\n") + "\n"
        };
        let malformed = [
            ("few-columns", "chr1\t5000\t.\tA".to_string()),
            ("pos-text", "chr1\tfive\t.\tA\tC\t.\t.\t.".into()),
            ("pos-negative", "chr1\t-3\t.\tA\tC\t.\t.\t.".into()),
            ("pos-huge", "chr1\t99999999999\t.\tA\tC\t.\t.\t.".into()),
            ("pos-empty", "chr1\t\t.\tA\tC\t.\t.\t.".into()),
            ("ref-empty", "chr1\t5000\t.\t\tC\t.\t.\t.".into()),
            ("chrom-empty", "\t5000\t.\tA\tC\t.\t.\t.".into()),
            ("binary", "\u{1}\u{2}\u{3}\u{fffd}\u{0}".into()),
        ];
        for (name, bad) in malformed {
            self.add(Kind::Vcf, format!("vcf-{name}"), "vcf", with_line(&bad).as_bytes());
        }
        self.add(
            Kind::Vcf,
            "vcf-binary-garbage".into(),
            "vcf",
            &(0..5000u32).map(|i| (i.wrapping_mul(40503) >> 7) as u8).collect::<Vec<_>>(),
        );
        let gz = bgzf(good.as_bytes());
        self.add(Kind::Vcf, "vcf-bgzf-truncated".into(), "vcf.gz", &gz[..gz.len() / 2]);
        let mut flipped = gz.clone();
        flipped[gz.len() / 3] ^= 0x10;
        self.add(Kind::Vcf, "vcf-bgzf-flipped".into(), "vcf.gz", &flipped);
        let plain = gzip(good.as_bytes());
        self.add(Kind::Vcf, "vcf-gzip-truncated".into(), "vcf.gz", &plain[..plain.len() - 10]);
        let mut bomb_isize = plain.clone();
        let n = bomb_isize.len();
        bomb_isize[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        self.add(Kind::Vcf, "vcf-gzip-absurd-isize".into(), "vcf.gz", &bomb_isize);
        self.add(Kind::Vcf, "vcf-gzip-header-only".into(), "vcf.gz", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
        self.add_special(Kind::Vcf, "vcf", "vcf");
    }

    fn seq_cases(&mut self) {
        let fq = random_fastq(12345, 400, 80, "read");
        std::fs::write(&self.good_fastq, &fq).unwrap();
        let first = fq.find("@read3\n").unwrap();
        let rec3_end = fq.find("@read4\n").unwrap();
        let splice = |bad: &str| -> String { format!("{}{}{}", &fq[..first], bad, &fq[rec3_end..]) };
        let seq3 = &fq[first + 7..first + 87];
        let cases = [
            ("qual-shorter", splice(&format!("@read3\n{seq3}\n+\n{}\n", "I".repeat(79)))),
            ("qual-longer", splice(&format!("@read3\n{seq3}\n+\n{}\n", "I".repeat(81)))),
            ("no-plus-line", splice(&format!("@read3\n{seq3}\n{}\n", "I".repeat(80)))),
            ("no-at", splice(&format!("read3\n{seq3}\n+\n{}\n", "I".repeat(80)))),
            ("fasta-record-inside", splice(&format!(">read3\n{seq3}\n"))),
            ("truncated-after-name", fq[..rec3_end + 7].to_string()),
            ("truncated-in-qual", fq[..rec3_end - 20].to_string()),
            ("qual-missing-at-end", format!("{}@last\nACGT\n+\n", &fq)),
        ];
        for (name, text) in cases {
            self.add(Kind::Seq, format!("fq-{name}"), "fq", text.as_bytes());
        }
        self.add(Kind::Seq, "fa-no-gt".into(), "fa", b"ACGTACGT\n>r1\nACGT\n");
        self.add(Kind::Seq, "seq-binary".into(), "fq", &(0..5000u32).map(|i| (i.wrapping_mul(40503) >> 7) as u8).collect::<Vec<_>>());
        let gz = gzip(fq.as_bytes());
        self.add(Kind::Seq, "fq-gz-truncated".into(), "fq.gz", &gz[..gz.len() / 2]);
        let mut flipped = gz.clone();
        flipped[gz.len() / 2] ^= 0x40;
        self.add(Kind::Seq, "fq-gz-flipped".into(), "fq.gz", &flipped);
        self.add(Kind::Seq, "fq-bzip2".into(), "fq.bz2", b"BZh91AY&SY\x00\x00");
        self.add(Kind::Seq, "seq-empty".into(), "fq", b"");
        self.add_special(Kind::Seq, "seq", "fq");
    }

    fn table_cases(&mut self) {
        let out = fasthts()
            .args(["kmer", "count", "-q", "-k", "17", "-N", "2", "-x", "100000"])
            .arg(&self.good_table)
            .arg(&self.good_fastq)
            .output()
            .unwrap();
        assert!(out.status.success(), "making the good table: {}", text(&out.stderr));
        let ct = read(&self.good_table);
        for cut in [0, 3, 10, 19, 20, 27, 28, 1000, ct.len() / 2, ct.len() - 9, ct.len() - 1] {
            self.add(Kind::Table, format!("ct-cut{cut}"), "ct", &ct[..cut]);
        }
        let set = |name: &str, at: usize, bytes: &[u8]| {
            let mut b = ct.clone();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            (format!("ct-{name}"), b)
        };
        let variants = vec![
            set("magic", 0, b"XXXX"),
            set("version", 4, &[99]),
            set("type", 5, &[9]),
            set("k-zero", 7, &0u32.to_le_bytes()),
            set("k-huge", 7, &1000u32.to_le_bytes()),
            set("n-tables-zero", 11, &[0]),
            set("n-tables-255", 11, &[255]),
            set("size-huge", 20, &(1u64 << 39).to_le_bytes()),
            set("size-max", 20, &u64::MAX.to_le_bytes()),
            set("size-zero", 20, &0u64.to_le_bytes()),
            set("n-big-huge", ct.len() - 8, &(1u64 << 60).to_le_bytes()),
        ];
        for (name, b) in variants {
            self.add(Kind::Table, name, "ct", &b);
        }
        let gz = gzip(&ct);
        self.add(Kind::Table, "ct-gz-truncated".into(), "ct.gz", &gz[..gz.len() / 2]);
        let mut big = ct.clone();
        big[20..28].copy_from_slice(&(1u64 << 39).to_le_bytes());
        self.add(Kind::Table, "ct-gz-size-huge".into(), "ct.gz", &gzip(&big));
        self.add_special(Kind::Table, "ct", "ct");
    }
}

/// One command run on one case.
struct Job {
    label: String,
    args: Vec<OsString>,
    /// The same operation with samtools, when it has one.
    samtools: Option<Vec<OsString>>,
    /// The samtools operation that reads the whole file from its start,
    /// the reference instead of `samtools` when the run says it read the
    /// file sequentially, its index not describing it (snp-pileup, as
    /// FACETS, reads every record: issue 39).
    samtools_sequential: Option<Vec<OsString>>,
    /// Files the command writes on success, relative to the work directory.
    outputs: Vec<&'static str>,
    /// quickcheck reports through its exit status, as samtools'.
    exit_status_only: bool,
}

fn os(v: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    v.iter().map(|s| s.as_ref().to_os_string()).collect()
}

fn jobs_for(c: &Corpus, case: &Case, w: &Path) -> Vec<Job> {
    let f = case.file.as_path();
    let job = |label: &str, args: Vec<OsString>, samtools: Option<Vec<OsString>>, outputs: Vec<&'static str>| Job {
        label: format!("{label} {}", case.name),
        args,
        samtools,
        outputs,
        samtools_sequential: None,
        exit_status_only: false,
    };
    let out_bam = w.join("out.bam");
    let tmp = w.join("tmp");
    let out_csv = w.join("out.csv");
    match case.kind {
        Kind::Bam | Kind::BamIndex => {
            let mut v = vec![
                job("flagstat", os(&[&"flagstat", &"-@", &"2", &f]), Some(os(&[&"flagstat", &f])), vec![]),
                job("idxstats", os(&[&"idxstats", &"-@", &"2", &f]), Some(os(&[&"idxstats", &f])), vec![]),
                job(
                    "sort",
                    os(&[&"sort", &"-@", &"2", &"-m", &"1M", &"-T", &tmp, &"-o", &out_bam, &f]),
                    Some(os(&[&"sort", &"-m", &"1M", &"-T", &tmp, &"-o", &out_bam, &f])),
                    vec!["out.bam"],
                ),
                job(
                    "view",
                    os(&[&"view", &"-@", &"2", &"--no-PG", &"-b", &"-o", &out_bam, &f]),
                    Some(os(&[&"view", &"--no-PG", &"-b", &"-o", &out_bam, &f])),
                    vec!["out.bam"],
                ),
                // samtools reads the same blocks through the index: only
                // those overlapping the sites. Without an index, or with
                // one that does not describe the file (said in a warning),
                // snp-pileup reads the whole file (FACETS does, BAM and
                // bgzipped SAM alike; fasthts indexes it in memory), as
                // `view -c` does.
                Job {
                    samtools_sequential: Some(os(&[&"view", &"-c", &f])),
                    ..job(
                        "snp-pileup",
                        os(&[&"snp-pileup", &"-@", &"2", &c.good_vcf, &out_csv, &f]),
                        // Without an index beside it (a BAM's removed;
                        // a bgzipped SAM's never made) the whole file.
                        Some(if fasthts::index::locate(f).is_none() {
                            os(&[&"view", &"-c", &f])
                        } else {
                            os(&[&"view", &"-c", &"-M", &"-L", &c.good_bed, &f])
                        }),
                        vec!["out.csv"],
                    )
                },
            ];
            if case.kind == Kind::Bam {
                let out_bai = w.join("out.bai");
                let out_csi = w.join("out.csi");
                v.push(job("index", os(&[&"index", &"-@", &"2", &f, &out_bai]), Some(os(&[&"index", &f, &out_bai])), vec!["out.bai"]));
                v.push(job("index -c", os(&[&"index", &"-c", &f, &out_csi]), Some(os(&[&"index", &"-c", &f, &out_csi])), vec!["out.csi"]));
                v.push(job(
                    "merge",
                    os(&[&"merge", &"-@", &"2", &"-f", &"-o", &out_bam, &f]),
                    Some(os(&[&"merge", &"-f", &"-o", &out_bam, &f])),
                    vec!["out.bam"],
                ));
                v.push(job(
                    "sort -n",
                    os(&[&"sort", &"-n", &"-m", &"1M", &"-T", &tmp, &"-o", &out_bam, &f]),
                    Some(os(&[&"sort", &"-n", &"-m", &"1M", &"-T", &tmp, &"-o", &out_bam, &f])),
                    vec!["out.bam"],
                ));
                let mut q = job("quickcheck", os(&[&"quickcheck", &f]), Some(os(&[&"quickcheck", &f])), vec![]);
                q.exit_status_only = true;
                v.push(q);
            }
            v
        }
        Kind::Vcf => vec![job("snp-pileup", os(&[&"snp-pileup", &f, &out_csv, &c.good_bam]), None, vec!["out.csv"])],
        Kind::Seq => {
            let out_ct = w.join("out.ct");
            let out_fq = w.join("out.fq");
            let hist = w.join("hist");
            let small = ["-k", "17", "-N", "2", "-x", "100000"];
            let mut count = os(&[&"kmer", &"count", &"-q"]);
            count.extend(small.iter().map(OsString::from));
            count.extend(os(&[&out_ct, &f]));
            let mut normalize = os(&[&"kmer", &"normalize", &"-q", &"-o", &out_fq]);
            normalize.extend(small.iter().map(OsString::from));
            normalize.push(f.into());
            let mut trim = os(&[&"kmer", &"trim-low-abund", &"-q", &"-T", &tmp, &"-o", &out_fq]);
            trim.extend(small.iter().map(OsString::from));
            trim.push(f.into());
            vec![
                job("kmer count", count, None, vec!["out.ct"]),
                job("kmer normalize", normalize, None, vec!["out.fq"]),
                job("kmer trim-low-abund", trim, None, vec!["out.fq", "tmp"]),
                job("kmer abundance-dist", os(&[&"kmer", &"abundance-dist", &"-q", &c.good_table, &f, &hist]), None, vec!["hist"]),
                job("kmer filter-abund", os(&[&"kmer", &"filter-abund", &"-q", &"-o", &out_fq, &c.good_table, &f]), None, vec!["out.fq"]),
                // the one-pass scripts
                job("kmer unique-kmers", os(&[&"kmer", &"unique-kmers", &"-q", &"-k", &"17", &"-R", &hist, &f]), None, vec!["hist"]),
                job(
                    "kmer abundance-dist-single",
                    os(&[&"kmer", &"abundance-dist-single", &"-q", &"-k", &"17", &"-x", &"100000", &"--savegraph", &out_ct, &f, &hist]),
                    None,
                    vec!["hist", "out.ct"],
                ),
                job(
                    "kmer filter-abund-single",
                    os(&[&"kmer", &"filter-abund-single", &"-q", &"-k", &"17", &"-x", &"100000", &"--savegraph", &out_ct, &"-o", &out_fq, &f]),
                    None,
                    vec!["out.fq", "out.ct"],
                ),
                job("kmer count-median", os(&[&"kmer", &"count-median", &"-q", &c.good_table, &f, &hist]), None, vec!["hist"]),
            ]
        }
        Kind::Table => {
            let out_fq = w.join("out.fq");
            let hist = w.join("hist");
            vec![
                job("kmer abundance-dist", os(&[&"kmer", &"abundance-dist", &"-q", &f, &c.good_fastq, &hist]), None, vec!["hist"]),
                job("kmer filter-abund", os(&[&"kmer", &"filter-abund", &"-q", &"-o", &out_fq, &f, &c.good_fastq]), None, vec!["out.fq"]),
                job("kmer count-median", os(&[&"kmer", &"count-median", &"-q", &f, &c.good_fastq, &hist]), None, vec!["hist"]),
                job(
                    "kmer trim-low-abund -l",
                    os(&[&"kmer", &"trim-low-abund", &"-q", &"-T", &w.join("tmp"), &"-o", &out_fq, &"-l", &f, &c.good_fastq]),
                    None,
                    vec!["out.fq", "tmp"],
                ),
            ]
        }
    }
}

/// Cases a command may succeed on without samtools to confirm it (the
/// k-mer commands have no such reference; without samtools installed the
/// BAM commands fall back on this list too), with the reason.
fn documented_success(case: &Case) -> Option<&'static str> {
    if let Some(why) = case.documented_success {
        return Some(why);
    }
    let name = case.name.as_str();
    if name.ends_with("-mtime-01") || name.ends_with("-mtime-80") {
        Some("MTIME is not checked (htslib ignores it too)")
    } else if name.ends_with("-flg-01") {
        Some("FTEXT is only a hint")
    } else if name == "idx-stale" {
        Some("a stale index is used with a warning, as htslib does")
    } else if name == "cut-before-eof-marker" {
        Some("complete records without the EOF marker: a warning, as htslib gives")
    } else {
        None
    }
}

/// Where `fasthts quickcheck` is stricter than samtools': files samtools
/// passes that fasthts' reader refuses (the other commands refuse them too).
fn quickcheck_stricter(name: &str) -> Option<&'static str> {
    if name.starts_with("flip-block0-si1") || name.starts_with("flip-block0-isize") {
        Some("fasthts checks the BC subfield and ISIZE of every block, htslib not for the first")
    } else if name == "absurd-n_ref-plus1" || name == "absurd-ref-len-neg" {
        Some("fasthts requires NUL-terminated reference names and lengths below 2^31 (htslib patches or accepts them)")
    } else {
        None
    }
}

/// khmer's error block, which the k-mer commands reproduce: the lines
/// that follow its error line.
fn is_khmer_trailer(line: &str) -> bool {
    line.starts_with("** Failed on ") || line == "** Exiting!" || line.starts_with("NOTE: This can be overridden") || line == "Exiting"
}

struct Verdict {
    label: String,
    problems: Vec<String>,
}

fn check(job: &Job, case: &Case, run: &Measured, reference_ok: Option<bool>, w: &Path) -> Verdict {
    let mut problems = Vec::new();
    let err = run.stderr_text();
    if run.timed_out {
        problems.push(format!("no answer within {TIME_LIMIT:?}"));
    }
    if let Some(sig) = run.signal {
        problems.push(format!("killed by signal {sig}"));
    }
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") || err.contains("memory allocation") {
        problems.push("panic or allocation failure".into());
    }
    if run.max_rss_kib > RSS_LIMIT_KIB {
        problems.push(format!("peak RSS {} MiB", run.max_rss_kib >> 10));
    }
    let left = listing(w);
    if job.exit_status_only {
        // quickcheck: never pass a file samtools fails; fail one samtools
        // passes only where documented.
        match reference_ok {
            Some(ok) if ok != run.success() && (!ok || quickcheck_stricter(&case.name).is_none()) => {
                problems.push(format!("exit status {:?} where samtools {}", run.code, if ok { "succeeds" } else { "fails" }))
            }
            None if run.success() && documented_success(case).is_none() => problems.push("quickcheck passed a damaged file".into()),
            _ => {}
        }
    } else if run.success() {
        // khmer's normalize-by-median warns about an empty input and skips it
        let khmer_skips = job.label.starts_with("kmer normalize") && case.name == "seq-empty";
        let allowed = match reference_ok {
            Some(ok) => ok,
            None => documented_success(case).is_some() || khmer_skips,
        };
        if !allowed {
            problems
                .push(format!("succeeded{}", if reference_ok.is_some() { " where samtools fails" } else { " (not a documented success)" }));
        }
        let extra: Vec<&String> =
            left.iter().filter(|n| !job.outputs.iter().any(|o| n.as_str() == *o || n.starts_with(&format!("{o}/")))).collect();
        if !extra.is_empty() {
            problems.push(format!("left {extra:?} besides its outputs"));
        }
    } else {
        if !left.is_empty() {
            problems.push(format!("failed but left {left:?}"));
        }
        if run.code != Some(1) {
            problems.push(format!("exit status {:?}", run.code));
        }
        let kmer = job.label.starts_with("kmer ");
        // khmer's own warnings ("WARNING: Input file X not found") come before its error
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| {
                !l.contains("warning:") && !samtools_worded_warning(l) && !(kmer && (is_khmer_trailer(l) || l.starts_with("WARNING: ")))
            })
            .collect();
        // k-mer commands: khmer's own error lines, or where khmer fails
        // with a Python exception, its last line (`OSError: File ...`)
        let python_exception = |l: &str| l.split_once(": ").is_some_and(|(class, _)| class.ends_with("Error") && class.bytes().all(|b| b.is_ascii_alphabetic()));
        let well_formed =
            |l: &str| l.starts_with("fasthts ") || (kmer && (l.starts_with("ERROR: ") || l.starts_with("** ERROR: ") || python_exception(l)));
        if errors.len() != 1 || !well_formed(errors[0]) {
            problems.push(format!("expected one error line, got {err:?}"));
        }
    }
    Verdict { label: job.label.clone(), problems }
}

/// A warning merge prints in samtools' own words (`[W::bam_merge_core2] No
/// @HD tag found.`, `[bam_translate] ...`), as samtools' tests compare it.
fn samtools_worded_warning(line: &str) -> bool {
    line.starts_with("[W::") || line.starts_with("[bam_translate] ") || line.starts_with("[bam_merge_core] ")
}

fn clear(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
}

#[test]
fn bad_input_corpus_on_every_command() {
    let corpus = Corpus::new();
    let samtools = have_samtools();
    let w = corpus.dir.path("work");
    let mut verdicts = Vec::new();
    let (mut slowest, mut biggest) = ((Duration::ZERO, String::new()), (0i64, String::new()));
    for case in &corpus.cases {
        for job in jobs_for(&corpus, case, &w) {
            // samtools' run of `args`; it writes nothing into `w` but
            // what the caller clears.
            let reference = |args: &Option<Vec<OsString>>| match (args, samtools) {
                (Some(args), true) => {
                    let mut c = Command::new("samtools");
                    c.args(args);
                    Some(run_measured(c, Limits::default(), Duration::from_secs(60)).success())
                }
                _ => None,
            };
            clear(&w);
            let mut reference_ok = reference(&job.samtools);
            clear(&w);
            let mut cmd = fasthts();
            cmd.args(&job.args).current_dir(&w);
            let run = run_measured(cmd, Limits { address_space: Some(ADDRESS_SPACE_LIMIT), open_files: None }, TIME_LIMIT);
            if run.stderr_text().contains("; reading the file sequentially") && job.samtools_sequential.is_some() {
                // `view -c`: no output in `w`, whose listing is checked.
                reference_ok = reference(&job.samtools_sequential);
            }
            if run.elapsed > slowest.0 {
                slowest = (run.elapsed, job.label.clone());
            }
            if run.max_rss_kib > biggest.0 {
                biggest = (run.max_rss_kib, job.label.clone());
            }
            verdicts.push(check(&job, case, &run, reference_ok, &w));
        }
    }
    let failed: Vec<&Verdict> = verdicts.iter().filter(|v| !v.problems.is_empty()).collect();
    for v in &failed {
        eprintln!("FAILED {}: {}", v.label, v.problems.join("; "));
    }
    let n_cases = corpus.cases.len();
    println!(
        "bad-input corpus: {n_cases} cases, {} runs; slowest {:?} ({}), largest peak RSS {} MiB ({})",
        verdicts.len(),
        slowest.0,
        slowest.1,
        biggest.0 >> 10,
        biggest.1
    );
    // Straight to stderr, past the test harness's capture, so the figure
    // shows in every run's log.
    let summary = format!("{} passed, {} failed\n", verdicts.len() - failed.len(), failed.len());
    std::io::Write::write_all(&mut std::io::stderr(), summary.as_bytes()).unwrap();
    assert!(failed.is_empty(), "{} of {} runs on the bad-input corpus failed (see FAILED lines)", failed.len(), verdicts.len());
}
