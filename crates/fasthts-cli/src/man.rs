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
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    std::fs::write(&path, page).map_err(|e| format!("{}: {e}", path.display()))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub, dir)?;
    }
    Ok(())
}
