//! Remote inputs: an object behind an `http://` or `https://` URL, or in
//! an object store (`s3://`, `gs://`, mapped to HTTP requests as htslib
//! maps them: `object_store`), read by byte ranges.
//!
//! [`RemoteObject::open`] asks for the object's first byte, which tells
//! its length (`Content-Range`) and its version (`ETag`, else
//! `Last-Modified`); every later range must come from the same version,
//! so an object replaced while it is read is an error, never a mix of two
//! files. [`RemoteObject::read_range`] fetches one range, retrying with
//! back-off on what a network does now and then (a connection reset, a
//! body cut short, a timeout, HTTP 5xx or 429); [`RemoteReader`] reads the
//! whole object as a stream, the next ranges fetched ahead on threads of
//! its own, growing from 256 KiB (a header read alone costs little) to
//! [`WINDOW_BYTES`].
//!
//! Error texts name no URL (the caller names its input, as for a local
//! path), and so hold no credentials (neither a key nor a signature of a
//! presigned request); [`display_url`] is a URL fit to show.

use crate::object_store::{self, S3Object};
use std::borrow::Cow;
use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest range fetched ahead by [`RemoteReader`].
pub const WINDOW_BYTES: u64 = 16 << 20;
/// Ranges [`RemoteReader`] has in flight.
const IN_FLIGHT: u64 = 2;
/// Attempts at one range before giving up.
const ATTEMPTS: u32 = 5;
/// The wait before the first retry, doubled before each next one.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// Connecting to the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);
/// Silence from the server while reading a response.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether `name` is a URL read as a remote input (`http://`, `https://`,
/// `s3://`, `s3+http://`, `s3+https://`, `gs://`, `gs+http://`,
/// `gs+https://`).
pub fn is_url(name: &str) -> bool {
    scheme(name).is_some()
}

fn scheme(name: &str) -> Option<&'static str> {
    ["http://", "https://", "s3://", "s3+http://", "s3+https://", "gs://", "gs+http://", "gs+https://"]
        .into_iter()
        .find(|s| name.len() > s.len() && name[..s.len()].eq_ignore_ascii_case(s))
}

/// `url` as messages may show it: without a user and password before the
/// host, nor a query (a pre-signed URL's signature).
pub fn display_url(url: &str) -> String {
    let (head, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => return url.to_string(),
    };
    let host_end = rest.find('/').unwrap_or(rest.len());
    // An S3 secret often holds a `/`, which a user may leave unescaped in
    // `s3://ID:SECRET@BUCKET/KEY`: up to an `@` past it (before any query)
    // is dropped too when what precedes it has a `:`.
    let query_start = rest.find(['?', '#']).unwrap_or(rest.len());
    let user_end = rest[..host_end].rfind('@').or_else(|| rest[..query_start].rfind('@').filter(|&at| rest[..at].contains(':')));
    let rest = match user_end {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    let rest = match rest.find('?') {
        Some(q) => format!("{}?…", &rest[..q]),
        None => rest.to_string(),
    };
    format!("{head}{rest}")
}

/// Whether `error`, from opening `url`, says there is no object there: a
/// 404, or for S3 a 403, its answer for a missing key to whoever may not
/// list the bucket (a public bucket's, to unsigned requests). For the
/// candidate names of an index beside the data.
pub fn is_missing(url: &str, error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound
        || (error.kind() == io::ErrorKind::PermissionDenied && scheme(url).is_some_and(|s| s.starts_with("s3")))
}

/// What a request goes to: a URL and its headers, or an S3 object whose
/// URL is presigned for each request.
enum Target {
    Http { url: String, headers: Vec<(&'static str, String)> },
    // Boxed: the bucket, key and credentials are ten times a URL's size.
    S3(Box<S3Object>),
}

/// `path` as messages name it: a URL as [`display_url`] shows it (no
/// credentials), a local path as it is.
pub fn shown_path(path: &std::path::Path) -> std::path::PathBuf {
    match path.to_str().filter(|p| is_url(p)) {
        Some(url) => std::path::PathBuf::from(display_url(url)),
        None => path.to_path_buf(),
    }
}

/// An object behind a URL, of a known length and version.
pub struct RemoteObject {
    target: Target,
    agent: ureq::Agent,
    len: u64,
    /// `ETag`, else `Last-Modified`, as first seen (`None` when the server
    /// sends neither).
    version: Version,
}

/// Which header tells an object's version (`ETag`, `Last-Modified`) and
/// what it says.
type Version = Option<(&'static str, String)>;

/// The error of a failed request, a range of another version of the
/// object, a response that is not what was asked.
fn error(kind: io::ErrorKind, text: String) -> io::Error {
    io::Error::new(kind, text)
}

/// What is wrong with one attempt: to be tried again, or not, or (S3)
/// asked in the wrong region, the bucket's given.
enum Failure {
    Retry(io::Error),
    Fatal(io::Error),
    WrongRegion { region: String, status: u16 },
}

impl Failure {
    fn into_error(self) -> io::Error {
        match self {
            Failure::Retry(e) | Failure::Fatal(e) => e,
            Failure::WrongRegion { region, status } => {
                error(io::ErrorKind::Other, format!("HTTP {status}: the bucket is in region {region}"))
            }
        }
    }
}

impl RemoteObject {
    /// Opens the object at `url` (`http://`, `https://`, an object
    /// store's, with the credentials and endpoints of the environment):
    /// its length and version.
    pub fn open(url: &str) -> io::Result<RemoteObject> {
        Self::open_in(url, &object_store::process_env)
    }

    /// [`RemoteObject::open`] with the environment `env`.
    fn open_in(url: &str, env: object_store::Env) -> io::Result<RemoteObject> {
        let target = match scheme(url) {
            Some("http://" | "https://") => Target::Http { url: url.to_string(), headers: Vec::new() },
            Some(s) if s.starts_with("gs") => {
                let (url, headers) = object_store::gcs_request(url, env);
                Target::Http { url, headers }
            }
            Some(_) => Target::S3(Box::new(S3Object::resolve(url, env)?)),
            None => return Err(error(io::ErrorKind::InvalidInput, "not a URL".into())),
        };
        Self::open_target(target)
    }

    fn open_target(target: Target) -> io::Result<RemoteObject> {
        let mut agent = ureq::AgentBuilder::new().timeout_connect(CONNECT_TIMEOUT).timeout_read(READ_TIMEOUT);
        if matches!(target, Target::S3(_)) {
            // S3's 301 names the bucket's region, not a place to follow.
            agent = agent.redirects(0);
        }
        let mut object = RemoteObject { target, agent: agent.build(), len: 0, version: None };
        let (len, version) = match object.attempts(|o| o.probe()) {
            // Asked in the wrong region: once more in the bucket's, as
            // htslib does.
            Err(Failure::WrongRegion { region, .. }) => {
                if let Target::S3(s3) = &mut object.target {
                    s3.move_to_region(&region)?;
                }
                object.attempts(|o| o.probe())
            }
            r => r,
        }
        .map_err(Failure::into_error)?;
        object.len = len;
        object.version = version;
        Ok(object)
    }

    /// The object's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the object is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fills `buf` with the object's bytes from `offset`, which must lie
    /// within it.
    pub fn read_range(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(error(io::ErrorKind::InvalidInput, format!("range {offset}+{} lies past the end ({} bytes)", buf.len(), self.len)));
        }
        self.with_retries(|o| o.get_range(offset, buf))
    }

    /// `attempt` until it succeeds, fails for good or has failed
    /// [`ATTEMPTS`] times, waiting longer before each retry.
    fn with_retries<T>(&self, attempt: impl FnMut(&Self) -> Result<T, Failure>) -> io::Result<T> {
        self.attempts(attempt).map_err(Failure::into_error)
    }

    /// [`RemoteObject::with_retries`], a lasting failure as the last
    /// attempt's.
    fn attempts<T>(&self, mut attempt: impl FnMut(&Self) -> Result<T, Failure>) -> Result<T, Failure> {
        let mut wait = FIRST_BACKOFF;
        for tries in 1.. {
            match attempt(self) {
                Ok(t) => return Ok(t),
                Err(Failure::Retry(e)) if tries >= ATTEMPTS => {
                    return Err(Failure::Fatal(error(e.kind(), format!("{e} (tried {tries} times)"))));
                }
                Err(Failure::Retry(_)) => {
                    std::thread::sleep(wait);
                    wait *= 2;
                }
                Err(lasting) => return Err(lasting),
            }
        }
        unreachable!("the loop returns")
    }

    fn request(&self, first: u64, last: u64) -> Result<ureq::Response, Failure> {
        let (url, headers): (Cow<str>, &[(&str, String)]) = match &self.target {
            Target::Http { url, headers } => (Cow::Borrowed(url), headers),
            // Signed anew each time: a long read outlives no signature.
            Target::S3(s3) => (Cow::Owned(s3.request_url()), &[]),
        };
        let mut request = self.agent.get(&url).set("Range", &format!("bytes={first}-{last}"));
        for (name, value) in headers {
            request = request.set(name, value);
        }
        let s3_region = match &self.target {
            Target::S3(s3) => Some(s3.region()),
            Target::Http { .. } => None,
        };
        match request.call() {
            Ok(response) if s3_region.is_some() && (300..400).contains(&response.status()) => {
                let status = response.status();
                let text = response.status_text().to_string();
                Err(wrong_region(s3_region, status, response).unwrap_or_else(|| status_failure(status, &text)))
            }
            Ok(response) => Ok(response),
            Err(ureq::Error::Status(status, response)) => {
                let text = response.status_text().to_string();
                let moved = if status == 400 { wrong_region(s3_region, status, response) } else { None };
                Err(moved.unwrap_or_else(|| status_failure(status, &text)))
            }
            Err(ureq::Error::Transport(t)) => Err(transport_failure(&t, &url)),
        }
    }

    /// The length and version, from a request for the first byte.
    fn probe(&self) -> Result<(u64, Version), Failure> {
        let response = match self.request(0, 0) {
            // An empty object has no first byte.
            Err(Failure::Fatal(e)) if e.to_string().contains("HTTP 416") => return Ok((0, None)),
            r => r?,
        };
        let version = version_of(&response);
        let len = match response.status() {
            206 => response.header("Content-Range").and_then(total_of).ok_or_else(|| {
                Failure::Fatal(error(
                    io::ErrorKind::InvalidData,
                    "the server's answer to a range request has no length (Content-Range)".into(),
                ))
            })?,
            _ => {
                return Err(Failure::Fatal(error(
                    io::ErrorKind::Unsupported,
                    format!("the server does not serve byte ranges (HTTP {} to a range request)", response.status()),
                )))
            }
        };
        Ok((len, version))
    }

    fn get_range(&self, offset: u64, buf: &mut [u8]) -> Result<(), Failure> {
        let last = offset + buf.len() as u64 - 1;
        let response = self.request(offset, last)?;
        if response.status() != 206 {
            return Err(Failure::Fatal(error(
                io::ErrorKind::InvalidData,
                format!("the server answered a range request with HTTP {}", response.status()),
            )));
        }
        let changed = |what: &str| {
            Failure::Fatal(error(io::ErrorKind::InvalidData, format!("the object changed while it was read ({what} differs)")))
        };
        match (&self.version, version_of(&response)) {
            (Some((name, was)), Some((_, now))) if *was != now => return Err(changed(name)),
            (Some((name, _)), None) => return Err(changed(name)),
            _ => {}
        }
        let range = response.header("Content-Range").and_then(range_of);
        if range != Some((offset, last, self.len)) {
            return match range {
                Some((_, _, total)) if total != self.len => Err(changed("its length")),
                _ => Err(Failure::Fatal(error(
                    io::ErrorKind::InvalidData,
                    format!("the server sent another range than bytes {offset}-{last}"),
                ))),
            };
        }
        let mut body = response.into_reader();
        // A body cut short (a connection closed or reset) is tried again.
        body.read_exact(buf).map_err(|e| Failure::Retry(error(e.kind(), format!("reading bytes {offset}-{last}: {e}"))))
    }
}

/// The region S3 says the bucket is in, when it is not `asked` (an S3
/// request's region): its `x-amz-bucket-region` header on a 301 or 400,
/// else the `<Region>` of a 400's body (htslib reads both).
fn wrong_region(asked: Option<&str>, status: u16, response: ureq::Response) -> Option<Failure> {
    let asked = asked?;
    let region = match response.header("x-amz-bucket-region") {
        Some(r) => r.trim().to_string(),
        None if status == 400 => {
            let mut body = String::new();
            let _ = response.into_reader().take(64 << 10).read_to_string(&mut body);
            let start = body.find("<Region>")? + "<Region>".len();
            let end = start + body[start..].find('<')?;
            body[start..end].trim().to_string()
        }
        None => return None,
    };
    let plausible = !region.is_empty() && region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (plausible && region != asked).then_some(Failure::WrongRegion { region, status })
}

/// `ETag` (strong or weak, as sent), else `Last-Modified`.
fn version_of(response: &ureq::Response) -> Version {
    if let Some(tag) = response.header("ETag") {
        return Some(("ETag", tag.to_string()));
    }
    response.header("Last-Modified").map(|m| ("Last-Modified", m.to_string()))
}

/// `bytes FIRST-LAST/TOTAL` of a `Content-Range` header.
fn range_of(header: &str) -> Option<(u64, u64, u64)> {
    let rest = header.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (first, last) = span.split_once('-')?;
    Some((first.trim().parse().ok()?, last.trim().parse().ok()?, total.trim().parse().ok()?))
}

fn total_of(header: &str) -> Option<u64> {
    range_of(header).map(|(_, _, total)| total)
}

fn status_failure(status: u16, text: &str) -> Failure {
    let reason = if text.is_empty() { String::new() } else { format!(" {text}") };
    match status {
        404 | 410 => Failure::Fatal(error(io::ErrorKind::NotFound, format!("not found (HTTP {status})"))),
        401 | 403 => Failure::Fatal(error(io::ErrorKind::PermissionDenied, format!("access denied (HTTP {status}{reason})"))),
        408 | 429 | 500..=599 => Failure::Retry(error(io::ErrorKind::Other, format!("HTTP {status}{reason}"))),
        _ => Failure::Fatal(error(io::ErrorKind::Other, format!("HTTP {status}{reason}"))),
    }
}

fn transport_failure(t: &ureq::Transport, url: &str) -> Failure {
    use std::error::Error as _;
    // The cause in the system's words, without the URL ureq adds.
    let mut cause = t.message().map(str::to_string);
    let mut source = t.source();
    while let Some(s) = source {
        cause = Some(s.to_string());
        source = s.source();
    }
    // Nor the URL anywhere in it: a presigned one holds a signature.
    let cause = cause.unwrap_or_else(|| format!("{:?}", t.kind())).replace(url, &display_url(url));
    match t.kind() {
        // A server that is not there, or a name that does not resolve,
        // is said at once.
        ureq::ErrorKind::ConnectionFailed if cause.contains("refused") => {
            Failure::Fatal(error(io::ErrorKind::ConnectionRefused, format!("cannot connect: {cause}")))
        }
        ureq::ErrorKind::Dns => Failure::Fatal(error(io::ErrorKind::NotFound, format!("cannot resolve the host: {cause}"))),
        ureq::ErrorKind::InvalidUrl | ureq::ErrorKind::UnknownScheme => {
            Failure::Fatal(error(io::ErrorKind::InvalidInput, format!("bad URL: {cause}")))
        }
        ureq::ErrorKind::TooManyRedirects => Failure::Fatal(error(io::ErrorKind::Other, "too many redirects".into())),
        ureq::ErrorKind::ConnectionFailed => Failure::Retry(error(io::ErrorKind::Other, format!("cannot connect: {cause}"))),
        _ => Failure::Retry(error(io::ErrorKind::Other, format!("network error: {cause}"))),
    }
}

/// A remote object read from `start` to its end as a stream, the next
/// ranges fetched ahead on threads of its own, from the first read on (a
/// reader made and dropped unread fetches nothing).
pub struct RemoteReader {
    /// What to read, until the first read starts the fetching.
    unstarted: Option<(Arc<RemoteObject>, u64)>,
    /// One channel per fetching thread; window `k` comes from `k % n`.
    windows: Vec<Receiver<io::Result<Vec<u8>>>>,
    next: usize,
    current: Vec<u8>,
    /// Windows read, given back to the fetching threads to fill again: a
    /// fresh 16 MiB buffer per window would cost its page faults each time.
    spare: SpareWindows,
    at: usize,
    failed: bool,
}

/// Window buffers read and not yet filled again, shared by a
/// [`RemoteReader`] and its fetching threads.
type SpareWindows = Arc<Mutex<Vec<Vec<u8>>>>;

/// The `k`th window of a read from `start` of an object of `len` bytes:
/// 256 KiB, doubling up to [`WINDOW_BYTES`].
fn window(start: u64, len: u64, k: u64) -> Option<(u64, u64)> {
    let mut offset = start;
    let mut size = 256 << 10;
    for _ in 0..k {
        offset += size;
        size = (size * 2).min(WINDOW_BYTES);
    }
    (offset < len).then(|| (offset, size.min(len - offset)))
}

impl RemoteReader {
    /// Reads `object` from `start`.
    pub fn new(object: Arc<RemoteObject>, start: u64) -> RemoteReader {
        RemoteReader {
            unstarted: Some((object, start)),
            windows: Vec::new(),
            next: 0,
            current: Vec::new(),
            at: 0,
            failed: false,
            spare: SpareWindows::default(),
        }
    }

    /// Starts the fetching threads, which fill buffers from `spare` when
    /// it has one.
    fn start(object: Arc<RemoteObject>, start: u64, spare: &SpareWindows) -> Vec<Receiver<io::Result<Vec<u8>>>> {
        (0..IN_FLIGHT)
            .map(|i| {
                // One window fetched and one waiting, per thread.
                let (send, receive): (SyncSender<io::Result<Vec<u8>>>, _) = mpsc::sync_channel(1);
                let object = Arc::clone(&object);
                let spare = Arc::clone(spare);
                std::thread::spawn(move || {
                    let mut k = i;
                    while let Some((offset, size)) = window(start, object.len(), k) {
                        let reused = spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
                        let mut buf = reused.unwrap_or_default();
                        // Overwritten whole by the fetch: only growth is zeroed.
                        buf.resize(size as usize, 0);
                        let got = object.read_range(offset, &mut buf).map(|()| buf);
                        let failed = got.is_err();
                        // The reader gone: stop.
                        if send.send(got).is_err() || failed {
                            return;
                        }
                        k += IN_FLIGHT;
                    }
                });
                receive
            })
            .collect()
    }
}

impl Read for RemoteReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed {
            return Err(error(io::ErrorKind::Other, "an earlier read failed".into()));
        }
        if let Some((object, start)) = self.unstarted.take() {
            self.windows = Self::start(object, start, &self.spare);
        }
        while self.at == self.current.len() {
            let channel = &self.windows[self.next % self.windows.len()];
            match channel.recv() {
                // Every window read: the end.
                Err(_) => return Ok(0),
                Ok(Err(e)) => {
                    self.failed = true;
                    return Err(e);
                }
                Ok(Ok(window)) => {
                    let read = std::mem::replace(&mut self.current, window);
                    if read.capacity() > 0 {
                        self.spare.lock().unwrap_or_else(|e| e.into_inner()).push(read);
                    }
                    self.at = 0;
                    self.next += 1;
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_tile_the_object() {
        let len = 100 << 20;
        let mut at = 7;
        let mut k = 0;
        while let Some((offset, size)) = window(7, len, k) {
            assert_eq!(offset, at);
            assert!(size <= WINDOW_BYTES);
            at += size;
            k += 1;
        }
        assert_eq!(at, len);
    }

    #[test]
    fn urls_shown_without_credentials() {
        assert_eq!(display_url("https://user:secret@host/a/b.bam?X-Amz-Signature=abc"), "https://host/a/b.bam?…");
        assert_eq!(display_url("http://host:8080/x.bam"), "http://host:8080/x.bam");
        assert_eq!(display_url("s3://AKID:se/cr+et:tok@bucket/k.bam"), "s3://bucket/k.bam");
        assert_eq!(display_url("s3://profile@bucket/dir/a@b.bam"), "s3://bucket/dir/a@b.bam");
        assert_eq!(display_url("s3://bucket/dir/a@b.bam"), "s3://bucket/dir/a@b.bam");
        assert!(is_url("HTTP://h/x") && is_url("s3://b/k") && !is_url("x.bam") && !is_url("http://"));
    }

    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::Mutex;

    /// A loopback HTTP server answering each request with what `answer`
    /// makes of its head (request line and headers); the heads it got.
    fn server(answer: impl Fn(&str) -> String + Send + 'static) -> (u16, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&heads);
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
                let reply = answer(&head);
                seen.lock().unwrap().push(head);
                let _ = stream.write_all(reply.as_bytes());
            }
        });
        (port, heads)
    }

    /// The first byte of a 4-byte object.
    const FIRST_BYTE: &str =
        "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-0/4\r\nContent-Length: 1\r\nETag: \"e\"\r\nConnection: close\r\n\r\nx";

    #[test]
    fn gcs_token_is_sent_as_bearer() {
        let (port, heads) = server(|_| FIRST_BYTE.to_string());
        let env = |name: &str| (name == "GCS_OAUTH_TOKEN").then(|| "ya29.secret".to_string());
        let (mapped, headers) = object_store::gcs_request("gs://bucket/x.bam", &env);
        assert_eq!(mapped, "https://bucket.storage-download.googleapis.com/x.bam");
        // The mapped host is Google's: the same request sent to loopback.
        let object = RemoteObject::open_target(Target::Http { url: format!("http://127.0.0.1:{port}/x.bam"), headers }).unwrap();
        assert_eq!(object.len(), 4);
        let heads = heads.lock().unwrap();
        assert!(heads[0].to_ascii_lowercase().contains("authorization: bearer ya29.secret\r\n"), "{heads:?}");
    }

    #[test]
    fn s3_wrong_region_is_asked_again_in_the_buckets() {
        for moved in [
            "HTTP/1.1 301 Moved Permanently\r\nx-amz-bucket-region: eu-west-1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            "<Error><Code>AuthorizationQueryParametersError</Code><Region>eu-west-1</Region></Error>",
        ] {
            let moved = match moved.strip_prefix("<Error>") {
                Some(_) => format!("HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{moved}", moved.len()),
                None => moved.to_string(),
            };
            let (port, heads) = server(move |head| if head.contains("eu-west-1") { FIRST_BYTE.to_string() } else { moved.clone() });
            let host = format!("127.0.0.1:{port}");
            let env = |name: &str| match name {
                "HTS_S3_HOST" => Some(host.clone()),
                "AWS_ACCESS_KEY_ID" => Some("KEYID".to_string()),
                "AWS_SECRET_ACCESS_KEY" => Some("topsecret".to_string()),
                "HOME" => Some("/nonexistent".to_string()),
                _ => None,
            };
            let object = RemoteObject::open_in("s3+http://bucket/k.bam", &env).unwrap();
            assert_eq!(object.len(), 4);
            let heads = heads.lock().unwrap();
            assert_eq!(heads.len(), 2, "{heads:?}");
            assert!(heads[0].starts_with("GET /bucket/k.bam?") && heads[0].contains("%2Fus-east-1%2Fs3%2Faws4_request"), "{heads:?}");
            assert!(heads[1].contains("X-Amz-Credential=KEYID%2F") && heads[1].contains("%2Feu-west-1%2Fs3%2Faws4_request"));
            assert!(!heads[1].contains("topsecret"));
        }
    }

    #[test]
    fn content_range() {
        assert_eq!(range_of("bytes 0-0/1234"), Some((0, 0, 1234)));
        assert_eq!(range_of("bytes */1234"), None);
    }
}
