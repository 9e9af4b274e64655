//! Object stores' URLs (`s3://`, `gs://`) turned into HTTP requests, as
//! htslib 1.16 turns them (hfile_s3.c, hfile_gcs.c), so that a URL and
//! its environment reach the same object under samtools and fasthts.
//!
//! S3: `s3://[PROFILE@]BUCKET/KEY` or `s3://ID:SECRET[:TOKEN]@BUCKET/KEY`,
//! `s3+http://` and `s3+https://` choosing the scheme (`s3://` is HTTPS).
//! Without user information in the URL the environment is read
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_DEFAULT_REGION`, `HTS_S3_HOST`, `AWS_DEFAULT_PROFILE` or
//! `AWS_PROFILE`, `HTS_S3_ADDRESS_STYLE`); without a key id then, the
//! profile of `AWS_SHARED_CREDENTIALS_FILE` (`~/.aws/credentials`), then of
//! `HTS_S3_S3CFG` (`~/.s3cfg`), then `~/.awssecret`. Beyond htslib 1.16:
//! `AWS_REGION`, and the profile's `region` in `AWS_CONFIG_FILE`
//! (`~/.aws/config`), when nothing else gave one; `AWS_ENDPOINT_URL_S3` or
//! `AWS_ENDPOINT_URL` as the AWS command line takes them (scheme, host,
//! port), when no host was given the htslib way; such an endpoint, or a
//! host that is an IP address, is addressed by path unless
//! `HTS_S3_ADDRESS_STYLE=virtual` (htslib would prefix an IP address with
//! the bucket's name). Requests are presigned
//! (AWS Signature V4, by rusty-s3) for the object's region, or unsigned
//! without a key id (public buckets).
//!
//! GCS: `gs://BUCKET/PATH` is `https://BUCKET.storage-download.googleapis.com/PATH`
//! (`gs+http://` for HTTP), with `GCS_OAUTH_TOKEN` sent as a Bearer token
//! and `GCS_REQUESTER_PAYS_PROJECT` as `X-Goog-User-Project`.

use rusty_s3::{actions::GetObject, Bucket, Credentials, S3Action, UrlStyle};
use std::collections::HashMap;
use std::io;
use std::time::Duration;

/// How an environment variable is read (the process's, or a test's).
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// How long a presigned request stays valid: each request is signed anew,
/// so this bounds only a request's wait in a queue.
const PRESIGNED_FOR: Duration = Duration::from_secs(3600);

/// An S3 object: where it is, in which region, and who asks for it.
pub(crate) struct S3Object {
    endpoint: url::Url,
    style: UrlStyle,
    bucket_name: String,
    bucket: Bucket,
    key: String,
    query: Vec<(String, String)>,
    region: String,
    credentials: Option<Credentials>,
}

fn bad(text: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, text)
}

/// `[section]`'s `keys` of an INI file, as htslib's parse_ini reads them:
/// lines before any section count too, `key = value` or `key: value`, the
/// last of a key kept. A file that cannot be read gives nothing.
fn read_ini(path: &str, env: Env, section: &str) -> HashMap<String, String> {
    let mut found = HashMap::new();
    let path = match path.strip_prefix("~/") {
        Some(rest) => match env("HOME") {
            Some(home) => format!("{home}/{rest}"),
            None => return found,
        },
        None => path.to_string(),
    };
    let Ok(text) = std::fs::read_to_string(path) else { return found };
    let mut active = true;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.split_once(']')).map(|(n, _)| n) {
            active = name == section;
        } else if let Some(at) = line.find([':', '=']).filter(|_| active) {
            found.insert(line[..at].trim().to_string(), line[at + 1..].trim().to_string());
        }
    }
    found
}

/// Decodes `%XX` escapes (user information and keys of URLs).
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// Whether `path` is already escaped, by htslib's rule (is_escaped): it
/// holds a `%XX`, or nothing that would need one.
fn is_escaped(path: &str) -> bool {
    let bytes = path.as_bytes();
    let (mut escaped, mut needs_escape) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit() {
                escaped = true;
                i += 3;
                continue;
            }
            escaped = false;
        }
        let c = bytes[i];
        if !(c.is_ascii_alphanumeric() || b"_-~./".contains(&c)) {
            needs_escape = true;
        }
        i += 1;
    }
    escaped || !needs_escape
}

/// Whether a bucket's name can be a host name's first label (htslib's
/// is_dns_compliant): 3 to 63 lower-case letters, digits, inner `-`, and
/// inner `.` between alphanumerics, except over HTTPS (AWS's certificate
/// covers one label).
fn is_dns_compliant(name: &str, https: bool) -> bool {
    let b = name.as_bytes();
    let mut has_nondigit = false;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'a'..=b'z' => has_nondigit = true,
            b'-' if i > 0 && i + 1 < b.len() => has_nondigit = true,
            b'0'..=b'9' => {}
            b'.' if !https && i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_alphanumeric() && b[i + 1].is_ascii_alphanumeric() => {}
            _ => return false,
        }
    }
    has_nondigit && (3..=63).contains(&b.len())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Auto,
    Virtual,
    Path,
}

fn style_named(name: &str) -> Option<Style> {
    match name.to_ascii_lowercase().as_str() {
        "virtual" => Some(Style::Virtual),
        "path" => Some(Style::Path),
        "auto" => Some(Style::Auto),
        _ => None,
    }
}

impl S3Object {
    /// The object at `url` (`s3://`, `s3+http://`, `s3+https://`) with the
    /// credentials, region and endpoint that `env` and the files it names
    /// give.
    pub(crate) fn resolve(url: &str, env: Env) -> io::Result<S3Object> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL".into()))?;
        let mut https = !scheme.eq_ignore_ascii_case("s3+http");
        let rest = rest.trim_start_matches('/');
        let bucket_end = rest.find(['/', '?', '#', '@']).unwrap_or(rest.len());
        let (mut id, mut secret, mut token) = (String::new(), String::new(), String::new());
        let (mut region, mut host, mut profile) = (String::new(), String::new(), String::new());
        let mut style = Style::Auto;
        let var = |name: &str| env(name).unwrap_or_default();
        let rest = if rest[bucket_end..].starts_with('@') {
            // User information: a profile, or ID:SECRET[:TOKEN]; the
            // environment is not read then.
            let user = &rest[..bucket_end];
            let mut parts = user.splitn(3, ':');
            let first = percent_decoded(parts.next().unwrap_or_default());
            match parts.next() {
                None => profile = first,
                Some(s) => {
                    id = first;
                    secret = percent_decoded(s);
                    token = parts.next().map(percent_decoded).unwrap_or_default();
                }
            }
            &rest[bucket_end + 1..]
        } else {
            id = var("AWS_ACCESS_KEY_ID");
            secret = var("AWS_SECRET_ACCESS_KEY");
            token = var("AWS_SESSION_TOKEN");
            region = env("AWS_DEFAULT_REGION").or_else(|| env("AWS_REGION")).unwrap_or_default();
            host = var("HTS_S3_HOST");
            profile = env("AWS_DEFAULT_PROFILE").or_else(|| env("AWS_PROFILE")).unwrap_or_default();
            if let Some(s) = env("HTS_S3_ADDRESS_STYLE").as_deref().and_then(style_named).filter(|&s| s != Style::Auto) {
                style = s;
            }
            rest
        };
        if profile.is_empty() {
            profile = "default".into();
        }
        let set = |value: Option<&String>, into: &mut String| {
            if let Some(v) = value {
                *into = v.clone();
            }
        };
        if id.is_empty() {
            let file = env("AWS_SHARED_CREDENTIALS_FILE").unwrap_or_else(|| "~/.aws/credentials".into());
            let found = read_ini(&file, env, &profile);
            set(found.get("aws_access_key_id"), &mut id);
            set(found.get("aws_secret_access_key"), &mut secret);
            set(found.get("aws_session_token"), &mut token);
            set(found.get("region"), &mut region);
            if let Some(s) = found.get("addressing_style") {
                style = style_named(s).unwrap_or(Style::Auto);
            }
        }
        if id.is_empty() {
            let file = env("HTS_S3_S3CFG").unwrap_or_else(|| "~/.s3cfg".into());
            let found = read_ini(&file, env, &profile);
            set(found.get("access_key"), &mut id);
            set(found.get("secret_key"), &mut secret);
            set(found.get("access_token"), &mut token);
            set(found.get("host_base"), &mut host);
            set(found.get("bucket_location"), &mut region);
            if let Some(s) = found.get("host_bucket") {
                // s3cmd: a host_bucket without %(bucket)s means path style.
                style = if s.contains("%(bucket)s") { Style::Auto } else { Style::Path };
            }
        }
        if id.is_empty() {
            if let Some(home) = env("HOME") {
                if let Ok(text) = std::fs::read_to_string(format!("{home}/.awssecret")) {
                    let mut words = text.split_whitespace();
                    id = words.next().unwrap_or_default().to_string();
                    secret = words.next().unwrap_or_default().to_string();
                }
            }
        }
        if region.is_empty() {
            // Beyond htslib: the profile's region in the AWS config file.
            let file = env("AWS_CONFIG_FILE").unwrap_or_else(|| "~/.aws/config".into());
            let section = if profile == "default" { profile.clone() } else { format!("profile {profile}") };
            set(read_ini(&file, env, &section).get("region"), &mut region);
        }
        let bucket_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (bucket_name, path) = rest.split_at(bucket_end);
        if bucket_name.is_empty() {
            return Err(bad("an S3 URL names no bucket".into()));
        }
        // A host given the htslib way, else an endpoint the AWS way.
        let mut endpoint_given = false;
        let endpoint = if host.is_empty() {
            match env("AWS_ENDPOINT_URL_S3").or_else(|| env("AWS_ENDPOINT_URL")).filter(|e| !e.is_empty()) {
                Some(e) => {
                    let parsed = url::Url::parse(&e).map_err(|_| bad("AWS_ENDPOINT_URL is not a URL".into()))?;
                    https = parsed.scheme() == "https";
                    endpoint_given = true;
                    Some(parsed)
                }
                None => None,
            }
        } else {
            None
        };
        // An IP address cannot be prefixed with a bucket's name (htslib
        // tries, and fails to resolve the name).
        let ip_host = !host.is_empty()
            && url::Url::parse(&format!("http://{host}")).is_ok_and(|u| matches!(u.host(), Some(url::Host::Ipv4(_) | url::Host::Ipv6(_))));
        let dns_compliant = match style {
            Style::Virtual => true,
            Style::Path => false,
            // An S3-compatible server named by AWS_ENDPOINT_URL is reached
            // by path unless virtual hosts are asked for, as one at an IP
            // address.
            Style::Auto => !endpoint_given && !ip_host && is_dns_compliant(bucket_name, https),
        };
        if host.is_empty() {
            host = "s3.amazonaws.com".into();
        }
        if !dns_compliant && !region.is_empty() && host == "s3.amazonaws.com" {
            // The region's own host spares a redirection.
            host = format!("s3.{region}.amazonaws.com");
        }
        if region.is_empty() {
            region = "us-east-1".into();
        }
        let endpoint = match endpoint {
            Some(e) => e,
            None => {
                let scheme = if https { "https" } else { "http" };
                url::Url::parse(&format!("{scheme}://{host}")).map_err(|_| bad(format!("bad S3 host {host:?}")))?
            }
        };
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let path = path.split('#').next().unwrap_or_default();
        let key = if is_escaped(path) { percent_decoded(path) } else { path.to_string() };
        let key = key.strip_prefix('/').unwrap_or(&key).to_string();
        let query = query
            .split('&')
            .filter(|q| !q.is_empty())
            .map(|q| {
                let (k, v) = q.split_once('=').unwrap_or((q, ""));
                (percent_decoded(k), percent_decoded(v))
            })
            .collect();
        let credentials = (!id.is_empty()).then(|| {
            if token.is_empty() {
                Credentials::new(id, secret)
            } else {
                Credentials::new_with_token(id, secret, token)
            }
        });
        let style = if dns_compliant { UrlStyle::VirtualHost } else { UrlStyle::Path };
        let bucket = Self::bucket(&endpoint, style, bucket_name, &region)?;
        Ok(S3Object { endpoint, style, bucket_name: bucket_name.to_string(), bucket, key, query, region, credentials })
    }

    fn bucket(endpoint: &url::Url, style: UrlStyle, name: &str, region: &str) -> io::Result<Bucket> {
        Bucket::new(endpoint.clone(), style, name.to_string(), region.to_string())
            // The endpoint's origin: its scheme, host and port, no user part.
            .map_err(|e| bad(format!("cannot address the bucket {name:?} at {}: {e:?}", endpoint.origin().ascii_serialization())))
    }

    /// The URL of a GET of the object: presigned now when there are
    /// credentials, else plain.
    pub(crate) fn request_url(&self) -> String {
        let mut action = GetObject::new(&self.bucket, self.credentials.as_ref(), &self.key);
        for (k, v) in &self.query {
            action.query_mut().insert(k.clone(), v.clone());
        }
        action.sign(PRESIGNED_FOR).to_string()
    }

    /// The region requests are signed for.
    pub(crate) fn region(&self) -> &str {
        &self.region
    }

    /// Signs for `region` from now on (the bucket's, as S3 answered);
    /// AWS's own host becomes that region's, as htslib does.
    pub(crate) fn move_to_region(&mut self, region: &str) -> io::Result<()> {
        if self.endpoint.host_str().is_some_and(|h| h.contains("amazonaws.com")) {
            let _ = self.endpoint.set_host(Some(&format!("s3.{region}.amazonaws.com")));
        }
        self.bucket = Self::bucket(&self.endpoint, self.style, &self.bucket_name, region)?;
        self.region = region.to_string();
        Ok(())
    }

    #[cfg(test)]
    fn key_id(&self) -> Option<&str> {
        self.credentials.as_ref().map(|c| c.key())
    }
}

/// The HTTP URL of `gs://BUCKET/PATH` (htslib's gcs_rewrite, for reading)
/// and the headers its environment asks for.
pub(crate) fn gcs_request(url: &str, env: Env) -> (String, Vec<(&'static str, String)>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("gs", url));
    let scheme = if scheme.len() > 3 && scheme[..3].eq_ignore_ascii_case("gs+") { &scheme[3..] } else { "https" };
    let rest = rest.trim_start_matches('/');
    let bucket_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (bucket, path) = rest.split_at(bucket_end);
    let mut headers = Vec::new();
    if let Some(token) = env("GCS_OAUTH_TOKEN").filter(|t| !t.is_empty()) {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    if let Some(project) = env("GCS_REQUESTER_PAYS_PROJECT").filter(|p| !p.is_empty()) {
        headers.push(("X-Goog-User-Project", project));
    }
    (format!("{scheme}://{bucket}.storage-download.googleapis.com{path}"), headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    /// The URL without its signature (the date changes it).
    fn unsigned(o: &S3Object) -> String {
        let url = o.request_url();
        url.split('?').next().unwrap().to_string()
    }

    #[test]
    fn s3_hosts_and_styles_as_htslib() {
        let none = env_of(&[("HOME", "/nonexistent")]);
        let o = S3Object::resolve("s3://my-bucket/dir/x.bam", &none).unwrap();
        assert_eq!(unsigned(&o), "https://my-bucket.s3.amazonaws.com/dir/x.bam");
        assert_eq!(o.region(), "us-east-1");
        assert!(o.key_id().is_none() && !o.request_url().contains('?'), "no credentials: unsigned");
        // Not a DNS name over HTTPS (a dot, capitals): path style, and the
        // region's host when a region is known.
        let env = env_of(&[("HOME", "/nonexistent"), ("AWS_DEFAULT_REGION", "eu-west-2")]);
        let o = S3Object::resolve("s3://my.bucket/x.bam", &env).unwrap();
        assert_eq!(unsigned(&o), "https://s3.eu-west-2.amazonaws.com/my.bucket/x.bam");
        let o = S3Object::resolve("s3+http://my.bucket/x.bam", &env).unwrap();
        assert_eq!(unsigned(&o), "http://my.bucket.s3.amazonaws.com/x.bam");
        let o = S3Object::resolve("s3://Caps/x.bam", &none).unwrap();
        assert_eq!(unsigned(&o), "https://s3.amazonaws.com/Caps/x.bam");
        // HTS_S3_HOST and HTS_S3_ADDRESS_STYLE.
        let env = env_of(&[("HOME", "/nonexistent"), ("HTS_S3_HOST", "127.0.0.1:9000"), ("HTS_S3_ADDRESS_STYLE", "path")]);
        let o = S3Object::resolve("s3+http://bucket/a b.bam", &env).unwrap();
        assert_eq!(unsigned(&o), "http://127.0.0.1:9000/bucket/a%20b.bam");
        // An escaped key stays as it was.
        let o = S3Object::resolve("s3+http://bucket/a%20b.bam", &env).unwrap();
        assert_eq!(unsigned(&o), "http://127.0.0.1:9000/bucket/a%20b.bam");
        // AWS_ENDPOINT_URL: its scheme, host and port, by path.
        let env = env_of(&[("HOME", "/nonexistent"), ("AWS_ENDPOINT_URL", "http://localhost:5000")]);
        let o = S3Object::resolve("s3://bucket/k.bam", &env).unwrap();
        assert_eq!(unsigned(&o), "http://localhost:5000/bucket/k.bam");
        let env = env_of(&[("HOME", "/nonexistent"), ("AWS_ENDPOINT_URL", "http://a:1"), ("AWS_ENDPOINT_URL_S3", "https://b:2")]);
        assert_eq!(unsigned(&S3Object::resolve("s3://bucket/k", &env).unwrap()), "https://b:2/bucket/k");
    }

    #[test]
    fn s3_credentials_from_url_env_and_files() {
        let dir = std::env::temp_dir().join(format!("fasthts-s3-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::fs::write(
            dir.join(".aws/credentials"),
            "[default]\naws_access_key_id = DEFAULTID\naws_secret_access_key = ds\n\n[other]\naws_access_key_id=OTHERID\n\
             aws_secret_access_key=os\naws_session_token=tok\nregion = ap-south-1\n",
        )
        .unwrap();
        std::fs::write(dir.join(".aws/config"), "[profile third]\nregion = sa-east-1\n").unwrap();
        let home = dir.display().to_string();
        let env = env_of(&[("HOME", &home)]);
        let o = S3Object::resolve("s3://bucket/k", &env).unwrap();
        assert_eq!(o.key_id(), Some("DEFAULTID"));
        let signed = o.request_url();
        assert!(signed.contains("X-Amz-Signature=") && signed.contains("X-Amz-Credential=DEFAULTID"), "{signed}");
        let o = S3Object::resolve("s3://other@bucket/k", &env).unwrap();
        assert_eq!((o.key_id(), o.region()), (Some("OTHERID"), "ap-south-1"));
        assert!(o.request_url().contains("X-Amz-Security-Token=tok"));
        let env2 = env_of(&[("HOME", &home), ("AWS_PROFILE", "other")]);
        assert_eq!(S3Object::resolve("s3://bucket/k", &env2).unwrap().key_id(), Some("OTHERID"));
        // The environment's key wins over the files; a URL's over both.
        let env3 = env_of(&[("HOME", &home), ("AWS_ACCESS_KEY_ID", "ENVID"), ("AWS_SECRET_ACCESS_KEY", "es")]);
        assert_eq!(S3Object::resolve("s3://bucket/k", &env3).unwrap().key_id(), Some("ENVID"));
        let o = S3Object::resolve("s3://URLID:se%2Fcret:tk@bucket/k", &env3).unwrap();
        assert_eq!(o.key_id(), Some("URLID"));
        assert!(o.request_url().contains("X-Amz-Security-Token=tk"));
        // The config file's region, for a profile without one.
        let env4 = env_of(&[("HOME", &home), ("AWS_PROFILE", "third"), ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")]);
        let o = S3Object::resolve("s3://bucket/k", &env4).unwrap();
        assert_eq!((o.key_id(), o.region()), (None, "sa-east-1"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn s3_region_moves() {
        let env = env_of(&[("HOME", "/nonexistent"), ("AWS_ACCESS_KEY_ID", "ID"), ("AWS_SECRET_ACCESS_KEY", "S")]);
        let mut o = S3Object::resolve("s3://my.bucket/k", &env).unwrap();
        assert!(o.request_url().contains("%2Fus-east-1%2Fs3%2Faws4_request"));
        o.move_to_region("eu-central-1").unwrap();
        assert_eq!(unsigned(&o), "https://s3.eu-central-1.amazonaws.com/my.bucket/k");
        assert!(o.request_url().contains("%2Feu-central-1%2Fs3%2Faws4_request"));
    }

    #[test]
    fn gcs_as_htslib() {
        let env = env_of(&[("GCS_OAUTH_TOKEN", "ya29.tok")]);
        let (url, headers) = gcs_request("gs://bucket/dir/x.bam", &env);
        assert_eq!(url, "https://bucket.storage-download.googleapis.com/dir/x.bam");
        assert_eq!(headers, vec![("Authorization", "Bearer ya29.tok".to_string())]);
        let (url, headers) = gcs_request("gs+http://bucket/x.bam", &env_of(&[("GCS_REQUESTER_PAYS_PROJECT", "p")]));
        assert_eq!(url, "http://bucket.storage-download.googleapis.com/x.bam");
        assert_eq!(headers, vec![("X-Goog-User-Project", "p".to_string())]);
    }

    #[test]
    fn dns_names() {
        assert!(is_dns_compliant("my-bucket", true) && is_dns_compliant("a.b.c", false));
        assert!(!is_dns_compliant("a.b.c", true) && !is_dns_compliant("ab", false) && !is_dns_compliant("-ab", false));
        assert!(!is_dns_compliant("123", false) && !is_dns_compliant("Caps", false));
        assert!(is_escaped("/a%20b") && is_escaped("/plain/x.bam") && !is_escaped("/a b"));
    }
}
