//! `fasthts snp-pileup` against the real FACETS binary's outputs (issue 5):
//! the 27 golden commands of `tests/data/golden/snp-pileup/commands.txt`, byte
//! for byte (gzip outputs decompressed, the CPU-time line excepted), at
//! `-@ 1` and `-@ 2`; independence from thread count and region size; and
//! bad input (one error line, non-zero exit, no output left).

use crate::common::*;
use fasthts_testgen::rng::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One golden case: its arguments (output under `out/`), and what FACETS
/// printed and returned.
struct Case {
    args: Vec<String>,
    stdout: String,
    exit: i32,
}

/// Cases of `stdout_and_exit_codes.txt` (which repeats commands.txt's lines).
fn cases(dir: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(dir.join("out/stdout_and_exit_codes.txt")).unwrap();
    let mut out = Vec::new();
    for block in text.split("### ").skip(1) {
        let mut lines = block.splitn(4, '\n');
        let _name = lines.next().unwrap();
        let cmd = lines.next().unwrap().strip_prefix("$ snp-pileup ").unwrap();
        let exit: i32 = lines.next().unwrap().strip_prefix("exit=").unwrap().parse().unwrap();
        let stdout = lines.next().unwrap_or("").to_string();
        out.push(Case { args: cmd.split(' ').map(String::from).collect(), stdout, exit });
    }
    out
}

/// The output argument of a case (the second positional one).
fn output_arg(args: &[String]) -> usize {
    let mut positional = 0;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.starts_with('-') && a.len() > 1 {
            // Options with a separate value.
            if matches!(a.as_str(), "-d" | "-P" | "-q" | "-Q" | "-r") {
                i += 1;
            }
        } else {
            positional += 1;
            if positional == 2 {
                return i;
            }
        }
        i += 1;
    }
    panic!("no output argument in {args:?}");
}

fn gunzip(path: &Path) -> Vec<u8> {
    let o = Command::new("gzip").arg("-dc").arg(path).output().expect("gzip");
    assert!(o.status.success(), "{} is not gzip", path.display());
    o.stdout
}

/// Drops FACETS' "Finished in ... seconds." line (CPU time).
fn without_time(s: &str) -> String {
    match s.find("Finished in ") {
        Some(i) => {
            let rest = &s[i..];
            let end = rest.find('\n').map_or(rest.len(), |e| e + 1);
            format!("{}{}", &s[..i], &rest[end..])
        }
        None => s.to_string(),
    }
}

/// Runs every successful golden case with `extra` options and compares.
fn check_golden(extra: &[&str], only: Option<&[&str]>) {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-golden");
    let mut checked = 0;
    for case in cases(&dir) {
        if case.exit != 0 {
            continue;
        }
        let oi = output_arg(&case.args);
        let rel = case.args[oi].clone();
        let name = rel.strip_prefix("out/").unwrap().to_string();
        if let Some(only) = only {
            if !only.contains(&name.as_str()) {
                continue;
            }
        }
        let mut args = case.args.clone();
        args[oi] = tmp.path(&name).to_string_lossy().into_owned();
        let mut cmd = fasthts();
        cmd.current_dir(&dir).arg("snp-pileup").args(extra).args(&args);
        let o = run(cmd);
        assert_eq!(o.status.code(), Some(0), "{name} {extra:?}: {}", text(&o.stderr));
        let gz = args.iter().any(|a| a == "-g");
        let (ours, theirs) = if gz {
            let ours = if name.ends_with(".gz") { tmp.path(&name) } else { tmp.path(&format!("{name}.gz")) };
            let theirs = if name.ends_with(".gz") { dir.join(&rel) } else { dir.join(format!("{rel}.gz")) };
            let raw = std::fs::read(&ours).unwrap();
            assert!(
                raw.ends_with(&[31, 139, 8, 4, 0, 0, 0, 0, 0, 255, 6, 0, 66, 67, 2, 0, 27, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
                "{name}: no BGZF EOF block"
            );
            (gunzip(&ours), gunzip(&theirs))
        } else {
            (std::fs::read(tmp.path(&name)).unwrap(), std::fs::read(dir.join(&rel)).unwrap())
        };
        assert!(ours == theirs, "{name} {extra:?}: output differs from FACETS");
        assert_eq!(without_time(&text(&o.stdout)), without_time(&case.stdout), "{name}: stdout");
        assert!(text(&o.stdout).contains("Finished in "), "{name}: no Finished line");
        checked += 1;
    }
    assert!(checked >= if only.is_some() { 1 } else { 27 }, "only {checked} golden cases ran");
}

#[test]
fn golden_outputs_one_thread() {
    check_golden(&["-@", "1"], None);
}

#[test]
fn golden_outputs_two_threads() {
    check_golden(&["-@", "2"], None);
}

/// Region cuts anywhere (small regions, short warm-up so that some cuts are
/// refused and whole references redone) give the same bytes.
#[test]
fn output_independent_of_threads_and_region_size() {
    let only = [
        "P7_Q20.csv",
        "d20.csv",
        "d0.csv",
        "Q42.csv",
        "A_P50_r20,30.csv",
        "three_bams_q15_Q20_P50_r25,0,10_d30.csv",
        "default.csv",
        "x.csv",
        "recommended_g_q15_Q20_P100_r25,0.csv.gz",
    ];
    for (threads, size, warmup) in [("1", "997", "300"), ("4", "3000", "50"), ("2", "20000", "2000")] {
        check_golden(&["-@", threads, "--region-size", size, "--warmup", warmup], Some(&only));
    }
}

/// The VCF read once from a stream (issue 19): `/dev/stdin` from a pipe and
/// a named FIFO, plain and compressed, give FACETS' bytes at any thread
/// count (a header-only CSV and a hang before).
#[test]
fn golden_outputs_with_the_vcf_from_a_stream() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-stream");
    for (vcf, golden) in [("sites.vcf", "out/default_plainvcf.csv"), ("sites.vcf.gz", "out/default.csv")] {
        let want = std::fs::read(dir.join(golden)).unwrap();
        let bytes = std::fs::read(dir.join(vcf)).unwrap();
        for threads in ["1", "2", "3"] {
            let out = tmp.path(&format!("stdin-{vcf}-{threads}.csv"));
            let mut cmd = fasthts();
            cmd.current_dir(&dir).args(["snp-pileup", "-@", threads, "/dev/stdin"]).arg(&out).args(["normal.bam", "tumour.bam"]);
            let o = run_with_stdin(cmd, bytes.clone());
            assert!(o.status.success(), "{vcf} from a pipe: {}", text(&o.stderr));
            assert!(std::fs::read(&out).unwrap() == want, "{vcf} from a pipe at -@ {threads}: output differs from FACETS");
            let fifo = tmp.path(&format!("{vcf}-{threads}.fifo"));
            let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo(3) on a NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
            let writer = {
                let (fifo, bytes) = (fifo.clone(), bytes.clone());
                std::thread::spawn(move || std::fs::write(fifo, bytes))
            };
            let out = tmp.path(&format!("fifo-{vcf}-{threads}.csv"));
            let mut cmd = fasthts();
            cmd.current_dir(&dir).args(["snp-pileup", "-@", threads]).arg(&fifo).arg(&out).args(["normal.bam", "tumour.bam"]);
            let o = run_with_timeout(cmd, std::time::Duration::from_secs(120));
            writer.join().unwrap().unwrap();
            assert!(o.status.success(), "{vcf} from a FIFO: {}", text(&o.stderr));
            assert!(std::fs::read(&out).unwrap() == want, "{vcf} from a FIFO at -@ {threads}: output differs from FACETS");
        }
    }
}

fn golden_case(name: &str) -> Option<(PathBuf, Case)> {
    let dir = golden_snp_pileup();
    let c = cases(&dir).into_iter().find(|c| c.args.iter().any(|a| a.contains(name)))?;
    Some((dir, c))
}

/// Asserts one stderr line, the exit status, and that nothing is left in `tmp`.
fn assert_failed(o: &std::process::Output, code: i32, tmp: &TempDir, what: &str) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{what}: {err}");
    assert!(!err.contains("panicked"), "{what}: {err}");
    let lines = err.lines().count();
    assert!(lines == 1 || (code == 64 && lines == 2), "{what}: expected one error line, got {err:?}");
    let left: Vec<_> = std::fs::read_dir(&tmp.0).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(
        left.iter().all(|n| n.to_string_lossy().ends_with(".bam")
            || n.to_string_lossy().ends_with(".bai")
            || n.to_string_lossy().ends_with(".vcf")),
        "{what}: left {left:?}"
    );
    err
}

#[test]
fn golden_error_cases() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-err");
    // Missing VCF, missing BAM, too few arguments: FACETS' exit statuses.
    for (name, code) in [("err1.csv", 1), ("err2.csv", 1), ("err3.csv", 64)] {
        let (_, c) = golden_case(name).unwrap();
        assert_eq!(c.exit, code);
        let mut args = c.args.clone();
        let oi = args.iter().position(|a| a.contains(name)).unwrap();
        args[oi] = tmp.path(name).to_string_lossy().into_owned();
        let mut cmd = fasthts();
        cmd.current_dir(&dir).arg("snp-pileup").args(&args);
        let o = run(cmd);
        let err = assert_failed(&o, code, &tmp, name);
        match name {
            "err1.csv" => assert!(err.contains("Failed to read VCF file") && err.contains("No such file"), "{err}"),
            "err2.csv" => assert!(err.contains("Failed to read sequence file missing.bam (No such file or directory)"), "{err}"),
            // FACETS' argp prints two lines; ours is one, naming what is missing.
            _ => assert!(err.contains("required arguments were not provided: <BAM>..."), "{err}"),
        }
    }
    // Existing output: refused, left untouched.
    let existing = tmp.path("exists.csv");
    std::fs::write(&existing, b"keep me").unwrap();
    let mut cmd = fasthts();
    cmd.current_dir(&dir).args(["snp-pileup", "sites.vcf.gz"]).arg(&existing).args(["normal.bam", "tumour.bam"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("already exists!"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&existing).unwrap(), b"keep me");
    // With -g the name checked is the one with .gz added.
    std::fs::write(tmp.path("g.csv.gz"), b"x").unwrap();
    let mut cmd = fasthts();
    cmd.current_dir(&dir).args(["snp-pileup", "-g", "sites.vcf.gz"]).arg(tmp.path("g.csv")).args(["normal.bam"]);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("g.csv already exists!"), "{}", text(&o.stderr));
}

/// Copies of the golden normal and tumour BAMs in `tmp`, without the
/// indexes beside the originals.
fn golden_bam_copies(dir: &Path, tmp: &TempDir) -> Vec<PathBuf> {
    ["normal", "tumour"]
        .iter()
        .map(|n| {
            let bam = tmp.path(&format!("{n}.bam"));
            std::fs::copy(dir.join(format!("{n}.bam")), &bam).unwrap();
            bam
        })
        .collect()
}

/// FACETS reads every BAM from its start, indexed or not: fasthts indexes
/// one without an index in memory and gives FACETS' output, leaving no
/// index file behind.
#[test]
fn unindexed_bams_give_facets_output() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-noindex");
    let bams = golden_bam_copies(&dir, &tmp);
    for threads in ["1", "2"] {
        let out = tmp.path(&format!("o{threads}.csv"));
        let mut cmd = fasthts();
        cmd.args(["snp-pileup", "-@", threads, "--region-size", "5000"]).arg(dir.join("sites.vcf.gz")).arg(&out).args(&bams);
        let o = run(cmd);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(std::fs::read(&out).unwrap() == std::fs::read(dir.join("out/default.csv")).unwrap(), "-@ {threads}: differs from FACETS'");
    }
    let mut left: Vec<_> = std::fs::read_dir(tmp.path("")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["normal.bam", "o1.csv", "o2.csv", "tumour.bam"]);
}

/// FACETS reads SAM too, plain, gzip-compressed or bgzipped (htslib reads
/// each from its start): the golden BAMs as SAM give FACETS' output, at one
/// and two threads, with htslib's words for each under `-v`, and nothing
/// left beside them (plain and gzip SAM are compressed and indexed in
/// memory).
#[test]
fn sam_inputs_give_facets_output() {
    let Some(tmp) = with_samtools("snp-sam") else { return };
    let dir = golden_snp_pileup();
    let mut sams = Vec::new();
    for name in ["normal", "tumour"] {
        let o = Command::new("samtools").args(["view", "-h"]).arg(dir.join(format!("{name}.bam"))).output().unwrap();
        assert!(o.status.success());
        let plain = tmp.path(&format!("{name}.sam"));
        std::fs::write(&plain, &o.stdout).unwrap();
        let gzip = tmp.path(&format!("{name}.gzip.sam.gz"));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, &o.stdout).unwrap();
        std::fs::write(&gzip, gz.finish().unwrap()).unwrap();
        let bgzf = tmp.path(&format!("{name}.sam.gz"));
        std::fs::write(&bgzf, fasthts::bgzf::compress_all(&o.stdout, 6)).unwrap();
        sams.push([plain, gzip, bgzf]);
    }
    let want = std::fs::read(dir.join("out/default.csv")).unwrap();
    let version = {
        let o = Command::new("samtools").args(["view", "-H"]).arg(dir.join("normal.bam")).output().unwrap();
        let header = text(&o.stdout);
        header.strip_prefix("@HD\tVN:").map_or("1".to_string(), |rest| rest.split('\t').next().unwrap().to_string())
    };
    for (kind, words) in [(0, ""), (1, " gzip-compressed"), (2, " BGZF-compressed")] {
        for threads in ["1", "2"] {
            let out = tmp.path(&format!("o{kind}-{threads}.csv"));
            let mut cmd = fasthts();
            cmd.args(["snp-pileup", "-v", "-@", threads, "--region-size", "5000"]).arg(dir.join("sites.vcf.gz")).arg(&out);
            cmd.args([&sams[0][kind], &sams[1][kind]]);
            let o = run(cmd);
            assert!(o.status.success(), "{}: {}", sams[0][kind].display(), text(&o.stderr));
            assert!(std::fs::read(&out).unwrap() == want, "{} -@ {threads}: differs from FACETS'", sams[0][kind].display());
            let said = format!("Detected format for file 1: SAM version {version}{words} sequence data\n");
            assert!(text(&o.stdout).starts_with(&said), "{}", text(&o.stdout));
        }
    }
    let mut left: Vec<_> = std::fs::read_dir(tmp.path("")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.retain(|n| !n.ends_with(".csv"));
    assert_eq!(left.len(), 6, "{left:?}");
}

#[test]
fn malformed_vcf_is_a_clear_error() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-badvcf");
    let vcf = tmp.path("bad.vcf");
    std::fs::write(&vcf, "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\nI\t100\t.\tA\tC\nI\tnot_a_number\t.\tA\tC\n").unwrap();
    let out = tmp.path("o.csv");
    let mut cmd = fasthts();
    cmd.arg("snp-pileup").arg(&vcf).arg(&out).arg(dir.join("normal.bam"));
    let o = run(cmd);
    let err = assert_failed(&o, 1, &tmp, "malformed VCF");
    assert!(err.contains("line 4"), "{err}");
    assert!(!out.exists());
}

/// A BAM whose records are not in coordinate order (name-sorted), with the
/// index of the sorted file beside it: an error, not output.
#[test]
fn unsorted_bam_is_an_error() {
    let dir = golden_snp_pileup();
    let Some(tmp) = with_samtools("snp-unsorted") else { return };
    let bam = tmp.path("unsorted.bam");
    let o = Command::new("samtools").args(["sort", "-n", "-o"]).arg(&bam).arg(dir.join("normal.bam")).output().unwrap();
    assert!(o.status.success());
    // An index made for a different (sorted) file.
    std::fs::copy(dir.join("normal.bam.bai"), tmp.path("unsorted.bam.bai")).unwrap();
    let out = tmp.path("o.csv");
    let mut cmd = fasthts();
    cmd.arg("snp-pileup").arg(dir.join("sites.vcf")).arg(&out).arg(&bam);
    let o = run(cmd);
    assert_failed(&o, 1, &tmp, "unsorted BAM");
    assert!(!out.exists());
    // Without an index: the header's sort order is named.
    std::fs::remove_file(tmp.path("unsorted.bam.bai")).unwrap();
    let mut cmd = fasthts();
    cmd.arg("snp-pileup").arg(dir.join("sites.vcf")).arg(&out).arg(&bam);
    let o = run(cmd);
    let err = assert_failed(&o, 1, &tmp, "unsorted BAM without index");
    assert!(err.contains("not coordinate-sorted"), "{err}");
}

/// snp-pileup on generated data (`tests/data/small.bam`: ref-skips, soft
/// and hard clips, deletions, insertions, `=`/`X`, QUAL `*`, overlapping
/// mates that may disagree, a deep chrM) with a VCF of random sites, sites
/// at both ends of every contig, sites on a contig absent from the BAM,
/// multi-allelic and indel records: every row written has the counts that
/// `samtools mpileup` shows there with FACETS' filters (`-B -q1 -Q20
/// -d 4000`: MAPQ 0 and anomalous pairs dropped, overlap detection on), the
/// deletions and ref-skips together in D; and the output does not depend on
/// threads or region size.
#[test]
fn generated_data_rows_match_samtools_mpileup() {
    let Some(tmp) = with_samtools("snp-generated") else { return };
    let bam = data("small.bam");
    let o = Command::new("samtools").args(["mpileup", "-B", "-q1", "-Q20", "-d", "4000"]).arg(&bam).output().unwrap();
    assert!(o.status.success());
    let theirs: Vec<(String, i64, [u32; 8])> = text(&o.stdout).lines().map(parse_mpileup).collect();
    let by_pos: std::collections::HashMap<(String, i64), [u32; 8]> = theirs.iter().map(|(c, p, v)| ((c.clone(), *p), *v)).collect();
    let o = Command::new("samtools").args(["view", "-H"]).arg(&bam).output().unwrap();
    let refs: Vec<(String, i64)> = text(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("@SQ"))
        .map(|l| {
            let f = |k: &str| l.split('\t').find_map(|x| x.strip_prefix(k)).unwrap().to_string();
            (f("SN:"), f("LN:").parse().unwrap())
        })
        .collect();
    // Sites: ends of every contig, every 7th covered column, random ALT.
    let mut rng = Rng::new(11);
    let letters = [b'A', b'C', b'G', b'T'];
    let mut sites: Vec<(usize, i64)> = Vec::new();
    for (t, (_, len)) in refs.iter().enumerate() {
        sites.extend([(t, 1), (t, 2), (t, len - 1), (t, *len)]);
    }
    for (k, (c, p, _)) in theirs.iter().enumerate() {
        if k % 7 == 0 {
            sites.push((refs.iter().position(|r| &r.0 == c).unwrap(), *p));
        }
    }
    sites.sort_unstable();
    sites.dedup();
    let mut vcf = String::from("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\nchrZ\t5\t.\tA\tG\t.\t.\t.\n");
    for &(t, p) in &sites {
        let r = letters[rng.below(4) as usize];
        let a = letters[(letters.iter().position(|&x| x == r).unwrap() + 1 + rng.below(3) as usize) % 4];
        let name = &refs[t].0;
        match rng.below(20) {
            0 => vcf.push_str(&format!("{name}\t{p}\t.\t{}\t{},T\t.\t.\t.\n", r as char, a as char)),
            1 => vcf.push_str(&format!("{name}\t{p}\t.\t{}A\t{}\t.\t.\t.\n", r as char, r as char)),
            _ => {}
        }
        vcf.push_str(&format!("{name}\t{p}\t.\t{}\t{}\t.\t.\t.\n", r as char, a as char));
    }
    std::fs::write(tmp.path("sites.vcf"), vcf).unwrap();
    let mut outputs = Vec::new();
    for (threads, size) in [("1", None), ("2", Some("5000")), ("2", Some("137"))] {
        let out = tmp.path(&format!("out{}.csv", outputs.len()));
        let mut cmd = fasthts();
        cmd.args(["snp-pileup", "-@", threads, "-q15", "-Q20"]);
        if let Some(s) = size {
            cmd.args(["--region-size", s, "--warmup", "100"]);
        }
        cmd.arg(tmp.path("sites.vcf")).arg(&out).arg(&bam);
        let o = run(cmd);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        outputs.push(std::fs::read_to_string(&out).unwrap());
    }
    assert_eq!(outputs[0], outputs[1], "-@2 --region-size 5000 differs from -@1");
    assert_eq!(outputs[0], outputs[2], "--region-size 137 differs from -@1");
    let rows = outputs[0].lines().count() - 1;
    assert!(rows > 50, "only {rows} rows");
    // Row by row at -q1 (FACETS' MAPQ 0 rule only), which mpileup's -q1
    // reproduces.
    let out = tmp.path("q1.csv");
    let mut cmd = fasthts();
    cmd.args(["snp-pileup", "-q1", "-Q20"]).arg(tmp.path("sites.vcf")).arg(&out).arg(&bam);
    assert_eq!(run(cmd).status.code(), Some(0));
    let mut checked = 0;
    let mut d_rows = 0;
    for line in std::fs::read_to_string(&out).unwrap().lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let pos: i64 = f[1].parse().unwrap();
        let c = by_pos.get(&(f[0].to_string(), pos)).copied().unwrap_or([0; 8]);
        let idx = |b: &str| match b {
            "A" => 1,
            "C" => 2,
            "G" => 3,
            "T" => 4,
            _ => unreachable!(),
        };
        let (r, a) = (c[idx(f[2])], c[idx(f[3])]);
        let d = c[6] + c[7];
        let e = c[0] - r - a - d;
        let want = format!("{},{},{},{},{r},{a},{e},{d}", f[0], f[1], f[2], f[3]);
        assert_eq!(line, want, "mpileup: {c:?}");
        checked += 1;
        d_rows += usize::from(d > 0);
    }
    assert!(checked > 50 && d_rows > 0, "{checked} rows checked, {d_rows} with deletions or ref-skips");
}

/// Runs `fasthts snp-pileup ARGS VCF OUT BAMS...` in `dir` and returns the CSV.
fn snp_csv(dir: &Path, args: &[&str], vcf: &Path, bams: &[PathBuf], tmp: &TempDir, name: &str) -> String {
    let out = tmp.path(name);
    let mut cmd = fasthts();
    cmd.current_dir(dir).arg("snp-pileup").args(args).arg(vcf).arg(&out).args(bams);
    let o = run(cmd);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
    std::fs::read_to_string(&out).unwrap()
}

/// Whether every line of `sub` appears in `all`, in the same order.
fn is_subsequence(sub: &str, all: &str) -> bool {
    let mut it = all.lines();
    sub.lines().all(|l| it.any(|m| m == l))
}

/// `--exact-sites` on the golden pair: every row the default (FACETS) mode
/// writes is also written, identically and in the same order (the VCF's
/// contigs are in BAM order), and the sites FACETS' walk loses are there:
/// the first covered bases after the N gap (I:31004, I:31005) and of X
/// (X:7, X:8), I:4 (consumed by the unknown contig V's record), the
/// cascades after duplicate-position records. The duplicate record is
/// reported once.
#[test]
fn exact_sites_reports_what_facets_loses() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-exact");
    let bams = [dir.join("normal.bam"), dir.join("tumour.bam")];
    let vcf = dir.join("sites.vcf.gz");
    for (k, opts) in
        [&[][..], &["-q15", "-Q20", "-P100", "-r25,0"], &["-x", "-A"], &["-d", "20"], &["-P", "7", "-Q", "20"]].iter().enumerate()
    {
        let default = snp_csv(&dir, opts, &vcf, &bams, &tmp, &format!("default{k}.csv"));
        let mut ex_args = opts.to_vec();
        ex_args.push("--exact-sites");
        let exact = snp_csv(&dir, &ex_args, &vcf, &bams, &tmp, &format!("exact{k}.csv"));
        // A FACETS pseudo-SNP row may stand at a site it lost (the overshoot
        // column); exact mode writes the site there instead.
        let exact_sites: std::collections::HashSet<(&str, &str)> = exact
            .lines()
            .filter(|l| !l.contains(",.,.,"))
            .map(|l| {
                let f: Vec<&str> = l.splitn(3, ',').collect();
                (f[0], f[1])
            })
            .collect();
        let kept: String = default
            .lines()
            .filter(|l| {
                let f: Vec<&str> = l.splitn(3, ',').collect();
                !(l.contains(",.,.,") && exact_sites.contains(&(f[0], f[1])))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(is_subsequence(&kept, &exact), "{opts:?}: a default-mode row is missing or moved in exact mode");
        assert!(exact.lines().count() > default.lines().count(), "{opts:?}: exact mode adds nothing");
        let mut seen = std::collections::HashSet::new();
        for l in exact.lines().skip(1) {
            let f: Vec<&str> = l.splitn(3, ',').collect();
            assert!(seen.insert((f[0], f[1])), "{opts:?}: {}:{} written twice", f[0], f[1]);
        }
        if opts.is_empty() {
            for site in [
                "I,31004,",
                "I,31005,",
                "X,7,",
                "X,8,",
                "I,4,",
                "I,5,",
                "II,2,",
                "MtDNA,1,",
                "MtDNA,2,",
                "I,24174,",
                "I,24175,",
                "I,53299,",
                "II,16070,",
            ] {
                assert!(!default.lines().any(|l| l.starts_with(site)), "FACETS mode writes {site}");
                assert!(exact.lines().any(|l| l.starts_with(site)), "exact mode misses {site}");
            }
            // Of the two records at I:24173 (C/G then C/A), the first is reported.
            assert!(exact.lines().any(|l| l.starts_with("I,24173,C,G,")), "I:24173 C/G missing");
            assert!(!exact.lines().any(|l| l.starts_with("I,24173,C,A,")), "I:24173 C/A reported");
        }
    }
}

/// Exact-mode rows against `samtools mpileup` run on each BAM separately,
/// with FACETS' filters (`-B -q1 -Q20 -d 4000`, anomalous pairs dropped,
/// overlap detection on): every site row, FACETS-lost sites included.
#[test]
fn exact_sites_counts_match_samtools_mpileup() {
    let dir = golden_snp_pileup();
    let Some(tmp) = with_samtools("snp-exact-mpileup") else { return };
    let bams = [dir.join("normal.bam"), dir.join("tumour.bam")];
    let exact = snp_csv(&dir, &["--exact-sites", "-q1", "-Q20"], &dir.join("sites.vcf.gz"), &bams, &tmp, "exact.csv");
    let per_file: Vec<std::collections::HashMap<(String, i64), [u32; 8]>> = bams
        .iter()
        .map(|b| {
            let o = Command::new("samtools").args(["mpileup", "-B", "-q1", "-Q20", "-d", "4000"]).arg(b).output().unwrap();
            assert!(o.status.success());
            text(&o.stdout).lines().map(parse_mpileup).map(|(c, p, v)| ((c, p), v)).collect()
        })
        .collect();
    let mut checked = 0;
    for line in exact.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let pos: i64 = f[1].parse().unwrap();
        // mpileup without a reference prints bases as read (upper case
        // here): a lowercase or `*` allele matches nothing.
        let idx = |b: &str| match b {
            "A" => Some(1),
            "C" => Some(2),
            "G" => Some(3),
            "T" => Some(4),
            "N" => Some(5),
            _ => None,
        };
        let mut want = format!("{},{},{},{}", f[0], f[1], f[2], f[3]);
        for m in &per_file {
            let c = m.get(&(f[0].to_string(), pos)).copied().unwrap_or([0; 8]);
            let r = idx(f[2]).map_or(0, |k| c[k]);
            let a = if f[3] == f[2] { 0 } else { idx(f[3]).map_or(0, |k| c[k]) };
            let d = c[6] + c[7];
            let e = c[0] - r - a - d;
            want.push_str(&format!(",{r},{a},{e},{d}"));
        }
        assert_eq!(line, want, "mpileup");
        checked += 1;
    }
    assert!(checked > 900, "only {checked} rows checked");
}

/// Exact mode gives the same bytes at any thread count and region size,
/// including cuts refused by the depth cap (whole references redone).
#[test]
fn exact_sites_independent_of_threads_and_region_size() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-exact-threads");
    let bams = [dir.join("normal.bam"), dir.join("tumour.bam")];
    let vcf = dir.join("sites.vcf.gz");
    for (k, opts) in [&["-P", "7", "-Q", "20"][..], &["-d", "20", "-P50"], &["-q15", "-Q20", "-P100", "-r25,0"]].iter().enumerate() {
        let mut outputs = Vec::new();
        for (threads, size, warmup) in [("1", None, None), ("2", Some("997"), Some("300")), ("2", Some("20000"), Some("50"))] {
            let mut args = vec!["--exact-sites", "-@", threads];
            args.extend_from_slice(opts);
            if let (Some(s), Some(w)) = (size, warmup) {
                args.extend(["--region-size", s, "--warmup", w]);
            }
            outputs.push(snp_csv(&dir, &args, &vcf, &bams, &tmp, &format!("out{k}-{}.csv", outputs.len())));
        }
        assert_eq!(outputs[0], outputs[1], "{opts:?}: -@2 --region-size 997 differs");
        assert_eq!(outputs[0], outputs[2], "{opts:?}: -@2 --region-size 20000 differs");
    }
}

/// Exact mode matches contigs per name: with BAM contigs `chrI chrII chrX
/// MtDNA`, VCF `MtDNA` is found (FACETS compares it with `NA` and loses it)
/// and `I`, `chrX` find `chrI`, `chrX`; the counts are those of the
/// unrenamed BAM. Rows follow the VCF's order whatever the BAM's: with the
/// MtDNA records moved to the front of the VCF, MtDNA rows come first.
#[test]
fn exact_sites_matches_contigs_per_name_in_vcf_order() {
    let dir = golden_snp_pileup();
    let Some(tmp) = with_samtools("snp-exact-names") else { return };
    let header = Command::new("samtools").args(["view", "-H"]).arg(dir.join("normal.bam")).output().unwrap();
    let renamed = text(&header.stdout).replace("SN:I\t", "SN:chrI\t").replace("SN:II\t", "SN:chrII\t").replace("SN:X\t", "SN:chrX\t");
    std::fs::write(tmp.path("h.sam"), renamed).unwrap();
    let bam = tmp.path("chr.bam");
    let o = Command::new("samtools").arg("reheader").arg(tmp.path("h.sam")).arg(dir.join("normal.bam")).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    std::fs::write(&bam, o.stdout).unwrap();
    let o = Command::new("samtools").arg("index").arg(&bam).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let vcf = dir.join("sites.vcf");
    let plain = snp_csv(&dir, &["--exact-sites"], &vcf, &[dir.join("normal.bam")], &tmp, "plain.csv");
    let chr = snp_csv(&dir, &["--exact-sites"], &vcf, std::slice::from_ref(&bam), &tmp, "chr.csv");
    let rename = |l: &str| -> String {
        for (a, b) in [("I,", "chrI,"), ("II,", "chrII,"), ("X,", "chrX,")] {
            if let Some(rest) = l.strip_prefix(a) {
                return format!("{b}{rest}");
            }
        }
        l.to_string()
    };
    let expected: String = plain.lines().map(|l| format!("{}\n", rename(l))).collect();
    assert_eq!(chr, expected, "renamed BAM");
    assert!(chr.lines().filter(|l| l.starts_with("MtDNA,")).count() > 30, "MtDNA rows missing");
    let facets = snp_csv(&dir, &[], &vcf, &[bam], &tmp, "facets.csv");
    assert!(!facets.lines().any(|l| l.starts_with("MtDNA,")), "FACETS mode should lose MtDNA");
    assert!(facets.lines().any(|l| l.starts_with("chrI,")), "FACETS mode finds chrI");

    // MtDNA records first in the VCF.
    let text_vcf = std::fs::read_to_string(&vcf).unwrap();
    let (head, body): (Vec<&str>, Vec<&str>) = text_vcf.lines().partition(|l| l.starts_with('#'));
    let (mt, rest): (Vec<&str>, Vec<&str>) = body.into_iter().partition(|l| l.starts_with("MtDNA\t"));
    let moved: String = head.iter().chain(&mt).chain(&rest).map(|l| format!("{l}\n")).collect();
    std::fs::write(tmp.path("moved.vcf"), moved).unwrap();
    let bams = [dir.join("normal.bam")];
    let reordered = snp_csv(&dir, &["--exact-sites"], &tmp.path("moved.vcf"), &bams, &tmp, "moved.csv");
    let (mt_rows, other_rows): (Vec<&str>, Vec<&str>) = plain.lines().skip(1).partition(|l| l.starts_with("MtDNA,"));
    let want: String =
        plain.lines().take(1).chain(mt_rows.iter().copied()).chain(other_rows.iter().copied()).map(|l| format!("{l}\n")).collect();
    assert_eq!(reordered, want, "rows in VCF order");
    // FACETS' walk loses every contig that comes before MtDNA in the BAM.
    let facets = snp_csv(&dir, &[], &tmp.path("moved.vcf"), &bams, &tmp, "moved-facets.csv");
    assert!(facets.lines().skip(1).all(|l| l.starts_with("MtDNA,")), "FACETS mode should keep only MtDNA");

    // Positions in decreasing order within each contig (records at one
    // position keep their order): the same rows, in that order.
    let mut records: Vec<(usize, i64, &str)> = Vec::new();
    let mut contigs: Vec<&str> = Vec::new();
    for l in text_vcf.lines().filter(|l| !l.starts_with('#')) {
        let mut f = l.split('\t');
        let (c, p) = (f.next().unwrap(), f.next().unwrap().parse::<i64>().unwrap());
        let k = contigs.iter().position(|x| *x == c).unwrap_or_else(|| {
            contigs.push(c);
            contigs.len() - 1
        });
        records.push((k, p, l));
    }
    records.sort_by_key(|&(k, p, _)| (k, std::cmp::Reverse(p)));
    let reversed: String = head.iter().copied().chain(records.iter().map(|r| r.2)).map(|l| format!("{l}\n")).collect();
    std::fs::write(tmp.path("reversed.vcf"), reversed).unwrap();
    let got = snp_csv(&dir, &["--exact-sites"], &tmp.path("reversed.vcf"), &bams, &tmp, "reversed.csv");
    let mut rows: Vec<&str> = plain.lines().skip(1).collect();
    let contig_of = |l: &str| {
        let c = l.split(',').next().unwrap();
        // Rows print the BAM name; the VCF writes X as chrX.
        contigs.iter().position(|x| *x == c || *x == format!("chr{c}")).unwrap()
    };
    rows.sort_by_key(|l| (contig_of(l), std::cmp::Reverse(l.split(',').nth(1).unwrap().parse::<i64>().unwrap())));
    let want: String = plain.lines().take(1).chain(rows).map(|l| format!("{l}\n")).collect();
    assert_eq!(got, want, "records out of position order");
}

/// Issue 39: a BAM whose index was made for a prefix of it (the same
/// leading blocks; newer than the BAM, so not stale) used to lose every
/// row past the prefix, exit 0. FACETS reads the whole file: the index is
/// found not to describe it, which is said once, naming the file, and the
/// BAM is indexed in memory as one without an index is; the output is
/// FACETS', at any thread count. An index of the whole file is used
/// without a word.
#[test]
fn an_index_of_a_prefix_of_the_bam_is_not_read_through() {
    let dir = golden_snp_pileup();
    let tmp = TempDir::new("snp-prefix-index");
    let want = std::fs::read(dir.join("out/default.csv")).unwrap();
    let bams = golden_bam_copies(&dir, &tmp);
    std::fs::copy(dir.join("tumour.bam.bai"), tmp.path("tumour.bam.bai")).unwrap();
    let run_with = |name: &str, threads: &str| {
        let out = tmp.path(name);
        let mut cmd = fasthts();
        cmd.args(["snp-pileup", "-@", threads]).arg(dir.join("sites.vcf.gz")).arg(&out).args(&bams);
        let o = run(cmd);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o.stderr));
        (std::fs::read(&out).unwrap(), text(&o.stderr))
    };
    std::fs::copy(dir.join("normal.bam.bai"), tmp.path("normal.bam.bai")).unwrap();
    let (whole, stderr) = run_with("whole.csv", "2");
    assert!(whole == want, "with the whole file's index: output differs from FACETS'");
    assert_eq!(stderr, "", "an index of the whole file: no warning");
    write_prefix_index(&bams[0]);
    for threads in ["1", "2"] {
        let (ours, stderr) = run_with(&format!("prefix{threads}.csv"), threads);
        assert!(ours == want, "-@ {threads}: with an index of a prefix of normal.bam, output differs from FACETS'");
        let lines: Vec<&str> = stderr.lines().collect();
        let expected_start = format!("fasthts snp-pileup: warning: {}: the index does not match the data file (", bams[0].display());
        assert!(
            lines.len() == 1 && lines[0].starts_with(&expected_start) && lines[0].ends_with("; reading the file sequentially"),
            "-@ {threads}: {stderr:?}"
        );
        assert!(lines[0].contains("it describes only the start of the file"), "{stderr:?}");
    }
}
