//! The k-mer scripts' command lines read as Python's argparse (3.11, the
//! Python of Debian's khmer 3.0) reads khmer's: one layer in front of clap
//! for every `fasthts kmer <script>`, built from the script's clap
//! definition, so a script added later gets it without code of its own.
//!
//! [`preparse`] walks the words as argparse does: unique prefixes of long
//! options (`--ks 17`), `--ksize=17`, `-k17`, a single word `'-k 17'`,
//! bundled flags (`-qf`), `--`, negative numbers as values, the way
//! argparse shares words among positionals (a word after an option's value
//! that no positional takes any more is "unrecognized"), the last of a
//! repeated option winning. Each value goes through the option's own value
//! parser where argparse converts it, so errors come in argparse's order
//! with its text: the usage line (argparse's layout of khmer's options, for
//! prog `fasthts kmer <script>`), `<prog>: error: <what>`, status 2, on
//! stderr. `--version` and `--info` print khmer's citation banner on stderr
//! and exit 0, where argparse meets them. What comes out is the same
//! command line in a canonical form (`--long=value`, flags, `--`, the
//! positionals) that clap then reads into the script's typed arguments.
//!
//! khmer's usage line and `-h/--help` are made from the definition:
//! options in their order (after `[--version] [--info] [-h]`), each as its
//! short name if it has one and its value name (khmer's metavar);
//! positionals by their id (argparse's dest, or khmer's metavar); two
//! options that conflict and stand together as `[--gzip | --bzip]`. The
//! help (see [`help`](super::help)) takes each argument's `help` (khmer's
//! text, its default added as argparse adds it, see `khmer_help`) and the
//! command's `long_about` and `after_help` (khmer's description and
//! epilog). An option khmer does not list (its hidden `-N`/`-x`, or a
//! fasthts extension) is marked `hide_short_help`: left out of the usage
//! line and the help. clap's own help (`fasthts help kmer <script>`) shows
//! every option with its `long_help`, fasthts's words where they differ.

use crate::Failure;
use clap::{Arg, ArgAction, Command};
use super::help;
use std::ffi::{OsStr, OsString};

/// The khmer series whose scripts fasthts reproduces (3.0.0a3, Debian's
/// khmer 3.0), named in the banner as what fasthts does, not as a version
/// it is: the banner's version line is fasthts' own.
pub(super) const KHMER_SERIES: &str = "3.0";

/// khmer's `ALGORITHMS`: the works its scripts ask to be cited.
fn citation(key: &str) -> &'static str {
    match key {
        "software" => "MR Crusoe et al., 2015. https://doi.org/10.12688/f1000research.6924.1",
        "diginorm" => "CT Brown et al., arXiv:1203.4802 [q-bio.GN]",
        "streaming" => "Q Zhang, S Awad, CT Brown, https://doi.org/10.7287/peerj.preprints.890v1",
        "counting" => "Q Zhang et al., https://doi.org/10.1371/journal.pone.0101271",
        "SeqAn" => "A. D\u{f6}ring et al. https://doi.org:80/10.1186/1471-2105-9-11",
        "hll" => "Irber and Brown. https://doi.org/10.1101/056846",
        _ => unreachable!("no citation {key}"),
    }
}

/// The citations each script's parser is given (`citations=` in khmer's
/// scripts); a script not named here cites khmer alone.
fn script_citations(script: &str) -> &'static [&'static str] {
    match script {
        "count" | "abundance-dist-single" | "filter-abund-single" => &["counting", "SeqAn"],
        "abundance-dist" | "filter-abund" => &["counting"],
        "normalize" => &["diginorm"],
        "trim-low-abund" => &["streaming"],
        "unique-kmers" => &["SeqAn", "hll"],
        _ => &[],
    }
}

/// The name argparse gives the script (`prog`), in usage lines, errors and
/// the banner: the command as typed.
pub(super) fn prog(script: &str) -> String {
    format!("fasthts kmer {script}")
}

/// khmer's `info()`: the banner printed on stderr by `--info`, `--version`
/// and (unless `-q`) at the start of every run of khmer's scripts, in its
/// shape, with fasthts' name and version (no khmer or screed version:
/// fasthts is neither).
pub(super) fn banner(script: &str) -> String {
    let mut s = format!(
        "\n|| This is the script {} in fasthts, which does khmer {KHMER_SERIES}'s work.\n|| You are running fasthts version {}\n||\n|| If you use this script in a publication, please cite EACH of the following:\n||\n",
        prog(script),
        env!("CARGO_PKG_VERSION")
    );
    for key in std::iter::once(&"software").chain(script_citations(script)) {
        s.push_str(&format!("||   * {}\n", citation(key)));
    }
    s.push_str("||\n|| Please see http://khmer.readthedocs.io/en/latest/citations.html for details.\n\n");
    s
}

/// Why argparse stops reading a command line early: an error (or what
/// `--version`/`--info` print, status 0), or `-h/--help`.
enum Stop {
    Fail(Failure),
    Help,
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Stop {
        Stop::Fail(f)
    }
}

/// What a word of the command line is to argparse.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// `--version`, `--info`, `-h/--help`: khmer's parser's own.
    Version,
    Info,
    Help,
    Flag,
    Value,
}

/// Options khmer declares with the long name first (`build_graph_args`'s
/// `'--n_tables', '-N'` and `'--max-tablesize', '-x'`): argparse names an
/// option by its strings in the order declared ("argument
/// --max-tablesize/-x: not allowed with argument -M/--max-memory-usage").
const LONG_NAME_FIRST: &[&str] = &["n_tables", "max-tablesize"];

/// An option as argparse knows it.
struct Opt {
    /// argparse's option strings, in the order its messages name them.
    strings: Vec<String>,
    /// How many of `strings` are khmer's (the rest: fasthts's aliases,
    /// matched but not named in messages).
    named: usize,
    kind: Kind,
    /// The clap argument (none for khmer's own three).
    arg: Option<Arg>,
}

impl Opt {
    /// argparse's name of the action in messages: `-k/--ksize`.
    fn name(&self) -> String {
        self.strings[..self.named].join("/")
    }
}

/// How many words a positional takes (argparse's `nargs`).
#[derive(Clone, Copy, PartialEq)]
enum Nargs {
    One,
    Optional,
    ZeroOrMore,
    OneOrMore,
}

struct Positional {
    /// argparse's dest: the clap id (khmer's name for it).
    dest: String,
    nargs: Nargs,
    arg: Arg,
}

struct Parser {
    script: String,
    /// khmer's description and epilog, as its `--help` prints them (the
    /// command's `long_about` and `after_help`).
    description: String,
    epilog: String,
    opts: Vec<Opt>,
    positionals: Vec<Positional>,
    /// Pairs of options that exclude each other (indices into `opts`).
    conflicts: Vec<(usize, usize)>,
}

fn is_listed(a: &Arg) -> bool {
    !a.is_hide_set() && !a.is_hide_short_help_set()
}

impl Parser {
    fn new(script: &str, cmd: &Command) -> Parser {
        let own = |strings: &[&str], kind| Opt { strings: strings.iter().map(|s| s.to_string()).collect(), named: strings.len(), kind, arg: None };
        let mut opts = vec![own(&["--version"], Kind::Version), own(&["--info"], Kind::Info), own(&["-h", "--help"], Kind::Help)];
        let mut positionals = Vec::new();
        for a in cmd.get_arguments() {
            if a.is_positional() {
                let many = matches!(a.get_action(), ArgAction::Append) || a.get_num_args().is_some_and(|n| n.max_values() > 1);
                let nargs = match (many, a.is_required_set()) {
                    (true, true) => Nargs::OneOrMore,
                    (true, false) => Nargs::ZeroOrMore,
                    (false, true) => Nargs::One,
                    (false, false) => Nargs::Optional,
                };
                positionals.push(Positional { dest: a.get_id().to_string(), nargs, arg: a.clone() });
                continue;
            }
            let mut strings: Vec<String> = Vec::new();
            strings.extend(a.get_short().map(|c| format!("-{c}")));
            strings.extend(a.get_long().map(|l| format!("--{l}")));
            if a.get_long().is_some_and(|l| LONG_NAME_FIRST.contains(&l)) {
                strings.reverse();
            }
            // visible long aliases are khmer's own spellings (trim's
            // --normalize-to); hidden ones and short aliases (-@) fasthts's
            let visible: Vec<&str> = a.get_visible_aliases().unwrap_or_default();
            strings.extend(visible.iter().map(|l| format!("--{l}")));
            let named = strings.len();
            strings.extend(a.get_all_short_aliases().unwrap_or_default().into_iter().map(|c| format!("-{c}")));
            strings.extend(a.get_all_aliases().unwrap_or_default().into_iter().filter(|l| !visible.contains(l)).map(|l| format!("--{l}")));
            let kind = if a.get_action().takes_values() { Kind::Value } else { Kind::Flag };
            opts.push(Opt { strings, named, kind, arg: Some(a.clone()) });
        }
        let index = |id: &clap::Id| opts.iter().position(|o| o.arg.as_ref().is_some_and(|a| a.get_id() == id));
        let mut conflicts = Vec::new();
        for (i, o) in opts.iter().enumerate() {
            if let Some(a) = &o.arg {
                for other in cmd.get_arg_conflicts_with(a) {
                    if let Some(j) = index(other.get_id()) {
                        conflicts.push((i.min(j), i.max(j)));
                    }
                }
            }
        }
        conflicts.sort_unstable();
        conflicts.dedup();
        let description = cmd.get_long_about().map(|t| t.to_string()).unwrap_or_default();
        let epilog = cmd.get_after_help().map(|t| t.to_string()).unwrap_or_default();
        Parser { script: script.to_string(), description, epilog, opts, positionals, conflicts }
    }

    fn conflict(&self, i: usize, j: usize) -> bool {
        self.conflicts.contains(&(i.min(j), i.max(j)))
    }

    /// argparse's usage text (`usage: ...` and its newline) for a
    /// terminal `columns` wide.
    fn usage(&self, columns: usize) -> String {
        let prog = prog(&self.script);
        let option_usage = |o: &Opt| -> String {
            let first = o.strings[0].clone();
            match (&o.arg, o.kind) {
                (Some(a), Kind::Value) => format!("{first} {}", metavar(a)),
                _ => first,
            }
        };
        let listed: Vec<usize> = (0..self.opts.len()).filter(|&i| self.opts[i].arg.as_ref().map_or(true, is_listed)).collect();
        let mut opt_parts = Vec::new();
        let mut k = 0;
        while k < listed.len() {
            let i = listed[k];
            if k + 1 < listed.len() && self.conflict(i, listed[k + 1]) {
                opt_parts.push(format!("[{} | {}]", option_usage(&self.opts[i]), option_usage(&self.opts[listed[k + 1]])));
                k += 2;
            } else {
                opt_parts.push(format!("[{}]", option_usage(&self.opts[i])));
                k += 1;
            }
        }
        let mut pos_parts = Vec::new();
        for p in &self.positionals {
            let d = &p.dest;
            match p.nargs {
                Nargs::One => pos_parts.push(d.clone()),
                Nargs::Optional => pos_parts.push(format!("[{d}]")),
                Nargs::ZeroOrMore => pos_parts.push(format!("[{d} ...]")),
                Nargs::OneOrMore => {
                    pos_parts.push(d.clone());
                    pos_parts.push(format!("[{d} ...]"));
                }
            }
        }
        format_usage(&prog, &opt_parts, &pos_parts, columns.saturating_sub(2).max(11))
    }

    /// khmer's `--help` text for a terminal `columns` wide: argparse's
    /// layout of the usage, the description, each listed argument with its
    /// help (see [`khmer_help`]) and the epilog.
    fn help(&self, columns: usize) -> String {
        let positionals: Vec<help::Item> =
            self.positionals.iter().map(|p| help::Item { invocation: p.dest.clone(), help: p.arg.get_help().map(|h| h.to_string()) }).collect();
        let options: Vec<help::Item> = self
            .opts
            .iter()
            .filter(|o| o.arg.as_ref().map_or(true, is_listed))
            .map(|o| {
                let invocation = match (&o.arg, o.kind) {
                    (Some(a), Kind::Value) => {
                        let metavar = metavar(a);
                        o.strings[..o.named].iter().map(|s| format!("{s} {metavar}")).collect::<Vec<_>>().join(", ")
                    }
                    _ => o.strings[..o.named].join(", "),
                };
                let help = match &o.arg {
                    Some(a) => khmer_help(a),
                    None => Some(own_help(o.kind).to_string()),
                };
                help::Item { invocation, help }
            })
            .collect();
        help::format_help(&self.usage(columns), &self.description, &positionals, &options, &self.epilog, columns)
    }

    /// argparse's `error()`: the usage, `prog: error: message`, status 2.
    fn error(&self, message: &str) -> Failure {
        let usage = self.usage(terminal_columns());
        Failure::new(2, format!("{usage}{}: error: {message}", prog(&self.script)))
    }

    /// The action matching word `word` (argparse's `_parse_optional`):
    /// `None` for a positional, `Some((None, ..))` for an unknown option.
    #[allow(clippy::type_complexity)]
    fn parse_optional(&self, word: &str) -> Result<Option<(Option<usize>, String, Option<String>)>, Failure> {
        if word.is_empty() || !word.starts_with('-') {
            return Ok(None);
        }
        let exact = |s: &str| self.opts.iter().position(|o| o.strings.iter().any(|x| x == s));
        if let Some(i) = exact(word) {
            return Ok(Some((Some(i), word.to_string(), None)));
        }
        if word.len() == 1 {
            return Ok(None);
        }
        if let Some((name, value)) = word.split_once('=') {
            if let Some(i) = exact(name) {
                return Ok(Some((Some(i), name.to_string(), Some(value.to_string()))));
            }
        }
        // argparse's _get_option_tuples, in the options' order, among
        // khmer's names; fasthts's aliases only where none of those match
        let found = self.option_tuples(word, true);
        let mut found = if found.is_empty() { self.option_tuples(word, false) } else { found };
        match found.len() {
            0 => {}
            1 => {
                let (i, s, explicit) = found.pop().unwrap();
                return Ok(Some((Some(i), s, explicit)));
            }
            _ => {
                let matches: Vec<&str> = found.iter().map(|(_, s, _)| s.as_str()).collect();
                return Err(self.error(&format!("ambiguous option: {word} could match {}", matches.join(", "))));
            }
        }
        if is_negative_number(word) || word.contains(' ') {
            return Ok(None);
        }
        Ok(Some((None, word.to_string(), None)))
    }

    /// The options `word` may abbreviate (argparse's `_get_option_tuples`),
    /// among khmer's names (`named`) or among fasthts's aliases.
    fn option_tuples(&self, word: &str, named: bool) -> Vec<(usize, String, Option<String>)> {
        let mut found: Vec<(usize, String, Option<String>)> = Vec::new();
        let all = self.opts.iter().enumerate().flat_map(|(i, o)| {
            let strings = if named { &o.strings[..o.named] } else { &o.strings[o.named..] };
            strings.iter().map(move |s| (i, s))
        });
        if word.starts_with("--") {
            let (prefix, explicit) = match word.split_once('=') {
                Some((p, v)) => (p, Some(v.to_string())),
                None => (word, None),
            };
            for (i, s) in all {
                if s.starts_with(prefix) {
                    found.push((i, s.clone(), explicit.clone()));
                }
            }
        } else {
            let short = &word[..word.char_indices().nth(2).map_or(word.len(), |(n, _)| n)];
            for (i, s) in all {
                if s == short {
                    found.push((i, s.clone(), Some(word[short.len()..].to_string())));
                } else if s.starts_with(word) {
                    found.push((i, s.clone(), None));
                }
            }
        }
        found
    }

    /// Converts `value` as the option's value parser does, at the point
    /// argparse converts it; its error in argparse's words.
    fn check_value(&self, i: usize, value: &OsStr) -> Result<(), Failure> {
        let o = &self.opts[i];
        let Some(a) = &o.arg else { return Ok(()) };
        let probe = Command::new("probe").no_binary_name(true).arg(
            Arg::new("value").long("value").action(ArgAction::Set).num_args(1).allow_hyphen_values(true).value_parser(a.get_value_parser().clone()),
        );
        let mut word = OsString::from("--value=");
        word.push(value);
        let Err(e) = probe.try_get_matches_from([word]) else { return Ok(()) };
        use std::error::Error as _;
        if let Some(failure) = e.source().and_then(|s| s.downcast_ref::<Failure>()) {
            return Err(Failure::new(failure.status, failure.message.clone()));
        }
        let text = value.to_string_lossy();
        let message = match e.kind() {
            clap::error::ErrorKind::InvalidValue => {
                let choices: Vec<String> = a.get_possible_values().iter().map(|p| py_repr(p.get_name())).collect();
                format!("invalid choice: {} (choose from {})", py_repr(&text), choices.join(", "))
            }
            _ => {
                let reason = e.source().map(|s| s.to_string()).unwrap_or_else(|| e.kind().to_string());
                python_type_error(&reason, &text).unwrap_or(reason)
            }
        };
        Err(self.error(&format!("argument {}: {message}", o.name())))
    }

    /// Reads `words` (after the script's name) as argparse would; the
    /// canonical command line for clap, or argparse's error.
    fn parse(&self, words: &[OsString]) -> Result<Vec<OsString>, Stop> {
        let text: Vec<String> = words.iter().map(|w| w.to_string_lossy().into_owned()).collect();
        // The pattern of the words: 'O' option, 'A' argument, '-' for `--`.
        let mut pattern = Vec::with_capacity(text.len());
        let mut options = std::collections::BTreeMap::new();
        let mut rest = false;
        for (n, w) in text.iter().enumerate() {
            if rest {
                pattern.push(b'A');
            } else if w == "--" {
                pattern.push(b'-');
                rest = true;
            } else if let Some(t) = self.parse_optional(w)? {
                options.insert(n, t);
                pattern.push(b'O');
            } else {
                pattern.push(b'A');
            }
        }
        let mut state = State { values: Vec::new(), seen: Vec::new(), positional_words: Vec::new(), extras: Vec::new() };
        let mut positionals: &[Positional] = &self.positionals;
        let mut start = 0;
        let last_option = options.keys().next_back().copied();
        if let Some(max) = last_option {
            while start <= max {
                let next = *options.range(start..).next().unwrap().0;
                if start != next {
                    let end = self.consume_positionals(&mut positionals, &pattern, start, words, &mut state);
                    if end > start {
                        start = end;
                        continue;
                    }
                }
                if !options.contains_key(&start) {
                    state.extras.extend(text[start..next].iter().cloned());
                    start = next;
                }
                start = self.consume_optional(&options[&start], start, &pattern, words, &mut state)?;
            }
        }
        let stop = self.consume_positionals(&mut positionals, &pattern, start, words, &mut state);
        state.extras.extend(text[stop..].iter().cloned());
        let missing: Vec<&str> = positionals.iter().filter(|p| matches!(p.nargs, Nargs::One | Nargs::OneOrMore)).map(|p| p.dest.as_str()).collect();
        if !missing.is_empty() {
            return Err(self.error(&format!("the following arguments are required: {}", missing.join(", "))).into());
        }
        if !state.extras.is_empty() {
            return Err(self.error(&format!("unrecognized arguments: {}", state.extras.join(" "))).into());
        }
        Ok(self.canonical(state))
    }

    /// argparse's `consume_positionals`: gives the positionals still
    /// unfilled as many of the words from `start` as they can take.
    fn consume_positionals(&self, positionals: &mut &[Positional], pattern: &[u8], start: usize, words: &[OsString], state: &mut State) -> usize {
        let counts = match_partial(positionals, &pattern[start..]);
        let mut at = start;
        for count in &counts {
            let mut taken: Vec<OsString> = words[at..at + count].to_vec();
            // argparse drops the first `--` of each positional's words
            if let Some(k) = taken.iter().position(|w| w == "--") {
                taken.remove(k);
            }
            state.positional_words.extend(taken);
            at += count;
        }
        *positionals = &positionals[counts.len()..];
        at
    }

    /// argparse's `consume_optional` for the option word at `start`.
    fn consume_optional(&self, found: &(Option<usize>, String, Option<String>), start: usize, pattern: &[u8], words: &[OsString], state: &mut State) -> Result<usize, Stop> {
        let (action, option_string, explicit) = found.clone();
        let Some(mut i) = action else {
            state.extras.push(words[start].to_string_lossy().into_owned());
            return Ok(start + 1);
        };
        let mut option_string = option_string;
        let mut explicit = explicit;
        loop {
            let kind = self.opts[i].kind;
            let takes_value = kind == Kind::Value;
            match explicit.take() {
                Some(value) => {
                    if !takes_value && !option_string.starts_with("--") && !value.is_empty() {
                        // bundled short flags: `-qf`, `-qk17`
                        self.take(i, None, state)?;
                        let mut chars = value.chars();
                        let next = format!("-{}", chars.next().unwrap());
                        let remainder: String = chars.collect();
                        match self.opts.iter().position(|o| o.strings.contains(&next)) {
                            Some(j) => {
                                i = j;
                                option_string = next;
                                explicit = (!remainder.is_empty()).then_some(remainder);
                                continue;
                            }
                            None => return Err(self.error(&format!("argument {}: ignored explicit argument {}", self.opts[i].name(), py_repr(&value))).into()),
                        }
                    } else if takes_value {
                        self.take(i, Some(OsString::from(value)), state)?;
                        return Ok(start + 1);
                    } else {
                        return Err(self.error(&format!("argument {}: ignored explicit argument {}", self.opts[i].name(), py_repr(&value))).into());
                    }
                }
                None => {
                    if takes_value {
                        if pattern.get(start + 1) != Some(&b'A') {
                            return Err(self.error(&format!("argument {}: expected one argument", self.opts[i].name())).into());
                        }
                        self.take(i, Some(words[start + 1].clone()), state)?;
                        return Ok(start + 2);
                    }
                    self.take(i, None, state)?;
                    return Ok(start + 1);
                }
            }
        }
    }

    /// argparse's `take_action`: conflicts, the value's conversion, and
    /// khmer's own actions (which end the parse).
    fn take(&self, i: usize, value: Option<OsString>, state: &mut State) -> Result<(), Stop> {
        if let Some(&j) = state.seen.iter().find(|&&j| j != i && self.conflict(i, j)) {
            return Err(self.error(&format!("argument {}: not allowed with argument {}", self.opts[i].name(), self.opts[j].name())).into());
        }
        if let Some(v) = &value {
            self.check_value(i, v)?;
        }
        match self.opts[i].kind {
            // printed and exit 0: a "failure" with status 0 ends the run
            Kind::Version => return Err(Failure::new(0, format!("{}fasthts {}", banner(&self.script), env!("CARGO_PKG_VERSION"))).into()),
            Kind::Info => return Err(Failure::new(0, banner(&self.script).trim_end_matches('\n').to_string() + "\n").into()),
            Kind::Help => return Err(Stop::Help),
            _ => {}
        }
        state.seen.push(i);
        state.values.push((i, value));
        Ok(())
    }

    /// The command line for clap: each option once (its last value; every
    /// value of one that collects them), then `--` and the positionals.
    fn canonical(&self, state: State) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        for (n, (i, value)) in state.values.iter().enumerate() {
            let o = &self.opts[*i];
            let Some(a) = &o.arg else { continue };
            let collects = matches!(a.get_action(), ArgAction::Append | ArgAction::Count);
            if !collects && state.values[n + 1..].iter().any(|(j, _)| j == i) {
                continue;
            }
            let name = match (a.get_long(), a.get_short()) {
                (Some(l), _) => format!("--{l}"),
                (None, Some(c)) => format!("-{c}"),
                (None, None) => unreachable!("an option without a name"),
            };
            match value {
                Some(v) if a.get_long().is_some() => {
                    let mut w = OsString::from(format!("{name}="));
                    w.push(v);
                    out.push(w);
                }
                Some(v) => {
                    let mut w = OsString::from(name);
                    w.push(v);
                    out.push(w);
                }
                None => out.push(name.into()),
            }
        }
        out.push("--".into());
        out.extend(state.positional_words);
        out
    }
}

/// An option's value name in usage and help: khmer's metavar, or (as
/// argparse) its dest in capitals.
fn metavar(a: &Arg) -> String {
    a.get_value_names().and_then(|v| v.first()).map(|s| s.to_string()).unwrap_or_else(|| a.get_id().to_string().to_uppercase())
}

/// The help of khmer's own three options.
fn own_help(kind: Kind) -> &'static str {
    match kind {
        Kind::Version => "show program's version number and exit",
        Kind::Info => "print citation information",
        _ => "show this help message and exit",
    }
}

/// An option's help as khmer's `ComboFormatter` expands it: the clap
/// definition's help (khmer's text) and argparse's ` (default: X)`, X as
/// Python prints khmer's default: `False` for a flag, `True` for one that
/// clears a setting (`-b/--no-bigcount`, `ArgAction::SetFalse`), the
/// default value, `None` for none. A help that already ends in its own
/// `(default: ...)` is taken as it is: that is where khmer's default is
/// not fasthts's (`-T`: khmer's 1) or Python prints it another way.
/// No help (khmer's `-q`): nothing.
fn khmer_help(a: &Arg) -> Option<String> {
    let help = a.get_help()?.to_string();
    if help.ends_with(')') && help.contains("(default: ") {
        return Some(help);
    }
    let default = match a.get_action() {
        ArgAction::SetTrue => "False".to_string(),
        ArgAction::SetFalse => "True".to_string(),
        _ => match a.get_default_values().first() {
            Some(v) => v.to_string_lossy().into_owned(),
            None => "None".to_string(),
        },
    };
    Some(format!("{help} (default: {default})"))
}

struct State {
    values: Vec<(usize, Option<OsString>)>,
    seen: Vec<usize>,
    positional_words: Vec<OsString>,
    extras: Vec<String>,
}

/// argparse's `_match_arguments_partial`: as many of `positionals` as can
/// be matched (greedily, as its regular expressions) at the start of
/// `pattern`, and the number of words each takes.
fn match_partial(positionals: &[Positional], pattern: &[u8]) -> Vec<usize> {
    for n in (1..=positionals.len()).rev() {
        let mut counts = Vec::new();
        if match_all(&positionals[..n], pattern, &mut counts) {
            return counts;
        }
    }
    Vec::new()
}

fn match_all(positionals: &[Positional], pattern: &[u8], counts: &mut Vec<usize>) -> bool {
    let Some((first, rest)) = positionals.split_first() else { return true };
    for len in (0..=pattern.len()).rev() {
        if matches_nargs(first.nargs, &pattern[..len]) {
            counts.push(len);
            if match_all(rest, &pattern[len..], counts) {
                return true;
            }
            counts.pop();
        }
    }
    false
}

/// Whether `words` (a pattern of 'A' and '-') is what argparse's nargs
/// pattern matches: `-*A-*`, `-*A?-*`, `-*[A-]*`, `-*A[A-]*`.
fn matches_nargs(nargs: Nargs, words: &[u8]) -> bool {
    if words.contains(&b'O') {
        return false;
    }
    let lead = words.iter().take_while(|&&c| c == b'-').count();
    let body = &words[lead..];
    match nargs {
        Nargs::One => body.first() == Some(&b'A') && body[1..].iter().all(|&c| c == b'-'),
        Nargs::Optional => {
            let body = body.strip_prefix(b"A").unwrap_or(body);
            body.iter().all(|&c| c == b'-')
        }
        Nargs::ZeroOrMore => true,
        Nargs::OneOrMore => body.first() == Some(&b'A'),
    }
}

/// argparse's `^-\d+$|^-\d*\.\d+$`.
fn is_negative_number(s: &str) -> bool {
    let Some(t) = s.strip_prefix('-') else { return false };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    match t.split_once('.') {
        None => digits(t),
        Some((a, b)) => (a.is_empty() || digits(a)) && digits(b),
    }
}

/// argparse's words for a value its type function refused, where the
/// value parser's `reason` says which type it wanted and Python's
/// conversion would refuse `value` too.
fn python_type_error(reason: &str, value: &str) -> Option<String> {
    let t = value.trim();
    let python_int = || {
        let d = t.strip_prefix(['+', '-']).unwrap_or(t);
        !d.is_empty() && !d.starts_with('_') && !d.ends_with('_') && !d.contains("__") && d.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    };
    let python_float = || t.parse::<f64>().is_ok();
    let (type_name, accepted) = if reason.starts_with("expected a whole number") {
        ("int", python_int())
    } else if reason.starts_with("expected a number of bytes") {
        ("memory_setting", python_float() || fasthts_kmer::command::parse_memory_setting(value).is_some())
    } else if reason.starts_with("expected a number") {
        ("float", python_float())
    } else {
        return None;
    };
    (!accepted).then(|| format!("invalid {type_name} value: {}", py_repr(value)))
}

/// Python's `repr` of a string (the quoting argparse's messages use).
pub(super) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// argparse's `_format_usage`: `usage: prog parts...`, wrapped at
/// `text_width` columns as it wraps.
fn format_usage(prog: &str, opt_parts: &[String], pos_parts: &[String], text_width: usize) -> String {
    let prefix = "usage: ";
    let all: Vec<&str> = std::iter::once(prog).chain(opt_parts.iter().chain(pos_parts).map(String::as_str)).collect();
    let one_line = all.join(" ");
    if prefix.len() + one_line.len() <= text_width {
        return format!("{prefix}{one_line}\n");
    }
    let get_lines = |parts: &[&str], indent: &str, with_prefix: bool| -> Vec<String> {
        let mut lines = Vec::new();
        let mut line: Vec<&str> = Vec::new();
        let mut line_len = if with_prefix { prefix.len() } else { indent.len() } as isize - 1;
        for part in parts {
            if line_len + 1 + part.len() as isize > text_width as isize && !line.is_empty() {
                lines.push(format!("{indent}{}", line.join(" ")));
                line.clear();
                line_len = indent.len() as isize - 1;
            }
            line.push(part);
            line_len += part.len() as isize + 1;
        }
        if !line.is_empty() {
            lines.push(format!("{indent}{}", line.join(" ")));
        }
        if with_prefix {
            lines[0] = lines[0][indent.len()..].to_string();
        }
        lines
    };
    let opts: Vec<&str> = opt_parts.iter().map(String::as_str).collect();
    let poss: Vec<&str> = pos_parts.iter().map(String::as_str).collect();
    let lines = if (prefix.len() + prog.len()) as f64 <= 0.75 * text_width as f64 {
        let indent = " ".repeat(prefix.len() + prog.len() + 1);
        let head: Vec<&str> = std::iter::once(prog).chain(opts.iter().copied()).collect();
        if !opts.is_empty() {
            let mut lines = get_lines(&head, &indent, true);
            lines.extend(get_lines(&poss, &indent, false));
            lines
        } else if !poss.is_empty() {
            let head: Vec<&str> = std::iter::once(prog).chain(poss.iter().copied()).collect();
            get_lines(&head, &indent, true)
        } else {
            vec![prog.to_string()]
        }
    } else {
        let indent = " ".repeat(prefix.len());
        let both: Vec<&str> = opts.iter().chain(poss.iter()).copied().collect();
        let mut lines = get_lines(&both, &indent, false);
        if lines.len() > 1 {
            lines = get_lines(&opts, &indent, false);
            lines.extend(get_lines(&poss, &indent, false));
        }
        std::iter::once(prog.to_string()).chain(lines).collect()
    };
    format!("{prefix}{}\n", lines.join("\n"))
}

/// Python's `shutil.get_terminal_size().columns`: `$COLUMNS`, else the
/// width of the terminal on stdout, else 80.
fn terminal_columns() -> usize {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|v| v.trim().parse::<i64>().ok()).filter(|&c| c > 0) {
        return c as usize;
    }
    // SAFETY: TIOCGWINSZ fills the winsize struct it is given, or fails.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col as usize
    } else {
        80
    }
}

/// For `fasthts kmer <script> ...` (`args` as `main` has them, the
/// program's name first): the same command line as clap should read it,
/// or argparse's error (status 2), or what `--version`/`--info` print
/// (status 0). Other command lines pass unchanged.
pub(crate) fn preparse(root: &Command, args: Vec<OsString>) -> Result<Vec<OsString>, Failure> {
    if args.get(1).map(|a| a.as_os_str()) != Some(OsStr::new("kmer")) {
        return Ok(args);
    }
    let Some(script) = args.get(2).and_then(|s| s.to_str()) else { return Ok(args) };
    let Some(cmd) = root.find_subcommand("kmer").and_then(|k| k.get_subcommands().find(|c| c.get_name() == script)) else {
        return Ok(args);
    };
    let parser = Parser::new(script, cmd);
    let canonical = match parser.parse(&args[3..]) {
        Ok(canonical) => canonical,
        Err(Stop::Help) => {
            // khmer's help action: the banner on stderr (even with -q), the
            // help on stdout, status 0
            crate::print_stderr(format_args!("{}", banner(script)));
            crate::print_stdout(format_args!("{}", parser.help(terminal_columns())));
            return Err(Failure::new(0, ""));
        }
        Err(Stop::Fail(failure)) => return Err(failure),
    };
    Ok(args[..3].iter().cloned().chain(canonical).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_wraps_as_argparse() {
        let opts: Vec<String> = ["[--version]", "[--info]", "[-h]", "[-z]", "[-s]", "[-b]", "[-f]", "[-q]"].iter().map(|s| s.to_string()).collect();
        let pos: Vec<String> = ["input_count_graph_filename", "input_sequence_filename", "output_histogram_filename"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            format_usage("abundance-dist.py", &opts, &pos, 78),
            "usage: abundance-dist.py [--version] [--info] [-h] [-z] [-s] [-b] [-f] [-q]\n                         input_count_graph_filename input_sequence_filename\n                         output_histogram_filename\n"
        );
    }

    #[test]
    fn negative_numbers_and_repr() {
        assert!(is_negative_number("-5") && is_negative_number("-.5") && is_negative_number("-1.5"));
        assert!(!is_negative_number("-1e5") && !is_negative_number("-k") && !is_negative_number("-"));
        assert_eq!(py_repr("badfmt"), "'badfmt'");
        assert_eq!(py_repr("it's"), "\"it's\"");
    }

    /// Every option of every k-mer script has a long name (the canonical
    /// command line spells values `--long=value`).
    #[test]
    fn every_kmer_option_has_a_long_name() {
        let root = crate::command();
        for sub in root.find_subcommand("kmer").unwrap().get_subcommands() {
            for a in sub.get_arguments().filter(|a| !a.is_positional()) {
                assert!(a.get_long().is_some(), "{} {}", sub.get_name(), a.get_id());
            }
        }
    }
}
