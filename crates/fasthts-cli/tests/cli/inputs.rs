//! Every input a pipeline can hand a command (issue 19, Inputs; issue 20,
//! one message for one wrong input): BAM from a pipe, a FIFO, `/dev/stdin`
//! or `-`, read as it streams with nothing written to disk; uncompressed
//! and gzip BAM; the VCF of snp-pileup from a stream; stale and bad
//! indexes; quickcheck's exit bits on files that are not alignments; and
//! the same words for the same wrong input in every command.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Makes `path` a FIFO and feeds it `bytes` from a thread once a reader
/// opens it (a reader that never comes leaves the thread waiting, harmlessly).
fn fifo(path: &Path, bytes: Vec<u8>) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&path) {
            let _ = std::io::Write::write_all(&mut f, &bytes);
        }
    });
}

/// Runs `fasthts ARGS` with `stdin` on its standard input (a pipe), in
/// `cwd`, with `$TMPDIR` pointing nowhere: a run that needs the disk for
/// its input fails.
fn piped(args: &[&dyn AsRef<std::ffi::OsStr>], stdin: Vec<u8>, cwd: &Path) -> Output {
    let mut c = fasthts();
    c.args(args).current_dir(cwd).env("TMPDIR", "/nonexistent/tmp");
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A command that stops reading early (an error) closes the pipe: fine.
    let writer = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut pipe, &stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// `fasthts ARGS` in `cwd` with `$TMPDIR` pointing nowhere.
fn fasthts_in(args: &[&dyn AsRef<std::ffi::OsStr>], cwd: &Path) -> Output {
    let mut c = fasthts();
    c.args(args).current_dir(cwd).env("TMPDIR", "/nonexistent/tmp");
    run_with_timeout(c, Duration::from_secs(60))
}

fn ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// The records of a BAM as SAM lines (no header), for comparing sorted
/// outputs.
fn records(bam: &Path) -> String {
    let mut c = fasthts();
    c.args(["sort", "-n", "-O", "sam", "--no-PG", "-o", "-"]).arg(bam);
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().filter(|l| !l.starts_with('@')).map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_bam_from_a_pipe_a_fifo_or_stdin_is_streamed_in_every_command() {
    let dir = TempDir::new("inputs-stream");
    let bam = data("small.bam");
    let bytes = std::fs::read(&bam).unwrap();
    let work = dir.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let want_flagstat = ok(&fasthts_in(&[&"flagstat", &bam], &work), "flagstat file");
    let by_scan = {
        // The counts of every record (samtools' slow method), as a copy without an index gives.
        std::fs::copy(&bam, dir.path("bare.bam")).unwrap();
        ok(&fasthts_in(&[&"idxstats", &dir.path("bare.bam")], &work), "idxstats file")
    };
    for threads in ["1", "2"] {
        // `cat x.bam | fasthts CMD -`, nothing written anywhere.
        assert_eq!(ok(&piped(&[&"flagstat", &"-@", &threads, &"-"], bytes.clone(), &work), "flagstat -"), want_flagstat);
        let out = piped(&[&"idxstats", &"-@", &threads, &"-"], bytes.clone(), &work);
        assert_eq!(ok(&out, "idxstats -"), by_scan);
        assert!(text(&out.stderr).contains("counting every record"), "{}", text(&out.stderr));
        let out = piped(&[&"sort", &"-@", &threads, &"-o", &"sorted.bam", &"-"], bytes.clone(), &work);
        ok(&out, "sort -");
        assert!(records(&work.join("sorted.bam")) == records(&bam), "sort of a pipe: other records");
        assert_eq!(names_in(&work), ["sorted.bam"], "sort of a pipe wrote more than its output");
        std::fs::remove_file(work.join("sorted.bam")).unwrap();
        // A named FIFO.
        let f = dir.path(&format!("in{threads}.fifo"));
        fifo(&f, bytes.clone());
        assert_eq!(ok(&fasthts_in(&[&"flagstat", &"-@", &threads, &f], &work), "flagstat FIFO"), want_flagstat);
        // /dev/stdin, a pipe.
        assert_eq!(ok(&piped(&[&"flagstat", &"/dev/stdin"], bytes.clone(), &work), "flagstat /dev/stdin"), want_flagstat);
    }
    assert!(names_in(&work).is_empty(), "left {:?}", names_in(&work));
    // quickcheck as samtools: a pipe and `-` pass.
    assert_eq!(piped(&[&"quickcheck", &"-"], bytes.clone(), &work).status.code(), Some(0));
    let f = dir.path("q.fifo");
    fifo(&f, bytes.clone());
    assert_eq!(fasthts_in(&[&"quickcheck", &f], &work).status.code(), Some(0));
    // `- < x.bam` (standard input from a file) is that file: mapped, indexed beside... nothing.
    let mut c = fasthts();
    c.args(["quickcheck", "-"]).stdin(std::fs::File::open(&bam).unwrap());
    assert_eq!(run(c).status.code(), Some(0));
    // A stream cut short is an error naming it, not a short count.
    let cut = piped(&[&"flagstat", &"-"], bytes[..bytes.len() / 2].to_vec(), &work);
    assert_eq!(cut.status.code(), Some(1));
    assert!(text(&cut.stderr).starts_with("fasthts flagstat: -: "), "{}", text(&cut.stderr));
    // Whole blocks without the EOF marker: counted, with htslib's warning.
    let no_eof = piped(&[&"flagstat", &"-"], bytes[..bytes.len() - 28].to_vec(), &work);
    assert_eq!(ok(&no_eof, "flagstat - without EOF marker"), want_flagstat);
    assert!(text(&no_eof.stderr).contains("-: EOF marker is absent"), "{}", text(&no_eof.stderr));
    // SAM on standard input too.
    let mut to_sam = fasthts();
    to_sam.args(["sort", "-O", "sam", "--no-PG", "-o", "-"]).arg(&bam);
    let sam_in = run(to_sam).stdout;
    assert!(sam_in.starts_with(b"@HD"));
    assert_eq!(ok(&piped(&[&"flagstat", &"-"], sam_in, &work), "flagstat SAM -"), want_flagstat);
    assert!(names_in(&work).is_empty(), "left {:?}", names_in(&work));
}

#[test]
fn index_of_a_stream_is_written_where_samtools_writes_it() {
    let dir = TempDir::new("inputs-index");
    let bam = data("small.bam");
    let bytes = std::fs::read(&bam).unwrap();
    let want = std::fs::read(data("small.bam.bai")).unwrap();
    // `index -o out.bai FIFO`: the index of the bytes that came through.
    let f = dir.path("x.fifo");
    fifo(&f, bytes.clone());
    ok(&fasthts_in(&[&"index", &"-o", &dir.path("out.bai"), &f], &dir.0), "index -o of a FIFO");
    assert_eq!(std::fs::read(dir.path("out.bai")).unwrap(), want);
    // `index -` from a pipe: `-.bai`, as samtools names it.
    ok(&piped(&[&"index", &"-"], bytes, &dir.0), "index -");
    assert_eq!(std::fs::read(dir.path("-.bai")).unwrap(), want);
}

#[test]
fn uncompressed_and_gzip_bam_are_read_by_every_command() {
    let dir = TempDir::new("inputs-raw");
    let bam = data("small.bam");
    let raw = fasthts::bgzf::decompress_all(&std::fs::read(&bam).unwrap()).unwrap();
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, &raw).unwrap();
        e.finish().unwrap()
    };
    std::fs::copy(&bam, dir.path("bare.bam")).unwrap();
    let want_flagstat = ok(&fasthts_in(&[&"flagstat", &bam], &dir.0), "flagstat");
    let want_idxstats = ok(&fasthts_in(&[&"idxstats", &dir.path("bare.bam")], &dir.0), "idxstats");
    for (name, bytes) in [("raw.bam", raw.clone()), ("gzip.bam", gz)] {
        let p = dir.path(name);
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(ok(&fasthts_in(&[&"flagstat", &p], &dir.0), name), want_flagstat);
        assert_eq!(ok(&piped(&[&"flagstat", &"-"], bytes.clone(), &dir.0), name), want_flagstat);
        assert_eq!(ok(&fasthts_in(&[&"idxstats", &p], &dir.0), name), want_idxstats);
        let sorted = dir.path(&format!("{name}.sorted.bam"));
        ok(&fasthts_in(&[&"sort", &"-o", &sorted, &p], &dir.0), name);
        assert!(records(&sorted) == records(&bam), "sort of {name}: other records");
        assert_eq!(fasthts_in(&[&"quickcheck", &p], &dir.0).status.code(), Some(0), "quickcheck {name}");
        // As samtools: not BGZF, so not indexable; said once, clearly.
        let out = fasthts_in(&[&"index", &p], &dir.0);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(err.contains("cannot be indexed") && err.lines().count() == 1, "{err}");
    }
}

#[test]
fn quickcheck_exit_bits_on_files_that_are_not_alignments_follow_samtools() {
    let dir = TempDir::new("inputs-quickcheck");
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b).unwrap();
        e.finish().unwrap()
    };
    let fa = b">r1\nACGT\n".to_vec();
    let fq = b"@r1\nACGT\n+\nIIII\n".to_vec();
    // (file, contents, status, status with -u, message)
    let cases: Vec<(&str, Vec<u8>, i32, i32, &str)> = vec![
        ("a.fa", fa.clone(), 8, 0, "had no targets in header."),
        ("a.fq", fq.clone(), 8, 0, "had no targets in header."),
        ("a.fa.gz", gz(&fa), 8, 0, "had no targets in header."),
        ("a.fq.gz", gz(&fq), 8, 0, "had no targets in header."),
        ("x.bam.bai", std::fs::read(data("small.bam.bai")).unwrap(), 2, 2, "could not be opened for reading."),
        ("t.txt", b"hello\n".to_vec(), 4, 4, "was not identified as sequence data."),
    ];
    for (name, bytes, status, unmapped, message) in cases {
        let p = dir.path(name);
        std::fs::write(&p, &bytes).unwrap();
        let out = fasthts_in(&[&"quickcheck", &"-v", &p], &dir.0);
        assert_eq!(out.status.code(), Some(status), "{name}");
        assert_eq!(text(&out.stderr), format!("{} {message}\n", p.display()), "{name}");
        assert_eq!(fasthts_in(&[&"quickcheck", &"-u", &p], &dir.0).status.code(), Some(unmapped), "{name} -u");
        if have_samtools() {
            let theirs = Command::new("samtools").arg("quickcheck").arg(&p).output().unwrap();
            assert_eq!(theirs.status.code(), Some(status), "samtools on {name}");
        }
    }
}

#[test]
fn the_same_wrong_input_is_named_alike_by_every_command() {
    let dir = TempDir::new("inputs-wrong");
    let bgzf = |b: &[u8]| fasthts::bgzf::compress_all(b, 6);
    let gz = |b: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, b).unwrap();
        e.finish().unwrap()
    };
    let sam = b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:1000\nr\t4\t*\t0\t0\t*\t*\t0\t0\tA\tI\n";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("x.txt", b"just some text\n".to_vec(), "not a BAM or SAM file"),
        ("x.gz", gz(b"just some text\n"), "gzip-compressed data that is not BAM or SAM"),
        ("x.fq", b"@r1\nACGT\n+\nIIII\n".to_vec(), "FASTQ sequences, not BAM or SAM alignments"),
        ("x.bai", std::fs::read(data("small.bam.bai")).unwrap(), "a BAI index, not the BAM or SAM file it indexes"),
        ("x.csi", bgzf(b"CSI\x01\x0e\0\0\0\x05\0\0\0\0\0\0\0\0\0\0\0"), "a CSI index, not the BAM or SAM file it indexes"),
        ("x.bam", Vec::new(), "empty file, not BAM or SAM"),
    ];
    let vcf = dir.path("sites.vcf");
    std::fs::write(&vcf, "chr1\t1000\t.\tA\tC\n").unwrap();
    for (name, bytes, reason) in cases {
        let p = dir.path(name);
        std::fs::write(&p, &bytes).unwrap();
        let said = format!("{}: {reason}", p.display());
        for args in [vec!["flagstat"], vec!["idxstats"], vec!["index"], vec!["sort", "-o", "out.bam"]] {
            let mut a: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|s| s as &dyn AsRef<std::ffi::OsStr>).collect();
            a.push(&p);
            let out = fasthts_in(&a, &dir.0);
            assert_eq!(out.status.code(), Some(1), "{args:?} {name}");
            assert_eq!(text(&out.stderr), format!("fasthts {}: {said}\n", args[0]), "{args:?} {name}");
        }
        // From a pipe, the same words about `-`.
        let out = piped(&[&"flagstat", &"-"], bytes.clone(), &dir.0);
        assert_eq!(text(&out.stderr), format!("fasthts flagstat: -: {reason}\n"), "flagstat - {name}");
        // FACETS' frame around the same reason.
        let out = fasthts_in(&[&"snp-pileup", &vcf, &"out.csv", &p], &dir.0);
        assert_eq!(text(&out.stderr), format!("fasthts snp-pileup: Failed to read sequence file {} ({reason})\n", p.display()));
        assert!(!dir.path("out.csv").exists() && !dir.path("out.bam").exists());
    }
    // SAM is read, but cannot be indexed (samtools: "not BGZF compressed").
    let p = dir.path("c.sam");
    std::fs::write(&p, sam).unwrap();
    let out = fasthts_in(&[&"index", &p], &dir.0);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with(&format!("fasthts index: {}: SAM cannot be indexed", p.display())), "{}", text(&out.stderr));
    ok(&fasthts_in(&[&"flagstat", &p], &dir.0), "flagstat SAM");
}

/// A VCF of small.bam's sites, and the index beside a copy of the BAM.
fn snp_inputs(dir: &TempDir) -> (PathBuf, Vec<u8>) {
    let bam = dir.path("t.bam");
    std::fs::copy(data("small.bam"), &bam).unwrap();
    std::fs::copy(data("small.bam.bai"), dir.path("t.bam.bai")).unwrap();
    let mut vcf = String::from("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n");
    for (chrom, len) in [("chr1", 309_000), ("chr2", 255_000)] {
        for pos in (500..len).step_by(211) {
            vcf.push_str(&format!("{chrom}\t{pos}\t.\tA\tG\t.\t.\t.\n"));
        }
    }
    (bam, vcf.into_bytes())
}

#[test]
fn the_vcf_of_snp_pileup_is_read_once_from_a_stream() {
    let dir = TempDir::new("inputs-vcf");
    let (bam, vcf) = snp_inputs(&dir);
    let file = dir.path("sites.vcf");
    std::fs::write(&file, &vcf).unwrap();
    let gz = dir.path("sites.vcf.gz");
    std::fs::write(&gz, fasthts::bgzf::compress_all(&vcf, 6)).unwrap();
    ok(&fasthts_in(&[&"snp-pileup", &file, &"want.csv", &bam], &dir.0), "file");
    let want = std::fs::read(dir.path("want.csv")).unwrap();
    assert!(want.iter().filter(|&&c| c == b'\n').count() > 100, "too few rows to compare");
    for threads in ["1", "2", "4"] {
        let out = |n: &str| format!("{n}{threads}.csv");
        // /dev/stdin and `-`: a pipe.
        ok(&piped(&[&"snp-pileup", &"-@", &threads, &"/dev/stdin", &out("stdin"), &bam], vcf.clone(), &dir.0), "/dev/stdin");
        ok(&piped(&[&"snp-pileup", &"-@", &threads, &"-", &out("dash"), &bam], vcf.clone(), &dir.0), "-");
        // A named FIFO (it used to hang), plain and compressed.
        let f = dir.path(&format!("v{threads}.fifo"));
        fifo(&f, vcf.clone());
        ok(&fasthts_in(&[&"snp-pileup", &"-@", &threads, &f, &out("fifo"), &bam], &dir.0), "FIFO");
        let f = dir.path(&format!("g{threads}.fifo"));
        fifo(&f, std::fs::read(&gz).unwrap());
        ok(&fasthts_in(&[&"snp-pileup", &"-@", &threads, &f, &out("fifogz"), &bam], &dir.0), "FIFO gz");
        for n in ["stdin", "dash", "fifo", "fifogz"] {
            assert!(std::fs::read(dir.path(&out(n))).unwrap() == want, "{n} at -@ {threads}: output differs from the file's");
        }
    }
}

/// Writes `bai` with its last chunk moved 1 MB past the end of `bam`.
fn index_past_the_end(bam: &Path, bai: &Path) {
    use fasthts::bgzf::VirtualOffset;
    use fasthts::index::{Index, IndexFormat, ReferenceIndex};
    let index = fasthts::index::build(&fasthts::bam::BamFile::open(bam).unwrap(), IndexFormat::Bai).unwrap();
    let mut references = index.references().to_vec();
    let tid = references.iter().position(|r| !r.bins().is_empty()).unwrap();
    let r = &references[tid];
    let mut bins = r.bins().to_vec();
    let past = std::fs::metadata(bam).unwrap().len() + (1 << 20);
    for bin in bins.iter_mut().filter(|b| b.id < 37450) {
        for chunk in &mut bin.chunks {
            chunk.end = VirtualOffset::new(past, 0).unwrap();
        }
    }
    references[tid] = ReferenceIndex::new(bins, r.linear_index().to_vec(), r.metadata().copied());
    fasthts::index::write_index(&Index::new(IndexFormat::Bai, references, index.n_no_coor()), bai).unwrap();
}

#[test]
fn stale_indexes_are_used_and_bad_ones_caught_in_every_command() {
    let dir = TempDir::new("inputs-index-check");
    let (bam, vcf) = snp_inputs(&dir);
    let sites = dir.path("sites.vcf");
    std::fs::write(&sites, vcf).unwrap();
    ok(&fasthts_in(&[&"snp-pileup", &sites, &"want.csv", &bam], &dir.0), "fresh index");
    let want = std::fs::read(dir.path("want.csv")).unwrap();
    let flagstat = ok(&fasthts_in(&[&"flagstat", &bam], &dir.0), "flagstat");
    let idxstats = ok(&fasthts_in(&[&"idxstats", &bam], &dir.0), "idxstats");
    // Older than the BAM (a `touch`, an out-of-order copy): used with
    // htslib's warning, in every command.
    let bai = dir.path("t.bam.bai");
    crate::harness::age(&bai, 3600);
    let stale = format!("fasthts: warning: the index file {} is older than the data file {}\n", bai.display(), bam.display());
    let out = fasthts_in(&[&"snp-pileup", &sites, &"stale.csv", &bam], &dir.0);
    ok(&out, "snp-pileup, stale index");
    assert_eq!(text(&out.stderr), stale);
    assert!(std::fs::read(dir.path("stale.csv")).unwrap() == want);
    let out = fasthts_in(&[&"flagstat", &bam], &dir.0);
    assert_eq!((ok(&out, "flagstat, stale index"), text(&out.stderr)), (flagstat.clone(), stale.clone()));
    let out = fasthts_in(&[&"idxstats", &bam], &dir.0);
    assert_eq!((ok(&out, "idxstats, stale index"), text(&out.stderr)), (idxstats, stale));
    // Chunks past the end of the file: snp-pileup used to miss sites silently.
    index_past_the_end(&bam, &bai);
    let out = fasthts_in(&[&"snp-pileup", &sites, &"bad.csv", &bam], &dir.0);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.lines().count() == 1 && err.contains("the index does not match the data file") && err.contains("past the end"), "{err}");
    assert!(!dir.path("bad.csv").exists());
    let out = fasthts_in(&[&"idxstats", &bam], &dir.0);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let out = fasthts_in(&[&"flagstat", &bam], &dir.0);
    assert_eq!(ok(&out, "flagstat, bad index"), flagstat);
    assert!(text(&out.stderr).contains("reading the file sequentially"), "{}", text(&out.stderr));
    // A BAM from a FIFO cannot be read through an index: said so, no hang.
    let f = dir.path("t.fifo");
    fifo(&f, std::fs::read(&bam).unwrap());
    let out = fasthts_in(&[&"snp-pileup", &sites, &"fifo.csv", &f], &dir.0);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not a regular file"), "{}", text(&out.stderr));
}

/// SAM records htslib changes as it reads them (unknown reference, POS 0,
/// no CIGAR, unknown mate reference, PNEXT 0, empty name) are warned
/// about, as samtools warns, one line per record naming the input and the
/// line, by every command that reads SAM; the output is samtools' own.
#[test]
fn sam_record_warnings_are_reported_as_samtools_reports_them() {
    let Some(dir) = with_samtools("sam-warnings") else { return };
    let sam = dir.path("odd.sam");
    std::fs::write(
        &sam,
        "@SQ\tSN:chr1\tLN:1000\n\
         r1\t0\tchr1\t1\t60\t4M\t*\t0\t0\tACGT\tIIII\n\
         r2\t0\tchrZ\t1\t60\t4M\tchrQ\t5\t0\tACGT\tIIII\n\
         \t0\tchr1\t0\t60\t4M\t*\t0\t0\tACGT\tIIII\n\
         r4\t0\tchr1\t5\t60\t*\t*\t0\t0\tACGT\tIIII\n\
         r5\t0\tchr1\t5\t60\t4M\tchr1\t0\t0\tACGT\tIIII\n",
    )
    .unwrap();
    let p = sam.to_str().unwrap();
    let expected = [
        format!("{p}: SAM line 3 (read \"r2\"): unrecognized reference name; treated as unmapped; unrecognized mate reference name; treated as unmapped"),
        format!("{p}: SAM line 4 (read \"\"): empty query name; mapped query cannot have zero coordinate; treated as unmapped"),
        format!("{p}: SAM line 5 (read \"r4\"): mapped query must have a CIGAR; treated as unmapped"),
        format!("{p}: SAM line 6 (read \"r5\"): mapped mate cannot have zero coordinate; treated as unmapped"),
    ];
    let sorted = dir.path("sorted.sam");
    let s = sorted.to_str().unwrap();
    for args in [
        &["view", "--no-PG", p][..],
        &["flagstat", p],
        &["depth", "-a", p],
        &["depth", p, p],
        &["sort", "--no-PG", "-O", "sam", "-o", s, p],
    ] {
        let mut c = Command::new("samtools");
        c.args(args);
        let theirs = run(c);
        let got = run({
            let mut c = fasthts();
            c.args(args);
            c
        });
        assert!(got.status.success() && theirs.status.success(), "{args:?}: {}", text(&got.stderr));
        assert_eq!(text(&got.stdout), text(&theirs.stdout), "{args:?}");
        let warned: Vec<String> =
            text(&got.stderr).lines().map(|l| l.split_once(": warning: ").expect("a warning line").1.to_string()).collect();
        let times = args.iter().filter(|&&a| a == p).count();
        let want: Vec<String> = (0..times).flat_map(|_| expected.clone()).collect();
        assert_eq!(warned, want, "{args:?}");
        // samtools says the same of the same records.
        for what in ["unrecognized reference name", "empty query name", "must have a CIGAR", "mapped mate cannot have zero coordinate"] {
            assert!(text(&theirs.stderr).contains(what), "{args:?}: samtools said {}", text(&theirs.stderr));
        }
    }
    // A pipe names "-".
    let mut c = fasthts();
    c.args(["view", "-c", "-"]).stdin(std::fs::File::open(&sam).unwrap());
    let got = run(c);
    assert_eq!(text(&got.stdout), "5\n");
    assert!(
        text(&got.stderr).lines().all(|l| l.contains(": warning: -: SAM line ")) && text(&got.stderr).lines().count() == 4,
        "{}",
        text(&got.stderr)
    );
}

/// Every k-mer script reads a FIFO once, as khmer's streaming tests feed
/// one (the writer opens it first and writes in chunks): the same output
/// as from the file, within a time limit (an open to check the input, then
/// another to read it, lost the data and waited for ever: issue 39, item
/// 6). The two scripts that read their input twice refuse a FIFO in one
/// line instead of waiting (khmer waits for ever).
#[test]
fn kmer_scripts_read_a_fifo_once() {
    let dir = TempDir::new("kmer-fifo");
    let reads = fasthts_testgen::support::random_fastq(11, 400, 80, "r");
    std::fs::write(dir.path("r.fq"), &reads).unwrap();
    let mut count = fasthts();
    count.args(["kmer", "count", "-q", "-k", "17", "-x", "1e5", "-N", "2", "t.ct", "r.fq"]).current_dir(&dir.0);
    assert!(run(count).status.success());
    // (arguments with IN for the reads, output files written)
    let cases: &[(&[&str], &[&str])] = &[
        (&["normalize", "-q", "-k", "17", "-x", "1e5", "-N", "2", "-o", "o.fq", "IN"], &["o.fq"]),
        (&["count", "-q", "-k", "17", "-x", "1e5", "-N", "2", "c.ct", "IN"], &["c.ct"]),
        (&["abundance-dist", "-q", "t.ct", "IN", "h.csv"], &["h.csv"]),
        (&["filter-abund", "-q", "t.ct", "IN", "-o", "o.fq"], &["o.fq"]),
        (&["trim-low-abund", "-q", "-k", "17", "-x", "1e5", "-N", "2", "-o", "o.fq", "IN"], &["o.fq"]),
        (&["unique-kmers", "-q", "-k", "17", "-R", "u.txt", "IN"], &["u.txt"]),
        (&["fastq-to-fasta", "-o", "o.fa", "IN"], &["o.fa"]),
        (&["extract-long-sequences", "-l", "10", "-o", "o.fa", "IN"], &["o.fa"]),
        (&["readstats", "-o", "s.txt", "IN"], &["s.txt"]),
        (&["sample-reads-randomly", "-N", "10", "-R", "7", "-o", "o.fq", "IN"], &["o.fq"]),
        (&["count-median", "t.ct", "IN", "m.txt"], &["m.txt"]),
    ];
    let fed = |args: &[&str], input: &str| {
        let mut c = fasthts();
        c.arg("kmer").args(args.iter().map(|&a| if a == "IN" { input } else { a })).current_dir(&dir.0);
        run_with_timeout(c, Duration::from_secs(60))
    };
    for (args, outputs) in cases {
        let from_file = fed(args, "r.fq");
        assert!(from_file.status.success(), "{args:?}: {}", text(&from_file.stderr));
        let expected: Vec<Vec<u8>> = outputs.iter().map(|o| std::fs::read(dir.path(o)).unwrap()).collect();
        for o in *outputs {
            std::fs::remove_file(dir.path(o)).unwrap();
        }
        let _ = std::fs::remove_file(dir.path("in.fifo"));
        fifo(&dir.path("in.fifo"), reads.clone().into_bytes());
        let from_fifo = fed(args, "in.fifo");
        assert!(from_fifo.status.success(), "{args:?} from a FIFO: {}", text(&from_fifo.stderr));
        for (o, e) in outputs.iter().zip(&expected) {
            let mut got = std::fs::read(dir.path(o)).unwrap();
            if *o == "s.txt" {
                // readstats names its input
                got = text(&got).replace("in.fifo", "r.fq").into_bytes();
            }
            assert!(&got == e, "{args:?}: {o} differs from a FIFO");
        }
    }
    for script in ["abundance-dist-single", "filter-abund-single"] {
        let _ = std::fs::remove_file(dir.path("in.fifo"));
        fifo(&dir.path("in.fifo"), reads.clone().into_bytes());
        let mut args = vec![script, "-q", "-k", "17", "-x", "1e5", "IN"];
        if script == "abundance-dist-single" {
            args.push("h.csv");
        }
        let out = fed(&args, "in.fifo");
        assert_eq!(out.status.code(), Some(1), "{script}");
        assert!(text(&out.stderr).contains("is a FIFO"), "{script}: {}", text(&out.stderr));
        // The writer still waits for a reader: let it go.
        drop(std::fs::File::open(dir.path("in.fifo")));
    }
}
