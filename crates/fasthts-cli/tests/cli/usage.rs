//! The command-line surface (issues 19 and 20): numeric options refused
//! with one line before any output exists, usage errors with the status of
//! the tool each command replaces, help that reads like samtools' usage,
//! and the man pages made from the same definitions.

use crate::common::*;
use std::path::Path;

/// Every command's path (`["kmer", "count"]`) with its definition, leaf
/// commands only, hidden ones left out.
fn leaf_commands() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help").collect();
        if subs.is_empty() {
            out.push((path.clone(), cmd.clone()));
        }
        for sub in subs {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            walk(sub, p, out);
        }
    }
    let mut cli = fasthts_cli::command();
    cli.build();
    let mut out = Vec::new();
    walk(&cli, Vec::new(), &mut out);
    out
}

#[test]
fn every_option_is_described_once_with_its_default_once() {
    let commands = leaf_commands();
    assert!(commands.len() >= 11, "{} commands", commands.len());
    let mut problems = Vec::new();
    for (path, cmd) in &commands {
        let name = path.join(" ");
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let help = arg.get_long_help().or(arg.get_help()).map(|h| h.to_string()).unwrap_or_default();
            if help.trim().is_empty() {
                problems.push(format!("{name}: {id} has no description"));
            }
            // clap prints "[default: X]" for a default value: the text must
            // not say it again ("Default is 4000 [default: 4000]", "[768M]").
            let lower = help.to_ascii_lowercase();
            for default in arg.get_default_values() {
                let default = default.to_string_lossy().to_ascii_lowercase();
                if lower.contains("default") || lower.contains(&format!("[{default}]")) {
                    problems.push(format!("{name}: {id}'s default is stated twice: {help:?}"));
                }
            }
        }
        let help = cmd.clone().render_long_help().to_string();
        if !help.contains("Examples:") || help.split("Examples:").nth(1).unwrap().lines().filter(|l| l.contains("fasthts ")).count() < 2 {
            problems.push(format!("{name}: fewer than two examples"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn help_synopses_name_the_positional_arguments() {
    let usage = |args: &[&str]| {
        let mut c = fasthts();
        c.args(args).arg("--help");
        let out = run(c);
        assert!(out.status.success(), "{args:?}");
        text(&out.stdout).lines().find(|l| l.starts_with("Usage:")).unwrap().to_string()
    };
    assert_eq!(usage(&["snp-pileup"]), "Usage: fasthts snp-pileup [OPTIONS] <VCF> <OUTPUT> <BAM>...");
    assert!(usage(&["index"]).contains("<IN.bam> [<OUT.index>]"));
    assert_eq!(usage(&["flagstat"]), "Usage: fasthts flagstat [OPTIONS] <IN.bam>");
    // (`kmer count --help` is khmer's text: kmer_args::fasthts_help_states_its_own_defaults)
    for threads in [&["flagstat"][..], &["sort"], &["snp-pileup"]] {
        let mut c = fasthts();
        c.args(threads).arg("--help");
        assert!(text(&run(c).stdout).contains("[default: all cores]"), "{threads:?}: default threads not stated");
    }
}

#[test]
fn man_pages_are_generated_for_every_command() {
    let dir = TempDir::new("man");
    let out_dir = dir.path("man1");
    let mut c = fasthts();
    c.arg("generate-man-pages").arg(&out_dir);
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut expected = vec!["fasthts.1".to_string(), "fasthts-kmer.1".to_string()];
    expected.extend(leaf_commands().iter().map(|(path, _)| format!("fasthts-{}.1", path.join("-"))));
    expected.sort();
    let mut written: Vec<String> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(written, expected);
    let sort = std::fs::read_to_string(out_dir.join("fasthts-sort.1")).unwrap();
    assert!(sort.starts_with(".ie") || sort.contains(".TH"), "not a man page: {}", &sort[..200.min(sort.len())]);
    assert!(sort.contains("fasthts\\-sort") && sort.contains("Examples:"), "{sort}");
    // every option has its text (an option hidden from -h once had none)
    for page in &written {
        let text = std::fs::read_to_string(out_dir.join(page)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, w) in lines.windows(3).enumerate() {
            if w[0] == ".TP" && w[1].starts_with("\\fB") {
                assert!(!w[2].is_empty() && !w[2].starts_with('.'), "{page}:{}: {} has no text", i + 2, w[1]);
            }
        }
    }
    let count = std::fs::read_to_string(out_dir.join("fasthts-kmer-count.1")).unwrap();
    assert!(count.contains("number of tables to use in k\\-mer countgraph"), "{count}");
}

/// One refused command line: its exit status and a part of its one line.
struct Refused {
    args: &'static [&'static str],
    status: i32,
    says: &'static str,
}

const fn refused(args: &'static [&'static str], status: i32, says: &'static str) -> Refused {
    Refused { args, status, says }
}

/// Numbers without a meaning, and other usage errors, in every command:
/// each is refused before anything is written, with one line on stderr
/// naming the option and what it takes, and the status of the tool the
/// command replaces (samtools 1, khmer's argparse 2 or its own checks 1,
/// FACETS' argp 64). `IN` is a valid BAM, `FQ` valid reads, `OUT` a path
/// in the run's empty directory.
const REFUSED: &[Refused] = &[
    refused(&["flagstat", "-@", "x", "IN"], 1, "'--threads <INT>': expected a whole number, 0 or more"),
    refused(&["flagstat", "-@", "-1", "IN"], 1, "expected a whole number, 0 or more"),
    refused(&["flagstat", "-@", "1e19", "IN"], 1, "expected a whole number, 0 or more"),
    refused(&["flagstat", "-O", "xml", "IN"], 1, "[possible values: default, json, tsv]"),
    refused(&["flagstat", "--bogus", "IN"], 1, "unexpected argument '--bogus'"),
    refused(&["idxstats", "-@", "nan", "IN"], 1, "'--threads <INT>'"),
    refused(&["index", "-@", "inf", "IN"], 1, "'--threads <INT>'"),
    refused(&["index", "-m", "x", "-o", "OUT", "IN"], 1, "'-m <INT>': expected a whole number"),
    refused(&["sort", "-l", "10", "-o", "OUT", "IN"], 1, "'-l <INT>': expected a whole number from -1 to 9"),
    refused(&["sort", "-l", "-2", "-o", "OUT", "IN"], 1, "expected a whole number from -1 to 9"),
    refused(&["sort", "-m", "1.5G", "-o", "OUT", "IN"], 1, "e.g. 768M, 2G, 2g, 2GB, 2000M"),
    refused(&["sort", "-m", "nan", "-o", "OUT", "IN"], 1, "invalid memory size \"nan\""),
    refused(&["sort", "-m", "99999999999999999999G", "-o", "OUT", "IN"], 1, "is too large"),
    refused(&["sort", "-K", "99x", "-M", "-o", "OUT", "IN"], 1, "'-K <INT>': expected a whole number"),
    refused(&["sort", "--fan-in", "1", "-o", "OUT", "IN"], 1, "expected a whole number, 2 or more"),
    refused(&["sort", "-@", "-3", "-o", "OUT", "IN"], 1, "'--threads <INT>'"),
    refused(&["snp-pileup", "-P", "-5", "VCF", "OUT", "IN"], 64, "'--pseudo-snps <MULTIPLE>': expected a whole number, 0 or more"),
    refused(&["snp-pileup", "-d", "nan", "VCF", "OUT", "IN"], 64, "'--max-depth <DEPTH>': expected a whole number"),
    refused(&["snp-pileup", "-q", "1e3", "VCF", "OUT", "IN"], 64, "--min-map-quality"),
    refused(&["snp-pileup", "-Q", "x", "VCF", "OUT", "IN"], 64, "--min-base-quality"),
    refused(&["snp-pileup", "-r", "25,x", "VCF", "OUT", "IN"], 64, "expected comma-separated whole numbers"),
    refused(&["snp-pileup", "-@", "-1", "VCF", "OUT", "IN"], 64, "'--threads <INT>'"),
    refused(&["snp-pileup", "VCF", "OUT"], 64, "<BAM>"),
    refused(&["kmer", "count", "-x", "nan", "OUT", "FQ"], 2, "argument --max-tablesize/-x: expected a number from 0 to 1e15"),
    refused(&["kmer", "count", "-x", "inf", "OUT", "FQ"], 2, "expected a number from 0 to 1e15"),
    refused(&["kmer", "count", "-x", "1e19", "OUT", "FQ"], 2, "expected a number from 0 to 1e15"),
    refused(&["kmer", "count", "-x", "-5", "OUT", "FQ"], 2, "expected a number from 0 to 1e15"),
    refused(&["kmer", "count", "-M", "nan", "OUT", "FQ"], 2, "argument -M/--max-memory-usage: expected a number of bytes"),
    refused(&["kmer", "count", "-M", "inf", "OUT", "FQ"], 2, "K, M, G or T"),
    refused(&["kmer", "count", "-M", "1e30", "OUT", "FQ"], 2, "from 0 to 1e15"),
    refused(&["kmer", "count", "-M", "2000T", "OUT", "FQ"], 2, "from 0 to 1e15"),
    refused(&["kmer", "count", "-N", "x", "OUT", "FQ"], 2, "argument --n_tables/-N: invalid int value: 'x'"),
    refused(&["kmer", "count", "-k", "-1", "OUT", "FQ"], 2, "argument -k/--ksize: expected a whole number, 0 or more"),
    refused(&["kmer", "count", "-T", "x", "OUT", "FQ"], 2, "argument -T/--threads: invalid int value: 'x'"),
    refused(&["kmer", "count", "--fp-rate", "nan", "OUT", "FQ"], 2, "expected a number from 0 to 1"),
    refused(&["kmer", "count", "-U", "inf", "OUT", "FQ"], 2, "--unique-kmers"),
    refused(&["kmer", "count", "-k", "40", "OUT", "FQ"], 1, "--long-k"),
    refused(&["kmer", "normalize", "-x", "nan", "-o", "OUT", "FQ"], 2, "--max-tablesize"),
    refused(&["kmer", "normalize", "-M", "1e30", "-o", "OUT", "FQ"], 2, "--max-memory-usage"),
    refused(&["kmer", "normalize", "-C", "nan", "-o", "OUT", "FQ"], 2, "argument -C/--cutoff: invalid _in_range value: 'nan'"),
    refused(&["kmer", "normalize", "--report-frequency", "0", "-o", "OUT", "FQ"], 2, "--report-frequency"),
    refused(&["kmer", "trim-low-abund", "-x", "inf", "-o", "OUT", "FQ"], 2, "--max-tablesize"),
    refused(&["kmer", "trim-low-abund", "-M", "nan", "-o", "OUT", "FQ"], 2, "--max-memory-usage"),
    refused(&["kmer", "trim-low-abund", "-C", "-1", "-o", "OUT", "FQ"], 2, "--cutoff"),
    refused(&["kmer", "trim-low-abund", "-Z", "1e9", "-o", "OUT", "FQ"], 2, "--trim-at-coverage"),
    refused(&["kmer", "trim-low-abund", "-@", "nan", "-o", "OUT", "FQ"], 2, "--threads"),
    refused(&["kmer", "filter-abund", "-Z", "x", "-o", "OUT", "TABLE", "FQ"], 2, "--normalize-to"),
    refused(&["kmer", "filter-abund", "-C", "300", "-o", "OUT", "TABLE", "FQ"], 1, "cutoff < 256"),
    refused(&["kmer", "abundance-dist", "--plot", "h.pdf", "TABLE", "FQ", "OUT"], 2, "FILE.png or FILE.svg"),
    refused(&["kmer", "abundance-dist", "-T", "-2", "TABLE", "FQ", "OUT"], 2, "--threads"),
    refused(&["bogus"], 1, "fasthts: unrecognized subcommand 'bogus'"),
    refused(&["kmer", "bogus"], 2, "fasthts kmer: unrecognized subcommand 'bogus'"),
];

fn write_reads(path: &Path) {
    let mut fq = String::new();
    for i in 0..50 {
        fq.push_str(&format!("@r{i}\nACGTTGCAAGGCTTACGGATCCATGACGTTAGCAGT\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII\n"));
    }
    std::fs::write(path, fq).unwrap();
}

#[test]
fn meaningless_numbers_and_usage_errors_are_one_line_before_any_output() {
    let inputs = TempDir::new("usage-in");
    let fq = inputs.path("r.fq");
    write_reads(&fq);
    let table = inputs.path("t.ct");
    let mut c = fasthts();
    c.args(["kmer", "count", "-q", "-k", "17", "-x", "1e4"]).arg(&table).arg(&fq);
    assert!(run(c).status.success());
    let vcf = inputs.path("s.vcf");
    std::fs::write(&vcf, "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n").unwrap();
    let mut failures = Vec::new();
    for case in REFUSED {
        let work = TempDir::new("usage-run");
        let mut c = fasthts();
        c.current_dir(&work.0);
        for a in case.args {
            match *a {
                "IN" => c.arg(data("small.bam")),
                "FQ" => c.arg(&fq),
                "TABLE" => c.arg(&table),
                "VCF" => c.arg(&vcf),
                "OUT" => c.arg(work.path("out")),
                a => c.arg(a),
            };
        }
        let out = run(c);
        let err = text(&out.stderr);
        let what = case.args.join(" ");
        let left: Vec<_> = std::fs::read_dir(&work.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty() && !l.starts_with("** ERROR")).collect();
        // the k-mer scripts' usage errors are argparse's: the usage, then one line
        let argparse_error = case.status == 2
            && case.args[0] == "kmer"
            && err.starts_with(&format!("usage: fasthts kmer {} ", case.args[1]))
            && lines.last().is_some_and(|l| l.starts_with(&format!("fasthts kmer {}: error: ", case.args[1])) && l.contains(case.says));
        let one_line = lines.len() == 1 || case.status == 1 && case.args[0] == "kmer" || argparse_error;
        if out.status.code() != Some(case.status) || !err.contains(case.says) || !one_line || !out.stdout.is_empty() || !left.is_empty() {
            failures.push(format!("{what}: status {:?} (want {}), left {left:?}, stderr {err:?}", out.status.code(), case.status));
        }
        assert!(!err.contains("panicked"), "{what}: {err}");
    }
    eprintln!("usage errors: {} passed, {} failed", REFUSED.len() - failures.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn what_samtools_accepts_is_accepted() {
    let work = TempDir::new("usage-ok");
    let reference = {
        let mut c = fasthts();
        c.args(["sort", "--no-PG", "-o"]).arg(work.path("ref.bam")).arg(data("small.bam"));
        assert!(run(c).status.success());
        std::fs::read(work.path("ref.bam")).unwrap()
    };
    // -l -1 is the default level; memory sizes as samtools takes them.
    for extra in [&["-l", "-1"][..], &["-m", "5Mb"], &["-m", "2GB"], &["-m", "2G"], &["-m", "2g"], &["-m", "2000M"], &["-m", "1048576"]] {
        let mut c = fasthts();
        c.args(["sort", "--no-PG"]).args(extra).arg("-o").arg(work.path("out.bam")).arg(data("small.bam"));
        let out = run(c);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        assert!(std::fs::read(work.path("out.bam")).unwrap() == reference, "{extra:?}: output differs");
    }
    // samtools prints the usage of flagstat, index and idxstats on stdout
    // and succeeds when given nothing.
    for command in ["flagstat", "index", "idxstats"] {
        let out = run({
            let mut c = fasthts();
            c.arg(command);
            c
        });
        assert_eq!(out.status.code(), Some(0), "{command}");
        assert!(text(&out.stdout).contains("Usage: fasthts"), "{command}");
    }
}

/// An option given twice takes its last value, as samtools' getopt,
/// FACETS' argp and khmer's argparse take it (pipeline wrappers append the
/// user's options after their defaults): each command line here gives the
/// output of the same line with only the last value (flag filters, which
/// samtools ORs, with their union).
#[test]
fn options_given_twice_take_the_last_value() {
    let work = TempDir::new("usage-twice");
    let fq = work.path("r.fq");
    write_reads(&fq);
    let vcf = work.path("s.vcf");
    std::fs::write(&vcf, "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nref1\t1000\t.\tA\tC\t.\t.\t.\n").unwrap();
    let pairs: &[(&[&str], &[&str])] = &[
        (&["view", "-@2", "-@1", "-q", "10", "-q", "40", "IN"], &["view", "-@1", "-q", "40", "IN"]),
        // Flag filters collect, as samtools ORs them.
        (&["view", "--no-PG", "--no-PG", "-h", "-F", "4", "-F", "0x10", "IN"], &["view", "--no-PG", "-h", "-F", "0x14", "IN"]),
        (&["view", "-c", "-c", "-m", "5", "-m", "50", "IN"], &["view", "-c", "-m", "50", "IN"]),
        (&["depth", "-Q", "5", "-Q", "30", "-H", "-H", "-a", "IN"], &["depth", "-Q", "30", "-H", "-a", "IN"]),
        (&["flagstat", "-O", "json", "-O", "tsv", "IN"], &["flagstat", "-O", "tsv", "IN"]),
        (&["idxstats", "-@", "2", "-@", "1", "IN"], &["idxstats", "-@", "1", "IN"]),
        (&["sort", "-n", "-n", "--no-PG", "-l", "1", "-l", "0", "-o", "-", "IN"], &["sort", "-n", "--no-PG", "-l", "0", "-o", "-", "IN"]),
        (&["snp-pileup", "-q", "5", "-q", "20", "-Q", "0", "-Q", "10", "VCF", "OUT", "IN"], &["snp-pileup", "-q", "20", "-Q", "10", "VCF", "OUT", "IN"]),
        (&["kmer", "abundance-dist-single", "-k", "11", "-k", "13", "-q", "FQ", "-"], &["kmer", "abundance-dist-single", "-k", "13", "-q", "FQ", "-"]),
    ];
    let run_line = |args: &[&str]| {
        let mut c = fasthts();
        c.current_dir(&work.0);
        for a in args {
            match *a {
                "IN" => c.arg(data("small.bam")),
                "FQ" => c.arg(&fq),
                "VCF" => c.arg(&vcf),
                "OUT" => c.arg(work.path("out.csv")),
                a => c.arg(a),
            };
        }
        let mut out = run(c);
        // A command that writes a file (snp-pileup): its contents.
        if let Ok(written) = std::fs::read(work.path("out.csv")) {
            out.stdout = written;
            std::fs::remove_file(work.path("out.csv")).unwrap();
        }
        out
    };
    for (twice, once) in pairs {
        let (a, b) = (run_line(twice), run_line(once));
        assert!(a.status.success() && b.status.success(), "{twice:?}: {} / {}", text(&a.stderr), text(&b.stderr));
        assert!(!a.stdout.is_empty(), "{once:?}: no output");
        assert!(a.stdout == b.stdout, "{twice:?} and {once:?} differ");
    }
    // -h, -H and --no-header read in order, as samtools view does.
    let Some(_) = with_samtools("usage-header-order") else { return };
    let small = data("small.bam");
    for flags in [&["--no-header", "-H"][..], &["--no-header", "-h"], &["-H", "--no-header"], &["-h", "-H"], &["-H", "-h", "--no-header", "-h"]] {
        let mut s = std::process::Command::new("samtools");
        s.args(["view", "--no-PG"]).args(flags).arg(&small);
        let mut f = fasthts();
        f.args(["view", "--no-PG"]).args(flags).arg(&small);
        let (expected, got) = (run(s), run(f));
        assert!(expected.status.success() && got.status.success(), "{flags:?}: {}", text(&got.stderr));
        assert!(got.stdout == expected.stdout, "view {flags:?}: output differs from samtools'");
    }
}
