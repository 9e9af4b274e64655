//! Remote inputs (`http://` URLs): the same bytes as the local file and
//! as samtools on the same URL, from nginx on loopback started here; and
//! what a network does wrong, from a small server of this file's own (a
//! 404, 5xx then success, always 5xx, a body cut short, an object changed
//! while read). No network beyond the machine. S3 (moto's server) is
//! tested in s3.rs.

use crate::common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// nginx, or `None` through [`require`] (CI=true fails without it).
fn nginx_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().map(PathBuf::from).find(|p| p.is_file());
    require(found.is_some(), "nginx (Debian package nginx-light)").then(|| found.unwrap())
}

/// nginx serving a directory on a free loopback port, stopped on drop;
/// it logs each request's line, status, body bytes sent and user agent. One process
/// (`master_process off`): killing a master would leave its workers.
struct Nginx {
    child: Child,
    port: u16,
    dir: TempDir,
}

impl Nginx {
    fn start() -> Option<Nginx> {
        let binary = nginx_binary()?;
        let dir = TempDir::new("nginx");
        std::fs::create_dir_all(dir.path("www")).unwrap();
        for _attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let root = dir.0.display().to_string();
            let conf = format!(
                "master_process off;\nerror_log {root}/error.log;\npid {root}/nginx.pid;\nevents {{ worker_connections 64; }}\n\
                 http {{\n  log_format bytes '$request $status $body_bytes_sent $http_user_agent';\n  access_log {root}/access.log bytes;\n\
                 client_body_temp_path {root}/tmp;\n  proxy_temp_path {root}/tmp;\n  fastcgi_temp_path {root}/tmp;\n\
                 uwsgi_temp_path {root}/tmp;\n  scgi_temp_path {root}/tmp;\n\
                 server {{ listen 127.0.0.1:{port}; root {root}/www; }}\n}}\n"
            );
            std::fs::write(dir.path("nginx.conf"), conf).unwrap();
            let mut child = Command::new(&binary)
                .arg("-p")
                .arg(&dir.0)
                .arg("-c")
                .arg(dir.path("nginx.conf"))
                .args(["-g", "daemon off;"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start nginx");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) && child.try_wait().unwrap().is_none() {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(Nginx { child, port, dir });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // The port was taken meanwhile, or nginx did not start: again.
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nginx did not start: {}", std::fs::read_to_string(dir.path("error.log")).unwrap_or_default());
    }

    /// Puts `file` into the served directory as `name`.
    fn serve(&self, file: &Path, name: &str) {
        std::fs::copy(file, self.dir.path("www").join(name)).unwrap();
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{name}", self.port)
    }

    /// Body bytes sent for the requests of `name` logged so far, and their
    /// number, to a client whose user agent starts with `agent` (fasthts'
    /// `ureq/`, samtools' `htslib/`): samtools drops a
    /// connection before its body is sent, which nginx logs when it
    /// closes, maybe after the log was cleared for the next command.
    fn bytes_sent_to(&self, name: &str, agent: &str) -> (u64, usize) {
        let log = std::fs::read_to_string(self.dir.path("access.log")).unwrap_or_default();
        let path = format!(" /{name} ");
        let mut sent = (0, 0);
        for line in log.lines().filter(|l| l.contains(&path)) {
            // `GET /NAME HTTP/1.1 STATUS BYTES AGENT...`
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            if fields.get(5).copied().unwrap_or("").starts_with(agent) {
                sent.0 += fields[4].parse::<u64>().unwrap();
                sent.1 += 1;
            }
        }
        sent
    }

    /// Forgets the requests logged so far.
    fn clear_log(&self) {
        let _ = std::fs::write(self.dir.path("access.log"), "");
        // nginx appends with O_APPEND: the next line lands at the new end.
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fasthts_output<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    let mut c = fasthts();
    c.args(args);
    run(c)
}

/// samtools on a URL, run in `dir` (htslib saves a remote index beside
/// where it runs).
fn samtools_in<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Output {
    let mut c = Command::new("samtools");
    c.args(args).current_dir(dir);
    run(c)
}

fn ok(out: Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
    out.stdout
}

/// Every whole-file command gives on the URL the bytes it gives on the
/// local file, and samtools gives on the URL.
#[test]
fn whole_file_commands_match_local_and_samtools() {
    let Some(server) = Nginx::start() else { return };
    let samtools = have_samtools();
    let scratch = TempDir::new("remote-whole");
    for (name, index) in [("small.bam", Some("small.bam.bai")), ("long_ref.bam", Some("long_ref.bam.csi")), ("unsorted.bam", None)] {
        server.serve(&data(name), name);
        if let Some(index) = index {
            server.serve(&data(index), index);
        }
        let url = server.url(name);
        let local = data(name).display().to_string();
        let commands: &[&[&str]] =
            &[&["flagstat"], &["idxstats"], &["view"], &["view", "-c"], &["view", "--no-PG", "-h", "-q", "10"], &["depth"]];
        for command in commands {
            if matches!(command[0], "depth" | "idxstats") && index.is_none() {
                continue;
            }
            let remote = ok(fasthts_output(&[command, &[url.as_str()][..]].concat()), &format!("{command:?} {url}"));
            let here = ok(fasthts_output(&[command, &[local.as_str()][..]].concat()), &format!("{command:?} {local}"));
            assert!(remote == here, "{command:?} {name}: URL and local file differ");
            if samtools {
                let theirs = ok(samtools_in(&scratch.0, &[command, &[url.as_str()][..]].concat()), &format!("samtools {command:?} {url}"));
                assert!(remote == theirs, "{command:?} {name}: fasthts and samtools differ on the URL");
            }
        }
        let quick = fasthts_output(&["quickcheck", &url]);
        assert!(quick.status.success(), "quickcheck {url}: {}", text(&quick.stdout));
    }
    // A BAM without its EOF marker fails quickcheck on the URL as locally.
    let bytes = std::fs::read(data("small.bam")).unwrap();
    std::fs::write(scratch.path("cut.bam"), &bytes[..bytes.len() - 28]).unwrap();
    server.serve(&scratch.path("cut.bam"), "cut.bam");
    let quick = fasthts_output(&["quickcheck", "-v", &server.url("cut.bam")]);
    assert_eq!(quick.status.code(), Some(16), "{}", text(&quick.stdout));
}

/// Regions of a URL: the index beside it (BAI, CSI), named with
/// `##idx##` or `-X` (a URL or a local file); the same records as the
/// local file and as samtools.
#[test]
fn regions_match_local_and_samtools() {
    let Some(server) = Nginx::start() else { return };
    let samtools = have_samtools();
    let scratch = TempDir::new("remote-regions");
    for name in ["small.bam", "small.bam.bai", "long_ref.bam", "long_ref.bam.csi"] {
        server.serve(&data(name), name);
    }
    server.serve(&data("small.bam"), "other.bam");
    let small = server.url("small.bam");
    let bai = server.url("small.bam.bai");
    let local_bai = data("small.bam.bai").display().to_string();
    let regions: &[&[&str]] = &[&["chr1:1000-5000"], &["chr1", "chr2:100-20000"], &["chr2:1-1", "chr1:300000-309000", "chr3"], &["*"]];
    for region in regions {
        for count in [false, true] {
            let flag: &[&str] = if count { &["-c"] } else { &[] };
            let args =
                |input: &[&str]| -> Vec<String> { [&["view"][..], flag, input, region].concat().into_iter().map(String::from).collect() };
            let local = ok(fasthts_output(&args(&[&data("small.bam").display().to_string()])), "local");
            // Beside it; named with ##idx##; a local one named with -X for
            // a URL that has none beside it.
            let forms =
                [vec![small.clone()], vec![format!("{small}##idx##{bai}")], vec!["-X".into(), server.url("other.bam"), local_bai.clone()]];
            for input in &forms {
                let input: Vec<&str> = input.iter().map(String::as_str).collect();
                let remote = ok(fasthts_output(&args(&input)), &format!("{input:?} {region:?}"));
                assert!(remote == local, "view {flag:?} {input:?} {region:?}: URL and local file differ");
            }
            if samtools {
                let theirs = ok(samtools_in(&scratch.0, &args(&[&small])), "samtools view");
                assert!(theirs == local, "view {flag:?} {region:?}: fasthts and samtools differ on the URL");
            }
        }
    }
    // depth -r, and a command that does not fetch its regions yet.
    for region in ["chr1:1000-50000", "chr2", "chr3"] {
        let local = ok(fasthts_output(&["depth", "-r", region, &data("small.bam").display().to_string()]), "local depth -r");
        let remote = ok(fasthts_output(&["depth", "-r", region, &small]), "remote depth -r");
        assert!(remote == local, "depth -r {region}: URL and local file differ");
        if samtools {
            let theirs = ok(samtools_in(&scratch.0, &["depth", "-r", region, &small]), "samtools depth -r");
            assert!(theirs == local, "depth -r {region}: fasthts and samtools differ on the URL");
        }
    }
    // coverage and stats with a region fetch what their queries read.
    for (command, region) in [("coverage", "chr2:100-20000"), ("coverage", "chr1"), ("stats", "chr1:1000-50000")] {
        let args = |input: &str| -> Vec<String> {
            let args: &[&str] = if command == "coverage" { &[command, "-r", region, input] } else { &[command, input, region] };
            args.iter().map(|a| a.to_string()).collect()
        };
        let local = without_version_line(ok(fasthts_output(&args(&data("small.bam").display().to_string())), "local"), command);
        let remote = without_version_line(ok(fasthts_output(&args(&small)), "remote"), command);
        assert!(remote == local, "{command} {region}: URL and local file differ");
    }
    // A CSI beside the data.
    let url = server.url("long_ref.bam");
    let local = ok(fasthts_output(&["view", &data("long_ref.bam").display().to_string(), "ref1"]), "local");
    let remote = ok(fasthts_output(&["view", &url, "ref1"]), "remote CSI");
    assert!(remote == local, "long_ref.bam ref1 through its CSI: URL and local file differ");
}

/// A region query fetches the header, the index and its records' ranges,
/// not the whole file: for each of 20 random 20 kb regions of a generated
/// BAM of about 8 MB, no more than samtools fetches, give or take 64 kB.
#[test]
fn region_query_fetches_little() {
    let Some(server) = Nginx::start() else { return };
    let scratch = TempDir::new("remote-bytes");
    let sam = scratch.path("big.sam");
    let args = ["-q", "--seed", "38", "--reads", "30000", "--refs", "2", "--ref-len", "2000000"];
    std::fs::write(&sam, fasthts_testgen::cli::sam(&args).unwrap()).unwrap();
    let sorted = scratch.path("sorted.bam");
    ok(fasthts_output(&["view", "-b", "-o", &sorted.display().to_string(), &sam.display().to_string()]), "view -b");
    ok(fasthts_output(&["index", &sorted.display().to_string()]), "index");
    std::fs::remove_file(&sam).unwrap();
    server.serve(&sorted, "big.bam");
    server.serve(&scratch.path("sorted.bam.bai"), "big.bam.bai");
    let len = std::fs::metadata(&sorted).unwrap().len();
    let url = server.url("big.bam");
    let samtools = have_samtools();
    let mut rng = fasthts_testgen::rng::Rng::new(38);
    let (mut ours_total, mut theirs_total) = (0, 0);
    for _ in 0..20 {
        // The generator's chr1 and chr2 (3.09 and 2.14 Mb) hold the reads.
        let (name, length) = if rng.below(2) == 0 { ("chr1", 3_090_000) } else { ("chr2", 2_140_000) };
        let start = 1 + rng.below(length - 20_000);
        let region = format!("{name}:{start}-{}", start + 20_000 - 1);
        server.clear_log();
        let ours = ok(fasthts_output(&["view", "-c", &url, &region]), "view -c region");
        let (ours_bytes, ours_requests) = server.bytes_sent_to("big.bam", "ureq/");
        assert!(ours_bytes < len / 10, "{region}: {ours_bytes} bytes of {len} fetched in {ours_requests} requests");
        ours_total += ours_bytes;
        if samtools {
            server.clear_log();
            let theirs = ok(samtools_in(&scratch.0, &["view", "-c", &url, &region]), "samtools view -c");
            assert_eq!(ours, theirs, "{region}");
            let (theirs_bytes, _) = server.bytes_sent_to("big.bam", "htslib/");
            theirs_total += theirs_bytes;
            assert!(ours_bytes <= theirs_bytes + 64_000, "{region}: fasthts fetched {ours_bytes} bytes, samtools {theirs_bytes}");
        }
    }
    eprintln!("20 regions of 20 kb of a {len}-byte BAM: fasthts fetched {ours_total} bytes, samtools {theirs_total}");
    // Regions at the ends of references, and whole ones: the same records
    // as the local file.
    let regions = ["chr1:2000-9000", "chr1:3000000-3090000", "chr2:1-20000", "chr2:100000-100001", "chrM", "chr2", "*"];
    let local =
        ok(fasthts_output(&[&["view".to_string(), sorted.display().to_string()][..], &regions.map(String::from)].concat()), "local");
    let remote = ok(fasthts_output(&[&["view", url.as_str()][..], &regions].concat()), "remote");
    assert!(remote == local, "regions: URL and local file differ");
    // Dense regions (20 times small.bam's depth): each read to the first
    // record past it, whose block lies past what follows the region by
    // the linear index (a bug once: that block was not fetched).
    let dense = scratch.path("dense.bam");
    write_small_bam_20_times(&scratch.path("twenty.bam"));
    ok(
        fasthts_output(&["sort", "-o", &dense.display().to_string(), "--write-index", &scratch.path("twenty.bam").display().to_string()]),
        "sort",
    );
    server.serve(&dense, "dense.bam");
    server.serve(&scratch.path("dense.bam.csi"), "dense.bam.csi");
    let regions = ["chr1:2000-9000", "chr1:150000-170000", "chr2:1-20000", "chr2:100000-100001", "chr1:300000-309000", "chr3", "*"];
    let local = ok(fasthts_output(&[&["view".to_string(), dense.display().to_string()][..], &regions.map(String::from)].concat()), "local");
    let remote = ok(fasthts_output(&[&["view", server.url("dense.bam").as_str()][..], &regions].concat()), "remote");
    assert!(remote == local, "dense regions: URL and local file differ");
    // The whole file is fetched once.
    server.clear_log();
    ok(fasthts_output(&["flagstat", &url]), "flagstat");
    let (whole, _) = server.bytes_sent_to("big.bam", "ureq/");
    assert!(whole >= len && whole <= len + len / 20, "flagstat fetched {whole} bytes of {len}");
}

/// `(command, region)` of a region command as fasthts and samtools take
/// it, on `input`, a CRAM decoded with `fasta`.
fn region_command(command: &str, region: &str, input: &str, fasta: &Path) -> Vec<String> {
    let fasta = fasta.display().to_string();
    let args: Vec<&str> = match command {
        "view" => vec!["view", "--no-PG", "-T", &fasta, input, region],
        "view -c" => vec!["view", "-c", "-T", &fasta, input, region],
        "depth" => vec!["depth", "--reference", &fasta, "-r", region, input],
        "coverage" => vec!["coverage", "--reference", &fasta, "-r", region, input],
        "stats" => vec!["stats", "--reference", &fasta, input, region],
        "idxstats" => vec!["idxstats", input],
        "flagstat" => vec!["flagstat", input],
        other => unreachable!("{other}"),
    };
    args.into_iter().map(String::from).collect()
}

/// `samtools stats` names its version and its command line (the input's
/// path) in its first lines: left out.
fn without_version_line(bytes: Vec<u8>, command: &str) -> Vec<u8> {
    if command != "stats" {
        return bytes;
    }
    let text = String::from_utf8(bytes).unwrap();
    let kept =
        text.lines().filter(|l| !l.starts_with("# This file was produced by samtools stats") && !l.starts_with("# The command line was:"));
    kept.map(|l| format!("{l}\n")).collect::<String>().into_bytes()
}

/// Regions of a remote bgzipped SAM (its CSI beside it) and CRAM (its
/// `.crai` beside it, or named; decoded with `--reference`): every region
/// command gives on the URL what it gives on the local file and what
/// samtools gives on the URL; whole-file reads of them too.
#[test]
fn sam_gz_and_cram_regions_match_local_and_samtools() {
    let Some(server) = Nginx::start() else { return };
    if !have_samtools() {
        return;
    }
    let scratch = TempDir::new("remote-formats");
    let fasta = scratch.path("ref.fa");
    let args = ["-q", "--seed", "38", "--reads", "3000", "--refs", "3", "--ref-len", "60000", "--reference-fasta", fasta.to_str().unwrap()];
    let sam = scratch.path("reads.sam");
    let text_bytes = fasthts_testgen::cli::sam(&args).unwrap();
    std::fs::write(&sam, &text_bytes).unwrap();
    ok(samtools_in(&scratch.0, &["faidx", fasta.to_str().unwrap()]), "samtools faidx");
    let cram = scratch.path("x.cram");
    samtools_cram(&sam, &fasta, &cram, &["seqs_per_slice=100", "slices_per_container=1"]);
    // The SAM in small BGZF blocks (regions start inside the file), as
    // samtools indexes it.
    let sam_gz = scratch.path("x.sam.gz");
    let mut bgzf = Vec::new();
    for chunk in text_bytes.chunks(20_000) {
        let mut block = fasthts::bgzf::compress_all(chunk, 1);
        block.truncate(block.len() - fasthts::bgzf::EOF_MARKER.len());
        bgzf.extend_from_slice(&block);
    }
    bgzf.extend_from_slice(&fasthts::bgzf::EOF_MARKER);
    std::fs::write(&sam_gz, &bgzf).unwrap();
    ok(samtools_in(&scratch.0, &["index", "-c", sam_gz.to_str().unwrap()]), "samtools index");
    for name in ["x.cram", "x.cram.crai", "x.sam.gz", "x.sam.gz.csi"] {
        server.serve(&scratch.path(name), name);
    }
    server.serve(&cram, "other.cram");
    let names: Vec<String> = String::from_utf8_lossy(&text_bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("@SQ\tSN:").map(|rest| rest.split('\t').next().unwrap().to_string()))
        .collect();
    let (first, second) = (&names[0], &names[1]);
    let regions = [format!("{first}:1000-5000"), format!("{second}:20000-45000"), first.clone(), "*".to_string()];
    let offline = |mut c: Command| {
        c.env("REF_PATH", "/nonexistent/%s").env("REF_CACHE", "/nonexistent/%s");
        run(c)
    };
    for name in ["x.sam.gz", "x.cram"] {
        let url = server.url(name);
        let local = scratch.path(name).display().to_string();
        for command in ["view", "view -c", "depth", "coverage", "stats", "idxstats", "flagstat"] {
            for region in &regions {
                if (command == "depth" || command == "stats") && region == "*" {
                    continue;
                }
                let what = format!("{command} {name} {region}");
                let mut c = fasthts();
                c.args(region_command(command, region, &url, &fasta));
                let remote = without_version_line(ok(offline(c), &what), command);
                let mut c = fasthts();
                c.args(region_command(command, region, &local, &fasta));
                let here = without_version_line(ok(offline(c), &what), command);
                assert!(remote == here, "{what}: URL and local file differ");
                let mut c = Command::new("samtools");
                c.args(region_command(command, region, &url, &fasta)).current_dir(&scratch.0);
                let theirs = without_version_line(ok(offline(c), &format!("samtools {what}")), command);
                assert!(remote == theirs, "{what}: fasthts and samtools differ on the URL");
                if matches!(command, "idxstats" | "flagstat") {
                    break;
                }
            }
        }
    }
    // The index named: a URL with -X, or ##idx##, for a file without one beside it.
    let want = ok(fasthts_output(&["view", "-c", cram.to_str().unwrap(), first]), "local");
    let other = server.url("other.cram");
    let crai = server.url("x.cram.crai");
    for input in [vec!["-X".to_string(), other.clone(), crai.clone()], vec![format!("{other}##idx##{crai}")]] {
        let args: Vec<&str> = [&["view", "-c"][..], &input.iter().map(String::as_str).collect::<Vec<_>>(), &[first.as_str()]].concat();
        assert_eq!(ok(fasthts_output(&args), &format!("{input:?}")), want, "{input:?}");
    }
    // Without an index beside it, a region query is refused as samtools refuses it.
    fails_saying(&["view", "-c", &other, first], &other, "cannot load index");
    // htslib reads the remote CRAM through fasthts' own file handler
    // (crates/fasthts/src/cram/remote.rs, FFI): under memcheck, with two
    // threads, the same rows.
    if require(runs("valgrind", &["--version"]), "valgrind (Debian package valgrind)") {
        let url = server.url("x.cram");
        for command in ["view", "depth"] {
            let mut args = region_command(command, &regions[1], &url, &fasta);
            args.insert(1, "-@2".into());
            let mut c = Command::new("valgrind");
            c.args(["-q", "--error-exitcode=99", "--fair-sched=yes", "--leak-check=no"]).arg(env!("CARGO_BIN_EXE_fasthts")).args(&args);
            let checked = offline(c);
            assert_ne!(checked.status.code(), Some(99), "{command} of a CRAM URL: valgrind reports errors:\n{}", text(&checked.stderr));
            let mut c = fasthts();
            c.args(&args);
            assert_eq!(ok(checked, &format!("{command} under valgrind")), ok(offline(c), command), "{command} of a CRAM URL under valgrind");
        }
    }
}

// ---- What a network does wrong: a server of this file's own. ----

/// What the fault server answers a request for `range` (first, last)
/// of an object of `len` bytes, the `n`th request (from 0).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// 206 with the bytes and ETag "v1".
    Range,
    /// 206 with the bytes and another ETag.
    OtherVersion,
    /// A status without a body.
    Status(u16),
    /// 206 whose body stops halfway (the connection closed).
    Cut,
}

/// A one-thread HTTP/1.1 server on loopback serving `bam` as `/x.bam`
/// and `bai` as `/x.bam.bai` by ranges (anything else: 404), the `n`th
/// request of `/x.bam` answered as `answer(n)` says, the index's always
/// served; it runs until the test ends. The URL of `/x.bam` and the
/// count of its requests.
fn fault_server(answer: impl Fn(usize) -> Answer + Send + 'static) -> (String, Arc<AtomicUsize>) {
    let bam = std::fs::read(data("small.bam")).unwrap();
    let bai = std::fs::read(data("small.bam.bai")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let _ = respond(stream, |path| match path {
                "/x.bam" => Some((&bam[..], answer(counted.fetch_add(1, Ordering::SeqCst)))),
                "/x.bam.bai" => Some((&bai[..], Answer::Range)),
                _ => None,
            });
        }
    });
    (format!("http://127.0.0.1:{port}/x.bam"), count)
}

fn respond<'a>(stream: TcpStream, route: impl FnOnce(&str) -> Option<(&'a [u8], Answer)>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let path = request.split(' ').nth(1).unwrap_or("").to_string();
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some(spec) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
            let (a, b) = spec.trim().split_once('-').unwrap();
            range = Some((a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap()));
        }
    }
    let mut out = stream;
    let (body, answer) = route(&path).unwrap_or((&[], Answer::Status(404)));
    let range = range.map_or((0, body.len() as u64 - 1), |(a, b)| (a, b.min(body.len() as u64 - 1)));
    let head = |etag: &str, len: usize| {
        format!(
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {}-{}/{}\r\nContent-Length: {len}\r\nETag: \"{etag}\"\r\nConnection: close\r\n\r\n",
            range.0,
            range.1,
            body.len()
        )
    };
    match answer {
        Answer::Status(code) => {
            let reason = match code {
                404 => "Not Found",
                403 => "Forbidden",
                _ => "Internal Server Error",
            };
            out.write_all(format!("HTTP/1.1 {code} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes())?;
        }
        answer => {
            let bytes = &body[range.0 as usize..=range.1 as usize];
            let etag = if answer == Answer::OtherVersion { "v2" } else { "v1" };
            out.write_all(head(etag, bytes.len()).as_bytes())?;
            let sent = if answer == Answer::Cut { &bytes[..bytes.len() / 2] } else { bytes };
            out.write_all(sent)?;
        }
    }
    out.flush()?;
    let _ = out.shutdown(std::net::Shutdown::Both);
    let mut sink = [0u8; 256];
    let _ = reader.read(&mut sink);
    Ok(())
}

/// `fasthts COMMAND URL ...` failed with exit status 1 and one line
/// `fasthts COMMAND: URL: ...` containing `says`, printing nothing else.
fn fails_saying(args: &[&str], url: &str, says: &str) {
    let out = fasthts_output(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed {}", text(&out.stdout));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].starts_with(&format!("fasthts {}: {url}: ", args[0])) && lines[0].contains(says), "{args:?}: {err}");
}

#[test]
fn not_found_is_said_at_once() {
    let (url, count) = fault_server(|_| Answer::Status(404));
    fails_saying(&["flagstat", &url], &url, "not found (HTTP 404)");
    fails_saying(&["view", "-c", &url, "chr1"], &url, "not found (HTTP 404)");
    assert_eq!(count.load(Ordering::SeqCst), 2, "a 404 is not retried");
    let q = fasthts_output(&["quickcheck", &url]);
    assert_eq!(q.status.code(), Some(2));
}

#[test]
fn refused_connection_is_one_line() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/x.bam");
    fails_saying(&["flagstat", &url], &url, "cannot connect");
}

#[test]
fn server_errors_are_retried() {
    let expected = ok(fasthts_output(&["flagstat", &data("small.bam").display().to_string()]), "local");
    // Two failures, then every request served.
    let (url, _) = fault_server(|n| if n < 2 { Answer::Status(500) } else { Answer::Range });
    assert_eq!(ok(fasthts_output(&["flagstat", &url]), "after 500s"), expected);
    // A body cut short, then served.
    let (url, _) = fault_server(|n| if n == 1 { Answer::Cut } else { Answer::Range });
    assert_eq!(ok(fasthts_output(&["flagstat", &url]), "after a cut body"), expected);
    let (url, _) = fault_server(|n| if n == 1 { Answer::Cut } else { Answer::Range });
    let local = ok(fasthts_output(&["view", "-c", &data("small.bam").display().to_string(), "chr1", "chr2"]), "local");
    assert_eq!(ok(fasthts_output(&["view", "-c", &url, "chr1", "chr2"]), "view after a cut body"), local);
}

#[test]
fn lasting_server_errors_fail_after_retries() {
    let (url, count) = fault_server(|_| Answer::Status(500));
    let started = Instant::now();
    fails_saying(&["flagstat", &url], &url, "HTTP 500 Internal Server Error (tried 5 times)");
    assert_eq!(count.load(Ordering::SeqCst), 5);
    assert!(started.elapsed() < Duration::from_secs(30));
    // Always cut: the range is given up too.
    let (url, _) = fault_server(|n| if n == 0 { Answer::Range } else { Answer::Cut });
    fails_saying(&["flagstat", &url], &url, "tried 5 times");
}

#[test]
fn an_object_changed_while_read_is_an_error() {
    // Its first request is answered by one version, the next by another.
    let (url, _) = fault_server(|n| if n == 0 { Answer::Range } else { Answer::OtherVersion });
    fails_saying(&["flagstat", &url], &url, "the object changed while it was read (ETag differs)");
    let (url, _) = fault_server(|n| if n < 3 { Answer::Range } else { Answer::OtherVersion });
    fails_saying(&["view", "-c", &url, "chr1"], &url, "changed while it was read");
}

/// A whole-file flagstat of an indexed URL reads it by parts of the file
/// (fetched by the threads that count them): the local file's output on
/// one thread and two, the file fetched once (5 % over at most); and an
/// object changed after its header and index were read (while the parts
/// are fetched) is an error, not a stream read of the new version.
#[test]
fn indexed_url_read_whole_by_parts() {
    let Some(server) = Nginx::start() else { return };
    for (name, index) in [("small.bam", "small.bam.bai"), ("long_ref.bam", "long_ref.bam.csi")] {
        server.serve(&data(name), name);
        server.serve(&data(index), index);
        let len = std::fs::metadata(data(name)).unwrap().len();
        let local = ok(fasthts_output(&["flagstat", &data(name).display().to_string()]), "local flagstat");
        for threads in ["1", "2"] {
            server.clear_log();
            let remote = ok(fasthts_output(&["flagstat", "-@", threads, &server.url(name)]), "flagstat of the URL");
            assert!(remote == local, "{name} -@{threads}: URL and local file differ");
            let (sent, requests) = server.bytes_sent_to(name, "ureq/");
            assert!(sent >= len - 28 && sent <= len + len / 20, "{name} -@{threads}: {sent} bytes of {len} in {requests} requests");
        }
    }
    // Requests 0-2 of /x.bam: its length, its first 64 KiB (the header),
    // its EOF marker; then the part.
    let (url, count) = fault_server(|n| if n < 3 { Answer::Range } else { Answer::OtherVersion });
    fails_saying(&["flagstat", &url], &url, "the object changed while it was read (ETag differs)");
    assert_eq!(count.load(Ordering::SeqCst), 4, "the part was fetched");
}

#[test]
fn no_credentials_in_messages() {
    let (url, _) = fault_server(|_| Answer::Status(404));
    let secret = url.replace("http://", "http://user:s3cret@") + "?X-Amz-Signature=s3cret";
    let out = fasthts_output(&["flagstat", &secret]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(!err.contains("s3cret") && err.contains("not found (HTTP 404)"), "{err}");
}
