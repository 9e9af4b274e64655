//! `snp-pileup`: FACETS' snp-pileup with its checks, messages and output
//! file; on one machine, or planned in blocks of VCF records, run apart and
//! written together (the Python package's dask layer).

use super::{with_threads, Report};
use crate::bgzf::{BgzfWriter, DEFAULT_LEVEL};
use crate::output::TempOutput;
use crate::pileup::snp::{self, SnpInputs, SnpPileupOptions, SnpPileupStats, WalkState};
use crate::pileup::vcf::{self, VcfSource};
use crate::pileup::PileupError;
use crate::region::indexed::{IndexedFile, IndexedOptions, WithoutIndex};
use crate::Error;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// How to run snp-pileup: FACETS' options, and what to write and say.
#[derive(Clone, Debug, Default)]
pub struct SnpPileupFileOptions {
    /// The pileup's options (FACETS' defaults).
    pub pileup: SnpPileupOptions,
    /// Write the CSV BGZF-compressed, adding `.gz` to the output's name
    /// unless it has it (`-g`).
    pub gzip: bool,
    /// FACETS' `-v` messages, through [`Report::message`].
    pub verbose: bool,
    /// FACETS' `-p` progress text, through [`Report::message`].
    pub progress: bool,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// The reference FASTA of CRAM inputs; `None`: as htslib (and so
    /// FACETS) finds it: REF_PATH/REF_CACHE by `M5`, else `@SQ UR`.
    pub reference: Option<PathBuf>,
}

/// FACETS' checks before any work, in its order with its messages: the
/// VCF's used records `records` planned (every line checked), then each
/// BAM opened with its index. The BAMs are read through their indexes.
fn open_inputs(
    vcf: &Path,
    bams: &[PathBuf],
    records: Range<u64>,
    options: &SnpPileupFileOptions,
    report: &dyn Report,
) -> Result<SnpInputs, Error> {
    if bams.is_empty() {
        return Err(Error::InvalidArgument("snp_pileup needs at least one BAM".into()));
    }
    let vcf_failure = |e: PileupError| {
        let message = format!("Failed to read VCF file: {e}");
        match e {
            PileupError::Read(source) => Error::Described { message, source: Box::new(source) },
            _ => Error::Message(message),
        }
    };
    let vcf = VcfSource::open(vcf).map_err(vcf_failure)?;
    let summary = vcf::scan_records(&vcf, options.pileup.region_size, records).map_err(vcf_failure)?;
    if options.progress {
        report.message("Calculating SNP count...done.\n");
    }
    let mut opened = Vec::with_capacity(bams.len());
    for (i, path) in bams.iter().enumerate() {
        let failed = |e: Error| {
            // "x.bam: No such file or directory" → "No such file or directory".
            let message = e.to_string();
            let prefix = format!("{}: ", path.display());
            let reason = message.strip_prefix(&prefix).unwrap_or(&message);
            let message = format!("Failed to read sequence file {} ({reason})", path.display());
            Error::Described { message, source: Box::new(e) }
        };
        // FACETS reads every file from its start; an index only lets the
        // regions be read apart. A file without one is indexed in memory
        // first (a BAM or SAM in one sequential pass, a CRAM from its
        // container headers); one not sorted by coordinate is refused. So
        // is an index that does not describe the whole file (made for a
        // prefix of it), with a warning: FACETS reads every record.
        let indexed = IndexedOptions {
            cram: crate::cram::CramOptions { reference: options.reference.clone(), ..Default::default() },
            without_index: WithoutIndex::Build,
            whole_file: true,
            ..Default::default()
        };
        let file = IndexedFile::open(path, &indexed, report).map_err(failed)?;
        if options.verbose {
            report.message(&format!("Detected format for file {}: {}\n", i + 1, file.format_description()));
        }
        if file.missing_eof_marker().map_err(failed)? {
            report.warning(super::Warning::MissingEofMarker { path: path.clone() });
        }
        opened.push(file);
    }
    if options.verbose {
        report.message(&format!("Max per-file depth set to {}.\n", options.pileup.max_depth));
    }
    Ok(SnpInputs { vcf, summary, inputs: opened })
}

/// The file the CSV goes to: `output`, with `.gz` added when compressing
/// (as FACETS); an existing file is not overwritten.
fn output_target(output: &Path, gzip: bool) -> Result<PathBuf, Error> {
    let mut target = output.as_os_str().to_owned();
    if gzip && !output.to_string_lossy().ends_with(".gz") {
        target.push(".gz");
    }
    let target = PathBuf::from(target);
    // A device or pipe (`/dev/stdout`) holds no file to lose.
    if target.exists() && !crate::output::is_special_file(&target) {
        return Err(Error::Message(format!("Output file {} already exists!", output.display())));
    }
    Ok(target)
}

/// Writes what `write` writes to `target` atomically, BGZF-compressed
/// (`gzip`) or plain.
fn write_output(target: &Path, gzip: bool, write: impl FnOnce(&mut (dyn Write + Send)) -> Result<(), Error>) -> Result<(), Error> {
    let (temp, file) = TempOutput::create(target).map_err(|e| {
        let message = format!("Failed to open output file for writing: {e}");
        Error::Described { message, source: Box::new(e.into()) }
    })?;
    let file = crate::output::Named::new(file, temp.shown());
    if gzip {
        let mut w = BgzfWriter::new(BufWriter::new(file), DEFAULT_LEVEL);
        write(&mut w)?;
        w.finish()?.flush()?;
    } else {
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write(&mut w)?;
        w.flush()?;
    }
    Ok(temp.commit()?)
}

/// A pileup error as the CLI and the Python package report it.
fn pileup_error(e: PileupError) -> Error {
    Error::Message(e.to_string())
}

/// FACETS snp-pileup: the allele counts of each of `bams` (indexed) at
/// the SNPs of `vcf`, written to `output` (see
/// [`SnpPileupFileOptions::gzip`]), with FACETS' checks, messages and
/// output bytes. Messages (`verbose`, `progress`) go to `report` as they
/// come, the last ones once the output is in place.
pub fn snp_pileup(
    vcf: &Path,
    output: &Path,
    bams: &[PathBuf],
    options: &SnpPileupFileOptions,
    report: &dyn Report,
) -> Result<SnpPileupStats, Error> {
    let inputs = open_inputs(vcf, bams, 0..u64::MAX, options, report)?;
    let target = output_target(output, options.gzip)?;
    crate::output::refuse_input_as_output(&[&target], &[vcf].into_iter().chain(bams.iter().map(PathBuf::as_path)).collect::<Vec<_>>())?;
    let mut stats = SnpPileupStats::default();
    write_output(&target, options.gzip, |w| {
        stats = with_threads(options.threads, || snp::run(&inputs, &options.pileup, w)).map_err(pileup_error)?;
        Ok(())
    })?;
    if options.progress {
        report.message(&snp::progress_text(inputs.summary.n_records));
    }
    Ok(stats)
}

/// The plan of a snp-pileup run in blocks (the Python package's dask
/// layer): [`snp_pileup`]'s checks (VCF, BAMs and their indexes, output
/// not there yet), then the VCF's used records cut into about `parts`
/// blocks `(first, end, tid)` ([`snp::plan_blocks`]). Run each with
/// [`snp_pileup_block`], then write them with [`write_snp_pileup`].
pub fn snp_pileup_plan(
    vcf: &Path,
    output: &Path,
    bams: &[PathBuf],
    parts: usize,
    options: &SnpPileupFileOptions,
    report: &dyn Report,
) -> Result<Vec<(u64, u64, i32)>, Error> {
    let inputs = open_inputs(vcf, bams, 0..u64::MAX, options, report)?;
    output_target(output, options.gzip)?;
    let names: Vec<&str> = inputs.inputs[0].header().references.iter().map(|r| r.name.as_str()).collect();
    snp::plan_blocks(&inputs.vcf, &names, parts).map_err(|e| Error::Message(format!("Failed to read VCF file: {e}")))
}

/// One block of a planned run: the CSV rows (without the header) of the
/// VCF's used records `records`, with FACETS' walk entering the block at
/// `state` ([`snp::run_from`]), and the state it leaves the block in.
pub fn snp_pileup_block(
    vcf: &Path,
    bams: &[PathBuf],
    records: Range<u64>,
    state: WalkState,
    options: &SnpPileupFileOptions,
    report: &dyn Report,
) -> Result<(Vec<u8>, WalkState), Error> {
    if records.start > records.end {
        return Err(Error::InvalidArgument("record block out of range".into()));
    }
    let inputs = open_inputs(vcf, bams, records.clone(), options, report)?;
    let mut out = Vec::new();
    let (_, end_state) =
        with_threads(options.threads, || snp::run_from(&inputs, &options.pileup, &mut out, records, state)).map_err(pileup_error)?;
    let header = out.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1);
    Ok((out.split_off(header), end_state))
}

/// Writes a planned run's output: the header for `n_files` BAMs, then the
/// blocks' rows `chunks` in order, to `output` as [`snp_pileup`] would
/// (`.gz` added and BGZF with `gzip`; atomically; never over an existing
/// file).
pub fn write_snp_pileup(output: &Path, gzip: bool, n_files: usize, chunks: &[Vec<u8>]) -> Result<(), Error> {
    let target = output_target(output, gzip)?;
    write_output(&target, gzip, |w| {
        w.write_all(snp::header(n_files).as_bytes())?;
        for chunk in chunks {
            w.write_all(chunk)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch, Kept};
    use super::*;

    /// A VCF of SNPs on small.bam's references.
    fn write_vcf(path: &Path) {
        let mut text = String::from("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n");
        for (chrom, step) in [("chr1", 997), ("chr2", 1499), ("chrM", 101)] {
            for pos in (1..=20).map(|i| i * step) {
                text.push_str(&format!("{chrom}\t{pos}\t.\tA\tG\t.\t.\t.\n"));
            }
        }
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn one_run_equals_planned_blocks_and_messages_follow_facets() {
        let dir = scratch("snp");
        let vcf = dir.join("sites.vcf");
        write_vcf(&vcf);
        let bams = [data("small.bam"), data("small.bam")];
        let options = SnpPileupFileOptions { verbose: true, progress: true, threads: Some(2), ..Default::default() };
        let kept = Kept::default();
        let stats = snp_pileup(&vcf, &dir.join("one.csv"), &bams, &options, &kept).unwrap();
        let one = std::fs::read(dir.join("one.csv")).unwrap();
        assert_eq!(one.iter().filter(|&&c| c == b'\n').count() as u64, stats.rows + 1);
        let messages = kept.messages.lock().unwrap().clone();
        assert!(messages.starts_with(
            "Calculating SNP count...done.\nDetected format for file 1: BAM version 1 compressed sequence data\n\
             Detected format for file 2: BAM version 1 compressed sequence data\nMax per-file depth set to 4000.\n"
        ));
        assert!(messages.ends_with(&snp::progress_text(60)), "{messages:?}");

        let err = snp_pileup(&vcf, &dir.join("one.csv"), &bams, &options, &kept).unwrap_err().to_string();
        assert_eq!(err, format!("Output file {} already exists!", dir.join("one.csv").display()));

        let quiet = SnpPileupFileOptions { gzip: true, ..Default::default() };
        let blocks = snp_pileup_plan(&vcf, &dir.join("blocks.csv"), &bams, 10, &quiet, &kept).unwrap();
        assert_eq!(blocks.len(), 3, "cut where the contig changes: {blocks:?}");
        let mut chunks = Vec::new();
        let mut state = None;
        for (first, end, _) in blocks {
            let (rows, next) = snp_pileup_block(&vcf, &bams, first..end, state, &quiet, &kept).unwrap();
            chunks.push(rows);
            state = next;
        }
        write_snp_pileup(&dir.join("blocks.csv"), true, bams.len(), &chunks).unwrap();
        let gz = std::fs::read(dir.join("blocks.csv.gz")).unwrap();
        assert_eq!(crate::bgzf::decompress_all(&gz).unwrap(), one);
        assert!(kept.warnings().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn facets_messages_for_bad_inputs() {
        let dir = scratch("snp-bad");
        let vcf = dir.join("sites.vcf");
        write_vcf(&vcf);
        let kept = Kept::default();
        let options = SnpPileupFileOptions::default();
        let err = |vcf: &Path, bams: &[PathBuf]| snp_pileup(vcf, &dir.join("out.csv"), bams, &options, &kept).unwrap_err().to_string();
        assert!(err(&dir.join("none.vcf"), &[data("small.bam")]).starts_with("Failed to read VCF file: "));
        let missing = dir.join("missing.bam");
        assert_eq!(
            err(&vcf, &[missing.clone()]),
            format!("Failed to read sequence file {} (No such file or directory)", missing.display())
        );
        let bare = dir.join("bare.bam");
        std::fs::copy(data("small.bam"), &bare).unwrap();
        // Without an index, the BAM is indexed in memory (FACETS reads it
        // from its start): no error.
        snp_pileup(&vcf, &dir.join("bare.csv"), &[bare.clone()], &options, &kept).unwrap();
        assert!(!dir.join("bare.bam.bai").exists() && !dir.join("bare.bam.csi").exists());
        let unsorted = dir.join("unsorted.bam");
        std::fs::copy(data("unsorted.bam"), &unsorted).unwrap();
        assert_eq!(
            err(&vcf, &[unsorted.clone()]),
            format!(
                "Failed to read sequence file {} (not coordinate-sorted (header says SO:unsorted); sort it by coordinate first (fasthts sort))",
                unsorted.display()
            )
        );
        // An index made for another file is refused, not read through.
        std::fs::copy(data("long_ref.bam.csi"), dir.join("bare.bam.csi")).unwrap();
        assert!(err(&vcf, &[bare]).contains("the index does not match the data file"));
        assert_eq!(err(&vcf, &[]), "snp_pileup needs at least one BAM");
        assert!(!dir.join("out.csv").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
