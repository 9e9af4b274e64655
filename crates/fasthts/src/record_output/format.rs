//! What sort and view write, and how samtools' names for it are read: `-O
//! FORMAT[,OPT[=VAL]]...` and the output file's extension.

use crate::Error;
use std::path::Path;

/// Formats sort can write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// BAM (BGZF-compressed binary records).
    #[default]
    Bam,
    /// SAM text, uncompressed.
    Sam,
    /// SAM text in BGZF blocks (samtools' `.sam.gz`).
    SamGz,
    /// CRAM, encoded by htslib ([`crate::cram::CramWriter`]; needs the
    /// reference, else htslib embeds one).
    Cram,
}

impl OutputFormat {
    /// The format an output file's name asks for, as htslib's
    /// `sam_open_mode` reads it: `.bam`, `.sam`, `.sam.gz` (or `.sam.bgz`,
    /// `.sam.bgzf`), `.cram`, in any case; BAM for any other name (`-`
    /// included). Only the part before `##idx##` counts (see [`crate::index::split_index_name`]).
    ///
    /// ```
    /// use fasthts::record_output::OutputFormat;
    /// use std::path::Path;
    /// assert_eq!(OutputFormat::from_path(Path::new("out.SAM.bgzf"))?, OutputFormat::SamGz);
    /// assert_eq!(OutputFormat::from_path(Path::new("out.bgzf"))?, OutputFormat::Bam);
    /// assert_eq!(OutputFormat::from_path(Path::new("out.cram"))?, OutputFormat::Cram);
    /// # Ok::<(), fasthts::Error>(())
    /// ```
    pub fn from_path(path: &Path) -> Result<OutputFormat, Error> {
        let (data, _, _) = crate::index::split_index_name(path);
        let data = data.to_string_lossy();
        let name = data.rsplit('/').next().unwrap_or(&data).to_ascii_lowercase();
        let (stem, compressed) = match [".gz", ".bgz", ".bgzf"].iter().find_map(|suffix| name.strip_suffix(suffix)) {
            Some(stem) => (stem, true),
            None => (name.as_str(), false),
        };
        let extension = stem.rsplit_once('.').map(|(_, e)| e);
        match (extension, compressed) {
            (Some("sam"), false) => Ok(OutputFormat::Sam),
            (Some("sam"), true) => Ok(OutputFormat::SamGz),
            (Some("cram"), false) => Ok(OutputFormat::Cram),
            _ => Ok(OutputFormat::Bam),
        }
    }

    /// Whether samtools' `--write-index` can index it: BAM, CRAM and
    /// bgzipped SAM, not plain SAM.
    pub fn can_be_indexed(self) -> bool {
        self != OutputFormat::Sam
    }

    /// The format samtools' `-O` names: `bam`, `sam`, `sam.gz` or `cram`, in any case.
    pub fn from_name(name: &str) -> Result<OutputFormat, Error> {
        match name.to_ascii_lowercase().as_str() {
            "bam" => Ok(OutputFormat::Bam),
            "sam" => Ok(OutputFormat::Sam),
            "sam.gz" => Ok(OutputFormat::SamGz),
            "cram" => Ok(OutputFormat::Cram),
            _ => Err(Error::InvalidArgument(format!("unknown output format {name:?}; use BAM, SAM or CRAM"))),
        }
    }

    /// Parses samtools' `-O FORMAT[,OPT[=VAL]]...`: the format, and the
    /// compression level if an option sets one (see [`parse_output_options`]).
    /// SAM given a level is bgzipped SAM, as samtools writes it.
    pub fn parse_spec(spec: &str) -> Result<(OutputFormat, Option<u32>), Error> {
        let mut parts = spec.split(',');
        let format = OutputFormat::from_name(parts.next().unwrap_or(""))?;
        let level = parse_output_options(parts)?;
        Ok((format.with_level(level), level))
    }

    /// The format samtools writes for `-O` naming this one when a
    /// compression level is also given (in `-O` or `--output-fmt-option`):
    /// SAM compressed (bgzipped SAM); the others as they are.
    pub fn with_level(self, level: Option<u32>) -> OutputFormat {
        match (self, level) {
            (OutputFormat::Sam, Some(_)) => OutputFormat::SamGz,
            (format, _) => format,
        }
    }
}

/// Reads output format options (`OPT` or `OPT=VAL`, as after `-O FORMAT,`
/// or in `--output-fmt-option`): the compression level if one is set
/// (`level=0` to `9`, the last one counting). The options that only change
/// CRAM (see [`cram_output_options`]), and `nthreads` (threads come from
/// `-@`), are accepted here; any other is refused rather than silently
/// ignored.
pub fn parse_output_options<'a>(options: impl IntoIterator<Item = &'a str>) -> Result<Option<u32>, Error> {
    let mut level = None;
    for opt in options.into_iter().filter(|o| !o.is_empty()) {
        let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
        match key.to_ascii_lowercase().as_str() {
            "level" => match value.parse::<u32>() {
                Ok(l) if l <= 9 => level = Some(l),
                _ => return Err(Error::InvalidArgument(format!("invalid output option {opt:?}: level is 0 to 9"))),
            },
            "nthreads" => {}
            k if crate::cram::CramWriteOptions::is_cram_option(k) => {}
            _ => return Err(Error::InvalidArgument(format!("output option {opt:?} is not supported"))),
        }
    }
    Ok(level)
}

/// The output options of `options` (as [`parse_output_options`] reads
/// them) that htslib applies to a CRAM output, `OPT=VAL` in order: what
/// samtools passes on to `hts_opt_apply` (a BAM or SAM output ignores them).
pub fn cram_output_options<'a>(options: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    options
        .into_iter()
        .filter(|o| crate::cram::CramWriteOptions::is_cram_option(o.split_once('=').map_or(*o, |(k, _)| k)))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(path: &str) -> Result<OutputFormat, String> {
        OutputFormat::from_path(Path::new(path)).map_err(|e| e.to_string())
    }

    #[test]
    fn output_names_as_htslib_reads_them() {
        use OutputFormat::*;
        for (name, want) in [
            ("out.bam", Bam),
            ("out.sam", Sam),
            ("dir.sam/out.SAM", Sam),
            ("out.sam.gz", SamGz),
            ("out.sam.bgz", SamGz),
            ("OUT.SAM.BGZF", SamGz),
            // Compressed BAM is BAM; so is a name without a known extension.
            ("out.bam.gz", Bam),
            ("out.bgzf", Bam),
            ("out.bgz", Bam),
            ("out.gz", Bam),
            ("out", Bam),
            ("-", Bam),
            ("dir.sam/out", Bam),
            // Only the data part of DATA##idx##INDEX counts.
            ("out.sam##idx##out.bam.csi", Sam),
            ("out.bam##idx##x.sam", Bam),
        ] {
            assert_eq!(of(name), Ok(want), "{name}");
        }
        assert_eq!(of("out.cram"), Ok(Cram));
        assert_eq!(of("OUT.CRAM##idx##out.crai"), Ok(Cram));
        // htslib has no compressed CRAM name: it is BAM.
        assert_eq!(of("out.cram.gz"), Ok(Bam));
    }

    #[test]
    fn format_specs_and_options() {
        assert_eq!(OutputFormat::parse_spec("SAM.gz,level=3").map_err(|e| e.to_string()), Ok((OutputFormat::SamGz, Some(3))));
        // samtools writes `-O sam,level=N` as bgzipped SAM.
        assert_eq!(OutputFormat::parse_spec("sam,level=0").map_err(|e| e.to_string()), Ok((OutputFormat::SamGz, Some(0))));
        assert_eq!(OutputFormat::parse_spec("sam,nthreads=2").map_err(|e| e.to_string()), Ok((OutputFormat::Sam, None)));
        assert_eq!(
            OutputFormat::parse_spec("bam,nthreads=4,,level=1,level=2").map_err(|e| e.to_string()),
            Ok((OutputFormat::Bam, Some(2)))
        );
        let err = |spec: &str| OutputFormat::parse_spec(spec).unwrap_err().to_string();
        assert_eq!(OutputFormat::parse_spec("CRAM,version=3.1").map_err(|e| e.to_string()), Ok((OutputFormat::Cram, None)));
        assert_eq!(err("vcf"), "unknown output format \"vcf\"; use BAM, SAM or CRAM");
        assert_eq!(err("bam,level=10"), "invalid output option \"level=10\": level is 0 to 9");
        assert_eq!(err("bam,filter=x"), "output option \"filter=x\" is not supported");
        assert_eq!(parse_output_options(["level=0"]).map_err(|e| e.to_string()), Ok(Some(0)));
        let cram = cram_output_options(["level=1", "version=3.1", "nthreads=2", "embed_ref=1", "reference=r.fa"]);
        assert_eq!(cram, ["version=3.1", "embed_ref=1", "reference=r.fa"]);
    }
}
