//! Headers of hundreds of thousands of `@SQ` lines (issue 39 item 17):
//! draft assemblies and transcriptomes. Every command maps, copies or walks
//! the references; a path quadratic in their number (a name hash that
//! clustered numbered names, a reader made and a block inflated for every
//! contig, a scan of the names per region) made `view -c` of such a SAM 10
//! to 25 times samtools' time and `flagstat` of such a BAM 40 times. The
//! commands must give samtools' output, in a time of the order of
//! samtools' (the bound is loose: the machine may be loaded, and a
//! quadratic path misses it by far).

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// References in the header.
const REFS: usize = 300_000;
/// Every this-many-th reference has reads (three each): 20,000 contigs with
/// reads, so that region-by-region readers meet as many small regions.
const READ_EVERY: usize = 15;

/// A coordinate-sorted SAM over `REFS` references named as assemblers
/// name scaffolds, with reads on every `READ_EVERY`-th one, mates on other
/// references (RNEXT names looked up per record) and unplaced reads last.
fn many_reference_sam(rng: &mut Rng) -> Vec<u8> {
    let name = |i: usize| format!("scaffold_{i}_pilon");
    let len = |i: usize| 500 + (i * 7919) % 20_000;
    let mut s = String::with_capacity(40 * REFS + 200 * 3 * (REFS / READ_EVERY));
    s.push_str("@HD\tVN:1.6\tSO:coordinate\n");
    for i in 0..REFS {
        s.push_str(&format!("@SQ\tSN:{}\tLN:{}\n", name(i), len(i)));
    }
    s.push_str("@RG\tID:g\tSM:s\n@PG\tID:asm\tPN:asm\n");
    let mut n = 0;
    for i in (0..REFS).step_by(READ_EVERY) {
        let mut positions: Vec<u64> = (0..3).map(|_| 1 + rng.below(len(i) as u64 - 100)).collect();
        positions.sort_unstable();
        for pos in positions {
            let mate = rng.below(REFS as u64) as usize;
            let (flag, rnext, pnext) = match rng.below(4) {
                0 => (0, "*".to_string(), 0),
                1 => (16 | 1024, "*".to_string(), 0),
                2 => (99, "=".to_string(), pos + 50),
                _ => (65 | 32, name(mate), 1 + rng.below(len(mate) as u64 - 100)),
            };
            s.push_str(&format!(
                "r{n}\t{flag}\t{}\t{pos}\t{}\t20M\t{rnext}\t{pnext}\t0\tACGTACGTACGTACGTACGT\tIIIIIIIIIIIIIIIIIIII\tRG:Z:g\n",
                name(i),
                rng.below(61)
            ));
            n += 1;
        }
    }
    for k in 0..20 {
        s.push_str(&format!("u{k}\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n"));
    }
    s.into_bytes()
}

/// Runs `program args` and returns its output and wall time.
fn timed(program: &str, args: &[&str]) -> (std::process::Output, Duration) {
    let mut c = if program == "fasthts" { fasthts() } else { Command::new(program) };
    c.args(args);
    let start = Instant::now();
    let out = run_with_timeout(c, Duration::from_secs(60));
    (out, start.elapsed())
}

/// `samtools view -h --no-PG` of a BAM: its records and header as text.
fn decoded(bam: &Path) -> Vec<u8> {
    let mut c = Command::new("samtools");
    c.args(["view", "-h", "--no-PG"]).arg(bam);
    let out = run(c);
    assert!(out.status.success(), "samtools view {}: {}", bam.display(), text(&out.stderr));
    out.stdout
}

#[test]
fn commands_on_a_header_of_many_references_match_samtools_in_linear_time() {
    let Some(dir) = with_samtools("many-refs") else { return };
    let p = |name: &str| dir.path(name).to_string_lossy().into_owned();
    let sam = p("many.sam");
    std::fs::write(&sam, many_reference_sam(&mut Rng::new(39))).unwrap();
    let bam = p("many.bam");
    for args in [&["view", "--no-PG", "-b", "-o", &bam, &sam][..], &["index", &bam]] {
        let (out, _) = timed("samtools", args);
        assert!(out.status.success(), "samtools {args:?}: {}", text(&out.stderr));
    }
    // Regions by name, spread over the header (most without reads).
    let regions: Vec<String> = (0..2000).map(|k| format!("scaffold_{}_pilon", k * (REFS / 2000) + k % 7)).collect();
    let mut with_regions = vec!["view", "--no-PG", &bam];
    with_regions.extend(regions.iter().map(String::as_str));
    // Outputs written to files, one name per tool.
    let out = |tool: &str, name: &str| p(&format!("{tool}-{name}"));
    let (mut ours_total, mut theirs_total) = (Duration::ZERO, Duration::ZERO);
    let mut report = String::new();
    let jobs: Vec<(&str, Vec<String>, Option<&str>)> = vec![
        ("view -c SAM", vec!["view".into(), "-c".into(), sam.clone()], None),
        ("flagstat SAM", vec!["flagstat".into(), sam.clone()], None),
        ("flagstat BAM", vec!["flagstat".into(), bam.clone()], None),
        ("view -c BAM", vec!["view".into(), "-c".into(), bam.clone()], None),
        ("idxstats", vec!["idxstats".into(), bam.clone()], None),
        ("depth", vec!["depth".into(), bam.clone()], None),
        ("view regions", with_regions.iter().map(|s| s.to_string()).collect(), None),
        ("view -b SAM", vec!["view".into(), "--no-PG".into(), "-b".into(), "-o".into(), "{out}".into(), sam.clone()], Some("view.bam")),
        ("sort BAM", vec!["sort".into(), "--no-PG".into(), "-o".into(), "{out}".into(), bam.clone()], Some("sort.bam")),
        ("index", vec!["index".into(), "-o".into(), "{out}".into(), bam.clone()], Some("index.bai")),
    ];
    for (what, args, output) in &jobs {
        let mut results = Vec::new();
        for tool in ["fasthts", "samtools"] {
            let args: Vec<String> = args.iter().map(|a| if a == "{out}" { out(tool, output.unwrap()) } else { a.clone() }).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (o, t) = timed(tool, &args);
            assert!(o.status.success(), "{tool} {what}: {}", text(&o.stderr));
            results.push((o.stdout, t));
        }
        let [(ours, our_time), (theirs, their_time)] = <[_; 2]>::try_from(results).unwrap();
        match output {
            None => assert!(ours == theirs, "{what}: output differs from samtools'"),
            Some(name) if name.ends_with(".bam") => {
                assert!(decoded(Path::new(&out("fasthts", name))) == decoded(Path::new(&out("samtools", name))), "{what}: differs")
            }
            Some(name) => {
                assert!(std::fs::read(out("fasthts", name)).unwrap() == std::fs::read(out("samtools", name)).unwrap(), "{what}: differs")
            }
        }
        report.push_str(&format!("{what}: {our_time:.2?} (samtools {their_time:.2?})\n"));
        // Each command within a wide margin of samtools' time; a path
        // quadratic in the references took 4 to 40 times it here.
        assert!(our_time <= their_time * 4 + Duration::from_millis(500), "{what} took too long:\n{report}");
        ours_total += our_time;
        theirs_total += their_time;
    }
    assert!(ours_total <= theirs_total * 5 / 2 + Duration::from_secs(1), "too long in all:\n{report}");
    eprintln!("{report}");
}
