//! `index` and `idxstats`: samtools index and idxstats.

use super::{find_index, warn_if_stream_truncated, warn_if_truncated, with_threads, Report, Warning};
use crate::bam::BamFile;
use crate::cram::{self, CramOptions, CramSource, Fields};
use crate::index::{self, IdxstatsCounts, IndexFormat, DEFAULT_MIN_SHIFT};
use crate::input::{self, Format, Input};
use crate::region::indexed::{IndexedFile, IndexedOptions};
use crate::sort::distributed::Split;
use crate::Error;
use fasthts_io::compression::Compression;
use std::io::Read;
use std::path::{Path, PathBuf};

/// How to index a BAM (a BAI beside it by default).
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// BAI or CSI (see [`index_format`]).
    pub format: IndexFormat,
    /// Where to write the index; `None`: beside the BAM
    /// ([`crate::index::index_path_for`]).
    pub output: Option<PathBuf>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions { format: IndexFormat::Bai, output: None, threads: None }
    }
}

/// The index format samtools index's options ask for: CSI when `csi` is
/// set or a `min_shift` is given (samtools' `-c`, `-m`), with
/// `min_shift` (default 14) as its interval; BAI otherwise, and when
/// `min_shift` is 0 or less.
pub fn index_format(csi: bool, min_shift: Option<i32>) -> IndexFormat {
    let shift = min_shift.unwrap_or(DEFAULT_MIN_SHIFT as i32);
    if (csi || min_shift.is_some()) && shift > 0 {
        IndexFormat::Csi { min_shift: shift as u32, depth: 0 }
    } else {
        IndexFormat::Bai
    }
}

/// Indexes the coordinate-sorted BAM or bgzipped SAM at `path` as samtools
/// index does and writes the index (atomically) to `options.output` or
/// beside it; returns where it was written. As in samtools, a file from a
/// pipe, a FIFO or standard input (`-`, whose index is `-.bai`) is indexed
/// too: its compressed bytes are held in memory while it is read, since an
/// index records offsets into them.
///
/// A CRAM file or stream gets a `.crai` (beside it by default, whatever
/// the format asked for, as samtools does): see [`cram::write_crai`].
pub fn index_file(path: &Path, options: &IndexOptions, report: &dyn Report) -> Result<PathBuf, Error> {
    let peeked = input::peek(path)?;
    if peeked.format() == Format::Cram {
        return index_cram(path, peeked, options, report);
    }
    let target = index_target(path, options)?;
    let threads = Some(fasthts_io::pool::thread_count_for(options.threads, fasthts_io::pool::blocks_in_file(path)));
    with_threads(threads, || {
        let index = match open_to_index(path, peeked)? {
            ToIndex::Bam(bam) => {
                warn_if_truncated(&bam, report);
                index::build(&bam, options.format)?
            }
            ToIndex::Sam(bytes) => index::build_sam(bytes.as_slice(), path, options.format)?,
        };
        index::write_index(&index, &target)
    })?;
    Ok(target)
}

/// Where the index of the BAM at `path` goes: `options.output`, or beside
/// the BAM as samtools names it; refused when that is the BAM itself.
pub fn index_target(path: &Path, options: &IndexOptions) -> Result<PathBuf, Error> {
    let target = options.output.clone().unwrap_or_else(|| index::index_path_for(path, options.format));
    crate::output::refuse_input_as_output(&[&target], &[path])?;
    Ok(target)
}

/// The plan of an index built in `pieces` parts (the Python package's
/// `dask.index`): the splits of the BAM at `path` and where its index goes;
/// `None` for a CRAM file, whose `.crai` is built in one task (its builder
/// reads only container and slice headers: splitting it would not pay).
pub fn index_splits(path: &Path, pieces: usize, options: &IndexOptions) -> Result<Option<(Vec<Split>, PathBuf)>, Error> {
    if input::peek(path)?.format() == Format::Cram {
        return Ok(None);
    }
    let target = index_target(path, options)?;
    let bam = crate::sort::distributed::open_input(path)?;
    Ok(Some((crate::sort::distributed::plan_splits(&bam, pieces), target)))
}

/// The `.crai` of the CRAM file or stream at `path`, written under a
/// temporary name, then renamed into place; samtools' warning when it
/// lacks the EOF container.
fn index_cram(path: &Path, peeked: input::Peeked, options: &IndexOptions, report: &dyn Report) -> Result<PathBuf, Error> {
    let target = options.output.clone().unwrap_or_else(|| cram::crai_path_for(path));
    crate::output::refuse_input_as_output(&[&target], &[path])?;
    let (output, file) = crate::output::TempOutput::create(&target)?;
    drop(file);
    let source = if !peeked.is_regular_file() {
        CramSource::Stream(peeked.into_reader())
    } else if path.as_os_str() == "-" {
        CramSource::File(PathBuf::from("/dev/stdin"))
    } else {
        CramSource::File(path.to_path_buf())
    };
    let outcome = with_threads(options.threads, || cram::write_crai(path, source, output.path())).map_err(|e| match e {
        Error::WithPath { path: p, source } if p == output.path() => source.with_path(&target),
        e => e,
    })?;
    if outcome.missing_eof {
        report.warning(Warning::MissingEofMarker { path: path.to_path_buf() });
    }
    output.commit()?;
    Ok(target)
}

/// A file to index.
enum ToIndex {
    Bam(BamFile),
    /// A bgzipped SAM's compressed bytes.
    Sam(WholeFile),
}

/// The bytes of a whole file: mapped, or read from a stream.
enum WholeFile {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl WholeFile {
    fn as_slice(&self) -> &[u8] {
        match self {
            WholeFile::Mapped(m) => m,
            WholeFile::Read(v) => v,
        }
    }
}

/// The BGZF BAM or SAM at `path` to index: mapped from a regular file,
/// read whole into memory from a stream. Anything else is refused as
/// [`input::check_indexable`] says.
fn open_to_index(path: &Path, peeked: input::Peeked) -> Result<ToIndex, Error> {
    input::check_indexable(peeked.format(), path)?;
    let sam = matches!(peeked.format(), input::Format::CompressedSam(_));
    if peeked.is_regular_file() {
        if sam {
            let file = std::fs::File::open(if path.as_os_str() == "-" { Path::new("/dev/stdin") } else { path })
                .map_err(|e| Error::from(e).with_path(path))?;
            // SAFETY: a read-only private map of a regular file, under the
            // same contract as a mapped BAM (not truncated while read).
            let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::from(e).with_path(path))?;
            return Ok(ToIndex::Sam(WholeFile::Mapped(map)));
        }
        return match peeked.open()? {
            Input::Bam(bam) => Ok(ToIndex::Bam(bam)),
            _ => Err(Error::Message("a regular BGZF file opened as a stream".into()).with_path(path)),
        };
    }
    let mut bytes = Vec::new();
    peeked.into_reader().read_to_end(&mut bytes).map_err(|e| Error::from(e).with_path(path))?;
    if sam {
        return Ok(ToIndex::Sam(WholeFile::Read(bytes)));
    }
    Ok(ToIndex::Bam(BamFile::from_vec(path, bytes)?))
}

/// How to run idxstats.
#[derive(Clone, Debug, Default)]
pub struct IdxstatsOptions {
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
}

/// samtools idxstats' text for the BAM at `path`: from its usable index
/// ([`super::find_index`]), or, without one, by counting every record
/// ([`Warning::CountingEveryRecord`]), as samtools' slow method does; a
/// stream (a pipe, standard input) and SAM are counted as they arrive.
pub fn idxstats(path: &Path, options: &IdxstatsOptions, report: &dyn Report) -> Result<String, Error> {
    let required = CramOptions { fields: Fields::Idxstats, ..CramOptions::default() };
    with_threads(options.threads, || {
        // A remote BAM with an index beside it: the index's counts, as
        // samtools reads them; else its records counted as they stream.
        if input::remote_url(path).is_some() {
            if let Ok(file) = IndexedFile::open(path, &IndexedOptions::default(), &|_| {}) {
                if let Some((bam, index)) = file.bam() {
                    warn_if_truncated(bam, report);
                    return Ok(index::idxstats_for(bam, index));
                }
            }
        }
        let peeked = input::peek(path)?;
        if peeked.format() == input::Format::Cram && peeked.is_regular_file() && path.as_os_str() != "-" {
            return idxstats_cram_file(path, &required, cram::COUNTING_PART_BYTES, report);
        }
        let bgzf_sam_file = peeked.format() == input::Format::CompressedSam(Compression::Bgzf) && peeked.is_regular_file();
        idxstats_of(peeked.open_with(&required)?, path, bgzf_sam_file, report)
    })
}

/// idxstats of a CRAM file, counted in parts of whole containers on all
/// threads (a .crai has no counts: samtools counts every record, saying
/// nothing).
fn idxstats_cram_file(path: &Path, required: &CramOptions, part_bytes: u64, report: &dyn Report) -> Result<String, Error> {
    let reader = cram::CramReader::open(path, required)?;
    super::warn_if_cram_truncated(&reader, report);
    let header = reader.header().clone();
    drop(reader);
    let parts = cram::scatter(path, required, part_bytes, |part| {
        let mut counts = IdxstatsCounts::new(&header);
        part.for_each_core(|c| counts.add_fields(c.ref_id, c.flag).map_err(|e| e.with_path(path)))?;
        Ok(counts)
    })?;
    let mut total = IdxstatsCounts::new(&header);
    for part in &parts {
        total.append(part).map_err(|e| e.with_path(path))?;
    }
    Ok(total.text(&header))
}

fn idxstats_of(input: Input, path: &Path, bgzf_sam_file: bool, report: &dyn Report) -> Result<String, Error> {
    match input {
        Input::Bam(bam) => {
            warn_if_truncated(&bam, report);
            match find_index(&bam, report)? {
                Some(index) => Ok(index::idxstats_for(&bam, &index)),
                None => {
                    report.warning(Warning::CountingEveryRecord { path: path.to_path_buf() });
                    index::idxstats_by_scan(&bam)
                }
            }
        }
        Input::Stream(mut stream) => {
            report.warning(Warning::CountingEveryRecord { path: path.to_path_buf() });
            let mut counts = IdxstatsCounts::new(stream.header());
            stream.for_each_record(|r| counts.add(r).map_err(|e| e.with_path(path)))?;
            warn_if_stream_truncated(&stream, report);
            Ok(counts.text(stream.header()))
        }
        Input::Sam(mut sam) => {
            // A bgzipped SAM's index is used as samtools uses it (its
            // counts, not the records').
            if let Some(index) = bgzf_sam_file.then(|| sam_index(path, sam.header(), report)).transpose()?.flatten() {
                let h = sam.header();
                let refs: Vec<(&str, u64)> = h.references.iter().enumerate().map(|(i, r)| (r.name.as_str(), h.reference_len(i))).collect();
                return Ok(crate::index::idxstats(&index, &refs));
            }
            // samtools says nothing here (its own test expects an empty
            // stderr): SAM text is counted, with or without an index file.
            // References and flags are counted, not positions (SAM's may be 64-bit).
            sam.set_positions(crate::sam::Positions::Unread);
            let mut counts = IdxstatsCounts::new(sam.header());
            sam.for_each_record(|r| counts.add(&r)).map_err(|e| e.with_path(path))?;
            super::report_sam_warnings(&mut sam, path, report);
            Ok(counts.text(sam.header()))
        }
        // A .crai has no counts: samtools counts every record, saying nothing.
        Input::Cram(mut cram) => {
            super::warn_if_cram_truncated(&cram, report);
            let mut counts = IdxstatsCounts::new(cram.header());
            cram.for_each_core(|c| counts.add_fields(c.ref_id, c.flag).map_err(|e| e.with_path(path)))?;
            Ok(counts.text(cram.header()))
        }
    }
}

/// The index beside the bgzipped SAM at `path` (htslib's names), if there
/// is one, refused if made for another file (another number of references).
fn sam_index(path: &Path, header: &crate::bam::Header, report: &dyn Report) -> Result<Option<crate::index::Index>, Error> {
    let found = match super::locate_index(path) {
        super::IndexLocation::Missing => return Ok(None),
        super::IndexLocation::Stale(index) => {
            report.warning(Warning::StaleIndex { index: index.clone(), data: path.to_path_buf() });
            index
        }
        super::IndexLocation::Found(index) => index,
    };
    let index = crate::index::Index::from_path(&found).map_err(|e| Error::from(e).with_path(&found))?;
    let (in_index, in_header) = (index.references().len(), header.references.len());
    if in_index != in_header {
        let what = format!("{in_index} references in the index, {in_header} in the header of {}", path.display());
        return Err(Error::IndexMismatch(what).with_path(&found));
    }
    Ok(Some(index))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch, Kept};
    use super::*;

    #[test]
    fn idxstats_counts_of_parts_append_as_one_count() {
        use crate::bam::{Header, Reference};
        let refs = (0..3).map(|i| Reference { name: format!("r{i}"), len: 100 }).collect();
        let header = Header { text: Vec::new(), references: refs };
        let count = |tids: &[i32]| {
            let mut c = IdxstatsCounts::new(&header);
            tids.iter().try_for_each(|&t| c.add_fields(t, if t < 0 { 4 } else { 0 })).map(|()| c)
        };
        let whole = |tids: &[i32]| count(tids).map(|c| c.text(&header));
        let appended = |parts: &[&[i32]]| {
            let mut total = IdxstatsCounts::new(&header);
            parts.iter().try_for_each(|p| total.append(&count(p)?)).map(|()| total.text(&header))
        };
        let sorted: [&[&[i32]]; 4] = [&[&[0, 0], &[0, 1], &[1, 2, -1]], &[&[0], &[1], &[2], &[-1, -1]], &[&[], &[0, 1], &[]], &[&[-1]]];
        for parts in sorted {
            let all: Vec<i32> = parts.concat();
            assert_eq!(appended(parts).unwrap(), whole(&all).unwrap(), "{parts:?}");
        }
        // A reference whose records are not contiguous, across a join: the
        // error of counting in one go.
        let unsorted: [&[&[i32]]; 4] = [&[&[0, 1], &[0]], &[&[0], &[1], &[0]], &[&[1, -1], &[-1, 1]], &[&[-1], &[0], &[-1]]];
        for parts in unsorted {
            let all: Vec<i32> = parts.concat();
            assert_eq!(whole(&all).unwrap_err().to_string(), "file is not position sorted", "{parts:?}");
            assert_eq!(appended(parts).unwrap_err().to_string(), "file is not position sorted", "{parts:?}");
        }
    }

    #[test]
    fn idxstats_of_a_cram_in_parts_of_containers_is_samtools_idxstats() {
        if !fasthts_testgen::support::have_samtools() {
            return;
        }
        let dir = scratch("idxstats-cram-parts");
        let samtools = |args: &[&std::ffi::OsStr]| {
            let out = std::process::Command::new("samtools").args(args).output().unwrap();
            assert!(out.status.success(), "samtools {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            out.stdout
        };
        let small = |o: &'static str| -> [&std::ffi::OsStr; 2] { ["--output-fmt-option".as_ref(), o.as_ref()] };
        let required = CramOptions { fields: Fields::Idxstats, ..CramOptions::default() };
        // Sorted (with unplaced reads at the end), in slices of several
        // references, and by name, in small containers.
        let by_name = dir.join("by-name.bam");
        samtools(&["sort".as_ref(), "-n".as_ref(), "-o".as_ref(), by_name.as_os_str(), data("small.bam").as_os_str()]);
        let cases = [
            ("sorted", data("small.bam"), ["seqs_per_slice=50", "slices_per_container=2"]),
            ("multi-ref", data("small.bam"), ["seqs_per_slice=300", "multi_seq_per_slice=1"]),
            ("by-name", by_name, ["seqs_per_slice=50", "slices_per_container=2"]),
        ];
        for (name, bam, slicing) in cases {
            let cram = dir.join(format!("{name}.cram"));
            let mut args = vec!["view".as_ref(), "-C".as_ref(), "-o".as_ref(), cram.as_os_str()];
            args.extend(small("no_ref=1").into_iter().chain(small(slicing[0])).chain(small(slicing[1])));
            args.push(bam.as_os_str());
            samtools(&args);
            let containers = cram::containers(&std::fs::File::open(&cram).unwrap()).unwrap();
            assert!(containers.len() > 5, "{name}");
            // (htslib makes an unsorted file's slices multi-reference too.)
            assert_eq!(containers.iter().any(|c| c.ref_id == -2), name != "sorted", "{name}");
            let out = std::process::Command::new("samtools").arg("idxstats").arg(&cram).output().unwrap();
            let kept = Kept::default();
            // One part per container, a few, one.
            for (threads, part_bytes) in [(3, 1), (2, 20_000), (1, u64::MAX)] {
                let got = with_threads(Some(threads), || idxstats_cram_file(&cram, &required, part_bytes, &kept));
                match name {
                    "sorted" | "multi-ref" => assert_eq!(got.unwrap().as_bytes(), out.stdout, "{name} {threads} {part_bytes}"),
                    _ => {
                        assert!(!out.status.success());
                        let want = format!("{}: file is not position sorted", cram.display());
                        assert_eq!(got.unwrap_err().to_string(), want, "{threads} {part_bytes}");
                    }
                }
            }
            assert!(kept.warnings().is_empty(), "{:?}", kept.warnings());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn samtools_index_options() {
        let csi = |m| IndexFormat::Csi { min_shift: m, depth: 0 };
        assert_eq!(index_format(false, None), IndexFormat::Bai);
        assert_eq!(index_format(true, None), csi(14));
        assert_eq!(index_format(false, Some(12)), csi(12));
        assert_eq!(index_format(true, Some(0)), IndexFormat::Bai);
        assert_eq!(index_format(false, Some(-3)), IndexFormat::Bai);
    }

    #[test]
    fn index_and_idxstats_with_and_without_an_index() {
        let dir = scratch("index");
        let path = dir.join("x.bam");
        std::fs::copy(data("small.bam"), &path).unwrap();
        let kept = Kept::default();
        let by_scan = idxstats(&path, &IdxstatsOptions::default(), &kept).unwrap();
        assert_eq!(kept.warnings(), [format!("no usable index for \"{}\"; counting every record instead", path.display())]);

        let options = IndexOptions { format: IndexFormat::Bai, output: None, threads: Some(2) };
        let written = index_file(&path, &options, &kept).unwrap();
        assert_eq!(written, dir.join("x.bam.bai"));
        assert_eq!(std::fs::read(&written).unwrap(), std::fs::read(data("small.bam.bai")).unwrap());
        let from_index = idxstats(&path, &IdxstatsOptions { threads: Some(1) }, &kept).unwrap();
        assert_eq!(kept.warnings().len(), 1);
        // samtools' slow method counts unplaced records without the
        // unmapped flag as mapped on the `*` line; the index does not.
        assert_eq!(from_index.lines().count(), by_scan.lines().count());

        let csi = IndexOptions { format: index_format(true, None), output: Some(dir.join("elsewhere.csi")), threads: None };
        assert_eq!(index_file(&path, &csi, &kept).unwrap(), dir.join("elsewhere.csi"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
