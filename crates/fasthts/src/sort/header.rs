//! Header edits made by sort: `@HD SO:` (and `GO:`, `SS:`), and an `@PG` line.

use super::SortOrder;

/// Edits the `@HD` line for `order` as samtools sort does
/// (`sam_hdr_update_hd`, then `sam_hdr_remove_tag_hd`): `SO`, and `GO`/`SS`
/// where the order has them, replace existing values in place or are
/// appended; `GO`/`SS` are removed where it has none. Without an `@HD`
/// line, `@HD VN:1.6 SO:... [GO:...] [SS:...]` becomes the first line.
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
/// ```
pub fn set_sort_order(text: &[u8], order: SortOrder) -> Vec<u8> {
    let (so, go, ss) = order.header_tags();
    let updates = [("SO", Some(so)), ("GO", go), ("SS", ss)];
    let text = trim_nuls(text);
    if let Some(rest) = text.strip_prefix(b"@HD") {
        let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        let mut fields: Vec<Vec<u8>> = rest[..end].split(|&c| c == b'\t').skip(1).map(<[u8]>::to_vec).collect();
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
        let mut line = b"@HD".to_vec();
        for f in fields {
            line.push(b'\t');
            line.extend_from_slice(&f);
        }
        line.push(b'\n');
        line.extend_from_slice(rest.get(end + 1..).unwrap_or(&[]));
        line
    } else {
        let mut line = String::from("@HD\tVN:1.6");
        for (tag, value) in updates {
            if let Some(v) = value {
                line.push_str(&format!("\t{tag}:{v}"));
            }
        }
        line.push('\n');
        let mut out = line.into_bytes();
        out.extend_from_slice(text);
        out
    }
}

/// Appends an `@PG` line for this program, chained (`PP:`) to the last
/// `@PG` line present, with an ID made unique as htslib does (`ID.1`, ...).
pub fn add_pg_line(text: &[u8], program: &str, version: &str, command_line: &str) -> Vec<u8> {
    let mut out = trim_nuls(text).to_vec();
    let ids: Vec<String> = out
        .split(|&c| c == b'\n')
        .filter(|l| l.starts_with(b"@PG"))
        .filter_map(|l| l.split(|&c| c == b'\t').find(|f| f.starts_with(b"ID:")).map(|f| String::from_utf8_lossy(&f[3..]).into_owned()))
        .collect();
    let mut id = program.to_string();
    let mut n = 0;
    while ids.contains(&id) {
        n += 1;
        id = format!("{program}.{n}");
    }
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let pp = ids.last().map(|p| format!("\tPP:{p}")).unwrap_or_default();
    out.extend_from_slice(format!("@PG\tID:{id}\tPN:{program}{pp}\tVN:{version}\tCL:{command_line}\n").as_bytes());
    out
}

fn trim_nuls(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &text[..end]
}
