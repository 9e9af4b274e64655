//! `fasthts view` against samtools view 1.16: every option and the common
//! combinations, whole files and regions, on a generated BAM (BAI and
//! CSI; long CIGARs, records larger than a block, unmapped reads placed
//! and unplaced) and the corpus, at 1 and 2 threads and in windows small
//! enough that reads cross many cuts; SAM and BAM outputs (BAM compared
//! decompressed: the records and header are the same bytes, the BGZF
//! blocks are cut elsewhere); the @PG line; inputs from SAM and pipes;
//! `--write-index`; bad input.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A generated BAM with its BAI, the same with a CSI, and its SAM text.
struct Generated {
    dir: TempDir,
    bam: PathBuf,
    csi_bam: PathBuf,
    sam: PathBuf,
}

fn generate(tag: &str) -> Option<Generated> {
    let dir = with_samtools(tag)?;
    let args = [
        "--seed",
        "41",
        "--reads",
        "5000",
        "--refs",
        "4",
        "--ref-len",
        "60k",
        "--read-len",
        "60-150",
        "--long-cigar-fraction",
        "0.0005",
        "--huge-record-fraction",
        "0.0005",
        "--unmapped-fraction",
        "0.05",
    ];
    let sam = dir.path("gen.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let bam = dir.path("gen.bam");
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&sam);
    assert!(run(view).status.success());
    let csi_bam = dir.path("gen_csi.bam");
    std::fs::copy(&bam, &csi_bam).unwrap();
    for (file, extra) in [(&bam, None), (&csi_bam, Some("-c"))] {
        let mut idx = Command::new("samtools");
        idx.arg("index").args(extra).arg(file);
        assert!(run(idx).status.success());
    }
    Some(Generated { dir, bam, csi_bam, sam })
}

fn samtools_view(args: &[&str]) -> Output {
    let mut c = Command::new("samtools");
    c.arg("view").args(args);
    run(c)
}

fn fasthts_view(args: &[&str], extra: &[&str]) -> Output {
    let mut c = fasthts();
    c.arg("view").args(extra).args(args);
    run(c)
}

/// The thread and window settings every comparison runs at.
const RUNS: [&[&str]; 4] = [&["-@", "1"], &["-@", "2"], &["-@", "1", "--window-bases", "700"], &["-@", "2", "--window-bases", "3000"]];

/// Output bytes as compared: BGZF data decompressed.
fn comparable(bytes: &[u8]) -> Vec<u8> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        fasthts::bgzf::decompress_all(bytes).expect("BGZF output")
    } else {
        bytes.to_vec()
    }
}

/// Compares `fasthts view ARGS` with `samtools view ARGS` (standard output
/// and exit status) at every setting of [`RUNS`]; returns the lines
/// samtools printed.
pub(crate) fn compare(args: &[&str]) -> usize {
    let expected = samtools_view(args);
    for extra in RUNS {
        let got = fasthts_view(args, extra);
        assert_eq!(
            got.status.success(),
            expected.status.success(),
            "view {args:?} {extra:?}: exit status differs; fasthts stderr: {}; samtools stderr: {}",
            text(&got.stderr),
            text(&expected.stderr)
        );
        let (e, g) = (comparable(&expected.stdout), comparable(&got.stdout));
        if g != e {
            let (e, g) = (text(&e), text(&g));
            let first = e.lines().zip(g.lines()).position(|(a, b)| a != b);
            panic!(
                "view {args:?} {extra:?}: output differs ({} lines against samtools' {}), first at line {first:?}: {:?} / {:?}",
                g.lines().count(),
                e.lines().count(),
                first.and_then(|i| g.lines().nth(i)),
                first.and_then(|i| e.lines().nth(i))
            );
        }
    }
    expected.stdout.iter().filter(|&&c| c == b'\n').count()
}

/// [`compare`] with `--no-PG` and the input last.
pub(crate) fn compare_on(options: &[&str], input: &Path, regions: &[&str]) -> usize {
    let mut args = vec!["--no-PG"];
    args.extend_from_slice(options);
    let input = input.to_str().unwrap();
    args.push(input);
    args.extend_from_slice(regions);
    compare(&args)
}

/// The options each region set is viewed with (BAI- and CSI-indexed BAM
/// here, bgzipped SAM in `samgz_regions`).
pub(crate) const REGION_OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-c"],
    &["-M"],
    &["-M", "-c"],
    &["-F", "4", "-q", "5"],
    &["-b"],
    &["-h", "-x", "NM"],
    &["-p", "-q", "20"],
    &["-r", "rg2", "-l", "lib1", "-M"],
];

/// Every filter and output option alone, and usual combinations.
const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-h"],
    &["-H"],
    &["-h", "--no-header"],
    &["-c"],
    &["-f", "2"],
    &["-f", "PAIRED,READ1"],
    &["-F", "0x904"],
    &["-F", "UNMAP,SECONDARY"],
    &["--rf", "0x100"],
    &["--incl-flags", "SUPPLEMENTARY,DUP"],
    &["-G", "0x50"],
    &["-q", "30"],
    &["-q", "1", "-F", "4", "-c"],
    &["-m", "100"],
    &["-d", "RG"],
    &["-d", "RG:grp1"],
    &["-d", "NM:0"],
    &["-d", "NM:1", "-d", "NM:2"],
    &["-x", "NM,MD"],
    &["-x", "^RG"],
    &["--keep-tag", "NM,XA"],
    &["--subsample", "0.3"],
    &["--subsample", "0.3", "--subsample-seed", "7"],
    &["-s", "5.25"],
    &["-s", "0.5", "-c"],
    &["-b"],
    &["-u"],
    &["-1"],
    &["-O", "bam"],
    &["-O", "bam,level=1"],
    &["-b", "--output-fmt-option", "level=0"],
    &["-b", "-O", "sam"],
    &["-O", "sam.gz", "-h"],
    &["-h", "-f", "1", "-F", "0x900", "-q", "20", "-x", "MD"],
    &["-c", "-f", "0x40", "--subsample", "0.5", "--subsample-seed", "3"],
    &["--add-flags", "0x400", "-q", "40"],
    &["--remove-flags", "DUP,PAIRED", "--add-flags", "QCFAIL", "-b"],
    &["-r", "rg1"],
    &["-h", "-r", "rg1", "--read-group", "ont1"],
    &["-b", "-r", "rg4", "-q", "10"],
    &["-l", "lib1"],
    &["-c", "--library", "lib2"],
    &["-l", "nolib"],
    &["-p", "-q", "30"],
    &["-b", "--unmap", "-q", "30", "-x", "NM"],
    &["-p", "-c", "-f", "2"],
    &["-S", "-B", "-F", "4"],
];

#[test]
fn every_option_matches_samtools_on_a_whole_file() {
    let Some(g) = generate("view-options") else { return };
    let mut lines = 0;
    for options in OPTION_SETS {
        lines += compare_on(options, &g.bam, &[]);
    }
    // SAM input, and a BAM without an index (read in one pass either way).
    for options in [&[][..], &["-h", "-F", "4"], &["-b", "-x", "RG"], &["-c", "-q", "10"]] {
        compare_on(options, &g.sam, &[]);
        compare_on(options, &g.csi_bam, &[]);
    }
    assert!(lines > 100_000, "too little compared: {lines} lines");
}

#[test]
fn regions_match_samtools() {
    let Some(g) = generate("view-regions") else { return };
    let region_sets: &[&[&str]] = &[
        &["chr1"],
        &["chr1:1000-5000"],
        &["chr1:1,000-5,000", "chr1:4000-9000", "chr1:1000-5000"],
        &["chr2:30000-", "chr1:100-200", "chr2"],
        &["*"],
        &["chr4:100-200", "*", "chr1:5-6"],
        &["chrM", "chr3", "chrUn_gen1"],
        &["nope", "chr2:1-40000", "chr1:0-5"],
        &["chr1:50000-40000", "chr2:10000-10000"],
        // Read as samtools reads them: htslib's hts_parse_region without
        // -M, bedidx's hts_parse_reg with it (where an open end `X:N-` is
        // no region and `X:-N` all of X).
        &["chr2:30000-", "chr1:100-200"],
        &["chr2:-5000", "chr1:0-5000", "chr2:60000-0", "chr2:-"],
        &["chr2:30000-40000x", "chr2: 1,000-2k", "{chr1}:5-", "chr1:+5-+3e3"],
        &[".", "chr1"],
        &["chr1:3000000000", "chr2:1-3000000000", "chr1:-1-5"],
    ];
    let mut lines = 0;
    for bam in [&g.bam, &g.csi_bam] {
        for regions in region_sets {
            for options in REGION_OPTION_SETS {
                lines += compare_on(options, bam, regions);
            }
        }
    }
    assert!(lines > 50_000, "too little compared: {lines} lines");
}

#[test]
fn bed_files_and_multi_region_match_samtools() {
    let Some(g) = generate("view-bed") else { return };
    let bed = g.dir.path("targets.bed");
    std::fs::write(
        &bed,
        "# targets\nchr1\t1000\t5000\nchr1 4000 9000\nchr2\t100\ntrack x\nchr4 20000 30000\nchr4 30000 30500\nchrM 0 100\nchrZ 5 10\n",
    )
    .unwrap();
    let bed = bed.to_str().unwrap();
    let sets: &[(&[&str], &[&str])] = &[
        (&["-L", bed], &[]),
        (&["-L", bed, "-c"], &[]),
        (&["-L", bed], &["chr1:3000-20000", "chr4"]),
        (&["-L", bed, "-F", "0x10"], &["chr1", "*"]),
        (&["-M", "-L", bed], &[]),
        (&["--region-file", bed], &[]),
        (&["--region-file", bed, "-b"], &[]),
        (&["-M"], &["chr1:3000-20000", "chr1:100-5000", "chr2", "chr4:5-9"]),
        (&["-M"], &["chr2:100-200", "chr2:200-300", "chr2:301-400"]),
        // -M with a BED file and regions: their intersection.
        (&["-M", "-L", bed], &["chr1:3000-20000", "chr4"]),
        (&["-M", "-L", bed, "-c"], &["chr1:4500-4600", "chr2", "chr4:25000-30200", "nope", "chr1:8000-40000"]),
        (&["--region-file", bed, "-b"], &["chr4:29000-40000", "chrM"]),
        (&["-M", "-L", bed, "-p", "-q", "30"], &["chr1"]),
        // Nothing in common: an error.
        (&["-M", "-L", bed], &["chr3"]),
        (&["-M", "-L", bed], &["*"]),
    ];
    for (options, regions) in sets {
        compare_on(options, &g.bam, regions);
        compare_on(options, &g.csi_bam, regions);
    }
    // -P: the regions (as -M) and the mates of their selected pairs.
    let pairs: &[(&[&str], &[&str])] = &[
        (&["-P"], &["chr1:1000-5000"]),
        (&["-P", "-q", "30"], &["chr1:1000-5000", "chr2:30000-31000", "chr4"]),
        (&["--fetch-pairs", "-L", bed, "-F", "0x900"], &["chr1", "chr4:1-25000"]),
        (&["-P", "-L", bed], &[]),
        (&["-P", "--add-flags", "0x400", "-x", "NM", "-b"], &["chr2:100-3000"]),
        (&["-P", "-f", "0x40"], &["*", "chr1:100-200"]),
        (&["-P", "-c"], &["chr1"]),
    ];
    for (options, regions) in pairs {
        compare_on(options, &g.bam, regions);
    }
    // -L without an index: the whole file, filtered.
    compare_on(&["-L", bed], &g.sam, &[]);
}

/// Zero-length BED intervals (`chr1 1000 1000`, insertion sites): -L
/// selects the reads that straddle them (bedidx's strict overlap); with
/// -M, -P or --region-file, samtools fails on one that survives merging on
/// a reference with reads (htslib's multi-region iterator refuses an empty
/// interval), and fasthts with it.
#[test]
fn zero_length_bed_intervals_match_samtools() {
    let Some(g) = generate("view-bed-points") else { return };
    let write = |name: &str, text: &str| {
        let path = g.dir.path(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    // Points alone, beside and inside intervals, repeated, on a reference
    // without reads (chr3), and a one-base interval next to one.
    let mut lines: String = (1..60).map(|k| format!("chr1\t{}\t{}\n", k * 1000, k * 1000)).collect();
    lines.push_str("chr2\t30000\t30000\nchr2\t20000\t20001\nchr2\t20001\t20001\n");
    let points = write("points.bed", &lines);
    let mixed = write(
        "mixed.bed",
        "chr1\t4000\t6000\nchr1\t5000\t5000\nchr1\t900\t1000\nchr1\t1000\t1000\nchr3\t10\t10\nchr4 20000 20000\nchr4 20000 20000\n",
    );
    let beside = write("beside.bed", "chr1\t900\t1000\nchr1\t1000\t1000\nchr3\t10\t10\n");
    let mut counted = 0;
    for bed in [&points, &mixed, &beside] {
        let sets: &[(&[&str], &[&str])] = &[
            (&["-L", bed], &[]),
            (&["-L", bed, "-c"], &[]),
            (&["-L", bed], &["chr1", "chr2:1-40000"]),
            (&["-M", "-L", bed], &[]),
            (&["-M", "-L", bed, "-c"], &["chr1", "chr2:1-40000"]),
            (&["--region-file", bed], &[]),
            (&["-P", "-L", bed], &[]),
        ];
        for (options, regions) in sets {
            counted += compare_on(options, &g.bam, regions);
            compare_on(options, &g.csi_bam, regions);
        }
        compare_on(&["-L", bed], &g.sam, &[]);
    }
    assert!(counted > 100, "too little compared: {counted} lines");
    // The straddling reads are there: not a comparison of two empty outputs.
    let straddling = samtools_view(&["-c", "-L", &points, g.bam.to_str().unwrap()]);
    assert!(text(&straddling.stdout).trim().parse::<u32>().unwrap() > 50);
}

/// Filter expressions, each against samtools: htslib's whole language
/// (every operator and function, every symbol), its precedence, its
/// literals, and its answers where they hang on details (undefined values
/// from absent tags, strings against numbers, values left over from an
/// earlier operand, C's integer casts). Those samtools fails on for some
/// records (arithmetic on a string, a `B`-array tag, `length` of a number)
/// leave those records out in both.
const EXPRESSIONS: &[&str] = &[
    "mapq >= 30 && !flag.dup",
    "[NM] == 0 || rname == \"chr2\"",
    "qname =~ \"1[0-9]$\"",
    "!([XA])",
    "[RG] != \"grp1\"",
    "[RG] == \"grp1\" || [RG] == \"grp2\"",
    "pos < 20000 && flag.paired && !flag.reverse",
    "[NM] > 2",
    "cigar =~ \"S\" && sclen > 5",
    "tlen < -100 || tlen > 300",
    "[MD] =~ \"\\^\"",
    "mrname != rname",
    "[NM]",
    "!([NM] > 1)",
    "[XX] || mapq < 10",
    "!([XX] > 1) && ![YY]",
    "qlen != rlen",
    "-tlen > 100",
    "refid == mrefid && mpos > pos",
    "endpos >= 30000 && pnext < 0x7530",
    "flag == 99 || flag.supplementary",
    "ncigar > 1 && [MQ] >= 1.5e1",
    "qname < \"r2\" && qname >= \"r1\"",
    // Bitwise operators, each its own level below + and -, above <.
    "flag & 2",
    "flag & 0x900 == 0",
    "~flag & 4",
    "flag | 0x400 == flag",
    "(flag ^ 0x40) & 0x41 == 1",
    "flag & 0x10 ^ 0x1 | 0x100",
    "(1 | 2 ^ 3 & 4) == 1",
    "(3 & 1.9) == 1 && ~1.5 == -2 && ~0 == -1",
    // Arithmetic: precedence, left to right, signs, C's % and /.
    "mapq * 2 / 3 % 4 == 1",
    "[NM] + 1 > 2",
    "endpos - pos + 1 == rlen",
    "1 + 2 * 3 == 7 && (1 + 2) * 3 == 9 && 2 - 1 - 1 == 0 && 8 / 2 / 2 == 2",
    "-3 % 2 == -1 && 7 % -3 == 1 && 5.9 % 2 == 1",
    "mapq--5 > 60",
    "mapq - -5 > 60 && +mapq > 0",
    "-mapq < -50",
    "tlen / 0 > 0",
    "0/0",
    "[XX] % 3",
    "[MQ] - mapq",
    "[XF] * 2 > 1",
    // Arithmetic on a string fails for the records where it happens.
    "mapq + qname",
    "[XZ] * 2 || mapq > 50",
    "1 & [XX] & qname",
    // What htslib's values keep from an earlier operand.
    "(0/0) & \"abc\" & [XX]",
    "0 + [NM] + !mapq - [NM]",
    "qname == length(qname)",
    // Functions.
    "length(seq) > 100",
    "max(cigar) == 83",
    "min([XZ]) > 60",
    "exists([XF]) || exists(mapq > 60)",
    "default([XC], -1) > 3",
    "default([XX], qname) =~ \"1\"",
    "sqrt(mapq) > 7",
    "log(pos) > 10",
    "exp([NM]) > 2",
    "pow(mapq, 2) > 3000 && pow(2, -1) == 0.5",
    "log(-1) || !log(-1) && sqrt(-1) || log(0) < 0",
    "avg([XX]) == 0 && length([XX]) == 0 && exp([XX]) == 1",
    "min([XX])",
    "length(mapq) || pow(qname, 2)",
    // Symbols.
    "library == \"lib1\"",
    "[RG] =~ \"rg[12]\" && library =~ \"lib1\"",
    "library",
    "mpos == pnext && mrname == rnext",
    "mrefid != refid && mrefid >= 0",
    "cigar =~ \"^[0-9]+M$\"",
    "[MC] == cigar",
    "[XT] >= \"M\"",
    "[XH] =~ \"^[0-9A-F]+$\"",
    "[ZC] > 1",
    "[XI] > 0 && [Xi] < 0",
    "seq > \"T\"",
    "flag.paired && flag.proper_pair && !flag.unmap && !flag.munmap && (flag.reverse || flag.mreverse) \
     && (flag.read1 || flag.read2) && !flag.secondary && !flag.qcfail && !flag.supplementary",
    // Literals: hex, exponents, no octal, strtod's words, escapes.
    "mapq >= 0x1E || mapq < 3e0",
    ".5 < 1 && 5. == 5 && 010 == 10",
    "infinity > 0 && -inf < 0 && 0x1p-2 == 0.25 && 1e400 > 0",
    "NAN",
    "!nan && nan(1) || mapq > 59",
    "\"a\\tb\" != \"a\tb\"",
    "\"a\\\"b\" =~ \"a\\\"b\" && \"a\\qb\" == \"a\\\\qb\"",
    " mapq>=30&&!flag.dup ",
    "mapq\t>=\t30",
    // Undefined values, truth, strings against numbers.
    "[XX] || 1",
    "[XX] || 0",
    "!([XX] || 0) && !!![XX]",
    "[NM] && [XX] || !([NM] && [XX])",
    "exists([XX] || 0)",
    "!([XX] =~ \"a\")",
    "[XX] !~ \"a\"",
    "mapq > 1 > 0",
    "mapq == 60 == 1",
    "1 < 2 < 3",
    "1 || 0 && 0",
    "\"b\" > \"a\" && qname != 5 && !(qname > 5)",
    "rname >= \"chr2\" && rname < \"chr3\"",
    "!qname || !\"\" || !-1",
    "!(0.5)",
    // Matches on tags that may be absent, with one pattern after them.
    "qname =~ \"1\" || [XZ] =~ \"^A\"",
    "[XZ] =~ \"^A\" || [XT] =~ \"^A\"",
];

/// The records of `g` that have a sequence, as an indexed BAM.
fn with_sequences(g: &Generated) -> PathBuf {
    let sam = std::fs::read_to_string(&g.sam).unwrap();
    let kept: String = sam.lines().filter(|l| l.starts_with('@') || l.split('\t').nth(9) != Some("*")).flat_map(|l| [l, "\n"]).collect();
    assert!(kept.len() < sam.len(), "the generated SAM has records without a sequence");
    let (kept_sam, bam) = (g.dir.path("with_seq.sam"), g.dir.path("with_seq.bam"));
    std::fs::write(&kept_sam, kept).unwrap();
    let mut view = Command::new("samtools");
    view.args(["view", "--no-PG", "-b", "-o"]).arg(&bam).arg(&kept_sam);
    assert!(run(view).status.success());
    let mut index = Command::new("samtools");
    index.arg("index").arg(&bam);
    assert!(run(index).status.success());
    bam
}

#[test]
fn filter_expressions_match_samtools() {
    let Some(g) = generate("view-expr") else { return };
    let mut selecting = 0;
    for e in EXPRESSIONS {
        selecting += usize::from(compare_on(&["-e", e], &g.bam, &[]) > 0);
        compare_on(&["-c", "-e", e], &g.bam, &["chr1", "chr2:1000-40000"]);
    }
    // Not a comparison of empty outputs.
    assert!(selecting * 3 > EXPRESSIONS.len() * 2, "{selecting} of {} expressions select records", EXPRESSIONS.len());
    // samtools 1.16 hands `qual` to regexec without its terminating NUL
    // (sam.c's symbol lookup), so on a record with no sequence (the
    // secondary alignments here) the match reads uninitialised memory
    // (valgrind) and samtools' count changes from run to run (168 instead
    // of 167 in 1 run of 200). `qual` is compared on the records that have
    // a sequence, with patterns anchored at the first quality, whose answer
    // does not depend on what lies past the last (300 runs alike).
    let with_seq = with_sequences(&g);
    // (`length`, `min`, `max` and `avg` read the qualities by their length.)
    for e in [
        "seq =~ \"^AC\" || qual =~ \"^#\"",
        "qual =~ \"^[#-+]\" && !flag.reverse",
        "min(qual) > 20",
        "avg(qual) > 30 && length(qual) == length(seq)",
        "max(qual) == 255 || max(qual) < 40",
    ] {
        compare_on(&["-e", e], &with_seq, &[]);
        compare_on(&["-c", "-e", e], &with_seq, &["chr1", "chr2:1000-40000"]);
    }
    // What fails on every record (samtools prints an error per record and
    // selects nothing) or is not mirrored: refused, one line saying what,
    // nothing written.
    let input = g.bam.to_str().unwrap();
    for (e, what) in [
        ("mapq > ", "end of the expression"),
        ("(mapq > 5", "missing ')'"),
        ("flag.nope", "unrecognised flag"),
        ("foo > 1", "unknown name"),
        ("mapq ** 2", "unexpected text"),
        ("\"abc", "unterminated"),
        ("default([XX] ,1)", "','"),
        ("qname =~ [XZ]", "string literal"),
        ("qname =~ \"(\"", "failed regex"),
    ] {
        let got = fasthts_view(&["-e", e, input], &[]);
        let err = text(&got.stderr);
        assert!(!got.status.success() && got.stdout.is_empty() && err.lines().count() == 1 && err.contains(what), "{e}: {err}");
    }
    // Found while reading: samtools dies of SIGFPE (%), or answers by the
    // records' order (htslib's regex slots, a match on [XZ] skipped where
    // it is absent); fasthts fails with one line saying so.
    for (e, what) in [("mapq % 0.5", "SIGFPE"), ("[XX] % -1", "SIGFPE"), ("[XZ] =~ \"A\" || qname =~ \"B\"", "order")] {
        for options in [&["-c"][..], &["-o", "/dev/null"]] {
            let got = fasthts_view(&[options, &["-e", e, input]].concat(), &[]);
            let err = text(&got.stderr);
            assert!(!got.status.success() && got.stdout.is_empty() && err.lines().count() == 1 && err.contains(what), "{e}: {err}");
        }
    }
    let samtools_died = samtools_view(&["-c", "-e", "mapq % 0.5", input]);
    assert!(!samtools_died.status.success());
    // Records the expression fails on: left out, one warning.
    for e in ["mapq + qname", "[ZC] > 1", "length(mapq)"] {
        let got = fasthts_view(&["-c", "-e", e, input], &[]);
        let err = text(&got.stderr);
        assert!(got.status.success() && err.lines().count() == 1 && err.contains("expression failed"), "{e}: {err}");
    }
}

#[test]
fn name_and_tag_lists_match_samtools() {
    let Some(g) = generate("view-lists") else { return };
    let sam = std::fs::read_to_string(&g.sam).unwrap();
    let names: Vec<&str> = sam.lines().filter(|l| !l.starts_with('@')).step_by(37).map(|l| l.split('\t').next().unwrap()).collect();
    let names_file = g.dir.path("names.txt");
    std::fs::write(&names_file, format!("{}\n  nosuchread\t{}\n", names[..names.len() / 2].join("\n"), names[names.len() / 2..].join(" ")))
        .unwrap();
    let values = g.dir.path("rg.txt");
    std::fs::write(&values, "grp2\nnone\n").unwrap();
    let nm = g.dir.path("nm.txt");
    std::fs::write(&nm, "0 3\n").unwrap();
    let groups = g.dir.path("groups.txt");
    std::fs::write(&groups, "rg2 ont1\nnone\n").unwrap();
    let groups = groups.to_str().unwrap();
    let names_file = names_file.to_str().unwrap();
    let rg = format!("RG:{}", values.display());
    let nm = format!("NM:{}", nm.display());
    for options in [
        &["-N", names_file][..],
        &["-N", names_file, "-f", "0x80"],
        &["-D", &rg],
        &["-D", &nm, "-c"],
        &["-d", "NM:1", "-D", &nm],
        &["-N", names_file, "-D", &rg, "-b"],
        &["-R", groups, "-h"],
        &["-R", groups, "-r", "rg3", "-c"],
        &["--read-group-file", groups, "-l", "lib1", "-b"],
    ] {
        compare_on(options, &g.bam, &[]);
        compare_on(options, &g.bam, &["chr1", "chr2:1-30000"]);
    }
}

/// Runs both tools writing to files (`-o` and `-U`), compares the files.
#[test]
fn output_files_match_samtools() {
    let Some(g) = generate("view-files") else { return };
    let input = g.bam.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&["-q", "20"], &["out.sam", "un.sam"]),
        (&["-q", "20"], &["out.bam", "un.bam"]),
        (&["-u", "-F", "0x10"], &["out.txt", "un.sam"]),
        (&["-f", "2"], &["out.sam.gz", "un.bam"]),
        (&["-b", "-d", "RG:grp1"], &["out.sam", "un.sam"]),
        (&["-c", "-q", "20"], &["count.txt", "un.sam"]),
    ];
    for (options, names) in cases {
        for regions in [&[][..], &["chr2", "chr1:1000-20000"]] {
            let mut outputs: Vec<Vec<Vec<u8>>> = Vec::new();
            for tool in ["samtools", "fasthts"] {
                let (out, un) = (g.dir.path(&format!("{tool}-{}", names[0])), g.dir.path(&format!("{tool}-{}", names[1])));
                let _ = std::fs::remove_file(&un);
                let mut c = if tool == "samtools" { Command::new("samtools") } else { fasthts() };
                c.args(["view", "--no-PG"]).args(*options).arg("-o").arg(&out).arg("-U").arg(&un).arg(input).args(regions);
                let got = run(c);
                assert!(got.status.success() && got.stdout.is_empty(), "{tool} {options:?}: {}", text(&got.stderr));
                let read = |p: &Path| std::fs::read(p).map(|b| comparable(&b)).unwrap_or_default();
                outputs.push(vec![read(&out), read(&un)]);
            }
            assert!(!outputs[0][0].is_empty(), "{options:?}");
            assert!(outputs[0] == outputs[1], "{options:?} {regions:?}: -o / -U files differ");
        }
    }
}

#[test]
fn the_pg_line_is_samtools_own_with_fasthts_named() {
    let Some(g) = generate("view-pg") else { return };
    let input = g.bam.to_str().unwrap();
    for (options, regions) in [(&["-h"][..], &[][..]), (&["-H"], &[]), (&["-b"], &[]), (&["-h"], &["chr1:1-1000"])] {
        let mut args = options.to_vec();
        args.push(input);
        args.extend_from_slice(regions);
        let expected = text(&comparable(&samtools_view(&args).stdout));
        let got = text(&comparable(&fasthts_view(&args, &[]).stdout));
        let pg = |t: &str| t.lines().filter(|l| l.starts_with("@PG")).last().map(str::to_owned);
        let rest = |t: &str| {
            t.lines().filter(|l| !l.starts_with("@PG\tID:samtools") && !l.starts_with("@PG\tID:fasthts")).collect::<Vec<_>>().join("\n")
        };
        let (theirs, ours) = (
            pg(&expected).unwrap_or_else(|| panic!("{options:?}: no @PG line from samtools: {}", &expected[..expected.len().min(3000)])),
            pg(&got).unwrap_or_else(|| panic!("{options:?}: no @PG line in {got:?}")),
        );
        assert!(theirs.starts_with("@PG\tID:samtools\tPN:samtools\tPP:") && theirs.contains("\tCL:samtools view"), "{theirs}");
        let expected_ours = theirs.replace("ID:samtools\tPN:samtools", "ID:fasthts\tPN:fasthts").replace(
            &format!("VN:{}", theirs.split("VN:").nth(1).unwrap().split('\t').next().unwrap()),
            &format!("VN:{}", env!("CARGO_PKG_VERSION")),
        );
        let cl = |l: &str| l.split("\tCL:").next().unwrap().to_owned();
        assert_eq!(cl(&ours), cl(&expected_ours), "{options:?}");
        assert!(ours.contains(" view ") && ours.ends_with(&args.join(" ")), "{ours}");
        assert!(rest(&got) == rest(&expected), "{options:?}: output besides the @PG line differs");
    }
}

/// With its @PG line added, the header is written as htslib rebuilds it:
/// `@HD` first wherever it stood, lines with a type and nothing else (a
/// bare `@CO`) dropped; without it (`--no-PG`), as read.
#[test]
fn the_header_is_rebuilt_as_htslib_rebuilds_it_when_the_pg_line_is_added() {
    let Some(dir) = with_samtools("view-rebuilt-header") else { return };
    let sam = dir.path("h.sam");
    std::fs::write(&sam, "@CO\tfirst\n@HD\tVN:1.6\n@CO\n@SQ\tSN:c\tLN:10\n@PG\tID:a\tPN:a\nr\t0\tc\t1\t0\t2M\t*\t0\t0\tAC\t*\n").unwrap();
    let input = sam.to_str().unwrap();
    for options in [&["-h"][..], &["-H"], &["-h", "--no-PG"]] {
        let mut args = options.to_vec();
        args.push(input);
        let without_ours = |t: String| {
            t.lines().filter(|l| !l.starts_with("@PG\tID:samtools") && !l.starts_with("@PG\tID:fasthts")).collect::<Vec<_>>().join("\n")
        };
        let theirs = without_ours(text(&samtools_view(&args).stdout));
        let ours = without_ours(text(&fasthts_view(&args, &[]).stdout));
        assert_eq!(ours, theirs, "{options:?}");
    }
}

#[test]
fn pipes_and_head_as_samtools() {
    let Some(g) = generate("view-pipes") else { return };
    for (input, options) in [(&g.bam, &["-h", "--no-PG"][..]), (&g.sam, &["--no-PG", "-F", "4"]), (&g.bam, &["-c"])] {
        let expected = samtools_view(&[options, &[g.bam.to_str().unwrap()]].concat());
        let mut c = fasthts();
        c.arg("view").args(options).arg("-");
        let got = run_with_stdin(c, std::fs::read(input).unwrap());
        assert!(got.status.success(), "{}", text(&got.stderr));
        assert!(got.stdout == expected.stdout, "view {options:?} - < {}", input.display());
    }
    // A reader that stops early ends the writer quietly (SIGPIPE, as samtools).
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(format!("{} view {} | head -3 | wc -l", env!("CARGO_BIN_EXE_fasthts"), g.bam.display()));
    let got = run(sh);
    assert_eq!(text(&got.stdout).trim(), "3");
    assert!(got.stderr.is_empty(), "{}", text(&got.stderr));
}

#[test]
fn explicit_index_and_written_index() {
    let Some(g) = generate("view-index") else { return };
    // -X: the index named after the input; the input has none beside it.
    let bare = g.dir.path("bare.bam");
    std::fs::copy(&g.bam, &bare).unwrap();
    let bai = format!("{}.bai", g.bam.display());
    let expected = samtools_view(&["--no-PG", "-X", bare.to_str().unwrap(), &bai, "chr1:100-20000", "chr2"]);
    let got = fasthts_view(&["--no-PG", "-X", bare.to_str().unwrap(), &bai, "chr1:100-20000", "chr2"], &[]);
    assert!(expected.status.success() && got.status.success(), "{}", text(&got.stderr));
    assert!(got.stdout == expected.stdout);
    // --write-index: the index samtools makes of the output (BAM, and
    // bgzipped SAM, which samtools 1.16 indexes too).
    let spec = format!("{}##idx##{}", g.dir.path("r.bam").display(), g.dir.path("r.bai").display());
    let sam_spec = format!("{}##idx##{}", g.dir.path("s.sam.gz").display(), g.dir.path("s.bai").display());
    let cases: [(&str, &str, &[&str], &[&str]); 4] = [
        ("w.bam", "w.bam.csi", &[], &["-b"]),
        (spec.as_str(), "r.bai", &["chr1", "chr2:1-30000"], &["-b"]),
        ("w.sam.gz", "w.sam.gz.csi", &[], &[]),
        (sam_spec.as_str(), "s.bai", &["chr1", "chr2:1-30000"], &["-O", "sam.gz"]),
    ];
    for (name, index, regions, format) in cases {
        let out = g.dir.path(name);
        let mut args = vec!["--no-PG", "-F", "0x10", "--write-index", "-o", out.to_str().unwrap(), g.bam.to_str().unwrap()];
        args.splice(0..0, format.iter().copied());
        args.extend_from_slice(regions);
        let got = fasthts_view(&args, &["-@", "2"]);
        assert!(got.status.success(), "{}", text(&got.stderr));
        let data = PathBuf::from(out.to_str().unwrap().split("##").next().unwrap());

        let theirs = g.dir.path("theirs.idx");
        let mut idx = Command::new("samtools");
        idx.arg("index").args(if index.ends_with(".csi") { &["-c"][..] } else { &[] }).arg(&data).arg(&theirs);
        assert!(run(idx).status.success());
        // The same index; its BGZF blocks may be compressed differently.
        let read = |p: &Path| comparable(&std::fs::read(p).unwrap());
        assert!(read(&g.dir.path(index)) == read(&theirs), "{name}: index differs");
        // The records samtools writes (with the header --write-index forces).
        let elsewhere = g.dir.path(if data.to_str().unwrap().ends_with(".sam.gz") { "theirs.sam.gz" } else { "theirs.bam" });
        let theirs_args: Vec<&str> =
            args.iter().map(|&a| if a == out.to_str().unwrap() { elsewhere.to_str().unwrap() } else { a }).collect();
        let theirs_run = samtools_view(&theirs_args);
        assert!(theirs_run.status.success(), "{theirs_args:?}: {}", text(&theirs_run.stderr));
        assert!(read(&data) == read(&elsewhere), "{name}: records differ from samtools'");
    }
}

#[test]
fn test_bams_match_samtools() {
    if !have_samtools() {
        return;
    }
    let mut compared = 0;
    for file in corpus() {
        let indexed = fasthts::index::locate(&file).is_some();
        for options in [&["-h"][..], &["-c", "-F", "0x904"], &["-b", "-q", "10"]] {
            compare_on(options, &file, &[]);
            compared += 1;
        }
        if indexed {
            let bam = fasthts::bam::BamFile::open(&file).unwrap();
            let refs: Vec<String> = bam.header().references.iter().take(3).map(|r| r.name.clone()).collect();
            let mut regions: Vec<String> = refs.iter().map(|r| format!("{r}:1-100000")).collect();
            regions.extend(refs.first().cloned());
            regions.push("*".into());
            let regions: Vec<&str> = regions.iter().map(String::as_str).collect();
            compare_on(&[], &file, &regions);
            // (Without "*": samtools' multi-region iterator reads the
            // unplaced records of a file cut short after them without error.)
            compare_on(&["-M", "-c"], &file, &regions[..regions.len() - 1]);
        }
    }
    assert!(compared >= 20, "corpus too small");
}

#[test]
fn bad_input_is_one_line_naming_the_file() {
    let dir = TempDir::new("view-bad");
    let bare = dir.path("bare.bam");
    std::fs::copy(data("small.bam"), &bare).unwrap();
    let missing = dir.path("missing.bam");
    let out = dir.path("out.sam");
    let text_file = dir.path("notes.txt");
    std::fs::write(&text_file, "hello\n").unwrap();
    let s = |p: &Path| p.display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec![s(&missing)], s(&missing)),
        (vec![s(&text_file)], s(&text_file)),
        (vec![s(&bare), "chr1:1-100".into()], s(&bare)),
        (vec!["-N".into(), s(&dir.path("names.txt")), s(&bare)], "names.txt".into()),
        (vec!["-L".into(), s(&dir.path("missing.bed")), s(&bare)], "missing.bed".into()),
        (vec!["-X".into(), s(&bare), s(&dir.path("no.bai")), "chr1".into()], "no.bai".into()),
        (vec!["--subsample".into(), "2".into(), s(&bare)], "sampling".into()),
        (vec!["-x".into(), "NMX".into(), s(&bare)], "NMX".into()),
        (vec!["-d".into(), "N".into(), s(&bare)], "N".into()),
        (vec!["-M".into(), s(&data("small.bam"))], "regions".into()),
        (vec!["-p".into(), "-U".into(), s(&dir.path("un.sam")), s(&bare)], "--unmap".into()),
        (vec!["-R".into(), s(&dir.path("groups.txt")), s(&bare)], "groups.txt".into()),
    ];
    for (args, named) in cases {
        fails_in_one_line_leaving_no_output("view", &out, &args, &named);
    }
}

/// `-B` on records with backward operations samtools can and cannot
/// collapse (first, too long, last, around deletions and insertions).
#[test]
fn backward_cigar_operations_collapse_as_samtools() {
    let Some(dir) = with_samtools("view-remove-b") else { return };
    let sam = dir.path("b.sam");
    std::fs::write(
        &sam,
        "@SQ\tSN:c1\tLN:1000\n\
         r1\t0\tc1\t10\t60\t4M2B3M\t*\t0\t0\tACGTGTC\tIIIIIII\n\
         r2\t0\tc1\t10\t60\t4M2B3M\t*\t0\t0\tACGTTAC\tI5I5I5I\n\
         r3\t0\tc1\t10\t60\t2B5M\t*\t0\t0\tACGTA\tIIIII\n\
         r4\t0\tc1\t10\t60\t3M5B4M\t*\t0\t0\tACGTAAC\tIIIIIII\n\
         r5\t0\tc1\t11\t60\t5M2D3M3B2I4M1B\t*\t0\t0\tACGTACGTACGATT\t*\tXX:i:5\n\
         r6\t16\tc1\t12\t60\t1S4M2I2B3M2H\t*\t0\t0\tAACGTAGGTA\tABCDEFGHIJ\n\
         r7\t0\tc1\t12\t60\t3M3B3M\t*\t0\t0\tACGTTT\tABCDEF\n\
         r8\t4\tc1\t12\t60\t3M3B3M\t*\t0\t0\tACGTTT\tABCDEF\n\
         r9\t0\tc1\t14\t60\t5M4B1M2B3M\t*\t0\t0\tACGTACGTA\tABCDEFGHI\n",
    )
    .unwrap();
    let bed = dir.path("b.bed");
    std::fs::write(&bed, "c1\t14\t15\n").unwrap();
    let bed = bed.to_str().unwrap();
    for options in
        [&["-B"][..], &["-B", "-b"], &["--remove-B", "-F", "4"], &["-B", "-m", "7"], &["-B", "-L", bed], &["-B", "-p", "-m", "6"]]
    {
        compare_on(options, &sam, &[]);
    }
    // -e sees the record before -B; -U gets the collapsed record.
    let out = |tool: &str| dir.path(&format!("{tool}-un.sam"));
    for tool in ["samtools", "fasthts"] {
        let mut c = if tool == "samtools" { Command::new("samtools") } else { fasthts() };
        c.args(["view", "--no-PG", "-B", "-e", "ncigar > 3", "-U"]).arg(out(tool)).arg(&sam);
        assert!(run(c).status.success());
    }
    assert_eq!(std::fs::read(out("fasthts")).unwrap(), std::fs::read(out("samtools")).unwrap());
}

/// `-t`: a SAM input without `@SQ` lines gets them from a `.fai`-like list
/// (a line without a tab skipped, its reads then unplaced, as samtools);
/// a BAM input, or a SAM with `@SQ` lines, ignores it.
#[test]
fn reference_list_for_sam_without_sq_lines() {
    let Some(g) = generate("view-fai") else { return };
    let sam = std::fs::read_to_string(&g.sam).unwrap();
    let bare = g.dir.path("nosq.sam");
    std::fs::write(&bare, sam.lines().filter(|l| !l.starts_with("@SQ")).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let fai = g.dir.path("ref.fai");
    std::fs::write(
        &fai,
        "chr1\t81000\t6\t60\t61\nchr2\t72000\nchr3\t63600\nchr4 47250\nchrM\t16569\r\nchrUn_gen1\t3000\nchrUn_gen2\t4000\n",
    )
    .unwrap();
    let fai = fai.to_str().unwrap();
    for options in [&["-h", "-t", fai][..], &["-b", "--fai-reference", fai], &["-c", "-q", "30", "-t", fai], &["-h", "-F", "4", "-t", fai]]
    {
        compare_on(options, &bare, &[]);
        compare_on(options, &g.sam, &[]);
        compare_on(options, &g.bam, &[]);
    }
    // From a pipe.
    let expected = samtools_view(&["--no-PG", "-h", "-t", fai, bare.to_str().unwrap()]);
    let mut c = fasthts();
    c.args(["view", "--no-PG", "-h", "-t", fai, "-"]);
    let got = run_with_stdin(c, std::fs::read(&bare).unwrap());
    assert!(got.status.success() && got.stdout == expected.stdout, "{}", text(&got.stderr));
}

/// samtools' test.pl, view section (cases 403-412): `-T REF` alone lists
/// a SAM's missing `@SQ` lines from `REF.fai`, and `-t REF.fai` alone
/// names the FASTA `REF` that CRAM is written against (htslib's reading of
/// a `.fai` name): SAM, BAM and CRAM output of SAM without `@SQ` lines and
/// of BAM, as samtools writes them (CRAM compared decoded).
#[test]
fn fasta_and_its_index_stand_for_each_other_as_in_samtools() {
    let Some(dir) = with_samtools("view-fai-fasta") else { return };
    let fasta = dir.path("ref.fa");
    let fasta_arg = fasta.to_str().unwrap().to_string();
    let args = ["-q", "--seed", "7", "--reads", "800", "--refs", "2", "--ref-len", "20000", "--reference-fasta", &fasta_arg];
    let sam = dir.path("with_sq.sam");
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let mut faidx = Command::new("samtools");
    faidx.arg("faidx").arg(&fasta);
    assert!(run(faidx).status.success());
    let bare = dir.path("nosq.sam");
    let with_sq = std::fs::read_to_string(&sam).unwrap();
    std::fs::write(&bare, with_sq.lines().filter(|l| !l.starts_with("@SQ")).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let bam = dir.path("in.bam");
    assert!(samtools_view(&["--no-PG", "-b", "-o", bam.to_str().unwrap(), sam.to_str().unwrap()]).status.success());
    let fai = format!("{fasta_arg}.fai");
    // Decoded as SAM text by samtools (CRAM against the FASTA).
    let decoded = |out: &[u8], what: &str| {
        let mut c = Command::new("samtools");
        c.args(["view", "-h", "--no-PG", "-T", &fasta_arg, "-"]);
        let o = run_with_stdin(c, out.to_vec());
        assert!(o.status.success(), "{what}: {}", text(&o.stderr));
        o.stdout
    };
    for input in [&bare, &bam] {
        for reference in [["-t", fai.as_str()], ["-T", fasta_arg.as_str()]] {
            for format in ["-h", "-b", "-C"] {
                let options = [format, reference[0], reference[1], "--no-PG", input.to_str().unwrap()];
                let what = format!("{options:?}");
                let want = samtools_view(&options);
                let got = fasthts_view(&options, &[]);
                assert!(want.status.success(), "samtools {what}: {}", text(&want.stderr));
                assert!(got.status.success(), "{what}: {}", text(&got.stderr));
                assert!(decoded(&got.stdout, &what) == decoded(&want.stdout, &what), "{what}: differs from samtools'");
            }
        }
    }
}

/// `-c` of a whole indexed BAM reads it in byte ranges cut by the index
/// (as flagstat does); with an index beside it that describes another
/// file, or none, it reads sequentially. Either way samtools' count, and
/// nothing on stderr (samtools does not look at the index here).
#[test]
fn whole_file_count_through_the_index_or_without_it() {
    let Some(g) = generate("view-count-index") else { return };
    let other = g.dir.path("other.bam");
    let mut filtered = Command::new("samtools");
    filtered.args(["view", "--no-PG", "-b", "-q", "30", "-o"]).arg(&other).arg(&g.bam);
    assert!(run(filtered).status.success());
    std::fs::copy(format!("{}.bai", g.bam.display()), format!("{}.bai", other.display())).unwrap();
    let bare = g.dir.path("bare.bam");
    std::fs::copy(&g.bam, &bare).unwrap();
    for input in [&g.bam, &g.csi_bam, &other, &bare] {
        for options in [&["-c"][..], &["-c", "-q", "10", "-F", "0x900"], &["-c", "--subsample", "0.3", "--subsample-seed", "5"]] {
            let mut args = options.to_vec();
            args.push(input.to_str().unwrap());
            let expected = samtools_view(&args);
            for threads in ["1", "2"] {
                let got = fasthts_view(&args, &["-@", threads]);
                assert!(
                    got.status.success() && got.stdout == expected.stdout,
                    "{args:?} -@{threads}: {} / {}",
                    text(&got.stdout),
                    text(&expected.stdout)
                );
                assert!(got.stderr.is_empty(), "{args:?}: stderr {}", text(&got.stderr));
            }
        }
    }
}
