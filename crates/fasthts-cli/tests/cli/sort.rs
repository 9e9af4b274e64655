//! fasthts sort against samtools sort 1.16: same records in the same order
//! (ties included), same header edits, in memory and through run files, at
//! several thread counts.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn view(bam: &Path) -> Vec<u8> {
    let mut c = Command::new("samtools");
    c.args(["view", "-h", "--no-PG"]).arg(bam);
    let out = run(c);
    assert!(out.status.success(), "samtools view {}: {}", bam.display(), text(&out.stderr));
    out.stdout
}

/// `samtools sort ORDER --no-PG -o OUT IN`; true when it succeeded.
fn samtools_sort(order: &[&str], input: &Path, out: &Path) -> bool {
    let mut c = Command::new("samtools");
    c.arg("sort").args(order).args(["--no-PG", "-o"]).arg(out).arg(input);
    run(c).status.success()
}

/// `fasthts sort ARGS --no-PG -@ THREADS -m MEMORY` of `input` (temporary
/// files under `dir`, output `dir/ours.bam`) must give the records
/// `expected` holds: `samtools view` of samtools sort's output.
fn assert_sorts_like_samtools(dir: &TempDir, args: &[&str], threads: &str, memory: &str, input: &Path, expected: &[u8]) {
    let ours = dir.path("ours.bam");
    let mut c = fasthts();
    c.arg("sort").args(args).args(["--no-PG", "-@", threads, "-m", memory, "-T"]).arg(dir.path("tmp")).arg("-o").arg(&ours).arg(input);
    let out = run(c);
    assert!(out.status.success(), "{} {args:?}: {}", input.display(), text(&out.stderr));
    assert!(view(&ours) == expected, "{} {args:?} -@ {threads} -m {memory}: differs from samtools sort", input.display());
}

/// The names in `dir` that contain `part`: what a sort left behind.
fn left_in(dir: &Path, part: &str) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.contains(part)).collect()
}

#[test]
fn coordinate_and_name_sorts_match_samtools() {
    let Some(dir) = with_samtools("sort") else { return };
    let mut inputs = vec![data("unsorted.bam")];
    // Name-sorted copies of the fixtures, so coordinate sorting has work to do.
    for f in ["small.bam", "long_ref.bam", "huge_record.bam", "long_cigar.bam", "unmapped_only.bam", "header_only.bam"] {
        let byname = dir.path(&format!("byname-{f}"));
        assert!(samtools_sort(&["-n"], &data(f), &byname));
        inputs.push(byname);
    }
    // The coordinate-sorted fixtures are inputs for the name sort.
    inputs.push(data("small.bam"));
    inputs.push(data("long_cigar.bam"));
    for input in &inputs {
        for order in [&[][..], &["-n"][..], &["-t", "RG"][..], &["-t", "NM", "-n"][..], &["-t", "XF"][..], &["-t", "ZZ"][..]] {
            let theirs = dir.path("theirs.bam");
            assert!(samtools_sort(order, input, &theirs));
            let expected = view(&theirs);
            for (threads, memory) in [("1", "768M"), ("4", "768M"), ("2", "1M"), ("1", "1M")] {
                assert_sorts_like_samtools(&dir, order, threads, memory, input, &expected);
                let left = left_in(&dir.0, "runs");
                assert!(left.is_empty(), "run files left: {left:?}");
            }
        }
    }
}

#[test]
fn sorted_output_indexes_and_carries_pg_and_so() {
    let dir = TempDir::new("sortpg");
    let out = dir.path("s.bam");
    let mut c = fasthts();
    c.args(["sort", "-o"]).arg(&out).arg(data("unsorted.bam"));
    assert!(run(c).status.success());
    let mut c = fasthts();
    c.arg("index").arg(&out);
    let r = run(c);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let bam = fasthts::bam::BamFile::open(&out).unwrap();
    let header = text(&bam.header().text);
    assert!(header.starts_with("@HD\tVN:") && header.lines().next().unwrap().contains("\tSO:coordinate"), "{header}");
    assert!(header.lines().any(|l| l.starts_with("@PG\tID:fasthts") && l.contains("CL:")), "{header}");
}

#[test]
fn sort_fails_cleanly_on_bad_input() {
    let dir = TempDir::new("sortbad");
    let good = std::fs::read(data("small.bam")).unwrap();
    let bad = dir.path("cut.bam");
    std::fs::write(&bad, &good[..good.len() / 2]).unwrap();
    let out = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["sort", "-m", "1M", "-T"]).arg(dir.path("tmp")).arg("-o").arg(&out).arg(&bad);
    let r = run(c);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(text(&r.stderr).lines().filter(|l| !l.contains("warning")).count(), 1, "{}", text(&r.stderr));
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("cut.bam")], "outputs or runs left behind");
}

#[test]
fn write_index_equals_samtools_index_of_the_output() {
    let Some(dir) = with_samtools("sortidx") else { return };
    let input = dir.path("byname.bam");
    let mut c = Command::new("samtools");
    c.args(["sort", "-n", "-o"]).arg(&input).arg(data("small.bam"));
    assert!(run(c).status.success());
    for memory in ["768M", "1M"] {
        // Default: OUT.csi.
        let out = dir.path("out.bam");
        let mut c = fasthts();
        c.args(["sort", "--write-index", "-m", memory, "-o"]).arg(&out).arg(&input);
        let r = run(c);
        assert!(r.status.success(), "{}", text(&r.stderr));
        let mut s = Command::new("samtools");
        s.args(["index", "-c"]).arg(&out).arg(dir.path("theirs.csi"));
        assert!(run(s).status.success());
        assert!(std::fs::read(dir.path("out.bam.csi")).unwrap() == std::fs::read(dir.path("theirs.csi")).unwrap(), "CSI -m {memory}");
        // `##idx##` names a BAI.
        let spec = format!("{}##idx##{}", dir.path("b.bam").display(), dir.path("b.bai").display());
        let mut c = fasthts();
        c.args(["sort", "--write-index", "-m", memory, "-o", &spec]).arg(&input);
        assert!(run(c).status.success());
        let mut s = Command::new("samtools");
        s.arg("index").arg(dir.path("b.bam")).arg(dir.path("theirs.bai"));
        assert!(run(s).status.success());
        assert!(std::fs::read(dir.path("b.bai")).unwrap() == std::fs::read(dir.path("theirs.bai")).unwrap(), "BAI -m {memory}");
    }
}

#[test]
fn sorts_a_bam_from_standard_input_to_standard_output() {
    let Some(dir) = with_samtools("sortpipe") else { return };
    let input = std::fs::read(data("unsorted.bam")).unwrap();
    let mut c = fasthts();
    c.args(["sort", "--no-PG", "-m", "1M", "-T"]).arg(dir.path("t"));
    let out = run_with_stdin(c, input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ours = dir.path("ours.bam");
    std::fs::write(&ours, &out.stdout).unwrap();
    let theirs = dir.path("theirs.bam");
    assert!(samtools_sort(&[], &data("unsorted.bam"), &theirs));
    assert!(view(&ours) == view(&theirs));
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 2, "runs left behind: {left:?}");
}

#[test]
fn sigterm_removes_temporary_files() {
    let dir = TempDir::new("sortsig");
    let input = std::fs::read(data("small.bam")).unwrap();
    let mut c = fasthts();
    c.args(["sort", "-T"]).arg(dir.path("t")).arg("-o").arg(dir.path("out.bam"));
    c.stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Half the input, then silence: fasthts is mid-way through reading it.
    std::io::Write::write_all(&mut stdin, &input[..input.len() / 2]).unwrap();
    let started = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::read_dir(&dir.0).unwrap().count() > 0
    });
    assert!(started, "no temporary file appeared");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    drop(stdin);
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left behind after SIGTERM: {left:?}");
}

/// SAM text without `@PG` lines, as samtools' own test driver compares.
fn without_pg(sam: &[u8]) -> Vec<u8> {
    let t = text(sam);
    t.lines().filter(|l| !l.starts_with("@PG")).map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

#[test]
fn passes_samtools_own_sort_tests() {
    if !have_samtools() {
        return;
    }
    let Some(dir) = samtools_test_data() else { return };
    let bam = dir.join("dat/test_input_1_a.bam");
    let sam = dir.join("dat/test_input_1_d.sam");
    let template = dir.join("sort/template-coordinate.sort.sam");
    let cases: [(&[&str], &Path, &str); 7] = [
        (&[], &bam, "pos.sort.expected.sam"),
        (&["-n"], &bam, "name.sort.expected.sam"),
        (&["-t", "RG"], &bam, "tag.rg.sort.expected.sam"),
        (&["-n", "-t", "RG"], &bam, "tag.rg.n.sort.expected.sam"),
        (&["-t", "AS"], &sam, "tag.as.sort.expected.sam"),
        (&["-t", "FI"], &sam, "tag.fi.sort.expected.sam"),
        (&["--template-coordinate"], &template, "template-coordinate.sort.expected.sam"),
    ];
    for (args, input, expected) in cases {
        for threads in ["1", "2"] {
            // As samtools' test.pl runs them: SAM on standard output.
            let mut c = fasthts();
            c.arg("sort").args(args).args(["-@", threads, "-m", "10M"]).arg(input).args(["-O", "SAM", "-o", "-"]);
            let r = run(c);
            assert!(r.status.success(), "{expected}: {}", text(&r.stderr));
            let got = without_pg(&r.stdout);
            let want = without_pg(&std::fs::read(dir.join("sort").join(expected)).unwrap());
            assert!(got == want, "{expected} -@ {threads}:\n{}\n---\n{}", text(&got), text(&want));
        }
    }
}

#[test]
fn sorts_sam_from_a_pipe_like_samtools() {
    let Some(dir) = with_samtools("sortsam") else { return };
    let mut v = Command::new("samtools");
    v.args(["view", "-h", "--no-PG"]).arg(data("unsorted.bam"));
    let sam = run(v).stdout;
    let sam_path = dir.path("in.sam");
    std::fs::write(&sam_path, &sam).unwrap();
    let theirs = dir.path("theirs.bam");
    assert!(samtools_sort(&[], &sam_path, &theirs));
    for memory in ["768M", "1M"] {
        let mut c = fasthts();
        c.args(["sort", "--no-PG", "-m", memory, "-T"]).arg(dir.path("t"));
        let out = run_with_stdin(c, sam.clone());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let ours = dir.path("ours.bam");
        std::fs::write(&ours, &out.stdout).unwrap();
        assert!(view(&ours) == view(&theirs), "-m {memory}");
    }
}

#[test]
fn many_runs_under_a_low_open_file_limit_merge_in_passes() {
    let Some(dir) = with_samtools("sortfan") else { return };
    // ~30 MB of records, so 1 MB batches make ~30 runs; 40 open files
    // leave a fan-in of 8.
    let big = dir.path("big.bam");
    let mut c = Command::new("samtools");
    c.args(["cat", "-o"]).arg(&big);
    for _ in 0..16 {
        c.arg(data("small.bam"));
    }
    assert!(run(c).status.success());
    let theirs = dir.path("theirs.bam");
    assert!(samtools_sort(&[], &big, &theirs));
    let ours = dir.path("ours.bam");
    let script = format!(
        "ulimit -n 40 && exec {} sort --no-PG -@ 2 -m 1M -T {} -o {} {}",
        env!("CARGO_BIN_EXE_fasthts"),
        dir.path("t").display(),
        ours.display(),
        big.display()
    );
    let mut c = Command::new("sh");
    c.args(["-c", &script]);
    let r = run(c);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(view(&ours) == view(&theirs));
    // A fan-in asked for: runs merged in the background while input is
    // read (rocksort's compaction), in coordinate and name order.
    let theirs_by_name = dir.path("theirs-n.bam");
    assert!(samtools_sort(&["-n"], &big, &theirs_by_name));
    for (order, expected) in [(&[][..], &theirs), (&["-n"][..], &theirs_by_name)] {
        let expected = view(expected);
        for (threads, fan_in) in [("2", "2"), ("1", "3"), ("2", "5")] {
            let mut c = fasthts();
            c.arg("sort").args(order).args(["--no-PG", "-@", threads, "-m", "1M", "--fan-in", fan_in, "-T"]).arg(dir.path("t")).arg("-o").arg(&ours).arg(&big);
            let r = run(c);
            assert!(r.status.success(), "{}", text(&r.stderr));
            assert!(view(&ours) == expected, "{order:?} -@ {threads} --fan-in {fan_in}: differs from samtools sort");
        }
    }
}

/// Generated pairs with `MC` tags (from `samtools fixmate -m`) and `MI`
/// tags (some with `/A`, `/B` strand suffixes), many unplaced reads, in
/// name-hash order: input for template-coordinate and minimiser orders.
fn template_input(dir: &TempDir) -> std::path::PathBuf {
    let generated = fasthts_testgen::cli::sam(&["--seed", "17", "--reads", "3000", "--unsorted", "--unmapped-fraction", "0.3"]).unwrap();
    let raw = dir.path("generated.sam");
    std::fs::write(&raw, generated).unwrap();
    // fixmate gives MC tags to primary records only, as template order needs.
    let by_name = dir.path("by-name.bam");
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("samtools view -u -F 0x900 \"$1\" | samtools sort -n -u - | samtools fixmate -m -O sam - \"$2\"")
        .arg("sh")
        .arg(&raw)
        .arg(&by_name);
    let out = run(c);
    assert!(out.status.success(), "fixmate: {}", text(&out.stderr));
    let mut with_mi = Vec::new();
    for (i, line) in std::fs::read(&by_name).unwrap().split(|&c| c == b'\n').filter(|l| !l.is_empty()).enumerate() {
        with_mi.extend_from_slice(line);
        if !line.starts_with(b"@") {
            let molecule = line.iter().map(|&c| usize::from(c)).sum::<usize>() % 7;
            match i % 3 {
                0 => with_mi.extend_from_slice(format!("\tMI:Z:{molecule}/{}", if i % 2 == 0 { 'A' } else { 'B' }).as_bytes()),
                1 => with_mi.extend_from_slice(format!("\tMI:Z:{molecule}").as_bytes()),
                _ => {}
            }
        }
        with_mi.push(b'\n');
    }
    let input = dir.path("template-input.sam");
    std::fs::write(&input, with_mi).unwrap();
    input
}

#[test]
fn template_coordinate_and_minimiser_orders_match_samtools() {
    let Some(dir) = with_samtools("sort-template") else { return };
    let input = template_input(&dir);
    let orders: [&[&str]; 6] =
        [&["--template-coordinate"], &["-M"], &["-M", "-K", "7"], &["-n", "-M"], &["-M", "-n"], &["--template-coordinate", "-t", "MI"]];
    for order in orders {
        let theirs = dir.path("theirs.bam");
        let mut c = Command::new("samtools");
        c.arg("sort").args(order).args(["--no-PG", "-o"]).arg(&theirs).arg(&input);
        let out = run(c);
        assert!(out.status.success(), "samtools sort {order:?}: {}", text(&out.stderr));
        let expected = view(&theirs);
        for (threads, memory) in [("1", "768M"), ("2", "1M"), ("1", "1M")] {
            assert_sorts_like_samtools(&dir, order, threads, memory, &input, &expected);
        }
    }
}

#[test]
fn template_coordinate_refuses_pairs_without_mc_like_samtools() {
    let dir = TempDir::new("sort-nomc");
    let sam = dir.path("in.sam");
    std::fs::write(&sam, "@SQ\tSN:c\tLN:100\nr1\t99\tc\t1\t60\t4M\t=\t10\t13\tACGT\tIIII\n").unwrap();
    let out_bam = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["sort", "--template-coordinate", "-o"]).arg(&out_bam).arg(&sam);
    let out = run(c);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no MC tag. Please run samtools fixmate on file first."), "{}", text(&out.stderr));
    assert!(!out_bam.exists(), "no output is left behind");
}

#[test]
fn samtools_sort_flags_are_accepted_or_refused_clearly() {
    let dir = TempDir::new("sort-flags");
    let input = data("small.bam");
    let out = dir.path("out.bam");
    // Accepted: format options, CRAM-only input options, --reference, --verbosity.
    for extra in [
        &["-O", "BAM,level=1"][..],
        &["--output-fmt", "bam", "--output-fmt-option", "level=9"],
        &["--input-fmt-option", "decode_md=0", "--reference", "/nonexistent.fa", "--verbosity", "3"],
        // samtools' -K: less than 1 is 1, more than 31 is 31.
        &["-M", "-K", "0"],
        &["-M", "-K", "99"],
    ] {
        let mut c = fasthts();
        c.arg("sort").args(extra).arg("-o").arg(&out).arg(&input);
        let r = run(c);
        assert!(r.status.success(), "{extra:?}: {}", text(&r.stderr));
    }
    // Refused with one line and nothing written.
    std::fs::remove_file(&out).unwrap();
    for (extra, message) in [
        (&["-m", "1000K"][..], "-m setting (1000K bytes) is less than the minimum required (1M)"),
        (&["-O", "vcf"], "unknown output format \"vcf\"; use BAM, SAM or CRAM"),
        (&["-O", "bam,level=12"], "level is 0 to 9"),
        (&["--input-fmt-option", "filter=mapq>10"], "input option \"filter=mapq>10\" is not supported"),
    ] {
        let mut c = fasthts();
        c.arg("sort").args(extra).arg("-o").arg(&out).arg(&input);
        let r = run(c);
        assert!(!r.status.success(), "{extra:?} should fail");
        let err = text(&r.stderr);
        assert!(err.contains(message) && err.lines().count() == 1, "{extra:?}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn sam_output_is_byte_identical_to_samtools() {
    let Some(dir) = with_samtools("sort-sam-out") else { return };
    let input = template_input(&dir);
    for order in [&[][..], &["-n"], &["-M"], &["--template-coordinate"], &["-t", "RG"]] {
        let mut c = Command::new("samtools");
        c.arg("sort").args(order).args(["--no-PG", "-O", "sam"]).arg(&input);
        let expected = run(c);
        assert!(expected.status.success(), "{}", text(&expected.stderr));
        for memory in ["768M", "1M"] {
            // -O sam, the .sam and .sam.gz extensions, standard output.
            let mut c = fasthts();
            c.arg("sort").args(order).args(["--no-PG", "-@", "2", "-m", memory, "-T"]).arg(dir.path("t")).args(["-O", "sam"]).arg(&input);
            let out = run(c);
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(out.stdout == expected.stdout, "{order:?} -m {memory}: -O sam differs from samtools");
            for name in ["out.sam", "out.sam.gz"] {
                let path = dir.path(name);
                let mut c = fasthts();
                c.arg("sort").args(order).args(["--no-PG", "-m", memory, "-o"]).arg(&path).arg(&input);
                assert!(run(c).status.success());
                let bytes = std::fs::read(&path).unwrap();
                let plain = if name.ends_with(".gz") { fasthts::bgzf::decompress_all(&bytes).unwrap() } else { bytes };
                assert!(plain == expected.stdout, "{order:?} -m {memory} -o {name}: differs from samtools");
            }
        }
    }
}

#[test]
fn dash_and_dev_stdout_write_to_standard_output() {
    let input = data("small.bam");
    let mut reference = fasthts();
    reference.args(["sort", "--no-PG", "-O", "sam"]).arg(&input);
    let expected = run(reference);
    assert!(expected.status.success() && !expected.stdout.is_empty());
    let dir = TempDir::new("sort-dash");
    for target in ["-", "/dev/stdout"] {
        let mut c = fasthts();
        c.current_dir(&dir.0).args(["sort", "--no-PG", "-O", "sam", "-o", target]).arg(&input);
        let out = run(c);
        assert!(out.status.success(), "-o {target}: {}", text(&out.stderr));
        assert!(out.stdout == expected.stdout, "-o {target}: not the same output on stdout");
    }
    assert!(!dir.path("-").exists(), "no file named '-' is written");
}

#[test]
fn header_is_rebuilt_as_htslib_rebuilds_it() {
    let Some(dir) = with_samtools("sort-header") else { return };
    // @HD not first, @PG chains with a @CO after them.
    let sam = dir.path("in.sam");
    std::fs::write(
        &sam,
        "@CO\tfirst\n@HD\tVN:1.5\tGO:query\n@SQ\tSN:c\tLN:10\n@PG\tID:a\tPN:a\n@PG\tID:b\tPN:b\tPP:a\n@PG\tID:c\tPN:c\n\
         @PG\tID:d\tPN:d\tPP:c\n@CO\tz\nr\t0\tc\t1\t60\t2M\t*\t0\t0\tAC\tII\n",
    )
    .unwrap();
    let normalise = |out: &[u8], program: &str| {
        let pg_without_version = |l: &str| if l.starts_with("@PG") { l.split("\tVN:").next().unwrap().to_string() } else { l.to_string() };
        text(out).lines().map(|l| pg_without_version(l).replace(program, "PROGRAM") + "\n").collect::<String>()
    };
    let mut s = Command::new("samtools");
    s.args(["sort", "-O", "sam"]).arg(&sam);
    let theirs = run(s);
    let mut f = fasthts();
    f.args(["sort", "-O", "sam"]).arg(&sam);
    let ours = run(f);
    assert!(ours.status.success());
    assert_eq!(normalise(&ours.stdout, "fasthts"), normalise(&theirs.stdout, "samtools"));
}

/// The rocksdb engine (`--engine rocksdb`, cargo feature `rocksdb`) sorts
/// as samtools does, in memory and with RocksDB flushing and compacting
/// (`-m 1M`), in every order, and leaves no database behind.
#[cfg(feature = "rocksdb")]
#[test]
fn rocksdb_engine_matches_samtools() {
    let Some(dir) = with_samtools("sort-rocksdb") else { return };
    let byname = dir.path("byname.bam");
    assert!(samtools_sort(&["-n"], &data("small.bam"), &byname));
    let mut inputs = vec![data("unsorted.bam"), byname, data("small.bam"), data("long_cigar.bam")];
    inputs.push(template_input(&dir));
    for input in &inputs {
        for order in [&[][..], &["-n"], &["-t", "RG"], &["-t", "NM", "-n"], &["--template-coordinate"], &["-M"]] {
            let theirs = dir.path("theirs.bam");
            if !samtools_sort(order, input, &theirs) {
                continue; // template-coordinate without MC tags: refused by both (tested elsewhere)
            }
            let expected = view(&theirs);
            let args = [order, &["--engine", "rocksdb"]].concat();
            for (threads, memory) in [("2", "768M"), ("1", "1M"), ("2", "1M")] {
                assert_sorts_like_samtools(&dir, &args, threads, memory, input, &expected);
                let left = left_in(&dir.0, "rocksdb");
                assert!(left.is_empty(), "database left: {left:?}");
            }
        }
    }
}

/// Without the feature, `--engine rocksdb` is one clear error.
#[cfg(not(feature = "rocksdb"))]
#[test]
fn rocksdb_engine_is_refused_clearly_without_the_feature() {
    let dir = TempDir::new("sort-no-rocksdb");
    let out = dir.path("out.bam");
    let mut c = fasthts();
    c.args(["sort", "--engine", "rocksdb", "-o"]).arg(&out).arg(data("small.bam"));
    let r = run(c);
    assert!(!r.status.success());
    let err = text(&r.stderr);
    assert!(err.contains("built without the rocksdb engine") && err.lines().count() == 1, "{err}");
    assert!(!out.exists());
}

/// A BAM (as raw BGZF) with header text `text`, one reference `c` of 100
/// bases and one record on it: header text that samtools' own SAM reader
/// would refuse can only come in a BAM.
fn bam_with_header_text(text: &[u8]) -> Vec<u8> {
    let mut raw = b"BAM\x01".to_vec();
    raw.extend_from_slice(&(text.len() as i32).to_le_bytes());
    raw.extend_from_slice(text);
    raw.extend_from_slice(&1i32.to_le_bytes());
    raw.extend_from_slice(&2i32.to_le_bytes());
    raw.extend_from_slice(b"c\0");
    raw.extend_from_slice(&100i32.to_le_bytes());
    let mut body = Vec::new();
    // ref 0, pos 0, l_name 3, mapq 0, bin 4681, 1 CIGAR op, flag 0, 4 bases, no mate.
    for v in [0i32, 0] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(&[3, 0]);
    body.extend_from_slice(&4681u16.to_le_bytes());
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    for v in [4i32, -1, -1, 0] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(b"r1\0");
    body.extend_from_slice(&(4u32 << 4).to_le_bytes());
    body.extend_from_slice(&[0x12, 0x48, 40, 40, 40, 40]);
    raw.extend_from_slice(&(body.len() as i32).to_le_bytes());
    raw.extend_from_slice(&body);
    let mut bgzf = fasthts_io::bgzf::compress_all(&raw, 6);
    bgzf.extend_from_slice(&fasthts_io::bgzf::compress_all(b"", 6));
    bgzf
}

/// Header lines samtools drops (a type and nothing else, such as a bare
/// `@CO`) are dropped; header text its parser refuses (`@SQ<TAB>`, a tag
/// without `XX:`, a line without a tab, an @RG without ID) makes the sort
/// fail with one line and no output, as samtools does.
#[test]
fn header_lines_are_kept_dropped_or_refused_as_samtools_does() {
    let Some(dir) = with_samtools("sort-header") else { return };
    let texts: &[&[u8]] = &[
        b"@HD\tVN:1.6\n@SQ\tSN:c\tLN:100\n@CO\n@CO\tend\n",
        b"@SQ\tSN:c\tLN:100\n@CO\n",
        b"@HD\n@SQ\tSN:c\tLN:100\n",
        b"@SQ\tSN:c\tLN:100\n@HD\n@CO\tx\n",
        b"@SQ\tSN:c\tLN:100\n@RG\n@ZZ\n@PG\n",
        b"@HD\tVN:1.6\n@SQ\tSN:c\tLN:100\n@CO",
        b"@SQ\tSN:c\tLN:100\n@CO\t\n",
        b"@HD\tVN:1.6\n@SQ\tSN:c\tLN:100\n@SQ\t\n",
        b"@SQ\tSN:c\tLN:100\n@SQ\t\n@CO\tx\n",
        b"@SQ\tSN:c\tLN:100\n@CO \n",
        b"@SQ\tSN:c\tLN:100\n@ZZ\tfoo\n",
        b"@SQ\tSN:c\tLN:100\n@RG\tID:a\n@RG\tSM:x\n",
        b"@HD\tVN:1.6\tSO\n@SQ\tSN:c\tLN:100\n",
    ];
    for (k, header_text) in texts.iter().enumerate() {
        let input = dir.path(&format!("in{k}.bam"));
        std::fs::write(&input, bam_with_header_text(header_text)).unwrap();
        let (theirs, ours) = (dir.path(&format!("s{k}.bam")), dir.path(&format!("f{k}.bam")));
        let samtools_ok = samtools_sort(&[], &input, &theirs);
        let mut c = fasthts();
        c.args(["sort", "--no-PG", "-o"]).arg(&ours).arg(&input);
        let out = run(c);
        let what = String::from_utf8_lossy(header_text);
        assert_eq!(out.status.success(), samtools_ok, "{what:?}: {}", text(&out.stderr));
        if samtools_ok {
            let decompress = |p: &Path| fasthts::bgzf::decompress_all(&std::fs::read(p).unwrap()).unwrap();
            assert!(decompress(&ours) == decompress(&theirs), "{what:?}: differs from samtools sort");
        } else {
            assert_eq!(text(&out.stderr).lines().count(), 1, "{what:?}: {}", text(&out.stderr));
            assert!(text(&out.stderr).contains("cannot set the sort order in the header"), "{what:?}");
            assert!(!ours.exists(), "{what:?}: output left");
        }
    }
}

/// `sort -t XX` where XX holds NaN floats: samtools 1.16 finds NaN neither
/// less than nor equal to any number, so its order is what its merge sort
/// makes of that; ours is the same, byte for byte, at any thread count
/// (inputs that fit in one in-memory block, as samtools' default -m holds
/// them).
#[test]
fn tag_sort_with_nan_values_matches_samtools() {
    let Some(dir) = with_samtools("sort-nan") else { return };
    let mut rng = fasthts_testgen::rng::Rng::new(0x5eed_4a4e);
    for (case, n) in [5usize, 20, 200, 2000, 333].into_iter().enumerate() {
        let mut sam = String::from("@HD\tVN:1.6\n@SQ\tSN:c\tLN:100000\n@SQ\tSN:d\tLN:500\n");
        for _ in 0..n {
            let tag = match rng.below(20) {
                0..=4 => "\tXX:f:nan".to_string(),
                5 | 6 => String::new(),
                7 | 8 => format!("\tXX:i:{}", rng.below(6)),
                9 => "\tXX:f:inf".into(),
                10 => "\tXX:f:-inf".into(),
                11 => "\tXX:Z:abc".into(),
                _ => format!("\tXX:f:{}", [0.5, 1.5, 2.5, 1.0, 3.0][rng.below(5) as usize]),
            };
            let (rname, pos) = if rng.below(5) == 0 { ("d", 1 + rng.below(400)) } else { ("c", 1 + rng.below(1000)) };
            sam.push_str(&format!("r{}\t{}\t{rname}\t{pos}\t30\t4M\t*\t0\t0\tACGT\tIIII{tag}\n", rng.below(50), [0, 16][rng.below(2) as usize]));
        }
        let input = dir.path(&format!("nan{case}.sam"));
        std::fs::write(&input, sam).unwrap();
        for order in [&["-t", "XX"][..], &["-n", "-t", "XX"]] {
            let theirs = dir.path("theirs.sam");
            let mut c = Command::new("samtools");
            c.arg("sort").args(order).args(["--no-PG", "-O", "sam", "-o"]).arg(&theirs).arg(&input);
            assert!(run(c).status.success());
            for threads in ["1", "2", "4"] {
                let ours = dir.path("ours.sam");
                let mut c = fasthts();
                c.arg("sort").args(order).args(["--no-PG", "-@", threads, "-O", "sam", "-o"]).arg(&ours).arg(&input);
                let out = run(c);
                assert!(out.status.success(), "{}", text(&out.stderr));
                assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(), "case {case} {order:?} -@ {threads}: differs");
            }
        }
    }
}

/// `sort -o x.bam x.bam` sorts in place, as samtools does (the output
/// replaces the input once complete); an index written over the input is
/// still refused.
#[test]
fn sorts_in_place_as_samtools() {
    let Some(dir) = with_samtools("sort-in-place") else { return };
    for order in [&[][..], &["-n"]] {
        let (ours, theirs) = (dir.path("ours.bam"), dir.path("theirs.bam"));
        std::fs::copy(data("unsorted.bam"), &ours).unwrap();
        std::fs::copy(data("unsorted.bam"), &theirs).unwrap();
        let mut c = fasthts();
        c.args(["sort", "--no-PG"]).args(order).arg("-o").arg(&ours).arg(&ours);
        let got = run(c);
        assert!(got.status.success(), "{order:?}: {}", text(&got.stderr));
        let mut s = Command::new("samtools");
        s.args(["sort", "--no-PG"]).args(order).arg("-o").arg(&theirs).arg(&theirs);
        assert!(run(s).status.success());
        let read = |p: &std::path::Path| fasthts::bgzf::decompress_all(&std::fs::read(p).unwrap()).unwrap();
        assert!(read(&ours) == read(&theirs), "{order:?}: sorted in place, the records differ from samtools'");
        let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "{order:?}: files left {left:?}");
    }
    let input = dir.path("ours.bam");
    let before = std::fs::read(&input).unwrap();
    let mut c = fasthts();
    c.args(["sort", "--write-index", "-o"]).arg(format!("{}##idx##{}", dir.path("out.bam").display(), input.display())).arg(&input);
    let got = run(c);
    assert_eq!(got.status.code(), Some(1));
    assert!(text(&got.stderr).contains("output is the same file as input"), "{}", text(&got.stderr));
    assert!(std::fs::read(&input).unwrap() == before, "input changed");
}
