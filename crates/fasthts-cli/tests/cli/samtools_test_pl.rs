//! samtools' own test script (`test/test.pl` of Debian's samtools-test
//! package): its sections for the commands fasthts replaces, run with
//! fasthts in samtools' place, and run with samtools itself.
//!
//! test.pl runs `$bin/samtools`, `$bin` being the parent of its test
//! directory, and writes some outputs beside its data. So each run copies
//! the test directory into a temporary tree, writes there a `samtools`
//! that runs fasthts for the commands under test and Debian's samtools for
//! everything else (test.pl makes inputs with samtools view, sort, index),
//! and a copy of test.pl whose main part calls only the chosen sections.
//! The script's own code decides pass or fail; fasthts must pass every
//! case samtools passes.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// What one run of test.pl counted.
#[derive(Debug, PartialEq)]
struct Outcome {
    passed: u32,
    failed: u32,
    expected_failures: u32,
    unexpected_passes: u32,
}

/// Copies `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs test.pl's `sections` (Perl calls, e.g. `test_merge($opts, threads=>2)`)
/// with `samtools SUBCOMMAND` run by fasthts for each of `replaced`
/// (none: samtools itself); returns its counts and its output.
fn run_sections(data: &Path, sections: &[&str], replaced: &[&str], edits: &[Edit]) -> (Option<Outcome>, String) {
    let tree = TempDir::new("test-pl");
    let test_dir = tree.path("samtools/test");
    copy_tree(data, &test_dir);
    let shim = tree.path("samtools/samtools");
    let mut script = String::from("#!/bin/sh\n");
    if !replaced.is_empty() {
        script += &format!("case \"$1\" in {}) exec '{}' \"$@\";; esac\n", replaced.join("|"), env!("CARGO_BIN_EXE_fasthts"));
    }
    script += "exec samtools \"$@\"\n";
    std::fs::write(&shim, script).unwrap();
    std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The script up to its list of sections, the chosen ones, then its
    // summary and its subroutines.
    let mut source = std::fs::read_to_string(test_dir.join("test.pl")).unwrap();
    for edit in edits {
        assert!(source.contains(edit.from), "test.pl has changed: no {:?} ({})", edit.from, edit.why);
        source = source.replace(edit.from, edit.to);
    }
    let start = source.find("my $opts = parse_params();").expect("test.pl's main part");
    let summary = source.find("print \"\\nNumber of tests:\\n\";").expect("test.pl's summary");
    let calls: String = sections.iter().map(|s| format!("{s};\n")).collect();
    let chosen = format!("{}my $opts = parse_params();\n{calls}{}", &source[..start], &source[summary..]);
    let chosen_path = test_dir.join("chosen-sections.pl");
    std::fs::write(&chosen_path, chosen).unwrap();
    // Where test.pl is run from: some of its paths are relative to it.
    // Off the network: htslib would look CRAM references up at the EBI.
    let run = Command::new("perl")
        .arg(&chosen_path)
        .current_dir(tree.path("samtools"))
        .env("REF_PATH", "/nonexistent/%s")
        .env("REF_CACHE", "/nonexistent/%s")
        .output()
        .expect("perl");
    let log = format!("{}{}", text(&run.stdout), text(&run.stderr));
    let count = |label: &str| {
        log.lines()
            .find_map(|l| l.trim_start().strip_prefix(label))
            .and_then(|rest| rest.trim_start_matches([' ', '.']).trim().parse().ok())
    };
    let outcome = (|| {
        Some(Outcome {
            passed: count("passed ")?,
            failed: count("failed ")?,
            expected_failures: count("expected failure ")?,
            unexpected_passes: count("unexpected pass ")?,
        })
    })();
    (outcome, log)
}

/// A case fasthts fails on purpose: a text its failure report shows, and why.
struct Deliberate {
    shows: &'static str,
    why: &'static str,
}

/// A change to test.pl's expectations for fasthts' run, and why.
struct Edit {
    from: &'static str,
    to: &'static str,
    why: &'static str,
}

/// The sections with fasthts as `replaced` pass as they pass with samtools:
/// the same counts, none failed but the `deliberate` differences, and some run.
fn passes_as_with_samtools(sections: &[&str], replaced: &[&str], deliberate: &[Deliberate]) {
    passes_as_with_samtools_edited(sections, replaced, &[], deliberate)
}

/// As [`passes_as_with_samtools`], fasthts' run with test.pl changed by `edits`.
fn passes_as_with_samtools_edited(sections: &[&str], replaced: &[&str], edits: &[Edit], deliberate: &[Deliberate]) {
    if !have_samtools() {
        return;
    }
    let Some(data) = samtools_test_data() else { return };
    let (samtools, samtools_log) = run_sections(&data, sections, &[], &[]);
    let samtools = samtools.unwrap_or_else(|| panic!("test.pl with samtools did not finish:\n{samtools_log}"));
    assert!(samtools.passed > 0, "{sections:?} with samtools itself ran nothing:\n{samtools_log}");
    let (fasthts, log) = run_sections(&data, sections, replaced, edits);
    let fasthts = fasthts.unwrap_or_else(|| panic!("test.pl with fasthts as {replaced:?} stopped:\n{log}"));
    let n = deliberate.len() as u32;
    let expected = Outcome { passed: samtools.passed - n, failed: samtools.failed + n, ..samtools };
    assert_eq!(fasthts, expected, "{sections:?} with fasthts as samtools {replaced:?}:\n{log}");
    for d in deliberate {
        assert!(log.contains(d.shows), "expected the deliberate difference ({}) showing {:?}:\n{log}", d.why, d.shows);
    }
}

#[test]
fn faidx_and_fqidx_sections() {
    passes_as_with_samtools(&["test_faidx($opts)", "test_fqidx($opts)"], &["faidx", "fqidx"], &[]);
}

#[test]
fn bam2fq_section() {
    passes_as_with_samtools(&["test_bam2fq($opts)", "test_bam2fq($opts, threads=>2)"], &["fastq", "fasta", "bam2fq"], &[]);
}

#[test]
fn view_section() {
    let pg = Deliberate {
        shows: "|@PG\tID:fasthts\tPN:fasthts\n",
        why: "the @PG line names the program that wrote the file (test 'SAM add PG' expects ID:samtools)",
    };
    passes_as_with_samtools(&["test_view($opts)"], &["view"], &[pg]);
}

#[test]
fn sort_section() {
    passes_as_with_samtools(&["test_sort($opts)", "test_sort($opts, threads=>2)"], &["sort"], &[]);
}

/// Debian's samtools fails one idxstats case itself; fasthts gives the same.
#[test]
fn stats_idxstats_and_quickcheck_sections() {
    passes_as_with_samtools(
        &["test_stats($opts)", "test_idxstat($opts)", "test_quickcheck($opts)"],
        &["stats", "idxstats", "quickcheck"],
        &[],
    );
}

#[test]
fn cat_section() {
    let pg = Edit {
        from: "print $out \"\\@PG\\tID:samtools\\tPN:samtools\\n\";",
        to: "print $out \"\\@PG\\tID:fasthts\\tPN:fasthts\\n\";",
        why: "the @PG line cat adds names the program that wrote the file (test.pl ignores its VN, CL and PP)",
    };
    passes_as_with_samtools_edited(&["test_cat($opts)"], &["cat"], &[pg], &[]);
}

/// With samtools' own expected failures (two fixmate cases whose stderr
/// test.pl reads one line of): the same counts.
#[test]
fn fixmate_and_collate_sections() {
    passes_as_with_samtools(
        &["test_fixmate($opts)", "test_fixmate($opts, threads=>2)", "test_collate($opts)", "test_collate($opts, threads=>2)"],
        &["fixmate", "collate"],
        &[],
    );
}

/// With samtools' own expected failures (its refusals, whose messages
/// 1.16 no longer prints as the .err files say): the same counts.
#[test]
fn markdup_section() {
    passes_as_with_samtools(&["test_markdup($opts)", "test_markdup($opts, threads=>2)"], &["markdup"], &[]);
}

#[test]
fn merge_section() {
    passes_as_with_samtools(&["test_merge($opts)", "test_merge($opts, threads=>2)"], &["merge"], &[]);
}

/// index, and the view and merge runs through indexes test.pl makes
/// there (`-X`, `--write-index` to BAM, CRAM and `-O sam,level=5`).
#[test]
fn index_section() {
    passes_as_with_samtools(&["test_index($opts)", "test_index($opts, threads=>2)"], &["index", "view", "merge"], &[]);
}

/// Positions past 2^31 in SAM and bgzipped SAM: view of a whole file, of
/// a region through a CSI index and with `-L`, sort, merge, depth and a
/// sort | fixmate | sort chain (tview stays samtools').
#[test]
fn large_positions_section() {
    passes_as_with_samtools(&["test_large_positions($opts)"], &["view", "index", "sort", "merge", "depth", "fixmate"], &[]);
}
