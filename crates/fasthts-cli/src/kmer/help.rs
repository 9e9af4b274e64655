//! Python 3.11's argparse help layout, as khmer's scripts print `--help`
//! (khmer's `ComboFormatter`: the description and epilog as written, the
//! arguments' help wrapped to the terminal with `(default: ...)` added),
//! and the `textwrap.wrap` it wraps with.

/// One argument of the help listing: its invocation (`-k KSIZE, --ksize
/// KSIZE`, or a positional's name) and its expanded help, if it has any.
pub(super) struct Item {
    pub invocation: String,
    pub help: Option<String>,
}

/// argparse's `format_help` for a parser whose usage text is `usage`
/// (with its newline), for a terminal `columns` wide.
pub(super) fn format_help(usage: &str, description: &str, positionals: &[Item], options: &[Item], epilog: &str, columns: usize) -> String {
    let width = columns as isize - 2;
    let max_help_position = 24.min((width - 20).max(4)) as usize;
    let width = width.max(0) as usize;
    // argparse measures every listed argument at its section's indent (2)
    let longest = positionals.iter().chain(options).map(|i| i.invocation.chars().count() + 2).max().unwrap_or(0);
    let help_position = (longest + 2).min(max_help_position);
    let section = |heading: &str, items: &[Item]| -> String {
        if items.is_empty() {
            return String::new();
        }
        let mut s = format!("\n{heading}:\n");
        for item in items {
            s.push_str(&format_item(item, help_position, width));
        }
        s.push('\n');
        s
    };
    let text = |t: &str| if t.is_empty() { String::new() } else { format!("{t}\n\n") };
    let mut help = format!("{usage}\n");
    help.push_str(&text(description));
    help.push_str(&section("positional arguments", positionals));
    help.push_str(&section("options", options));
    help.push_str(&text(epilog));
    // `_long_break_matcher` (3 or more newlines to 2), then one newline at
    // each end stripped and one at the end added
    let mut out = String::with_capacity(help.len());
    let mut newlines = 0;
    for c in help.chars() {
        if c == '\n' {
            newlines += 1;
            if newlines <= 2 {
                out.push(c);
            }
        } else {
            newlines = 0;
            out.push(c);
        }
    }
    format!("{}\n", out.trim_matches('\n'))
}

/// argparse's `_format_action` at indent 2.
fn format_item(item: &Item, help_position: usize, width: usize) -> String {
    const INDENT: usize = 2;
    let help_width = width.saturating_sub(help_position).max(11);
    let action_width = help_position.saturating_sub(INDENT + 2);
    let header = &item.invocation;
    let Some(help) = item.help.as_deref().filter(|h| !h.trim().is_empty()) else {
        return format!("{:INDENT$}{header}\n", "");
    };
    let (mut s, indent_first) = if header.chars().count() <= action_width {
        (format!("{:INDENT$}{header:<action_width$}  ", ""), 0)
    } else {
        (format!("{:INDENT$}{header}\n", ""), help_position)
    };
    let collapsed = help.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    let lines = wrap(&collapsed, help_width);
    for (n, line) in lines.iter().enumerate() {
        let pad = if n == 0 { indent_first } else { help_position };
        s.push_str(&format!("{:pad$}{line}\n", ""));
    }
    s
}

/// textwrap's `[^\d\W]`: a word character that is not a digit.
fn is_letter(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !c.is_numeric()
}

/// textwrap's `[\w!"\'&.,?]`.
fn is_word_punct(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || "!\"'&.,?".contains(c)
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// textwrap's `wordsep_re` split: runs of whitespace, em-dashes between
/// words, and words, broken after the hyphens of hyphenated words.
fn chunks(text: &[char]) -> Vec<String> {
    let at = |i: isize| -> Option<char> { (i >= 0).then(|| text.get(i as usize).copied()).flatten() };
    let letter = |i: isize| at(i).is_some_and(is_letter);
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let start = i;
        if text[i].is_whitespace() {
            while i < text.len() && text[i].is_whitespace() {
                i += 1;
            }
        } else if text[i] == '-' && text.get(i + 1) == Some(&'-') && start > 0 && is_word_punct(text[start - 1]) && {
            let dashes = text[i..].iter().take_while(|&&c| c == '-').count();
            text.get(i + dashes).is_some_and(|&c| is_word(c))
        } {
            while text[i] == '-' {
                i += 1;
            }
        } else {
            // the shortest run of non-space that ends at one of the three
            let mut e = start + 1;
            loop {
                let ei = e as isize;
                if e >= text.len() || text[e].is_whitespace() {
                    break;
                }
                if text[e] == '-' {
                    let after_two_letters = letter(ei - 2) && letter(ei - 1);
                    let after_letter_hyphen_letter = letter(ei - 3) && at(ei - 2) == Some('-') && letter(ei - 1);
                    let before_word = letter(ei + 1) && (letter(ei + 2) || (at(ei + 2) == Some('-') && letter(ei + 3)));
                    if (after_two_letters || after_letter_hyphen_letter) && before_word {
                        e += 1;
                        break;
                    }
                }
                if is_word_punct(text[e - 1]) && text[e] == '-' && text.get(e + 1) == Some(&'-') && {
                    let dashes = text[e..].iter().take_while(|&&c| c == '-').count();
                    text.get(e + dashes).is_some_and(|&c| is_word(c))
                } {
                    break;
                }
                e += 1;
            }
            i = e;
        }
        out.push(text[start..i].iter().collect());
    }
    out
}

/// Python's `textwrap.wrap(text, width)` (its defaults: long words broken,
/// at a hyphen if there is one, whitespace dropped at the line ends).
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut chunks: Vec<Vec<char>> = chunks(&chars).into_iter().map(|c| c.chars().collect()).collect();
    chunks.reverse();
    let blank = |c: &[char]| c.iter().all(|c| c.is_whitespace());
    let mut lines: Vec<String> = Vec::new();
    while !chunks.is_empty() {
        let mut line: Vec<Vec<char>> = Vec::new();
        let mut len = 0;
        if !lines.is_empty() && blank(chunks.last().unwrap()) {
            chunks.pop();
        }
        while let Some(c) = chunks.last() {
            if len + c.len() <= width {
                len += c.len();
                line.push(chunks.pop().unwrap());
            } else {
                break;
            }
        }
        if chunks.last().is_some_and(|c| c.len() > width) {
            let space_left = if width < 1 { 1 } else { width - len };
            let chunk = chunks.last_mut().unwrap();
            let mut end = space_left;
            if chunk.len() > space_left {
                if let Some(h) = chunk[..space_left].iter().rposition(|&c| c == '-') {
                    if h > 0 && chunk[..h].iter().any(|&c| c != '-') {
                        end = h + 1;
                    }
                }
            }
            line.push(chunk[..end].to_vec());
            *chunk = chunk[end..].to_vec();
        }
        if line.last().is_some_and(|c| blank(c)) {
            line.pop();
        }
        if !line.is_empty() {
            lines.push(line.concat().into_iter().collect());
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_as_textwrap() {
        // from Python 3.11's textwrap.wrap(text, width)
        assert_eq!(wrap("treat all sequences as single-ended/unpaired (default: False)", 54), ["treat all sequences as single-ended/unpaired (default:", "False)"]);
        assert_eq!(wrap("single-ended word", 10), ["single-", "ended word"]);
        assert_eq!(wrap("a k-mer count", 4), ["a k-", "mer ", "coun", "t"]);
        assert_eq!(wrap("abcdefghij-klm", 8), ["abcdefgh", "ij-klm"]);
        assert_eq!(wrap("use --long-k now", 9), ["use", "--long-k", "now"]);
        assert_eq!(wrap("well--done and x -- y, self-evident-ly a-b-c", 7), ["well--", "done", "and x", "-- y,", "self-ev", "ident-", "ly", "a-b-c"]);
    }
}
