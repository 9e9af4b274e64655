//! samtools view's `-e` filter expressions, evaluated as htslib 1.16's
//! `hts_expr.c` and `sam.c` (`bam_sym_lookup`) evaluate them.
//!
//! The language, by precedence (loosest first): `&&` and `||` (one level,
//! left to right); `==`, `!=`, `=~`, `!~` (right to left); `<`, `<=`, `>`,
//! `>=` (right to left); `|`; `^`; `&`; binary `+`, `-`; `*`, `/`, `%`;
//! unary `+`, `-` (of a value), `!`, `~` (of a unary expression); values:
//! numbers (anything C's `strtod` reads: `12`, `1.5e3`, `.5`, `0x1f`,
//! `0x1p-2`, `inf`, `nan`), strings in double quotes (`\"`, `\\`, `\t`,
//! `\n`, `\r`; another backslash stays), the record's fields (`flag`,
//! `flag.paired` ... `flag.supplementary`, `mapq`, `pos`, `endpos`, `mpos`,
//! `pnext`, `tlen`, `ncigar`, `qlen`, `rlen`, `sclen`, `refid`, `mrefid`,
//! `rname`, `mrname`, `rnext`, `qname`, `cigar`, `seq`, `qual`, `library`),
//! tags `[XX]`, parentheses, and the functions `length`, `min`, `max`,
//! `avg` (of a string's bytes), `exists`, `default(a, b)`, `exp`, `log`,
//! `sqrt`, `pow(a, b)`.
//!
//! htslib parses as it evaluates, writing each result over a value that
//! may hold an earlier one (a string's buffer, a number, an `is_true`
//! flag), and its answers depend on those leftovers: `1 + [NM] + !mapq`
//! sees [NM]'s "true" under `!mapq`, `qname == length(qname)` compares the
//! name with the buffer `length` left behind, `[XX] % 3` (absent) is
//! `INT64_MIN % 3`. So the expression is parsed once into a tree shaped as
//! htslib's functions call one another, and evaluated over values kept the
//! way htslib keeps them (an evaluation's locals where htslib has them).
//!
//! What htslib fails on for a record (arithmetic on a string, `=~` on a
//! number, `length` of a number, a `B`-array tag) leaves that record out
//! (samtools prints an error for each and goes on); the failures are
//! counted for one warning. What fails on every record (bad syntax, a
//! regular expression that does not compile: samtools then crashes) is
//! refused when parsed, with one line naming the problem.
//!
//! Not mirrored: htslib keeps each regular expression compiled in a slot
//! numbered by the order the matches happen in a record, so when a match
//! is skipped (its string is an absent tag) a later one runs with the
//! skipped one's pattern, and a pattern taken from a record is the first
//! record's for good. samtools' answer then depends on which records come
//! first. A pattern must be a string literal (refused otherwise), and a
//! match that htslib would run with another pattern fails the run
//! ([`Expr::fatal`]; matches with one pattern, or with every tag there,
//! never do). `%` by a number that truncates to 0 (and `INT64_MIN % -1`)
//! kills samtools with SIGFPE; it fails the run too.

use super::WidePositions;
use crate::bam::{CigarOp, RecordRef, Reference};
use crate::Error;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// A parsed expression.
pub struct Expr {
    text: String,
    root: Node,
    /// The `=~`/`!~` patterns, compiled, in the order their matches finish
    /// (htslib's slot order when no match is skipped).
    regexes: Vec<Regex>,
    /// Each pattern's first index among equal ones.
    pattern_ids: Vec<usize>,
    /// Whether `cigar` or `seq` is used: their text is built per record.
    needs_cigar: bool,
    needs_seq: bool,
    /// `@RG` ID to `LB` (`library`), from [`Expr::with_header`].
    libraries: HashMap<Vec<u8>, Vec<u8>>,
    /// Records the expression failed on, and the first failure's kind.
    failures: AtomicU64,
    first_failure: AtomicU8,
    /// What made samtools' answer unknowable, when something did: a match
    /// htslib runs with another pattern, a `%` samtools dies of.
    fatal: AtomicU8,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.text)
    }
}

impl Clone for Expr {
    fn clone(&self) -> Self {
        // The compiled regular expressions cannot be copied; the text
        // parsed before parses again.
        let mut e = Expr::parse(&self.text).expect("parsed before");
        e.libraries = self.libraries.clone();
        e
    }
}

/// One of htslib's parsing functions, as called on this text. A chain
/// with one operand is that operand.
enum Node {
    Num(f64),
    Str(Vec<u8>),
    Sym(Sym),
    /// `FUNC(a)` or `FUNC(a, b)`.
    Func(Func, Box<Node>, Option<Box<Node>>),
    /// Unary `+` (false) or `-` (true) of a simple expression.
    Sign(bool, Box<Node>),
    Not(Box<Node>),
    BitNot(Box<Node>),
    Mul(Box<Node>, Vec<(MulOp, Node)>),
    /// Binary `+` (false) and `-` (true).
    Add(Box<Node>, Vec<(bool, Node)>),
    Bits(BitOp, Box<Node>, Vec<Node>),
    Cmp(CmpOp, Box<Node>, Box<Node>),
    /// `==` (false) or `!=` (true).
    Eq(bool, Box<Node>, Box<Node>),
    /// `=~` (false) or `!~` (true) against the pattern `regexes[i]`.
    Match(bool, Box<Node>, usize),
    /// `&&` (false) and `||` (true).
    Logic(Box<Node>, Vec<(bool, Node)>),
}

#[derive(Clone, Copy)]
enum Func {
    Avg,
    Default,
    Exists,
    Exp,
    Length,
    Log,
    Max,
    Min,
    Pow,
    Sqrt,
}

#[derive(Clone, Copy)]
enum MulOp {
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy)]
enum BitOp {
    And,
    Xor,
    Or,
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
    Library,
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

/// Why an evaluation failed on a record (samtools: "Couldn't process
/// filter expression" for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Fail {
    StringArithmetic = 1,
    MatchNotString,
    FunctionOfNumber,
    ArrayTag,
    /// `%` as samtools dies of (fatal).
    DivisionByZero,
    /// htslib would match with another match's pattern here (fatal).
    SlotSwapped,
}

impl Fail {
    fn from_u8(n: u8) -> Option<Fail> {
        [Fail::StringArithmetic, Fail::MatchNotString, Fail::FunctionOfNumber, Fail::ArrayTag, Fail::DivisionByZero, Fail::SlotSwapped]
            .into_iter()
            .find(|f| *f as u8 == n)
    }

    fn describe(self) -> &'static str {
        match self {
            Fail::StringArithmetic => "arithmetic or a bitwise operator on a string",
            Fail::MatchNotString => "=~ or !~ on a value that is not a string",
            Fail::FunctionOfNumber => "length, min, max or avg of a number",
            Fail::ArrayTag => "a B-array tag",
            Fail::DivisionByZero => "% by a number that truncates to 0 (or INT64_MIN % -1), of which samtools 1.16 dies (SIGFPE)",
            Fail::SlotSwapped => {
                "a regular expression match ran where htslib 1.16 uses another match's pattern (a match on an absent tag \
                 before it takes no slot), so samtools' answer depends on the records' order; not mirrored \
                 (default([XX], \"\") makes an absent tag an empty string)"
            }
        }
    }
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
        let text = c_str(text);
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

/// The bytes of `s` a C string function sees: up to the first NUL.
fn c_str(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]
}

/// C's `(int64_t)d` as x86-64 computes it (cvttsd2si): NaN and values out
/// of range give INT64_MIN. (htslib's casts of NaN are undefined in C;
/// this is what samtools built for x86-64 does.)
#[cfg(target_arch = "x86_64")]
fn c_i64(d: f64) -> i64 {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(int64_t)d` as other targets compute it (saturating; NaN 0).
#[cfg(not(target_arch = "x86_64"))]
fn c_i64(d: f64) -> i64 {
    d as i64
}

/// A kstring's state: `None` is a NULL buffer (an absent tag's "null"
/// string); `bytes` are what C string functions see, `len` is `s.l`
/// (emptied without rewriting, the old bytes stay where `strcmp` and
/// `regexec` read them, as in a `ks_clear`ed buffer).
#[derive(Clone, Copy)]
struct Text<'a> {
    bytes: &'a [u8],
    len: usize,
}

impl Text<'_> {
    /// The bytes up to `s.l`, which `length`, `min`, `max` and `avg` read.
    fn data(&self) -> &[u8] {
        &self.bytes[..self.len.min(self.bytes.len())]
    }
}

/// htslib's `hts_expr_val_t`. Copied by value: evaluation allocates
/// nothing (strings borrow from the record, header, expression or the
/// per-thread text of `cigar` and `seq`).
#[derive(Clone, Copy)]
struct Val<'a> {
    is_str: bool,
    is_true: bool,
    s: Option<Text<'a>>,
    d: f64,
}

impl<'a> Val<'a> {
    /// `HTS_EXPR_VAL_INIT`.
    const INIT: Val<'static> = Val { is_str: false, is_true: false, s: None, d: 0.0 };

    /// `hts_expr_val_exists`.
    fn exists(&self) -> bool {
        // A NULL string or a NaN number is undefined.
        if self.is_str {
            self.s.is_some()
        } else {
            !self.d.is_nan()
        }
    }
    /// `hts_expr_val_existsT`.
    fn exists_t(&self) -> bool {
        self.is_true || self.exists()
    }
    /// `hts_expr_val_undef`.
    fn undef(&mut self) {
        self.clear();
        self.is_true = false;
        self.is_str = false;
        self.d = f64::NAN;
    }
    /// `ks_clear`: the length only.
    fn clear(&mut self) {
        if let Some(t) = &mut self.s {
            t.len = 0;
        }
    }
    /// `kputs` and the like: the buffer now holds `bytes`.
    fn put(&mut self, bytes: &'a [u8]) {
        self.s = Some(Text { bytes, len: bytes.len() });
    }
    /// What `&&` and `||` take as true.
    fn truthy(&self) -> bool {
        self.is_true || (self.is_str && self.s.is_some()) || self.d != 0.0
    }
    fn set_bool(&mut self, t: bool) {
        self.is_true = t;
        self.d = f64::from(u8::from(t));
    }
}

/// A parse failure: what is wrong, where.
fn refuse(text: &str, at: usize, what: &str) -> Error {
    Error::InvalidArgument(format!("-e {text:?}: {what} at {:?}", text.get(at.min(text.len())..).unwrap_or("")))
}

/// Nesting past this is refused (htslib would recurse until its stack
/// overflows).
const MAX_DEPTH: usize = 400;

struct Parser<'t> {
    text: &'t str,
    b: &'t [u8],
    /// `b` NUL-terminated, for `strtod`.
    c: CString,
    at: usize,
    depth: usize,
    /// Each `=~`/`!~`'s pattern, in the order the matches finish.
    patterns: Vec<Vec<u8>>,
    needs_cigar: bool,
    needs_seq: bool,
}

impl Parser<'_> {
    fn peek(&self, at: usize) -> u8 {
        self.b.get(at).copied().unwrap_or(0)
    }
    /// htslib's `ws`: spaces and tabs only.
    fn ws(&self, mut at: usize) -> usize {
        while matches!(self.peek(at), b' ' | b'\t') {
            at += 1;
        }
        at
    }
    fn err(&self, at: usize, what: &str) -> Error {
        refuse(self.text, at, what)
    }
    /// One level deeper in the recursion (parentheses, `!`, `~`, and the
    /// right-to-left comparisons), refused past [`MAX_DEPTH`].
    fn deeper(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(self.at, "expression nested too deeply"));
        }
        Ok(())
    }

    /// `expression`, `and_expr`.
    fn expression(&mut self) -> Result<Node, Error> {
        self.deeper()?;
        let first = self.eq()?;
        let mut rest = Vec::new();
        loop {
            let s = self.ws(self.at);
            let or = match (self.peek(s), self.peek(s + 1)) {
                (b'&', b'&') => false,
                (b'|', b'|') => true,
                _ => break,
            };
            self.at = s + 2;
            rest.push((or, self.eq()?));
        }
        self.depth -= 1;
        Ok(if rest.is_empty() { first } else { Node::Logic(Box::new(first), rest) })
    }

    /// `eq_expr`: right to left.
    fn eq(&mut self) -> Result<Node, Error> {
        self.deeper()?;
        let node = self.eq_inner();
        self.depth -= 1;
        node
    }

    fn eq_inner(&mut self) -> Result<Node, Error> {
        let left = self.cmp()?;
        let s = self.ws(self.at);
        let (c0, c1) = (self.peek(s), self.peek(s + 1));
        match (c0, c1) {
            (b'=' | b'!', b'=') => {
                self.at = s + 2;
                let right = self.eq()?;
                Ok(Node::Eq(c0 == b'!', Box::new(left), Box::new(right)))
            }
            (b'=' | b'!', b'~') => {
                self.at = s + 2;
                let start = self.ws(self.at);
                let right = self.eq()?;
                let Node::Str(pattern) = right else {
                    // A number fails on every record; a pattern from the
                    // record would be the first record's for good.
                    return Err(self.err(start, "a regular expression must be a string literal"));
                };
                // Refused here: samtools fails on the first record and dies
                // on the next (regexec on the failed slot).
                Regex::new(&pattern).map_err(|e| self.err(start, &e))?;
                self.patterns.push(pattern);
                Ok(Node::Match(c0 == b'!', Box::new(left), self.patterns.len() - 1))
            }
            _ => Ok(left),
        }
    }

    /// `cmp_expr`: right to left.
    fn cmp(&mut self) -> Result<Node, Error> {
        self.deeper()?;
        let node = self.cmp_inner();
        self.depth -= 1;
        node
    }

    fn cmp_inner(&mut self) -> Result<Node, Error> {
        let left = self.bits(BitOp::Or)?;
        let s = self.ws(self.at);
        let (op, len) = match (self.peek(s), self.peek(s + 1)) {
            (b'>', b'=') => (CmpOp::Ge, 2),
            (b'>', _) => (CmpOp::Gt, 1),
            (b'<', b'=') => (CmpOp::Le, 2),
            (b'<', _) => (CmpOp::Lt, 1),
            _ => return Ok(left),
        };
        self.at = s + len;
        let right = self.cmp()?;
        Ok(Node::Cmp(op, Box::new(left), Box::new(right)))
    }

    /// `bitor_expr`, `bitxor_expr`, `bitand_expr`: `|` over `^` over `&`
    /// (a `|` or `&` doubled is `||` or `&&`).
    fn bits(&mut self, op: BitOp) -> Result<Node, Error> {
        let inner = |p: &mut Self| match op {
            BitOp::Or => p.bits(BitOp::Xor),
            BitOp::Xor => p.bits(BitOp::And),
            BitOp::And => p.add(),
        };
        let first = inner(self)?;
        let mut rest = Vec::new();
        loop {
            let s = self.ws(self.at);
            let (c0, c1) = (self.peek(s), self.peek(s + 1));
            let found = match op {
                BitOp::Or => c0 == b'|' && c1 != b'|',
                BitOp::Xor => c0 == b'^',
                BitOp::And => c0 == b'&' && c1 != b'&',
            };
            if !found {
                break;
            }
            self.at = s + 1;
            rest.push(inner(self)?);
        }
        Ok(if rest.is_empty() { first } else { Node::Bits(op, Box::new(first), rest) })
    }

    /// `add_expr`.
    fn add(&mut self) -> Result<Node, Error> {
        let first = self.mul()?;
        let mut rest = Vec::new();
        loop {
            let s = self.ws(self.at);
            let minus = match self.peek(s) {
                b'+' => false,
                b'-' => true,
                _ => break,
            };
            self.at = s + 1;
            rest.push((minus, self.mul()?));
        }
        Ok(if rest.is_empty() { first } else { Node::Add(Box::new(first), rest) })
    }

    /// `mul_expr`.
    fn mul(&mut self) -> Result<Node, Error> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        loop {
            let s = self.ws(self.at);
            let op = match self.peek(s) {
                b'*' => MulOp::Mul,
                b'/' => MulOp::Div,
                b'%' => MulOp::Rem,
                _ => break,
            };
            self.at = s + 1;
            rest.push((op, self.unary()?));
        }
        Ok(if rest.is_empty() { first } else { Node::Mul(Box::new(first), rest) })
    }

    /// `unary_expr`: `+`/`-` take a simple expression (so `--5` is the
    /// number -5 negated), `!`/`~` a unary one.
    fn unary(&mut self) -> Result<Node, Error> {
        self.deeper()?;
        let s = self.ws(self.at);
        let node = match self.peek(s) {
            c @ (b'+' | b'-') => {
                self.at = s + 1;
                Node::Sign(c == b'-', Box::new(self.simple()?))
            }
            b'!' => {
                self.at = s + 1;
                Node::Not(Box::new(self.unary()?))
            }
            b'~' => {
                self.at = s + 1;
                Node::BitNot(Box::new(self.unary()?))
            }
            _ => self.simple()?,
        };
        self.depth -= 1;
        Ok(node)
    }

    /// `simple_expr`: parentheses, a number (tried first), a string, a
    /// name, a function.
    fn simple(&mut self) -> Result<Node, Error> {
        let s = self.ws(self.at);
        if self.peek(s) == b'(' {
            self.at = s + 1;
            let node = self.expression()?;
            let close = self.ws(self.at);
            if self.peek(close) != b')' {
                return Err(self.err(close, "missing ')'"));
            }
            self.at = close + 1;
            return Ok(node);
        }
        if let Some((d, end)) = self.number(s) {
            self.at = end;
            return Ok(Node::Num(d));
        }
        if self.peek(s) == b'"' {
            return self.string(s);
        }
        if let Some((sym, len)) = self.symbol(s)? {
            self.at = s + len;
            return Ok(Node::Sym(sym));
        }
        self.function(s)
    }

    /// A number as htslib's `hts_str2dbl` reads it: its own decimal
    /// reader, whose values are `strtod`'s, else `strtod` itself (hex,
    /// exponents, `inf`, `nan`; leading white space of any kind).
    fn number(&self, s: usize) -> Option<(f64, usize)> {
        if s >= self.b.len() {
            return None;
        }
        let start = self.c.as_ptr().wrapping_add(s);
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        // SAFETY: `start` points into the NUL-terminated copy of the text;
        // strtod stops at the NUL at the latest and sets `end` within it.
        let d = unsafe { libc::strtod(start, &mut end) };
        // SAFETY: `end` is `start` or past it, in the same allocation.
        let n = unsafe { end.offset_from(start) };
        (n > 0).then(|| (d, s + n as usize))
    }

    /// A string literal, escapes resolved as htslib resolves them.
    fn string(&mut self, s: usize) -> Result<Node, Error> {
        let mut e = s + 1;
        while self.peek(e) != 0 && self.peek(e) != b'"' {
            e += if self.peek(e) == b'\\' { 1 + usize::from(self.peek(e + 1) != 0) } else { 1 };
        }
        if self.peek(e) != b'"' {
            return Err(self.err(s, "unterminated string"));
        }
        let raw = &self.b[s + 1..e];
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            if raw[i] == b'\\' && i + 1 < raw.len() {
                match raw[i + 1] {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b't' => out.push(b'\t'),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    other => out.extend_from_slice(&[b'\\', other]),
                }
                i += 2;
            } else {
                out.push(raw[i]);
                i += 1;
            }
        }
        self.at = e + 1;
        Ok(Node::Str(out))
    }

    /// `bam_sym_lookup`'s names, matched as prefixes (`mapqx` is `mapq`
    /// followed by `x`, which then fails to parse); `None` when none
    /// matches (a function then).
    fn symbol(&mut self, s: usize) -> Result<Option<(Sym, usize)>, Error> {
        let rest = &self.b[s.min(self.b.len())..];
        if rest.len() >= 4 && rest[0] == b'[' && rest[1] != 0 && rest[2] != 0 && rest[3] == b']' {
            return Ok(Some((Sym::Tag([rest[1], rest[2]]), 4)));
        }
        if rest.starts_with(b"flag") {
            if rest.get(4) != Some(&b'.') {
                return Ok(Some((Sym::Flag(0xffff), 4)));
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
            return match FLAGS.iter().find(|(name, _)| rest[5..].starts_with(name.as_bytes())) {
                Some((name, bit)) => Ok(Some((Sym::Flag(*bit), 5 + name.len()))),
                None => Err(self.err(s, "unrecognised flag string")),
            };
        }
        const NAMES: [(&str, Sym); 20] = [
            ("cigar", Sym::Cigar),
            ("endpos", Sym::EndPos),
            ("library", Sym::Library),
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
        let Some((name, sym)) = NAMES.iter().find(|(name, _)| rest.starts_with(name.as_bytes())) else { return Ok(None) };
        match sym {
            Sym::Cigar => self.needs_cigar = true,
            Sym::Seq => self.needs_seq = true,
            _ => {}
        }
        Ok(Some((*sym, name.len())))
    }

    /// `func_expr`: the name and `(` together; a second argument right
    /// after a `,` that right after the first (`default(a ,b)` fails).
    fn function(&mut self, s: usize) -> Result<Node, Error> {
        const FUNCS: [(&str, Func); 10] = [
            ("avg(", Func::Avg),
            ("default(", Func::Default),
            ("exists(", Func::Exists),
            ("exp(", Func::Exp),
            ("length(", Func::Length),
            ("log(", Func::Log),
            ("min(", Func::Min),
            ("max(", Func::Max),
            ("pow(", Func::Pow),
            ("sqrt(", Func::Sqrt),
        ];
        let rest = &self.b[s.min(self.b.len())..];
        let Some((name, func)) = FUNCS.iter().find(|(name, _)| rest.starts_with(name.as_bytes())) else {
            let what = match rest.first() {
                None => "unexpected end of the expression",
                Some(c) if c.is_ascii_alphabetic() => "unknown name or function",
                Some(_) => "unexpected text",
            };
            return Err(self.err(s, what));
        };
        self.at = s + name.len();
        let first = self.expression()?;
        let second = if matches!(func, Func::Default | Func::Pow) {
            if self.peek(self.at) != b',' {
                return Err(self.err(self.at, "expected ',' right after the first argument"));
            }
            self.at += 1;
            Some(Box::new(self.expression()?))
        } else {
            None
        };
        let close = self.ws(self.at);
        if self.peek(close) != b')' {
            return Err(self.err(close, "missing ')'"));
        }
        self.at = close + 1;
        Ok(Node::Func(*func, Box::new(first), second))
    }
}

impl Expr {
    /// Parses `text` (up to a NUL, as htslib copies it), refusing what
    /// fails on every record, and what is not mirrored (see the module's
    /// documentation), with one line saying what.
    pub fn parse(text: &str) -> Result<Expr, Error> {
        let full = text;
        let text = &text[..c_str(text.as_bytes()).len()];
        let c = CString::new(text).expect("cut at the first NUL");
        let mut p = Parser { text, b: text.as_bytes(), c, at: 0, depth: 0, patterns: Vec::new(), needs_cigar: false, needs_seq: false };
        let root = p.expression()?;
        let end = p.ws(p.at);
        if end < p.b.len() {
            return Err(p.err(end, "unable to parse the expression"));
        }
        let regexes = p.patterns.iter().map(|pattern| Regex::new(pattern).expect("compiled when parsed")).collect();
        let pattern_ids = p.patterns.iter().map(|pattern| p.patterns.iter().position(|q| q == pattern).unwrap_or(0)).collect();
        Ok(Expr {
            text: full.to_string(),
            root,
            regexes,
            pattern_ids,
            needs_cigar: p.needs_cigar,
            needs_seq: p.needs_seq,
            libraries: HashMap::new(),
            failures: AtomicU64::new(0),
            first_failure: AtomicU8::new(0),
            fatal: AtomicU8::new(0),
        })
    }

    /// This expression for a file whose header text is `header`: `library`
    /// looks up `@RG` lines there.
    pub fn with_header(&self, header: &[u8]) -> Expr {
        let mut e = self.clone();
        e.libraries = super::libraries_by_group(header);
        e
    }

    /// Whether `r` passes, as htslib's `sam_passes_filter` returns 1;
    /// `ref_names` are the header's reference names. A record the
    /// expression fails on does not pass (counted: [`Expr::failures`]).
    /// `wide`: the record's positions when they do not fit its 32-bit
    /// fields (a SAM record past 2^31).
    pub fn passes(&self, r: &RecordRef<'_>, ref_names: &[Reference], wide: Option<WidePositions>) -> bool {
        let outcome = SCRATCH.with(|cell| {
            let mut scratch = cell.borrow_mut();
            scratch.fill(r, self.needs_cigar, self.needs_seq);
            let scratch = &*scratch;
            let ctx = Ctx { expr: self, r, names: ref_names, wide, cigar: &scratch.cigar, seq: &scratch.seq, matches: Cell::new(0) };
            let mut res = Val::INIT;
            ctx.eval(&self.root, &mut res).map(|()| {
                // hts_filter_eval_: a string is true when it is there (even
                // empty); a number when it is there and not 0, or forced.
                if res.is_str {
                    res.is_true || res.s.is_some()
                } else {
                    res.is_true || (res.exists() && res.d != 0.0)
                }
            })
        });
        match outcome {
            Ok(t) => t,
            Err(fail @ (Fail::SlotSwapped | Fail::DivisionByZero)) => {
                let _ = self.fatal.compare_exchange(0, fail as u8, Ordering::Relaxed, Ordering::Relaxed);
                false
            }
            Err(fail) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                let _ = self.first_failure.compare_exchange(0, fail as u8, Ordering::Relaxed, Ordering::Relaxed);
                false
            }
        }
    }

    /// How many evaluations failed (records left out as samtools leaves
    /// them out, with an error for each), and why the first did.
    pub fn failures(&self) -> Option<(u64, &'static str)> {
        let n = self.failures.load(Ordering::Relaxed);
        let why = Fail::from_u8(self.first_failure.load(Ordering::Relaxed))?;
        (n > 0).then_some((n, why.describe()))
    }

    /// Why samtools' answer could not be given, if it could not: a match
    /// ran where htslib 1.16 would have used another match's compiled
    /// pattern (it keeps each in a slot numbered by how many matches a
    /// record has done before it, and a match on an absent tag is skipped
    /// without taking one, so the next runs with the skipped one's pattern,
    /// or compiles its own into that slot for every later record: the
    /// answers depend on the records' order), or a `%` samtools dies of.
    /// The run must then fail.
    pub fn fatal(&self) -> Option<&'static str> {
        Fail::from_u8(self.fatal.load(Ordering::Relaxed)).map(Fail::describe)
    }

    /// The expression's text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// The text of `cigar` and `seq` for the record being evaluated, kept per
/// thread so that evaluating allocates nothing once warm.
#[derive(Default)]
struct Scratch {
    cigar: Vec<u8>,
    seq: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Scratch {
    fn fill(&mut self, r: &RecordRef<'_>, cigar: bool, seq: bool) {
        if cigar {
            self.cigar.clear();
            let ops = r.cigar();
            if ops.is_empty() {
                self.cigar.push(b'*');
            }
            for (op, len) in ops.iter() {
                // Writing to a Vec cannot fail.
                let _ = write!(self.cigar, "{len}");
                self.cigar.push(op.letter());
            }
        }
        if seq {
            self.seq.clear();
            self.seq.extend((0..r.seq_len()).map(|i| r.base(i)));
        }
    }
}

/// One evaluation: the record and what it is read against.
struct Ctx<'a> {
    expr: &'a Expr,
    r: &'a RecordRef<'a>,
    names: &'a [Reference],
    wide: Option<WidePositions>,
    cigar: &'a [u8],
    seq: &'a [u8],
    /// htslib's `curr_regex`: the matches done so far in this record.
    matches: Cell<usize>,
}

fn name_of(tid: i32, names: &[Reference]) -> &[u8] {
    usize::try_from(tid).ok().and_then(|t| names.get(t)).map_or(b"*", |n| n.name.as_bytes())
}

impl<'a> Ctx<'a> {
    /// `bam_sym_lookup` into `res`: it clears `is_str` first, and leaves
    /// `d` and `is_true` as they were for a string (a tag sets `is_true`).
    fn lookup(&self, sym: Sym, res: &mut Val<'a>) -> Result<(), Fail> {
        let r = self.r;
        res.is_str = false;
        // A record past 2^31 has its positions beside its 32-bit fields.
        let (pos, mate_pos, template_len) = match self.wide {
            Some(w) => (w.pos, w.mate_pos, w.template_len),
            None => (i64::from(r.pos()), i64::from(r.mate_pos()), i64::from(r.template_len())),
        };
        let string = |res: &mut Val<'a>, bytes: &'a [u8]| {
            res.is_str = true;
            res.put(bytes);
        };
        match sym {
            Sym::Cigar => string(res, self.cigar),
            Sym::EndPos => res.d = (r.end_pos() - i64::from(r.pos()) + pos) as f64,
            Sym::Flag(mask) => res.d = f64::from(r.flag() & mask),
            Sym::Library => {
                // bam_get_library: the RG tag's value as a C string (of
                // whatever type), its @RG line's LB; else "".
                let lib = super::find_tag(r.aux_bytes(), *b"RG")
                    .and_then(|at| self.expr.libraries.get(c_str(&r.aux_bytes()[at + 3..])))
                    .map_or(&b""[..], |lb| lb.as_slice());
                string(res, lib)
            }
            Sym::Mapq => res.d = f64::from(r.mapq()),
            Sym::MatePos => res.d = mate_pos as f64 + 1.0,
            Sym::MateName => string(res, name_of(r.mate_ref_id(), self.names)),
            Sym::MateRefId => res.d = f64::from(r.mate_ref_id()),
            Sym::NCigar => res.d = r.cigar().len() as f64,
            Sym::Pos => res.d = pos as f64 + 1.0,
            Sym::QueryLen => res.d = r.cigar().query_len() as f64,
            Sym::QueryName => string(res, c_str(r.name())),
            // samtools copies the qualities without a terminating NUL,
            // so what its string functions read past them is whatever the
            // buffer held; here they stop at the end.
            Sym::Qual => string(res, r.qual()),
            Sym::RefLen => res.d = r.cigar().reference_len() as f64,
            Sym::RefName => string(res, name_of(r.ref_id(), self.names)),
            Sym::RefId => res.d = f64::from(r.ref_id()),
            Sym::Seq => string(res, self.seq),
            Sym::SoftClipLen => res.d = f64::from(soft_clip_len(r)),
            Sym::TemplateLen => res.d = template_len as f64,
            Sym::Tag(tag) => return self.tag(tag, res),
        }
        Ok(())
    }

    /// A tag: present, its value and `is_true` (present is true, even 0);
    /// absent, a NULL string (`s.l` zeroed, the buffer kept), `d` 0.
    fn tag(&self, tag: [u8; 2], res: &mut Val<'a>) -> Result<(), Fail> {
        let r = self.r;
        let aux = r.aux_bytes();
        let mut found = super::find_tag(aux, tag);
        // htslib moved a CIGAR held in CG into the record as it read it,
        // and the tag with it.
        if tag == *b"CG" {
            if let (Some(at), Some(field)) = (found, r.cigar_tag_field()) {
                if at == field.start {
                    found = super::find_tag(&aux[field.end..], tag).map(|a| a + field.end);
                }
            }
        }
        let Some(at) = found else {
            res.is_str = true;
            res.clear();
            res.d = 0.0;
            res.is_true = false;
            return Ok(());
        };
        res.is_true = true;
        let (kind, value) = (aux[at + 2], &aux[at + 3..]);
        let int = |n: usize| value.get(..n).ok_or(Fail::ArrayTag);
        match kind {
            b'Z' | b'H' => {
                res.is_str = true;
                res.put(c_str(value));
            }
            b'A' => {
                res.is_str = true;
                res.put(value.get(..1).ok_or(Fail::ArrayTag)?);
            }
            b'c' => res.d = f64::from(*int(1)?.first().unwrap_or(&0) as i8),
            b'C' => res.d = f64::from(*int(1)?.first().unwrap_or(&0)),
            b's' => res.d = f64::from(i16::from_le_bytes(int(2)?.try_into().unwrap_or_default())),
            b'S' => res.d = f64::from(u16::from_le_bytes(int(2)?.try_into().unwrap_or_default())),
            b'i' => res.d = f64::from(i32::from_le_bytes(int(4)?.try_into().unwrap_or_default())),
            b'I' => res.d = f64::from(u32::from_le_bytes(int(4)?.try_into().unwrap_or_default())),
            b'f' => res.d = f64::from(f32::from_le_bytes(int(4)?.try_into().unwrap_or_default())),
            b'd' => res.d = f64::from_le_bytes(int(8)?.try_into().unwrap_or_default()),
            // "Aux type 'B not yet supported by filters".
            _ => return Err(Fail::ArrayTag),
        }
        Ok(())
    }

    /// Evaluates `node` into `res`, as the htslib function it stands for
    /// writes its result over whatever `res` holds.
    fn eval(&self, node: &'a Node, res: &mut Val<'a>) -> Result<(), Fail> {
        match node {
            Node::Num(d) => {
                res.is_str = false;
                res.d = *d;
            }
            Node::Str(s) => {
                res.is_str = true;
                res.put(s);
            }
            Node::Sym(sym) => self.lookup(*sym, res)?,
            Node::Func(func, arg, second) => self.function(*func, arg, second.as_deref(), res)?,
            Node::Sign(negate, inner) => {
                self.eval(inner, res)?;
                if !res.exists() {
                    res.undef();
                } else {
                    if res.is_str {
                        return Err(Fail::StringArithmetic);
                    }
                    if *negate {
                        res.d = -res.d;
                    }
                    res.is_true = res.d != 0.0;
                }
            }
            Node::Not(inner) => {
                self.eval(inner, res)?;
                if res.is_true {
                    res.set_bool(false);
                } else if !res.exists() {
                    res.set_bool(true);
                } else if res.is_str {
                    // !"" is false too: only the NULL string is.
                    res.set_bool(res.s.is_none());
                } else {
                    res.set_bool(c_i64(res.d) == 0);
                }
                res.is_str = false;
            }
            Node::BitNot(inner) => {
                self.eval(inner, res)?;
                if !res.exists() {
                    res.undef();
                } else {
                    if res.is_str {
                        return Err(Fail::StringArithmetic);
                    }
                    res.d = !c_i64(res.d) as f64;
                    res.is_true = res.d != 0.0;
                }
            }
            Node::Mul(first, rest) => {
                self.eval(first, res)?;
                // One value for every operand, as htslib's loop has.
                let mut val = Val::INIT;
                for (op, operand) in rest {
                    self.eval(operand, &mut val)?;
                    if !val.exists() || !res.exists() {
                        res.undef();
                    } else if val.is_str || res.is_str {
                        return Err(Fail::StringArithmetic);
                    }
                    match op {
                        MulOp::Mul => res.d *= val.d,
                        MulOp::Div => res.d /= val.d,
                        MulOp::Rem => {
                            // `if (val.d)`: NaN is true there.
                            if val.d != 0.0 {
                                let (a, b) = (c_i64(res.d), c_i64(val.d));
                                res.d = a.checked_rem(b).ok_or(Fail::DivisionByZero)? as f64;
                            } else {
                                res.undef();
                            }
                        }
                    }
                    res.is_true = res.exists() && res.d != 0.0;
                }
            }
            Node::Add(first, rest) => {
                self.eval(first, res)?;
                let mut val = Val::INIT;
                for (minus, operand) in rest {
                    self.eval(operand, &mut val)?;
                    let undef = !val.exists() || !res.exists();
                    if !undef && (val.is_str || res.is_str) {
                        return Err(Fail::StringArithmetic);
                    }
                    if *minus {
                        res.d -= val.d;
                    } else {
                        res.d += val.d;
                    }
                    if undef {
                        res.undef();
                    } else {
                        res.is_true = res.d != 0.0;
                    }
                }
            }
            Node::Bits(op, first, rest) => {
                self.eval(first, res)?;
                let mut val = Val::INIT;
                // Undefined once, undefined at the end; in between the
                // integers are combined all the same.
                let mut undef = false;
                for operand in rest {
                    self.eval(operand, &mut val)?;
                    if !val.exists() || !res.exists() {
                        undef = true;
                    } else if res.is_str || val.is_str {
                        return Err(Fail::StringArithmetic);
                    }
                    let (a, b) = (c_i64(res.d), c_i64(val.d));
                    res.d = match op {
                        BitOp::And => a & b,
                        BitOp::Xor => a ^ b,
                        BitOp::Or => a | b,
                    } as f64;
                    res.is_true = res.d != 0.0;
                }
                if undef {
                    res.undef();
                }
            }
            Node::Cmp(op, left, right) => {
                self.eval(left, res)?;
                let mut val = Val::INIT;
                self.eval(right, &mut val)?;
                if !res.exists() || !val.exists() {
                    res.undef();
                } else {
                    let t = match (res.is_str, res.s, val.is_str, val.s) {
                        (true, Some(a), true, Some(b)) => {
                            let o = c_str(a.bytes).cmp(c_str(b.bytes));
                            match op {
                                CmpOp::Ge => o.is_ge(),
                                CmpOp::Gt => o.is_gt(),
                                CmpOp::Le => o.is_le(),
                                CmpOp::Lt => o.is_lt(),
                            }
                        }
                        // A string and a number: false.
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
                    res.set_bool(t);
                    res.is_str = false;
                }
            }
            Node::Eq(not, left, right) => {
                self.eval(left, res)?;
                let mut val = Val::INIT;
                self.eval(right, &mut val)?;
                if !res.exists() || !val.exists() {
                    res.undef();
                } else {
                    let t = if res.is_str {
                        // Compared with whatever buffer the right side
                        // holds, even if it is a number now.
                        match (res.s, val.s) {
                            (Some(a), Some(b)) => (c_str(a.bytes) == c_str(b.bytes)) != *not,
                            _ => *not,
                        }
                    } else if *not {
                        res.is_str != val.is_str || res.d != val.d
                    } else {
                        !val.is_str && res.d == val.d
                    };
                    res.set_bool(t);
                }
                res.is_str = false;
                if !val.exists() || !res.exists() {
                    res.undef();
                }
            }
            Node::Match(not, left, i) => {
                self.eval(left, res)?;
                // The pattern is a string literal: always a string.
                if !res.is_str {
                    return Err(Fail::MatchNotString);
                }
                match res.s {
                    Some(s) => {
                        // htslib runs the pattern compiled in slot
                        // `matches` (by the first record to get there),
                        // which is this one's unless an earlier match in a
                        // record was skipped (its string an absent tag).
                        // Where the patterns differ the answer hangs on
                        // which records came first: not mirrored.
                        let slot = self.matches.get();
                        self.matches.set(slot + 1);
                        if slot < 10 && self.expr.pattern_ids.get(slot) != Some(&self.expr.pattern_ids[*i]) {
                            return Err(Fail::SlotSwapped);
                        }
                        let matched = self.expr.regexes[*i].is_match(s.bytes);
                        res.set_bool(matched != *not);
                    }
                    // A NULL string: false, its `d` (0 for an absent tag)
                    // left as it was, so defined.
                    None => res.is_true = false,
                }
                res.is_str = false;
                if !res.exists() {
                    res.undef();
                }
            }
            Node::Logic(first, rest) => {
                self.eval(first, res)?;
                for (or, operand) in rest {
                    let mut val = Val::INIT;
                    self.eval(operand, &mut val)?;
                    let undefined = if *or {
                        (!res.exists_t() && !val.exists_t()) || (!res.exists_t() && !val.truthy()) || (!val.exists_t() && !res.truthy())
                    } else {
                        !res.exists_t() || !val.exists_t()
                    };
                    if undefined {
                        // Undefined, then d = 0: a defined false.
                        res.undef();
                        res.d = 0.0;
                    } else {
                        let t = if *or { res.truthy() || val.truthy() } else { res.truthy() && val.truthy() };
                        res.set_bool(t);
                        res.is_str = false;
                    }
                }
            }
        }
        Ok(())
    }

    /// `func_expr`: the argument evaluated into `res`.
    fn function(&self, func: Func, arg: &'a Node, second: Option<&'a Node>, res: &mut Val<'a>) -> Result<(), Fail> {
        self.eval(arg, res)?;
        match func {
            Func::Length | Func::Min | Func::Max | Func::Avg => {
                if !res.is_str {
                    return Err(Fail::FunctionOfNumber);
                }
                // Over `s.l` bytes, NULs included (an absent tag's none).
                let data = res.s.as_ref().map_or(&[][..], |t| t.data());
                res.d = match func {
                    Func::Length => data.len() as f64,
                    Func::Min => data.iter().min().map_or(f64::NAN, |&b| f64::from(b)),
                    Func::Max => data.iter().max().map_or(f64::NAN, |&b| f64::from(b)),
                    _ if data.is_empty() => 0.0,
                    _ => data.iter().map(|&b| f64::from(b)).sum::<f64>() / data.len() as f64,
                };
                res.is_str = false;
            }
            Func::Exists => {
                let t = res.exists_t();
                res.set_bool(t);
                res.is_str = false;
            }
            // Of `d` whatever the value is (a string's is what was there).
            Func::Exp | Func::Log | Func::Sqrt => {
                res.d = match func {
                    Func::Exp => res.d.exp(),
                    Func::Log => res.d.ln(),
                    _ => res.d.sqrt(),
                };
                res.is_str = false;
                if res.d.is_nan() {
                    res.undef();
                }
            }
            Func::Pow => {
                let mut val = Val::INIT;
                self.eval(second.expect("parsed with two arguments"), &mut val)?;
                if !res.exists() || !val.exists() {
                    res.undef();
                } else if res.is_str || val.is_str {
                    return Err(Fail::StringArithmetic);
                } else {
                    res.d = res.d.powf(val.d);
                    res.is_str = false;
                }
                if res.d.is_nan() {
                    res.undef();
                }
            }
            Func::Default => {
                let mut val = Val::INIT;
                self.eval(second.expect("parsed with two arguments"), &mut val)?;
                if !res.exists_t() {
                    *res = val;
                }
            }
        }
        Ok(())
    }
}

/// `sclen`: soft clips at either end, inside a hard clip or not.
fn soft_clip_len(r: &RecordRef<'_>) -> u32 {
    let cigar = r.cigar();
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
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_fails_on_every_record() {
        for (text, what) in [
            ("mapq > ", "end of the expression"),
            ("(mapq > 5", "missing ')'"),
            ("length(seq > 5", "missing ')'"),
            ("flag.nope", "unrecognised flag"),
            ("flags", "unable to parse"),
            ("qname =~ rname", "string literal"),
            ("qname =~ 5", "string literal"),
            ("qname =~ \"(\"", "failed regex"),
            ("default([XX] ,1)", "','"),
            ("pow(2)", "','"),
            ("foo > 1", "unknown name"),
            ("mapq ** 2", "unexpected text"),
            ("\"abc", "unterminated"),
        ] {
            let e = Expr::parse(text).unwrap_err().to_string();
            assert!(e.contains(what), "{text}: {e}");
        }
        for text in [
            "mapq >= 30 && !flag.dup",
            "flag & 2",
            "(flag & 0x10) == 16 ^ 1 | ~3",
            "mapq * 2 / 3 % 4 + -1 - +2",
            "--5 == 5 && 0x1p-2 == .25 && inf > 1e308 && !nan",
            "length(seq) > 5 && min(qual) >= 0 && max(qual) < 94 && avg(qual) > 1",
            "exists([NM]) && default([XX], 3) == 3 && pow(2, 10) == 1024",
            "sqrt(4) == 2 && exp(0) == 1 && log(1) == 0",
            "library == \"lib1\" || qname =~ \"^r1[0-9]+\"",
            "qname =~ \"a\" || [XX] =~ \"b\"",
            "[XX] =~ \"a\" || [YY] =~ \"a\"",
            "[XX] =~ \"a\" || [YY] =~ \"b\"",
            "!([XX])",
        ] {
            Expr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn casts_as_x86_64() {
        assert_eq!(c_i64(2.9), 2);
        assert_eq!(c_i64(-2.9), -2);
        if cfg!(target_arch = "x86_64") {
            assert_eq!(c_i64(f64::NAN), i64::MIN);
            assert_eq!(c_i64(1e30), i64::MIN);
        }
    }
}
