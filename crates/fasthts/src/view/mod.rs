//! Which records `samtools view` 1.16 selects, and how it edits them.
//!
//! [`Selection`] is samtools' `process_aln`: flag filters (`-f` all on,
//! `-F` all off, `--rf` any on, `-G` not all on), `-q` MAPQ, `-m` query
//! length, `-L` BED overlap (when not used as regions), hash-based
//! subsampling (`--subsample`, `-s`), `-r`/`-R` read groups, `-d`/`-D` tag
//! values, `-N` read names and `-l` library, in samtools' order (`-B`,
//! [`remove_backward`], edits the record between `-e` and the others); `-e` expressions are [`Expr`]. [`TagEdit`] is `-x`/`--keep-tag`.
//! [`subsample_keeps`] reproduces samtools' hash of the read name, so a
//! pair's reads (same name) are kept or dropped together, and a seed picks
//! the same reads as samtools with that seed.
//!
//! Which records a region gives (see [`crate::command::view_file`]): as a
//! samtools region query, every record whose alignment overlaps the region
//! (`pos < end` and its end from the CIGAR, `bam_endpos`, `> start`; an
//! unmapped read placed with its mate spans one base), not the "starts in
//! the region" rule of [`crate::region::scatter`]. Several regions give
//! their records region by region, a record once per region it overlaps;
//! with `-M` (samtools' multi-region iterator) each record once, in file
//! order.

mod backward;
mod expr;

pub use backward::remove_backward;

pub use expr::Expr;

use crate::bam::{RecordRef, Reference};
use crate::region::BedFilter;
use crate::record_output::OutputFormat;
use crate::Error;
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

/// A record's POS, PNEXT (0-based) and TLEN when they do not fit its
/// 32-bit fields: a SAM record past 2^31 read with
/// [`crate::sam::Positions::Wide`] ([`crate::sam::wide_positions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WidePositions {
    /// POS, 0-based.
    pub pos: i64,
    /// PNEXT, 0-based.
    pub mate_pos: i64,
    /// TLEN.
    pub template_len: i64,
}

/// samtools view's record filters (its `process_aln`).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Keep if all of these flags are set (`-f`).
    pub flag_on: u16,
    /// Keep if none of these flags is set (`-F`).
    pub flag_off: u16,
    /// Keep if any of these flags is set (`--rf`, `--incl-flags`).
    pub flag_any_on: u16,
    /// Drop if all of these flags are set (`-G`).
    pub flag_all_off: u16,
    /// Minimum mapping quality (`-q`).
    pub min_mapq: i32,
    /// Minimum query length from the CIGAR (`-m`; M/I/S/=/X and H count).
    pub min_qlen: i32,
    /// Only records overlapping these intervals (`-L` without `-M`).
    pub bed: Option<BedFilter>,
    /// Keep a fraction of the templates by name (`--subsample`, `-s`):
    /// the fraction and the seed as samtools uses it ([`subsample_seed`]).
    pub subsample: Option<(f64, u32)>,
    /// Only records with this tag (`-d TAG`, `-D TAG:FILE`)...
    pub tag: Option<[u8; 2]>,
    /// ...whose value, as text, is one of these (`-d TAG:VAL`, `-D`).
    pub tag_values: Option<HashSet<Vec<u8>>>,
    /// Only records with one of these names (`-N`).
    pub names: Option<HashSet<Vec<u8>>>,
    /// Only records the filter expression passes (`-e`; see [`Expr`]).
    pub expr: Option<Expr>,
    /// Only records whose `RG` is one of these, or that have no `RG`
    /// (`-r`, `-R`; samtools also drops the other `@RG` header lines:
    /// [`keep_read_group_lines`]).
    pub read_groups: Option<HashSet<Vec<u8>>>,
    /// Only records of this library (`-l`): their `RG`'s `@RG` line has
    /// this `LB`. Resolved against the header by [`Selection::for_header`].
    pub library: Option<Vec<u8>>,
    /// The read groups of [`Selection::library`] in the header.
    library_groups: HashSet<Vec<u8>>,
}

impl Selection {
    /// This selection for a file whose header text is `header` (the read
    /// groups of `-l`'s library looked up).
    pub fn for_header(&self, header: &[u8]) -> Selection {
        let mut s = self.clone();
        if let Some(library) = &self.library {
            s.library_groups = read_groups_of_library(header, library);
        }
        if let Some(expr) = &self.expr {
            s.expr = Some(expr.with_header(header));
        }
        s
    }

    /// Whether samtools view selects `r`; `ref_names` are the header's
    /// references, for their names (for the BED filter); `wide`: its positions when
    /// they do not fit its 32-bit fields (a SAM record past 2^31).
    pub fn keeps(&self, r: &RecordRef<'_>, ref_names: &[Reference], wide: Option<WidePositions>) -> bool {
        self.passes_expr(r, ref_names, wide) && self.keeps_after_expr(r, ref_names, wide)
    }

    /// The `-e` filter, which samtools applies before `-B` edits the record.
    pub fn passes_expr(&self, r: &RecordRef<'_>, ref_names: &[Reference], wide: Option<WidePositions>) -> bool {
        self.expr.as_ref().map_or(true, |expr| expr.passes(r, ref_names, wide))
    }

    /// The filters after `-e`, in samtools' order.
    pub fn keeps_after_expr(&self, r: &RecordRef<'_>, ref_names: &[Reference], wide: Option<WidePositions>) -> bool {
        let flag = r.flag();
        if self.min_qlen > 0 && query_len(r) < i64::from(self.min_qlen) {
            return false;
        }
        if i32::from(r.mapq()) < self.min_mapq || flag & self.flag_on != self.flag_on || flag & self.flag_off != 0 {
            return false;
        }
        if self.flag_all_off != 0 && flag & self.flag_all_off == self.flag_all_off {
            return false;
        }
        if self.flag_any_on != 0 && flag & self.flag_any_on == 0 {
            return false;
        }
        if let Some(bed) = &self.bed {
            let tid = r.ref_id();
            let (pos, end) = match wide {
                Some(w) => (w.pos, r.end_pos() - i64::from(r.pos()) + w.pos),
                None => (i64::from(r.pos()), r.end_pos()),
            };
            if tid < 0 || !bed.overlaps(&ref_names[tid as usize].name, pos, end) {
                return false;
            }
        }
        if let Some((fraction, seed)) = self.subsample {
            if !subsample_keeps(r.name(), fraction, seed) {
                return false;
            }
        }
        if let Some(groups) = &self.read_groups {
            if c_string_tag(r, *b"RG").is_some_and(|rg| !groups.contains(rg)) {
                return false;
            }
        }
        if let Some(tag) = self.tag {
            let mut digits = [0u8; 24];
            match tag_text(r, tag, &mut digits) {
                None => return false,
                Some(value) => {
                    if let Some(values) = &self.tag_values {
                        if !values.contains(value) {
                            return false;
                        }
                    }
                }
            }
        }
        if let Some(names) = &self.names {
            if !names.contains(r.name()) {
                return false;
            }
        }
        if self.library.is_some() && !c_string_tag(r, *b"RG").is_some_and(|rg| self.library_groups.contains(rg)) {
            return false;
        }
        true
    }
}

/// A tag's value as htslib code reads it as a C string (`bam_aux_get(b,
/// tag) + 1`): its bytes up to the first NUL, whatever its type.
fn c_string_tag<'a>(r: &RecordRef<'a>, tag: [u8; 2]) -> Option<&'a [u8]> {
    let aux = r.aux_bytes();
    let value = &aux[find_tag(aux, tag)? + 3..];
    Some(&value[..value.iter().position(|&c| c == 0).unwrap_or(value.len())])
}

/// The value of the first `KEY:` field of a header line (after its type).
fn header_field<'a>(line: &'a [u8], key: &[u8; 2]) -> Option<&'a [u8]> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.split(|&c| c == b'\t').skip(1).find(|f| f.len() >= 3 && f[..2] == key[..] && f[2] == b':').map(|f| &f[3..])
}

/// The IDs of the `@RG` lines whose `LB` is `library` (samtools' `-l`
/// compares at most 1,023 bytes of `LB`; the first line of an ID counts).
fn read_groups_of_library(header: &[u8], library: &[u8]) -> HashSet<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut groups = HashSet::new();
    for line in header.split_inclusive(|&c| c == b'\n').filter(|l| l.starts_with(b"@RG\t")) {
        let Some(id) = header_field(line, b"ID") else { continue };
        if !seen.insert(id.to_vec()) {
            continue;
        }
        if header_field(line, b"LB").is_some_and(|lb| &lb[..lb.len().min(1023)] == library) {
            groups.insert(id.to_vec());
        }
    }
    groups
}

/// Each `@RG` ID's `LB` (at most 1,023 bytes, as htslib's
/// `bam_get_library` copies it; the first line of an ID counts), for `-e`'s
/// `library`.
fn libraries_by_group(header: &[u8]) -> std::collections::HashMap<Vec<u8>, Vec<u8>> {
    let mut libraries = std::collections::HashMap::new();
    let mut seen = HashSet::new();
    for line in header.split_inclusive(|&c| c == b'\n').filter(|l| l.starts_with(b"@RG\t")) {
        let Some(id) = header_field(line, b"ID") else { continue };
        if !seen.insert(id.to_vec()) {
            continue;
        }
        if let Some(lb) = header_field(line, b"LB") {
            libraries.insert(id.to_vec(), lb[..lb.len().min(1023)].to_vec());
        }
    }
    libraries
}

/// Opens `path` as [`crate::input::open`] does, but a SAM input (plain or
/// compressed) whose header has no `@SQ` line gets one per line of
/// `references` (samtools view `-t`: a `.fai` or any file of `NAME<TAB>LENGTH`
/// lines), after its other header lines, as htslib adds them. Other input
/// is opened as [`crate::input::open_with`] opens it with `cram`.
pub fn open_with_references(path: &Path, references: &Path, cram: &crate::cram::CramOptions) -> Result<crate::input::Input, Error> {
    use crate::input::{Format, Input};
    use std::io::BufRead;
    let peeked = crate::input::peek(path)?;
    if !matches!(
        peeked.format(),
        Format::Sam | Format::CompressedSam(fasthts_io::compression::Compression::Bgzf | fasthts_io::compression::Compression::Gzip)
    ) {
        return peeked.open_with(cram);
    }
    let (text, _) = fasthts_io::compression::decompress(peeked.into_reader(), rayon::current_num_threads())
        .map_err(|e| Error::from(e).with_path(path))?;
    let mut text = std::io::BufReader::with_capacity(1 << 16, text);
    let mut header = Vec::new();
    loop {
        let next = text.fill_buf().map_err(|e| Error::from(e).with_path(path))?;
        if next.first() != Some(&b'@') {
            break;
        }
        text.read_until(b'\n', &mut header).map_err(|e| Error::from(e).with_path(path))?;
        if !header.ends_with(b"\n") {
            header.push(b'\n');
        }
    }
    if !header.split(|&c| c == b'\n').any(|line| line.starts_with(b"@SQ\t")) {
        let mut list = Vec::new();
        std::fs::File::open(references).and_then(|mut f| f.read_to_end(&mut list)).map_err(|e| Error::from(e).with_path(references))?;
        for line in list.split(|&c| c == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(tab) = line.iter().position(|&c| c == b'\t') else { continue };
            // strtoll: leading blanks, a sign, digits; 0 without any.
            let rest = std::str::from_utf8(&line[tab..]).unwrap_or("").trim_start();
            let sign = usize::from(rest.starts_with(['-', '+']));
            let digits = rest[sign..].bytes().take_while(u8::is_ascii_digit).count();
            let length: i64 = rest[..sign + digits].parse().unwrap_or(0);
            header.extend_from_slice(b"@SQ\tSN:");
            header.extend_from_slice(&line[..tab]);
            header.extend_from_slice(format!("\tLN:{length}\n").as_bytes());
        }
    }
    let reader: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(header).chain(text));
    let sam = crate::sam::SamReader::new(reader).map_err(|e| Error::from(e).with_path(path))?;
    Ok(Input::Sam(Box::new(sam)))
}

/// The header text without the `@RG` lines whose ID is not in `groups`
/// (samtools view `-r`/`-R`, htslib's `sam_hdr_remove_lines`; lines
/// without an ID stay).
pub fn keep_read_group_lines(header: &[u8], groups: &HashSet<Vec<u8>>) -> Vec<u8> {
    header
        .split_inclusive(|&c| c == b'\n')
        .filter(|line| !line.starts_with(b"@RG\t") || header_field(line, b"ID").map_or(true, |id| groups.contains(id)))
        .flatten()
        .copied()
        .collect()
}

/// samtools view `-p`: `record` (`block_size` and data) made unmapped in
/// place of being left out: flag UNMAP, MAPQ 0, TLEN 0, no CIGAR (a CIGAR
/// kept in a `CG` tag goes with its tag, as htslib had read it).
pub fn unmap_record(r: &RecordRef<'_>, out: &mut Vec<u8>) {
    let data = r.as_bytes();
    let name_end = 32 + usize::from(data[8]);
    let cigar_end = name_end + 4 * usize::from(r.n_cigar_op());
    let aux = r.aux_bytes();
    let aux_start = data.len() - aux.len();
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&data[..name_end]);
    out.extend_from_slice(&data[cigar_end..aux_start]);
    match r.cigar_tag_field() {
        Some(field) => {
            out.extend_from_slice(&aux[..field.start]);
            out.extend_from_slice(&aux[field.end..]);
        }
        None => out.extend_from_slice(aux),
    }
    let rec = &mut out[start + 4..];
    rec[9] = 0; // MAPQ
    rec[12..14].copy_from_slice(&0u16.to_le_bytes()); // n_cigar_op
    let flag = u16::from_le_bytes([rec[14], rec[15]]) | crate::bam::flags::UNMAPPED;
    rec[14..16].copy_from_slice(&flag.to_le_bytes());
    rec[28..32].copy_from_slice(&0i32.to_le_bytes()); // TLEN
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

/// samtools' `-m` length: M, I, S, =, X and H operations.
fn query_len(r: &RecordRef<'_>) -> i64 {
    use crate::bam::CigarOp::*;
    r.cigar()
        .iter()
        .filter(|(op, _)| matches!(op, Match | Insertion | SoftClip | SequenceMatch | SequenceMismatch | HardClip))
        .map(|(_, l)| i64::from(l))
        .sum()
}

/// The value of `tag` as samtools view's `-d`/`-D` compare it: integers
/// in decimal (written into `digits`: no allocation per record), a
/// character as itself, anything else its bytes up to a NUL. `None` when
/// the record lacks the tag.
fn tag_text<'a>(r: &RecordRef<'a>, tag: [u8; 2], digits: &'a mut [u8; 24]) -> Option<&'a [u8]> {
    let aux = r.aux_bytes();
    let at = find_tag(aux, tag)?;
    let (kind, value) = (aux[at + 2], &aux[at + 3..]);
    let le = |n: usize| value.get(..n);
    let n = match kind {
        b'c' => i64::from(*value.first()? as i8),
        b'C' => i64::from(*value.first()?),
        b's' => i64::from(i16::from_le_bytes(le(2)?.try_into().ok()?)),
        b'S' => i64::from(u16::from_le_bytes(le(2)?.try_into().ok()?)),
        b'i' => i64::from(i32::from_le_bytes(le(4)?.try_into().ok()?)),
        b'I' => i64::from(u32::from_le_bytes(le(4)?.try_into().ok()?)),
        b'A' => return value.get(..1),
        _ => return Some(&value[..value.iter().position(|&c| c == 0).unwrap_or(value.len())]),
    };
    let mut w = std::io::Cursor::new(&mut digits[..]);
    // 24 bytes hold any i64 in decimal.
    std::io::Write::write_fmt(&mut w, format_args!("{n}")).ok()?;
    let len = w.position() as usize;
    Some(&digits[..len])
}

/// The offset of `tag`'s field in `aux` (htslib's `bam_aux_get`: the
/// first field of that name; `None` past malformed data).
fn find_tag(aux: &[u8], tag: [u8; 2]) -> Option<usize> {
    let mut at = 0;
    while at + 3 <= aux.len() {
        if aux[at..at + 2] == tag {
            return Some(at);
        }
        at = skip_field(aux, at)?;
    }
    None
}

/// The offset past the aux field starting at `at` (samtools' `skip_aux`
/// after the tag); `None` when it is malformed.
fn skip_field(aux: &[u8], at: usize) -> Option<usize> {
    let s = at + 2;
    let kind = *aux.get(s)?;
    let s = s + 1;
    let size = |t: u8| -> Option<usize> {
        match t {
            b'A' | b'c' | b'C' => Some(1),
            b's' | b'S' => Some(2),
            b'i' | b'I' | b'f' => Some(4),
            b'd' => Some(8),
            _ => None,
        }
    };
    match kind {
        b'Z' | b'H' => Some(aux[s..].iter().position(|&c| c == 0).map_or(aux.len(), |n| s + n + 1)),
        b'B' => {
            let elem = size(*aux.get(s)?)?;
            let n = u32::from_le_bytes(aux.get(s + 1..s + 5)?.try_into().ok()?) as usize;
            let end = (s + 5).checked_add(elem.checked_mul(n)?)?;
            (end <= aux.len()).then_some(end)
        }
        t => {
            let end = s + size(t)?;
            (end <= aux.len()).then_some(end)
        }
    }
}

/// Tags removed from (`-x`) or kept in (`--keep-tag`, `-x ^TAGS`) every
/// record written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TagEdit {
    /// Records as they are.
    #[default]
    None,
    /// These tags removed.
    Remove(HashSet<[u8; 2]>),
    /// Only these tags kept.
    Keep(HashSet<[u8; 2]>),
}

impl TagEdit {
    /// Adds the tags of a samtools `-x` list (`XX,YY` or `XXYY`) to `set`,
    /// refusing what samtools refuses (a tag not two characters long).
    pub fn parse_list(text: &str, set: &mut HashSet<[u8; 2]>) -> Result<(), Error> {
        let mut rest = text.as_bytes();
        while rest.len() >= 2 {
            set.insert([rest[0], rest[1]]);
            rest = &rest[2..];
            match rest.first() {
                Some(b',') => rest = &rest[1..],
                Some(_) => break,
                None => {}
            }
        }
        if !rest.is_empty() {
            return Err(Error::InvalidArgument(format!("invalid tag list {text:?}: auxiliary tags should be exactly two characters long")));
        }
        Ok(())
    }

    /// Whether records are written as they are.
    pub fn is_none(&self) -> bool {
        matches!(self, TagEdit::None)
    }

    /// Appends `r` (`block_size` and data) with the tags edited to `out`;
    /// fails as samtools does on malformed aux data.
    pub fn append(&self, r: &RecordRef<'_>, out: &mut Vec<u8>) -> Result<(), Error> {
        let data = r.as_bytes();
        let start = out.len();
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        let aux = r.aux_bytes();
        let fixed = data.len() - aux.len();
        out.extend_from_slice(&data[..fixed]);
        let (set, keep) = match self {
            TagEdit::None => {
                out.extend_from_slice(aux);
                return Ok(());
            }
            TagEdit::Remove(set) => (set, false),
            TagEdit::Keep(set) => (set, true),
        };
        // A CIGAR held in the CG tag is the alignment's, not a tag to select
        // (htslib has moved it into the record before samtools edits tags).
        let cigar_field = r.cigar_tag_field().map(|f| f.start);
        let mut at = 0;
        while at < aux.len() {
            let Some(next) = (at + 2 <= aux.len()).then(|| skip_field(aux, at)).flatten() else {
                out.truncate(start);
                return Err(Error::Message(format!("malformed aux data for record \"{}\"", String::from_utf8_lossy(r.name()))));
            };
            if Some(at) == cigar_field || set.contains(&[aux[at], aux[at + 1]]) == keep {
                out.extend_from_slice(&aux[at..next]);
            }
            at = next;
        }
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        Ok(())
    }
}

/// Whether samtools view's subsampling keeps a read named `name`
/// (`fraction` of the names, chosen by a hash of the name and `seed`, the
/// value [`subsample_seed`] gives). A fraction of 0 or less keeps every
/// read, as in samtools.
pub fn subsample_keeps(name: &[u8], fraction: f64, seed: u32) -> bool {
    if fraction <= 0.0 {
        return true;
    }
    let k = crate::khash_hash::wang_hash(crate::khash_hash::x31_hash(name) ^ seed);
    f64::from(k & 0xff_ffff) / f64::from(0x100_0000) < fraction
}

/// The seed samtools hashes with for a user's seed: 0 stays 0; any other
/// is glibc's first `rand()` after `srand(seed)`.
pub fn subsample_seed(seed: u32) -> u32 {
    if seed == 0 {
        return 0;
    }
    // glibc's random_r, TYPE_3: an additive generator over 34 words seeded
    // by a Lehmer sequence, its first 310 outputs discarded.
    let mut r = [0i32; 344];
    r[0] = seed as i32;
    for i in 1..31 {
        let word = i64::from(r[i - 1]);
        let (hi, lo) = (word / 127_773, word % 127_773);
        let mut next = 16_807 * lo - 2_836 * hi;
        if next < 0 {
            next += 2_147_483_647;
        }
        r[i] = next as i32;
    }
    for i in 31..34 {
        r[i] = r[i - 31];
    }
    for i in 34..344 {
        r[i] = r[i - 31].wrapping_add(r[i - 3]);
    }
    (r[344 - 31].wrapping_add(r[344 - 3]) as u32) >> 1
}

/// Parses samtools view's `-s INT.FRAC`: the seed before the point, the
/// fraction from the point on (`-s 42.1`: seed 42, 10 %).
pub fn parse_seed_fraction(text: &str) -> Result<(u32, f64), Error> {
    let bad = || Error::InvalidArgument(format!("incorrect sampling argument {text:?}"));
    let t = text.trim_start();
    let sign = usize::from(t.starts_with(['-', '+']));
    let digits = t[sign..].bytes().take_while(u8::is_ascii_digit).count();
    let (int, frac) = t.split_at(sign + digits);
    if !frac.starts_with('.') {
        return Err(bad());
    }
    let seed = if digits == 0 { 0 } else { int.parse::<i64>().map_err(|_| bad())? };
    let fraction: f64 = frac.parse().map_err(|_| bad())?;
    Ok((seed as u32, fraction))
}

/// Parses `--subsample FLOAT` (0 to 1).
pub fn parse_fraction(text: &str) -> Result<f64, Error> {
    match text.trim_start().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(Error::InvalidArgument(format!("incorrect sampling argument {text:?}"))),
    }
}

/// The words of a file as samtools reads a name or value list (`-N`,
/// `-D`): whitespace-separated, each cut to 1,023 bytes. Errors name `path`.
pub fn read_word_list(path: &Path) -> Result<HashSet<Vec<u8>>, Error> {
    let mut text = Vec::new();
    std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut text)).map_err(|e| Error::from(e).with_path(path))?;
    let mut words = HashSet::new();
    for word in text.split(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
        // fscanf("%1023s") reads a longer word as several.
        for part in word.chunks(1023) {
            words.insert(part.to_vec());
        }
    }
    Ok(words)
}

/// Sorted, merged intervals per reference for the multi-region iterator
/// (`-M`): `(tid, [(beg, end)])` in reference order, the unplaced records
/// (`tid == -1`) last. Intervals that touch or overlap are merged, as
/// samtools' `bed_unify` does.
pub fn merge_intervals(mut list: Vec<(i32, i64, i64)>) -> Vec<(i32, Vec<(i64, i64)>)> {
    list.sort_by_key(|&(tid, b, e)| (if tid < 0 { i32::MAX } else { tid }, b, e));
    let mut out: Vec<(i32, Vec<(i64, i64)>)> = Vec::new();
    for (tid, b, e) in list {
        match out.last_mut() {
            Some((t, intervals)) if *t == tid => match intervals.last_mut() {
                Some(last) if b <= last.1 => last.1 = last.1.max(e),
                _ => intervals.push((b, e)),
            },
            _ => out.push((tid, vec![(b, e)])),
        }
    }
    out
}

/// The format htslib's `sam_open_mode` gives an output named `path`:
/// `.bam`, `.sam`, `.sam.gz`, `.cram` (any case), `None` for another
/// extension.
fn format_from_extension(path: &Path) -> Result<Option<OutputFormat>, Error> {
    let (data, _, _) = crate::index::split_index_name(path);
    let name = data.to_string_lossy().rsplit('/').next().unwrap_or_default().to_ascii_lowercase();
    let stem = name.strip_suffix(".gz").or_else(|| name.strip_suffix(".bgz"));
    let extension = match stem {
        Some(stem) => stem.rsplit_once('.').map(|(_, e)| format!("{e}.gz")),
        None => name.rsplit_once('.').map(|(_, e)| e.to_string()),
    };
    Ok(match extension.as_deref() {
        Some("bam") => Some(OutputFormat::Bam),
        Some("sam") => Some(OutputFormat::Sam),
        Some("sam.gz") => Some(OutputFormat::SamGz),
        Some("cram") => Some(OutputFormat::Cram),
        _ => None,
    })
}

/// What samtools view writes to an output named `path` (`None`: standard
/// output) given `-b` (`bam`), `-u`/`-1` (`level_flag`) and `-O`
/// (`format_option`): the format, and whether the header is written even
/// without `-h` (BAM as the mode letter says, or `-O` naming a format other
/// than SAM; samtools decides the header before `-O` changes the format,
/// so `-b -O sam` prints a SAM header).
///
/// ```
/// use fasthts::view::output_format;
/// use fasthts::record_output::OutputFormat;
/// use std::path::Path;
/// assert_eq!(output_format(None, false, false, None)?, (OutputFormat::Sam, false));
/// assert_eq!(output_format(Some(Path::new("x.bam")), false, false, None)?, (OutputFormat::Bam, true));
/// assert_eq!(output_format(None, false, true, None)?, (OutputFormat::Bam, true));
/// assert_eq!(output_format(Some(Path::new("x.txt")), false, true, None)?, (OutputFormat::Bam, true));
/// assert_eq!(output_format(None, true, false, Some(OutputFormat::Sam))?, (OutputFormat::Sam, true));
/// # Ok::<(), fasthts::Error>(())
/// ```
pub fn output_format(
    path: Option<&Path>,
    bam: bool,
    level_flag: bool,
    format_option: Option<OutputFormat>,
) -> Result<(OutputFormat, bool), Error> {
    output_format_mode(path, bam.then_some(OutputFormat::Bam), level_flag, format_option)
}

/// [`output_format`] with the mode letter samtools view's `-b` or `-C`
/// gives (the last of them): `mode` BAM or CRAM. A binary format always
/// has its header.
pub fn output_format_mode(
    path: Option<&Path>,
    mode: Option<OutputFormat>,
    level_flag: bool,
    format_option: Option<OutputFormat>,
) -> Result<(OutputFormat, bool), Error> {
    let by_name = match path {
        Some(p) => format_from_extension(p)?,
        None => None,
    };
    let mode = if mode.is_some() {
        mode
    } else if level_flag {
        Some(by_name.unwrap_or(OutputFormat::Bam))
    } else {
        by_name
    };
    let binary = |f: OutputFormat| matches!(f, OutputFormat::Bam | OutputFormat::Cram);
    let forced = mode.is_some_and(binary) || format_option.is_some_and(binary);
    Ok((format_option.or(mode).unwrap_or(OutputFormat::Sam), forced))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_rand_after_srand() {
        // First rand() after srand(n), from glibc.
        assert_eq!(subsample_seed(1), 1_804_289_383);
        assert_eq!(subsample_seed(42), 71_876_166);
        assert_eq!(subsample_seed(0), 0);
    }

    #[test]
    fn seed_and_fraction() {
        assert_eq!(parse_seed_fraction("42.1").unwrap(), (42, 0.1));
        assert_eq!(parse_seed_fraction("0.25").unwrap(), (0, 0.25));
        assert!(parse_seed_fraction("42").is_err());
        assert!(parse_seed_fraction("1.2x").is_err());
        assert!(parse_fraction("1.5").is_err());
    }

    #[test]
    fn tag_lists_as_samtools() {
        let mut set = HashSet::new();
        TagEdit::parse_list("NM,MD", &mut set).unwrap();
        TagEdit::parse_list("XA,", &mut set).unwrap();
        assert_eq!(set.len(), 3);
        // Tags run together are refused, as by samtools.
        assert!(TagEdit::parse_list("XAXB", &mut set).is_err());
        assert!(TagEdit::parse_list("NMX", &mut set).is_err());
    }

    #[test]
    fn intervals_merge_per_reference_unplaced_last() {
        let merged = merge_intervals(vec![(1, 5, 10), (-1, 0, 1), (0, 20, 30), (1, 10, 12), (1, 0, 2)]);
        assert_eq!(merged, vec![(0, vec![(20, 30)]), (1, vec![(0, 2), (5, 12)]), (-1, vec![(0, 1)])]);
    }
}
