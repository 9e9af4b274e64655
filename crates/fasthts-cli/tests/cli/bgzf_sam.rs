//! BGZF-compressed SAM (issue 21): `bgzip`ped SAM through flagstat,
//! idxstats, index (BAI and CSI byte-identical to samtools'), sort,
//! quickcheck and depth, from files, pipes and standard input; gzip SAM
//! read but not indexed; plain SAM through idxstats; damaged `.sam.gz`.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `samtools ARGS FILE`.
fn samtools(args: &[&str], file: &Path) -> Output {
    let mut c = Command::new("samtools");
    c.args(args).arg(file);
    run(c)
}

/// `bam` as SAM text with its header (samtools view -h).
fn sam_text(bam: &Path) -> Option<Vec<u8>> {
    let out = samtools(&["view", "-h"], bam);
    out.status.success().then_some(out.stdout)
}

/// `text` compressed by bgzip (the tool users have).
fn bgzip(sam: &[u8]) -> Vec<u8> {
    let out = run_with_stdin(
        {
            let mut c = Command::new("bgzip");
            c.arg("-c");
            c
        },
        sam.to_vec(),
    );
    assert!(out.status.success(), "bgzip: {}", text(&out.stderr));
    out.stdout
}

fn have_bgzip() -> bool {
    require(runs("bgzip", &["--version"]), "bgzip (Debian package tabix)")
}

fn ours(args: &[&str], file: &Path) -> Output {
    let mut c = fasthts();
    c.args(args).arg(file);
    run(c)
}

/// The same status and stdout from both tools; stdout returned.
fn same(args: &[&str], file: &Path) -> Vec<u8> {
    let (got, expected) = (ours(args, file), samtools(args, file));
    assert_eq!(
        got.status.success(),
        expected.status.success(),
        "{args:?} {}: fasthts {:?}, samtools {:?}",
        file.display(),
        text(&got.stderr),
        text(&expected.stderr)
    );
    assert!(got.stdout == expected.stdout, "{args:?} {}: outputs differ", file.display());
    got.stdout
}

/// `fasthts ARGS` with `bytes` on a pipe to its standard input; a command
/// that stops reading early (quickcheck reads the header) closes the pipe.
fn piped(args: &[&str], bytes: &[u8]) -> Output {
    let mut c = fasthts();
    c.args(args).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = std::io::Write::write_all(&mut pipe, &bytes);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The corpus (but its two largest BAMs, whose SAM text runs to tens of
/// MB) as bgzipped SAM, in `dir`.
fn bgzipped_corpus(dir: &TempDir) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let small = |p: &PathBuf| std::fs::metadata(p).is_ok_and(|m| m.len() < 2 << 20);
    for (i, bam) in corpus().iter().filter(|p| small(p)).enumerate() {
        let Some(text) = sam_text(bam) else { continue };
        let p = dir.path(&format!("c{i}.sam.gz"));
        std::fs::write(&p, bgzip(&text)).unwrap();
        files.push(p);
    }
    files
}

#[test]
fn bgzipped_sam_matches_samtools_in_every_command() {
    let Some(dir) = with_samtools("bgzf-sam") else { return };
    if !have_bgzip() {
        return;
    }
    let files = bgzipped_corpus(&dir);
    assert!(files.len() > 15, "the corpus converted: {}", files.len());
    let mut indexed = 0;
    for file in &files {
        same(&["flagstat"], file);
        // Without an index: every record counted (samtools' slow method).
        same(&["idxstats"], file);
        same(&["sort", "--no-PG", "-O", "sam"], file);
        same(&["depth"], file);
        assert_eq!(ours(&["quickcheck"], file).status.code(), samtools(&["quickcheck"], file).status.code(), "{}", file.display());
        for mode in [&["-b"][..], &["-m", "12"]] {
            let (a, b) = (dir.path("ours.idx"), dir.path("theirs.idx"));
            let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
            let mut c = fasthts();
            c.arg("index").args(mode).arg("-o").arg(&a).arg(file);
            let got = run(c);
            let mut s = Command::new("samtools");
            s.arg("index").args(mode).arg(file).arg(&b);
            let expected = run(s);
            assert_eq!(got.status.success(), expected.status.success(), "index {mode:?} {}: {}", file.display(), text(&got.stderr));
            if got.status.success() {
                if mode != ["-b"] && !require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links") {
                    continue;
                }
                assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "index {mode:?} {}: bytes differ", file.display());
                indexed += 1;
            } else {
                assert!(!a.exists(), "a failed index left a file");
            }
        }
        // With samtools' index beside it, idxstats reads the index, as samtools does.
        let mut s = Command::new("samtools");
        s.arg("index").arg(file);
        if run(s).status.success() {
            same(&["idxstats"], file);
        }
    }
    assert!(indexed > 30, "indexed {indexed}");
}

#[test]
fn bgzipped_sam_from_a_pipe_or_stdin() {
    let Some(dir) = with_samtools("bgzf-sam-pipe") else { return };
    if !have_bgzip() {
        return;
    }
    let text = sam_text(&data("small.bam")).unwrap();
    let gz = bgzip(&text);
    let file = dir.path("s.sam.gz");
    std::fs::write(&file, &gz).unwrap();
    for args in [&["flagstat"][..], &["idxstats"], &["sort", "--no-PG", "-O", "sam"], &["depth"], &["quickcheck", "-v"]] {
        let expected = samtools(args, &file);
        let piped = piped(&[args, &["-"]].concat(), &gz);
        assert!(piped.status.success() == expected.status.success() && piped.stdout == expected.stdout, "{args:?} from a pipe");
        // Standard input redirected from the file.
        let mut c = fasthts();
        c.args(args).arg("-").stdin(std::fs::File::open(&file).unwrap());
        let redirected = c.output().unwrap();
        assert!(redirected.stdout == expected.stdout, "{args:?} < file");
    }
    // An index of a stream, from its bytes held in memory: samtools' index of the file.
    let (a, b) = (dir.path("pipe.csi"), dir.path("file.csi"));
    assert!(piped(&["index", "-c", "-o", a.to_str().unwrap(), "-"], &gz).status.success());
    let mut s = Command::new("samtools");
    s.args(["index", "-c"]).arg(&file).arg(&b);
    assert!(run(s).status.success());
    if require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links") {
        assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "index of a pipe");
    }
}

#[test]
fn gzip_sam_is_read_but_not_indexed_and_plain_sam_idxstats() {
    let Some(dir) = with_samtools("gzip-sam") else { return };
    let sam = sam_text(&data("small.bam")).unwrap();
    let plain = dir.path("s.sam");
    std::fs::write(&plain, &sam).unwrap();
    same(&["idxstats"], &plain);
    // samtools' own test expects nothing on stderr for SAM (issue 39 item 15).
    assert_eq!(text(&ours(&["idxstats"], &plain).stderr), "", "idxstats of a SAM says nothing");
    let gz = dir.path("g.sam.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut e, &sam).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    same(&["flagstat"], &gz);
    same(&["idxstats"], &gz);
    assert_eq!(text(&ours(&["idxstats"], &gz).stderr), "", "idxstats of a gzip SAM says nothing");
    same(&["sort", "--no-PG", "-O", "sam"], &gz);
    assert_eq!(ours(&["quickcheck"], &gz).status.code(), Some(0));
    // samtools: "SAM file ... not BGZF compressed".
    for file in [&plain, &gz] {
        let got = ours(&["index", "-c"], file);
        assert_eq!((got.status.code(), samtools(&["index", "-c"], file).status.code()), (Some(1), Some(1)));
        let said = text(&got.stderr);
        assert!(said.starts_with(&format!("fasthts index: {}: ", file.display())) && said.lines().count() == 1, "{said}");
    }
}

#[test]
fn a_bgzipped_sam_without_eof_marker_fails_quickcheck_as_in_samtools() {
    let Some(dir) = with_samtools("bgzf-sam-eof") else { return };
    let text = sam_text(&data("small.bam")).unwrap();
    let gz = fasthts::bgzf::compress_all(&text, 6);
    let cut = dir.path("noeof.sam.gz");
    std::fs::write(&cut, &gz[..gz.len() - 28]).unwrap();
    let (got, expected) = (ours(&["quickcheck", "-v"], &cut), samtools(&["quickcheck", "-v"], &cut));
    assert_eq!((got.status.code(), expected.status.code()), (Some(16), Some(16)));
    assert_eq!(got.stdout, expected.stdout);
    // Counted all the same, as samtools does.
    same(&["flagstat"], &cut);
    // From a pipe the end is not looked at (htslib cannot seek a pipe).
    assert_eq!(piped(&["quickcheck", "-"], &gz[..gz.len() - 28]).status.code(), Some(0));
}

#[test]
fn a_damaged_bgzipped_sam_is_one_line_naming_it() {
    let dir = TempDir::new("bgzf-sam-damaged");
    let bam = fasthts::bam::BamFile::open(data("small.bam")).unwrap();
    let mut w = fasthts::sam::SamWriter::new(Vec::new(), bam.header());
    w.write_header().unwrap();
    let mut records = bam.records().unwrap();
    while let Some(r) = records.next_record().unwrap() {
        w.write_record(&r).unwrap();
    }
    let gz = fasthts::bgzf::compress_all(&w.finish().unwrap(), 6);
    let mut flipped = gz.clone();
    let n = flipped.len();
    flipped[n / 2] ^= 0x20;
    for (name, bytes) in [("cut.sam.gz", &gz[..gz.len() / 2]), ("flipped.sam.gz", &flipped[..])] {
        let p = dir.path(name);
        std::fs::write(&p, bytes).unwrap();
        for args in [&["flagstat"][..], &["idxstats"], &["index", "-c"], &["sort", "-o", "out.bam"], &["depth"]] {
            let mut c = fasthts();
            c.args(args).arg(&p).current_dir(&dir.0);
            let out = run(c);
            assert_eq!(out.status.code(), Some(1), "{args:?} {name}");
            let said = text(&out.stderr);
            let errors: Vec<&str> = said.lines().filter(|l| !l.contains(": warning: ")).collect();
            assert_eq!(errors.len(), 1, "{args:?} {name}: {said}");
            assert!(errors[0].starts_with(&format!("fasthts {}: {}: ", args[0], p.display())), "{args:?} {name}: {said}");
            assert!(!dir.path("out.bam").exists() && !dir.path(&format!("{name}.csi")).exists(), "{args:?} {name}: an output left");
        }
    }
}
