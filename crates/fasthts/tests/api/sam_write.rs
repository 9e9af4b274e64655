//! Differential test of the SAM writer (`fasthts::sam`) against
//! `samtools view --no-PG -h`: byte-identical text for every BAM of the
//! corpus (repository fixtures, the shared golden BAMs, every BAM and SAM of
//! samtools' test suite that samtools itself reads), for BAMs made by the
//! generator (long CIGARs, huge records, every tag type), and for a
//! synthetic SAM full of edge cases (floats of every magnitude, arrays of
//! every subtype, missing fields, a CIGAR of 70,000 operations).

use fasthts::sam::{format_record, format_records_parallel, SamWriter};
use fasthts::bam::{BamFile, RecordRef};
use fasthts_testgen::rng::Rng;
use fasthts_testgen::support::*;
use std::path::Path;
use std::process::Command;

/// What one comparison covered.
#[derive(Default)]
struct Tally {
    files: usize,
    records: usize,
    /// Files samtools itself refuses, with its first error line.
    skipped: Vec<String>,
    failures: Vec<String>,
}

fn samtools_view(file: &Path) -> std::process::Output {
    let mut c = Command::new("samtools");
    c.args(["view", "--no-PG", "-h"]).arg(file);
    run(c)
}

/// Our text for `file`: the header, then every record (written one by one
/// through `SamWriter`); also checks that batch formatting on the pool gives
/// the same bytes. Returns the text and the record count.
fn fasthts_view(file: &Path) -> Result<(Vec<u8>, usize), String> {
    let bam = BamFile::open(file).map_err(|e| e.to_string())?;
    let mut sam = SamWriter::new(Vec::new(), bam.header());
    sam.write_header().map_err(|e| e.to_string())?;
    let header_len = {
        let mut h = Vec::new();
        fasthts::sam::format_header(bam.header(), &mut h).map_err(|e| e.to_string())?;
        h.len()
    };
    // Keep the raw records to format them again as one parallel batch.
    let mut raw: Vec<Vec<u8>> = Vec::new();
    let mut records = bam.records().map_err(|e| e.to_string())?;
    while let Some(r) = records.next_record().map_err(|e| e.to_string())? {
        sam.write_record(&r).map_err(|e| e.to_string())?;
        raw.push(r.as_bytes().to_vec());
    }
    let text = sam.finish().map_err(|e| e.to_string())?;
    let n_ref = bam.header().references.len();
    let views: Vec<RecordRef<'_>> = raw.iter().map(|b| RecordRef::new(b, n_ref).expect("was accepted once")).collect();
    let mut batch = Vec::new();
    format_records_parallel(&views, &bam.header().references, &mut batch).map_err(|e| e.to_string())?;
    if batch != text[header_len..] {
        return Err("format_records_parallel differs from format_record one by one".into());
    }
    // Through SamWriter in uneven batches, reusing its buffers.
    let mut sam = SamWriter::new(Vec::new(), bam.header());
    for batch in views.chunks(5000) {
        sam.write_records(batch).map_err(|e| e.to_string())?;
    }
    if sam.finish().map_err(|e| e.to_string())? != text[header_len..] {
        return Err("SamWriter::write_records differs from write_record one by one".into());
    }
    Ok((text, raw.len()))
}

fn first_difference(expected: &[u8], got: &[u8]) -> String {
    let (mut e, mut g) = (expected.split(|&c| c == b'\n'), got.split(|&c| c == b'\n'));
    for line in 1.. {
        match (e.next(), g.next()) {
            (Some(a), Some(b)) if a == b => continue,
            (None, None) => return "identical lines but different bytes".into(),
            (a, b) => {
                let show = |x: Option<&[u8]>| x.map_or("<end>".into(), |x| String::from_utf8_lossy(&x[..x.len().min(600)]).into_owned());
                return format!("line {line}:\n  samtools: {}\n  fasthts:  {}", show(a), show(b));
            }
        }
    }
    unreachable!()
}

fn compare(file: &Path, tally: &mut Tally) {
    let expected = samtools_view(file);
    if !expected.status.success() {
        let why = text(&expected.stderr);
        tally.skipped.push(format!("{}: samtools: {}", file.display(), why.lines().next().unwrap_or("")));
        return;
    }
    match fasthts_view(file) {
        Ok((got, n)) if got == expected.stdout => {
            tally.files += 1;
            tally.records += n;
        }
        Ok((got, _)) => tally.failures.push(format!("{}: {}", file.display(), first_difference(&expected.stdout, &got))),
        Err(e) => tally.failures.push(format!("{}: fasthts failed where samtools did not: {e}", file.display())),
    }
}

fn report(what: &str, tally: &Tally) {
    eprintln!("{what}: {} files, {} records identical to samtools view", tally.files, tally.records);
    for s in &tally.skipped {
        eprintln!("  skipped: {s}");
    }
    assert!(
        tally.failures.is_empty(),
        "{} of {} files differ:\n{}",
        tally.failures.len(),
        tally.files + tally.failures.len(),
        tally.failures.join("\n")
    );
}

#[test]
fn every_corpus_bam_prints_as_samtools_view() {
    if !have_samtools() {
        return;
    }
    let mut files = Vec::new();
    for dir in [data_dir(), golden_dir()].into_iter().chain(samtools_test_data()) {
        files.extend(files_under(&dir, ".bam"));
    }
    assert!(files.len() >= 10, "corpus too small: {files:?}");
    let mut tally = Tally::default();
    for f in &files {
        compare(f, &mut tally);
    }
    report("BAM corpus", &tally);
}

#[test]
fn every_samtools_test_sam_prints_as_samtools_view() {
    let Some(dir) = with_samtools("samwrite-sam") else { return };
    let Some(samtools_tests) = samtools_test_data() else { return };
    let mut tally = Tally::default();
    let mut sams = files_under(&samtools_tests, ".sam");
    sams.extend(files_under(&samtools_tests, ".sam.gz"));
    for (i, sam) in sams.iter().enumerate() {
        // Through BAM, as samtools stores it; samtools view of that BAM is
        // the reference (the SAM itself may hold what BAM cannot).
        let bam = dir.path(&format!("{i}.bam"));
        let mut c = Command::new("samtools");
        c.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(sam);
        let o = run(c);
        if !o.status.success() {
            tally.skipped.push(format!("{}: samtools: {}", sam.display(), text(&o.stderr).lines().next().unwrap_or("")));
            continue;
        }
        compare(&bam, &mut tally);
    }
    eprintln!("({} SAM files found)", sams.len());
    report("samtools test SAMs via BAM", &tally);
}

/// A BAM of the generator's SAM for `args`, made as scripts/gen-bam.sh
/// makes it (`samtools view --no-PG -b`, any message from samtools a failure).
fn gen_bam(out: &Path, args: &[&str]) {
    let sam = fasthts_testgen::cli::sam(args).unwrap();
    let mut c = Command::new("samtools");
    c.args(["view", "--no-PG", "-b", "-@", "2", "-o"]).arg(out).arg("-");
    let o = run_with_stdin(c, sam);
    assert!(o.status.success() && o.stderr.is_empty(), "samtools view -b of the generated SAM {args:?}: {}", text(&o.stderr));
}

#[test]
fn generated_bams_print_as_samtools_view() {
    let Some(dir) = with_samtools("samwrite-gen") else { return };
    let mut tally = Tally::default();
    let cases: &[&[&str]] = &[
        &["--seed", "11", "--reads", "3000"],
        &["--seed", "12", "--reads", "300", "--long-cigar-fraction", "0.02", "--refs", "3", "--ref-len", "300k"],
        &["--seed", "13", "--reads", "300", "--huge-record-fraction", "0.05", "--refs", "3", "--ref-len", "300k"],
        &["--seed", "14", "--reads", "2000", "--unsorted"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let bam = dir.path(&format!("gen{i}.bam"));
        gen_bam(&bam, args);
        compare(&bam, &mut tally);
    }
    report("generated BAMs", &tally);
}

/// A float of any magnitude and sign, biased towards the ranges where
/// kputd and %g take different paths and towards their boundaries.
fn float(rng: &mut Rng) -> f32 {
    const EDGES: &[f32] = &[
        0.0,
        -0.0,
        0.0001,
        0.00009999999,
        0.00010000001,
        999999.0,
        999999.5,
        999999.44,
        999998.5,
        1e6,
        0.1,
        0.099999994,
        1.0,
        0.99999994,
        0.999995,
        0.9999949,
        9.999995,
        99.99995,
        123456.5,
        100000.0,
        12.5,
        1.5e-7,
        3.4028235e38,
        1e-45,
        f32::MIN_POSITIVE,
        0.3,
        65504.0,
        1234565.0,
        0.5,
        2.5e-5,
    ];
    match rng.below(4) {
        0 => EDGES[rng.below(EDGES.len() as u64) as usize] * if rng.below(2) == 0 { 1.0 } else { -1.0 },
        1 => f32::from_bits(rng.next_u64() as u32 & 0x7f7f_ffff | (rng.next_u64() as u32 & 0x8000_0000)),
        _ => {
            let exp = rng.below(16) as i32 - 6;
            let m = (rng.below(10_000_000) as f32) / 1e6;
            m * 10f32.powi(exp) * if rng.below(3) == 0 { -1.0 } else { 1.0 }
        }
    }
}

/// SAM text exercising every field's edge cases.
fn tricky_sam() -> String {
    let mut s = String::from("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:chr1\tLN:100000\n@SQ\tSN:chr2\tLN:50000\n@RG\tID:g1\n@CO\tcomment\n");
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    // Fixed cases first.
    s.push_str("mate_same\t99\tchr1\t100\t60\t4M\t=\t200\t104\tACGT\tIIII\n");
    s.push_str("mate_other\t97\tchr1\t100\t60\t2S2M\tchr2\t300\t0\tACGT\t!!~~\n");
    s.push_str("unmapped\t4\t*\t0\t0\t*\t*\t0\t0\tNNNN\t*\n");
    s.push_str("no_seq\t4\tchr1\t5\t0\t*\t*\t0\t0\t*\t*\n");
    s.push_str("iupac\t0\tchr1\t5\t255\t16M\t*\t0\t-5\t=ACMGRSVTWYHKDBN\t*\n");
    s.push_str("odd_len\t0\tchr2\t1\t3\t1M1I1D1N1P1=1X1S1H\t*\t0\t0\tACGTA\tABCDE\n");
    s.push_str("placed_unmapped\t4\tchr2\t10\t0\t*\t=\t10\t0\tAC\tII\n");
    s.push_str("tags_int\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tXa:i:0\tXb:i:-1\tXc:i:127\tXd:i:-128\tXe:i:255\tXf:i:-129\tXg:i:32767\tXh:i:-32768\tXi:i:65535\tXj:i:-32769\tXk:i:2147483647\tXl:i:-2147483648\tXm:i:4294967295\tXn:i:65536\n");
    s.push_str("tags_text\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tXA:A:x\tXB:A:!\tXZ:Z:hello world\tXE:Z:\tXH:H:1AE301\tXI:H:\n");
    s.push_str("tags_arrays\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tBa:B:c,-128,0,127\tBb:B:C,0,255\tBc:B:s,-32768,32767\tBd:B:S,0,65535\tBe:B:i,-2147483648,2147483647\tBf:B:I,0,4294967295\tBg:B:i\tBh:B:f\tBi:B:f,1.5,-0,0,1e-10,1e10,999999.5,0.0001\n");
    s.push_str("tags_special_floats\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tFa:f:inf\tFb:f:-inf\tFc:f:nan\tFd:B:f,inf,-inf,nan\n");
    for i in 0..400 {
        let mut line = format!("floats{i}\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*");
        for t in 0..5 {
            line.push_str(&format!("\tf{t}:f:{:e}", float(&mut rng)));
        }
        line.push_str("\tBF:B:f");
        for _ in 0..20 {
            line.push_str(&format!(",{:e}", float(&mut rng)));
        }
        s.push_str(&line);
        s.push('\n');
    }
    // Integers of every width, as scalars and arrays.
    for i in 0..100 {
        let v = (rng.next_u64() as i64) >> rng.below(63);
        let v32 = v.clamp(i64::from(i32::MIN), i64::from(u32::MAX));
        s.push_str(&format!("ints{i}\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tXI:i:{v32}\tXB:B:i,{},{}\n", v as i32, (v >> 7) as i32));
    }
    // A CIGAR of 70,000 operations: BAM keeps it in a CG tag.
    let ops = 70_000;
    let cigar: String = (0..ops).map(|k| if k % 2 == 0 { "1M" } else { "1I" }).collect();
    let seq: String = (0..ops).map(|k| b"ACGT"[k % 4] as char).collect();
    let qual: String = (0..ops).map(|k| (b'!' + (k % 60) as u8) as char).collect();
    s.push_str(&format!("long_cigar\t0\tchr1\t1000\t60\t{cigar}\t*\t0\t0\t{seq}\t{qual}\tNM:i:35000\tXS:Z:after\n"));
    s
}

#[test]
fn tricky_records_print_as_samtools_view() {
    let Some(dir) = with_samtools("samwrite-tricky") else { return };
    let sam = dir.path("tricky.sam");
    std::fs::write(&sam, tricky_sam()).unwrap();
    let bam = dir.path("tricky.bam");
    let mut c = Command::new("samtools");
    c.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam);
    let o = run(c);
    assert!(o.status.success(), "samtools could not read the synthetic SAM: {}", text(&o.stderr));
    let mut tally = Tally::default();
    compare(&bam, &mut tally);
    compare_via_sam_reader(&sam, &mut tally);
    assert_eq!(tally.files + tally.failures.len(), 2, "skipped: {:?}", tally.skipped);
    report("synthetic edge cases (via BAM, via the SAM reader)", &tally);
}

#[test]
fn corrupt_aux_is_an_error_not_a_partial_line() {
    // A record whose only aux field is a Z string without its NUL.
    let mut d = Vec::new();
    for v in [-1i32, -1] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.extend_from_slice(&[2, 0, 0x48, 0x12]); // l_read_name 2, mapq 0, bin
    d.extend_from_slice(&[0, 0, 4, 0]); // n_cigar 0, flag 4
    d.extend_from_slice(&0i32.to_le_bytes()); // l_seq
    for v in [-1i32, -1, 0] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.extend_from_slice(b"r\0XZZabc");
    let rec = RecordRef::new(&d, 0).unwrap();
    let mut out = b"previous line\n".to_vec();
    let err = format_record(&rec, &[], &mut out).unwrap_err();
    assert!(err.to_string().contains("corrupted aux data for read r"), "{err}");
    assert_eq!(out, b"previous line\n");
}

/// One raw BAM record (without its block_size), fields as given.
struct Raw<'a> {
    name: &'a [u8],
    flag: u16,
    tid: i32,
    pos: i32,
    mtid: i32,
    cigar: &'a [u32],
    seq: &'a [u8],
    qual: &'a [u8],
    aux: &'a [u8],
}

impl Raw<'_> {
    fn encode(&self) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&self.tid.to_le_bytes());
        d.extend_from_slice(&self.pos.to_le_bytes());
        d.push(self.name.len() as u8);
        d.push(30);
        d.extend_from_slice(&4680u16.to_le_bytes());
        d.extend_from_slice(&(self.cigar.len() as u16).to_le_bytes());
        d.extend_from_slice(&self.flag.to_le_bytes());
        d.extend_from_slice(&(self.seq.len() as i32).to_le_bytes());
        d.extend_from_slice(&self.mtid.to_le_bytes());
        d.extend_from_slice(&(self.pos + 7).to_le_bytes());
        d.extend_from_slice(&(-17i32).to_le_bytes());
        d.extend_from_slice(self.name);
        for w in self.cigar {
            d.extend_from_slice(&w.to_le_bytes());
        }
        let code = |c: u8| b"=ACMGRSVTWYHKDBN".iter().position(|&x| x == c).unwrap() as u8;
        for pair in self.seq.chunks(2) {
            d.push((code(pair[0]) << 4) | pair.get(1).map_or(0, |&c| code(c)));
        }
        d.extend_from_slice(self.qual);
        d.extend_from_slice(self.aux);
        let mut r = (d.len() as u32).to_le_bytes().to_vec();
        r.extend_from_slice(&d);
        r
    }
}

fn handmade_bam(path: &Path, text: &[u8], records: &[Vec<u8>]) {
    let header = fasthts::bam::Header {
        text: text.to_vec(),
        references: vec![
            fasthts::bam::Reference { name: "chr1".into(), len: 1000 },
            fasthts::bam::Reference { name: "chrM".into(), len: 2_147_483_647 },
        ],
    };
    let mut data = header.to_bytes();
    for r in records {
        data.extend_from_slice(r);
    }
    std::fs::write(path, fasthts::bgzf::compress_all(&data, 1)).unwrap();
}

/// Header texts and records that only a hand-made BAM holds: a header
/// without @SQ lines, NUL padding, a missing final newline; CIGAR code 9,
/// qualities missing only at the first base, a `d` tag, a read name without
/// its NUL, aux bytes too short to be a field, a CG tag on an unplaced read.
#[test]
fn handmade_bams_print_as_samtools_view() {
    let Some(dir) = with_samtools("samwrite-hand") else { return };
    let mut d_tag = b"XDd".to_vec();
    d_tag.extend_from_slice(&0.1f64.to_le_bytes());
    d_tag.extend_from_slice(b"YDd");
    d_tag.extend_from_slice(&(-1e300f64).to_le_bytes());
    d_tag.extend_from_slice(b"ZDd");
    d_tag.extend_from_slice(&1234565.0f64.to_le_bytes());
    let mut cg = b"CGBI".to_vec();
    cg.extend_from_slice(&2u32.to_le_bytes());
    for w in [3u32 << 4, (1 << 4) | 1] {
        cg.extend_from_slice(&w.to_le_bytes());
    }
    let mut cg_then = cg.clone();
    cg_then.extend_from_slice(b"NMC\x01");
    let with_cg = |name, flag, tid, pos| {
        let cigar = &[(4 << 4) | 4, (3 << 4) | 3];
        Raw { name, flag, tid, pos, mtid: -1, cigar, seq: b"ACGT", qual: &[9; 4], aux: &cg_then }.encode()
    };
    let records = vec![
        Raw { name: b"op9\0", flag: 0, tid: 0, pos: 10, mtid: 0, cigar: &[4 << 4, (2 << 4) | 9], seq: b"ACGT", qual: &[10; 4], aux: b"" }
            .encode(),
        Raw { name: b"qual_ff_first\0", flag: 0, tid: 0, pos: 10, mtid: 1, cigar: &[3 << 4], seq: b"ACG", qual: &[0xff, 1, 2], aux: b"" }
            .encode(),
        Raw {
            name: b"qual_ff_later\0",
            flag: 0,
            tid: 1,
            pos: 10,
            mtid: 0,
            cigar: &[3 << 4],
            seq: b"ACG",
            qual: &[1, 0xff, 2],
            aux: &d_tag,
        }
        .encode(),
        Raw { name: b"no_nul", flag: 4, tid: -1, pos: -1, mtid: -1, cigar: &[], seq: b"A", qual: &[0], aux: b"XAA!\x01\x02" }.encode(),
        Raw { name: b"pad\0", flag: 4, tid: -1, pos: -1, mtid: -1, cigar: &[], seq: b"", qual: &[], aux: b"XAA!" }.encode(),
        // Placed: the CG tag becomes the CIGAR; unplaced: it stays a tag.
        with_cg(b"cg\0", 0, 0, 5),
        with_cg(b"cg_unplaced\0", 4, -1, -1),
    ];
    let texts: &[&[u8]] = &[
        b"@HD\tVN:1.6\tSO:unsorted\n",
        b"",
        b"@HD\tVN:1.6\n\0\0\0",
        b"@HD\tVN:1.6",
        b"@HD\tVN:1.6\0\0",
        b"@HD\tVN:1.6\0@CO\tafter a NUL\n",
        b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:1000\n",
        b"@HD\tVN:1.6\n@CO\tnot a line start @SQ\tSN:x\n",
        b"@SQ\tSN:chr1\tLN:1000\n@SQ\tSN:chrM\tLN:2147483647\n@PG\tID:x",
    ];
    let mut tally = Tally::default();
    for (i, text) in texts.iter().enumerate() {
        let path = dir.path(&format!("hand{i}.bam"));
        handmade_bam(&path, text, &records);
        compare(&path, &mut tally);
        assert!(tally.skipped.is_empty(), "samtools refused a hand-made BAM: {:?}", tally.skipped);
    }
    report("hand-made BAMs", &tally);
    // A header line not starting with '@': both refuse it.
    let path = dir.path("malformed.bam");
    handmade_bam(&path, b"@HD\tVN:1.6\nbad line\n", &records[..1]);
    assert!(!samtools_view(&path).status.success());
    let err = fasthts_view(&path).unwrap_err();
    assert!(err.contains("malformed SAM header at line 2"), "{err}");
}

/// Compares the library's SAM reader followed by the writer with
/// `samtools view --no-PG -h FILE.sam`. Positions that BAM cannot hold are
/// refused by the reader (as by samtools' BAM writer): skipped with a note.
fn compare_via_sam_reader(sam: &Path, tally: &mut Tally) {
    let expected = samtools_view(sam);
    if !expected.status.success() {
        tally.skipped.push(format!("{}: samtools: {}", sam.display(), text(&expected.stderr).lines().next().unwrap_or("")));
        return;
    }
    let got = (|| -> Result<(Vec<u8>, usize), fasthts::Error> {
        let mut reader = fasthts::sam::SamReader::new(std::fs::File::open(sam)?)?;
        let mut w = SamWriter::new(Vec::new(), reader.header());
        w.write_header()?;
        let mut n = 0;
        reader.for_each_record(|r| {
            n += 1;
            w.write_record(&r)
        })?;
        Ok((w.finish()?, n))
    })();
    match got {
        Ok((got, n)) if got == expected.stdout => {
            tally.files += 1;
            tally.records += n;
        }
        Ok((got, _)) => tally.failures.push(format!("{}: {}", sam.display(), first_difference(&expected.stdout, &got))),
        Err(e) if e.to_string().contains("too large for BAM format") => tally.skipped.push(format!("{}: fasthts: {e}", sam.display())),
        Err(e) => tally.failures.push(format!("{}: fasthts failed where samtools did not: {e}", sam.display())),
    }
}

/// SAM in, SAM out without BAM in between.
#[test]
fn samtools_test_sams_read_by_the_sam_reader_print_as_samtools_view() {
    if !have_samtools() {
        return;
    }
    let Some(samtools_tests) = samtools_test_data() else { return };
    let mut tally = Tally::default();
    for sam in files_under(&samtools_tests, ".sam") {
        compare_via_sam_reader(&sam, &mut tally);
    }
    report("samtools test SAMs via the SAM reader", &tally);
}
