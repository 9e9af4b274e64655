//! The BAM header: magic, SAM text and the binary reference dictionary.

use super::BamError;
use crate::bgzf::BlockReader;
use std::io::Read;

/// One `@SQ` entry of the binary reference dictionary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Reference name.
    pub name: String,
    /// Reference length.
    pub len: u32,
}

/// A parsed BAM header. The SAM text is kept verbatim.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The SAM header text, as stored (may contain trailing NULs).
    pub text: Vec<u8>,
    /// References in id order.
    pub references: Vec<Reference>,
}

/// Largest reference name accepted (htslib's limit is similar), to bound
/// allocation from a corrupt length.
const MAX_NAME_LEN: usize = 1 << 20;

impl Header {
    /// The length of reference `tid` as htslib's `sam_hdr_tid2len` gives it:
    /// the dictionary's, or, for a reference of 2^32 - 1 bases or more
    /// (whose dictionary length is clamped to `u32::MAX`, as in htslib),
    /// the `LN:` of its `@SQ` line (SAM allows 64-bit lengths).
    ///
    /// ```
    /// use fasthts::bam::{Header, Reference};
    /// let text = b"@SQ\tSN:big\tLN:11000000000\n".to_vec();
    /// let h = Header { text, references: vec![Reference { name: "big".into(), len: u32::MAX }] };
    /// assert_eq!(h.reference_len(0), 11_000_000_000);
    /// ```
    pub fn reference_len(&self, tid: usize) -> u64 {
        let r = &self.references[tid];
        if r.len < u32::MAX {
            return u64::from(r.len);
        }
        let field = |line: &[u8], key: &[u8]| -> Option<Vec<u8>> {
            line.split(|&c| c == b'\t').skip(1).find_map(|f| f.strip_prefix(key)).map(<[u8]>::to_vec)
        };
        self.text
            .split(|&c| c == b'\n')
            .filter(|l| l.starts_with(b"@SQ\t"))
            .find(|l| field(l, b"SN:").as_deref() == Some(r.name.as_bytes()))
            .and_then(|l| field(l, b"LN:"))
            .and_then(|ln| {
                let digits = ln.iter().take_while(|c| c.is_ascii_digit()).count();
                std::str::from_utf8(&ln[..digits]).ok()?.parse::<u64>().ok()
            })
            .map_or(u64::from(r.len), |ln| ln.max(u64::from(r.len)))
    }

    /// Reads the header from the start of a BAM stream, leaving `reader` at
    /// the first record.
    pub fn read(reader: &mut BlockReader<'_>) -> Result<Header, BamError> {
        Header::read_with(|out, n, what| take(reader, out, n, what))
    }

    /// Reads the header from the start of decompressed BAM data (a stream
    /// inflated ahead, or uncompressed BAM), leaving `src` at the first
    /// record.
    pub fn read_from(src: &mut dyn Read) -> Result<Header, crate::Error> {
        Header::read_with(|out, n, what| {
            // Grows only with data actually present (see `take`).
            let got = (&mut *src).take(n as u64).read_to_end(out)?;
            if got < n {
                return Err(BamError::TruncatedHeader(what).into());
            }
            Ok(())
        })
    }

    /// The header's fields, each appended to a buffer by
    /// `take(buffer, length, what)`. Two buffers serve every small field:
    /// a header of 600,000 references would otherwise make 1.8 million
    /// little vectors.
    fn read_with<E: From<BamError>>(mut take: impl FnMut(&mut Vec<u8>, usize, &'static str) -> Result<(), E>) -> Result<Header, E> {
        let mut field = Vec::with_capacity(4);
        fn u32_field<E>(
            take: &mut impl FnMut(&mut Vec<u8>, usize, &'static str) -> Result<(), E>,
            field: &mut Vec<u8>,
            what: &'static str,
        ) -> Result<u32, E> {
            field.clear();
            take(field, 4, what)?;
            Ok(u32_le(field))
        }
        field.clear();
        take(&mut field, 4, "magic")?;
        if field != *b"BAM\x01" {
            return Err(BamError::NotBam.into());
        }
        let l_text = u32_field(&mut take, &mut field, "header text length")? as usize;
        let mut text = Vec::new();
        take(&mut text, l_text, "header text")?;
        let n_ref = u32_field(&mut take, &mut field, "reference count")? as i32;
        if n_ref < 0 {
            return Err(BamError::InvalidHeader("negative reference count").into());
        }
        let mut references = Vec::new();
        let mut name_buf = Vec::with_capacity(256);
        for _ in 0..n_ref {
            let l_name = u32_field(&mut take, &mut field, "reference name length")? as i32;
            if l_name < 1 || l_name as usize > MAX_NAME_LEN {
                return Err(BamError::InvalidHeader("invalid reference name length").into());
            }
            name_buf.clear();
            take(&mut name_buf, l_name as usize, "reference name")?;
            if name_buf.pop() != Some(0) {
                return Err(BamError::InvalidHeader("reference name not NUL-terminated").into());
            }
            let len = u32_field(&mut take, &mut field, "reference length")? as i32;
            if len < 0 {
                return Err(BamError::InvalidHeader("negative reference length").into());
            }
            let name =
                std::str::from_utf8(&name_buf).map_err(|_| E::from(BamError::InvalidHeader("reference name is not UTF-8")))?.to_owned();
            references.push(Reference { name, len: len as u32 });
        }
        Ok(Header { text, references })
    }

    /// Serialises the header as it is stored at the start of a BAM stream.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(12 + self.text.len() + self.references.len() * 16);
        b.extend_from_slice(b"BAM\x01");
        b.extend_from_slice(&(self.text.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.text);
        b.extend_from_slice(&(self.references.len() as u32).to_le_bytes());
        for r in &self.references {
            b.extend_from_slice(&(r.name.len() as u32 + 1).to_le_bytes());
            b.extend_from_slice(r.name.as_bytes());
            b.push(0);
            b.extend_from_slice(&r.len.to_le_bytes());
        }
        b
    }
}

fn take(reader: &mut BlockReader<'_>, out: &mut Vec<u8>, n: usize, what: &'static str) -> Result<(), BamError> {
    // In pieces, so that a header text of tens of megabytes (600,000
    // @SQ lines) is not first gathered whole in the reader's buffer; and
    // growing only with data actually present, so that a corrupt length
    // cannot make us allocate more than the file holds.
    // (A header's reader loads one block at a time; asking for up to
    // 4 MiB has a long text's blocks inflated in parallel.)
    let mut left = n;
    while left > 0 {
        if reader.available().is_empty() && reader.fill(left.min(4 << 20))? == 0 {
            return Err(BamError::TruncatedHeader(what));
        }
        let k = left.min(reader.available().len());
        out.extend_from_slice(&reader.available()[..k]);
        reader.consume(k);
        left -= k;
    }
    Ok(())
}

fn u32_le(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
