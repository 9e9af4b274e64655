//! CRAM output (issue 21) against samtools 1.16: `sort -O cram` / `-o
//! x.cram` and `view -C` / `-O cram`, with `--reference`/`-T`, written by
//! htslib as samtools writes it. Single-threaded the bytes are samtools'
//! (htslib puts the output's name in the file definition, so both write the
//! same path); with threads htslib's own output varies from run to run
//! (samtools' too), so there the decoded records are compared.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An unsorted generated SAM and its genome's FASTA (indexed) in `dir`.
fn generate(dir: &Path) -> (PathBuf, PathBuf) {
    let fasta = dir.join("ref.fa");
    let fasta_arg = fasta.to_str().unwrap().to_string();
    let args = ["-q", "--seed", "23", "--reads", "2500", "--refs", "3", "--ref-len", "60000", "--unsorted", "--reference-fasta", &fasta_arg];
    let sam = fasthts_testgen::cli::sam(&args).unwrap();
    let sam_path = dir.join("reads.sam");
    std::fs::write(&sam_path, sam).unwrap();
    let out = tool(Command::new("samtools"), &[&"faidx", &fasta]);
    assert!(out.status.success());
    (sam_path, fasta)
}

/// `program ARGS`, htslib looking for references nowhere but where the
/// options or the file say (no network, no cache).
fn tool(mut program: Command, args: &[&dyn AsRef<OsStr>]) -> Output {
    program.args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    run(program)
}

fn ok(out: Output, what: &str) -> Output {
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
    out
}

/// The records and header of a CRAM as `samtools view -h --no-PG` decodes them.
fn decoded(cram: &Path, fasta: &Path) -> String {
    text(&ok(tool(Command::new("samtools"), &[&"view", &"-h", &"--no-PG", &"-T", &fasta, &cram]), "samtools view").stdout)
}

/// Runs samtools then fasthts with the same `args` writing `out` (the
/// same name: it is in the file's bytes); returns (samtools', fasthts')
/// bytes of `out` and of each of `also` (an index).
fn both(args: &[&dyn AsRef<OsStr>], out: &Path, also: &[&Path]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let read = || {
        let files: Vec<Vec<u8>> = std::iter::once(out).chain(also.iter().copied()).map(|p| std::fs::read(p).unwrap()).collect();
        for p in std::iter::once(out).chain(also.iter().copied()) {
            std::fs::remove_file(p).unwrap();
        }
        files
    };
    ok(tool(Command::new("samtools"), args), "samtools");
    let want = read();
    ok(tool(fasthts(), args), "fasthts");
    (want, read())
}

#[test]
fn sort_writes_samtools_cram_bytes_single_threaded_and_its_records_with_threads() {
    let Some(dir) = with_samtools("cram-out-sort") else { return };
    let (sam, fasta) = generate(&dir.path(""));
    let out = dir.path("sorted.cram");
    let crai = dir.path("sorted.cram.crai");
    let cases: &[(&[&str], &str)] = &[
        (&["-O", "cram"], "3.0 by coordinate"),
        (&["-n", "-O", "cram,version=3.1"], "3.1 by name"),
        (&["-O", "cram", "--output-fmt-option", "version=2.1", "--output-fmt-option", "seqs_per_slice=300"], "2.1, small slices"),
        (&["-O", "cram,embed_ref=1", "-l", "1"], "embedded reference, level 1"),
        // The format from the name.
        (&[], "from the .cram name"),
        (&["--write-index"], "with its .crai"),
    ];
    for (extra, what) in cases {
        let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"sort", &"-@1", &"--no-PG", &"--reference", &fasta, &"-o", &out];
        args.extend(extra.iter().map(|a| a as &dyn AsRef<OsStr>));
        args.push(&sam);
        let index: &[&Path] = if extra.contains(&"--write-index") { &[&crai] } else { &[] };
        let (want, got) = both(&args, &out, index);
        assert!(want[0] == got[0], "{what}: CRAM bytes differ from samtools'");
        if !index.is_empty() {
            assert!(want[1] == got[1], "{what}: .crai bytes differ from samtools'");
        }
    }
    // Threads: the records and header decode as samtools' do.
    for extra in [&["-O", "cram"][..], &["-n", "-O", "cram,version=3.1"]] {
        let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"sort", &"-@2", &"--no-PG", &"--reference", &fasta];
        args.extend(extra.iter().map(|a| a as &dyn AsRef<OsStr>));
        let want_path = dir.path("want.cram");
        let mut s = args.clone();
        s.extend([&"-o" as &dyn AsRef<OsStr>, &want_path, &sam]);
        ok(tool(Command::new("samtools"), &s), "samtools -@2");
        let mut f = args.clone();
        f.extend([&"-o" as &dyn AsRef<OsStr>, &out, &sam]);
        ok(tool(fasthts(), &f), "fasthts -@2");
        assert_eq!(decoded(&out, &fasta), decoded(&want_path, &fasta), "{extra:?} -@2: decoded CRAM differs");
    }
    // With @PG: the same records and header but fasthts' own @PG line.
    ok(tool(fasthts(), &[&"sort", &"--reference", &fasta, &"-o", &out, &sam]), "fasthts with @PG");
    let ours = decoded(&out, &fasta);
    assert!(ours.lines().any(|l| l.starts_with("@PG\tID:fasthts\tPN:fasthts")), "no @PG line");
}

#[test]
fn sort_to_cram_on_standard_output_and_without_a_reference_is_what_samtools_writes() {
    let Some(dir) = with_samtools("cram-out-stdout") else { return };
    let (sam, fasta) = generate(&dir.path(""));
    let args: [&dyn AsRef<OsStr>; 6] = [&"sort", &"-@1", &"--no-PG", &"-O", &"cram", &sam];
    let want = ok(tool(Command::new("samtools"), &args), "samtools");
    let got = ok(tool(fasthts(), &args), "fasthts");
    // No reference anywhere: htslib embeds it (embed_ref=2) and says so.
    assert!(got.stdout == want.stdout, "standard output without a reference: CRAM bytes differ");
    assert!(text(&got.stderr).contains("Enabling embed_ref=2 option"), "{}", text(&got.stderr));
    let with_ref: Vec<&dyn AsRef<OsStr>> = vec![&"sort", &"-@1", &"--no-PG", &"-O", &"cram", &"--reference", &fasta, &sam];
    let want = ok(tool(Command::new("samtools"), &with_ref), "samtools");
    let got = ok(tool(fasthts(), &with_ref), "fasthts");
    assert!(got.stdout == want.stdout, "standard output: CRAM bytes differ");
    assert!(got.stderr.is_empty(), "{}", text(&got.stderr));
}

#[test]
fn cram_output_refuses_a_missing_reference_a_directory_its_input_and_long_references() {
    let Some(dir) = with_samtools("cram-out-bad") else { return };
    let (sam, fasta) = generate(&dir.path(""));
    let one_line = |out: &Output, want: &str| {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    };
    let out = dir.path("x.cram");
    let missing = dir.path("missing.fa");
    one_line(
        &tool(fasthts(), &[&"sort", &"--reference", &missing, &"-o", &out, &sam]),
        &format!("{}: cannot read the reference FASTA", missing.display()),
    );
    one_line(&tool(fasthts(), &[&"sort", &"-O", &"cram", &"--reference", &fasta, &"-o", &dir.path(""), &sam]), "Is a directory");
    // Sorted in place, as samtools sorts: the same records as sorted to
    // another file.
    ok(tool(fasthts(), &[&"sort", &"--reference", &fasta, &"-o", &out, &sam]), "sort to CRAM");
    let elsewhere = dir.path("elsewhere.cram");
    ok(tool(fasthts(), &[&"sort", &"-n", &"--reference", &fasta, &"-o", &elsewhere, &out]), "sort to another CRAM");
    ok(tool(fasthts(), &[&"sort", &"-n", &"--reference", &fasta, &"-o", &out, &out]), "sort a CRAM in place");
    let records = |p: &Path| tool(Command::new("samtools"), &[&"view", &"--no-PG", &"-T", &fasta, &p]).stdout;
    assert!(records(&out) == records(&elsewhere), "sorted in place: records differ");
    std::fs::remove_file(&out).unwrap();
    // References longer than CRAM 3 can place: samtools' words.
    let long = dir.path("long.sam");
    std::fs::write(&long, "@SQ\tSN:big\tLN:5000000000\nr1\t0\tbig\t3000000000\t60\t4M\t*\t0\t0\tACGT\tIIII\n").unwrap();
    let got = tool(fasthts(), &[&"sort", &"-O", &"cram", &"-o", &out, &long]);
    let want = tool(Command::new("samtools"), &[&"sort", &"-O", &"cram", &"-o", &out, &long]);
    assert_eq!((got.status.code(), want.status.code()), (Some(1), Some(1)));
    assert_eq!(text(&got.stderr).strip_prefix("fasthts sort: "), text(&want.stderr).strip_prefix("samtools sort: "));
    assert!(!out.exists(), "nothing left");
    assert_eq!(std::fs::read_dir(dir.path("")).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains("tmp")).count(), 0);
}

#[test]
fn view_writes_samtools_cram_with_c_o_cram_and_a_cram_name() {
    let Some(dir) = with_samtools("cram-out-view") else { return };
    let (sam, fasta) = generate(&dir.path(""));
    let bam = dir.path("sorted.bam");
    ok(tool(Command::new("samtools"), &[&"sort", &"-o", &bam, &sam]), "samtools sort");
    ok(tool(Command::new("samtools"), &[&"index", &bam]), "samtools index");
    let out = dir.path("view.cram");
    let (unselected, crai, u_crai) = (dir.path("rest.cram"), dir.path("view.cram.crai"), dir.path("rest.cram.crai"));
    let cases: &[(&[&str], &str)] = &[
        (&["-C"], "-C"),
        (&["-O", "cram"], "-O cram"),
        (&["--output-fmt", "cram,version=3.1"], "--output-fmt cram,version=3.1"),
        (&["-C", "-q", "30", "chr1", "chr2:1000-20000"], "-C regions"),
        (&["-b", "-C", "-h"], "-b then -C"),
        (&[], "from the .cram name"),
    ];
    for (extra, what) in cases {
        let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"view", &"-@1", &"--no-PG", &"-T", &fasta, &"-o", &out, &bam];
        args.extend(extra.iter().map(|a| a as &dyn AsRef<OsStr>));
        let (want, got) = both(&args, &out, &[]);
        assert!(want[0] == got[0], "view {what}: CRAM bytes differ from samtools'");
    }
    // -U and --write-index: both CRAMs and both .crai files.
    let args: Vec<&dyn AsRef<OsStr>> =
        vec![&"view", &"-@1", &"--no-PG", &"-C", &"--write-index", &"-q", &"30", &"-U", &unselected, &"-T", &fasta, &"-o", &out, &bam];
    let (want, got) = both(&args, &out, &[&crai, &unselected, &u_crai]);
    for (i, what) in ["view.cram", "view.cram.crai", "rest.cram", "rest.cram.crai"].iter().enumerate() {
        assert!(want[i] == got[i], "view -U --write-index: {what} differs from samtools'");
    }
    // Standard output, with threads: the same records.
    let args: [&dyn AsRef<OsStr>; 6] = [&"view", &"--no-PG", &"-C", &"-T", &fasta, &bam];
    let want = ok(tool(Command::new("samtools"), &args), "samtools view -C");
    let got = ok(tool(fasthts(), &args), "fasthts view -C");
    let (w, g) = (dir.path("w.cram"), dir.path("g.cram"));
    std::fs::write(&w, &want.stdout).unwrap();
    std::fs::write(&g, &got.stdout).unwrap();
    assert_eq!(decoded(&g, &fasta), decoded(&w, &fasta), "view -C to standard output: records differ");
    // A missing reference file: one line naming it, nothing written.
    let missing = dir.path("missing.fa");
    let out2 = dir.path("never.cram");
    let bad = tool(fasthts(), &[&"view", &"-C", &"-T", &missing, &"-o", &out2, &bam]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(text(&bad.stderr).lines().count(), 1, "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains(&format!("{}: cannot read the reference FASTA", missing.display())), "{}", text(&bad.stderr));
    assert!(!out2.exists());
}
