//! Region queries on CRAM through its `.crai` (issue 21) against samtools
//! 1.16 and FACETS: `view` with regions, `-M`, `--region-file`, `-L`,
//! `-X`, `-c` and `-T`, `depth -r`/`-b`, and `snp-pileup`, on CRAM 3.0 and
//! 3.1 cut into many small containers (regions span several), in small
//! parallel windows at one and two threads; an unknown contig is warned
//! about and skipped; a CRAM without `.crai` is refused as samtools
//! refuses it.

use crate::common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `samtools ARGS` (or `fasthts ARGS`), htslib looking for references
/// nowhere but where the file or the options say (no network).
fn tool(program: Command, args: &[&dyn AsRef<OsStr>]) -> Output {
    let mut c = program;
    c.args(args).env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    run(c)
}

fn samtools(args: &[&dyn AsRef<OsStr>]) -> Output {
    let out = tool(Command::new("samtools"), args);
    assert!(out.status.success(), "samtools {:?}: {}", args.iter().map(|a| a.as_ref().to_owned()).collect::<Vec<_>>(), text(&out.stderr));
    out
}

/// A sorted SAM of generated reads on three contigs (and chrM), its FASTA,
/// and CRAM 3.0 and 3.1 of it in containers of 100 and 150 records, each
/// indexed by samtools.
fn crams(dir: &TempDir) -> (PathBuf, Vec<PathBuf>) {
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_str().unwrap().to_string();
    let args = ["-q", "--seed", "7", "--reads", "3000", "--refs", "3", "--ref-len", "60000", "--reference-fasta", &fasta_arg];
    let sam = dir.path("reads.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    samtools(&[&"faidx", &fasta]);
    let mut list = Vec::new();
    for (version, per_slice) in [("3.0", "100"), ("3.1", "150")] {
        let cram = dir.path(&format!("v{version}.cram"));
        let (v, s) = (format!("version={version}"), format!("seqs_per_slice={per_slice}"));
        samtools_cram(&sam, &fasta, &cram, &[&v, &s, "slices_per_container=1"]);
        list.push(cram);
    }
    (fasta, list)
}

/// samtools' and fasthts' output of the same view command, with fasthts
/// also in windows of 700 positions at one and at two threads.
fn same_view(options: &[&str], cram: &Path, regions: &[&str], fasta: &Path) {
    let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"view", &"--no-PG", &"-T", &fasta];
    args.extend(options.iter().map(|o| o as &dyn AsRef<OsStr>));
    args.push(&cram);
    args.extend(regions.iter().map(|r| r as &dyn AsRef<OsStr>));
    let want = samtools(&args);
    let what = format!("view {options:?} {} {regions:?}", cram.display());
    for extra in [&[][..], &["--window-bases", "700", "-@", "1"][..], &["--window-bases", "700", "-@", "2"][..]] {
        let mut ours = args.clone();
        ours.splice(1..1, extra.iter().map(|o| o as &dyn AsRef<OsStr>));
        let got = tool(fasthts(), &ours);
        assert!(got.status.success(), "{what} {extra:?}: {}", text(&got.stderr));
        // BAM: the same records and header (the compressor is not samtools').
        let body = |o: &Output| if options.contains(&"-b") { gunzip(&o.stdout) } else { o.stdout.clone() };
        assert!(body(&got) == body(&want), "{what} {extra:?}: output differs from samtools'");
        // samtools warns of an unknown region and goes on; so does fasthts.
        let warned = |o: &Output| text(&o.stderr).contains("specifies an invalid region or unknown reference");
        assert_eq!(warned(&got), warned(&want), "{what}: warnings differ: {}", text(&got.stderr));
    }
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut gzip = Command::new("gzip");
    gzip.arg("-dc");
    let out = run_with_stdin(gzip, bytes.to_vec());
    assert!(out.status.success() && !out.stdout.is_empty(), "not BGZF");
    out.stdout
}

#[test]
fn view_of_cram_regions_is_samtools_view() {
    let Some(dir) = with_samtools("cram-regions-view") else { return };
    let (fasta, list) = crams(&dir);
    let bed = dir.path("targets.bed");
    std::fs::write(&bed, "chr1\t100\t5000\nchr2\t20000\t20500\nchr1\t4000\t8000\nchrM\t10\t20\n").unwrap();
    let bed_arg = bed.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 14] = [
        (&[], &["chr1:100-2000"]),
        // Whole contigs and a long stretch: many containers each.
        (&[], &["chr1"]),
        (&[], &["chr2:5000-40000", "chr1:30000-30500"]),
        (&[], &["*"]),
        (&[], &["chr1:1-100", "nosuch", "chr2"]),
        (&["-h"], &["chrM:200-16000"]),
        (&["-c"], &["chr1", "chr2:1-30000"]),
        (&["-M"], &["chr1:1-5000", "chr1:3000-9000", "chr2", "*"]),
        (&["-c", "-M"], &["chr1:1-5000", "chr1:3000-9000"]),
        (&["-q", "30", "-f", "2", "-F", "0x400"], &["chr2:1000-60000"]),
        (&["-L", bed_arg], &[]),
        (&["--region-file", bed_arg], &[]),
        (&["-c", "--region-file", bed_arg], &[]),
        (&["-b"], &["chrM", "chr1:59000-60000"]),
    ];
    for cram in &list {
        for (options, regions) in cases {
            same_view(options, cram, regions, &fasta);
        }
        // -X: the index named after the input.
        let index = PathBuf::from(format!("{}.crai", cram.display()));
        let index_arg = index.to_str().unwrap();
        same_view(&["-X"], cram, &[index_arg, "chr2:100-20000"], &fasta);
    }
}

#[test]
fn depth_of_cram_regions_is_samtools_depth() {
    let Some(dir) = with_samtools("cram-regions-depth") else { return };
    let (fasta, list) = crams(&dir);
    let bam = dir.path("reads.bam");
    samtools(&[&"view", &"-b", &"-o", &bam, &dir.path("reads.sam")]);
    samtools(&[&"index", &bam]);
    let bed = dir.path("targets.bed");
    std::fs::write(&bed, "chr1\t100\t5000\nchr2\t20000\t20500\nchrM\t10\t20\n").unwrap();
    let cases: [&[&str]; 8] = [
        &["-r", "chr1:100-5000"],
        &["-a", "-r", "chr2"],
        &["-aa", "-r", "chr2:50000-70200"],
        &["-r", "chr1", "-Q", "20", "-q", "10"],
        &["-b", bed.to_str().unwrap()],
        &["-a", "-b", bed.to_str().unwrap()],
        &["-r", "chr1", "-b", bed.to_str().unwrap()],
        &["-r", "chrUn_gen1"],
    ];
    for options in cases {
        for inputs in [vec![&list[0]], vec![&list[1], &list[0]], vec![&list[0], &bam]] {
            let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"depth", &"--reference", &fasta];
            args.extend(options.iter().map(|o| o as &dyn AsRef<OsStr>));
            args.extend(inputs.iter().map(|p| p as &dyn AsRef<OsStr>));
            let want = samtools(&args);
            let got = tool(fasthts(), &args);
            assert!(got.status.success(), "depth {options:?} {inputs:?}: {}", text(&got.stderr));
            assert!(got.stdout == want.stdout, "depth {options:?} {inputs:?}: output differs from samtools'");
        }
    }
}

/// samtools depth decodes no bases (and so needs no reference) unless
/// `-l` asks for read lengths: neither does fasthts (issue 39). Without
/// the FASTA, every other option gives samtools' rows; `-l` fails in both.
#[test]
fn depth_of_cram_without_its_reference_is_samtools_depth() {
    let Some(dir) = with_samtools("cram-depth-no-reference") else { return };
    let (fasta, list) = crams(&dir);
    std::fs::rename(&fasta, dir.path("elsewhere.fa")).unwrap();
    let cases: [&[&str]; 6] = [&[], &["-a"], &["-s", "-Q", "20"], &["-q", "10", "-@", "2"], &["-r", "chr2:100-20000"], &["-s", "-r", "chr1"]];
    for options in cases {
        for inputs in [vec![&list[0]], vec![&list[1], &list[0]]] {
            let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"depth"];
            args.extend(options.iter().map(|o| o as &dyn AsRef<OsStr>));
            args.extend(inputs.iter().map(|p| p as &dyn AsRef<OsStr>));
            let want = samtools(&args);
            assert!(want.stdout.len() > 10_000, "depth {options:?}: too few rows to compare");
            let got = tool(fasthts(), &args);
            assert!(got.status.success(), "depth {options:?} {inputs:?}: {}", text(&got.stderr));
            assert!(got.stdout == want.stdout, "depth {options:?} {inputs:?}: output differs from samtools'");
        }
    }
    let lengths: [&dyn AsRef<OsStr>; 4] = [&"depth", &"-l", &"30", &list[0]];
    assert!(!tool(Command::new("samtools"), &lengths).status.success());
    let got = tool(fasthts(), &lengths);
    assert!(!got.status.success() && text(&got.stderr).contains("reference sequence of contig chr1 not found"), "{}", text(&got.stderr));
}

#[test]
fn a_cram_without_crai_is_refused_for_regions_as_by_samtools() {
    let Some(dir) = with_samtools("cram-regions-noindex") else { return };
    let (fasta, list) = crams(&dir);
    let bare = dir.path("bare.cram");
    std::fs::copy(&list[0], &bare).unwrap();
    for args in [
        vec![&"view" as &dyn AsRef<OsStr>, &"-T", &fasta, &bare, &"chr1"],
        vec![&"view", &"-T", &fasta, &"--region-file", &"/dev/null", &bare],
        vec![&"depth", &"--reference", &fasta, &"-r", &"chr1", &bare],
    ] {
        let want = tool(Command::new("samtools"), &args);
        assert!(!want.status.success(), "samtools {:?} should fail", args.iter().map(|a| a.as_ref()).collect::<Vec<_>>());
        let got = tool(fasthts(), &args);
        assert!(!got.status.success());
        assert!(got.stdout.is_empty());
        let err = text(&got.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{}: cannot load index", bare.display())), "{err}");
    }
    // The whole file needs no index.
    let got = tool(fasthts(), &[&"view", &"-c", &"-T", &fasta, &bare]);
    let want = samtools(&[&"view", &"-c", &"-T", &fasta, &bare]);
    assert_eq!(text(&got.stdout), text(&want.stdout));
}

/// FACETS' snp-pileup reads CRAM through htslib, and gives the same CSV
/// for a CRAM as for the BAM it was made from (checked with FACETS'
/// binary when the golden outputs were compared): so fasthts on CRAMs of
/// the golden BAMs must give FACETS' golden outputs.
#[test]
fn snp_pileup_of_crams_gives_facets_outputs() {
    let Some(dir) = with_samtools("cram-regions-snp") else { return };
    let golden = golden_snp_pileup();
    let fasta = golden.join("ref.fa");
    let mut crams = Vec::new();
    for (name, version) in [("normal", "3.0"), ("tumour", "3.1")] {
        let cram = dir.path(&format!("{name}.cram"));
        let v = format!("version={version}");
        samtools(&[&"view", &"-C", &"-T", &fasta, &"--output-fmt-option", &v, &"-o", &cram, &golden.join(format!("{name}.bam"))]);
        samtools(&[&"index", &cram]);
        crams.push(cram);
    }
    let cases: [(&str, &[&str]); 4] = [
        ("default.csv", &[]),
        ("q15_Q20_P100_r25,0.csv", &["-q15", "-Q20", "-P100", "-r25,0"]),
        ("A_x.csv", &["-A", "-x"]),
        ("d20.csv", &["-d", "20"]),
    ];
    let sites = golden.join("sites.vcf.gz");
    for (name, options) in cases {
        let want = std::fs::read(golden.join("out").join(name)).unwrap();
        for extra in [&["-@", "1"][..], &["-@", "2", "--region-size", "5000"][..]] {
            let out = dir.path(&format!("{name}.{}", extra.len()));
            let mut args: Vec<&dyn AsRef<OsStr>> = vec![&"snp-pileup", &"--reference", &fasta];
            args.extend(options.iter().chain(extra).map(|o| o as &dyn AsRef<OsStr>));
            args.extend([&sites as &dyn AsRef<OsStr>, &out, &crams[0], &crams[1]]);
            let got = tool(fasthts(), &args);
            assert!(got.status.success(), "snp-pileup {options:?} {extra:?}: {}", text(&got.stderr));
            assert!(std::fs::read(&out).unwrap() == want, "snp-pileup {options:?} {extra:?} of CRAMs: output differs from FACETS'");
        }
    }
    // The reference found by @SQ UR (as FACETS finds it), and -v's words.
    let out = dir.path("ur.csv");
    let got = tool(fasthts(), &[&"snp-pileup", &"-v", &golden.join("sites.vcf.gz"), &out, &crams[0], &golden.join("tumour.bam")]);
    assert!(got.status.success(), "{}", text(&got.stderr));
    assert!(std::fs::read(&out).unwrap() == std::fs::read(golden.join("out/default.csv")).unwrap());
    assert!(text(&got.stdout).starts_with(
        "Detected format for file 1: CRAM version 3.0 compressed sequence data\n\
         Detected format for file 2: BAM version 1 compressed sequence data\n"
    ));
    // Without a .crai (FACETS reads every file from its start; fasthts
    // indexes it in memory): the same bytes, on one and two threads, and
    // nothing is left beside the file. A BAM without an index alike.
    let bare = dir.path("bare.cram");
    std::fs::copy(&crams[0], &bare).unwrap();
    let bare_bam = dir.path("bare.bam");
    std::fs::copy(golden.join("tumour.bam"), &bare_bam).unwrap();
    let want = std::fs::read(golden.join("out/default.csv")).unwrap();
    for threads in ["1", "2"] {
        let out = dir.path(&format!("bare{threads}.csv"));
        let got = tool(fasthts(), &[&"snp-pileup", &"-@", &threads, &"--region-size", &"5000", &sites, &out, &bare, &bare_bam]);
        assert!(got.status.success(), "unindexed inputs: {}", text(&got.stderr));
        assert!(
            std::fs::read(&out).unwrap() == want,
            "snp-pileup of an unindexed CRAM and BAM at -@{threads}: output differs from FACETS'"
        );
    }
    let mut beside: Vec<_> = std::fs::read_dir(dir.path("")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    beside.retain(|n| n.starts_with("bare"));
    beside.sort();
    assert_eq!(beside, ["bare.bam", "bare.cram", "bare1.csv", "bare2.csv"]);
    // An unindexed CRAM that is not sorted: one line naming the file, no output.
    let unsorted = dir.path("unsorted.cram");
    let unsorted_sam = dir.path("unsorted.sam");
    let mut lines: Vec<String> =
        text(&samtools(&[&"view", &"-h", &golden.join("normal.bam")]).stdout).lines().map(str::to_string).collect();
    let first_record = lines.iter().position(|l| !l.starts_with('@')).unwrap();
    lines[first_record..].reverse();
    std::fs::write(&unsorted_sam, lines.join("\n") + "\n").unwrap();
    samtools(&[&"view", &"-C", &"-T", &fasta, &"-o", &unsorted, &unsorted_sam]);
    let got = tool(fasthts(), &[&"snp-pileup", &sites, &dir.path("unsorted.csv"), &unsorted]);
    assert!(!got.status.success());
    let said = text(&got.stderr);
    assert!(said.contains(&unsorted.display().to_string()) && said.trim_end().lines().count() == 1, "{said}");
    assert!(!dir.path("unsorted.csv").exists());
}
