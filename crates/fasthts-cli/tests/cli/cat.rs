//! `fasthts cat` against samtools 1.16 cat (samtools' own test.pl section
//! for cat: `samtools_test_pl.rs`): the output bytes of
//! both (`--no-PG`; with the @PG line, the records and the header but for
//! that line's program) on the repository's and samtools' test BAMs, as
//! they are and recompressed by bgzip (records sharing a block with the
//! header), from standard input, with `-h` and `-b`, for CRAM (read
//! groups renumbered), and on bad input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Environment keeping htslib off the network (no EBI reference lookups).
fn offline(c: &mut Command) -> &mut Command {
    c.env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s")
}

/// `tool cat ARGS` (tool `samtools` or `fasthts`), stdin from `stdin`.
fn cat(tool: &str, args: &[&str], stdin: Option<&Path>) -> Output {
    let mut c = if tool == "samtools" { Command::new("samtools") } else { fasthts() };
    offline(&mut c).arg("cat").args(args);
    if let Some(input) = stdin {
        c.stdin(Stdio::from(std::fs::File::open(input).unwrap()));
    }
    run(c)
}

/// The header and records of an alignment file as SAM text, by samtools,
/// without the @PG line that cat added (fasthts names itself there, and
/// its ID differs where samtools' would be `samtools.N`), which must be
/// there.
fn decoded(bytes: &[u8]) -> String {
    let mut c = Command::new("samtools");
    offline(&mut c).args(["view", "-h", "--no-PG", "-"]);
    let o = run_with_stdin(c, bytes.to_vec());
    assert!(o.status.success(), "samtools view: {}", text(&o.stderr));
    let sam = text(&o.stdout);
    let added = |l: &str| l.starts_with("@PG\t") && l.split('\t').any(|f| f.starts_with("CL:") && f.contains(" cat "));
    assert_eq!(sam.lines().filter(|l| added(l)).count(), 1, "cat's @PG line");
    sam.lines().filter(|l| !added(l)).map(|l| format!("{l}\n")).collect()
}

/// Both tools on the same command line: the same status, and with
/// `--no-PG` the same bytes; with the @PG line, the same content.
fn same(args: &[&str], stdin: Option<&Path>) {
    let theirs = cat("samtools", args, stdin);
    for threads in [None, Some("1"), Some("2")] {
        let mut ours_args: Vec<&str> = args.to_vec();
        if let Some(t) = threads {
            ours_args.splice(0..0, ["-@", t]);
        }
        let ours = cat("fasthts", &ours_args, stdin);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}: ours {}; samtools {}", text(&ours.stderr), text(&theirs.stderr));
        if args.contains(&"--no-PG") {
            assert!(ours.stdout == theirs.stdout, "{args:?}: bytes differ ({} vs {} bytes)", ours.stdout.len(), theirs.stdout.len());
        } else {
            assert!(decoded(&ours.stdout) == decoded(&theirs.stdout), "{args:?}: records or header differ");
        }
    }
}

/// `bgzip -d | bgzip` of `bam`: the same data cut into blocks elsewhere,
/// records in the header's block.
fn recompressed(bam: &Path, to: &Path) -> bool {
    let mut c = Command::new("sh");
    c.arg("-c").arg("bgzip -dc < \"$1\" | bgzip -c > \"$2\"").arg("sh").arg(bam).arg(to);
    run(c).status.success() && std::fs::metadata(to).is_ok_and(|m| m.len() > 0)
}

/// Every BAM of the corpus alone, twice, and between two bgzip-recompressed
/// copies of itself: samtools' bytes.
#[test]
fn bam_corpus_matches_samtools_byte_for_byte() {
    let Some(dir) = with_samtools("cat-corpus") else { return };
    if !require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links (Debian package libdeflate0)") {
        return;
    }
    let files = corpus();
    assert!(files.len() > 10, "corpus too small");
    for (i, file) in files.iter().enumerate() {
        let f = file.to_str().unwrap();
        let rb = dir.path(&format!("rb{i}.bam"));
        let rb_s = rb.to_str().unwrap().to_string();
        same(&["--no-PG", f], None);
        same(&["--no-PG", f, f], None);
        if recompressed(file, &rb) {
            same(&["--no-PG", &rb_s, f, &rb_s], None);
        }
        if i % 4 == 0 {
            same(&[f, &rb_s], None);
        }
    }
}

/// Standard input anywhere but first, as samtools; first, where samtools
/// 1.16 fails (it has closed it), the output samtools gives the file.
#[test]
fn standard_input() {
    let Some(_dir) = with_samtools("cat-stdin") else { return };
    let (a, b) = (data("small.bam"), data("unsorted.bam"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    same(&["--no-PG", a, "-"], Some(Path::new(b)));
    same(&["--no-PG", a, "-", a], Some(Path::new(b)));
    let theirs = cat("samtools", &["--no-PG", b, a], None);
    let ours = cat("fasthts", &["--no-PG", "-", a], Some(Path::new(b)));
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    assert!(ours.stdout == theirs.stdout);
    // From a pipe too.
    let mut c = Command::new("sh");
    c.arg("-c").arg(format!("cat '{b}' | '{}' cat --no-PG - '{a}'", env!("CARGO_BIN_EXE_fasthts")));
    let piped = run(c);
    assert!(piped.status.success() && piped.stdout == theirs.stdout, "{}", text(&piped.stderr));
}

/// `-h FILE` (SAM, BAM and CRAM headers), `-o`, and `-b` lists (with an
/// empty line and a CRLF ending; `:a,b` in place), as samtools.
#[test]
fn header_file_output_file_and_lists() {
    let Some(dir) = with_samtools("cat-options") else { return };
    let (a, b) = (data("small.bam"), data("unsorted.bam"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    // Headers naming the inputs' references: a's as SAM with a comment
    // added, as BAM, and as CRAM.
    let sam = dir.path("header.sam");
    let mut view = Command::new("samtools");
    view.args(["view", "-H", "--no-PG"]).arg(a);
    let mut header = text(&run(view).stdout);
    header.push_str("@CO\tfrom -h\n");
    std::fs::write(&sam, header).unwrap();
    let cram = dir.path("header.cram");
    let mut view = Command::new("samtools");
    offline(&mut view).args(["view", "-C", "--no-PG", "-o"]).arg(&cram).arg(a);
    assert!(run(view).status.success());
    let rb = dir.path("rb.bam");
    assert!(recompressed(Path::new(a), &rb));
    let (sam, cram, rb) = (sam.to_str().unwrap(), cram.to_str().unwrap(), rb.to_str().unwrap());
    for pg in [&["--no-PG"][..], &[]] {
        for header in [sam, a, cram] {
            let mut args = pg.to_vec();
            args.extend(["-h", header, rb, a]);
            same(&args, None);
        }
    }
    let list = dir.path("list.txt");
    std::fs::write(&list, format!("{b}\n\n{a}\r\n")).unwrap();
    let list = list.to_str().unwrap();
    same(&["--no-PG", "-b", list, a], None);
    same(&["--no-PG", "-b", list, "-b", list], None);
    let inline = format!(":{a},{b}");
    same(&["--no-PG", "-b", &inline], None);
    // -o: the bytes of standard output.
    let (ours, theirs) = (dir.path("ours.bam"), dir.path("theirs.bam"));
    let o = cat("fasthts", &["--no-PG", "-o", ours.to_str().unwrap(), a, b], None);
    assert!(o.status.success() && o.stdout.is_empty(), "{}", text(&o.stderr));
    assert!(cat("samtools", &["--no-PG", "-o", theirs.to_str().unwrap(), a, b], None).status.success());
    assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap());
    let leftovers: Vec<_> =
        std::fs::read_dir(&dir.0).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().contains(".tmp.")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// CRAM: samtools split's parts (one read group each, renumbered into the
/// first part's header), with and without `-h`, and inputs of two CRAM
/// versions (refused by both).
#[test]
fn cram_matches_samtools_byte_for_byte() {
    let Some(dir) = with_samtools("cat-cram") else { return };
    let cram = dir.path("all.cram");
    let mut view = Command::new("samtools");
    offline(&mut view).args(["view", "--no-PG", "-C", "-o"]).arg(&cram).arg(data("small.bam"));
    assert!(run(view).status.success());
    let mut split = Command::new("samtools");
    offline(&mut split).current_dir(&dir.0).args(["split", "--no-PG", "-f", "part_%!.%.", "--output-fmt", "cram"]).arg(&cram);
    let o = run(split);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let part = |rg: &str| dir.path(&format!("part_{rg}.cram")).to_str().unwrap().to_string();
    let (rg1, rg2, rg3) = (part("rg1"), part("rg2"), part("rg3"));
    let all = cram.to_str().unwrap();
    same(&["--no-PG", &rg1, &rg2, &rg3], None);
    same(&["--no-PG", &rg3, &rg1], None);
    same(&["--no-PG", all, &rg2], None);
    same(&["--no-PG", "-h", all, &rg2, &rg1], None);
    same(&[&rg1, &rg2], None);
    // To a file: htslib writes its name into the file definition; the
    // same name in two directories gives samtools' bytes.
    for (tool, side) in [("fasthts", "ours"), ("samtools", "theirs")] {
        let work = dir.path(side);
        std::fs::create_dir_all(&work).unwrap();
        let mut c = if tool == "samtools" { Command::new("samtools") } else { fasthts() };
        offline(&mut c).current_dir(&work).args(["cat", "--no-PG", "-o", "x.cram", &rg1, &rg2]);
        assert!(run(c).status.success(), "{tool}");
    }
    assert!(std::fs::read(dir.path("ours/x.cram")).unwrap() == std::fs::read(dir.path("theirs/x.cram")).unwrap());
    let v31 = dir.path("v31.cram");
    let mut view = Command::new("samtools");
    offline(&mut view).args(["view", "--no-PG", "-C", "--output-fmt-option", "version=3.1", "-o"]).arg(&v31).arg(&rg2);
    assert!(run(view).status.success());
    let ours = cat("fasthts", &["--no-PG", &rg1, v31.to_str().unwrap()], None);
    assert_eq!(ours.status.code(), Some(1));
    assert!(text(&ours.stderr).contains("differing CRAM version numbers"), "{}", text(&ours.stderr));
    // samtools fails too (at times by a double free in its error path).
    assert!(!cat("samtools", &["--no-PG", &rg1, v31.to_str().unwrap()], None).status.success());
}

/// One line naming the input, status 1, no output file: a missing file,
/// SAM, BAM and CRAM mixed, a BAM cut inside a block (samtools copies the
/// partial block with a warning and succeeds), a CRAM without its end, an
/// output that is an input.
#[test]
fn bad_input_fails_in_one_line_and_leaves_nothing() {
    let Some(dir) = with_samtools("cat-bad") else { return };
    let good = data("small.bam");
    let g = good.to_str().unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path("cut.bam");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let short = dir.path("short.bam");
    // The header's block and 10 bytes: samtools' "truncated file?".
    let first = fasthts::bgzf::Block::parse(&bytes, 0).unwrap().next_offset() as usize;
    std::fs::write(&short, &bytes[..first + 10]).unwrap();
    let sam = dir.path("in.sam");
    let mut view = Command::new("samtools");
    view.args(["view", "-h", "-o"]).arg(&sam).arg(&good);
    assert!(run(view).status.success());
    let cram = dir.path("in.cram");
    let mut view = Command::new("samtools");
    offline(&mut view).args(["view", "-C", "-o"]).arg(&cram).arg(&good);
    assert!(run(view).status.success());
    let cram_bytes = std::fs::read(&cram).unwrap();
    let cut_cram = dir.path("cut.cram");
    std::fs::write(&cut_cram, &cram_bytes[..cram_bytes.len() * 2 / 3]).unwrap();
    let missing = dir.path("missing.bam");
    let (cut_s, short_s, sam_s, cram_s, cut_cram_s, missing_s) = (
        cut.to_str().unwrap(),
        short.to_str().unwrap(),
        sam.to_str().unwrap(),
        cram.to_str().unwrap(),
        cut_cram.to_str().unwrap(),
        missing.to_str().unwrap(),
    );
    let out = dir.path("out.bam");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![missing_s], missing_s),
        (vec![g, missing_s], missing_s),
        (vec![sam_s], sam_s),
        (vec![g, sam_s], sam_s),
        (vec![g, cram_s], cram_s),
        (vec![cram_s, g], g),
        (vec![g, cut_s], cut_s),
        (vec![short_s, g], short_s),
        (vec![cram_s, cut_cram_s], cut_cram_s),
        (vec![g, out.to_str().unwrap()], out.to_str().unwrap()),
    ];
    std::fs::write(&out, b"not to be overwritten").unwrap();
    for (inputs, named) in cases {
        let mut args = vec!["-o", out.to_str().unwrap()];
        args.extend(&inputs);
        let o = cat("fasthts", &args, None);
        let err = text(&o.stderr);
        let errors: Vec<&str> = err.lines().filter(|l| !l.contains("warning:")).collect();
        assert_eq!(o.status.code(), Some(1), "{inputs:?}: {err}");
        assert_eq!(errors.len(), 1, "{inputs:?}: {err}");
        assert!(errors[0].starts_with("fasthts cat: ") && errors[0].contains(named), "{inputs:?}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"not to be overwritten", "{inputs:?}");
        let leftovers: Vec<PathBuf> = std::fs::read_dir(&dir.0)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".tmp."))
            .collect();
        assert!(leftovers.is_empty(), "{inputs:?}: {leftovers:?}");
    }
    // No input at all: the usage, status 1, as samtools.
    let o = cat("fasthts", &[], None);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("Usage: fasthts cat"));
    // A BAM without its EOF marker: its last 28 bytes copied, with
    // samtools' warnings, and the same bytes.
    let no_eof = dir.path("no_eof.bam");
    std::fs::write(&no_eof, &bytes[..bytes.len() - 28]).unwrap();
    let n = no_eof.to_str().unwrap();
    same(&["--no-PG", g, n, g], None);
    let warned = text(&cat("fasthts", &["--no-PG", n], None).stderr);
    assert!(warned.contains("EOF marker is absent") && warned.contains("unexpected block structure"), "{warned}");
}

/// A reader that goes away ends fasthts as it ends samtools (SIGPIPE,
/// status 141), BAM and CRAM alike (htslib 1.16 recurses without end when
/// its last CRAM write fails: it never sees the pipe); a full disk is one
/// line naming the output.
#[test]
fn closed_pipe_and_full_disk() {
    let Some(dir) = with_samtools("cat-pipes") else { return };
    let bam = data("small.bam");
    let cram = dir.path("in.cram");
    let mut view = Command::new("samtools");
    offline(&mut view).args(["view", "-C", "-o"]).arg(&cram).arg(&bam);
    assert!(run(view).status.success());
    let bin = env!("CARGO_BIN_EXE_fasthts");
    for input in [&bam, &cram] {
        let i = input.to_str().unwrap();
        let mut c = Command::new("bash");
        offline(&mut c).arg("-c").arg(format!("'{bin}' cat '{i}' '{i}' '{i}' | head -c 100 > /dev/null; echo ${{PIPESTATUS[0]}}"));
        let o = run(c);
        assert_eq!(text(&o.stdout).trim(), "141", "{i}: {}", text(&o.stderr));
        let full = cat("fasthts", &["-o", "/dev/full", i, i], None);
        assert_eq!(full.status.code(), Some(1), "{i}");
        assert_eq!(text(&full.stderr).trim(), "fasthts cat: /dev/full: No space left on device", "{i}");
    }
}
