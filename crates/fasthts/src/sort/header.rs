//! Header edits made by sort: `@HD SO:` (and `GO:`, `SS:`), and an `@PG` line.

use super::SortOrder;
use crate::bam::Header;
use crate::Error;

/// Refuses a header whose text htslib's header parser rejects (a malformed
/// `@SQ\t` line, a tag without `XX:`, a line without a tab): samtools sort
/// cannot edit such a header ("failed to change sort order header") and
/// writes nothing. The rules are `RefNames`' replay of that parser.
pub fn check_editable(header: &Header) -> Result<(), Error> {
    match crate::sam::RefNames::new(header).header_error() {
        Some(e) => Err(Error::Message(format!("cannot set the sort order in the header: {e}"))),
        None => Ok(()),
    }
}

/// Whether `line` is a header line with a type and nothing else (`@CO`):
/// htslib's parser skips such lines, so samtools sort drops them.
fn is_bare(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.len() == 3 && line[0] == b'@'
}

/// Edits the `@HD` line for `order` as samtools sort does
/// (`sam_hdr_update_hd`, then `sam_hdr_remove_tag_hd`): `SO`, and `GO`/`SS`
/// where the order has them, replace existing values in place or are
/// appended; `GO`/`SS` are removed where it has none. Without an `@HD`
/// line, `@HD VN:1.6 SO:... [GO:...] [SS:...]` becomes the first line.
/// Lines with a type and nothing else (a bare `@CO`) are dropped, as
/// htslib's rebuilt text drops them.
///
/// ```
/// use fasthts::sort::{set_sort_order, SortOrder};
/// assert_eq!(set_sort_order(b"@HD\tVN:1.4\tSO:unsorted\n@SQ\tSN:c\tLN:9\n", SortOrder::Coordinate),
///            b"@HD\tVN:1.4\tSO:coordinate\n@SQ\tSN:c\tLN:9\n");
/// assert_eq!(set_sort_order(b"@SQ\tSN:c\tLN:9\n", SortOrder::Coordinate),
///            b"@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c\tLN:9\n");
/// assert_eq!(set_sort_order(b"@HD\tVN:1.6\tSS:x\tGO:query\n", SortOrder::QueryName), b"@HD\tVN:1.6\tSO:queryname\n");
/// assert_eq!(set_sort_order(b"@HD\tVN:1.6\tSS:x\n", SortOrder::TemplateCoordinate),
///            b"@HD\tVN:1.6\tSS:unsorted:template-coordinate\tSO:unsorted\tGO:query\n");
/// assert_eq!(set_sort_order(b"@CO\tx\n@HD\tVN:1.5\n", SortOrder::Coordinate), b"@HD\tVN:1.5\tSO:coordinate\n@CO\tx\n");
/// assert_eq!(set_sort_order(b"@HD\tVN:1.5\n@CO\n@CO\t\n", SortOrder::Coordinate), b"@HD\tVN:1.5\tSO:coordinate\n@CO\t\n");
/// ```
pub fn set_sort_order(text: &[u8], order: SortOrder) -> Vec<u8> {
    let (so, go, ss) = order.header_tags();
    let updates = [("SO", Some(so)), ("GO", go), ("SS", ss)];
    let text = trim_nuls(text);
    // htslib keeps the @HD line first, wherever the input had it.
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    // A bare `@HD` is skipped by htslib's parser like any bare line.
    let hd = lines.iter().position(|l| l.starts_with(b"@HD\t"));
    let mut fields: Vec<Vec<u8>> = match hd {
        Some(i) => lines[i].strip_suffix(b"\n").unwrap_or(lines[i]).split(|&c| c == b'\t').skip(1).map(<[u8]>::to_vec).collect(),
        None => vec![b"VN:1.6".to_vec()],
    };
    for (tag, value) in updates {
        let prefix = format!("{tag}:");
        let at = fields.iter().position(|f| f.starts_with(prefix.as_bytes()));
        match (value, at) {
            (Some(v), Some(i)) => fields[i] = format!("{tag}:{v}").into_bytes(),
            (Some(v), None) => fields.push(format!("{tag}:{v}").into_bytes()),
            (None, Some(i)) => {
                fields.remove(i);
            }
            (None, None) => {}
        }
    }
    let mut out = b"@HD".to_vec();
    for f in fields {
        out.push(b'\t');
        out.extend_from_slice(&f);
    }
    out.push(b'\n');
    for (i, line) in lines.iter().enumerate() {
        if Some(i) != hd && !is_bare(line) {
            out.extend_from_slice(line);
        }
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// Adds `@SQ` lines for references of the binary dictionary that the text
/// does not name, after the last `@SQ` line (or at the end), as htslib does
/// when it rebuilds an edited header's text.
///
/// ```
/// use fasthts::bam::Reference;
/// use fasthts::sort::add_missing_sq_lines;
/// let refs = [Reference { name: "chr1".into(), len: 9 }, Reference { name: "chr2".into(), len: 5 }];
/// assert_eq!(add_missing_sq_lines(b"@SQ\tSN:chr2\tLN:5\n@CO\tx\n", &refs),
///            b"@SQ\tSN:chr2\tLN:5\n@SQ\tSN:chr1\tLN:9\n@CO\tx\n");
/// ```
pub fn add_missing_sq_lines(text: &[u8], references: &[crate::bam::Reference]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    fn name_of(l: &[u8]) -> Option<&[u8]> {
        let l = l.strip_suffix(b"\n").unwrap_or(l);
        l.starts_with(b"@SQ\t").then(|| l.split(|&c| c == b'\t').find_map(|f| f.strip_prefix(b"SN:"))).flatten()
    }
    let named: Vec<&[u8]> = lines.iter().filter_map(|l| name_of(l)).collect();
    // The text nearly always names the references in their order: then
    // none is missing, and no set of 600,000 names needs building.
    let in_order = named.len() >= references.len() && references.iter().zip(&named).all(|(r, n)| r.name.as_bytes() == *n);
    let mut stubs = Vec::new();
    if !in_order {
        let named: std::collections::HashSet<&[u8], crate::names::NameHash> = named.into_iter().collect();
        for r in references.iter().filter(|r| !named.contains(r.name.as_bytes())) {
            stubs.extend_from_slice(format!("@SQ\tSN:{}\tLN:{}\n", r.name, r.len).as_bytes());
        }
    }
    if stubs.is_empty() {
        return text.to_vec();
    }
    let after = lines.iter().rposition(|l| l.starts_with(b"@SQ\t")).map_or(lines.len(), |i| i + 1);
    let mut out = Vec::with_capacity(text.len() + stubs.len());
    for line in &lines[..after] {
        out.extend_from_slice(line);
    }
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(&stubs);
    for line in &lines[after..] {
        out.extend_from_slice(line);
    }
    out
}

/// The header text as htslib writes it once it has parsed it to edit it
/// (`sam_hdr_add_pg`, `sam_hdr_update_hd`): the `@HD` line first,
/// wherever it was, and lines with a type and nothing else (a bare `@CO`)
/// dropped, as its parser skips them.
///
/// ```
/// use fasthts::sort::as_htslib_rebuilds;
/// assert_eq!(as_htslib_rebuilds(b"@CO\tx\n@HD\tVN:1.6\n@CO\n@SQ\tSN:c\tLN:9\n"), b"@HD\tVN:1.6\n@CO\tx\n@SQ\tSN:c\tLN:9\n");
/// ```
pub fn as_htslib_rebuilds(text: &[u8]) -> Vec<u8> {
    let text = trim_nuls(text);
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    let hd = lines.iter().position(|l| l.starts_with(b"@HD\t"));
    let mut out = Vec::with_capacity(text.len() + 1);
    for line in hd.iter().map(|&i| lines[i]).chain(lines.iter().enumerate().filter(|&(i, _)| Some(i) != hd).map(|(_, l)| *l)) {
        if !is_bare(line) {
            out.extend_from_slice(line);
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
    }
    out
}

/// Adds `@PG` lines for this program as htslib's `sam_hdr_add_pg` does:
/// one per end of each existing `PP:` chain (or one after the last `@PG`
/// line when none is chained, or one without `PP:` when there is none),
/// with IDs made unique as `ID`, `ID.1`, `ID.2`..., placed after the last
/// `@PG` line (at the end when there is none); the rest of the text as
/// htslib rebuilds it ([`as_htslib_rebuilds`]).
///
/// ```
/// use fasthts::sort::add_pg_line;
/// let text = b"@HD\tVN:1.6\n@PG\tID:a\tPN:a\n@CO\tz\n";
/// assert_eq!(add_pg_line(text, "p", "1", "p x"),
///            b"@HD\tVN:1.6\n@PG\tID:a\tPN:a\n@PG\tID:p\tPN:p\tPP:a\tVN:1\tCL:p x\n@CO\tz\n");
/// ```
pub fn add_pg_line(text: &[u8], program: &str, version: &str, command_line: &str) -> Vec<u8> {
    let rebuilt = as_htslib_rebuilds(text);
    let text = &rebuilt[..];
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    let tag = |line: &[u8], key: &[u8]| -> Option<String> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.split(|&c| c == b'\t').skip(1).find_map(|f| f.strip_prefix(key)).map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let pg: Vec<(usize, String, Option<String>)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with(b"@PG\t"))
        .filter_map(|(i, l)| Some((i, tag(l, b"ID:")?, tag(l, b"PP:"))))
        .collect();
    let ids: std::collections::HashSet<&str> = pg.iter().map(|(_, id, _)| id.as_str()).collect();
    let linked = |pp: &Option<String>| pp.as_deref().is_some_and(|p| ids.contains(p));
    let parents: std::collections::HashSet<&str> =
        pg.iter().filter(|(_, _, pp)| linked(pp)).filter_map(|(_, _, pp)| pp.as_deref()).collect();
    // Ends of chains: linked lines that no line links to.
    let mut ends: Vec<&str> =
        pg.iter().filter(|(_, id, pp)| linked(pp) && !parents.contains(id.as_str())).map(|(_, id, _)| id.as_str()).collect();
    if ends.is_empty() {
        ends.extend(pg.last().map(|(_, id, _)| id.as_str()));
    }
    let mut taken: std::collections::HashSet<String> = ids.iter().map(|s| s.to_string()).collect();
    let mut counter = 1;
    let mut unique_id = || {
        let mut id = program.to_string();
        while taken.contains(&id) {
            id = format!("{program}.{counter}");
            counter += 1;
        }
        taken.insert(id.clone());
        id
    };
    let mut added = Vec::new();
    if ends.is_empty() {
        added.extend_from_slice(format!("@PG\tID:{}\tPN:{program}\tVN:{version}\tCL:{command_line}\n", unique_id()).as_bytes());
    }
    for end in ends {
        added.extend_from_slice(format!("@PG\tID:{}\tPN:{program}\tPP:{end}\tVN:{version}\tCL:{command_line}\n", unique_id()).as_bytes());
    }
    let after = pg.last().map_or(lines.len(), |(i, _, _)| i + 1);
    let mut out = Vec::with_capacity(text.len() + added.len() + 1);
    for line in &lines[..after] {
        out.extend_from_slice(line);
    }
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out.extend_from_slice(&added);
    for line in &lines[after..] {
        out.extend_from_slice(line);
    }
    out
}

fn trim_nuls(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &text[..end]
}
