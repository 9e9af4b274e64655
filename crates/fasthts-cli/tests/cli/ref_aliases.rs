//! Reference names by their `@SQ AN:` alternatives, as samtools 1.16 takes
//! them (htslib's `sam_hdr_name2tid`): regions of view (with and without
//! `-M`, `-c`), depth and coverage `-r`, stats' regions and `-t` file, and
//! view `-M -L`'s BED names, on a BAM whose header gives each reference two
//! more names; outputs equal to samtools' at 1 and 2 threads. A header
//! htslib cannot parse knows no name at all, as in samtools. Not compared:
//! `-M` with one reference named two ways in one command, where htslib's
//! multi-region iterator keeps one name's intervals and drops the other's
//! (fasthts reads both).

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The generated SAM with `AN:{i},alt{i}` added to its `i`th `@SQ` line
/// (chr1, chr2, chr3, chrM, chrUn_gen1, chrUn_gen2).
fn with_aliases(sam: &str) -> String {
    let mut i = 0;
    sam.lines()
        .map(|line| {
            if line.starts_with("@SQ\t") {
                i += 1;
                format!("{line}\tAN:{i},alt{i}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}

/// A coordinate-sorted BAM of the generator's references with `AN:`
/// alternatives (reads on chr1, chr2 and chrM), BAI-indexed, in a fresh
/// directory.
fn aliased_bam(tag: &str) -> Option<(TempDir, PathBuf)> {
    let dir = with_samtools(tag)?;
    let args =
        ["--seed", "11", "--refs", "3", "--ref-len", "30k", "--reads", "4000", "--read-len", "60-150", "--unmapped-fraction", "0.02", "-q"];
    let sam = String::from_utf8(fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    assert!(sam.contains("@SQ\tSN:chr1\t"), "the generator's references are chr1..chr3");
    let sam_path = dir.path("aliased.sam");
    std::fs::write(&sam_path, with_aliases(&sam)).unwrap();
    let bam = dir.path("aliased.bam");
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam_path);
    assert!(run(view).status.success());
    let mut index = Command::new("samtools");
    index.arg("index").arg(&bam);
    assert!(run(index).status.success());
    Some((dir, bam))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn view_regions_by_alternative_names_match_samtools() {
    let Some((dir, bam)) = aliased_bam("aliases-view") else { return };
    // Each reference named one way (chr3 has no reads; alt9 names none).
    let region_sets: &[&[&str]] = &[
        &["alt1"],
        &["1"],
        &["alt2:1,000-9,000"],
        &["4:500-10000"],
        &["{alt4}:100-2000"],
        &["alt1:1000-3000", "alt4:2500-4000", "2:100-900"],
        &["alt9", "3:1-100"],
        &["chr2:5000-6000", "alt3", "chrM:1-500"],
    ];
    let mut selected = 0;
    for regions in region_sets {
        for options in [&[][..], &["-c"], &["-M"], &["-M", "-c"]] {
            selected += crate::view::compare_on(options, &bam, regions);
        }
    }
    assert!(selected > 1000, "the regions select records ({selected} lines)");
    // One reference named two ways, region by region (with -M htslib's
    // multi-region iterator keeps one name's intervals of the two: not
    // compared).
    for options in [&[][..], &["-c"]] {
        crate::view::compare_on(options, &bam, &["alt4:1000-3000", "chrM:2500-4000", "4:100-900"]);
    }
    // -M -L: the BED names are looked up as the regions are.
    let bed = dir.path("aliases.bed");
    std::fs::write(&bed, "alt1\t100\t5000\n2\t2000\t9000\nchr3\t0\t700\nalt4\t50\t3000\nnone\t1\t5\n").unwrap();
    for options in [&["-L", s(&bed)][..], &["-M", "-L", s(&bed)], &["-M", "-c", "-L", s(&bed)]] {
        crate::view::compare_on(options, &bam, &[]);
    }
    crate::view::compare_on(&["-M", "-L", s(&bed)], &bam, &["alt1:1000-9000", "2", "chr3", "alt4:1-2000"]);
}

#[test]
fn an_unknown_alternative_is_warned_about_as_samtools_does() {
    let Some((_dir, bam)) = aliased_bam("aliases-unknown") else { return };
    let mut c = fasthts();
    c.args(["view", "-c"]).arg(&bam).args(["alt9", "alt2"]);
    let out = run(c);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut samtools = Command::new("samtools");
    samtools.args(["view", "-c"]).arg(&bam).arg("alt2");
    assert_eq!(text(&out.stdout), text(&run(samtools).stdout));
    assert_eq!(text(&out.stderr), "fasthts view: warning: region \"alt9\" specifies an invalid region or unknown reference; continuing\n");
}

#[test]
fn depth_coverage_and_stats_take_alternative_names_as_samtools() {
    let Some((dir, bam)) = aliased_bam("aliases-depth") else { return };
    for region in ["alt1", "2:1000-5000", "{alt4}:1-20000", "alt2:29000-39000"] {
        assert!(crate::depth::compare_in(&["-r", region], &[&bam], true) > 0, "depth -r {region}");
        assert!(!crate::coverage::compare(&["-r", region], &[&bam]).is_empty(), "coverage -r {region}");
    }
    // Refused as samtools refuses them.
    crate::depth::compare_in(&["-r", "alt7"], &[&bam], false);
    crate::coverage::compare(&["-r", "alt7:1-5"], &[&bam]);
    let targets = dir.path("targets.txt");
    std::fs::write(&targets, "alt1\t1000\t20000\n2\t100\t900\nchr3\t5\t5000\nalt4\t1\t9000\nnone\t1\t5\n").unwrap();
    for args in [
        vec![s(&bam), "alt1"],
        vec![s(&bam), "alt1:1000-5000", "alt4:4000-9000", "2:100-200"],
        vec!["-t", s(&targets), s(&bam)],
        vec!["-t", s(&targets), s(&bam), "4"],
    ] {
        crate::stats::compare(&args);
    }
}

#[test]
fn a_header_htslib_cannot_parse_knows_no_name() {
    // htslib's full header parser refuses an @SQ line without LN:, and its
    // name lookups then fail: samtools takes no region of such a file.
    let Some(dir) = with_samtools("aliases-broken") else { return };
    let sam = dir.path("ok.sam");
    std::fs::write(
        &sam,
        "@SQ\tSN:chr1\tLN:1000\tAN:one\n@SQ\tSN:chr2\tLN:1000\nr1\t0\tchr1\t10\t60\t4M\t*\t0\t0\tACGT\tIIII\nr2\t0\tchr2\t20\t60\t4M\t*\t0\t0\tACGT\tIIII\n",
    )
    .unwrap();
    let good = dir.path("ok.bam");
    let mut c = Command::new("samtools");
    c.args(["view", "--no-PG", "-b", "-o"]).arg(&good).arg(&sam);
    assert!(run(c).status.success());
    // The same BAM with the header text's second @SQ line losing its LN:
    // (its binary references, which readers use, are left whole).
    let bam = dir.path("broken.bam");
    let raw = fasthts::bgzf::decompress_all(&std::fs::read(&good).unwrap()).unwrap();
    let l_text = u32::from_le_bytes(raw[4..8].try_into().unwrap()) as usize;
    let header = String::from_utf8(raw[8..8 + l_text].to_vec()).unwrap();
    let broken_text = header.replace("@SQ\tSN:chr2\tLN:1000\n", "@SQ\tSN:chr2\n");
    assert_ne!(broken_text, header);
    let mut broken = b"BAM\x01".to_vec();
    broken.extend_from_slice(&(broken_text.len() as u32).to_le_bytes());
    broken.extend_from_slice(broken_text.as_bytes());
    broken.extend_from_slice(&raw[8 + l_text..]);
    std::fs::write(&bam, fasthts::bgzf::compress_all(&broken, 6)).unwrap();
    let mut index = Command::new("samtools");
    index.arg("index").arg(&bam);
    assert!(run(index).status.success());
    for region in ["chr1", "one", "chr2:1-100"] {
        for options in [&["-c"][..], &[]] {
            crate::view::compare_on(options, &bam, &[region]);
        }
        let mut c = fasthts();
        c.args(["view", "-c"]).arg(&bam).arg(region);
        let out = run(c);
        assert_eq!(text(&out.stdout), "0\n", "{region}");
        assert!(text(&out.stderr).contains("specifies an invalid region or unknown reference"), "{}", text(&out.stderr));
        // depth and coverage refuse the region, as samtools does.
        crate::depth::compare_in(&["-r", region], &[&bam], false);
        crate::coverage::compare(&["-r", region], &[&bam]);
    }
}
