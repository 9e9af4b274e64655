//! Reading and writing BAI and CSI files.
//!
//! Both formats share one body (per reference: bins with chunks, then for BAI
//! a linear index; finally the count of records without a coordinate). A
//! BAI is stored as plain bytes, a CSI as BGZF. Every count read from the
//! input is checked against the bytes that remain before anything is
//! allocated for it, so no input can make the reader panic or allocate more
//! than a small multiple of the input's size.

use std::path::Path;

use super::{Bin, Chunk, Index, IndexError, IndexFormat, Metadata, ReferenceIndex};
use crate::bgzf::{self, VirtualOffset};

const BAI_MAGIC: &[u8; 4] = b"BAI\x01";
const CSI_MAGIC: &[u8; 4] = b"CSI\x01";
const TBI_MAGIC: &[u8; 4] = b"TBI\x01";
/// The gzip magic that starts a BGZF file.

/// A checked little-endian reader over the index body.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> u64 {
        (self.data.len() - self.pos) as u64
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], IndexError> {
        match self.data.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) if s.len() == n => {
                self.pos += n;
                Ok(s)
            }
            _ => Err(IndexError::Truncated {
                offset: self.pos as u64,
                needed: n as u64,
                available: self.remaining(),
                what,
            }),
        }
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, IndexError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, IndexError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Reads a signed 32-bit count and checks that `count * unit` bytes can
    /// follow.
    fn count(&mut self, what: &'static str, unit: u64) -> Result<usize, IndexError> {
        let offset = self.pos as u64;
        let raw = self.u32(what)? as i32;
        let remaining = self.remaining();
        if raw < 0 || (raw as u64).saturating_mul(unit) > remaining {
            return Err(IndexError::AbsurdCount {
                offset,
                what,
                count: i64::from(raw),
                remaining,
            });
        }
        Ok(raw as usize)
    }
}

impl Index {
    /// Parses a BAI or CSI index from its file contents. A CSI is
    /// BGZF-compressed; plain or BGZF bytes are accepted for either format,
    /// as htslib does.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat};
    /// // A BAI for one reference without records, no n_no_coor.
    /// let bytes = [b'B', b'A', b'I', 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    /// let index = Index::from_bytes(&bytes)?;
    /// assert_eq!(index.format(), IndexFormat::Bai);
    /// assert_eq!(index.references().len(), 1);
    /// assert_eq!(index.n_no_coor(), None);
    /// assert!(Index::from_bytes(b"BAM\x01").is_err());
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Index, IndexError> {
        if fasthts_io::compression::is_gzip(bytes) {
            let raw = bgzf::decompress_all(bytes)?;
            Self::from_raw_bytes(&raw)
        } else {
            Self::from_raw_bytes(bytes)
        }
    }

    /// Reads an index file (see [`Index::from_bytes`]); errors name the path.
    ///
    /// ```no_run
    /// let index = fasthts::index::Index::from_path("in.bam.bai")?;
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn from_path(path: impl AsRef<Path>) -> Result<Index, IndexError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(&bytes).map_err(|e| e.with_path(path))
    }

    /// Parses uncompressed index bytes (a BAI file, or an inflated CSI).
    fn from_raw_bytes(bytes: &[u8]) -> Result<Index, IndexError> {
        let mut c = Cursor {
            data: bytes,
            pos: 0,
        };
        let magic = c.take(4, "magic").map_err(|_| IndexError::BadMagic {
            found: bytes.to_vec(),
        })?;
        if magic == BAI_MAGIC {
            read_body(&mut c, IndexFormat::Bai, Vec::new())
        } else if magic == CSI_MAGIC {
            let min_shift = c.u32("CSI min_shift")? as i32;
            let depth = c.u32("CSI depth")? as i32;
            let format = IndexFormat::Csi {
                min_shift: min_shift as u32,
                depth: depth as u32,
            };
            if depth < 0 || min_shift < 0 || format.validate().is_err() {
                return Err(IndexError::UnsupportedCsi {
                    min_shift: i64::from(min_shift),
                    depth: i64::from(depth),
                });
            }
            let offset = c.pos as u64;
            let l_aux = c.u32("CSI l_aux")?;
            if u64::from(l_aux) > c.remaining() {
                return Err(IndexError::AbsurdCount {
                    offset,
                    what: "CSI l_aux",
                    count: i64::from(l_aux),
                    remaining: c.remaining(),
                });
            }
            let aux = c.take(l_aux as usize, "CSI auxiliary data")?.to_vec();
            read_body(&mut c, format, aux)
        } else if magic == TBI_MAGIC {
            Err(IndexError::Tabix)
        } else {
            Err(IndexError::BadMagic {
                found: magic.to_vec(),
            })
        }
    }

    /// The index in its file format: plain bytes for BAI; for CSI, BGZF
    /// blocks compressed as htslib's default level does (libdeflate level 7,
    /// by the system's libdeflate when there is one, as samtools links it:
    /// [`bgzf::compress_all_as_htslib`]) followed by the EOF marker.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat};
    /// let index = Index::new(IndexFormat::Csi { min_shift: 14, depth: 5 }, vec![], Some(0));
    /// let bytes = index.to_bytes();
    /// assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
    /// assert_eq!(Index::from_bytes(&bytes)?, index);
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let raw = self.to_raw_bytes();
        match self.format {
            IndexFormat::Bai => raw,
            IndexFormat::Csi { .. } => bgzf::compress_all_as_htslib(&raw, bgzf::htslib_libdeflate_level(bgzf::DEFAULT_LEVEL)),
        }
    }

    /// The uncompressed serialization (a whole BAI file; a CSI before BGZF
    /// compression), byte-identical to what samtools writes for the same
    /// index: bins in the stored order with the metadata pseudo-bin where
    /// samtools' hash table put it.
    ///
    /// ```
    /// use fasthts::index::{Index, IndexFormat};
    /// let index = Index::new(IndexFormat::Bai, vec![], Some(3));
    /// assert_eq!(index.to_raw_bytes(), [b'B', b'A', b'I', 1, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
    /// ```
    pub fn to_raw_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self.format {
            IndexFormat::Bai => out.extend_from_slice(BAI_MAGIC),
            IndexFormat::Csi { min_shift, depth } => {
                out.extend_from_slice(CSI_MAGIC);
                out.extend_from_slice(&min_shift.to_le_bytes());
                out.extend_from_slice(&depth.to_le_bytes());
                out.extend_from_slice(&(self.aux.len() as u32).to_le_bytes());
                out.extend_from_slice(&self.aux);
            }
        }
        let csi = self.format.is_csi();
        let meta_bin = self.format.metadata_bin();
        out.extend_from_slice(&(self.references.len() as u32).to_le_bytes());
        for r in &self.references {
            out.extend_from_slice(&(r.n_bins_on_disk() as u32).to_le_bytes());
            for (i, bin) in r.bins.iter().enumerate() {
                if i == r.metadata_slot() {
                    write_metadata(&mut out, r, meta_bin, csi);
                }
                out.extend_from_slice(&bin.id.to_le_bytes());
                if csi {
                    out.extend_from_slice(&u64::from(bin.loffset).to_le_bytes());
                }
                out.extend_from_slice(&(bin.chunks.len() as u32).to_le_bytes());
                for chunk in &bin.chunks {
                    out.extend_from_slice(&u64::from(chunk.start).to_le_bytes());
                    out.extend_from_slice(&u64::from(chunk.end).to_le_bytes());
                }
            }
            if r.metadata_slot() >= r.bins.len() {
                write_metadata(&mut out, r, meta_bin, csi);
            }
            if !csi {
                out.extend_from_slice(&(r.linear().len() as u32).to_le_bytes());
                for v in r.linear() {
                    out.extend_from_slice(&u64::from(*v).to_le_bytes());
                }
            }
        }
        if let Some(n) = self.n_no_coor {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out
    }

    /// Writes the index file ([`Index::to_bytes`]) to `path`.
    ///
    /// ```no_run
    /// # let index = fasthts::index::Index::new(fasthts::index::IndexFormat::Bai, vec![], Some(0));
    /// index.write_to_path("out.bam.bai")?;
    /// # Ok::<(), fasthts::index::IndexError>(())
    /// ```
    pub fn write_to_path(&self, path: impl AsRef<Path>) -> Result<(), IndexError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_bytes()).map_err(|source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

fn write_metadata(out: &mut Vec<u8>, r: &ReferenceIndex, meta_bin: u32, csi: bool) {
    if let Some(m) = r.metadata() {
        out.extend_from_slice(&meta_bin.to_le_bytes());
        if csi {
            out.extend_from_slice(&0u64.to_le_bytes());
        }
        out.extend_from_slice(&2u32.to_le_bytes());
        for v in [
            u64::from(m.ref_beg),
            u64::from(m.ref_end),
            m.n_mapped,
            m.n_unmapped,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Reads `n_ref` and the per-reference sections after the header.
fn read_body(c: &mut Cursor<'_>, format: IndexFormat, aux: Vec<u8>) -> Result<Index, IndexError> {
    let csi = format.is_csi();
    let meta_bin = format.metadata_bin();
    // Smallest encoding of one reference / one bin.
    let (ref_unit, bin_unit) = if csi { (4, 16) } else { (8, 8) };
    let n_ref = c.count("reference count", ref_unit)?;
    let mut references = Vec::with_capacity(n_ref);
    for tid in 0..n_ref {
        let n_bin = c.count("bin count", bin_unit)?;
        let mut bins: Vec<Bin> = Vec::with_capacity(n_bin);
        let mut metadata = None;
        let mut slot = 0;
        let mut seen: Vec<u32> = Vec::with_capacity(n_bin);
        for _ in 0..n_bin {
            let id = c.u32("bin id")?;
            let loffset = if csi { c.u64("bin loffset")? } else { 0 };
            let n_chunk = c.count("chunk count", 16)?;
            let mut chunks = Vec::with_capacity(n_chunk);
            for _ in 0..n_chunk {
                let start = c.u64("chunk start")?;
                let end = c.u64("chunk end")?;
                chunks.push(Chunk::new(start.into(), end.into()));
            }
            seen.push(id);
            if id == meta_bin {
                if chunks.len() != 2 {
                    return Err(IndexError::BadMetadata {
                        reference: tid,
                        chunks: chunks.len(),
                    });
                }
                slot = bins.len();
                metadata = Some(Metadata {
                    ref_beg: chunks[0].start,
                    ref_end: chunks[0].end,
                    n_mapped: u64::from(chunks[1].start),
                    n_unmapped: u64::from(chunks[1].end),
                });
            } else {
                bins.push(Bin {
                    id,
                    loffset: VirtualOffset::from(loffset),
                    chunks,
                });
            }
        }
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(IndexError::DuplicateBin {
                reference: tid,
                bin: w[0],
            });
        }
        let mut linear = Vec::new();
        if !csi {
            let n_intv = c.count("linear index size", 8)?;
            linear.reserve(n_intv);
            for _ in 0..n_intv {
                linear.push(VirtualOffset::from(c.u64("linear index entry")?));
            }
        }
        if metadata.is_none() {
            slot = bins.len();
        }
        references.push(ReferenceIndex::with_slot(bins, linear, metadata, slot));
    }
    // htslib treats a missing (or short) trailing count as absent.
    let n_no_coor = if c.remaining() >= 8 {
        Some(c.u64("n_no_coor")?)
    } else {
        None
    };
    Ok(Index::new(format, references, n_no_coor).with_aux(aux))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(format: IndexFormat) -> Index {
        let vo = |c: u64, u: u16| VirtualOffset::new(c, u).unwrap();
        let meta = Metadata {
            ref_beg: vo(0, 100),
            ref_end: vo(5000, 7),
            n_mapped: 3,
            n_unmapped: 1,
        };
        let bins = vec![
            Bin {
                id: 4681,
                loffset: vo(0, 100),
                chunks: vec![Chunk::new(vo(0, 100), vo(0, 300))],
            },
            Bin {
                id: 0,
                loffset: vo(0, 100),
                chunks: vec![Chunk::new(vo(0, 300), vo(5000, 7))],
            },
        ];
        let linear = if format == IndexFormat::Bai {
            vec![vo(0, 100), vo(0, 300)]
        } else {
            vec![]
        };
        let r0 = ReferenceIndex::with_slot(bins, linear, Some(meta), 1);
        let r1 = ReferenceIndex::new(vec![], vec![], None);
        Index::new(format, vec![r0, r1], Some(2))
    }

    #[test]
    fn roundtrip_bai_and_csi() {
        for format in [
            IndexFormat::Bai,
            IndexFormat::Csi {
                min_shift: 14,
                depth: 6,
            },
            IndexFormat::Csi {
                min_shift: 12,
                depth: 3,
            },
        ] {
            let index = sample(format);
            let raw = index.to_raw_bytes();
            let back = Index::from_bytes(&index.to_bytes()).unwrap();
            assert_eq!(back, index, "{format:?}");
            assert_eq!(back.to_raw_bytes(), raw);
            // Plain CSI bytes are accepted too.
            assert_eq!(Index::from_bytes(&raw).unwrap(), index);
        }
    }

    #[test]
    fn bai_metadata_slot_is_kept() {
        let index = sample(IndexFormat::Bai);
        let raw = index.to_raw_bytes();
        // magic, n_ref, n_bin = 3, first bin 4681, then the pseudo-bin.
        assert_eq!(&raw[8..12], &3u32.to_le_bytes());
        assert_eq!(&raw[12..16], &4681u32.to_le_bytes());
        assert_eq!(&raw[16 + 4 + 16..16 + 4 + 16 + 4], &37450u32.to_le_bytes());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for format in [
            IndexFormat::Bai,
            IndexFormat::Csi {
                min_shift: 14,
                depth: 6,
            },
        ] {
            let raw = sample(format).to_raw_bytes();
            // Cutting inside the trailing n_no_coor drops it, as htslib does.
            let body_end = raw.len() - 8;
            for cut in 0..body_end {
                assert!(
                    Index::from_bytes(&raw[..cut]).is_err(),
                    "{format:?} cut at {cut}"
                );
            }
            for cut in body_end..raw.len() {
                assert_eq!(Index::from_bytes(&raw[..cut]).unwrap().n_no_coor(), None);
            }
        }
    }

    #[test]
    fn flipped_bytes_never_panic() {
        let raw = sample(IndexFormat::Bai).to_raw_bytes();
        for i in 0..raw.len() {
            for x in [0x80u8, 0xff, 0x01] {
                let mut b = raw.clone();
                b[i] ^= x;
                let _ = Index::from_bytes(&b);
            }
        }
        let raw = sample(IndexFormat::Csi {
            min_shift: 14,
            depth: 6,
        })
        .to_raw_bytes();
        for i in 0..raw.len() {
            let mut b = raw.clone();
            b[i] ^= 0xff;
            let _ = Index::from_bytes(&b);
        }
    }

    #[test]
    fn error_messages_say_what_and_where() {
        let e = Index::from_bytes(b"BAI\x01\x01\x00").unwrap_err();
        assert_eq!(
            e.to_string(),
            "index truncated at byte 4: reference count needs 4 bytes, only 2 remain"
        );
        let e = Index::from_bytes(b"BAI\x01\xff\xff\xff\x7f\0\0\0\0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "index corrupt at byte 4: reference count is 2147483647, but only 4 bytes remain"
        );
        let e = Index::from_bytes(b"BAI\x01\x01\0\0\0\xff\xff\xff\xff\0\0\0\0").unwrap_err();
        assert!(e.to_string().contains("bin count is -1"), "{e}");
        let e = Index::from_bytes(b"\x89PNG").unwrap_err();
        assert!(matches!(e, IndexError::BadMagic { .. }));
        assert!(matches!(
            Index::from_bytes(b"").unwrap_err(),
            IndexError::BadMagic { .. }
        ));
        assert!(matches!(
            Index::from_bytes(b"TBI\x01").unwrap_err(),
            IndexError::Tabix
        ));
        let e = Index::from_bytes(b"CSI\x01\x0e\0\0\0\x30\0\0\0").unwrap_err();
        assert!(matches!(
            e,
            IndexError::UnsupportedCsi {
                min_shift: 14,
                depth: 48
            }
        ));
        // Duplicate bins.
        let mut b = b"BAI\x01\x01\0\0\0\x02\0\0\0".to_vec();
        for _ in 0..2 {
            b.extend_from_slice(&5u32.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
        }
        b.extend_from_slice(&0u32.to_le_bytes());
        assert!(matches!(
            Index::from_bytes(&b).unwrap_err(),
            IndexError::DuplicateBin {
                reference: 0,
                bin: 5
            }
        ));
        let e = Index::from_path("/nonexistent/x.bai").unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/x.bai: "), "{e}");
    }
}
