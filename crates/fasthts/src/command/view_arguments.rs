//! samtools view's options as given (`fasthts view`'s flags) and what
//! they mean together, decided once for every front end: `-P` with `-c`,
//! `-p` with `-U` refused; `--subsample`/`--subsample-seed`/`-s` in
//! samtools' precedence; `-L` a selection, or with `-M`, `-P` or
//! `--region-file` the regions read; `-X`'s index taken from the
//! positional arguments; the output format and header from `-b`/`-C`/`-u`/
//! `-1`/`-O`/the output's name; the compression level from
//! `--output-fmt-option level=`, then `-O FORMAT,level=`, then `-u`/`-1`.

use super::{HeaderMode, ViewOptions};
use crate::depth::{atoi, parse_flags};
use crate::record_output::{cram_output_options, parse_output_options, OutputFormat};
use crate::region::BedFilter;
use crate::view::{self as select, output_format_mode, TagEdit};
use crate::Error;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// samtools view's command line, each option as given (flags that repeat
/// in order; numbers as text, read as samtools reads them).
#[derive(Clone, Debug, Default)]
pub struct ViewArguments {
    /// `-b/--bam`.
    pub bam: bool,
    /// `-C/--cram`.
    pub cram: bool,
    /// `-T/--reference`.
    pub reference: Option<PathBuf>,
    /// `-1/--fast`.
    pub fast: bool,
    /// `-u/--uncompressed`.
    pub uncompressed: bool,
    /// `-h/--with-header`.
    pub with_header: bool,
    /// `-H/--header-only`.
    pub header_only: bool,
    /// `--no-header`.
    pub no_header: bool,
    /// `-c/--count`.
    pub count: bool,
    /// `-o/--output`.
    pub output: Option<PathBuf>,
    /// `-U/--unoutput`.
    pub unselected: Option<PathBuf>,
    /// `-M/--use-index`.
    pub multi_region: bool,
    /// `--region-file`.
    pub region_file: Option<PathBuf>,
    /// `-X/--customized-index`.
    pub explicit_index: bool,
    /// `-L/--target-file`.
    pub bed: Option<PathBuf>,
    /// `-N/--qname-file`.
    pub names: Option<PathBuf>,
    /// `-d/--tag`.
    pub tag: Vec<String>,
    /// `-D/--tag-file`.
    pub tag_file: Vec<String>,
    /// `-e/--expr`.
    pub expr: Option<String>,
    /// `-q/--min-MQ`.
    pub min_mapq: Option<String>,
    /// `-m/--min-qlen`.
    pub min_qlen: Option<String>,
    /// `-f/--require-flags`.
    pub require_flags: Vec<String>,
    /// `-F/--excl-flags`.
    pub exclude_flags: Vec<String>,
    /// `--rf`.
    pub any_flags: Vec<String>,
    /// `-G`.
    pub all_flags_off: Vec<String>,
    /// `--subsample`.
    pub subsample: Option<String>,
    /// `--subsample-seed`.
    pub subsample_seed: Option<String>,
    /// `-s`.
    pub seed_fraction: Option<String>,
    /// `-x/--remove-tag`.
    pub remove_tag: Vec<String>,
    /// `--add-flags`.
    pub add_flags: Vec<String>,
    /// `--remove-flags`.
    pub remove_flags: Vec<String>,
    /// `--keep-tag`.
    pub keep_tag: Vec<String>,
    /// `-O/--output-fmt`.
    pub format: Option<String>,
    /// `--output-fmt-option`.
    pub output_options: Vec<String>,
    /// `--write-index`.
    pub write_index: bool,
    /// `-@/--threads`.
    pub threads: Option<usize>,
    /// `--window-bases`.
    pub window_bases: Option<u64>,
    /// `-p/--unmap`.
    pub unmap: bool,
    /// `-r/--read-group`.
    pub read_group: Vec<String>,
    /// `-R/--read-group-file`.
    pub read_group_file: Vec<PathBuf>,
    /// `-l/--library`.
    pub library: Option<String>,
    /// `-P/--fetch-pairs`.
    pub fetch_pairs: bool,
    /// `-t/--fai-reference`.
    pub fai_reference: Option<PathBuf>,
    /// `-B/--remove-B`.
    pub remove_b: bool,
    /// The positional arguments: the input, with `-X` its index, then the regions.
    pub args: Vec<String>,
    /// The version and command line for the `@PG` line (`None`: `--no-PG`).
    pub program: Option<(String, String)>,
}

/// What a view run reads, writes and does.
#[derive(Clone, Debug)]
pub struct ViewRun {
    /// The input (`-` for standard input).
    pub input: PathBuf,
    /// The output (`-` for standard output).
    pub output: PathBuf,
    /// The resolved options.
    pub options: ViewOptions,
}

impl ViewArguments {
    /// The run these arguments ask for, or why they do not go together.
    pub fn resolve(self) -> Result<ViewRun, Error> {
        let args = self;
        let mut selection = select::Selection::default();
        for f in &args.require_flags {
            selection.flag_on |= parse_flags(f)?;
        }
        for f in &args.exclude_flags {
            selection.flag_off |= parse_flags(f)?;
        }
        for f in &args.any_flags {
            selection.flag_any_on |= parse_flags(f)?;
        }
        for f in &args.all_flags_off {
            selection.flag_all_off |= parse_flags(f)?;
        }
        if args.count && args.fetch_pairs {
            return Err(Error::InvalidArgument("the options -P and -c cannot be combined".into()));
        }
        if args.unmap && args.unselected.is_some() {
            return Err(Error::InvalidArgument("options --unoutput and --unmap are mutually exclusive".into()));
        }
        for rg in &args.read_group {
            selection.read_groups.get_or_insert_with(HashSet::new).insert(rg.as_bytes().to_vec());
        }
        for path in &args.read_group_file {
            let words = select::read_word_list(path)?;
            selection.read_groups.get_or_insert_with(HashSet::new).extend(words);
        }
        selection.library = args.library.as_ref().map(|l| l.as_bytes().to_vec());
        selection.expr = args.expr.as_deref().map(select::Expr::parse).transpose()?;
        selection.min_mapq = args.min_mapq.as_deref().map_or(0, atoi) as i32;
        selection.min_qlen = args.min_qlen.as_deref().map_or(0, atoi) as i32;
        let mut fraction = None;
        let mut seed = 0u32;
        if let Some(text) = &args.subsample {
            fraction = Some(select::parse_fraction(text)?);
        }
        if let Some(text) = &args.subsample_seed {
            seed = atoi(text) as u32;
        }
        if let Some(text) = &args.seed_fraction {
            let (s, f) = select::parse_seed_fraction(text)?;
            seed = s;
            fraction = Some(f);
        }
        if let Some(f) = fraction {
            selection.subsample = Some((f, select::subsample_seed(seed)));
        }
        for d in &args.tag {
            if d.len() < 2 || (d.len() > 2 && d.as_bytes()[2] != b':') {
                return Err(Error::InvalidArgument(format!("invalid \"tag:value\" option: \"{d}\"")));
            }
            set_tag(&mut selection.tag, d).map_err(Error::InvalidArgument)?;
            if d.len() > 3 {
                selection.tag_values.get_or_insert_with(HashSet::new).insert(d.as_bytes()[3..].to_vec());
            }
        }
        for d in &args.tag_file {
            if d.len() < 4 || !matches!(d.as_bytes()[2], b':' | b';') {
                return Err(Error::InvalidArgument(format!("invalid \"tag:file\" option: \"{d}\"")));
            }
            set_tag(&mut selection.tag, d).map_err(Error::InvalidArgument)?;
            let words = select::read_word_list(std::path::Path::new(&d[3..]))?;
            selection.tag_values.get_or_insert_with(HashSet::new).extend(words);
        }
        if let Some(path) = &args.names {
            selection.names = Some(select::read_word_list(path)?);
        }
        let mut tags = TagEdit::None;
        for x in &args.remove_tag {
            let (list, keep) = match x.strip_prefix('^') {
                Some(rest) => (rest, true),
                None => (x.as_str(), false),
            };
            add_tags(&mut tags, list, keep)?;
        }
        for x in &args.keep_tag {
            add_tags(&mut tags, x, true)?;
        }
        let (mut add_flags, mut remove_flags) = (0, 0);
        for f in &args.add_flags {
            add_flags |= parse_flags(f)?;
        }
        for f in &args.remove_flags {
            remove_flags |= parse_flags(f)?;
        }
        let multi_region = args.multi_region || args.region_file.is_some() || args.fetch_pairs;
        let bed_path = args.region_file.as_ref().or(args.bed.as_ref());
        let bed = bed_path.map(|p| BedFilter::read(p)).transpose()?;
        let mut positional = args.args.into_iter();
        let input = PathBuf::from(positional.next().unwrap_or_else(|| "-".into()));
        let index = if args.explicit_index {
            match positional.next() {
                Some(index) => Some(PathBuf::from(index)),
                None => return Err(Error::InvalidArgument("incorrect number of arguments for -X (in.bam in.bam.bai [region ...])".into())),
            }
        } else {
            None
        };
        let regions: Vec<String> = positional.collect();
        let (mut bed_regions, mut selection_bed) = (None, None);
        if multi_region {
            bed_regions = bed;
        } else {
            selection_bed = bed;
        }
        selection.bed = selection_bed;

        let format_option = match &args.format {
            Some(spec) => {
                let (format, level) = OutputFormat::parse_spec(spec)?;
                // A level among --output-fmt-option compresses `-O sam` too.
                let option_level = parse_output_options(args.output_options.iter().map(String::as_str))?;
                Some((format.with_level(option_level), level))
            }
            None => None,
        };
        let level_flag = args.uncompressed || args.fast;
        let mode = if args.cram { Some(OutputFormat::Cram) } else { args.bam.then_some(OutputFormat::Bam) };
        let (format, force_header) = output_format_mode(args.output.as_deref(), mode, level_flag, format_option.map(|f| f.0))?;
        let unselected = match &args.unselected {
            Some(path) => {
                let (f, forced) = output_format_mode(Some(path), mode, level_flag, format_option.map(|f| f.0))?;
                Some((path.clone(), f, forced))
            }
            None => None,
        };
        let flag_level = if args.uncompressed {
            Some(0)
        } else if args.fast {
            Some(1)
        } else {
            None
        };
        let level =
            parse_output_options(args.output_options.iter().map(String::as_str))?.or(format_option.and_then(|f| f.1)).or(flag_level);
        let spec_options = args.format.as_deref().map(|spec| spec.split(',').skip(1)).into_iter().flatten();
        // As htslib: without -T, a -t list named `REF.fai` names the FASTA
        // `REF` beside it, which CRAM is decoded and encoded against.
        let reference = args.reference.clone().or_else(|| {
            let list = args.fai_reference.as_deref()?;
            let fasta = PathBuf::from(list.to_str()?.strip_suffix(".fai")?);
            fasta.is_file().then_some(fasta)
        });
        let cram_output = crate::cram::CramWriteOptions {
            reference: reference.clone(),
            options: cram_output_options(spec_options.chain(args.output_options.iter().map(String::as_str))),
            level,
        };
        let header = if args.header_only {
            HeaderMode::HeaderOnly
        } else if args.with_header {
            HeaderMode::WithHeader
        } else {
            HeaderMode::Records
        };
        // samtools reads its options in order: --no-header resets -h and -H
        // given before it, and is undone by either given after it (clap's
        // overrides_with above keeps only the last of each pair).
        let header = if args.no_header { HeaderMode::Records } else { header };
        let options = ViewOptions {
            selection,
            tags,
            add_flags,
            remove_flags,
            regions,
            multi_region,
            bed_regions,
            index,
            count: args.count,
            unmap: args.unmap,
            remove_b: args.remove_b,
            fetch_pairs: args.fetch_pairs,
            // As samtools: without -t, -T's FASTA index lists the references
            // of a SAM input without @SQ lines.
            references: args.fai_reference.clone().or_else(|| args.reference.as_deref().map(fai_of).filter(|fai| fai.is_file())),
            header,
            format,
            level,
            force_header,
            unselected,
            write_index: args.write_index,
            program: args.program,
            threads: args.threads,
            window_bases: args.window_bases.unwrap_or(super::VIEW_WINDOW_BASES),
            reference,
            cram_output,
        };
        let output = args.output.unwrap_or_else(|| PathBuf::from("-"));
        Ok(ViewRun { input, output, options })
    }
}

/// The FASTA index samtools looks for beside a FASTA: `REF.fai`.
fn fai_of(fasta: &Path) -> PathBuf {
    let mut fai = fasta.as_os_str().to_owned();
    fai.push(".fai");
    PathBuf::from(fai)
}

fn set_tag(tag: &mut Option<[u8; 2]>, text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let new = [b[0], b[1]];
    match tag {
        Some(t) if *t != new => Err(format!("different tag \"{}\" was specified before: \"{text}\"", String::from_utf8_lossy(t))),
        _ => {
            *tag = Some(new);
            Ok(())
        }
    }
}

/// Adds a `-x`/`--keep-tag` list to `tags` (removal and keeping cannot mix:
/// a keep list wins, as in samtools).
fn add_tags(tags: &mut TagEdit, list: &str, keep: bool) -> Result<(), Error> {
    let mut set = match std::mem::take(tags) {
        TagEdit::Keep(s) if keep => s,
        TagEdit::Remove(s) if !keep => s,
        TagEdit::Keep(s) => {
            *tags = TagEdit::Keep(s);
            return TagEdit::parse_list(list, &mut HashSet::new());
        }
        _ => HashSet::new(),
    };
    TagEdit::parse_list(list, &mut set)?;
    *tags = if keep { TagEdit::Keep(set) } else { TagEdit::Remove(set) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(args: ViewArguments) -> Result<ViewRun, String> {
        args.resolve().map_err(|e| e.to_string())
    }

    fn with(args: &[&str]) -> ViewArguments {
        ViewArguments { args: args.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn options_that_do_not_go_together_are_refused_in_samtools_words() {
        let err = |a: ViewArguments| resolve(a).err().expect("refused");
        assert_eq!(err(ViewArguments { count: true, fetch_pairs: true, ..with(&["in.bam"]) }), "the options -P and -c cannot be combined");
        let unmap = ViewArguments { unmap: true, unselected: Some("u.sam".into()), ..with(&["in.bam"]) };
        assert_eq!(err(unmap), "options --unoutput and --unmap are mutually exclusive");
        let x = ViewArguments { explicit_index: true, ..with(&["in.bam"]) };
        assert_eq!(err(x), "incorrect number of arguments for -X (in.bam in.bam.bai [region ...])");
        assert_eq!(err(ViewArguments { tag: vec!["RGx".into()], ..with(&["in.bam"]) }), "invalid \"tag:value\" option: \"RGx\"");
    }

    #[test]
    fn what_the_arguments_mean_together() {
        let run = resolve(ViewArguments { explicit_index: true, ..with(&["in.bam", "in.csi", "chr1", "chr2:5-9"]) }).unwrap();
        assert_eq!((run.input, run.output), (PathBuf::from("in.bam"), PathBuf::from("-")));
        assert_eq!((run.options.index, run.options.regions), (Some(PathBuf::from("in.csi")), vec!["chr1".to_string(), "chr2:5-9".into()]));
        // -P reads regions by the multi-region iterator.
        assert!(resolve(ViewArguments { fetch_pairs: true, ..with(&["in.bam"]) }).unwrap().options.multi_region);
        // -s sets the seed and the fraction, over --subsample given with it.
        let sub = ViewArguments { subsample: Some("0.5".into()), seed_fraction: Some("7.25".into()), ..with(&["in.bam"]) };
        let chosen = resolve(sub).unwrap().options.selection.subsample.map(|(f, _)| f);
        assert_eq!(chosen, Some(0.25));
        // The level: --output-fmt-option level= over -O FORMAT,level= over -u.
        let level = |a: ViewArguments| resolve(a).unwrap().options.level;
        let out = |name: &str| ViewArguments { output: Some(name.into()), ..with(&["in.bam"]) };
        assert_eq!(level(ViewArguments { uncompressed: true, ..out("o.bam") }), Some(0));
        assert_eq!(level(ViewArguments { uncompressed: true, format: Some("bam,level=3".into()), ..out("o.bam") }), Some(3));
        let all = ViewArguments {
            uncompressed: true,
            format: Some("bam,level=3".into()),
            output_options: vec!["level=5".into()],
            ..out("o.bam")
        };
        assert_eq!(level(all), Some(5));
        assert_eq!(resolve(out("o.bam")).unwrap().options.format, OutputFormat::Bam);
    }
}
