//! The reference of `stats -r`: a plain FASTA read through its `.fai`
//! (made in memory when there is none, as htslib's `fai_load` would make
//! it), sequences fetched by range as `faidx_fetch_seq64` gives them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One `.fai` line.
#[derive(Clone, Copy, Debug)]
struct Entry {
    len: u64,
    offset: u64,
    line_bases: u64,
    line_width: u64,
}

/// A FASTA file and its index.
pub struct Fasta {
    map: memmap2::Mmap,
    entries: HashMap<Vec<u8>, Entry>,
}

impl Fasta {
    /// Opens the FASTA at `path` with the `.fai` beside it, or one made by
    /// reading it. The error is samtools' words.
    pub fn open(path: &Path) -> Result<Fasta, String> {
        let fail = || format!("Could not load faidx: {}", path.display());
        let file = std::fs::File::open(path).map_err(|_| fail())?;
        // SAFETY: the map is only read; a file changed under it gives
        // other bytes (as a read would), never unsound memory access in
        // this process's own data.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|_| fail())?;
        if fasthts_io::compression::is_gzip(&map) {
            return Err(format!("{}: a compressed FASTA is not supported by fasthts stats -r; decompress it", path.display()));
        }
        let mut fai = PathBuf::from(path);
        fai.as_mut_os_string().push(".fai");
        let entries = match std::fs::read(&fai) {
            Ok(text) => parse_fai(&text).ok_or_else(fail)?,
            Err(_) => build(&map).ok_or_else(fail)?,
        };
        Ok(Fasta { map, entries })
    }

    /// The bases of `name` from `beg` to `end` (0-based, inclusive),
    /// clipped to the sequence as htslib clips them, into `out`; `None`
    /// when the name is not in the index.
    pub fn fetch(&self, name: &[u8], beg: i64, end: i64, out: &mut Vec<u8>) -> Option<()> {
        let e = self.entries.get(name)?;
        out.clear();
        let len = e.len as i64;
        let beg = if beg < 0 { 0 } else { beg.min(len) };
        let end = if end < 0 {
            0
        } else if end >= len {
            len - 1
        } else {
            end
        };
        let mut pos = beg as u64;
        let stop = (end + 1).max(beg) as u64;
        while pos < stop {
            let in_line = pos % e.line_bases;
            let take = (e.line_bases - in_line).min(stop - pos);
            let at = (e.offset + pos / e.line_bases * e.line_width + in_line) as usize;
            let bytes = self.map.get(at..(at + take as usize).min(self.map.len())).unwrap_or(&[]);
            // htslib keeps the printable characters it reads.
            out.extend(bytes.iter().copied().filter(u8::is_ascii_graphic));
            if (bytes.len() as u64) < take {
                break;
            }
            pos += take;
        }
        Some(())
    }
}

fn parse_fai(text: &[u8]) -> Option<HashMap<Vec<u8>, Entry>> {
    let mut entries = HashMap::new();
    for line in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        let mut fields = line.split(|&c| c == b'\t');
        let name = fields.next()?.to_vec();
        let mut num = || -> Option<u64> { std::str::from_utf8(fields.next()?).ok()?.trim().parse().ok() };
        let entry = Entry { len: num()?, offset: num()?, line_bases: num()?, line_width: num()? };
        if entry.line_bases == 0 && entry.len > 0 {
            return None;
        }
        entries.entry(name).or_insert(entry);
    }
    Some(entries)
}

/// The `.fai` of a FASTA as `samtools faidx` makes it (names up to the
/// first white space, every line of a sequence but its last of one width).
fn build(data: &[u8]) -> Option<HashMap<Vec<u8>, Entry>> {
    let mut entries = HashMap::new();
    let mut at = 0;
    let mut current: Option<(Vec<u8>, Entry)> = None;
    let mut finish = |current: &mut Option<(Vec<u8>, Entry)>| {
        if let Some((name, e)) = current.take() {
            entries.entry(name).or_insert(e);
        }
    };
    while at < data.len() {
        let end = data[at..].iter().position(|&c| c == b'\n').map_or(data.len(), |n| at + n);
        let line = &data[at..end];
        let next = (end + 1).min(data.len());
        if let Some(header) = line.strip_prefix(b">") {
            finish(&mut current);
            let name = header.split(|c| c.is_ascii_whitespace()).next().unwrap_or(&[]).to_vec();
            current = Some((name, Entry { len: 0, offset: next as u64, line_bases: 0, line_width: 0 }));
        } else if let Some((_, e)) = current.as_mut() {
            let bases = line.strip_suffix(b"\r").unwrap_or(line).len() as u64;
            if e.line_bases == 0 {
                e.line_bases = bases;
                e.line_width = (next - at) as u64;
            }
            e.len += bases;
        }
        at = next;
    }
    finish(&mut current);
    Some(entries)
}
