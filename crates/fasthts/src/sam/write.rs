//! BAM records → SAM text, exactly as htslib 1.16 writes it (`samtools view
//! --no-PG`).
//!
//! The record layout follows `sam_format1` and `sam_format_aux1` (sam.c,
//! htslib/sam.h); numbers are printed as kstring's `kputw`/`kputuw`/`kputll`
//! do (plain decimal), `f` and `d` tags as glibc's `%g`, and the elements of
//! `B:f` arrays with kstring's own `kputd`, which differs from `%g` in a few
//! places (see [`put_kputd`]). Records whose CIGAR lives in a `CG:B,I` tag are
//! printed as htslib prints them after `bam_read1` has moved the tag back into
//! the CIGAR: the real CIGAR, without the `CG` tag.
//!
//! The header follows `sam_hdr_read` + `sam_hdr_write` for a header that was
//! not edited: the BAM's text after `sam_hdr_sanitise`, then, if no line of
//! it starts `@SQ\t`, one `@SQ` line per reference of the binary dictionary.

use super::bytes::c_str;
use super::format_number::{put_i64, put_kputd, put_printf_g, put_u64};
use crate::bam::record::{aux_elem_size, RecordRef, CIGAR_LETTERS};
use crate::bam::{Header, Reference};
use crate::Error;
use std::io::Write;
use std::ops::Range;


/// Two ASCII bases per sequence byte, as htslib's `nibble2base`.
static BASE_PAIRS: [[u8; 2]; 256] = {
    const CODES: &[u8; 16] = b"=ACMGRSVTWYHKDBN";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [CODES[i >> 4], CODES[i & 15]];
        i += 1;
    }
    t
};

/// Appends the SAM line of `rec` (with its final `'\n'`) to `out`; `refs`
/// are the header's references, by id. On error `out` is left as it was.
///
/// Fails, as htslib does, when the auxiliary data is corrupt (htslib:
/// "Corrupted aux data for read NAME") or a reference id has no name.
pub fn format_record(rec: &RecordRef<'_>, refs: &[Reference], out: &mut Vec<u8>) -> Result<(), Error> {
    let start = out.len();
    let r = format_fields(rec, refs, out);
    match r {
        Ok(()) => {
            out.push(b'\n');
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// Appends the SAM line of a record that may end with 64-bit positions
/// ([`crate::sam::Positions::Wide`]; `data` without its `block_size`):
/// formatted without that field, then POS, PNEXT and TLEN (columns 4, 8
/// and 9) put in from it as samtools prints them. `line` is scratch.
pub fn format_wide_record(data: &[u8], refs: &[Reference], out: &mut Vec<u8>, line: &mut Vec<u8>) -> Result<(), Error> {
    let wide_len = crate::sam::wide_positions_len(data);
    let core = RecordRef::new_prevalidated(&data[..data.len() - wide_len]);
    if wide_len == 0 {
        return format_record(&core, refs, out);
    }
    line.clear();
    format_record(&core, refs, line)?;
    let (pos, mpos, tlen) = crate::sam::wide_positions(data);
    let mut column = 0;
    let mut start = 0;
    for (i, &b) in line.iter().enumerate() {
        if b != b'\t' && b != b'\n' {
            continue;
        }
        let value = match column {
            3 => Some(pos + 1),
            7 => Some(mpos + 1),
            8 => Some(tlen),
            _ => None,
        };
        match value {
            Some(v) => out.extend_from_slice(v.to_string().as_bytes()),
            None => out.extend_from_slice(&line[start..i]),
        }
        out.push(b);
        column += 1;
        start = i + 1;
        if b == b'\n' {
            break;
        }
    }
    Ok(())
}

fn corrupt_aux(rec: &RecordRef<'_>) -> Error {
    Error::Message(format!("corrupted aux data for read {}", String::from_utf8_lossy(rec.name())))
}

fn format_fields(rec: &RecordRef<'_>, refs: &[Reference], out: &mut Vec<u8>) -> Result<(), Error> {
    let ref_name = |id: i32| -> Result<&[u8], Error> {
        let r = usize::try_from(id).ok().and_then(|i| refs.get(i));
        r.map(|r| c_str(r.name.as_bytes())).ok_or_else(|| Error::Message(format!("reference id {id} is not in the header")))
    };
    let aux = rec.aux_bytes();
    // bam_read1 moves a CG tag's CIGAR into place and drops the tag.
    let (cigar, cg_range) = match cg_cigar(rec, aux) {
        Ok(Some(cg)) => (cg.words, cg.tag),
        Ok(None) => (raw_cigar_bytes(rec), 0..0),
        Err(()) => return Err(corrupt_aux(rec)),
    };

    out.extend_from_slice(rec.name());
    out.push(b'\t');
    put_u64(out, u64::from(rec.flag()));
    out.push(b'\t');
    let tid = rec.ref_id();
    if tid >= 0 {
        out.extend_from_slice(ref_name(tid)?);
    } else {
        out.push(b'*');
    }
    out.push(b'\t');
    put_i64(out, i64::from(rec.pos()) + 1);
    out.push(b'\t');
    put_u64(out, u64::from(rec.mapq()));
    out.push(b'\t');
    if cigar.is_empty() {
        out.push(b'*');
    } else {
        for w in cigar.chunks_exact(4) {
            let w = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            put_u64(out, u64::from(w >> 4));
            out.push(CIGAR_LETTERS[(w & 15) as usize]);
        }
    }
    out.push(b'\t');
    let mtid = rec.mate_ref_id();
    if mtid < 0 {
        out.push(b'*');
    } else if mtid == tid {
        out.push(b'=');
    } else {
        out.extend_from_slice(ref_name(mtid)?);
    }
    out.push(b'\t');
    put_i64(out, i64::from(rec.mate_pos()) + 1);
    out.push(b'\t');
    put_i64(out, i64::from(rec.template_len()));
    out.push(b'\t');
    let l_seq = rec.seq_len();
    if l_seq == 0 {
        out.extend_from_slice(b"*\t*");
    } else {
        out.reserve(2 * l_seq + 2);
        let seq = rec.seq_raw();
        for &b in &seq[..l_seq / 2] {
            out.extend_from_slice(&BASE_PAIRS[usize::from(b)]);
        }
        if l_seq % 2 == 1 {
            out.push(BASE_PAIRS[usize::from(seq[l_seq / 2])][0]);
        }
        out.push(b'\t');
        // htslib looks at the first quality only.
        let qual = rec.qual();
        if qual[0] == 0xff {
            out.push(b'*');
        } else {
            out.extend(qual.iter().map(|q| q.wrapping_add(33)));
        }
    }
    // The aux fields, without the CG tag if it was moved into the CIGAR.
    format_aux(&aux[..cg_range.start], out).map_err(|()| corrupt_aux(rec))?;
    format_aux(&aux[cg_range.end..], out).map_err(|()| corrupt_aux(rec))?;
    Ok(())
}

/// The stored CIGAR's raw words (placed just before the sequence).
fn raw_cigar_bytes<'a>(rec: &RecordRef<'a>) -> &'a [u8] {
    let n = 4 * usize::from(rec.n_cigar_op());
    let data = rec.as_bytes();
    let start = data.len() - rec.aux_bytes().len() - rec.seq_len() - rec.seq_len().div_ceil(2) - n;
    &data[start..start + n]
}

/// htslib's `aux_type2size`: element size, or the type letter itself for
/// `Z`, `H` and `B`, or 0 for an unknown type.
fn aux_type2size(t: u8) -> usize {
    match t {
        b'Z' | b'H' | b'B' => usize::from(t),
        _ => aux_elem_size(t).unwrap_or(0),
    }
}

/// htslib's `skip_aux` from the type byte at `s`: the offset past the
/// value, `None` when it is malformed.
fn skip_aux(aux: &[u8], s: usize) -> Option<usize> {
    let end = aux.len();
    if s >= end {
        return Some(end);
    }
    let size = aux_type2size(aux[s]);
    let s = s + 1;
    match size {
        0x5a | 0x48 => {
            // 'Z' | 'H'
            let nul = aux[s..].iter().position(|&c| c == 0);
            Some(nul.map_or(end, |n| s + n + 1))
        }
        0x42 => {
            // 'B'
            if end - s < 5 {
                return None;
            }
            let size = aux_type2size(aux[s]) as u32;
            let n = u32::from_le_bytes([aux[s + 1], aux[s + 2], aux[s + 3], aux[s + 4]]);
            let s = s + 5;
            // `size * n` is unsigned int arithmetic in htslib: it wraps.
            let bytes = size.wrapping_mul(n) as usize;
            if size == 0 || end - s < bytes {
                return None;
            }
            Some(s + bytes)
        }
        0 => None,
        size => {
            if end - s < size {
                return None;
            }
            Some(s + size)
        }
    }
}

/// htslib's `bam_aux_get(b, "CG")`: `Ok(Some(offset of the type byte))`,
/// `Ok(None)` when absent, `Err` when the aux data is corrupt.
fn find_cg(aux: &[u8]) -> Result<Option<usize>, ()> {
    let end = aux.len();
    let mut s = 0;
    while end - s >= 3 {
        let key = [aux[s], aux[s + 1]];
        s += 2;
        let e = skip_aux(aux, s);
        if key == *b"CG" {
            let e = e.ok_or(())?;
            if matches!(aux[s], b'Z' | b'H') && aux[e - 1] != 0 {
                return Err(());
            }
            return Ok(Some(s));
        }
        s = e.ok_or(())?;
    }
    Ok(None)
}

/// A real CIGAR found in a CG tag.
struct CgCigar<'a> {
    /// The CIGAR's words.
    words: &'a [u8],
    /// Where the whole tag lies in the aux bytes.
    tag: Range<usize>,
}

/// htslib's `bam_tag2cigar` test: the real CIGAR when the record's CIGAR
/// is a placeholder for one held in `CG:B,I`.
fn cg_cigar<'a>(rec: &RecordRef<'a>, aux: &'a [u8]) -> Result<Option<CgCigar<'a>>, ()> {
    let n_cigar = usize::from(rec.n_cigar_op());
    if n_cigar == 0 || rec.ref_id() < 0 || rec.pos() < 0 {
        return Ok(None);
    }
    let first = raw_cigar_bytes(rec);
    let w = u32::from_le_bytes([first[0], first[1], first[2], first[3]]);
    if w & 15 != 4 || (w >> 4) as usize != rec.seq_len() {
        return Ok(None);
    }
    let Some(t) = find_cg(aux)? else { return Ok(None) };
    // skip_aux accepted it, so for type B the subtype and count are there.
    if aux[t] != b'B' || !matches!(aux[t + 1], b'I' | b'i') {
        return Ok(None);
    }
    let len = u32::from_le_bytes([aux[t + 2], aux[t + 3], aux[t + 4], aux[t + 5]]) as usize;
    if len < n_cigar || len >= 1 << 29 {
        return Ok(None);
    }
    let words = t + 6..t + 6 + 4 * len;
    Ok(Some(CgCigar { words: &aux[words.clone()], tag: t - 2..words.end }))
}

/// Appends `\tTAG:TYPE:VALUE` for each field of `aux` as
/// `sam_format1_append` does: fields are read while at least 4 bytes
/// remain (a shorter tail is ignored, as in htslib); `Err` when one is
/// malformed.
pub(crate) fn format_aux(aux: &[u8], out: &mut Vec<u8>) -> Result<(), ()> {
    let end = aux.len();
    let mut s = 0;
    while end - s >= 4 {
        out.push(b'\t');
        out.extend_from_slice(&aux[s..s + 2]);
        out.push(b':');
        let t = aux[s + 2];
        s += 3;
        match t {
            b'C' => {
                out.extend_from_slice(b"i:");
                put_u64(out, u64::from(aux[s]));
                s += 1;
            }
            b'c' => {
                out.extend_from_slice(b"i:");
                put_i64(out, i64::from(aux[s] as i8));
                s += 1;
            }
            b'S' | b's' => {
                let v = take(aux, s, 2)?;
                let v = [v[0], v[1]];
                out.extend_from_slice(b"i:");
                put_i64(out, if t == b'S' { i64::from(u16::from_le_bytes(v)) } else { i64::from(i16::from_le_bytes(v)) });
                s += 2;
            }
            b'I' | b'i' => {
                let v = take(aux, s, 4)?;
                let v = [v[0], v[1], v[2], v[3]];
                out.extend_from_slice(b"i:");
                put_i64(out, if t == b'I' { i64::from(u32::from_le_bytes(v)) } else { i64::from(i32::from_le_bytes(v)) });
                s += 4;
            }
            b'A' => {
                out.extend_from_slice(b"A:");
                out.push(aux[s]);
                s += 1;
            }
            b'f' => {
                let v = take(aux, s, 4)?;
                out.extend_from_slice(b"f:");
                put_printf_g(out, f64::from(f32::from_le_bytes([v[0], v[1], v[2], v[3]])));
                s += 4;
            }
            b'd' => {
                let v = take(aux, s, 8)?;
                out.extend_from_slice(b"d:");
                put_printf_g(out, f64::from_le_bytes(v.try_into().expect("8 bytes")));
                s += 8;
            }
            b'Z' | b'H' => {
                out.push(t);
                out.push(b':');
                let nul = aux[s..].iter().position(|&c| c == 0).ok_or(())?;
                out.extend_from_slice(&aux[s..s + nul]);
                s += nul + 1;
            }
            b'B' => {
                let sub = aux[s];
                s += 1;
                // htslib's B arrays take every element type but 'd'.
                let size = aux_elem_size(sub).filter(|_| sub != b'd').ok_or(())?;
                let n = u32::from_le_bytes(take(aux, s, 4)?.try_into().expect("4 bytes")) as usize;
                s += 4;
                if (end - s) / size < n {
                    return Err(());
                }
                out.extend_from_slice(b"B:");
                out.push(sub);
                let body = &aux[s..s + n * size];
                s += n * size;
                match sub {
                    b'c' => body.iter().for_each(|&v| put_elem(out, i64::from(v as i8))),
                    b'C' => body.iter().for_each(|&v| put_elem(out, i64::from(v))),
                    b's' => body.chunks_exact(2).for_each(|v| put_elem(out, i64::from(i16::from_le_bytes([v[0], v[1]])))),
                    b'S' => body.chunks_exact(2).for_each(|v| put_elem(out, i64::from(u16::from_le_bytes([v[0], v[1]])))),
                    b'i' => body.chunks_exact(4).for_each(|v| put_elem(out, i64::from(i32::from_le_bytes([v[0], v[1], v[2], v[3]])))),
                    b'I' => body.chunks_exact(4).for_each(|v| put_elem(out, i64::from(u32::from_le_bytes([v[0], v[1], v[2], v[3]])))),
                    b'f' => body.chunks_exact(4).for_each(|v| {
                        out.push(b',');
                        put_kputd(out, f64::from(f32::from_le_bytes([v[0], v[1], v[2], v[3]])));
                    }),
                    // 'A' passes the size check but htslib has no case for it.
                    _ => return Err(()),
                }
            }
            _ => return Err(()),
        }
    }
    Ok(())
}

/// `aux[s..s + n]`, or `Err` when fewer than `n` bytes remain.
fn take(aux: &[u8], s: usize, n: usize) -> Result<&[u8], ()> {
    aux.get(s..s + n).ok_or(())
}

fn put_elem(out: &mut Vec<u8>, v: i64) {
    out.push(b',');
    put_i64(out, v);
}

/// The header text `samtools view -h` prints for a BAM header that was not
/// edited (htslib's `sam_hdr_sanitise` at read, then `sam_hdr_write`):
/// the stored text, NUL padding included, with a newline put in place of
/// the first NUL (or appended) when the text before it does not end with
/// one; then, when no line starts `@SQ\t`, an `@SQ\tSN:name\tLN:len` line
/// for each reference.
///
/// Fails as htslib does ("Malformed SAM header at line N") when a line of
/// the text does not start with `@`.
///
/// A header edited through htslib's header API (as by `samtools sort`, or
/// `view` when it adds its `@PG` line) is written differently: as text
/// rebuilt from the parsed lines, without NULs, and with a stub
/// `@SQ\tSN:name\tLN:len` line, after the last `@SQ` line (or at the end),
/// for each reference the text lacks. Give such a header already rebuilt;
/// a text with an `@SQ` line, no NUL and a final newline passes through
/// unchanged.
pub fn format_header(header: &Header, out: &mut Vec<u8>) -> Result<(), Error> {
    let mut text = header.text.clone();
    sanitise_header_text(&mut text)?;
    out.extend_from_slice(&text);
    if !has_sq_line(c_str(&text)) {
        for r in &header.references {
            out.extend_from_slice(b"@SQ\tSN:");
            out.extend_from_slice(c_str(r.name.as_bytes()));
            out.extend_from_slice(b"\tLN:");
            // kputw of a uint32_t: lengths over 2^31-1 would print negative.
            put_i64(out, i64::from(r.len as i32));
            out.push(b'\n');
        }
    }
    Ok(())
}

/// `sam_hdr_sanitise`: checks that every line (up to the first NUL) starts
/// with `@`, and ends the text with a newline if it lacks one.
fn sanitise_header_text(text: &mut Vec<u8>) -> Result<(), Error> {
    if text.is_empty() {
        return Ok(());
    }
    let mut last = b'\n';
    let mut line = 0u32;
    let mut i = 0;
    while i < text.len() && text[i] != 0 {
        if last == b'\n' {
            line += 1;
            if text[i] != b'@' {
                return Err(Error::Message(format!("malformed SAM header at line {line}")));
            }
        }
        last = text[i];
        i += 1;
    }
    if last != b'\n' {
        if i < text.len() {
            text[i] = b'\n';
        } else {
            text.push(b'\n');
        }
    }
    Ok(())
}

/// Whether some line of `text` starts with `@SQ\t` (htslib's strstr loop).
fn has_sq_line(text: &[u8]) -> bool {
    text.windows(4).enumerate().any(|(i, w)| w == b"@SQ\t" && (i == 0 || text[i - 1] == b'\n'))
}

/// Formats batches of records on the rayon pool, in order, into buffers it
/// keeps between batches (so a stream of batches allocates nothing once
/// the buffers have grown to the batch size).
#[derive(Default)]
pub struct ParallelFormatter {
    /// One buffer per group of [`ParallelFormatter::GROUP`] records; only
    /// the first `used` hold the current batch.
    parts: Vec<Vec<u8>>,
    used: usize,
}

impl ParallelFormatter {
    /// Records per task: big enough to amortise a task, small enough to
    /// balance the threads.
    const GROUP: usize = 2048;

    /// A formatter with no buffers yet.
    pub fn new() -> ParallelFormatter {
        ParallelFormatter::default()
    }

    /// Formats `records`, replacing the previous batch. The same bytes as
    /// [`format_record`] on each in turn; on error the first failing
    /// record's error is returned and the batch is empty.
    pub fn format(&mut self, records: &[RecordRef<'_>], refs: &[Reference]) -> Result<(), Error> {
        use rayon::prelude::*;
        let groups = records.len().div_ceil(Self::GROUP);
        if self.parts.len() < groups {
            self.parts.resize_with(groups, Vec::new);
        }
        self.used = groups;
        let result = self.parts[..groups].par_iter_mut().zip(records.par_chunks(Self::GROUP)).try_for_each(|(buf, chunk)| {
            buf.clear();
            chunk.iter().try_for_each(|r| format_record(r, refs, buf))
        });
        if result.is_err() {
            self.used = 0;
        }
        result
    }

    /// The batch's text, in pieces, in record order.
    pub fn parts(&self) -> impl Iterator<Item = &[u8]> {
        self.parts[..self.used].iter().map(Vec::as_slice)
    }

    /// Appends the batch's text to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.parts().map(<[u8]>::len).sum());
        self.parts().for_each(|p| out.extend_from_slice(p));
    }
}

/// Formats `records` on the rayon pool and appends their lines to `out` in
/// order: the same bytes as calling [`format_record`] on each in turn. On
/// error `out` is left as it was and the first failing record's error is
/// returned. For a stream of batches, [`ParallelFormatter`] (or
/// [`SamWriter::write_records`]) reuses its buffers.
pub fn format_records_parallel(records: &[RecordRef<'_>], refs: &[Reference], out: &mut Vec<u8>) -> Result<(), Error> {
    let mut f = ParallelFormatter::new();
    f.format(records, refs)?;
    f.append_to(out);
    Ok(())
}

/// Writes SAM text: the header (optional, as `samtools view` without `-h`
/// omits it) and records, through one reused line buffer.
pub struct SamWriter<W: Write> {
    out: W,
    header: Header,
    buf: Vec<u8>,
    parallel: ParallelFormatter,
}

/// Bytes gathered before a write to the underlying writer.
const FLUSH_BYTES: usize = 1 << 16;

impl<W: Write> SamWriter<W> {
    /// A writer for records of `header`'s references.
    pub fn new(out: W, header: &Header) -> SamWriter<W> {
        SamWriter { out, header: header.clone(), buf: Vec::with_capacity(2 * FLUSH_BYTES), parallel: ParallelFormatter::new() }
    }

    /// Writes the header text (see [`format_header`]).
    pub fn write_header(&mut self) -> Result<(), Error> {
        format_header(&self.header, &mut self.buf)?;
        self.flush_if_full()
    }

    /// Writes one record's line.
    pub fn write_record(&mut self, rec: &RecordRef<'_>) -> Result<(), Error> {
        format_record(rec, &self.header.references, &mut self.buf)?;
        self.flush_if_full()
    }

    /// Writes a batch of records' lines, formatted on the rayon pool (the
    /// same bytes as [`SamWriter::write_record`] on each). On error nothing
    /// of the batch is written.
    pub fn write_records(&mut self, records: &[RecordRef<'_>]) -> Result<(), Error> {
        self.parallel.format(records, &self.header.references)?;
        self.flush_buf()?;
        for part in self.parallel.parts() {
            self.out.write_all(part)?;
        }
        Ok(())
    }

    fn flush_if_full(&mut self) -> Result<(), Error> {
        if self.buf.len() >= FLUSH_BYTES {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<(), Error> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Writes what is buffered, flushes, and returns the underlying writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.flush_buf()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::record::tests::encode;

    fn refs() -> Vec<Reference> {
        vec![Reference { name: "chr1".into(), len: 1000 }, Reference { name: "chr2".into(), len: 500 }]
    }

    /// Sets the mate reference id, mate position and template length of an
    /// encoded record.
    fn with_mate(mut d: Vec<u8>, mtid: i32, mpos: i32, tlen: i32) -> Vec<u8> {
        d[20..24].copy_from_slice(&mtid.to_le_bytes());
        d[24..28].copy_from_slice(&mpos.to_le_bytes());
        d[28..32].copy_from_slice(&tlen.to_le_bytes());
        d
    }

    fn line(d: &[u8]) -> String {
        let rec = RecordRef::new(d, 2).unwrap();
        let mut out = Vec::new();
        format_record(&rec, &refs(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fixed_fields_and_mate_reference() {
        let d = with_mate(encode("r1", 99, 0, 99, 60, &[(4, 2), (0, 5), (2, 3), (0, 1)], "ACGTNAGC", b""), 0, 199, 110);
        assert_eq!(line(&d), "r1\t99\tchr1\t100\t60\t2S5M3D1M\t=\t200\t110\tACGTNAGC\t????????\n");
        let d = with_mate(encode("r2", 65, 1, 0, 0, &[(0, 3)], "ACG", b""), 0, 5, -7);
        assert_eq!(line(&d), "r2\t65\tchr2\t1\t0\t3M\tchr1\t6\t-7\tACG\t???\n");
        // Unplaced: '*' for reference and CIGAR, positions print as 0.
        let d = encode("u", 4, -1, -1, 0, &[], "=ACMGRSVTWYHKDBN", b"");
        assert_eq!(line(&d), "u\t4\t*\t0\t0\t*\t*\t0\t0\t=ACMGRSVTWYHKDBN\t????????????????\n");
        // No sequence: '*' for both sequence and qualities.
        let d = encode("e", 4, -1, -1, 0, &[], "", b"");
        assert_eq!(line(&d), "e\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\n");
    }

    #[test]
    fn qualities_are_absent_when_the_first_is_0xff() {
        let mut d = encode("q", 4, -1, -1, 0, &[], "ACG", b"");
        let q = d.len() - 3;
        d[q] = 0xff;
        assert!(line(&d).ends_with("\tACG\t*\n"));
        d[q] = 0;
        d[q + 1] = 0xff;
        // Only the first is looked at; the others wrap like a C char.
        assert!(line(&d).ends_with("\tACG\t!\x20?\n"));
    }

    #[test]
    fn cigar_code_9_prints_as_b_and_higher_codes_as_question_marks() {
        let d = encode("c", 0, 0, 0, 0, &[(0, 2), (9, 1), (15, 1)], "AC", b"");
        assert!(line(&d).contains("\t2M1B1?\t"));
    }

    #[test]
    fn every_aux_type() {
        let mut aux = Vec::new();
        aux.extend_from_slice(b"XaAx");
        aux.extend_from_slice(b"Xcc\x80XCC\xff");
        aux.extend_from_slice(b"Xss\x00\x80XSS\xff\xff");
        aux.extend_from_slice(b"Xii\x00\x00\x00\x80XII\xff\xff\xff\xff");
        aux.extend_from_slice(b"Xff");
        aux.extend_from_slice(&0.1f32.to_le_bytes());
        aux.extend_from_slice(b"Xdd");
        aux.extend_from_slice(&1e-7f64.to_le_bytes());
        aux.extend_from_slice(b"XZZhello world\0XHH1AE3\0XEZ\0");
        aux.extend_from_slice(b"BcBc\x02\0\0\0\x80\x7f");
        aux.extend_from_slice(b"BCBC\x02\0\0\0\x00\xff");
        aux.extend_from_slice(b"BsBs\x01\0\0\0\x00\x80");
        aux.extend_from_slice(b"BSBS\x01\0\0\0\xff\xff");
        aux.extend_from_slice(b"BiBi\x01\0\0\0\x00\x00\x00\x80");
        aux.extend_from_slice(b"BIBI\x01\0\0\0\xff\xff\xff\xff");
        aux.extend_from_slice(b"BfBf\x03\0\0\0");
        for v in [123456.5f32, -0.0, 1e-5] {
            aux.extend_from_slice(&v.to_le_bytes());
        }
        aux.extend_from_slice(b"BeBi\0\0\0\0");
        // Fewer than 4 bytes left: ignored, as by htslib.
        aux.extend_from_slice(b"XAA");
        let d = encode("a", 4, -1, -1, 0, &[], "", &aux);
        let want =
            "a\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*\tXa:A:x\tXc:i:-128\tXC:i:255\tXs:i:-32768\tXS:i:65535\tXi:i:-2147483648\tXI:i:4294967295\
                    \tXf:f:0.1\tXd:d:1e-07\tXZ:Z:hello world\tXH:H:1AE3\tXE:Z:\tBc:B:c,-128,127\tBC:B:C,0,255\tBs:B:s,-32768\tBS:B:S,65535\
                    \tBi:B:i,-2147483648\tBI:B:I,4294967295\tBf:B:f,123457,-0,1e-05\tBe:B:i\n";
        assert_eq!(line(&d), want);
    }

    #[test]
    fn corrupt_aux_fails_and_leaves_the_buffer_alone() {
        let bad: &[&[u8]] = &[
            b"XZZunterminated",
            b"XBBA\x01\0\0\0x",
            b"XBBd\x01\0\0\0\0\0\0\0\0\0\0\0",
            b"XBBi\x02\0\0\0\0\0\0\0",
            b"XQq\0\0\0",
            b"XIi\0\0",
        ];
        for aux in bad {
            let d = encode("bad", 4, -1, -1, 0, &[], "", aux);
            let rec = RecordRef::new(&d, 2).unwrap();
            let mut out = b"kept".to_vec();
            let err = format_record(&rec, &refs(), &mut out).unwrap_err();
            assert_eq!(err.to_string(), "corrupted aux data for read bad", "{aux:?}");
            assert_eq!(out, b"kept");
        }
    }

    fn cg_tag(ops: &[(u32, u32)]) -> Vec<u8> {
        let mut aux = b"CGBI".to_vec();
        aux.extend_from_slice(&(ops.len() as u32).to_le_bytes());
        for &(op, n) in ops {
            aux.extend_from_slice(&((n << 4) | op).to_le_bytes());
        }
        aux
    }

    #[test]
    fn long_cigar_comes_from_the_cg_tag_which_is_dropped() {
        let mut aux = b"NMC\x01".to_vec();
        aux.extend(cg_tag(&[(0, 3), (1, 1), (0, 4)]));
        aux.extend_from_slice(b"XZZz\0");
        let d = encode("long", 0, 0, 9, 60, &[(4, 8), (3, 7)], "ACGTACGT", &aux);
        assert_eq!(line(&d), "long\t0\tchr1\t10\t60\t3M1I4M\t*\t0\t0\tACGTACGT\t????????\tNM:i:1\tXZ:Z:z\n");
        // Unplaced: the stored CIGAR and the tag are printed as they are.
        let d = encode("long", 4, -1, -1, 0, &[(4, 8), (3, 7)], "ACGTACGT", &aux);
        assert!(line(&d).contains("\t8S7N\t*\t0\t0\tACGTACGT\t????????\tNM:i:1\tCG:B:I,48,17,64\tXZ:Z:z\n"));
        // A CG tag shorter than the stored CIGAR is not used.
        let d = encode("short", 0, 0, 9, 60, &[(4, 8), (3, 7)], "ACGTACGT", &cg_tag(&[(0, 8)]));
        assert!(line(&d).contains("\t8S7N\t"));
    }

    #[test]
    fn header_text_as_samtools_view_prints_it() {
        let header = |text: &[u8]| Header { text: text.to_vec(), references: refs() };
        let fmt = |h: &Header| {
            let mut out = Vec::new();
            format_header(h, &mut out).map(|()| out)
        };
        let sq = b"@SQ\tSN:chr1\tLN:1000\n@SQ\tSN:chr2\tLN:500\n";
        // No @SQ line: synthesised from the binary dictionary.
        assert_eq!(fmt(&header(b"")).unwrap(), sq);
        assert_eq!(fmt(&header(b"@HD\tVN:1.6\n")).unwrap(), [&b"@HD\tVN:1.6\n"[..], sq].concat());
        // Some @SQ line: the text alone.
        let text = b"@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:1000\n";
        assert_eq!(fmt(&header(text)).unwrap(), text);
        // NUL padding is kept; a missing newline takes the first NUL's place.
        assert_eq!(fmt(&header(b"@HD\tVN:1.6\n\0\0")).unwrap(), [&b"@HD\tVN:1.6\n\0\0"[..], sq].concat());
        assert_eq!(fmt(&header(b"@HD\tVN:1.6\0\0")).unwrap(), [&b"@HD\tVN:1.6\n\0"[..], sq].concat());
        assert_eq!(fmt(&header(b"@SQ\tSN:chr1\tLN:1000")).unwrap(), b"@SQ\tSN:chr1\tLN:1000\n");
        // A line that does not start with '@'.
        assert_eq!(fmt(&header(b"@HD\tVN:1.6\n\n")).unwrap_err().to_string(), "malformed SAM header at line 2");
    }

    #[test]
    fn parallel_batches_equal_one_by_one() {
        let owned: Vec<Vec<u8>> =
            (0..5000).map(|i| encode(&format!("r{i}"), 0, i % 2, i * 3, (i % 61) as u8, &[(0, 4)], "ACGT", b"NMC\x01")).collect();
        let recs: Vec<RecordRef<'_>> = owned.iter().map(|d| RecordRef::new(d, 2).unwrap()).collect();
        let mut serial = Vec::new();
        for r in &recs {
            format_record(r, &refs(), &mut serial).unwrap();
        }
        let mut par = b"x".to_vec();
        format_records_parallel(&recs, &refs(), &mut par).unwrap();
        assert_eq!(&par[1..], &serial[..]);
        // A reused formatter: a smaller batch leaves nothing of the last one.
        let mut f = ParallelFormatter::new();
        f.format(&recs, &refs()).unwrap();
        f.format(&recs[..3000], &refs()).unwrap();
        let mut again = Vec::new();
        f.append_to(&mut again);
        let end_of_3000 = serial.iter().enumerate().filter(|(_, &c)| c == b'\n').nth(2999).unwrap().0 + 1;
        assert_eq!(again, &serial[..end_of_3000]);
        // A corrupt record anywhere fails the batch, which is then empty.
        let bad = encode("bad", 4, -1, -1, 0, &[], "", b"XZZno-nul");
        let mut with_bad = recs.clone();
        with_bad[4000] = RecordRef::new(&bad, 2).unwrap();
        assert!(f.format(&with_bad, &refs()).is_err());
        assert_eq!(f.parts().count(), 0);
        let mut w = SamWriter::new(Vec::new(), &Header { text: Vec::new(), references: refs() });
        w.write_records(&recs[..10]).unwrap();
        assert!(w.write_records(&with_bad).is_err());
        assert_eq!(w.finish().unwrap(), &serial[..serial.iter().enumerate().filter(|(_, &c)| c == b'\n').nth(9).unwrap().0 + 1]);
    }
}
