//! Reference name → id, as htslib's record parser resolves RNAME and RNEXT
//! (`bam_name2id` over htslib's full header parser).

use super::parse_number::strtoll;
use super::RecordError;
use crate::bam::Header;
use crate::names::NameTable;

/// Reference name → id, built once from a header, as htslib's record parser
/// resolves RNAME/RNEXT: `@SQ SN:` names, plus `AN:` alternative names, and
/// failing for every name when htslib's full header parser rejects the
/// header text.
#[derive(Debug, Clone, Default)]
pub struct RefNames {
    map: NameTable,
    n_ref: usize,
    broken: Option<String>,
}

impl RefNames {
    /// Builds the lookup for `header`.
    pub fn new(header: &Header) -> RefNames {
        RefNames::with_table(header, NameTable::of(header.references.iter().map(|r| r.name.as_bytes())))
    }

    /// The lookup of a list of reference names in id order, without header
    /// text (so without `AN:` alternatives): a header of `@SQ` names only,
    /// or a short list in an example.
    ///
    /// ```
    /// use fasthts::sam::RefNames;
    /// let names = RefNames::of_names(["chr1", "chr2"]);
    /// assert_eq!((names.id(b"chr2"), names.id(b"chr3"), names.len()), (Some(1), None, 2));
    /// ```
    pub fn of_names<I>(names: I) -> RefNames
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let names: Vec<I::Item> = names.into_iter().collect();
        RefNames { map: NameTable::of(names.iter().map(AsRef::as_ref)), n_ref: names.len(), broken: None }
    }

    /// As [`RefNames::new`], given `header`'s reference names already
    /// mapped to their ids (a repeated name to its first).
    pub(crate) fn with_table(header: &Header, map: NameTable) -> RefNames {
        let mut names = RefNames { map, n_ref: header.references.len(), broken: None };
        if let Err(e) = names.apply_header_lines(header) {
            names.broken = Some(e);
        }
        names
    }

    /// Number of references in the header.
    pub fn len(&self) -> usize {
        self.n_ref
    }

    /// Whether the header has no references.
    pub fn is_empty(&self) -> bool {
        self.n_ref == 0
    }

    /// Why htslib's full header parser rejects the header text, if it does
    /// (samtools sort then refuses the file: it cannot edit the header).
    pub fn header_error(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// The id of `name`: `Ok(None)` when unknown, an error when htslib
    /// could not parse the header.
    #[inline]
    pub fn get(&self, name: &[u8]) -> Result<Option<i32>, RecordError> {
        if let Some(e) = &self.broken {
            return Err(RecordError::HeaderUnparsable(e.clone()));
        }
        Ok(self.map.get(name))
    }

    /// The id region text gives `name`, as htslib's `sam_hdr_name2tid`
    /// looks it up: an `SN:` name or an `AN:` alternative; `None` when
    /// unknown, or when htslib could not parse the header (it then knows
    /// no name).
    #[inline]
    pub fn id(&self, name: &[u8]) -> Option<i32> {
        self.get(name).ok().flatten()
    }

    /// Replays htslib's `sam_hrecs_parse_lines` + `sam_hrecs_update_hashes`
    /// over the header text (the parser htslib's `bam_name2id` goes
    /// through): alternative names, and the conditions that make it fail.
    fn apply_header_lines(&mut self, header: &Header) -> Result<(), String> {
        let text = &header.text[..];
        let len = text.len();
        if len < 3 {
            if len == 0 || text[0] == 0 {
                return Ok(());
            }
            return Err("header line too short".into());
        }
        let mut attached = vec![false; self.n_ref];
        let mut extra: Vec<&[u8]> = Vec::new();
        // One list for every line's tags (they borrow the text).
        let mut tags: Vec<&[u8]> = Vec::new();
        let mut nref = self.n_ref as i32;
        let mut i = 0usize;
        let mut lno = 1u64;
        while i < len - 3 && text[i] != 0 {
            if text[i] != b'@' {
                return Err(format!("header line {lno} does not start with '@'"));
            }
            if !text[i + 1].is_ascii_alphabetic() || !text[i + 2].is_ascii_alphabetic() {
                return Err(format!("header line {lno} does not have a two character key"));
            }
            let ty = [text[i + 1], text[i + 2]];
            i += 3;
            if i == len || text[i] == b'\n' {
                i += 1;
                lno += 1;
                continue;
            }
            tags.clear();
            if ty == *b"CO" {
                if text[i] != b'\t' {
                    return Err(format!("missing tab at header line {lno}"));
                }
                i += 1;
                while i < len && text[i] != 0 && text[i] != b'\n' {
                    i += 1;
                }
            } else {
                loop {
                    if i == len || text[i] != b'\t' {
                        return Err(format!("missing tab at header line {lno}"));
                    }
                    i += 1;
                    let mut j = i;
                    while j < len && !matches!(text[j], 0 | b'\n' | b'\t') {
                        j += 1;
                    }
                    if j - i < 3 || text[i + 2] != b':' {
                        return Err(format!("malformed key:value pair at header line {lno}"));
                    }
                    tags.push(&text[i..j]);
                    i = j;
                    if !(i < len && text[i] != 0 && text[i] != b'\n') {
                        break;
                    }
                }
            }
            if ty == *b"SQ" {
                let mut name: Option<&[u8]> = None;
                let mut ln: i64 = -1;
                let mut alt: Option<&[u8]> = None;
                for t in &tags {
                    match &t[..2] {
                        b"SN" => name = Some(&t[3..]),
                        b"LN" => ln = strtoll(&t[3..], 0).0,
                        b"AN" => alt = Some(&t[3..]),
                        _ => {}
                    }
                }
                let Some(name) = name else {
                    return Err("header includes @SQ line with no SN: tag".into());
                };
                if ln == -1 {
                    return Err(format!("header includes @SQ line \"{}\" with no LN: tag", String::from_utf8_lossy(name)));
                }
                let n_targets = header.references.len();
                let ref_name = |k: i32| -> Option<&[u8]> {
                    let k = k as usize;
                    if k < n_targets {
                        Some(header.references[k].name.as_bytes())
                    } else {
                        extra.get(k - n_targets).copied()
                    }
                };
                let mut id = None;
                if let Some(k) = self.map.get(name) {
                    if (k as usize) < attached.len() && !attached[k as usize] {
                        attached[k as usize] = true;
                        id = Some(k);
                    } else if ref_name(k) == Some(name) {
                        return Err(format!("duplicate entry \"{}\" in sam header", String::from_utf8_lossy(name)));
                    }
                }
                let id = match id {
                    Some(k) => k,
                    None => {
                        // A reference htslib adds past the BAM header's
                        // (an @SQ the header reader skipped, or an SN that
                        // clashes with an earlier AN).
                        let k = nref;
                        nref += 1;
                        extra.push(name);
                        self.map.set(name, k);
                        k
                    }
                };
                if let Some(list) = alt {
                    for a in list.split(|&c| c == b',').filter(|a| !a.is_empty()) {
                        self.map.insert(a, id);
                    }
                }
            } else if ty == *b"RG" && !tags.iter().any(|t| t.starts_with(b"ID")) {
                return Err("header includes @RG line with no ID: tag".into());
            }
            i += 1;
            lno += 1;
        }
        Ok(())
    }
}
