//! The k-mer scripts' command lines against khmer 3.0's argparse: every
//! case runs `fasthts kmer SCRIPT ARGS` and khmer's script with the same
//! arguments under the same name (argparse's `prog` is `sys.argv[0]`, set
//! to `fasthts kmer SCRIPT`), in the same directory, and compares the exit
//! status, stdout and stderr byte for byte (fasthts's banner names fasthts
//! and its version where khmer's names khmer, khmer's and screed's
//! versions: those lines are put in khmer's words first, after checking
//! that no borrowed version is printed).
//! khmer is required under CI=true.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output};


fn khmer_available() -> bool {
    have_khmer()
}

/// khmer's script for each fasthts k-mer script.
fn khmer_script(sub: &str) -> &'static str {
    KMER_SCRIPTS.iter().find(|(s, _)| *s == sub).unwrap_or_else(|| panic!("no khmer script for {sub}")).1
}

/// khmer's `script` run as `fasthts kmer <sub>` (its prog) in `dir`.
fn khmer_as(sub: &str, args: &[&str], dir: &Path, columns: &str) -> Output {
    let script = Path::new(KHMER_BIN).join(khmer_script(sub));
    let code = format!(
        "import sys; p = {:?}; sys.argv = ['fasthts kmer {sub}'] + sys.argv[1:]; exec(compile(open(p).read(), p, 'exec'), {{'__name__': '__main__'}})",
        script.to_str().unwrap()
    );
    let mut c = Command::new("/usr/bin/python3");
    c.arg("-c").arg(code).args(args).current_dir(dir).env("COLUMNS", columns);
    run(c)
}

fn fasthts_as(sub: &str, args: &[&str], dir: &Path, columns: &str) -> Output {
    let mut c = fasthts();
    c.arg("kmer").arg(sub).args(args).current_dir(dir).env("COLUMNS", columns);
    run(c)
}

/// fasthts's stderr with its banner's name and version lines in khmer
/// 3.0's words (the rest of the banner, the citations, stays as printed).
fn without_fasthts_version(stderr: &[u8]) -> String {
    let stderr = text(stderr);
    assert!(!stderr.contains("3.0.0a3") && !stderr.contains("screed"), "a borrowed version in fasthts' banner: {stderr}");
    let version = env!("CARGO_PKG_VERSION");
    let ours = format!("|| You are running fasthts version {version}\n");
    let khmers = "|| You are running khmer version 3.0.0a3\n|| You are also using screed version 1.0.5\n";
    stderr
        .replace(" in fasthts, which does khmer 3.0's work.\n", " in khmer.\n")
        .replace(&ours, khmers)
        .replace(&format!("details.\n\nfasthts {version}"), "details.\n\nkhmer 3.0.0a3")
}

/// The differences between the two runs of `sub args`, if any.
fn compare(sub: &str, args: &[&str], dir: &Path, columns: &str) -> Option<String> {
    let ours = fasthts_as(sub, args, dir, columns);
    let theirs = khmer_as(sub, args, dir, columns);
    let ours_err = without_fasthts_version(&ours.stderr);
    let theirs_err = text(&theirs.stderr);
    if ours.status.code() == theirs.status.code() && ours_err == theirs_err && ours.stdout == theirs.stdout {
        return None;
    }
    Some(format!(
        "kmer {sub} {args:?} (COLUMNS={columns}): status {:?} vs khmer's {:?}\n--- fasthts stderr\n{ours_err}--- khmer stderr\n{theirs_err}--- stdout\n{}\n--- khmer stdout\n{}",
        ours.status.code(),
        theirs.status.code(),
        text(&ours.stdout),
        text(&theirs.stdout)
    ))
}

/// Command lines argparse refuses (or ends, for `--version`/`--info`),
/// each with khmer's words, stream and status.
const REFUSED: &[(&str, &[&str])] = &[
    // unknown options, missing positionals (reported first), extra words
    ("count", &["--bogus"]),
    ("count", &["--bogus", "o.ct", "r.fa"]),
    ("abundance-dist", &["--bogus"]),
    ("abundance-dist", &["t.ct", "r.fa", "h.csv", "extra"]),
    ("normalize", &["--bogus"]),
    ("normalize", &["r.fa", "-k", "17", "r.fa"]),
    ("filter-abund", &["--bogus"]),
    ("filter-abund", &["-x", "t.ct", "r.fa"]),
    ("trim-low-abund", &["--bogus"]),
    ("trim-low-abund", &["-q", "--"]),
    // unique prefixes and ambiguous ones
    ("count", &["--ks", "17"]),
    ("count", &["--f", "1", "o.ct", "r.fa"]),
    ("normalize", &["--forc", "r.fa"]),
    ("trim-low-abund", &["--di", "r.fa"]),
    // missing values
    ("count", &["o.ct", "r.fa", "-k"]),
    ("normalize", &["-k", "17", "-k"]),
    ("filter-abund", &["-T"]),
    ("normalize", &["-o", "--", "r.fa"]),
    // values argparse's types refuse
    ("count", &["-k", "abc", "o.ct", "r.fa"]),
    ("count", &["-M", "abc", "o.ct", "r.fa"]),
    ("count", &["-U", "x", "o.ct", "r.fa"]),
    ("normalize", &["--fp-rate", "x", "r.fa"]),
    ("normalize", &["-C", "abc", "r.fa"]),
    ("filter-abund", &["-C", "x", "t.ct", "r.fa"]),
    ("filter-abund", &["-C", "300", "t.ct", "r.fa"]),
    ("trim-low-abund", &["-Z", "abc", "r.fa"]),
    ("count", &["-k", "abc"]),
    // invalid choices
    ("count", &["-s", "badfmt", "o.ct", "r.fa"]),
    ("count", &["--summary-info=badfmt", "o.ct", "r.fa"]),
    ("trim-low-abund", &["--summary-info", "badfmt", "r.fa"]),
    // explicit values for flags, mutually exclusive options
    ("normalize", &["--quiet=x", "r.fa"]),
    ("normalize", &["--gzip", "--bzip", "r.fa"]),
    ("abundance-dist", &["-zq"]),
    ("abundance-dist", &["-zx", "t.ct", "r.fa", "h.csv"]),
    // argparse names -x and -N long name first, as khmer declares them
    ("count", &["-x", "1e5", "-M", "1e6", "o.ct", "r.fa"]),
    ("count", &["-M", "1e6", "-x", "1e5", "o.ct", "r.fa"]),
    ("normalize", &["--max-t", "1e5", "--max-m", "1e6", "r.fa"]),
    ("count", &["-N", "x", "o.ct", "r.fa"]),
    ("count", &["--n", "4", "o.ct", "r.fa"]),
    ("normalize", &["--bzip", "--gzip", "r.fa"]),
    // khmer's own actions, met before anything else is checked
    ("count", &["--version"]),
    ("count", &["--info"]),
    ("normalize", &["--vers", "--bogus"]),
    ("normalize", &["--inf"]),
    ("abundance-dist", &["--info"]),
    ("filter-abund", &["--version", "-C", "x"]),
    ("trim-low-abund", &["--info", "r.fa"]),
    ("filter-abund", &["-C", "x", "--version"]),
];

#[test]
fn usage_errors_version_and_info_are_khmers() {
    if !khmer_available() {
        return;
    }
    let dir = TempDir::new("kargs");
    std::fs::write(dir.path("r.fa"), ">a\nACGTACGTACGTACGTACGTAAAAACCCCC\n").unwrap();
    let mut failures = Vec::new();
    for (sub, args) in REFUSED {
        failures.extend(compare(sub, args, &dir.0, "80"));
    }
    // argparse wraps the usage line to the terminal's width
    failures.extend(compare("normalize", &["--bogus"], &dir.0, "120"));
    failures.extend(compare("trim-low-abund", &["--bogus"], &dir.0, "50"));
    eprintln!("argparse cases: {} passed, {} failed", REFUSED.len() + 2 - failures.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every `fasthts kmer` script with its khmer script.
const KMER_SCRIPTS: &[(&str, &str)] = &[
    ("count", "load-into-counting.py"),
    ("abundance-dist", "abundance-dist.py"),
    ("normalize", "normalize-by-median.py"),
    ("filter-abund", "filter-abund.py"),
    ("trim-low-abund", "trim-low-abund.py"),
    ("abundance-dist-single", "abundance-dist-single.py"),
    ("filter-abund-single", "filter-abund-single.py"),
    ("count-median", "count-median.py"),
    ("unique-kmers", "unique-kmers.py"),
    ("interleave-reads", "interleave-reads.py"),
    ("split-paired-reads", "split-paired-reads.py"),
    ("extract-paired-reads", "extract-paired-reads.py"),
    ("extract-long-sequences", "extract-long-sequences.py"),
    ("fastq-to-fasta", "fastq-to-fasta.py"),
    ("readstats", "readstats.py"),
    ("sample-reads-randomly", "sample-reads-randomly.py"),
];

/// `-h`/`--help` of every script prints khmer's help (the banner on
/// stderr, argparse's text on stdout, status 0), wrapped as argparse
/// wraps it for the terminal's width; `-h` ends the parse wherever it is.
#[test]
fn help_is_khmers() {
    if !khmer_available() {
        return;
    }
    let dir = TempDir::new("kargs-help");
    let mut failures = Vec::new();
    let mut cases = 0;
    for (sub, _) in KMER_SCRIPTS {
        for (args, columns) in [(&["--help"][..], "80"), (&["-h"], "120"), (&["-q", "--he", "--bogus"], "52"), (&["-h"], "30")] {
            cases += 1;
            failures.extend(compare(sub, args, &dir.0, columns));
        }
    }
    eprintln!("help cases: {} passed, {} failed", cases - failures.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `fasthts help kmer <script>` is clap's help with fasthts's own words:
/// the options khmer hides and what fasthts does otherwise.
#[test]
fn fasthts_help_states_its_own_defaults() {
    for (sub, _) in KMER_SCRIPTS {
        let mut c = fasthts();
        c.args(["help", "kmer", sub]);
        let out = run(c);
        assert!(out.status.success(), "help kmer {sub}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(&format!("Usage: fasthts kmer {sub}")), "help kmer {sub}");
    }
    let mut c = fasthts();
    c.args(["help", "kmer", "count"]);
    let help = text(&run(c).stdout);
    for shown in ["[default: all cores]", "--n_tables", "--max-tablesize", "--long-k"] {
        assert!(help.contains(shown), "help kmer count does not show {shown}:\n{help}");
    }
}

/// Spellings argparse accepts give the same outputs as the plain ones:
/// `-k17`, `--ksize=17`, `'-k 17'`, a prefix `--ks 17`, bundled flags,
/// `--` before positionals, a repeated option (the last wins).
#[test]
fn argparse_spellings_give_the_same_table() {
    let dir = TempDir::new("kargs-ok");
    let reads = random_fastq(7, 300, 60, "r");
    std::fs::write(dir.path("r.fq"), reads).unwrap();
    let run_count = |args: &[&str]| -> Vec<u8> {
        let out_name = "t.ct";
        let _ = std::fs::remove_file(dir.path(out_name));
        let mut c = fasthts();
        c.args(["kmer", "count"]).args(args).current_dir(&dir.0);
        let out = run(c);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        std::fs::read(dir.path(out_name)).unwrap()
    };
    let plain = run_count(&["-q", "-k", "17", "-x", "1e5", "t.ct", "r.fq"]);
    for spelling in [
        &["-q", "-k17", "-x", "1e5", "t.ct", "r.fq"][..],
        &["-q", "--ksize=17", "--max-tablesize=1e5", "t.ct", "r.fq"],
        &["-q", "-k 17", "-x 1e5", "t.ct", "r.fq"],
        &["--qu", "--ks", "17", "--max-t", "1e5", "t.ct", "r.fq"],
        &["-qk17", "-x1e5", "--", "t.ct", "r.fq"],
        &["-q", "-k", "21", "-k", "17", "-x", "1e5", "t.ct", "--", "r.fq"],
        &["t.ct", "-q", "-k", "17", "-x", "1e5", "r.fq"],
    ] {
        assert!(run_count(spelling) == plain, "{spelling:?} gave another table");
    }
}

/// trim-low-abund's temporary directory (`./tmp<random>khmer`) as `TMP`.
pub(crate) fn tempdir_named(stderr: &str) -> String {
    stderr
        .split('\n')
        .map(|line| match (line.find("tmp"), line.find("khmer")) {
            (Some(a), Some(b)) if a < b => format!("{}TMP{}", &line[..a], &line[b + 5..]),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The files of `dir` and their contents.
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files.into_iter().map(|(name, bytes)| (name.clone(), in_khmer_words(&name, bytes))).collect()
}

/// Runs `sub args` with fasthts and with khmer, each in a fresh copy of
/// `inputs`; the differences in status, stdout, stderr and (after a
/// success) the files written, if any.
fn compare_run(sub: &str, args: &[&str], inputs: &Path) -> Option<String> {
    let copy = |tag: &str| {
        let d = TempDir::new(tag);
        for (name, bytes) in files_of(inputs) {
            std::fs::write(d.path(&name), bytes).unwrap();
        }
        d
    };
    let (ours_dir, theirs_dir) = (copy("kmsg-f"), copy("kmsg-k"));
    let ours = fasthts_as(sub, args, &ours_dir.0, "80");
    let theirs = khmer_as(sub, args, &theirs_dir.0, "80");
    let ours_err = tempdir_named(&without_fasthts_version(&ours.stderr));
    let theirs_err = tempdir_named(&without_khmer_banner(&text(&theirs.stderr)));
    let files_differ = ours.status.success() && files_of(&ours_dir.0) != files_of(&theirs_dir.0);
    if ours.status.code() == theirs.status.code() && ours_err == theirs_err && ours.stdout == theirs.stdout && !files_differ {
        return None;
    }
    Some(format!(
        "kmer {sub} {args:?}: status {:?} vs khmer's {:?}{}\n--- fasthts stderr\n{ours_err}--- khmer stderr\n{theirs_err}--- stdout same: {}",
        ours.status.code(),
        theirs.status.code(),
        if files_differ { " (files differ)" } else { "" },
        ours.stdout == theirs.stdout
    ))
}

/// The messages people and wrappers read, run by run: parameters and
/// warnings (a loaded table's own k and sizes, the options it ignores),
/// "output in ..." (a file, `-o -`'s "block device", `/dev/stdout`),
/// khmer's wording for a missing input, empty inputs (warned about,
/// skipped, their empty output written, status 0), trim-low-abund's
/// per-file and summary lines with -V, -U's sizing and its refusals, the
/// outputs and tables themselves.
#[test]
fn messages_outputs_and_sizes_are_khmers() {
    if !khmer_available() {
        return;
    }
    let inputs = TempDir::new("kmsg-in");
    std::fs::write(inputs.path("r.fq"), random_fastq(11, 400, 80, "r")).unwrap();
    std::fs::write(inputs.path("r2.fq"), random_fastq(12, 100, 80, "s")).unwrap();
    std::fs::write(inputs.path("empty.fa"), "").unwrap();
    let mut c = Command::new("/usr/bin/python3");
    c.arg(Path::new(KHMER_BIN).join("load-into-counting.py")).args(["-q", "-k", "17", "-x", "1e5", "t.ct", "r.fq"]).current_dir(&inputs.0);
    assert!(run(c).status.success());
    let cases: &[(&str, &[&str])] = &[
        ("normalize", &["-k", "17", "-C", "5", "r.fq"]),
        ("normalize", &["-k", "17", "-C", "5", "-o", "-", "r.fq"]),
        ("normalize", &["-k", "17", "-C", "5", "-o", "/dev/stdout", "r.fq"]),
        ("normalize", &["-k", "17", "-C", "5", "-o", "out.fq", "r.fq", "r2.fq"]),
        ("normalize", &["-q", "-k", "17", "r.fq"]),
        ("normalize", &["-l", "t.ct", "-k", "20", "r.fq"]),
        ("normalize", &["-l", "t.ct", "-M", "1e6", "-U", "1000", "r.fq"]),
        ("normalize", &["-k", "17", "empty.fa"]),
        ("normalize", &["-k", "17", "empty.fa", "r.fq"]),
        ("normalize", &["-k", "17", "missing.fa"]),
        ("normalize", &["-k", "17", "-f", "missing.fa", "r.fq"]),
        ("normalize", &["-k", "17", "-U", "3000", "r.fq"]),
        ("filter-abund", &["t.ct", "r.fq"]),
        ("filter-abund", &["-V", "-o", "out.fq", "t.ct", "r.fq", "r2.fq"]),
        ("trim-low-abund", &["-k", "17", "-V", "r.fq"]),
        ("trim-low-abund", &["-k", "17", "-o", "x.fq", "r.fq", "r2.fq"]),
        ("trim-low-abund", &["-k", "17", "--single-pass", "r.fq"]),
        ("trim-low-abund", &["-k", "17", "-U", "3000", "-V", "r.fq"]),
        ("trim-low-abund", &["-l", "t.ct", "-k", "19", "r.fq"]),
        ("count", &["-k", "17", "-U", "5000", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-U", "5000", "-x", "1e3", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-U", "5e7", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-U", "5000", "-M", "2000", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-U", "5000", "-M", "2000", "-f", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-U", "5000", "--fp-rate", "0.01", "o.ct", "r.fq"]),
        ("count", &["-k", "17", "-N", "3", "-U", "20000", "-x", "1e9", "o.ct", "r.fq"]),
        ("abundance-dist", &["t.ct", "r.fq", "h.csv"]),
    ];
    let mut failures: Vec<String> = cases.iter().filter_map(|(sub, args)| compare_run(sub, args, &inputs.0)).collect();
    // An empty table: khmer's traceback ends in its ValueError, status 1,
    // before the parameters; fasthts says the same in one line, with why.
    std::fs::write(inputs.path("e.ct"), "").unwrap();
    for sub in ["normalize", "trim-low-abund"] {
        let ours = fasthts_as(sub, &["-l", "e.ct", "r.fq"], &inputs.0, "80");
        let theirs = khmer_as(sub, &["-l", "e.ct", "r.fq"], &inputs.0, "80");
        let last = |e: &[u8]| text(e).trim_end().lines().last().unwrap_or("").to_string();
        let said = "Count graph file 'e.ct' is corrupt";
        if ours.status.code() != theirs.status.code()
            || !last(&ours.stderr).starts_with(&format!("** ERROR: {said} ("))
            || last(&theirs.stderr) != format!("ValueError: {said}")
            || text(&ours.stderr).contains("PARAMETERS")
        {
            failures.push(format!("kmer {sub} -l e.ct: {:?} {:?} vs khmer's {:?} {:?}", ours.status.code(), text(&ours.stderr), theirs.status.code(), last(&theirs.stderr)));
        }
    }
    eprintln!("message cases: {} passed, {} failed", cases.len() + 2 - failures.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `--gzip` and `--bzip` outputs of the scripts that write reads: the same
/// reads as khmer's once decompressed (fasthts writes gzip as BGZF members,
/// khmer one gzip member), per-input names and `-o` alike.
#[test]
fn compressed_outputs_decompress_to_khmers() {
    if !khmer_available() || !require(runs("bzip2", &["--help"]), "bzip2") {
        return;
    }
    let inputs = TempDir::new("kgz-in");
    std::fs::write(inputs.path("r.fq"), genomic_fastq(21, 300, 70, "r")).unwrap();
    std::fs::write(inputs.path("r2.fq"), genomic_fastq(21, 80, 70, "s")).unwrap();
    let mut c = Command::new("/usr/bin/python3");
    c.arg(Path::new(KHMER_BIN).join("load-into-counting.py")).args(["-q", "-k", "17", "-x", "1e5", "t.ct", "r.fq"]).current_dir(&inputs.0);
    assert!(run(c).status.success());
    let decompress = |path: &Path| -> Vec<u8> {
        let program = if path.extension().is_some_and(|e| e == "bz2") { "bzip2" } else { "gzip" };
        let out = Command::new(program).arg("-dc").arg(path).output().unwrap();
        assert!(out.status.success(), "{program} -dc {}", path.display());
        out.stdout
    };
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("normalize", &["-q", "-k", "17", "-C", "5", "--gzip", "r.fq", "r2.fq"], &["r.fq.keep", "r2.fq.keep"]),
        ("normalize", &["-q", "-k", "17", "-C", "5", "--bzip", "-o", "n.fq.bz2", "r.fq", "r2.fq"], &["n.fq.bz2"]),
        ("filter-abund", &["-q", "--gzip", "-o", "f.fq.gz", "t.ct", "r.fq"], &["f.fq.gz"]),
        ("filter-abund", &["-q", "--bzip", "t.ct", "r.fq", "r2.fq"], &["r.fq.abundfilt", "r2.fq.abundfilt"]),
        ("trim-low-abund", &["-q", "-k", "17", "--gzip", "r.fq"], &["r.fq.abundtrim"]),
        ("trim-low-abund", &["-q", "-k", "17", "--bzip", "-o", "t.fq.bz2", "r.fq", "r2.fq"], &["t.fq.bz2"]),
    ];
    let mut failures = Vec::new();
    for (sub, args, outputs) in cases {
        let (ours_dir, theirs_dir) = (TempDir::new("kgz-f"), TempDir::new("kgz-k"));
        for d in [&ours_dir, &theirs_dir] {
            for (name, bytes) in files_of(&inputs.0) {
                std::fs::write(d.path(&name), bytes).unwrap();
            }
        }
        let ours = fasthts_as(sub, args, &ours_dir.0, "80");
        let theirs = khmer_as(sub, args, &theirs_dir.0, "80");
        assert!(ours.status.success() && theirs.status.success(), "{sub} {args:?}: {} / {}", text(&ours.stderr), text(&theirs.stderr));
        for name in *outputs {
            // khmer's names say nothing of the compression (r.fq.keep is gzip)
            let bz = args.contains(&"--bzip");
            let read = |dir: &TempDir| {
                let p = dir.path(name);
                let tagged = dir.path(&format!("{name}.{}", if bz { "bz2" } else { "gz" }));
                if !name.ends_with(".gz") && !name.ends_with(".bz2") {
                    std::fs::copy(&p, &tagged).unwrap();
                    decompress(&tagged)
                } else {
                    decompress(&p)
                }
            };
            let (a, b) = (read(&ours_dir), read(&theirs_dir));
            if a != b || a.is_empty() {
                failures.push(format!("{sub} {args:?}: {name} differs ({} vs {} bytes)", a.len(), b.len()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A write that fails (a full disk: /dev/full) ends each script with one
/// error naming the output and status 1, never a panic.
#[test]
fn write_errors_name_the_output() {
    let dir = TempDir::new("kwrite");
    std::fs::write(dir.path("r.fq"), genomic_fastq(31, 500, 80, "r")).unwrap();
    let mut c = fasthts();
    c.args(["kmer", "count", "-q", "-k", "17", "-x", "1e5", "t.ct", "r.fq"]).current_dir(&dir.0);
    let made = run(c);
    assert!(made.status.success(), "{}", text(&made.stderr));
    for (sub, args) in [
        ("normalize", &["-q", "-k", "17", "-o", "/dev/full", "r.fq"][..]),
        ("normalize", &["-q", "-k", "17", "--gzip", "-o", "/dev/full", "r.fq"]),
        ("filter-abund", &["-q", "-C", "1", "--bzip", "-o", "/dev/full", "t.ct", "r.fq"]),
        ("trim-low-abund", &["-q", "-k", "17", "-o", "/dev/full", "r.fq"]),
        ("abundance-dist", &["-q", "-s", "t.ct", "r.fq", "/dev/full"]),
    ] {
        let out = fasthts_as(sub, args, &dir.0, "80");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sub} {args:?}: {err}");
        assert!(err.contains("/dev/full") && err.contains("No space left on device") && !err.contains("panicked"), "{sub} {args:?}: {err}");
    }
}

/// `n` reads of `len` bases from both strands of one 3 kb genome (so
/// k-mers repeat, as in sequencing data), named `<name><i>`.
fn genomic_fastq(seed: u64, n: usize, len: usize, name: &str) -> String {
    let mut rng = fasthts_testgen::rng::Rng::new(seed);
    let genome: Vec<u8> = (0..3000).map(|_| b"ACGT"[rng.below(4) as usize]).collect();
    let mut fq = String::new();
    for i in 0..n {
        let at = rng.below((genome.len() - len) as u64) as usize;
        let mut read = genome[at..at + len].to_vec();
        if rng.below(2) == 1 {
            read.reverse();
            for b in read.iter_mut() {
                *b = match *b {
                    b'A' => b'T',
                    b'C' => b'G',
                    b'G' => b'C',
                    _ => b'A',
                };
            }
        }
        fq.push_str(&format!("@{name}{i}\n{}\n+\n{}\n", String::from_utf8(read).unwrap(), "I".repeat(len)));
    }
    fq
}

/// trim-low-abund's progress lines (every 10,000 reads, in both passes:
/// `... FILE saved reads bp written written_bp`, `... x 2 ...`) as khmer
/// prints them, on 25,000 reads of which a third are covered once (set
/// aside for the second pass).
#[test]
fn trim_progress_lines_are_khmers() {
    if !khmer_available() {
        return;
    }
    let inputs = TempDir::new("kprog-in");
    let mut rng = fasthts_testgen::rng::Rng::new(0x7a11);
    let genomic = genomic_fastq(41, 25_000, 80, "r");
    let mut fq = String::new();
    for (i, record) in genomic.split_inclusive('\n').collect::<Vec<_>>().chunks(4).enumerate() {
        if i % 3 == 2 {
            let seq: String = (0..80).map(|_| b"ACGT"[rng.below(4) as usize] as char).collect();
            fq.push_str(&format!("{}{seq}\n+\n{}\n", record[0], "I".repeat(80)));
        } else {
            fq.push_str(&record.concat());
        }
    }
    std::fs::write(inputs.path("r.fq"), fq).unwrap();
    let failures: Vec<String> = [&["-k", "17", "-M", "1e7", "-V", "r.fq"][..], &["-k", "17", "-M", "1e7", "-o", "out.fq", "r.fq"]]
        .iter()
        .filter_map(|args| compare_run("trim-low-abund", args, &inputs.0))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // and the lines are there to compare
    let work = TempDir::new("kprog-run");
    std::fs::copy(inputs.path("r.fq"), work.path("r.fq")).unwrap();
    let err = text(&fasthts_as("trim-low-abund", &["-k", "17", "-M", "1e7", "r.fq"], &work.0, "80").stderr);
    assert!(err.contains("\n... r.fq ") && err.contains("\n... x 2 "), "{err}");
}
