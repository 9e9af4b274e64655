//! samtools view's `-e` filter expressions: the subset evaluated exactly
//! as htslib 1.16's `hts_expr.c` and `sam.c` do.
//!
//! Supported: numbers (decimal, with fraction or exponent; `0x` hex),
//! strings in double quotes (`\"`, `\\`, `\t`, `\n`, `\r` escapes), the
//! record fields `flag`, `flag.paired` ... `flag.supplementary`, `mapq`,
//! `pos`, `endpos`, `mpos`, `pnext`, `tlen`, `ncigar`, `qlen`, `rlen`,
//! `sclen`, `refid`, `mrefid`, `rname`, `mrname`, `rnext`, `qname`,
//! `cigar`, `seq`, `qual` and tags `[XX]` (absent: undefined, false);
//! unary `!`, `-`, `+`; comparisons `<`, `<=`, `>`, `>=`, `==`, `!=`;
//! regular expressions `=~` and `!~` against a string (POSIX extended, by
//! the C library's `regcomp` as htslib); `&&`, `||` (one precedence, left
//! to right, as htslib) and parentheses. htslib's rules for undefined
//! values (absent tags) are followed: a comparison with one is undefined
//! and false, `!` of one is true.
//!
//! Refused, with one line naming what: arithmetic (`*`, `/`, `%`, binary
//! `+`/`-`), bitwise operators (`&`, `|`, `^`, `~`), functions (`length`,
//! `min`, `exists`, ...), `library`, and `B`-array tags.

use super::WidePositions;
use crate::bam::{CigarOp, RecordRef, Reference};
use crate::Error;
use std::borrow::Cow;
use std::ffi::CString;
use std::io::Write;

/// A parsed expression.
pub struct Expr {
    root: Node,
    text: String,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.text)
    }
}

impl Clone for Expr {
    fn clone(&self) -> Self {
        Expr::parse(&self.text).expect("parsed before")
    }
}

enum Node {
    Num(f64),
    Str(Vec<u8>),
    Sym(Sym),
    Neg(Box<Node>, bool),
    Not(Box<Node>),
    Cmp(CmpOp, Box<Node>, Box<Node>),
    Eq(bool, Box<Node>, Box<Node>),
    Match(bool, Box<Node>, Regex),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
}

#[derive(Clone, Copy)]
enum CmpOp {
    Ge,
    Gt,
    Le,
    Lt,
}

#[derive(Clone, Copy)]
enum Sym {
    Cigar,
    EndPos,
    Flag(u16),
    Mapq,
    MatePos,
    MateName,
    MateRefId,
    NCigar,
    Pos,
    QueryLen,
    QueryName,
    Qual,
    RefLen,
    RefName,
    RefId,
    Seq,
    SoftClipLen,
    TemplateLen,
    Tag([u8; 2]),
}

/// A compiled POSIX extended regular expression (`regcomp`, as htslib).
struct Regex(Box<libc::regex_t>);

// SAFETY: glibc's regexec on a compiled pattern may be called from several
// threads at once (it locks what it shares); the pattern is never changed
// after regcomp and freed once, on drop.
unsafe impl Send for Regex {}
unsafe impl Sync for Regex {}

impl Regex {
    fn new(pattern: &[u8]) -> Result<Regex, String> {
        let c = CString::new(pattern).map_err(|_| "a regular expression holds a NUL".to_string())?;
        // SAFETY: regex_t is plain data that regcomp fills in.
        let mut re: Box<libc::regex_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `re` and `c` are valid for the call.
        let rc = unsafe { libc::regcomp(&mut *re, c.as_ptr(), libc::REG_EXTENDED | libc::REG_NOSUB) };
        if rc != 0 {
            let mut buf = [0u8; 256];
            // SAFETY: regerror writes at most buf.len() bytes, NUL-terminated.
            unsafe { libc::regerror(rc, &*re, buf.as_mut_ptr().cast(), buf.len()) };
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return Err(format!("failed regex: {}", String::from_utf8_lossy(&buf[..end])));
        }
        Ok(Regex(re))
    }

    fn is_match(&self, text: &[u8]) -> bool {
        // A C string ends at the first NUL.
        let text = &text[..text.iter().position(|&c| c == 0).unwrap_or(text.len())];
        // glibc's REG_STARTEND bounds the text by pmatch[0] instead of a
        // NUL (so no copy per record), and reads it even under REG_NOSUB.
        let mut bounds = libc::regmatch_t { rm_so: 0, rm_eo: text.len() as libc::regoff_t };
        let start: *const u8 = if text.is_empty() { b"\0".as_ptr() } else { text.as_ptr() };
        // SAFETY: the pattern was compiled by regcomp; regexec reads the
        // text from rm_so to rm_eo, within the slice (or the NUL).
        unsafe { libc::regexec(&*self.0, start.cast(), 1, &mut bounds, libc::REG_STARTEND) == 0 }
    }
}

impl Drop for Regex {
    fn drop(&mut self) {
        // SAFETY: compiled by regcomp, freed once.
        unsafe { libc::regfree(&mut *self.0) };
    }
}

/// What an evaluation reads besides the record.
struct Scope<'a> {
    /// The header's references, for their names.
    names: &'a [Reference],
    /// The record's positions, when past its 32-bit fields.
    wide: Option<WidePositions>,
}

/// htslib's `hts_expr_val_t`.
#[derive(Clone, Debug, Default)]
struct Val<'a> {
    is_str: bool,
    is_true: bool,
    /// Borrowed from the record, header or expression where it can be:
    /// evaluation runs once per record.
    s: Option<Cow<'a, [u8]>>,
    d: f64,
}

impl<'a> Val<'a> {
    fn num(d: f64) -> Val<'a> {
        Val { d, ..Val::default() }
    }
    fn string(s: impl Into<Cow<'a, [u8]>>) -> Val<'a> {
        Val { is_str: true, s: Some(s.into()), ..Val::default() }
    }
    fn exists(&self) -> bool {
        !(self.is_str && self.s.is_none()) && !(!self.is_str && self.d.is_nan())
    }
    fn exists_t(&self) -> bool {
        self.is_true || self.exists()
    }
    fn undef(&mut self) {
        self.is_true = false;
        self.is_str = false;
        self.d = f64::NAN;
    }
    fn truthy(&self) -> bool {
        self.is_true || (self.is_str && self.s.is_some()) || self.d != 0.0
    }
}

/// A parse failure: what is wrong, where.
fn refuse(text: &str, at: usize, what: &str) -> Error {
    Error::InvalidArgument(format!("-e {text:?}: {what} at {:?}", &text[at.min(text.len())..]))
}

struct Parser<'t> {
    text: &'t str,
    b: &'t [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.b.len() && self.b[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn peek(&self, n: usize) -> u8 {
        self.b.get(self.at + n).copied().unwrap_or(0)
    }
    fn err(&self, what: &str) -> Error {
        refuse(self.text, self.at, what)
    }

    fn expression(&mut self) -> Result<Node, Error> {
        let mut left = self.eq()?;
        loop {
            self.ws();
            let (c0, c1) = (self.peek(0), self.peek(1));
            if c0 == b'&' && c1 == b'&' {
                self.at += 2;
                left = Node::And(Box::new(left), Box::new(self.eq()?));
            } else if c0 == b'|' && c1 == b'|' {
                self.at += 2;
                left = Node::Or(Box::new(left), Box::new(self.eq()?));
            } else {
                return Ok(left);
            }
        }
    }

    fn eq(&mut self) -> Result<Node, Error> {
        let left = self.cmp()?;
        self.ws();
        let (c0, c1) = (self.peek(0), self.peek(1));
        match (c0, c1) {
            (b'=', b'=') | (b'!', b'=') => {
                self.at += 2;
                let right = self.eq()?;
                Ok(Node::Eq(c0 == b'!', Box::new(left), Box::new(right)))
            }
            (b'=', b'~') | (b'!', b'~') => {
                self.at += 2;
                self.ws();
                let start = self.at;
                let right = self.eq()?;
                let Node::Str(pattern) = right else {
                    return Err(refuse(self.text, start, "a regular expression must be a string literal here"));
                };
                let re = Regex::new(&pattern).map_err(|e| refuse(self.text, start, &e))?;
                Ok(Node::Match(c0 == b'!', Box::new(left), re))
            }
            _ => Ok(left),
        }
    }

    fn cmp(&mut self) -> Result<Node, Error> {
        let left = self.operand()?;
        self.ws();
        let (op, len) = match (self.peek(0), self.peek(1)) {
            (b'>', b'=') => (CmpOp::Ge, 2),
            (b'>', _) => (CmpOp::Gt, 1),
            (b'<', b'=') => (CmpOp::Le, 2),
            (b'<', _) => (CmpOp::Lt, 1),
            _ => return Ok(left),
        };
        self.at += len;
        let right = self.cmp()?;
        Ok(Node::Cmp(op, Box::new(left), Box::new(right)))
    }

    /// htslib's bitor/bitxor/bitand/add/mul levels, of which only their
    /// single operand is supported.
    fn operand(&mut self) -> Result<Node, Error> {
        let node = self.unary()?;
        self.ws();
        let (c0, c1) = (self.peek(0), self.peek(1));
        let unsupported = match c0 {
            b'*' | b'/' | b'%' | b'+' | b'-' => "arithmetic is not supported",
            b'&' if c1 != b'&' => "bitwise operators are not supported",
            b'|' if c1 != b'|' => "bitwise operators are not supported",
            b'^' => "bitwise operators are not supported",
            _ => return Ok(node),
        };
        Err(self.err(unsupported))
    }

    fn unary(&mut self) -> Result<Node, Error> {
        self.ws();
        match self.peek(0) {
            c @ (b'+' | b'-') => {
                self.at += 1;
                Ok(Node::Neg(Box::new(self.simple()?), c == b'-'))
            }
            b'!' => {
                self.at += 1;
                Ok(Node::Not(Box::new(self.unary()?)))
            }
            b'~' => Err(self.err("bitwise operators are not supported")),
            _ => self.simple(),
        }
    }

    fn simple(&mut self) -> Result<Node, Error> {
        self.ws();
        if self.peek(0) == b'(' {
            self.at += 1;
            let node = self.expression()?;
            self.ws();
            if self.peek(0) != b')' {
                return Err(self.err("missing ')'"));
            }
            self.at += 1;
            return Ok(node);
        }
        if let Some(n) = self.number() {
            return Ok(Node::Num(n));
        }
        if self.peek(0) == b'"' {
            return self.string();
        }
        self.symbol()
    }

    fn number(&mut self) -> Option<f64> {
        let rest = &self.b[self.at..];
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            let n = rest[2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
            if n > 0 {
                self.at += 2 + n;
                return Some(u64::from_str_radix(std::str::from_utf8(&rest[2..2 + n]).ok()?, 16).ok()? as f64);
            }
        }
        let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
        let mut n = digits(rest);
        if rest.get(n) == Some(&b'.') {
            let frac = digits(&rest[n + 1..]);
            if n + frac == 0 {
                return None;
            }
            n += 1 + frac;
        }
        if n == 0 {
            return None;
        }
        if matches!(rest.get(n), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(rest.get(n + 1), Some(b'+' | b'-')));
            let e = digits(&rest[n + 1 + sign..]);
            if e > 0 {
                n += 1 + sign + e;
            }
        }
        let value = std::str::from_utf8(&rest[..n]).ok()?.parse().ok()?;
        self.at += n;
        Some(value)
    }

    fn string(&mut self) -> Result<Node, Error> {
        let start = self.at;
        self.at += 1;
        let mut out = Vec::new();
        while self.at < self.b.len() && self.b[self.at] != b'"' {
            let c = self.b[self.at];
            if c == b'\\' && self.at + 1 < self.b.len() {
                let e = self.b[self.at + 1];
                match e {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b't' => out.push(b'\t'),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    other => out.extend_from_slice(&[b'\\', other]),
                }
                self.at += 2;
            } else {
                out.push(c);
                self.at += 1;
            }
        }
        if self.peek(0) != b'"' {
            return Err(refuse(self.text, start, "unterminated string"));
        }
        self.at += 1;
        Ok(Node::Str(out))
    }

    fn symbol(&mut self) -> Result<Node, Error> {
        let rest = &self.b[self.at..];
        if rest.len() >= 4 && rest[0] == b'[' && rest[1] != 0 && rest[2] != 0 && rest[3] == b']' {
            self.at += 4;
            return Ok(Node::Sym(Sym::Tag([rest[1], rest[2]])));
        }
        const FLAGS: [(&str, u16); 12] = [
            ("paired", 0x1),
            ("proper_pair", 0x2),
            ("unmap", 0x4),
            ("munmap", 0x8),
            ("reverse", 0x10),
            ("mreverse", 0x20),
            ("read1", 0x40),
            ("read2", 0x80),
            ("secondary", 0x100),
            ("qcfail", 0x200),
            ("dup", 0x400),
            ("supplementary", 0x800),
        ];
        if rest.starts_with(b"flag") {
            self.at += 4;
            if self.peek(0) != b'.' {
                return Ok(Node::Sym(Sym::Flag(0xffff)));
            }
            self.at += 1;
            let rest = &self.b[self.at..];
            for (name, bit) in FLAGS {
                if rest.starts_with(name.as_bytes()) {
                    self.at += name.len();
                    return Ok(Node::Sym(Sym::Flag(bit)));
                }
            }
            return Err(self.err("unrecognised flag string"));
        }
        // In htslib's order, names matched as prefixes.
        const NAMES: [(&str, Sym); 19] = [
            ("cigar", Sym::Cigar),
            ("endpos", Sym::EndPos),
            ("mapq", Sym::Mapq),
            ("mpos", Sym::MatePos),
            ("mrname", Sym::MateName),
            ("mrefid", Sym::MateRefId),
            ("ncigar", Sym::NCigar),
            ("pos", Sym::Pos),
            ("pnext", Sym::MatePos),
            ("qlen", Sym::QueryLen),
            ("qname", Sym::QueryName),
            ("qual", Sym::Qual),
            ("rlen", Sym::RefLen),
            ("rname", Sym::RefName),
            ("rnext", Sym::MateName),
            ("refid", Sym::RefId),
            ("seq", Sym::Seq),
            ("sclen", Sym::SoftClipLen),
            ("tlen", Sym::TemplateLen),
        ];
        for (name, sym) in NAMES {
            if rest.starts_with(name.as_bytes()) {
                self.at += name.len();
                return Ok(Node::Sym(sym));
            }
        }
        if rest.starts_with(b"library") {
            return Err(self.err("library is not supported"));
        }
        if rest.first().is_some_and(u8::is_ascii_alphabetic) {
            return Err(self.err("functions and this name are not supported"));
        }
        Err(self.err("unexpected text"))
    }
}

impl Expr {
    /// Parses `text`, refusing what is outside the supported subset (see
    /// the module's documentation) with one line saying what.
    pub fn parse(text: &str) -> Result<Expr, Error> {
        let mut p = Parser { text, b: text.as_bytes(), at: 0 };
        let root = p.expression()?;
        p.ws();
        if p.at < p.b.len() {
            return Err(p.err("unable to parse the expression"));
        }
        Ok(Expr { root, text: text.to_string() })
    }

    /// Whether `r` passes, as htslib's `sam_passes_filter` returns 1;
    /// `ref_names` are the header's reference names. A record the
    /// expression cannot be evaluated on (a `B`-array tag) does not pass.
    /// `wide`: the record's positions when they do not fit its 32-bit
    /// fields (a SAM record past 2^31).
    pub fn passes(&self, r: &RecordRef<'_>, ref_names: &[Reference], wide: Option<WidePositions>) -> bool {
        let scope = Scope { names: ref_names, wide };
        let Ok(v) = eval(&self.root, r, &scope) else { return false };
        if v.is_str {
            v.is_true || v.s.is_some()
        } else {
            v.is_true || (v.exists() && v.d != 0.0)
        }
    }
}

fn name_of(tid: i32, names: &[Reference]) -> &[u8] {
    usize::try_from(tid).ok().and_then(|t| names.get(t)).map_or(b"*", |n| n.name.as_bytes())
}

fn lookup<'a>(sym: Sym, r: &'a RecordRef<'_>, scope: &'a Scope<'a>) -> Result<Val<'a>, ()> {
    let names = scope.names;
    let cigar = r.cigar();
    // A record past 2^31 has its positions beside its 32-bit fields.
    let (pos, mate_pos, template_len) = match scope.wide {
        Some(w) => (w.pos, w.mate_pos, w.template_len),
        None => (i64::from(r.pos()), i64::from(r.mate_pos()), i64::from(r.template_len())),
    };
    Ok(match sym {
        Sym::Cigar => {
            let mut s = Vec::new();
            if cigar.is_empty() {
                s.push(b'*');
            }
            for (op, len) in cigar.iter() {
                // Writing to a Vec cannot fail.
                let _ = write!(s, "{len}{}", op.letter() as char);
            }
            Val::string(s)
        }
        Sym::EndPos => Val::num((r.end_pos() - i64::from(r.pos()) + pos) as f64),
        Sym::Flag(mask) => Val::num(f64::from(r.flag() & mask)),
        Sym::Mapq => Val::num(f64::from(r.mapq())),
        Sym::MatePos => Val::num(mate_pos as f64 + 1.0),
        Sym::MateName => Val::string(name_of(r.mate_ref_id(), names)),
        Sym::MateRefId => Val::num(f64::from(r.mate_ref_id())),
        Sym::NCigar => Val::num(r.cigar().len() as f64),
        Sym::Pos => Val::num(pos as f64 + 1.0),
        Sym::QueryLen => Val::num(cigar.query_len() as f64),
        Sym::QueryName => Val::string(r.name()),
        Sym::Qual => Val::string(r.qual()),
        Sym::RefLen => Val::num(cigar.reference_len() as f64),
        Sym::RefName => Val::string(name_of(r.ref_id(), names)),
        Sym::RefId => Val::num(f64::from(r.ref_id())),
        Sym::Seq => Val::string((0..r.seq_len()).map(|i| r.base(i)).collect::<Vec<u8>>()),
        Sym::SoftClipLen => {
            let n = cigar.len();
            let op = |i: usize| cigar.get(i).unwrap_or((CigarOp::Match, 0));
            let mut len = 0;
            let mut left = 0;
            if n > 0 && op(0).0 == CigarOp::SoftClip {
                len += op(0).1;
            } else if n > 1 && op(0).0 == CigarOp::HardClip && op(1).0 == CigarOp::SoftClip {
                left = 1;
                len += op(1).1;
            }
            if n >= 1 && n - 1 > left && op(n - 1).0 == CigarOp::SoftClip {
                len += op(n - 1).1;
            } else if n >= 2 && n - 2 > left && op(n - 1).0 == CigarOp::HardClip && op(n - 2).0 == CigarOp::SoftClip {
                len += op(n - 2).1;
            }
            Val::num(f64::from(len))
        }
        Sym::TemplateLen => Val::num(template_len as f64),
        Sym::Tag(tag) => {
            let aux = r.aux_bytes();
            let Some(at) = super::find_tag(aux, tag) else {
                return Ok(Val { is_str: true, s: None, ..Val::default() });
            };
            let (kind, value) = (aux[at + 2], &aux[at + 3..]);
            let le = |n: usize| value.get(..n).ok_or(());
            let mut v = match kind {
                b'Z' | b'H' => Val::string(&value[..value.iter().position(|&c| c == 0).unwrap_or(value.len())]),
                b'A' => Val::string(value.get(..1).ok_or(())?),
                b'c' => Val::num(f64::from(*value.first().ok_or(())? as i8)),
                b'C' => Val::num(f64::from(*value.first().ok_or(())?)),
                b's' => Val::num(f64::from(i16::from_le_bytes(le(2)?.try_into().map_err(|_| ())?))),
                b'S' => Val::num(f64::from(u16::from_le_bytes(le(2)?.try_into().map_err(|_| ())?))),
                b'i' => Val::num(f64::from(i32::from_le_bytes(le(4)?.try_into().map_err(|_| ())?))),
                b'I' => Val::num(f64::from(u32::from_le_bytes(le(4)?.try_into().map_err(|_| ())?))),
                b'f' => Val::num(f64::from(f32::from_le_bytes(le(4)?.try_into().map_err(|_| ())?))),
                b'd' => Val::num(f64::from_le_bytes(le(8)?.try_into().map_err(|_| ())?)),
                _ => return Err(()),
            };
            v.is_true = true;
            v
        }
    })
}

/// C's `strcmp`: up to the first NUL.
fn strcmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    fn cut(s: &[u8]) -> &[u8] {
        &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
    }
    cut(a).cmp(cut(b))
}

fn eval<'a>(node: &'a Node, r: &'a RecordRef<'_>, scope: &'a Scope<'a>) -> Result<Val<'a>, ()> {
    Ok(match node {
        Node::Num(d) => Val::num(*d),
        Node::Str(s) => Val::string(s.as_slice()),
        Node::Sym(sym) => lookup(*sym, r, scope)?,
        Node::Neg(inner, negate) => {
            let mut v = eval(inner, r, scope)?;
            if !v.exists() {
                v.undef();
            } else {
                if v.is_str {
                    return Err(());
                }
                if *negate {
                    v.d = -v.d;
                }
                v.is_true = v.d != 0.0;
            }
            v
        }
        Node::Not(inner) => {
            let mut v = eval(inner, r, scope)?;
            if v.is_true {
                v.d = 0.0;
                v.is_true = false;
            } else if !v.exists() {
                v.is_true = !v.is_true;
                v.d = f64::from(u8::from(v.is_true));
            } else if v.is_str {
                v.is_true = v.s.is_none();
                v.d = f64::from(u8::from(v.is_true));
            } else {
                v.d = f64::from(u8::from(v.d as i64 == 0));
                v.is_true = v.d != 0.0;
            }
            v.is_str = false;
            v
        }
        Node::Cmp(op, left, right) => {
            let mut res = eval(left, r, scope)?;
            let val = eval(right, r, scope)?;
            if !res.exists() || !val.exists() {
                res.undef();
            } else {
                let t = match (&res.s, &val.s) {
                    (Some(a), Some(b)) if res.is_str && val.is_str => {
                        let o = strcmp(a, b);
                        match op {
                            CmpOp::Ge => o.is_ge(),
                            CmpOp::Gt => o.is_gt(),
                            CmpOp::Le => o.is_le(),
                            CmpOp::Lt => o.is_lt(),
                        }
                    }
                    _ => {
                        !res.is_str
                            && !val.is_str
                            && match op {
                                CmpOp::Ge => res.d >= val.d,
                                CmpOp::Gt => res.d > val.d,
                                CmpOp::Le => res.d <= val.d,
                                CmpOp::Lt => res.d < val.d,
                            }
                    }
                };
                res.is_true = t;
                res.d = f64::from(u8::from(t));
                res.is_str = false;
            }
            res
        }
        Node::Eq(not, left, right) => {
            let mut res = eval(left, r, scope)?;
            let val = eval(right, r, scope)?;
            if !res.exists() || !val.exists() {
                res.undef();
            } else {
                let t = if res.is_str {
                    match (&res.s, &val.s) {
                        (Some(a), Some(b)) => strcmp(a, b).is_eq() != *not,
                        _ => *not,
                    }
                } else if *not {
                    res.is_str != val.is_str || res.d != val.d
                } else {
                    !val.is_str && res.d == val.d
                };
                res.is_true = t;
                res.d = f64::from(u8::from(t));
            }
            res.is_str = false;
            if !val.exists() || !res.exists() {
                res.undef();
            }
            res
        }
        Node::Match(not, left, re) => {
            let mut res = eval(left, r, scope)?;
            if !res.is_str {
                return Err(());
            }
            match &res.s {
                Some(s) => {
                    let matched = re.is_match(s);
                    res.is_true = matched != *not;
                    res.d = f64::from(u8::from(res.is_true));
                }
                None => res.is_true = false,
            }
            res.is_str = false;
            if !res.exists() {
                res.undef();
            }
            res
        }
        Node::And(left, right) => {
            let mut res = eval(left, r, scope)?;
            let val = eval(right, r, scope)?;
            if !res.exists_t() || !val.exists_t() {
                res.undef();
                res.d = 0.0;
            } else {
                res.is_true = res.truthy() && val.truthy();
                res.d = f64::from(u8::from(res.is_true));
                res.is_str = false;
            }
            res
        }
        Node::Or(left, right) => {
            let mut res = eval(left, r, scope)?;
            let val = eval(right, r, scope)?;
            if (!res.exists_t() && !val.exists_t()) || (!res.exists_t() && !val.truthy()) || (!val.exists_t() && !res.truthy()) {
                res.undef();
                res.d = 0.0;
            } else {
                res.is_true = res.truthy() || val.truthy();
                res.d = f64::from(u8::from(res.is_true));
                res.is_str = false;
            }
            res
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_it_cannot_do_exactly() {
        for (text, what) in [
            ("mapq * 2 > 10", "arithmetic"),
            ("flag & 4", "bitwise"),
            ("length(seq) > 5", "functions"),
            ("library == \"x\"", "library"),
            ("mapq > ", "unexpected"),
            ("(mapq > 5", "missing ')'"),
            ("flag.nope", "unrecognised flag"),
            ("qname =~ rname", "string literal"),
        ] {
            let e = Expr::parse(text).unwrap_err().to_string();
            assert!(e.contains(what), "{text}: {e}");
        }
        for text in ["mapq >= 30 && !flag.dup", "[NM] == 0 || rname == \"chr1\"", "qname =~ \"^r1[0-9]+\"", "-pos < -5", "!([XX])"] {
            Expr::parse(text).unwrap();
        }
    }
}
