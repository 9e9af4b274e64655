//! Header edits made by sort: `@HD SO:`, and an `@PG` line.

/// Sets `SO:<order>` on the `@HD` line (replacing an existing SO in place,
/// else appending it), or adds `@HD VN:1.6 SO:<order>` as the first line
/// when there is none, as htslib's `sam_hdr_update_hd` / `sam_hdr_add_line`.
///
/// ```
/// use fasthts::sort::set_sort_order;
/// assert_eq!(set_sort_order(b"@HD\tVN:1.4\tSO:unsorted\n@SQ\tSN:c\tLN:9\n", "coordinate"),
///            b"@HD\tVN:1.4\tSO:coordinate\n@SQ\tSN:c\tLN:9\n");
/// assert_eq!(set_sort_order(b"@SQ\tSN:c\tLN:9\n", "coordinate"),
///            b"@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c\tLN:9\n");
/// assert_eq!(set_sort_order(b"@HD\tVN:1.6\n", "queryname"), b"@HD\tVN:1.6\tSO:queryname\n");
/// ```
pub fn set_sort_order(text: &[u8], order: &str) -> Vec<u8> {
    let text = trim_nuls(text);
    if let Some(rest) = text.strip_prefix(b"@HD") {
        let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        let fields: Vec<&[u8]> = rest[..end].split(|&c| c == b'\t').skip(1).collect();
        let mut line = b"@HD".to_vec();
        let mut replaced = false;
        for f in fields {
            line.push(b'\t');
            if f.starts_with(b"SO:") {
                line.extend_from_slice(format!("SO:{order}").as_bytes());
                replaced = true;
            } else {
                line.extend_from_slice(f);
            }
        }
        if !replaced {
            line.extend_from_slice(format!("\tSO:{order}").as_bytes());
        }
        line.push(b'\n');
        line.extend_from_slice(rest.get(end + 1..).unwrap_or(&[]));
        line
    } else {
        let mut out = format!("@HD\tVN:1.6\tSO:{order}\n").into_bytes();
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
