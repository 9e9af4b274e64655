//! SAM with positions past 2^31, under references longer than BAM can
//! describe or under short ones (issue 21): flagstat and idxstats count
//! them as samtools 1.16 does; sort keeps them in SAM output (as samtools
//! 1.16 does) and refuses BAM and CRAM output of them; depth counts them.

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::path::Path;
use std::process::{Command, Output};

fn tool(program: Command, args: &[&str], file: &Path) -> Output {
    let mut c = program;
    c.args(args).arg(file);
    run(c)
}

/// A SAM over two references of 5 and 3 Gb, with reads, mates and
/// template lengths past 2^31 and 2^32, unmapped reads placed there, and
/// some without coordinates.
fn large_sam(rng: &mut Rng) -> String {
    let mut s = String::from("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:big\tLN:5000000000\n@SQ\tSN:mid\tLN:3000000000\n");
    for (name, len) in [("big", 5_000_000_000u64), ("mid", 3_000_000_000)] {
        let mut pos = 1u64;
        for i in 0..300 {
            pos += rng.below(len / 320);
            let mate = pos + rng.below(1 << 20);
            let flag = [99u32, 147, 163, 83, 0, 16, 4 | 1 | 32, 1024 | 99, 512 | 16][rng.below(9) as usize];
            let tlen = if flag & 1 != 0 { (mate - pos + 100) as i64 } else { 0 };
            let mate_ref = if flag & 1 != 0 { "=" } else { "*" };
            let pnext = if flag & 1 != 0 { mate } else { 0 };
            s.push_str(&format!("r{name}{i}\t{flag}\t{name}\t{pos}\t{}\t4M\t{mate_ref}\t{pnext}\t{tlen}\tACGT\tIIII\n", rng.below(61)));
        }
    }
    for i in 0..20 {
        s.push_str(&format!("u{i}\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n"));
    }
    s
}

#[test]
fn flagstat_and_idxstats_of_positions_past_2_31_match_samtools() {
    let Some(dir) = with_samtools("large-pos") else { return };
    let mut files = Vec::new();
    let mut rng = Rng::new(21);
    for i in 0..3 {
        let p = dir.path(&format!("large{i}.sam"));
        std::fs::write(&p, large_sam(&mut rng)).unwrap();
        files.push(p);
    }
    if let Some(t) = samtools_test_data() {
        files.extend(files_under(&t.join("large_pos"), ".sam"));
    }
    for file in &files {
        for args in [&["flagstat"][..], &["flagstat", "-O", "tsv"], &["idxstats"]] {
            let got = tool(fasthts(), args, file);
            let expected = tool(Command::new("samtools"), args, file);
            assert_eq!(got.status.success(), expected.status.success(), "{args:?} {}: {}", file.display(), text(&got.stderr));
            assert!(got.stdout == expected.stdout, "{args:?} {}:\n{}\nvs\n{}", file.display(), text(&got.stdout), text(&expected.stdout));
        }
    }
    assert!(files.len() >= 3);
}

#[test]
fn bam_output_of_very_long_references_is_refused_as_samtools_refuses_it() {
    let Some(dir) = with_samtools("large-pos-bam") else { return };
    let sam = dir.path("large.sam");
    std::fs::write(&sam, large_sam(&mut Rng::new(5))).unwrap();
    let out = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["sort", "-o"]).arg(&out).arg(&sam);
    let got = run(c);
    let mut s = Command::new("samtools");
    s.args(["sort", "-o"]).arg(&out).arg(&sam);
    let expected = run(s);
    assert_eq!((got.status.code(), expected.status.code()), (Some(1), Some(1)));
    let ours = text(&got.stderr);
    assert_eq!(ours.strip_prefix("fasthts sort: "), text(&expected.stderr).strip_prefix("samtools sort: "), "{ours}");
    assert!(!out.exists(), "no output left");
}

#[test]
fn csi_of_a_bgzipped_sam_with_large_positions_is_samtools_byte_for_byte() {
    let Some(dir) = with_samtools("large-pos-csi") else { return };
    if !require(fasthts::bgzf::have_system_libdeflate(), "the system libdeflate samtools links") {
        return;
    }
    let mut texts = vec![large_sam(&mut Rng::new(9)).into_bytes()];
    if let Some(t) = samtools_test_data() {
        for name in ["longref.sam", "longref2.sam"] {
            texts.push(std::fs::read(t.join("large_pos").join(name)).unwrap());
        }
    }
    for (i, sam) in texts.iter().enumerate() {
        let gz = dir.path(&format!("l{i}.sam.gz"));
        std::fs::write(&gz, fasthts::bgzf::compress_all(sam, 6)).unwrap();
        for mode in [&["-c"][..], &["-m", "12"], &["-b"]] {
            let (a, b) = (dir.path("ours.idx"), dir.path("theirs.idx"));
            let _ = (std::fs::remove_file(&a), std::fs::remove_file(&b));
            let mut c = fasthts();
            c.arg("index").args(mode).arg("-o").arg(&a).arg(&gz);
            let got = run(c);
            let mut s = Command::new("samtools");
            s.arg("index").args(mode).arg(&gz).arg(&b);
            let expected = run(s);
            // A BAI cannot hold these positions: both refuse it.
            let want = mode != ["-b"];
            assert_eq!((got.status.success(), expected.status.success()), (want, want), "{mode:?} l{i}: {}", text(&got.stderr));
            if want {
                assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "{mode:?} l{i}: index bytes differ");
            } else {
                assert!(text(&got.stderr).contains("cannot be stored in a bai index") && !a.exists());
            }
        }
    }
}

/// A shuffled SAM over references of 5 and 3 Gb with `n` reads per
/// reference (names repeating, so name order has ties), tags to sort by.
fn shuffled_large_sam(rng: &mut Rng, n: u64) -> String {
    let mut s = String::from("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:big\tLN:5000000000\n@SQ\tSN:mid\tLN:3000000000\n");
    let mut lines = Vec::new();
    for (name, len) in [("big", 5_000_000_000u64), ("mid", 3_000_000_000)] {
        for i in 0..n {
            // Few distinct positions: ties keep input order.
            let pos = 1 + rng.below(len / 4096) * 4096;
            let mate = pos + rng.below(1 << 20);
            let flag = [99u32, 147, 163, 83, 0, 16, 4 | 1 | 32, 1024 | 99, 512 | 16][rng.below(9) as usize];
            let tlen = if flag & 1 != 0 { (mate - pos + 100) as i64 * if flag & 16 != 0 { -1 } else { 1 } } else { 0 };
            let (mate_ref, pnext) = if flag & 1 != 0 { ("=", mate) } else { ("*", 0) };
            let (read, mapq, xt) = (i % 97, rng.below(61), rng.below(5));
            lines.push(format!("r{name}{read}\t{flag}\t{name}\t{pos}\t{mapq}\t4M\t{mate_ref}\t{pnext}\t{tlen}\tACGT\tIIII\tXT:i:{xt}\n"));
        }
    }
    for i in 0..20 {
        lines.push(format!("u{i}\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\tIIII\n"));
    }
    for i in (1..lines.len()).rev() {
        lines.swap(i, rng.below(i as u64 + 1) as usize);
    }
    s.extend(lines);
    s
}

#[test]
fn sort_to_sam_keeps_positions_past_2_31_as_samtools_does() {
    let Some(dir) = with_samtools("large-pos-sort") else { return };
    let mut rng = Rng::new(2131);
    let small = dir.path("small.sam");
    std::fs::write(&small, shuffled_large_sam(&mut rng, 400)).unwrap();
    // Enough records for run files at -m 1M: the runs carry the positions too.
    let many = dir.path("many.sam");
    std::fs::write(&many, shuffled_large_sam(&mut rng, 40_000)).unwrap();
    let mut files = vec![small.clone(), many.clone()];
    if let Some(t) = samtools_test_data() {
        files.extend(files_under(&t.join("large_pos"), ".sam"));
    }
    for file in &files {
        sorts_to_sam_as_samtools(file, &dir.path("runs"));
    }
    // BGZF-compressed SAM too.
    let (want, got) = (dir.path("want.sam.gz"), dir.path("got.sam.gz"));
    let mut s = Command::new("samtools");
    s.args(["sort", "--no-PG", "-o"]).arg(&want).arg(&small);
    assert!(run(s).status.success());
    let mut c = fasthts();
    c.args(["sort", "--no-PG", "-o"]).arg(&got).arg(&small);
    assert!(run(c).status.success());
    let unzip = |p: &Path| {
        let (mut r, _) = fasthts_io::compression::decompress(std::fs::File::open(p).unwrap(), 1).unwrap();
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut r, &mut v).unwrap();
        v
    };
    assert!(unzip(&got) == unzip(&want), ".sam.gz differs from samtools'");
    // BAM and CRAM output: samtools' refusal, nothing left.
    for (format, name) in [("bam", "out.bam"), ("cram", "out.cram")] {
        let out = dir.path(name);
        let mut c = fasthts();
        c.args(["sort", "-O", format, "-o"]).arg(&out).arg(&small);
        let got = run(c);
        let mut s = Command::new("samtools");
        s.args(["sort", "-O", format, "-o"]).arg(&out).arg(&small);
        let want = run(s);
        assert_eq!((got.status.code(), want.status.code()), (Some(1), Some(1)), "{format}");
        assert_eq!(text(&got.stderr).strip_prefix("fasthts sort: "), text(&want.stderr).strip_prefix("samtools sort: "), "{format}");
        assert!(!out.exists());
    }
    // Orders fasthts does not keep 64-bit positions in: one clear line.
    let mut c = fasthts();
    c.args(["sort", "-M", "-O", "sam"]).arg(&small);
    let got = run(c);
    assert_eq!(got.status.code(), Some(1));
    assert!(text(&got.stderr).contains("positions past 2^31") && text(&got.stderr).lines().count() == 1, "{}", text(&got.stderr));
}

/// `sam` with every `@SQ` length set to 1,000: records past 2^31 under
/// references BAM could describe (samtools 1.16 checks positions against
/// no length), plus records at the 32-bit limits themselves (POS 2^31,
/// PNEXT 2^31, TLEN ±(2^31 - 1) and -2^31, which BAM can hold).
fn under_short_references(sam: &str) -> String {
    let mut s = String::new();
    for line in sam.lines() {
        match line.strip_prefix("@SQ\t") {
            Some(rest) => {
                let name = rest.split('\t').find_map(|f| f.strip_prefix("SN:")).unwrap();
                s.push_str(&format!("@SQ\tSN:{name}\tLN:1000\n"));
            }
            None => {
                s.push_str(line);
                s.push('\n');
            }
        }
    }
    for (i, (pos, pnext, tlen)) in
        [(2147483648u64, 2147483648u64, 2147483647i64), (2147483647, 2147483648, -2147483647), (2147483648, 1, -2147483648), (5, 2147483647, 0)]
            .into_iter()
            .enumerate()
    {
        s.push_str(&format!("edge{i}\t99\tmid\t{pos}\t30\t4M\t=\t{pnext}\t{tlen}\tACGT\tIIII\tXT:i:{i}\n"));
    }
    s
}

#[test]
fn positions_past_2_31_under_short_references_are_kept_in_sam_as_samtools_keeps_them() {
    let Some(dir) = with_samtools("large-pos-short-sq") else { return };
    let mut rng = Rng::new(2132);
    let small = dir.path("small.sam");
    std::fs::write(&small, under_short_references(&shuffled_large_sam(&mut rng, 400))).unwrap();
    let many = dir.path("many.sam");
    std::fs::write(&many, under_short_references(&shuffled_large_sam(&mut rng, 40_000))).unwrap();
    for file in [&small, &many] {
        sorts_to_sam_as_samtools(file, &dir.path("runs"));
    }
    // Counting reads no position: as samtools, status and output.
    for args in [&["flagstat"][..], &["flagstat", "-O", "json"], &["idxstats"], &["quickcheck", "-v"]] {
        let got = tool(fasthts(), args, &small);
        let want = tool(Command::new("samtools"), args, &small);
        assert_eq!(got.status.code(), want.status.code(), "{args:?}: {}", text(&got.stderr));
        assert!(got.stdout == want.stdout, "{args:?}:\n{}\nvs\n{}", text(&got.stdout), text(&want.stdout));
    }
    // BAM cannot hold them: both fail (samtools after writing part of its
    // output, with a stale errno on its second line); fasthts says which
    // record in one line and leaves nothing.
    let out = dir.path("out.bam");
    let mut s = Command::new("samtools");
    s.args(["sort", "-O", "bam", "-o"]).arg(&out).arg(&small);
    let want = run(s);
    assert!(text(&want.stderr).contains("Positional data is too large for BAM format"), "{}", text(&want.stderr));
    std::fs::remove_file(&out).ok();
    let mut c = fasthts();
    c.args(["sort", "-O", "bam", "-o"]).arg(&out).arg(&small);
    let got = run(c);
    assert_eq!((got.status.code(), want.status.code()), (Some(1), Some(1)));
    let err = text(&got.stderr);
    assert!(err.lines().count() == 1 && err.contains("positional data is too large for BAM format") && err.contains("small.sam"), "{err}");
    assert!(!out.exists());
    // A CSI sized by the short references cannot place them: both refuse.
    let gz = dir.path("sorted.sam.gz");
    let mut c = fasthts();
    c.args(["sort", "-O", "sam.gz", "-o"]).arg(&gz).arg(&small);
    assert!(run(c).status.success());
    let (ours, theirs) = (dir.path("ours.csi"), dir.path("theirs.csi"));
    let mut c = fasthts();
    c.args(["index", "-c", "-o"]).arg(&ours).arg(&gz);
    let got = run(c);
    let mut s = Command::new("samtools");
    s.args(["index", "-c"]).arg(&gz).arg(&theirs);
    let want = run(s);
    assert_eq!((got.status.success(), want.status.success()), (false, false), "{}", text(&got.stderr));
    assert!(text(&got.stderr).contains("cannot be stored in a csi index") && !ours.exists(), "{}", text(&got.stderr));
}

#[test]
fn depth_of_positions_past_2_31_is_samtools_depth() {
    let Some(dir) = with_samtools("large-pos-depth") else { return };
    let mut rng = Rng::new(2133);
    let mut files = Vec::new();
    // Under references of 5 and 3 Gb, and under short ones; sorted by
    // samtools (depth needs position order), as SAM and as bgzipped SAM.
    let long = shuffled_large_sam(&mut rng, 3000);
    for (name, sam) in [("long", long.clone()), ("short", under_short_references(&long))] {
        let unsorted = dir.path(&format!("{name}-unsorted.sam"));
        std::fs::write(&unsorted, &sam).unwrap();
        let sorted = dir.path(&format!("{name}.sam"));
        let mut s = Command::new("samtools");
        s.args(["sort", "-O", "sam", "-o"]).arg(&sorted).arg(&unsorted);
        assert!(run(s).status.success());
        let gz = dir.path(&format!("{name}.sam.gz"));
        std::fs::write(&gz, fasthts::bgzf::compress_all(&std::fs::read(&sorted).unwrap(), 6)).unwrap();
        files.extend([sorted, gz]);
        // Unsorted: samtools' refusal, status 1.
        let got = tool(fasthts(), &["depth"], &unsorted);
        assert_eq!(got.status.code(), Some(1), "{name}: {}", text(&got.stderr));
        assert!(text(&got.stderr).contains("not position sorted"), "{}", text(&got.stderr));
    }
    for file in &files {
        for args in [&["depth"][..], &["depth", "-s"], &["depth", "-J", "-Q", "10"], &["depth", "-H", "-q", "5", "-G", "1024"]] {
            let got = tool(fasthts(), args, file);
            let want = tool(Command::new("samtools"), args, file);
            assert!(want.status.success() && want.stdout.len() > 1000, "samtools {args:?} {}: {}", file.display(), text(&want.stderr));
            assert!(got.status.success(), "{args:?} {}: {}", file.display(), text(&got.stderr));
            assert!(got.stdout == want.stdout, "{args:?} {}: depth differs from samtools'", file.display());
        }
    }
    // Regions of the bgzipped SAM under long references, through
    // samtools' CSI (the one under short references cannot have one): reads
    // past 2^31 are counted, before, across and after it (once a refusal,
    // and a partial output).
    for gz in files.iter().filter(|f| f.ends_with("long.sam.gz")) {
        let mut index = Command::new("samtools");
        index.args(["index", "-c"]).arg(gz);
        assert!(run(index).status.success());
        for region in ["big", "big:2000000000-2300000000", "big:2147483000-2147500000", "mid:2147483000-", "big:1-2147483647", "mid"] {
            for extra in [&[][..], &["-s", "-Q", "10"]] {
                let args: Vec<&str> = ["depth", "-r", region].into_iter().chain(extra.iter().copied()).collect();
                let got = tool(fasthts(), &args, gz);
                let want = tool(Command::new("samtools"), &args, gz);
                assert!(want.status.success(), "samtools {args:?} {}: {}", gz.display(), text(&want.stderr));
                assert!(got.status.success(), "{args:?} {}: {}", gz.display(), text(&got.stderr));
                assert!(got.stdout == want.stdout, "{args:?} {}: depth differs from samtools'", gz.display());
            }
        }
        let mut big = Command::new("samtools");
        big.args(["depth", "-r", "big:2147483000-"]).arg(gz);
        assert!(run(big).stdout.len() > 1000, "{}: no reads past 2^31 to count", gz.display());
    }
}

/// `sort -O sam` of `file` in four orders, at `-@ 2` and with run files
/// (`-m 1M -T runs`), gives samtools' SAM.
fn sorts_to_sam_as_samtools(file: &Path, runs: &Path) {
    for order in [&[][..], &["-n"], &["-t", "XT"], &["-t", "XT", "-n"]] {
        let mut s = Command::new("samtools");
        s.args(["sort", "--no-PG", "-O", "sam"]).args(order).arg(file);
        let want = run(s);
        assert!(want.status.success(), "samtools {order:?} {}: {}", file.display(), text(&want.stderr));
        for extra in [&["-@", "2"][..], &["-@", "1", "-m", "1M", "-T"]] {
            let mut c = fasthts();
            c.args(["sort", "--no-PG", "-O", "sam"]).args(order).args(extra);
            if extra.contains(&"-T") {
                c.arg(runs);
            }
            c.arg(file);
            let got = run(c);
            assert!(got.status.success(), "{order:?} {extra:?} {}: {}", file.display(), text(&got.stderr));
            assert!(got.stdout == want.stdout, "{order:?} {extra:?} {}: SAM differs from samtools'", file.display());
        }
    }
}

/// `view` of SAM with positions past 2^31 to SAM (plain, bgzipped, `-U`)
/// keeps them as samtools 1.16 does, with the filters that read positions
/// (`-L`, `-e` on pos/endpos/mpos/tlen, `-B`, `--unmap`'s TLEN) reading
/// the 64-bit values; BAM output is refused as samtools refuses it.
#[test]
fn view_to_sam_keeps_positions_past_2_31_as_samtools_does() {
    let Some(dir) = with_samtools("large-pos-view") else { return };
    let mut rng = Rng::new(77);
    let long = dir.path("long.sam");
    std::fs::write(&long, large_sam(&mut rng)).unwrap();
    let short = dir.path("short.sam");
    std::fs::write(&short, under_short_references(&shuffled_large_sam(&mut rng, 2000))).unwrap();
    let bed = dir.path("far.bed");
    std::fs::write(&bed, "big\t2500000000\t4000000000\nmid\t100\t2147483700\n").unwrap();
    let bed = bed.to_str().unwrap();
    let option_sets: &[&[&str]] = &[
        &[],
        &["-h"],
        &["-q", "30", "-F", "4"],
        &["-c", "-f", "1"],
        &["-x", "XT"],
        &["-e", "pos > 2500000000"],
        &["-e", "endpos > 3000000000 || mpos > 4e9"],
        &["-e", "tlen > 1000000 || tlen < -2147483647"],
        &["-c", "-e", "pnext == 2147483648"],
        &["-L", bed],
        &["-B", "-L", bed],
        &["-q", "40", "--unmap"],
        &["--add-flags", "1024", "-q", "20"],
        &["-@", "2", "-s", "0.5"],
    ];
    let mut lines = 0;
    for file in [&long, &short] {
        for options in option_sets {
            let args: Vec<&str> = ["view", "--no-PG"].iter().chain(options.iter()).copied().collect();
            let got = tool(fasthts(), &args, file);
            let want = tool(Command::new("samtools"), &args, file);
            assert!(got.status.success() && want.status.success(), "{args:?} {}: {}", file.display(), text(&got.stderr));
            assert!(got.stdout == want.stdout, "{args:?} {}:\n{}\nvs\n{}", file.display(), text(&got.stdout), text(&want.stdout));
            lines += want.stdout.iter().filter(|&&c| c == b'\n').count();
        }
        // Outputs to files: bgzipped SAM, and the unselected records.
        let outputs = |program: Command, tag: &str| {
            let (gz, rest) = (dir.path(&format!("{tag}.sam.gz")), dir.path(&format!("{tag}-rest.sam")));
            let mut c = program;
            c.args(["view", "--no-PG", "-q", "30", "-O", "sam.gz", "-o"]).arg(&gz).arg("-U").arg(&rest).arg(file);
            assert!(run(c).status.success(), "{tag}");
            // -O applies to -U's file too: both bgzipped, compared as text.
            let unzip = |p: &Path| {
                let (mut text, _) = fasthts_io::compression::decompress(std::fs::File::open(p).unwrap(), 1).unwrap();
                let mut plain = Vec::new();
                std::io::Read::read_to_end(&mut text, &mut plain).unwrap();
                plain
            };
            (unzip(&gz), unzip(&rest))
        };
        let (ours, theirs) = (outputs(fasthts(), "ours"), outputs(Command::new("samtools"), "theirs"));
        for (what, a, b) in [("-o sam.gz", &ours.0, &theirs.0), ("-U", &ours.1, &theirs.1)] {
            let first = text(a).lines().zip(text(b).lines()).find(|(x, y)| x != y).map(|(x, y)| format!("{x}\nvs\n{y}"));
            assert!(a == b, "{what} {}: {first:?}", file.display());
        }
        // BAM cannot hold them: both refuse.
        let got = tool(fasthts(), &["view", "-b", "-o", "/dev/null"], file);
        let want = tool(Command::new("samtools"), &["view", "-b", "-o", "/dev/null"], file);
        assert_eq!((got.status.code(), want.status.code()), (Some(1), Some(1)), "{}", text(&got.stderr));
        assert!(text(&got.stderr).lines().count() == 1 && text(&got.stderr).contains("too large for BAM"), "{}", text(&got.stderr));
    }
    assert!(lines > 10_000, "too little compared: {lines} lines");
}
