//! `fastq` / `fasta` (`bam2fq`): samtools 1.16's reads out of an alignment
//! file, byte for byte: the records of a name grouped as `bam2fq_mainloop`
//! groups them (the best copy of READ1, READ2 and other per name), written
//! to the files `flush_rec` picks, each formatted as htslib's
//! `fastq_format1` formats it.

use crate::bam::RecordRef;
use crate::cram::{CramOptions, Fields};
use crate::input::Input;
use crate::output::TempOutput;
use crate::whole_file::WholeFileCursor;
use crate::Error;
use fasthts_io::bgzf::{htslib_libdeflate_level, BgzfWriter, BLOCK_DATA_SIZE};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

const FLAG_PAIRED: u16 = 0x1;
const FLAG_UNMAPPED: u16 = 0x4;
const FLAG_REVERSE: u16 = 0x10;
const FLAG_READ1: u16 = 0x40;
const FLAG_READ2: u16 = 0x80;
const FLAG_QCFAIL: u16 = 0x200;

/// FASTQ (`fastq`, `bam2fq`) or FASTA (`fasta`) records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastxFormat {
    /// `@name`, bases, `+`, qualities.
    Fastq,
    /// `>name`, bases.
    Fasta,
}

/// Which aux fields follow the name (`-t`, `-T`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuxSelection {
    /// None.
    None,
    /// Every field (`-T '*'`).
    All,
    /// Those with these tags, in the record's order.
    Tags(Vec<[u8; 2]>),
}

impl AuxSelection {
    /// What samtools makes of `-t` and `-T LIST` (htslib's reading of the
    /// list: two-letter tags separated by commas, stopping at the first
    /// that is not, with a warning for it in `warnings`).
    pub fn from_options(copy_tags: bool, extra: Option<&str>, warnings: &mut Vec<String>) -> AuxSelection {
        if let Some(e) = extra {
            if e.is_empty() || e.starts_with('*') {
                return AuxSelection::All;
            }
        }
        let mut list = String::new();
        if copy_tags {
            list.push_str("RG,BC,QT");
        }
        if let Some(e) = extra {
            if !list.is_empty() {
                list.push(',');
            }
            list.push_str(e);
        }
        if list.is_empty() {
            return AuxSelection::None;
        }
        let t = list.as_bytes();
        let mut tags = Vec::new();
        let mut i = 0;
        // htslib: entries of three bytes, the third a comma or the end.
        while i + 3 <= t.len() + 1 {
            let third = t.get(i + 2).copied().unwrap_or(0);
            if t[i] == b',' || t.get(i + 1).copied().unwrap_or(0) == b',' || !(third == b',' || third == 0) || i + 1 >= t.len() {
                let shown: String = list.chars().skip(i).take(3).collect();
                warnings.push(format!("bad tag format '{shown}'; skipping option"));
                break;
            }
            tags.push([t[i], t[i + 1]]);
            i += 3;
        }
        AuxSelection::Tags(tags)
    }
}

/// What `fasthts fastq` is asked to do (samtools' options, read).
#[derive(Clone, Debug)]
pub struct FastqOptions {
    /// FASTQ or FASTA.
    pub format: FastxFormat,
    /// `-0`: reads neither READ1 nor READ2 (None: stdout).
    pub other: Option<PathBuf>,
    /// `-1` (or `-o`).
    pub read1: Option<PathBuf>,
    /// `-2` (or `-o`).
    pub read2: Option<PathBuf>,
    /// `-s`: a READ1 or READ2 whose mate is missing (None: with its mates).
    pub singletons: Option<PathBuf>,
    /// `--i1`, `--i2`: index reads from the barcode tag.
    pub index1: Option<PathBuf>,
    /// See `index1`.
    pub index2: Option<PathBuf>,
    /// `/1` and `/2` after paired reads' names (samtools' rule from `-n`,
    /// `-N`, `-1`/`-2`/`-o`, resolved by the caller).
    pub read_numbers: bool,
    /// `-i`: the Illumina CASAVA field after the name.
    pub casava: bool,
    /// `-O`: qualities from the OQ tag where present.
    pub use_oq: bool,
    /// `-t`, `-T`.
    pub aux: AuxSelection,
    /// `--barcode-tag` [BC].
    pub barcode_tag: [u8; 2],
    /// `--quality-tag` [QT].
    pub quality_tag: [u8; 2],
    /// `--index-format`.
    pub index_format: Option<String>,
    /// `-f`: every one of these flags.
    pub require_flags: u32,
    /// `-F`: none of these [0x900].
    pub exclude_flags: u32,
    /// `-G`: not all of these.
    pub exclude_all_flags: u32,
    /// `-v`: the quality of index reads without a quality tag [1].
    pub default_quality: u8,
    /// `-c`: BGZF level of `.gz`/`.bgz`/`.bgzf` outputs [1].
    pub compression_level: u32,
    /// `-@`.
    pub threads: Option<usize>,
    /// `--reference` of a CRAM input.
    pub reference: Option<PathBuf>,
}

impl Default for FastqOptions {
    fn default() -> FastqOptions {
        FastqOptions {
            format: FastxFormat::Fastq,
            other: None,
            read1: None,
            read2: None,
            singletons: None,
            index1: None,
            index2: None,
            read_numbers: true,
            casava: false,
            use_oq: false,
            aux: AuxSelection::None,
            barcode_tag: *b"BC",
            quality_tag: *b"QT",
            index_format: None,
            require_flags: 0,
            exclude_flags: 0x900,
            exclude_all_flags: 0,
            default_quality: 1,
            compression_level: 1,
            threads: None,
            reference: None,
        }
    }
}

/// What samtools reports at the end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastqSummary {
    /// Records that passed the flag filters.
    pub reads: u64,
    /// READ1/READ2 reads without their mate written to `-s`.
    pub singletons: u64,
}

/// One output: stdout or a file (plain, or BGZF by its name, as htslib's
/// `sam_open_z`), complete or absent.
struct Sink<'a> {
    name: Option<PathBuf>,
    writer: SinkWriter<'a>,
    temp: Option<TempOutput>,
}

enum SinkWriter<'a> {
    Plain(Box<dyn Write + Send + 'a>),
    Bgzf {
        writer: BgzfWriter<std::io::BufWriter<std::fs::File>>,
        /// Bytes in the block being filled (htslib's `block_offset`).
        filled: usize,
    },
}

impl Sink<'_> {
    /// Writes one record's text as htslib does: a BGZF block is ended
    /// before a record that would not fit in it (`bgzf_flush_try`).
    fn write(&mut self, text: &[u8]) -> std::io::Result<()> {
        match &mut self.writer {
            SinkWriter::Plain(w) => w.write_all(text),
            SinkWriter::Bgzf { writer, filled } => {
                if *filled + text.len() > BLOCK_DATA_SIZE {
                    writer.end_block()?;
                    *filled = 0;
                }
                writer.write_all(text)?;
                // A record longer than a block is cut by the writer as
                // htslib's bgzf_write cuts it.
                *filled = (*filled + text.len()) % BLOCK_DATA_SIZE;
                Ok(())
            }
        }
    }
}

/// The buffer of a plain output: records of a chunk arrive in one write,
/// which a smaller buffer passes straight through.
const PLAIN_BUFFER: usize = 64 << 10;

fn is_bgzf_name(path: &Path) -> bool {
    let name = path.as_os_str().as_encoded_bytes();
    (name.len() > 3 && name.ends_with(b".gz"))
        || (name.len() > 4 && name.ends_with(b".bgz"))
        || (name.len() > 5 && name.ends_with(b".bgzf"))
}

/// The outputs and which of them each kind of read goes to.
struct Outputs<'a> {
    sinks: Vec<Sink<'a>>,
    /// other, READ1, READ2.
    reads: [usize; 3],
    singletons: Option<usize>,
    index: [Option<usize>; 2],
}

impl<'a> Outputs<'a> {
    fn open(options: &FastqOptions, stdout: &'a mut (dyn Write + Send)) -> Result<Outputs<'a>, Error> {
        let mut sinks: Vec<Sink<'a>> = Vec::new();
        let mut stdout = Some(stdout);
        let mut by_name = |name: Option<&PathBuf>, sinks: &mut Vec<Sink<'a>>| -> Result<usize, Error> {
            if let Some(i) = sinks.iter().position(|s| s.name.as_ref() == name) {
                return Ok(i);
            }
            let sink = match name {
                None => Sink {
                    name: None,
                    // A chunk's text (~100-200 kB) goes past a buffer this
                    // size without being copied into it.
                    writer: SinkWriter::Plain(Box::new(std::io::BufWriter::with_capacity(PLAIN_BUFFER, stdout.take().expect("stdout once")))),
                    temp: None,
                },
                Some(path) => {
                    let (temp, file) = TempOutput::create(path)?;
                    let file = std::io::BufWriter::with_capacity(PLAIN_BUFFER, file);
                    let writer = if is_bgzf_name(path) {
                        let level = htslib_libdeflate_level(options.compression_level);
                        SinkWriter::Bgzf { writer: BgzfWriter::with_libdeflate_level(file, level), filled: 0 }
                    } else {
                        SinkWriter::Plain(Box::new(file))
                    };
                    Sink { name: Some(path.clone()), writer, temp: Some(temp) }
                }
            };
            sinks.push(sink);
            Ok(sinks.len() - 1)
        };
        // samtools opens the singleton file first, then -0, -1, -2 (stdout
        // for those not given), then the index files.
        let singletons = options.singletons.as_ref().map(|p| by_name(Some(p), &mut sinks)).transpose()?;
        let reads = [
            by_name(options.other.as_ref(), &mut sinks)?,
            by_name(options.read1.as_ref(), &mut sinks)?,
            by_name(options.read2.as_ref(), &mut sinks)?,
        ];
        let index = [
            options.index1.as_ref().map(|p| by_name(Some(p), &mut sinks)).transpose()?,
            options.index2.as_ref().map(|p| by_name(Some(p), &mut sinks)).transpose()?,
        ];
        Ok(Outputs { sinks, reads, singletons, index })
    }

    /// Whether `sink` takes text as it comes (not cut into BGZF blocks
    /// record by record).
    fn is_plain(&self, sink: usize) -> bool {
        matches!(self.sinks[sink].writer, SinkWriter::Plain(_))
    }

    fn write(&mut self, sink: usize, text: &[u8]) -> Result<(), Error> {
        let s = &mut self.sinks[sink];
        s.write(text).map_err(|e| match &s.name {
            Some(p) => Error::from(e).with_path(p),
            None => Error::from(e),
        })
    }

    fn finish(self) -> Result<(), Error> {
        let mut temps = Vec::new();
        for sink in self.sinks {
            let name = sink.name.clone();
            let wrap = |e: std::io::Error| match &name {
                Some(p) => Error::from(e).with_path(p),
                None => Error::from(e),
            };
            match sink.writer {
                SinkWriter::Plain(mut w) => w.flush().map_err(wrap)?,
                SinkWriter::Bgzf { writer, .. } => {
                    writer.finish().and_then(|mut f| f.flush()).map_err(wrap)?;
                }
            }
            temps.extend(sink.temp);
        }
        for t in temps {
            t.commit()?;
        }
        Ok(())
    }
}

/// A record as `fastq_format1` reads it.
struct Read<'r> {
    name: &'r [u8],
    flag: u16,
    /// 4-bit codes, one per base.
    bases: Bases<'r>,
    qual: Option<&'r [u8]>,
    aux: &'r [u8],
}

enum Bases<'r> {
    /// BAM's packed 4-bit codes and the read's length.
    Packed(&'r [u8], usize),
    /// One code per byte (an index read).
    Codes(&'r [u8]),
}

impl Bases<'_> {
    fn len(&self) -> usize {
        match self {
            Bases::Packed(_, n) => *n,
            Bases::Codes(c) => c.len(),
        }
    }
}

/// htslib's `fastq_format1`, appended to `out`.
fn format_read(read: &Read<'_>, options: &FastqOptions, out: &mut Vec<u8>) -> Result<(), ()> {
    let len = read.bases.len();
    if len == 0 {
        return Ok(());
    }
    let flag = read.flag;
    out.push(if options.format == FastxFormat::Fastq { b'@' } else { b'>' });
    out.extend_from_slice(read.name);
    if options.read_numbers && flag & FLAG_PAIRED != 0 {
        match flag & (FLAG_READ1 | FLAG_READ2) {
            FLAG_READ1 => out.extend_from_slice(b"/1"),
            FLAG_READ2 => out.extend_from_slice(b"/2"),
            _ => {}
        }
    }
    if options.casava {
        let rnum = if flag & FLAG_READ1 != 0 {
            b'1'
        } else if flag & FLAG_READ2 != 0 {
            b'2'
        } else {
            b'0'
        };
        out.extend_from_slice(&[b' ', rnum, b':', if flag & FLAG_QCFAIL != 0 { b'Y' } else { b'N' }, b':', b'0', b':']);
        match find_aux(read.aux, options.barcode_tag) {
            Some(field) => {
                // The value after the type byte, up to its NUL; every
                // character that is not a letter becomes '+'.
                let value = &field[3..];
                let value = &value[..value.iter().position(|&c| c == 0).unwrap_or(value.len())];
                out.extend(value.iter().map(|&c| if c.is_ascii_alphabetic() { c } else { b'+' }));
            }
            None => out.push(b'0'),
        }
    }
    match &options.aux {
        AuxSelection::None => {}
        selection => {
            let aux = read.aux;
            let mut s = 0;
            while aux.len() - s >= 4 {
                let size = aux_field_len(&aux[s..]).ok_or(())?;
                let tag = [aux[s], aux[s + 1]];
                if matches!(selection, AuxSelection::All) || matches!(selection, AuxSelection::Tags(t) if t.contains(&tag)) {
                    crate::sam::format_aux(&aux[s..s + size], out)?;
                }
                s += size;
            }
        }
    }
    out.push(b'\n');
    let reverse = flag & FLAG_REVERSE != 0;
    match read.bases {
        Bases::Packed(packed, _) => push_packed_bases(packed, len, reverse, out),
        Bases::Codes(codes) if reverse => out.extend(codes.iter().rev().map(|&c| COMPLEMENT[usize::from(c & 0xf)])),
        Bases::Codes(codes) => out.extend(codes.iter().map(|&c| FORWARD[usize::from(c & 0xf)])),
    }
    if options.format == FastxFormat::Fastq {
        out.extend_from_slice(b"\n+\n");
        match read.qual {
            Some(q) if q.first() != Some(&0xff) => {
                if flag & FLAG_REVERSE != 0 {
                    out.extend(q.iter().rev().map(|&v| v.wrapping_add(33)));
                } else {
                    out.extend(q.iter().map(|&v| v.wrapping_add(33)));
                }
            }
            _ => out.extend(std::iter::repeat(b'B').take(len)),
        }
    }
    out.push(b'\n');
    Ok(())
}

/// The base of each 4-bit code, and of its complement.
const FORWARD: &[u8; 16] = b"=ACMGRSVTWYHKDBN";
const COMPLEMENT: &[u8; 16] = b"!TGKCYSBAWRDMHVN";

/// The two bases of each packed byte (high nibble first), and the two of
/// its reverse complement (the low nibble's complement first): a byte at
/// a time instead of a nibble at a time (a tenth of fastq's CPU went to
/// the nibble loop).
const FORWARD_PAIRS: [[u8; 2]; 256] = base_pairs(false);
const REVERSE_PAIRS: [[u8; 2]; 256] = base_pairs(true);

const fn base_pairs(reverse: bool) -> [[u8; 2]; 256] {
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        let (high, low) = (b >> 4, b & 0xf);
        pairs[b] = if reverse { [COMPLEMENT[low], COMPLEMENT[high]] } else { [FORWARD[high], FORWARD[low]] };
        b += 1;
    }
    pairs
}

/// The `len` bases packed two per byte in `packed`, as text, reverse
/// complemented when `reverse`, appended to `out`.
fn push_packed_bases(packed: &[u8], len: usize, reverse: bool, out: &mut Vec<u8>) {
    let (whole, odd) = (len / 2, len % 2 == 1);
    let start = out.len();
    out.resize(start + len, 0);
    let text = &mut out[start..];
    if reverse {
        // The last base (a lone high nibble when `len` is odd) comes first.
        let (first, rest) = text.split_at_mut(usize::from(odd));
        if odd {
            first[0] = COMPLEMENT[usize::from(packed[whole] >> 4)];
        }
        for (pair, &b) in rest.chunks_exact_mut(2).zip(packed[..whole].iter().rev()) {
            pair.copy_from_slice(&REVERSE_PAIRS[usize::from(b)]);
        }
    } else {
        for (pair, &b) in text.chunks_exact_mut(2).zip(&packed[..whole]) {
            pair.copy_from_slice(&FORWARD_PAIRS[usize::from(b)]);
        }
        if odd {
            text[len - 1] = FORWARD[usize::from(packed[whole] >> 4)];
        }
    }
}

/// The length of the aux field at the start of `aux` (tag, type, value).
fn aux_field_len(aux: &[u8]) -> Option<usize> {
    let size = match *aux.get(2)? {
        b'A' | b'c' | b'C' => 1,
        b's' | b'S' => 2,
        b'i' | b'I' | b'f' => 4,
        b'd' => 8,
        b'Z' | b'H' => aux[3..].iter().position(|&c| c == 0)? + 1,
        b'B' => {
            let elem = match *aux.get(3)? {
                b'c' | b'C' => 1,
                b's' | b'S' => 2,
                b'i' | b'I' | b'f' => 4,
                _ => return None,
            };
            let n = u32::from_le_bytes(aux.get(4..8)?.try_into().ok()?) as usize;
            5 + n.checked_mul(elem)?
        }
        _ => return None,
    };
    let total = 3 + size;
    (total <= aux.len()).then_some(total)
}

/// The whole field (tag, type, value) of `tag` (htslib's `bam_aux_get`).
fn find_aux(aux: &[u8], tag: [u8; 2]) -> Option<&[u8]> {
    let mut s = 0;
    while aux.len() - s >= 3 {
        let size = aux_field_len(&aux[s..])?;
        if aux[s..s + 2] == tag {
            return Some(&aux[s..s + size]);
        }
        s += size;
    }
    None
}

/// The `Z` value (without its NUL) of `tag`.
fn find_string(aux: &[u8], tag: [u8; 2]) -> Option<&[u8]> {
    let field = find_aux(aux, tag)?;
    let value = &field[3..];
    Some(&value[..value.iter().position(|&c| c == 0).unwrap_or(value.len())])
}

/// A record kept while its name's group is read: its BAM bytes (owned,
/// its buffer reused).
#[derive(Default)]
struct Slot {
    data: Vec<u8>,
}

/// Offsets into a BAM record's bytes (no block size).
struct Layout {
    seq: std::ops::Range<usize>,
    qual: std::ops::Range<usize>,
    aux: usize,
    len: usize,
}

/// Where the parts of a record's BAM bytes (from its `refID`) lie.
fn layout(d: &[u8]) -> Layout {
    let l_name = d[8] as usize;
    let n_cigar = u16::from_le_bytes([d[12], d[13]]) as usize;
    let len = i32::from_le_bytes([d[16], d[17], d[18], d[19]]).max(0) as usize;
    let name_end = 32 + l_name;
    let seq = name_end + 4 * n_cigar..name_end + 4 * n_cigar + len.div_ceil(2);
    let qual = seq.end..seq.end + len;
    Layout { aux: qual.end, seq, qual, len }
}

fn record_flag(d: &[u8]) -> u16 {
    u16::from_le_bytes([d[14], d[15]])
}

/// The name without its NUL.
fn record_name(d: &[u8]) -> &[u8] {
    let n = &d[32..32 + usize::from(d[8])];
    &n[..n.iter().position(|&c| c == 0).unwrap_or(n.len())]
}

/// A record's bytes as `fastq_format1` reads them.
fn read_of(d: &[u8]) -> Read<'_> {
    let l = layout(d);
    Read {
        name: record_name(d),
        flag: record_flag(d),
        bases: Bases::Packed(&d[l.seq.clone()], l.len),
        qual: Some(&d[l.qual.clone()]),
        aux: &d[l.aux..],
    }
}

impl Slot {
    fn layout(&self) -> Layout {
        layout(&self.data)
    }

    fn flag(&self) -> u16 {
        record_flag(&self.data)
    }

    fn name(&self) -> &[u8] {
        record_name(&self.data)
    }

    /// htslib's `bam_aux_update_str`: a `Z` field of `tag` takes `value`
    /// where it is; another kind is removed; a missing one is appended.
    fn update_string(&mut self, tag: [u8; 2], value: &[u8]) {
        let aux_start = self.layout().aux;
        let aux = &self.data[aux_start..];
        let mut s = 0;
        let mut found = None;
        while aux.len() - s >= 3 {
            let Some(size) = aux_field_len(&aux[s..]) else { break };
            if aux[s..s + 2] == tag {
                found = Some((s, size, aux[s + 2]));
                break;
            }
            s += size;
        }
        let mut field = Vec::with_capacity(value.len() + 4);
        field.extend_from_slice(&tag);
        field.push(b'Z');
        field.extend_from_slice(value);
        field.push(0);
        match found {
            Some((at, size, b'Z')) => {
                let at = aux_start + at;
                self.data.splice(at..at + size, field);
            }
            Some((at, size, _)) => {
                let at = aux_start + at;
                self.data.drain(at..at + size);
                self.data.extend_from_slice(&field);
            }
            None => self.data.extend_from_slice(&field),
        }
    }
}

/// A record to write: its bytes in the batch's arena, and for an index
/// read the codes and qualities that replace its bases.
struct Job {
    sink: usize,
    record: std::ops::Range<usize>,
    index: Option<(std::ops::Range<usize>, std::ops::Range<usize>)>,
}

/// Records waiting to be formatted (on the pool, in chunks) and written
/// in order. The arena and job list are reused.
#[derive(Default)]
struct Batch {
    arena: Vec<u8>,
    jobs: Vec<Job>,
    /// The text and job ends of each chunk of a batch written before,
    /// formatted into again: fresh buffers cost a page fault per page
    /// written (and glibc's trimming hands them back each time), 13 % of
    /// fastq's CPU at -@2.
    buffers: Vec<(Vec<u8>, Vec<usize>)>,
}

/// Records per batch, and per chunk a worker formats.
const BATCH_JOBS: usize = 16 * 1024;
const CHUNK_JOBS: usize = 512;
/// Record bytes per batch.
const BATCH_BYTES: usize = 16 << 20;

/// A batch's text, per chunk of its jobs: the text, the end of each job's
/// text in it, and whether every job of the chunk was formatted (the
/// first whose aux data is malformed ends it).
type Formatted = Vec<(Vec<u8>, Vec<usize>, bool)>;

impl Batch {
    fn is_full(&self) -> bool {
        self.jobs.len() >= BATCH_JOBS || self.arena.len() >= BATCH_BYTES
    }

    fn clear(&mut self) {
        self.jobs.clear();
        self.arena.clear();
    }

    /// The jobs' text, formatted on the pool in chunks, into the
    /// buffers of a batch written before.
    fn format(&mut self, options: &FastqOptions) -> Formatted {
        use rayon::prelude::*;
        let mut buffers = std::mem::take(&mut self.buffers);
        buffers.resize_with(self.jobs.len().div_ceil(CHUNK_JOBS), Default::default);
        let arena = &self.arena;
        self.jobs
            .par_chunks(CHUNK_JOBS)
            .zip(buffers.into_par_iter())
            .map(|(jobs, (mut text, mut ends))| {
                text.clear();
                ends.clear();
                // About the records' size (FASTQ text of a plain read is
                // a little longer than its BAM bytes): grown a few times
                // per chunk instead of a dozen.
                let record_bytes = jobs.last().map_or(0, |j| j.record.end) - jobs.first().map_or(0, |j| j.record.start);
                text.reserve(record_bytes + 32 * jobs.len());
                ends.reserve(jobs.len());
                for job in jobs {
                    let bytes = &arena[job.record.clone()];
                    let formatted = match &job.index {
                        None => format_read(&read_of(bytes), options, &mut text),
                        Some((codes, qual)) => {
                            let l = layout(bytes);
                            let read = Read {
                                name: record_name(bytes),
                                flag: (record_flag(bytes) | FLAG_UNMAPPED) & !FLAG_REVERSE,
                                bases: Bases::Codes(&arena[codes.clone()]),
                                qual: Some(&arena[qual.clone()]),
                                aux: &bytes[l.aux..],
                            };
                            format_read(&read, options, &mut text)
                        }
                    };
                    if formatted.is_err() {
                        return (text, ends, false);
                    }
                    ends.push(text.len());
                }
                (text, ends, true)
            })
            .collect()
    }

    /// Writes the batch's `formatted` text in order, up to the first job
    /// whose aux data is malformed.
    fn write(&self, formatted: &Formatted, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let mut job = 0;
        for (text, ends, complete) in formatted {
            // Consecutive records for the same plain sink go in one write
            // (a BGZF sink takes each record on its own: it ends a block
            // before a record that would not fit).
            let mut run: Option<(usize, usize)> = None;
            let mut start = 0;
            for &end in ends {
                let sink = self.jobs[job].sink;
                match run {
                    Some((s, _)) if s == sink => {}
                    _ => {
                        if let Some((s, from)) = run.take() {
                            outputs.write(s, &text[from..start])?;
                        }
                        if outputs.is_plain(sink) {
                            run = Some((sink, start));
                        } else {
                            outputs.write(sink, &text[start..end])?;
                        }
                    }
                }
                start = end;
                job += 1;
            }
            if let Some((s, from)) = run {
                outputs.write(s, &text[from..start])?;
            }
            if !complete {
                return Err(Error::Message("malformed aux data".into()));
            }
        }
        Ok(())
    }
}

/// The batches of a run: one filled by the grouping of reads (which stays
/// sequential) while the one before it is formatted on the pool, then
/// written, in order. Grouping while the pool formatted nothing, then
/// waiting for it, took 1.72 s for a collated 300 MB BAM at -@2; with the
/// two overlapped, 1.51 s (two batches held: 40 MB peak instead of 26).
struct Batches {
    options: Arc<FastqOptions>,
    filling: Batch,
    /// The batch being formatted, and its text when done.
    in_flight: Option<mpsc::Receiver<(Batch, Formatted)>>,
    /// A written batch, cleared, to fill next.
    spare: Option<Batch>,
}

impl Batches {
    fn new(options: &FastqOptions) -> Batches {
        Batches { options: Arc::new(options.clone()), filling: Batch::default(), in_flight: None, spare: None }
    }

    /// Sends the batch being filled to be formatted if it is full, and
    /// writes the one before it.
    fn submit_if_full(&mut self, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        if self.filling.is_full() {
            self.submit(outputs)?;
        }
        Ok(())
    }

    fn submit(&mut self, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let mut batch = std::mem::replace(&mut self.filling, self.spare.take().unwrap_or_default());
        let (done, text) = mpsc::sync_channel(1);
        let options = Arc::clone(&self.options);
        let before = self.in_flight.replace(text);
        rayon::spawn(move || {
            let formatted = batch.format(&options);
            // The receiver is gone only when the run failed.
            let _ = done.send((batch, formatted));
        });
        match before {
            Some(text) => self.write(text, outputs),
            None => Ok(()),
        }
    }

    /// Waits for a batch's text, helping the pool meanwhile, and writes it.
    fn write(&mut self, text: mpsc::Receiver<(Batch, Formatted)>, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let (mut batch, formatted) = loop {
            match text.try_recv() {
                Ok(done) => break done,
                Err(mpsc::TryRecvError::Disconnected) => unreachable!("a formatting task ends by sending its text"),
                Err(mpsc::TryRecvError::Empty) => {
                    // Run the pool's pending work (the chunks of that
                    // batch among it); with none, wait a moment.
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        if let Ok(done) = text.recv_timeout(std::time::Duration::from_micros(100)) {
                            break done;
                        }
                    }
                }
            }
        };
        batch.write(&formatted, outputs)?;
        batch.clear();
        batch.buffers = formatted.into_iter().map(|(text, ends, _)| (text, ends)).collect();
        self.spare = Some(batch);
        Ok(())
    }

    /// Formats and writes what is left, in order.
    fn finish(&mut self, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        if let Some(text) = self.in_flight.take() {
            self.write(text, outputs)?;
        }
        let formatted = self.filling.format(&self.options);
        self.filling.write(&formatted, outputs)
    }
}

/// `READ1`, `READ2` or other (samtools' `which_readpart`: 1, 2, 0).
fn read_part(flag: u16) -> usize {
    match flag & (FLAG_READ1 | FLAG_READ2) {
        FLAG_READ1 => 1,
        FLAG_READ2 => 2,
        _ => 0,
    }
}

/// samtools fastq of `input` (BAM, SAM, CRAM, `-` for standard input),
/// written to the options' files (each complete or absent) and the rest
/// to `stdout`.
pub fn fastq_file(input: &Path, options: &FastqOptions, stdout: &mut (dyn Write + Send)) -> Result<FastqSummary, Error> {
    fasthts_io::pool::with_threads(options.threads, || {
        let cram = CramOptions {
            reference: options.reference.clone(),
            fields: Fields::All,
            threads: fasthts_io::pool::thread_count(options.threads),
        };
        let source = crate::input::open_with(input, &cram)?;
        let mut outputs = Outputs::open(options, stdout)?;
        let mut state = Grouping::new(options);
        match source {
            // A mapped BAM: the next batches inflate on the pool while
            // this thread groups (a cursor inflates each batch on the
            // thread that asks, which left the grouping thread with 69 %
            // of the work at -@2).
            Input::Bam(bam) => {
                crate::bam::scan(&bam, |r, _| state.add(r, &mut outputs))?;
            }
            source => {
                let mut cursor = WholeFileCursor::new(source, input);
                let mut failure: Option<Error> = None;
                loop {
                    let got = cursor.fill(4096, &mut |r| {
                        if failure.is_none() {
                            if let Err(e) = state.add(r, &mut outputs) {
                                failure = Some(e);
                            }
                        }
                    })?;
                    if let Some(e) = failure.take() {
                        return Err(e);
                    }
                    if got == 0 {
                        break;
                    }
                }
            }
        }
        state.flush(&mut outputs)?;
        outputs.finish()?;
        Ok(state.summary)
    })
}

/// `bam2fq_mainloop`'s state: four record slots, the best copy of each
/// read part of the current name, its scores.
struct Grouping<'o> {
    options: &'o FastqOptions,
    slots: [Slot; 4],
    /// The slot the next record is read into (samtools' `n`).
    next: usize,
    /// The slot holding the current name (samtools' `current_qname`
    /// points into a slot, which a later record may overwrite).
    current: Option<usize>,
    best: [Option<usize>; 3],
    score: [u8; 3],
    summary: FastqSummary,
    /// Records to write, formatted together on the pool.
    batch: Batches,
}

impl<'o> Grouping<'o> {
    fn new(options: &'o FastqOptions) -> Grouping<'o> {
        Grouping {
            options,
            slots: Default::default(),
            next: 0,
            current: None,
            best: [None; 3],
            score: [0; 3],
            summary: FastqSummary::default(),
            batch: Batches::new(options),
        }
    }

    fn filtered_out(&self, flag: u32) -> bool {
        let o = self.options;
        flag & o.require_flags != o.require_flags
            || flag & o.exclude_flags != 0
            || (flag & o.exclude_all_flags != 0 && flag & o.exclude_all_flags == o.exclude_all_flags)
    }

    fn add(&mut self, r: &RecordRef<'_>, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        if self.filtered_out(u32::from(r.flag())) {
            return Ok(());
        }
        self.summary.reads += 1;
        let n = self.next;
        let slot = &mut self.slots[n];
        slot.data.clear();
        slot.data.extend_from_slice(r.as_bytes());
        if self.options.use_oq {
            let l = slot.layout();
            if let Some(oq) = find_aux(&slot.data[l.aux..], *b"OQ").filter(|f| f[2] == b'Z') {
                let oq: Vec<u8> = oq[3..].iter().take_while(|&&c| c != 0).map(|&c| c.wrapping_sub(b'!')).collect();
                let n = oq.len().min(l.len);
                slot.data[l.qual.start..l.qual.start + n].copy_from_slice(&oq[..n]);
            }
        }
        let new_name = match self.current {
            None => true,
            Some(c) => c != n && self.slots[c].name() != self.slots[n].name(),
        };
        if new_name {
            if self.current.is_some() {
                self.flush_group(outputs)?;
            }
            self.current = Some(n);
            self.score = [0; 3];
        }
        // Prefer a copy of the read that has base qualities.
        let slot = &self.slots[n];
        let l = slot.layout();
        let first_qual = slot.data.get(l.qual.start).copied().unwrap_or(0);
        let score = if first_qual != 0xff { 2 } else { 1 };
        let part = read_part(slot.flag());
        if self.score[part] < score {
            self.score[part] = score;
            self.best[part] = Some(n);
            let mut used = [false; 4];
            for b in self.best.iter().flatten() {
                used[*b] = true;
            }
            self.next = (0..4).find(|&i| !used[i]).unwrap_or(4);
        }
        Ok(())
    }

    /// The end of the input: the last name's reads.
    fn flush(&mut self, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        if self.current.is_some() {
            self.flush_group(outputs)?;
        }
        self.batch.finish(outputs)
    }

    fn write_slot(&mut self, slot: usize, sink: usize, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let batch = &mut self.batch.filling;
        let start = batch.arena.len();
        batch.arena.extend_from_slice(&self.slots[slot].data);
        batch.jobs.push(Job { sink, record: start..batch.arena.len(), index: None });
        self.batch.submit_if_full(outputs)
    }

    /// samtools' `flush_rec`.
    fn flush_group(&mut self, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let [s0, s1, s2] = self.score;
        let best = self.best;
        if s1 > 0 && s2 > 0 {
            let (b1, b2) = (best[1].expect("scored"), best[2].expect("scored"));
            if self.options.casava {
                let r1_aux_start = self.slots[b1].layout().aux;
                for tag in [self.options.barcode_tag, self.options.quality_tag] {
                    if let Some(field) = find_aux(&self.slots[b1].data[r1_aux_start..], tag) {
                        // htslib copies the value bytes after the type byte.
                        let value: Vec<u8> = field[3..].iter().take_while(|&&c| c != 0).copied().collect();
                        self.slots[b2].update_string(tag, &value);
                    }
                }
            }
            self.write_slot(b1, outputs.reads[1], outputs)?;
            self.write_slot(b2, outputs.reads[2], outputs)?;
            self.write_index(Some(b1), Some(b2), outputs)?;
        } else if s1 > 0 || s2 > 0 {
            let (part, slot) = if s1 > 0 { (1, best[1].expect("scored")) } else { (2, best[2].expect("scored")) };
            match outputs.singletons {
                Some(sink) => {
                    self.write_slot(slot, sink, outputs)?;
                    self.summary.singletons += 1;
                }
                None => self.write_slot(slot, outputs.reads[part], outputs)?,
            }
            let (a, b) = if s1 > 0 { (Some(slot), None) } else { (None, Some(slot)) };
            self.write_index(a, b, outputs)?;
        }
        if s0 > 0 {
            let slot = best[0].expect("scored");
            self.write_slot(slot, outputs.reads[0], outputs)?;
            self.write_index(Some(slot), None, outputs)?;
        }
        Ok(())
    }

    /// samtools' `output_index`: the barcode tag cut into index reads by
    /// `--index-format`.
    fn write_index(&mut self, b1: Option<usize>, b2: Option<usize>, outputs: &mut Outputs<'_>) -> Result<(), Error> {
        let o = self.options;
        // Without index files and with the default format (which cannot
        // fail) nothing comes of it: skip looking for the barcode tag.
        if outputs.index == [None, None] && o.index_format.is_none() {
            return Ok(());
        }
        let aux_of = |s: Option<usize>| s.map(|s| &self.slots[s].data[self.slots[s].layout().aux..]);
        let (a1, a2) = (aux_of(b1), aux_of(b2));
        let Some(bc) = a1.and_then(|a| find_string(a, o.barcode_tag)).or_else(|| a2.and_then(|a| find_string(a, o.barcode_tag))) else {
            return Ok(());
        };
        let qt = a1.and_then(|a| find_string(a, o.quality_tag)).or_else(|| a2.and_then(|a| find_string(a, o.quality_tag)));
        let qt = qt.filter(|q| q.len() == bc.len());
        let (bc, qt) = (bc.to_vec(), qt.map(<[u8]>::to_vec));
        let record = b1.or(b2).expect("a record");
        let format = o.index_format.clone().unwrap_or_else(|| "i*i*".into());
        let f = format.as_bytes();
        let (mut fi, mut at, mut inum) = (0usize, 0usize, 0usize);
        while inum < 2 {
            let Some(&code) = f.get(fi) else { break };
            fi += 1;
            let digits = f[fi..].iter().take_while(|c| c.is_ascii_digit()).count();
            let len: usize = if digits > 0 {
                let v = std::str::from_utf8(&f[fi..fi + digits]).unwrap().parse().unwrap_or(usize::MAX);
                fi += digits;
                v
            } else {
                fi += 1;
                0
            };
            let mut end = at;
            if len > 0 {
                let mut rem = len;
                while end < bc.len() && rem > 0 {
                    end += 1;
                    rem -= 1;
                }
            } else {
                while end < bc.len() && bc[end].is_ascii_alphabetic() {
                    end += 1;
                }
            }
            let skip_separator = usize::from(len == 0);
            match code {
                b'n' => {}
                b'i' => {
                    if let Some(sink) = outputs.index[inum] {
                        if end > at {
                            self.write_index_read(record, &bc[at..end], qt.as_deref().map(|q| &q[at..end]), sink, outputs)?;
                        }
                    }
                    inum += 1;
                }
                _ => return Err(Error::Message("unknown index-format code".into())),
            }
            at = (end + skip_separator).min(bc.len().max(end + skip_separator));
            if at > bc.len() {
                at = bc.len();
            }
        }
        Ok(())
    }

    /// samtools' `write_index_rec`: the index bases as an unmapped forward
    /// read of the record's name, flags and aux fields.
    fn write_index_read(
        &mut self,
        record: usize,
        bases: &[u8],
        quals: Option<&[u8]>,
        sink: usize,
        outputs: &mut Outputs<'_>,
    ) -> Result<(), Error> {
        let arena = &mut self.batch.filling.arena;
        let start = arena.len();
        arena.extend_from_slice(&self.slots[record].data);
        let record = start..arena.len();
        arena.extend(bases.iter().map(|&c| crate::sam::nt16(c)));
        let codes = record.end..arena.len();
        match quals {
            Some(q) => arena.extend(q.iter().map(|&c| c.wrapping_sub(b'!'))),
            None => arena.extend(std::iter::repeat(self.options.default_quality).take(bases.len())),
        }
        let qual = codes.end..arena.len();
        self.batch.filling.jobs.push(Job { sink, record, index: Some((codes, qual)) });
        self.batch.submit_if_full(outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One base at a time, as the BAM spec reads the nibbles: the pair
    /// tables and the odd-length ends must give the same text.
    fn bases_one_at_a_time(packed: &[u8], len: usize, reverse: bool) -> Vec<u8> {
        let nibble = |i: usize| usize::from(if i % 2 == 0 { packed[i / 2] >> 4 } else { packed[i / 2] & 0xf });
        if reverse {
            (0..len).rev().map(|i| COMPLEMENT[nibble(i)]).collect()
        } else {
            (0..len).map(|i| FORWARD[nibble(i)]).collect()
        }
    }

    #[test]
    fn packed_bases_equal_the_nibbles_read_one_by_one() {
        // Every byte value in both halves, then every length up to 2 bytes
        // past it, forward and reversed, appended after earlier text.
        let packed: Vec<u8> = (0..=255u8).chain([0x12, 0xf0, 0x0f]).collect();
        for len in (0..=9).chain([255, 256, 511, 512, 513, 517]) {
            for reverse in [false, true] {
                let mut out = b"@r\n".to_vec();
                push_packed_bases(&packed, len, reverse, &mut out);
                assert_eq!(&out[..3], b"@r\n");
                assert_eq!(out[3..], bases_one_at_a_time(&packed, len, reverse)[..], "len {len}, reverse {reverse}");
            }
        }
    }
}
