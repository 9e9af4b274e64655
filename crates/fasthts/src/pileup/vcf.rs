//! The VCF site list snp-pileup reads: plain text, BGZF or gzip, in file
//! order, keeping what FACETS uses of each record (contig, position, first
//! allele characters, and whether it is a biallelic single-base record).

use super::PileupError;
use std::path::Path;

/// One VCF data line that snp-pileup can use: exactly two alleles, both one
/// character long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// Index into [`Sites::contigs`].
    pub contig: u32,
    /// 0-based position.
    pub pos: i64,
    /// REF, as written (case kept).
    pub ref_base: u8,
    /// ALT, as written.
    pub alt_base: u8,
}

/// The usable sites of a VCF, in file order.
#[derive(Clone, Debug, Default)]
pub struct Sites {
    /// Contig names in order of first appearance.
    pub contigs: Vec<String>,
    /// Usable records in file order.
    pub sites: Vec<Site>,
    /// Number of data lines (used or not), as FACETS' `-p` counts them.
    pub n_records: u64,
}

/// Errors reading a VCF.
fn err(path: &Path, msg: impl std::fmt::Display) -> PileupError {
    PileupError::Message(format!("{}: {msg}", path.display()))
}

/// Reads the whole (possibly compressed) text of `path`.
pub fn read_text(path: &Path) -> Result<Vec<u8>, PileupError> {
    let raw = std::fs::read(path).map_err(|e| PileupError::Read(crate::Error::from(e).with_path(path)))?;
    if raw.len() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b {
        if let Ok(text) = crate::bgzf::decompress_all(&raw) {
            return Ok(text);
        }
        return gunzip(&raw).ok_or_else(|| err(path, "damaged or unsupported gzip data"));
    }
    Ok(raw)
}

/// The largest expansion deflate allows (a run of 258 bytes in one bit).
const MAX_DEFLATE_RATIO: usize = 1032;

/// The first and the largest output buffer sizes for inflating the gzip
/// member `data` (at least 18 bytes): the first from its ISIZE (size mod
/// 2^32), both capped by deflate's largest expansion, so a damaged trailer
/// cannot make us allocate gigabytes.
fn gunzip_buffer_bounds(data: &[u8]) -> (usize, usize) {
    let most = data.len().saturating_mul(MAX_DEFLATE_RATIO).max(1 << 16);
    let isize = u32::from_le_bytes(data[data.len() - 4..].try_into().unwrap()) as usize;
    (isize.clamp(1 << 16, most), most)
}

/// Plain (non-BGZF) gzip with a single member.
fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < 18 {
        return None;
    }
    let mut d = libdeflater::Decompressor::new();
    let (mut cap, most) = gunzip_buffer_bounds(data);
    loop {
        let mut buf = vec![0u8; cap];
        match d.gzip_decompress(data, &mut buf) {
            Ok(n) => {
                buf.truncate(n);
                return Some(buf);
            }
            Err(libdeflater::DecompressionError::InsufficientSpace) if cap < most => cap = cap.saturating_mul(2).min(most),
            Err(_) => return None,
        }
    }
}

impl Sites {
    /// Reads the sites of the VCF at `path`.
    pub fn read(path: &Path) -> Result<Sites, PileupError> {
        let text = read_text(path)?;
        Sites::parse(&text).map_err(|(line, msg)| err(path, format_args!("line {line}: {msg}")))
    }

    /// Parses VCF text; an error gives the 1-based line number and what is wrong.
    pub fn parse(text: &[u8]) -> Result<Sites, (usize, String)> {
        let mut out = Sites::default();
        let mut last_contig: Option<u32> = None;
        let mut names: std::collections::HashMap<Vec<u8>, u32> = std::collections::HashMap::new();
        for (i, line) in text.split(|&c| c == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let mut fields = line.split(|&c| c == b'\t');
            let (Some(chrom), Some(pos), Some(_id), Some(r), Some(a)) =
                (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return Err((i + 1, "fewer than 5 tab-separated columns".into()));
            };
            if chrom.is_empty() {
                return Err((i + 1, "empty CHROM".into()));
            }
            let pos: i64 = std::str::from_utf8(pos)
                .ok()
                .and_then(|p| p.parse().ok())
                // POS 0 (a telomere) is valid VCF; htslib reads it as -1.
                .filter(|&p: &i64| p >= 0 && p <= i64::from(i32::MAX))
                .ok_or_else(|| (i + 1, format!("bad POS {:?}", String::from_utf8_lossy(pos))))?;
            if r.is_empty() || a.is_empty() {
                return Err((i + 1, "empty REF or ALT".into()));
            }
            out.n_records += 1;
            let n_alt = if a == b"." { 0 } else { a.split(|&c| c == b',').count() };
            if n_alt != 1 || r.len() != 1 || a.len() != 1 {
                continue;
            }
            let contig = match last_contig {
                Some(id) if out.contigs[id as usize].as_bytes() == chrom => id,
                _ => {
                    let id = match names.get(chrom) {
                        Some(&id) => id,
                        None => {
                            let id = out.contigs.len() as u32;
                            out.contigs.push(String::from_utf8_lossy(chrom).into_owned());
                            names.insert(chrom.to_vec(), id);
                            id
                        }
                    };
                    last_contig = Some(id);
                    id
                }
            };
            out.sites.push(Site { contig, pos: pos - 1, ref_base: r[0], alt_base: a[0] });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_biallelic_snvs_only() {
        let text = b"##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\n\
            1\t5\t.\tA\tC\t.\t.\t.\n1\t6\t.\tA\tC,G\n1\t7\t.\tAT\tA\n1\t8\t.\tA\t.\n\
            chr2\t9\t.\tt\t*\n1\t10\t.\tN\tN\n";
        let s = Sites::parse(text).unwrap();
        assert_eq!(s.n_records, 6);
        assert_eq!(s.contigs, vec!["1".to_string(), "chr2".to_string()]);
        assert_eq!(
            s.sites,
            vec![
                Site { contig: 0, pos: 4, ref_base: b'A', alt_base: b'C' },
                Site { contig: 1, pos: 8, ref_base: b't', alt_base: b'*' },
                Site { contig: 0, pos: 9, ref_base: b'N', alt_base: b'N' },
            ]
        );
    }

    #[test]
    fn gzip_with_absurd_isize_is_refused_without_a_huge_allocation() {
        use std::io::Write;
        let text = b"#CHROM\tPOS\tID\tREF\tALT\n1\t5\t.\tA\tC\n".repeat(100);
        let mut e = fasthts_kmer::flate2::write::GzEncoder::new(Vec::new(), fasthts_kmer::flate2::Compression::default());
        e.write_all(&text).unwrap();
        let mut gz = e.finish().unwrap();
        assert_eq!(gunzip(&gz).unwrap(), text);
        let n = gz.len();
        // ISIZE claims 4 GiB: the buffer stays within deflate's bound
        // (it was 4 GiB, an abort under `ulimit -v`), and the member is
        // refused as damaged.
        gz[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let (first, most) = gunzip_buffer_bounds(&gz);
        assert!(first <= most && most <= (n * MAX_DEFLATE_RATIO).max(1 << 16), "{first} {most}");
        assert!(gunzip(&gz).is_none());
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert_eq!(Sites::parse(b"1\tx\t.\tA\tC\n").unwrap_err().0, 1);
        assert_eq!(Sites::parse(b"#h\n1\t5\t.\tA\n").unwrap_err().0, 2);
    }
}
