//! Region text as samtools 1.16 reads it, to the byte.
//!
//! samtools reads a region two ways. Its regions on the command line
//! (`view FILE REGION...`, `depth -r`) go through htslib's
//! `hts_parse_region` (`sam_itr_querys`): a name is looked up whole first,
//! `{NAME}` quotes one, `chr1:-100` is `chr1:1-100`, an end of 0 is the
//! reference's end, a start of 0 is taken as 1. `view -M` hashes its
//! regions with bedidx's older `hts_parse_reg`: the name is what precedes
//! the last `:`, junk after an end is ignored with a warning, `chr1:100-`
//! (an end of 0) does not parse and is then looked up, whole, as a
//! reference name (so skipped, with a warning), and positions are C `int`s
//! (an open end is 2^31−1). The Python package reads its region strings as
//! view does ([`Region::parse_query`]); [`Region::parse`] is a stricter
//! reading that names what is wrong, for other callers.

use super::Region;
use crate::sam::RefNames;

/// Which of samtools' readings a region's text gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionSyntax {
    /// htslib's `hts_parse_region` with thousands separators: samtools
    /// view's regions without `-M`, depth's `-r`.
    Query,
    /// bedidx's `hts_parse_reg`: samtools view's regions with `-M`.
    MultiRegion,
}

impl Region {
    /// The regions `text` names, read as samtools 1.16 reads it (`syntax`)
    /// against the file's reference `names` (looked up as htslib's
    /// `sam_hdr_name2tid` does: an `@SQ SN:` name or an `AN:` alternative,
    /// none when htslib cannot parse the header): one region, or for `.`
    /// (the whole file) every reference whole, then the unplaced records.
    /// None where samtools says the text "specifies an invalid region or
    /// unknown reference" and goes on without it.
    ///
    /// ```
    /// use fasthts::region::{Region, RegionSyntax::{MultiRegion, Query}};
    /// use fasthts::sam::RefNames;
    /// let names = RefNames::of_names(["chr1", "chr2"]);
    /// let one = |r| Some(vec![r]);
    /// assert_eq!(Region::parse_samtools("chr2:1,001-2k", &names, Query), one(Region { ref_id: 1, start: 1000, end: 2000 }));
    /// // An end of 0 is the reference's end; with -M the text is no region.
    /// assert_eq!(Region::parse_samtools("chr2:100-0", &names, Query), one(Region { ref_id: 1, start: 99, end: i64::MAX }));
    /// assert_eq!(Region::parse_samtools("chr2:100-", &names, MultiRegion), None);
    /// assert_eq!(Region::parse_samtools("chr2:100-200x", &names, MultiRegion), one(Region { ref_id: 1, start: 99, end: 200 }));
    /// assert_eq!(Region::parse_samtools("chr2:100-200x", &names, Query), None);
    /// ```
    pub fn parse_samtools(text: &str, names: &RefNames, syntax: RegionSyntax) -> Option<Vec<Region>> {
        let lookup = |name: &[u8]| names.id(name);
        match text {
            "." => return Some((0..names.len() as i32).map(Region::whole).chain([Region::unplaced()]).collect()),
            "*" => return Some(vec![Region::unplaced()]),
            _ => {}
        }
        let (tid, beg, end) = match syntax {
            RegionSyntax::Query => query(text.as_bytes(), lookup)?,
            RegionSyntax::MultiRegion => multi_region(text.as_bytes(), lookup)?,
        };
        let end = if end == POS_MAX { i64::MAX } else { end };
        let region = match beg {
            None => Region { ref_id: tid, start: i64::MIN, end },
            Some(beg) => Region { ref_id: tid, start: beg.max(0), end },
        };
        Some(vec![region])
    }

    /// One region argument, as `samtools view FILE REGION` and `depth -r`
    /// read it ([`RegionSyntax::Query`]) against the file's reference
    /// `names`: one region, or for `.` every reference whole, then the
    /// unplaced records. Where samtools warns that the text "specifies an
    /// invalid region or unknown reference", an error in its words (the
    /// Python package's region strings).
    ///
    /// ```
    /// use fasthts::region::Region;
    /// use fasthts::sam::RefNames;
    /// let names = RefNames::of_names(["chr1", "chr:1"]);
    /// assert_eq!(Region::parse_query("chr1:0-5", &names)?, [Region { ref_id: 0, start: 0, end: 5 }]);
    /// assert_eq!(Region::parse_query("{chr:1}:5-9", &names)?, [Region { ref_id: 1, start: 4, end: 9 }]);
    /// assert_eq!(Region::parse_query(".", &names)?.len(), 3);
    /// let e = Region::parse_query("chr1:10-5", &names).unwrap_err();
    /// assert_eq!(e.to_string(), r#"region "chr1:10-5" specifies an invalid region or unknown reference"#);
    /// # Ok::<(), fasthts::Error>(())
    /// ```
    pub fn parse_query(text: &str, names: &RefNames) -> Result<Vec<Region>, crate::Error> {
        Region::parse_samtools(text, names, RegionSyntax::Query)
            .ok_or_else(|| crate::Error::InvalidArgument(format!("region \"{text}\" specifies an invalid region or unknown reference")))
    }
}

/// htslib's `hts_parse_region(text, .., 0)` as samtools faidx reads its
/// regions (`fai_parse_region`, thousands separators allowed): the
/// reference id `lookup` gives, the start as htslib leaves it (0-based; 0
/// for a whole reference, -1 for `chr1:0-5`) and the end (exclusive;
/// 2^63 − 2^31 − 1 when open). None where htslib finds no region. `.` and
/// `*` are names here, not view's whole file and unplaced reads.
///
/// ```
/// use fasthts::region::notation::hts_parse_region;
/// let lookup = |name: &[u8]| (name == b"chr1").then_some(0);
/// assert_eq!(hts_parse_region(b"chr1:1,001-2k", lookup), Some((0, 1000, 2000)));
/// assert_eq!(hts_parse_region(b"chr1:0-5", lookup), Some((0, -1, 5)));
/// assert_eq!(hts_parse_region(b"chr2", lookup), None);
/// ```
pub fn hts_parse_region(text: &[u8], lookup: impl Fn(&[u8]) -> Option<i32>) -> Option<(i32, i64, i64)> {
    let (tid, beg, end) = query(text, lookup)?;
    Some((tid, beg.unwrap_or(0), end))
}

/// A reference id, a start (None: the whole reference, from before its
/// first position) and an end, as htslib has them.
type Parsed = (i32, Option<i64>, i64);

/// htslib's `HTS_POS_MAX` (2^63 − 2^31 − 1, not `i64::MAX`): a region
/// running to the reference's end; a start past it is no region.
const POS_MAX: i64 = (i32::MAX as i64) << 32 | i32::MAX as i64;

/// `hts_parse_region(text, ..., HTS_PARSE_THOUSANDS_SEP)`.
fn query(s: &[u8], lookup: impl Fn(&[u8]) -> Option<i32>) -> Option<Parsed> {
    let (name, coords) = if s.first() == Some(&b'{') {
        let close = s.iter().position(|&c| c == b'}')?;
        if s.get(close + 1) == Some(&b':') {
            (&s[1..close], &s[close + 2..])
        } else {
            // htslib takes all but the first and last bytes as the name
            // (`{chr1}x` names "chr1}").
            return Some((lookup(&s[1..s.len() - 1])?, None, POS_MAX));
        }
    } else {
        let Some(colon) = s.iter().rposition(|&c| c == b':') else {
            return Some((lookup(s)?, None, POS_MAX));
        };
        if let Some(tid) = lookup(s) {
            // The whole text names a reference: unless what precedes the
            // colon does too (htslib: "range is ambiguous").
            return if lookup(&s[..colon]).is_some() { None } else { Some((tid, None, POS_MAX)) };
        }
        (&s[..colon], &s[colon + 1..])
    };
    let tid = lookup(name)?;
    let (first, after) = decimal(coords, true);
    let beg = first.wrapping_sub(1);
    let mut rest = &coords[after.unwrap_or(0)..];
    if beg < 0 {
        if beg != -1 && rest.first() == Some(&b'-') && !coords.is_empty() {
            return None; // "Coordinates must be > 0"
        }
        match rest.first() {
            // chr:-100 is chr:1-100.
            None | Some(b',') | Some(b'0'..=b'9') => {
                let end = if beg == -1 { POS_MAX } else { -(beg + 1) };
                return Some((tid, Some(0), end));
            }
            _ if beg < -1 => return None,
            _ => {}
        }
    }
    let mut end = match rest.first() {
        None => POS_MAX,
        Some(b'-') => {
            let (value, after) = decimal(&rest[1..], true);
            rest = &rest[1 + after.unwrap_or(0)..];
            if !matches!(rest.first(), None | Some(b',')) {
                return None; // "Unexpected string after region"
            }
            value
        }
        Some(_) => return None,
    };
    if end == 0 {
        end = POS_MAX; // chr:100- is chr:100-<end>
    }
    if beg >= end {
        return None;
    }
    Some((tid, Some(beg), end))
}

/// bedidx's `hts_parse_reg` (on `hts_parse_reg64`), then the name looked
/// up as `hts_itr_regions` does; text that does not parse is looked up
/// whole as a name.
fn multi_region(s: &[u8], lookup: impl Fn(&[u8]) -> Option<i32>) -> Option<Parsed> {
    const INT_MAX: i64 = i32::MAX as i64;
    let parsed = s.iter().rposition(|&c| c == b':').and_then(|colon| {
        let coords = &s[colon + 1..];
        let (first, after) = decimal(coords, true);
        let beg = first.wrapping_sub(1).max(0);
        let rest = &coords[after.unwrap_or(0)..];
        let end = match rest.first() {
            None => POS_MAX,
            // Junk after the end is ignored (with a warning); no digits at
            // all make an end of 0.
            Some(b'-') => decimal(&rest[1..], true).0,
            Some(_) => return None,
        };
        if beg >= end || beg > INT_MAX || (end > INT_MAX && end != POS_MAX) {
            return None;
        }
        Some((&s[..colon], beg, end.min(INT_MAX)))
    });
    match parsed {
        Some((name, beg, end)) => Some((lookup(name)?, Some(beg), end)),
        None => Some((lookup(s)?, Some(0), INT_MAX)),
    }
}

/// htslib's `hts_parse_decimal`: leading white space, a sign, digits
/// (commas among them skipped if `thousands`), a fraction, then an
/// exponent or a `k`/`m`/`g` multiplier; the fraction left over is
/// dropped. Returns the value (C's `long long` arithmetic, wrapping) and
/// where the number ends, None when there are no digits (htslib then
/// points at the text's start).
fn decimal(s: &[u8], thousands: bool) -> (i64, Option<usize>) {
    let mut i = s.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')).count();
    let negative = match s.get(i) {
        Some(&c @ (b'+' | b'-')) => {
            i += 1;
            c == b'-'
        }
        _ => false,
    };
    let (mut n, mut digits, mut decimals, mut e) = (0i64, 0, 0i32, 0i32);
    let push = |n: i64, c: u8| n.wrapping_mul(10).wrapping_add(i64::from(c - b'0'));
    while let Some(&c) = s.get(i) {
        match c {
            b'0'..=b'9' => {
                n = push(n, c);
                digits += 1;
            }
            b',' if thousands => {}
            _ => break,
        }
        i += 1;
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        while let Some(&c @ b'0'..=b'9') = s.get(i) {
            n = push(n, c);
            decimals += 1;
            digits += 1;
            i += 1;
        }
    }
    match s.get(i).map(u8::to_ascii_lowercase) {
        Some(b'e') => {
            i += 1;
            let negative_exponent = match s.get(i) {
                Some(&c @ (b'+' | b'-')) => {
                    i += 1;
                    c == b'-'
                }
                _ => false,
            };
            while let Some(&c @ b'0'..=b'9') = s.get(i) {
                e = e.wrapping_mul(10).wrapping_add(i32::from(c - b'0'));
                i += 1;
            }
            if negative_exponent {
                e = e.wrapping_neg();
            }
        }
        Some(b'k') => (e, i) = (e + 3, i + 1),
        Some(b'm') => (e, i) = (e + 6, i + 1),
        Some(b'g') => (e, i) = (e + 9, i + 1),
        _ => {}
    }
    let e = i64::from(e.wrapping_sub(decimals));
    // Past 64 multiplications by ten a wrapping value is 0 (10^64 is a
    // multiple of 2^64); past 19 divisions any value is.
    for _ in 0..e.clamp(0, 64) {
        n = n.wrapping_mul(10);
    }
    for _ in 0..(-e).clamp(0, 20) {
        n /= 10;
    }
    let value = if negative { n.wrapping_neg() } else { n };
    (value, (digits > 0).then_some(i))
}

#[cfg(test)]
mod tests {
    use super::RegionSyntax::{MultiRegion, Query};
    use super::*;

    const NAMES: [&str; 4] = ["chr1", "HLA:1-2", "chr2", "chr2:5"];

    fn one(ref_id: i32, start: i64, end: i64) -> Option<Vec<Region>> {
        Some(vec![Region { ref_id, start, end }])
    }

    fn names() -> RefNames {
        RefNames::of_names(NAMES)
    }

    fn query(text: &str) -> Option<Vec<Region>> {
        Region::parse_samtools(text, &names(), Query)
    }

    fn multi(text: &str) -> Option<Vec<Region>> {
        Region::parse_samtools(text, &names(), MultiRegion)
    }

    #[test]
    fn decimals_as_htslib() {
        assert_eq!(decimal(b"1,000", true), (1000, Some(5)));
        assert_eq!(decimal(b"1,000", false), (1, Some(1)));
        assert_eq!(decimal(b" -5x", true), (-5, Some(3)));
        assert_eq!(decimal(b"1.5k-", true), (1500, Some(4)));
        assert_eq!(decimal(b"2.25", true), (2, Some(4)));
        assert_eq!(decimal(b"3e4", true), (30000, Some(3)));
        assert_eq!(decimal(b"1e-2", true), (0, Some(4)));
        assert_eq!(decimal(b"x", true), (0, None));
        assert_eq!(decimal(b"-", true), (0, None));
        assert_eq!(decimal(b"", true), (0, None));
        assert_eq!(decimal(b"1e99", true).1, Some(4));
        // An exponent past i32 wraps as htslib's int does.
        assert_eq!(decimal(b"51e-2147483648", true).0, 0);
    }

    #[test]
    fn queries_as_hts_parse_region() {
        assert_eq!(query("chr2"), Some(vec![Region::whole(2)]));
        assert_eq!(query("chr2:"), one(2, 0, i64::MAX));
        assert_eq!(query("chr2:100"), one(2, 99, i64::MAX));
        assert_eq!(query("chr2:100-"), one(2, 99, i64::MAX));
        assert_eq!(query("chr2:100-0"), one(2, 99, i64::MAX));
        assert_eq!(query("chr2:-100"), one(2, 0, 100));
        assert_eq!(query("chr2:-"), one(2, 0, i64::MAX));
        assert_eq!(query("chr2:0-100"), one(2, 0, 100));
        assert_eq!(query("chr2:0"), one(2, 0, i64::MAX));
        assert_eq!(query("chr2: 1,000-2k"), one(2, 999, 2000));
        assert_eq!(query("chr2:1-1"), one(2, 0, 1));
        for bad in ["chr2:5-4", "chr2:100-200x", "chr2:x", "chr2:-5-10", "chr3", "chr3:1-5", "{chr2", "chr2:1-5-"] {
            assert_eq!(query(bad), None, "{bad}");
        }
        // Names holding a colon: whole first, then ambiguity, then braces.
        assert_eq!(query("HLA:1-2"), Some(vec![Region::whole(1)]));
        assert_eq!(query("HLA:1-2:5-6"), one(1, 4, 6));
        assert_eq!(query("chr2:5"), None); // both "chr2:5" and "chr2" are names
        assert_eq!(query("{chr2:5}"), Some(vec![Region::whole(3)]));
        assert_eq!(query("{chr2}:5"), one(2, 4, i64::MAX));
        assert_eq!(query("{chr2}x"), None);
        assert_eq!(query("*"), Some(vec![Region::unplaced()]));
        assert_eq!(query(".").map(|r| r.len()), Some(5));
    }

    /// htslib's own parsers, linked (libhts, as for CRAM).
    mod htslib {
        use crate::sam::RefNames;
        use std::ffi::{c_char, c_int, c_void, CStr};

        #[link(name = "hts")]
        extern "C" {
            pub fn hts_parse_region(
                s: *const c_char,
                tid: *mut c_int,
                beg: *mut i64,
                end: *mut i64,
                getid: unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int,
                hdr: *mut c_void,
                flags: c_int,
            ) -> *const c_char;
            pub fn hts_parse_reg(s: *const c_char, beg: *mut c_int, end: *mut c_int) -> *const c_char;
        }

        /// `getid` over a [`RefNames`].
        pub unsafe extern "C" fn getid(hdr: *mut c_void, name: *const c_char) -> c_int {
            // SAFETY: `hdr` is the `RefNames` the caller passed, alive for
            // the call; `name` is a C string.
            let names = unsafe { &*(hdr as *const RefNames) };
            let name = unsafe { CStr::from_ptr(name) }.to_bytes();
            names.id(name).unwrap_or(-1)
        }
    }

    /// htslib's answer for `text` as (tid, start clamped at 0, end), for
    /// either syntax (what view and depth then query).
    fn htslib(text: &str, syntax: RegionSyntax) -> Option<(i32, i64, i64)> {
        let c = std::ffi::CString::new(text).unwrap();
        let names = names();
        match syntax {
            Query => {
                let (mut tid, mut beg, mut end) = (0, 0i64, 0i64);
                let hdr = (&names as *const RefNames).cast_mut().cast();
                // SAFETY: valid pointers for the call; HTS_PARSE_THOUSANDS_SEP = 1.
                let q = unsafe { htslib::hts_parse_region(c.as_ptr(), &mut tid, &mut beg, &mut end, htslib::getid, hdr, 1) };
                (!q.is_null()).then_some((tid, beg.max(0), if end == POS_MAX { i64::MAX } else { end }))
            }
            MultiRegion => {
                let (mut beg, mut end) = (0, 0);
                // SAFETY: valid pointers for the call.
                let q = unsafe { htslib::hts_parse_reg(c.as_ptr(), &mut beg, &mut end) };
                let (name, beg, end) = if q.is_null() {
                    (text, 0, i64::from(i32::MAX))
                } else {
                    (&text[..q as usize - c.as_ptr() as usize], i64::from(beg), i64::from(end))
                };
                Some((names.id(name.as_bytes())?, beg, end))
            }
        }
    }

    /// Random region texts read by htslib 1.16 (the libhts linked for
    /// CRAM) and by [`Region::parse_samtools`] give the same regions.
    #[test]
    fn random_texts_are_read_as_htslib_reads_them() {
        crate::cram::quiet_htslib();
        let heads = ["chr1", "chr2", "HLA:1-2", "chr2:5", "chrZ", "{chr2}", "{chr2:5}", "{HLA:1-2}", "{chr1", "", "chr"];
        let pieces = [
            "",
            ":",
            "-",
            "1",
            "0",
            "100",
            "1,000",
            "2k",
            "1.5k",
            "3e4",
            "1e-1",
            "+5",
            "-7",
            " 12",
            "x",
            ",",
            "3000000000",
            "2147483647",
            "2147483648",
            "99999999999999999999",
            "1e",
            "5-",
            "k",
            ".",
            "}",
            "0-0",
            "10-5",
            "-0",
        ];
        let names = names();
        let mut rng = fasthts_testgen::rng::Rng::new(0x5eed);
        let mut pick = |n: usize| rng.below(n as u64) as usize;
        for _ in 0..200_000 {
            let mut text = heads[pick(heads.len())].to_string();
            if pick(4) > 0 {
                text.push(':');
            }
            for _ in 0..pick(5) {
                text.push_str(pieces[pick(pieces.len())]);
            }
            // htslib scales by its exponent one step at a time: 2^31 steps
            // take it seconds (the value is the same past 20 steps).
            let long_exponent =
                text.split(['e', 'E']).skip(1).any(|t| t.trim_start_matches(['+', '-']).bytes().take_while(u8::is_ascii_digit).count() > 3);
            if text == "." || text == "*" || long_exponent {
                continue;
            }
            for syntax in [Query, MultiRegion] {
                let ours = Region::parse_samtools(&text, &names, syntax).map(|r| {
                    assert_eq!(r.len(), 1, "{text:?}");
                    (r[0].ref_id, r[0].start.max(0), r[0].end)
                });
                assert_eq!(ours, htslib(&text, syntax), "{text:?} {syntax:?}");
            }
        }
    }

    #[test]
    fn alternative_names_as_sam_hdr_name2tid() {
        use crate::bam::{Header, Reference};
        let header = |text: &str| Header {
            text: text.as_bytes().to_vec(),
            references: ["chr1", "chr2"].iter().map(|n| Reference { name: n.to_string(), len: 100 }).collect(),
        };
        let names = RefNames::new(&header("@SQ\tSN:chr1\tLN:100\tAN:1,one\n@SQ\tSN:chr2\tLN:100\n"));
        for syntax in [Query, MultiRegion] {
            assert_eq!(Region::parse_samtools("one:5-9", &names, syntax), one(0, 4, 9), "{syntax:?}");
            assert_eq!(Region::parse_samtools("1:5-9", &names, syntax), one(0, 4, 9), "{syntax:?}");
            assert_eq!(Region::parse_samtools("two:5-9", &names, syntax), None, "{syntax:?}");
        }
        assert_eq!(Region::parse_samtools("{one}", &names, Query), Some(vec![Region::whole(0)]));
        // A header htslib's parser refuses (an @SQ without LN:) knows no name.
        let broken = RefNames::new(&header("@SQ\tSN:chr1\tLN:100\tAN:one\n@SQ\tSN:chr2\n"));
        assert_eq!(Region::parse_samtools("chr1:5-9", &broken, Query), None);
        assert_eq!(Region::parse_samtools("*", &broken, Query), Some(vec![Region::unplaced()]));
    }

    #[test]
    fn multi_regions_as_hts_parse_reg() {
        const INT_MAX: i64 = i32::MAX as i64;
        assert_eq!(multi("chr2"), one(2, 0, INT_MAX));
        assert_eq!(multi("chr2:100"), one(2, 99, INT_MAX));
        assert_eq!(multi("chr2:-100"), one(2, 0, INT_MAX));
        assert_eq!(multi("chr2:0-100"), one(2, 0, 100));
        assert_eq!(multi("chr2:100-200x"), one(2, 99, 200));
        assert_eq!(multi("chr2:1,000-2k"), one(2, 999, 2000));
        for skipped in ["chr2:100-", "chr2:-", "chr2:100-0", "chr2:5-4", "chr2:x", "chr2:3000000000", "chr2:1-3000000000", "chr3"] {
            assert_eq!(multi(skipped), None, "{skipped}");
        }
        // The name is what precedes the last colon; what does not parse is
        // looked up whole.
        assert_eq!(multi("HLA:1-2"), None);
        assert_eq!(multi("HLA:1-2:5-6"), one(1, 4, 6));
        assert_eq!(multi("chr2:5"), one(2, 4, INT_MAX));
        assert_eq!(multi("*"), Some(vec![Region::unplaced()]));
    }
}
