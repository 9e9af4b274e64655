//! Helpers of the CLI's integration tests: the binary under test and the
//! differential corpus. The rest (paths, TempDir, running commands,
//! samtools) is the workspace's test support, re-exported.

use fasthts_testgen::rng::Rng;
pub use fasthts_testgen::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fasthts binary under test.
pub fn fasthts() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fasthts"))
}

/// Where Debian's khmer 3.0 package installs khmer's scripts.
pub const KHMER_BIN: &str = "/usr/lib/khmer/bin";

/// Whether khmer 3.0 can be run (its scripts, and its module under the
/// system Python), through [`require`]: the k-mer differential tests fail
/// under CI=true without it.
pub fn have_khmer() -> bool {
    let scripts = ["load-into-counting.py", "normalize-by-median.py", "unique-kmers.py", "interleave-reads.py"];
    require(
        scripts.iter().all(|s| Path::new(KHMER_BIN).join(s).exists()) && runs("/usr/bin/python3", &["-c", "import khmer"]),
        "khmer 3.0 (Debian package khmer, /usr/lib/khmer/bin)",
    )
}

/// BAM files to compare on: the repository fixtures, the golden
/// tumour/normal pair, art_illumina's alignments ([`art_bam`]),
/// and samtools' own test BAMs when the samtools-test package is installed.
pub fn corpus() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut add_dir = |dir: &Path| {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut v: Vec<PathBuf> =
                rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "bam")).collect();
            v.sort();
            files.extend(v);
        }
    };
    add_dir(&data_dir());
    add_dir(&golden_snp_pileup());
    if let Some(samtools_tests) = samtools_test_data() {
        for sub in
            ["dat", "bedcov", "quickcheck", "mpileup", "split", "stat", "merge", "index", "depth", "coverage", "markdup", "sort", "view"]
        {
            add_dir(&samtools_tests.join(sub));
        }
    }
    files.extend(art_bam());
    files
}

/// A coordinate-sorted BAM of the alignments art_illumina writes for the
/// paired 100 bp reads it simulates over a seeded genome of three
/// references (`=`/`X` CIGARs, proper pairs on both strands): a simulator's
/// output rather than our generator's. Made once in cargo's test scratch
/// directory and reused; `None` (see `require`) without art_illumina (Debian
/// package art-nextgen-simulation-tools) or samtools.
pub fn art_bam() -> Option<PathBuf> {
    static BAM: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BAM.get_or_init(make_art_bam).clone()
}

/// Whether a SAM line's CIGAR consumes as many query bases as its SEQ has.
fn cigar_fits_sequence(line: &str) -> bool {
    let fields: Vec<&str> = line.split('\t').collect();
    let (cigar, seq) = (fields[5], fields[9]);
    if cigar == "*" || seq == "*" {
        return true;
    }
    let mut query = 0;
    let mut len = 0;
    for c in cigar.bytes() {
        if c.is_ascii_digit() {
            len = len * 10 + usize::from(c - b'0');
        } else {
            if b"MIS=X".contains(&c) {
                query += len;
            }
            len = 0;
        }
    }
    query == seq.len()
}

fn make_art_bam() -> Option<PathBuf> {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let done = scratch.join("art-corpus-v2");
    let bam = done.join("art.bam");
    if bam.exists() {
        return Some(bam);
    }
    // art_illumina without arguments prints its usage and exits non-zero.
    let art = Command::new("art_illumina").output().is_ok();
    if !require(art, "art_illumina (Debian package art-nextgen-simulation-tools)") || !have_samtools() {
        return None;
    }
    // Built aside and renamed into place, so that test processes running at
    // once never see a half-made BAM.
    let work = scratch.join(format!("art-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let mut fasta = String::new();
    let mut rng = Rng::new(0x2545f4914f6cdd1d);
    for (name, len) in [("chrA", 120_000), ("chrB", 60_000), ("chrC", 25_000)] {
        fasta.push_str(&format!(">{name}\n"));
        for line in random_bases(&mut rng, len).as_bytes().chunks(60) {
            fasta.push_str(std::str::from_utf8(line).unwrap());
            fasta.push('\n');
        }
    }
    std::fs::write(work.join("ref.fa"), fasta).unwrap();
    let mut art = Command::new("art_illumina");
    art.current_dir(&work).args(["-q", "-ss", "HS25", "-sam", "-i", "ref.fa", "-p", "-l", "100", "-f", "8", "-m", "300", "-s", "30"]);
    art.args(["-rs", "7", "-na", "-o", "art"]);
    let out = run(art);
    assert!(out.status.success(), "art_illumina failed: {}", text(&out.stderr));
    // art 2016.06.05 writes a few records whose CIGAR covers one base more
    // than the read (`101=` for 100 bases) where a read meets a reference
    // end; samtools rejects them, so they are left out.
    let sam = std::fs::read_to_string(work.join("art.sam")).unwrap();
    let valid: String = sam.lines().filter(|line| line.starts_with('@') || cigar_fits_sequence(line)).flat_map(|l| [l, "\n"]).collect();
    assert!(valid.len() > sam.len() * 9 / 10, "art_illumina's SAM is mostly invalid");
    std::fs::write(work.join("art.sam"), valid).unwrap();
    let mut sort = Command::new("samtools");
    sort.current_dir(&work).args(["sort", "--no-PG", "-o", "art.bam", "art.sam"]);
    let out = run(sort);
    assert!(out.status.success(), "samtools sort failed: {}", text(&out.stderr));
    for name in ["ref.fa", "art.sam", "art1.fq", "art2.fq"] {
        let _ = std::fs::remove_file(work.join(name));
    }
    if std::fs::rename(&work, &done).is_err() {
        // Another test process got there first.
        let _ = std::fs::remove_dir_all(&work);
    }
    Some(bam)
}

/// small.bam's records 20 times over (its header once), unsorted, written
/// to `path` as BGZF: big enough that `sort -m 1M` writes many runs.
pub fn write_small_bam_20_times(path: &Path) {
    let raw = fasthts::bgzf::decompress_all(&std::fs::read(data("small.bam")).unwrap()).unwrap();
    let l_text = u32::from_le_bytes(raw[4..8].try_into().unwrap()) as usize;
    let mut p = 8 + l_text;
    let n_ref = u32::from_le_bytes(raw[p..p + 4].try_into().unwrap());
    p += 4;
    for _ in 0..n_ref {
        p += 4 + u32::from_le_bytes(raw[p..p + 4].try_into().unwrap()) as usize + 4;
    }
    let mut big = raw[..p].to_vec();
    for _ in 0..20 {
        big.extend_from_slice(&raw[p..]);
    }
    std::fs::write(path, fasthts::bgzf::compress_all(&big, 1)).unwrap();
}

/// khmer's stderr without the citation banner its scripts print first (a
/// blank line, `||` lines, a blank line).
pub fn without_khmer_banner(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.split('\n').collect();
    if lines.len() > 1 && lines[0].is_empty() && lines[1].starts_with("||") {
        let mut i = 1;
        while i < lines.len() && lines[i].starts_with("||") {
            i += 1;
        }
        if i < lines.len() && lines[i].is_empty() {
            i += 1;
        }
        return lines[i..].join("\n");
    }
    stderr.to_string()
}

/// A file fasthts wrote, with a k-mer table's `.info` (named `name`) in
/// khmer 3.0's words: its first line names the program that wrote it,
/// fasthts and its version where khmer names khmer's.
pub fn in_khmer_words(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    let ours = format!("fasthts version: {}\n", env!("CARGO_PKG_VERSION"));
    match bytes.strip_prefix(ours.as_bytes()) {
        Some(rest) if name.ends_with(".info") => [&b"khmer version: 3.0.0a3\n"[..], rest].concat(),
        _ => bytes,
    }
}

/// Puts beside the BAM `bam` (as `<bam>.bai`, newer than it, so not stale)
/// the index of a prefix of it: its first BGZF blocks, byte for byte, from
/// about half-way (the first cut where a record starts), ended by the EOF
/// marker, and indexed. Every offset of that index is valid in `bam` and
/// starts a record, but its chunks end where the prefix does: the index of
/// the file cut after some records, re-terminated and indexed. Returns the
/// index's path.
pub fn write_prefix_index(bam: &Path) -> PathBuf {
    let bytes = std::fs::read(bam).unwrap();
    let mut starts = Vec::new();
    let mut at = 0u64;
    while (at as usize) < bytes.len() {
        starts.push(at);
        at = fasthts::bgzf::Block::parse(&bytes, at).unwrap().next_offset();
    }
    let prefix = bam.with_extension("prefix.bam");
    let index = (starts.len() / 2..starts.len() - 1)
        .find_map(|k| {
            let cut = starts[k] as usize;
            std::fs::write(&prefix, [&bytes[..cut], &fasthts::bgzf::EOF_MARKER[..]].concat()).unwrap();
            let opened = fasthts::bam::BamFile::open(&prefix).ok()?;
            fasthts::index::build(&opened, fasthts::index::IndexFormat::Bai).ok()
        })
        .expect("a block boundary where a record starts");
    std::fs::remove_file(&prefix).unwrap();
    let bai = PathBuf::from(format!("{}.bai", bam.display()));
    fasthts::index::write_index(&index, &bai).unwrap();
    crate::harness::age(bam, 60);
    bai
}

/// `samtools view -C -T FASTA` of `sam` into `cram`, each of `options` an
/// `--output-fmt-option` (`version=3.1`, `seqs_per_slice=60`), then
/// `samtools index` of it; htslib looks for references nowhere else.
pub fn samtools_cram(sam: &Path, fasta: &Path, cram: &Path, options: &[&str]) {
    let offline = |c: &mut Command| {
        c.env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
    };
    let mut view = Command::new("samtools");
    offline(&mut view);
    view.args(["view", "-C", "-T"]).arg(fasta);
    for o in options {
        view.args(["--output-fmt-option", o]);
    }
    view.arg("-o").arg(cram).arg(sam);
    let o = run(view);
    assert!(o.status.success(), "samtools view -C {options:?}: {}", text(&o.stderr));
    let mut index = Command::new("samtools");
    offline(&mut index);
    index.arg("index").arg(cram);
    let o = run(index);
    assert!(o.status.success(), "samtools index {}: {}", cram.display(), text(&o.stderr));
}

/// Runs `fasthts COMMAND -o OUT ARGS` (OUT removed first) and checks that
/// it failed with one error line `fasthts COMMAND: ...` naming `named`
/// (warnings `fasthts: warning: ...` allowed before it) and left no OUT;
/// returns the run.
pub fn fails_in_one_line_leaving_no_output(command: &str, out: &Path, args: &[String], named: &str) -> std::process::Output {
    let _ = std::fs::remove_file(out);
    let mut c = fasthts();
    c.args([command, "-o"]).arg(out).args(args);
    let got = run(c);
    let err = text(&got.stderr);
    assert!(!got.status.success(), "{command} {args:?} succeeded");
    let errors: Vec<&str> = err.lines().filter(|l| !l.starts_with("fasthts: warning: ")).collect();
    assert_eq!(errors.len(), 1, "{command} {args:?}: {err}");
    assert!(errors[0].starts_with(&format!("fasthts {command}: ")) && errors[0].contains(named), "{command} {args:?}: {err}");
    assert!(!out.exists(), "{command} {args:?} left an output");
    got
}
