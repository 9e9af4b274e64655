//! S3 inputs (`s3://`, `s3+http://`) against moto's S3 server started
//! here on loopback (its Python from `FASTHTS_MOTO_PYTHON`, which
//! scripts/test.sh sets; else `python3` when it has moto): the same bytes
//! as the local file, and as samtools on the same URL and environment;
//! endpoints given by `AWS_ENDPOINT_URL` and by `HTS_S3_HOST`; keys from
//! the environment, a profile of a credentials file, the URL, or none; the
//! requests' signatures checked by an implementation of Signature V4 of
//! this file's own (moto checks none on presigned requests); a missing
//! key, and access denied, in one line that holds no credential.

use crate::common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BUCKET: &str = "fasthts-test";
const KEY_ID: &str = "AKIDFASTHTSTEST";
const SECRET: &str = "fasthtsSecretKey/s3cret+42";

/// A Python that runs moto's server and boto3, through [`require`]
/// (CI=true fails without it).
fn moto_python() -> Option<String> {
    let python = std::env::var("FASTHTS_MOTO_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = runs(&python, &["-c", "import moto.server, boto3, flask"]);
    require(found, "moto's S3 server (pip install 'moto[server]'; FASTHTS_MOTO_PYTHON names its Python)").then_some(python)
}

/// Uploads `KEY=PATH` arguments to a new bucket (readable by anyone for
/// a key that starts with `public`).
const UPLOAD: &str = r#"
import sys, boto3
endpoint, bucket = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id="setup", aws_secret_access_key="setup")
s3.create_bucket(Bucket=bucket)
for pair in sys.argv[3:]:
    key, path = pair.split("=", 1)
    extra = {"ACL": "public-read"} if key.startswith("public") else {}
    s3.upload_file(path, bucket, key, ExtraArgs=extra)
"#;

/// Prints whether a presigned request line's signature is the one
/// `secret` makes for it under Signature V4 (query parameters; the host
/// the only signed header; an unsigned payload), written from AWS's
/// description, apart from the signer under test.
const VERIFY: &str = r#"
import sys, hmac, hashlib, urllib.parse
secret, host, target = sys.argv[1], sys.argv[2], sys.argv[3]
path, query = target.split("?", 1)
params = urllib.parse.parse_qsl(query, keep_blank_values=True)
given = dict(params)
assert given["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256" and given["X-Amz-SignedHeaders"] == "host", given
quote = lambda s: urllib.parse.quote(s, safe="-_.~")
canonical_query = "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(params) if k != "X-Amz-Signature")
canonical = "\n".join(["GET", path, canonical_query, "host:" + host, "", "host", "UNSIGNED-PAYLOAD"])
scope = given["X-Amz-Credential"].split("/", 1)[1]
to_sign = "\n".join(["AWS4-HMAC-SHA256", given["X-Amz-Date"], scope, hashlib.sha256(canonical.encode()).hexdigest()])
key = ("AWS4" + secret).encode()
for part in scope.split("/"):
    key = hmac.new(key, part.encode(), hashlib.sha256).digest()
print("valid" if hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest() == given["X-Amz-Signature"] else "invalid")
"#;

/// moto's S3 server on a free loopback port, stopped on drop; it logs
/// each request's line.
struct Moto {
    child: Child,
    port: u16,
    python: String,
    dir: TempDir,
}

impl Moto {
    fn start() -> Option<Moto> {
        let python = moto_python()?;
        let dir = TempDir::new("moto");
        for _attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let log = std::fs::File::create(dir.path("moto.log")).unwrap();
            let mut child = Command::new(&python)
                .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
                .env_remove("INITIAL_NO_AUTH_ACTION_COUNT")
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start moto");
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(30) && child.try_wait().unwrap().is_none() {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(Moto { child, port, python, dir });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("moto did not start: {}", std::fs::read_to_string(dir.path("moto.log")).unwrap_or_default());
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Uploads each local file as the key beside it.
    fn upload(&self, files: &[(&str, &Path)]) {
        let mut c = Command::new(&self.python);
        c.args(["-c", UPLOAD, &self.endpoint(), BUCKET]);
        for (key, path) in files {
            c.arg(format!("{key}={}", path.display()));
        }
        let out = run(c);
        assert!(out.status.success(), "upload to moto: {}", text(&out.stderr));
    }

    /// The request targets (path and query) of the GETs of `key` logged
    /// so far.
    fn gets(&self, key: &str) -> Vec<String> {
        let log = std::fs::read_to_string(self.dir.path("moto.log")).unwrap_or_default();
        // (werkzeug may colour a line: no quote before GET is looked for.)
        let prefix = format!("GET /{BUCKET}/{key}");
        log.lines()
            .filter_map(|l| l.find(&prefix).map(|at| &l[at + 4..]))
            .filter_map(|rest| rest.split(' ').next())
            .filter(|target| target.split('?').next() == Some(&format!("/{BUCKET}/{key}")))
            .map(String::from)
            .collect()
    }

    fn clear_log(&self) {
        let _ = std::fs::OpenOptions::new().write(true).truncate(true).open(self.dir.path("moto.log"));
    }

    /// Whether `target`, sent to this server, is signed by `secret`.
    fn signed_by(&self, target: &str, secret: &str) -> bool {
        let host = format!("127.0.0.1:{}", self.port);
        let out = run({
            let mut c = Command::new(&self.python);
            c.args(["-c", VERIFY, secret, &host, target]);
            c
        });
        assert!(out.status.success(), "verify {target}: {}", text(&out.stderr));
        text(&out.stdout).trim() == "valid"
    }
}

/// The key id of a presigned request's credential scope (the log may
/// show its `/` escaped or not).
fn key_id_of(target: &str) -> Option<&str> {
    let at = target.find("X-Amz-Credential=")? + "X-Amz-Credential=".len();
    let rest = &target[at..];
    Some(&rest[..rest.find(['/', '%'])?])
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command in an environment of `vars` alone as far as S3 goes: no
/// AWS_*, HTS_S3_* or GCS_* of the caller's, HOME an empty directory
/// unless `vars` sets it.
fn with_env(mut c: Command, home: &Path, vars: &[(&str, &str)]) -> Command {
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") || name.starts_with("HTS_S3_") || name.starts_with("GCS_") {
            c.env_remove(name);
        }
    }
    c.env("HOME", home);
    for (name, value) in vars {
        c.env(name, value);
    }
    c
}

fn fasthts_in(home: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = fasthts();
    c.args(args);
    run(with_env(c, home, vars))
}

fn ok(out: Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(&out.stderr));
    out.stdout
}

fn local(args: &[&str], file: &str) -> Vec<u8> {
    let path = data(file).display().to_string();
    let args: Vec<&str> = args.iter().map(|a| if *a == "{}" { path.as_str() } else { a }).collect();
    let mut c = fasthts();
    c.args(&args);
    ok(run(c), &format!("{args:?}"))
}

/// The commands compared: `{}` stands for the input.
const COMMANDS: &[&[&str]] = &[
    &["flagstat", "{}"],
    &["idxstats", "{}"],
    &["view", "{}"],
    &["view", "-c", "{}"],
    &["view", "--no-PG", "-h", "-q", "10", "{}"],
    &["depth", "{}"],
    &["view", "{}", "chr1:1000-5000"],
    &["view", "-c", "{}", "chr1", "chr2:100-20000"],
    &["view", "{}", "chr2:1-1", "chr1:300000-309000", "chr3"],
    &["depth", "-r", "chr1:1000-50000", "{}"],
];

/// Every command gives on `s3://` the bytes it gives on the local file,
/// with the endpoint given the AWS way (AWS_ENDPOINT_URL) and the htslib
/// way (HTS_S3_HOST, path style, s3+http://), the keys in the environment,
/// the index beside the data; each request signed by the key's secret.
/// Without keys the requests go unsigned, and work on this open server.
#[test]
fn commands_on_s3_match_local_and_are_signed() {
    let Some(moto) = Moto::start() else { return };
    moto.upload(&[
        ("small.bam", &data("small.bam")),
        ("small.bam.bai", &data("small.bam.bai")),
        ("long_ref.bam", &data("long_ref.bam")),
        ("long_ref.bam.csi", &data("long_ref.bam.csi")),
        ("public.bam", &data("small.bam")),
        ("public.bam.bai", &data("small.bam.bai")),
    ]);
    let home = TempDir::new("s3-home");
    let endpoint = moto.endpoint();
    let host = format!("127.0.0.1:{}", moto.port);
    let keys = [("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET)];
    let aws_way: Vec<(&str, &str)> = [&keys[..], &[("AWS_ENDPOINT_URL", endpoint.as_str())]].concat();
    let htslib_way: Vec<(&str, &str)> = [&keys[..], &[("HTS_S3_HOST", host.as_str()), ("HTS_S3_ADDRESS_STYLE", "path")]].concat();
    let s3 = format!("s3://{BUCKET}/small.bam");
    let s3_http = format!("s3+http://{BUCKET}/small.bam");
    for command in COMMANDS {
        let expected = local(command, "small.bam");
        for (vars, url) in [(&aws_way, &s3), (&htslib_way, &s3_http)] {
            let args: Vec<&str> = command.iter().map(|a| if *a == "{}" { url.as_str() } else { a }).collect();
            let got = ok(fasthts_in(&home.0, vars, &args), &format!("{args:?}"));
            assert!(got == expected, "{args:?}: s3 and local file differ");
        }
    }
    let quick = fasthts_in(&home.0, &aws_way, &["quickcheck", &s3]);
    assert!(quick.status.success(), "quickcheck: {}", text(&quick.stderr));
    // A CSI beside the data.
    let long = format!("s3://{BUCKET}/long_ref.bam");
    let expected = local(&["view", "{}", "ref1"], "long_ref.bam");
    assert!(ok(fasthts_in(&home.0, &aws_way, &["view", &long, "ref1"]), "CSI") == expected, "long_ref.bam ref1: s3 and local differ");

    // Every request carried the key id and a valid signature (and one
    // checked against another secret is not: the check can fail).
    let gets = moto.gets("small.bam");
    assert!(gets.len() >= 2 * COMMANDS.len(), "{gets:?}");
    for target in &gets {
        assert_eq!(key_id_of(target), Some(KEY_ID), "{target}");
    }
    for target in [&gets[0], gets.last().unwrap()] {
        assert!(moto.signed_by(target, SECRET), "bad signature: {target}");
        assert!(!moto.signed_by(target, "another secret"));
    }
    let bai = moto.gets("small.bam.bai");
    assert!(!bai.is_empty() && moto.signed_by(&bai[0], SECRET), "the index's requests: {bai:?}");

    // No keys: unsigned requests, which read a public object, and are
    // refused a private one (which signed requests read, above).
    moto.clear_log();
    let unsigned = [("AWS_ENDPOINT_URL", endpoint.as_str())];
    let public = format!("s3://{BUCKET}/public.bam");
    let got = ok(fasthts_in(&home.0, &unsigned, &["view", "-c", &public, "chr1"]), "unsigned");
    assert_eq!(got, local(&["view", "-c", "{}", "chr1"], "small.bam"));
    let gets = moto.gets("public.bam");
    assert!(!gets.is_empty() && gets.iter().all(|t| !t.contains('?')), "{gets:?}");
    let refused = fasthts_in(&home.0, &unsigned, &["view", "-c", &s3, "chr1"]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(text(&refused.stderr).trim_end(), format!("fasthts view: {s3}: access denied (HTTP 403 FORBIDDEN)"));

    // samtools on the same URL and environment (htslib's own S3 code).
    if have_samtools() {
        for command in [&["view", "-c", "{}"][..], &["view", "-c", "{}", "chr1", "chr2:100-20000"], &["flagstat", "{}"]] {
            let args: Vec<&str> = command.iter().map(|a| if *a == "{}" { s3_http.as_str() } else { a }).collect();
            let mut c = Command::new("samtools");
            c.args(&args).current_dir(&home.0);
            let theirs = ok(run(with_env(c, &home.0, &htslib_way)), &format!("samtools {args:?}"));
            let ours = ok(fasthts_in(&home.0, &htslib_way, &args), &format!("{args:?}"));
            assert!(ours == theirs, "{args:?}: fasthts and samtools differ on the URL");
        }
    }
}

/// Keys from a profile of a credentials file in HOME: the default one,
/// AWS_PROFILE's, `s3://PROFILE@bucket/key`'s; AWS_SHARED_CREDENTIALS_FILE
/// elsewhere.
#[test]
fn keys_from_a_credentials_profile() {
    let Some(moto) = Moto::start() else { return };
    moto.upload(&[("small.bam", &data("small.bam")), ("small.bam.bai", &data("small.bam.bai"))]);
    let home = TempDir::new("s3-profile");
    std::fs::create_dir_all(home.path(".aws")).unwrap();
    let credentials = "[default]\naws_access_key_id = DEFAULTKEY\naws_secret_access_key = default/secret\n\n\
                       [team]\naws_access_key_id=TEAMKEY\naws_secret_access_key=team+secret\naws_session_token=TEAMTOKEN\n";
    std::fs::write(home.path(".aws/credentials"), credentials).unwrap();
    let elsewhere = TempDir::new("s3-credentials-file");
    std::fs::write(elsewhere.path("creds"), "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = file-secret\n").unwrap();
    let endpoint = moto.endpoint();
    let creds_file = elsewhere.path("creds").display().to_string();
    let plain = format!("s3://{BUCKET}/small.bam");
    let with_profile = format!("s3://team@{BUCKET}/small.bam");
    let expected = local(&["view", "-c", "{}", "chr1"], "small.bam");
    // The URL, the variables, and the key id, secret and token expected.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str, Option<&'a str>);
    let cases: [Case; 4] = [
        (&plain, &[], "DEFAULTKEY", "default/secret", None),
        (&plain, &[("AWS_PROFILE", "team")], "TEAMKEY", "team+secret", Some("TEAMTOKEN")),
        (&with_profile, &[], "TEAMKEY", "team+secret", Some("TEAMTOKEN")),
        (&plain, &[("AWS_SHARED_CREDENTIALS_FILE", &creds_file)], "FILEKEY", "file-secret", None),
    ];
    for (url, vars, key_id, secret, token) in cases {
        moto.clear_log();
        let vars: Vec<(&str, &str)> = [vars, &[("AWS_ENDPOINT_URL", endpoint.as_str())]].concat();
        let got = ok(fasthts_in(&home.0, &vars, &["view", "-c", url, "chr1"]), &format!("{url} {vars:?}"));
        assert_eq!(got, expected, "{url} {vars:?}");
        let gets = moto.gets("small.bam");
        assert!(!gets.is_empty(), "{url} {vars:?}: no request logged");
        for target in &gets {
            assert_eq!(key_id_of(target), Some(key_id), "{url} {vars:?}: {target}");
            assert_eq!(token.is_some_and(|t| target.contains(&format!("X-Amz-Security-Token={t}"))), token.is_some(), "{target}");
        }
        assert!(moto.signed_by(&gets[0], secret), "{url} {vars:?}: bad signature {}", gets[0]);
    }
}

/// A key that is not there: one line saying so, exit 1, no output left,
/// no credential shown.
#[test]
fn missing_key_is_not_found_in_one_line() {
    let Some(moto) = Moto::start() else { return };
    moto.upload(&[]);
    let home = TempDir::new("s3-missing");
    let endpoint = moto.endpoint();
    let url = format!("s3://{BUCKET}/absent.bam");
    let vars = [("AWS_ACCESS_KEY_ID", KEY_ID), ("AWS_SECRET_ACCESS_KEY", SECRET), ("AWS_ENDPOINT_URL", endpoint.as_str())];
    for args in [&["flagstat", url.as_str()][..], &["view", "-c", &url, "chr1"], &["idxstats", &url]] {
        let out = fasthts_in(&home.0, &vars, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(&format!("fasthts {}: {url}: not found (HTTP 404)", args[0])), "{args:?}: {err}");
        assert!(!err.contains(KEY_ID) && !err.contains(SECRET) && !err.contains("X-Amz"), "{err}");
    }
    let out = home.path("out.bam");
    let mut c = fasthts();
    c.args(["view", "-b", "-o"]).arg(&out).arg(&url);
    let got = run(with_env(c, &home.0, &vars));
    assert_eq!(got.status.code(), Some(1), "{}", text(&got.stderr));
    assert!(!out.exists(), "view -o left an output");
    assert!(text(&got.stderr).contains("not found (HTTP 404)"));
}

/// A server that answers every request 403 AccessDenied, as S3 answers
/// a wrong key; the request heads it got.
fn denying_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&heads);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            seen.lock().unwrap().push(head);
            let body =
                "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>";
            let reply = format!("HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (port, heads)
}

/// Access denied (a wrong key): one line with the status, exit 1, and no
/// key id, secret, token or signature in it, whether the keys came from
/// the environment or the URL.
#[test]
fn access_denied_is_one_line_without_credentials() {
    let (port, heads) = denying_server();
    let home = TempDir::new("s3-denied");
    let endpoint = format!("http://127.0.0.1:{port}");
    let token = "SessionTokenS3cret";
    let from_env = [
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", token),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
    ];
    let plain = format!("s3://{BUCKET}/x.bam");
    let in_url = format!("s3://{KEY_ID}:{}:{token}@{BUCKET}/x.bam", SECRET.replace('/', "%2F").replace('+', "%2B"));
    for (url, vars) in [(&plain, &from_env[..]), (&in_url, &from_env[3..])] {
        for args in [&["flagstat", url.as_str()][..], &["view", "-c", url, "chr1"]] {
            let out = fasthts_in(&home.0, vars, args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(out.stdout.is_empty());
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with(&format!("fasthts {}: {plain}: access denied (HTTP 403", args[0])), "{args:?}: {err}");
            for secret in [KEY_ID, SECRET, token, "X-Amz", "Signature", "%2F"] {
                assert!(!err.contains(secret), "{secret} in {err}");
            }
        }
    }
    // The requests were signed with the key: the refusal is the server's.
    let heads = heads.lock().unwrap();
    assert!(!heads.is_empty() && heads.iter().all(|h| h.contains("X-Amz-Signature=") && h.contains(KEY_ID)), "{heads:?}");
}
