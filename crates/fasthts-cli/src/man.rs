//! `fasthts generate-man-pages DIR` (hidden): man pages made by
//! `clap_mangen` from the same definitions as `--help`, so the two cannot
//! disagree. The install script puts them in ~/.local/share/man/man1.

use std::path::Path;

/// Writes `fasthts.1` and one page per visible subcommand, named by its
/// path (`fasthts-sort.1`, `fasthts-kmer-count.1`), into `dir`.
pub fn generate(cli: &clap::Command, dir: &Path) -> crate::CmdResult {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cli = cli.clone();
    // Gives every subcommand its display name ("fasthts-kmer-count").
    cli.build();
    write_pages(&cli, dir)
}

fn write_pages(cmd: &clap::Command, dir: &Path) -> crate::CmdResult {
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(with_long_help(cmd)).render(&mut page)?;
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, dir)?;
    }
    Ok(())
}

/// `cmd` with each option's help also as its long help where it has none:
/// clap_mangen shows only the long help of an option hidden from `-h`
/// (`hide_short_help`, as the khmer scripts' fasthts additions and khmer's
/// own `-N`/`-x` are), which `--help` shows as its help.
fn with_long_help(cmd: &clap::Command) -> clap::Command {
    cmd.clone().mut_args(|a| match (a.get_long_help(), a.get_help().cloned()) {
        (None, Some(help)) if a.is_hide_short_help_set() => a.long_help(help),
        _ => a,
    })
}
