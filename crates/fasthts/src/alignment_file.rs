//! An alignment file opened for whatever its user asks of it next: its
//! header, every record from the first ([`AlignmentFile::records`]), the
//! whole file in parts on all threads ([`AlignmentFile::scatter`]), a plan
//! of regions ([`AlignmentFile::plan`]), region queries through its index
//! ([`AlignmentFile::for_regions`]). Each decision about such a file is
//! made here once, whatever the format: what the file is (a mapped BAM,
//! SAM text, CRAM, a stream), which index it is read by region with and
//! when that index is loaded, why a file cannot be read by region. The
//! Python package's `BamFile` and `AlignmentFile` each hold one.
//!
//! ```
//! use fasthts::alignment_file::{AlignmentFile, OpenOptions};
//! use fasthts::region::indexed::Rule;
//! # let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam"));
//! let report = |_: fasthts::report::Warning| {};
//! let file = AlignmentFile::open(path, &OpenOptions::default(), &report)?;
//! let parts = file.scatter(8 << 20, Default::default(), &report, |_| 0u64, |n, _| *n += 1)?;
//! let region = fasthts::region::Region::whole(0);
//! let mut in_first = 0u64;
//! file.for_regions(&report)?.query(region, Rule::Overlap)?.for_each_record(|_| in_first += 1)?;
//! assert!(parts.iter().sum::<u64>() >= in_first);
//! # Ok::<(), fasthts::Error>(())
//! ```

use crate::bam::{BamFile, Header, RecordRef};
use crate::cram::{self, Container, CramOptions, Fields};
use crate::index::{by_index_or_sequentially, locate_index, no_index_for_regions, sam_not_indexable, IndexLocation};
use crate::input::{self, Format, Input};
use crate::region::indexed::{IndexedFile, IndexedOptions, WithoutIndex};
use crate::region::{self, pieces, Plan, Region};
use crate::report::{report_sam_warnings, Report, Warning};
use crate::sam::RefNames;
use crate::whole_file::WholeFileCursor;
use crate::Error;
use fasthts_io::compression::Compression;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// How [`AlignmentFile::open`] opens a file.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// The index file to use (samtools' `-X`, pysam's `index_filename`);
    /// else the one beside the file, as htslib finds it.
    pub index: Option<PathBuf>,
    /// How a CRAM file is decoded (its reference).
    pub cram: CramOptions,
    /// A BAM file without an index file, read by region.
    pub bam_without_index: WithoutIndex,
    /// A CRAM file without a `.crai`, read by region. (A bgzipped SAM
    /// without one is always refused: its index is made with `index`.)
    pub cram_without_index: WithoutIndex,
    /// An index file found beside the file is loaded (and checked) at
    /// open, as pysam does, rather than when first used (an index given is
    /// loaded at open either way). Loaded when first used, a broken index
    /// fails only region queries; whole-file reads go on without it.
    pub load_found_index_at_open: bool,
}

impl Default for OpenOptions {
    /// The index given or beside the file; a BAM or CRAM without one
    /// indexed in memory when first read by region.
    fn default() -> Self {
        OpenOptions {
            index: None,
            cram: CramOptions::default(),
            bam_without_index: WithoutIndex::Build,
            cram_without_index: WithoutIndex::Build,
            load_found_index_at_open: false,
        }
    }
}

/// An opened alignment file; shared by threads (each read has a cursor
/// of its own).
pub struct AlignmentFile {
    path: PathBuf,
    header: Arc<Header>,
    format: Format,
    /// A regular file (read again from its path for every read after the
    /// first, and by region); else a stream, read once.
    regular: bool,
    /// A remote object (a URL): read again from its URL for every read
    /// after the first; a BAM by region when its index was found at open.
    remote: bool,
    /// The name messages give the file (a URL without credentials).
    shown: PathBuf,
    missing_eof: bool,
    cram: CramOptions,
    /// The input opened for the header, handed to the first whole-file
    /// read (a stream can be read only once).
    first: Mutex<Option<Input>>,
    /// How the file is read by region; `None`: it cannot be (see
    /// [`AlignmentFile::no_regions`]).
    by_region: Option<ByRegion>,
    /// Whether an index file was loaded (and checked) at open.
    index_loaded: bool,
    /// A CRAM file's containers, listed on first use (its plan).
    containers: OnceLock<Vec<Container>>,
    /// The header's names → ids, mapped on first use.
    ref_names: OnceLock<Arc<RefNames>>,
}

/// A file read by region: an [`IndexedFile`] opened as `options` say when
/// first asked, and kept.
struct ByRegion {
    options: IndexedOptions,
    opened: Mutex<Opened>,
}

#[derive(Default)]
struct Opened {
    file: Option<Arc<IndexedFile>>,
    /// `file`'s index is known to describe the whole file.
    whole: bool,
    /// A CRAM file decoding only what columns need.
    columns: Option<Arc<IndexedFile>>,
}

/// Whether `format`, in a regular file, is read by region (through an
/// index): BGZF BAM, bgzipped SAM, CRAM.
fn indexable(format: Format) -> bool {
    matches!(format, Format::Bam(Compression::Bgzf) | Format::CompressedSam(Compression::Bgzf) | Format::Cram)
}

impl AlignmentFile {
    /// Opens the alignment file at `path` (`-` for standard input; a pipe
    /// is read once, from its start) and reads its header. An index given
    /// (or found beside the file, if `options` say) is loaded and checked
    /// now, so a missing or foreign one fails here; an index given for a file
    /// that cannot be read by region is refused. `report` hears of a stale
    /// index (a file without its end-of-file marker is the caller's to
    /// report: [`AlignmentFile::warn_if_truncated`], or pysam's error).
    ///
    /// A URL (`http://`, `https://`; [`input::remote_url`]) is read as a
    /// stream from its start, and a BGZF BAM by region through the index
    /// given or beside it, which is looked for now (the ranges a query
    /// reads are fetched when it is made: [`AlignmentFile::for_queries`]).
    /// `DATA##idx##INDEX` names the index with the data, as htslib reads it.
    pub fn open(path: &Path, options: &OpenOptions, report: &dyn Report) -> Result<AlignmentFile, Error> {
        if let Some((data, index)) = path.to_str().and_then(|p| p.split_once("##idx##")) {
            let named = OpenOptions { index: Some(PathBuf::from(index)), ..options.clone() };
            return Self::open(Path::new(data), &named, report);
        }
        let peeked = input::peek(path)?;
        let format = peeked.format();
        let regular = peeked.is_regular_file() && path.as_os_str() != "-";
        let remote = peeked.is_remote();
        let shown = peeked.path().to_path_buf();
        // Of a remote file, read by region through its index.
        let by_region = ((regular || remote) && indexable(format)).then(|| {
            let without_index = match format {
                Format::Bam(_) => options.bam_without_index,
                Format::Cram => options.cram_without_index,
                _ => WithoutIndex::Refuse,
            };
            let options = IndexedOptions { index: options.index.clone(), cram: options.cram.clone(), without_index, ..Default::default() };
            ByRegion { options, opened: Mutex::default() }
        });
        if let (None, Some(index)) = (&by_region, &options.index) {
            return Err(match format {
                Format::Sam | Format::CompressedSam(_) => sam_not_indexable(path),
                _ => Error::InvalidArgument(format!(
                    "{}: an index is used only with a BGZF-compressed BAM or SAM file (or a CRAM file) in a regular file",
                    index.display()
                )),
            });
        }
        // Whether a remote file has an index is known only by fetching it:
        // looked for once, now, and kept; the header is then the one read
        // through it (a stream of the file's start would fetch it again,
        // and more ahead).
        let remote_indexed = match (&by_region, peeked.remote_object(), input::remote_url(path)) {
            (Some(by_region), Some((object, head)), Some(url)) => {
                IndexedFile::open_remote_object(url, Arc::clone(object), head, &shown, &by_region.options)?
            }
            _ => None,
        };
        let (header, missing_eof, first) = match &remote_indexed {
            Some(indexed) => (indexed.header().clone(), indexed.missing_eof_marker()?, None),
            None => {
                let sam_gz_eof = format == Format::CompressedSam(Compression::Bgzf) && peeked.ends_with_eof_marker() == Some(false);
                let input = peeked.open_with(&options.cram)?;
                let missing_eof = sam_gz_eof
                    || match &input {
                        Input::Bam(bam) => !bam.has_eof_marker(),
                        Input::Cram(c) => c.missing_eof_container(),
                        Input::Stream(_) | Input::Sam(_) => false,
                    };
                // A remote file's stream is not kept for a first whole-file
                // read: it would go on fetching ahead while only regions
                // are read.
                (input.header().clone(), missing_eof, (!remote).then_some(input))
            }
        };
        let mut file = AlignmentFile {
            path: path.to_path_buf(),
            header: Arc::new(header),
            format,
            regular,
            remote,
            shown,
            missing_eof,
            cram: options.cram.clone(),
            first: Mutex::new(first),
            by_region,
            index_loaded: false,
            containers: OnceLock::new(),
            ref_names: OnceLock::new(),
        };
        if let (Some(indexed), Some(by_region)) = (remote_indexed, &file.by_region) {
            by_region.opened.lock().unwrap_or_else(|p| p.into_inner()).file = Some(Arc::new(indexed));
            file.index_loaded = true;
        } else if !remote && (options.index.is_some() || (options.load_found_index_at_open && file.has_index_file())) {
            file.for_regions(report)?;
            file.index_loaded = true;
        }
        Ok(file)
    }

    /// The path the file was opened with (errors name it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The name messages give the file: its path, or its URL without
    /// credentials.
    pub fn shown_path(&self) -> &Path {
        &self.shown
    }

    /// Whether the file is a remote object (a URL).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// The header (a SAM's and a CRAM's as a BAM's), shared.
    pub fn header(&self) -> &Arc<Header> {
        &self.header
    }

    /// The reference names → ids of the header, as htslib's
    /// `sam_hdr_name2tid` (pysam's `get_tid`) looks them up: `@SQ SN:`
    /// names and `AN:` alternatives. Mapped once per file, on first use;
    /// shared.
    pub fn ref_names(&self) -> &Arc<RefNames> {
        self.ref_names.get_or_init(|| Arc::new(RefNames::new(&self.header)))
    }

    /// What the file's first bytes showed it to be.
    pub fn format(&self) -> Format {
        self.format
    }

    /// How a CRAM file is decoded (its reference).
    pub fn cram_options(&self) -> &CramOptions {
        &self.cram
    }

    /// Whether the file is CRAM (decoded by htslib).
    pub fn is_cram(&self) -> bool {
        self.format == Format::Cram
    }

    /// Whether the file is SAM text (plain or compressed).
    pub fn is_sam(&self) -> bool {
        matches!(self.format, Format::Sam | Format::CompressedSam(_))
    }

    /// Whether the file is a BGZF BAM in a regular file, read through its
    /// mapping.
    pub fn is_mapped_bam(&self) -> bool {
        self.regular && self.format == Format::Bam(Compression::Bgzf)
    }

    /// Whether the file lacks its end-of-file marker (BGZF's empty block,
    /// CRAM's EOF container): it is probably truncated, as htslib warns.
    pub fn missing_eof_marker(&self) -> bool {
        self.missing_eof
    }

    /// As htslib, a file without its end-of-file marker is reported (the
    /// CLI's warning).
    pub fn warn_if_truncated(&self, report: &dyn Report) {
        if self.missing_eof {
            report.warning(Warning::MissingEofMarker { path: self.shown.clone() });
        }
    }

    /// The index file given at open (kept when the file is sent elsewhere).
    pub fn index_given(&self) -> Option<&Path> {
        self.by_region.as_ref().and_then(|b| b.options.index.as_deref())
    }

    /// Whether an index file was given or lies beside the file (one older
    /// than the file included: used with a warning).
    pub fn has_index_file(&self) -> bool {
        match (&self.by_region, self.index_given()) {
            (None, _) => false,
            // Looked for at open.
            (Some(_), _) if self.remote => self.index_loaded,
            (Some(_), Some(_)) => true,
            (Some(_), None) if self.is_cram() => cram::region::has_index(&self.path, None),
            (Some(_), None) => matches!(locate_index(&self.path), IndexLocation::Found(_) | IndexLocation::Stale(_)),
        }
    }

    /// Whether an index file was loaded (and checked) at open.
    pub fn index_loaded(&self) -> bool {
        self.index_loaded
    }

    /// Whether region queries can be read: there is an index file, or one
    /// is made in memory when asked ([`OpenOptions`]).
    pub fn can_read_by_region(&self) -> bool {
        match &self.by_region {
            None => false,
            Some(b) => self.index_loaded || b.options.without_index == WithoutIndex::Build || self.has_index_file(),
        }
    }

    /// Why region queries cannot be read, in one line naming the file
    /// (`None` when they can).
    pub fn no_regions(&self) -> Option<Error> {
        if self.can_read_by_region() {
            return None;
        }
        Some(match self.format {
            _ if self.by_region.is_some() => no_index_for_regions(&self.shown),
            _ if self.remote => Error::Message(
                "region queries of a remote file are supported for BAM only yet (bgzipped SAM and CRAM are read whole)".into(),
            )
            .with_path(&self.shown),
            Format::Sam | Format::CompressedSam(_) => sam_not_indexable(&self.path),
            _ if !self.regular => Error::Message("a stream is read from its start only".into()).with_path(&self.path),
            // An uncompressed or gzip BAM in a file: `fasthts index`'s words.
            other => match crate::format::check_indexable(other, &self.path) {
                Err(e) => e,
                Ok(()) => crate::region::indexed::not_indexable(other, &self.path),
            },
        })
    }

    fn by_region(&self) -> Result<(&ByRegion, MutexGuard<'_, Opened>), Error> {
        match &self.by_region {
            Some(b) => Ok((b, b.opened.lock().unwrap_or_else(|p| p.into_inner()))),
            None => Err(self.no_regions().expect("a file not read by region says why")),
        }
    }

    fn open_indexed(&self, by_region: &ByRegion, opened: &mut Opened, report: &dyn Report) -> Result<Arc<IndexedFile>, Error> {
        if let Some(file) = &opened.file {
            return Ok(file.clone());
        }
        let file = Arc::new(IndexedFile::open(&self.path, &by_region.options, report)?);
        opened.file = Some(file.clone());
        Ok(file)
    }

    /// The file with its index, for region queries: opened now if not yet
    /// (its index loaded and checked, or made in memory), then kept.
    pub fn for_regions(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, Error> {
        let (by_region, mut opened) = self.by_region()?;
        self.open_indexed(by_region, &mut opened, report)
    }

    /// The file for a job that reads every placed record through the
    /// index (a plan, pysam's `fetch()`): its index checked, once, to
    /// describe the whole file; one that does not (made for a prefix of
    /// the file) is reported and replaced, for every later use too, by one
    /// made in memory.
    pub fn for_whole_file(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, Error> {
        let (by_region, mut opened) = self.by_region()?;
        let file = self.open_indexed(by_region, &mut opened, report)?;
        if opened.whole {
            return Ok(file);
        }
        let file = match file.for_whole_file(report)? {
            Some(whole) => Arc::new(whole),
            None => file,
        };
        (opened.file, opened.whole) = (Some(file.clone()), true);
        Ok(file)
    }

    /// The file for `queries` (of a job reading every placed record when
    /// `whole`, as [`AlignmentFile::for_whole_file`]): a remote file's with
    /// the ranges they read fetched, once, in parallel
    /// ([`IndexedFile::with_queries_fetched`]); a local file's as it is.
    /// Every region read of the Python package comes through here.
    pub fn for_queries(
        &self,
        queries: &[(Region, crate::region::indexed::Rule)],
        whole: bool,
        report: &dyn Report,
    ) -> Result<Arc<IndexedFile>, Error> {
        let file = if whole { self.for_whole_file(report)? } else { self.for_regions(report)? };
        if !file.is_remote() {
            return Ok(file);
        }
        drop(file);
        let (_, mut opened) = self.by_region()?;
        let held = opened.file.take().expect("the file was opened above and is kept");
        // A fetch that fails loses the handle fetched into: the next
        // region read opens the file again.
        let fetched = IndexedFile::with_queries_fetched(held, queries)?;
        opened.file = Some(fetched.clone());
        Ok(fetched)
    }

    /// The file for reading `regions` as columns: a CRAM file's
    /// [`AlignmentFile::for_columns`], another's
    /// [`AlignmentFile::for_queries`] (a remote file's ranges fetched).
    pub fn for_column_queries(&self, regions: &[Region], report: &dyn Report) -> Result<Arc<IndexedFile>, Error> {
        if self.is_cram() {
            return self.for_columns(report);
        }
        let queries: Vec<_> = regions.iter().map(|&r| (r, crate::region::indexed::Rule::StartsIn)).collect();
        self.for_queries(&queries, false, report)
    }

    /// As [`AlignmentFile::for_regions`], a CRAM file's records decoded
    /// only as far as `Fields::Columns` (no reference read).
    pub fn for_columns(&self, report: &dyn Report) -> Result<Arc<IndexedFile>, Error> {
        let (by_region, mut opened) = self.by_region()?;
        let file = self.open_indexed(by_region, &mut opened, report)?;
        if let Some(columns) = &opened.columns {
            return Ok(columns.clone());
        }
        let Some(columns) = file.with_cram_fields(Fields::Columns) else { return Ok(file) };
        let columns = Arc::new(columns);
        opened.columns = Some(columns.clone());
        Ok(columns)
    }

    /// The input opened at open if no read has taken it yet, else the
    /// file opened again (`fields`: what a CRAM file's records decode; a
    /// stream, read once, keeps the fields it was opened with, which
    /// decode at least as much).
    fn input(&self, fields: Fields) -> Result<Input, Error> {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner()).take();
        match first {
            Some(input) if fields == self.cram.fields || !self.is_cram() || !self.regular => Ok(input),
            _ => input::open_with(&self.path, &CramOptions { fields, ..self.cram.clone() }),
        }
    }

    /// Every record from the first, in file order (a stream: once).
    pub fn records(&self) -> Result<WholeFileCursor, Error> {
        Ok(WholeFileCursor::new(self.input(self.cram.fields)?, &self.path))
    }

    /// Regions tiling every reference with records, then the unplaced
    /// records: a whole-file job over them sees each record once. Cut from
    /// the index (see [`region::plan`]; an index of the whole file, made in
    /// memory if need be), a CRAM file's from its containers (no index
    /// needed).
    pub fn plan(&self, plan: Plan, report: &dyn Report) -> Result<Vec<Region>, Error> {
        if self.is_cram() && self.regular {
            let containers = match self.containers.get() {
                Some(list) => list,
                None => {
                    let file = std::fs::File::open(&self.path).map_err(|e| Error::from(e).with_path(&self.path))?;
                    let list = cram::containers(&file).map_err(|e| Error::from(e).with_path(&self.path))?;
                    self.containers.get_or_init(|| list)
                }
            };
            return Ok(region::plan_containers(&self.header, containers, plan));
        }
        let file = self.for_whole_file(report)?;
        let (indexed, index) = file.indexed().expect("a BAM or bgzipped SAM is planned by its index");
        Ok(region::plan(indexed, index, plan))
    }

    /// Every record of the file, in parts on the current pool, each part
    /// folded into a `P` (`new_part(estimated records)`, then `add` per
    /// record, in file order within the part), the parts returned in file
    /// order: the same records at any thread count. A mapped BAM is cut
    /// through its index when it has one (`part_bytes` compressed bytes a
    /// part; read sequentially when the index does not describe the file,
    /// as flagstat does), a CRAM file at its containers (`fields`: what
    /// its records decode); other input is one part, read as it arrives
    /// (SAM parsed ahead on the pool; its record warnings reported).
    pub fn scatter<P: Send>(
        &self,
        part_bytes: u64,
        fields: Fields,
        report: &dyn Report,
        new_part: impl Fn(usize) -> P + Sync,
        add: impl Fn(&mut P, &RecordRef<'_>) + Sync,
    ) -> Result<Vec<P>, Error> {
        if self.is_mapped_bam() {
            let file = if self.has_index_file() { self.for_regions(report).ok() } else { None };
            let mapped;
            let bam = match file.as_deref().and_then(IndexedFile::bam) {
                Some((bam, _)) => bam,
                None => {
                    mapped = BamFile::open(&self.path)?;
                    &mapped
                }
            };
            let by_regions = |index: &crate::index::Index| {
                let file = file.as_deref().expect("an index comes with its file");
                region::scatter_all(bam, index, Plan::BalancedBytes(part_bytes), |r, records| {
                    let mut part = new_part(pieces::estimate_records(file, *r));
                    while let Some(record) = records.next_record()? {
                        add(&mut part, &record);
                    }
                    Ok(part)
                })
            };
            let sequentially = || {
                let mut part = new_part(0);
                crate::bam::scan(bam, |r, _| {
                    add(&mut part, r);
                    Ok(())
                })?;
                Ok(vec![part])
            };
            let index = file.as_deref().and_then(IndexedFile::index);
            return by_index_or_sequentially(bam, index, by_regions, sequentially, report);
        }
        if self.is_cram() && self.regular {
            let options = CramOptions { fields, ..self.cram.clone() };
            return cram::scatter(&self.path, &options, part_bytes, |piece| {
                let mut part = new_part(0);
                piece.for_each_record(|r| add(&mut part, r))?;
                Ok(part)
            });
        }
        let mut part = new_part(0);
        match self.input(fields)? {
            Input::Sam(mut sam) => {
                let read = sam.for_each_record(|r| {
                    add(&mut part, &r);
                    Ok::<(), Error>(())
                });
                report_sam_warnings(&mut sam, &self.path, report);
                read.map_err(|e| e.with_path(&self.path))?;
            }
            input => {
                let mut cursor = WholeFileCursor::new(input, &self.path);
                while cursor.fill(1 << 16, &mut |r| add(&mut part, r))? > 0 {}
            }
        }
        Ok(vec![part])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region::indexed::Rule;
    use crate::test_support::{data, scratch, Kept};

    fn count_all(file: &AlignmentFile) -> u64 {
        file.scatter(1 << 10, Fields::All, &Kept::default(), |_| 0u64, |n, _| *n += 1).unwrap().iter().sum()
    }

    #[test]
    fn scatter_plan_and_records_see_every_record_once() {
        let file = AlignmentFile::open(&data("small.bam"), &OpenOptions::default(), &Kept::default()).unwrap();
        let mut sequential = 0u64;
        let mut cursor = file.records().unwrap();
        while cursor.fill(100, &mut |_| sequential += 1).unwrap() > 0 {}
        assert!(sequential > 0);
        assert_eq!(count_all(&file), sequential);
        // Through the index beside it, in parts.
        let parts = file.scatter(1 << 10, Fields::All, &Kept::default(), |_| (), |_, _| ()).unwrap();
        assert!(parts.len() > 2, "{} parts", parts.len());
        let indexed = file.for_whole_file(&Kept::default()).unwrap();
        let mut planned = 0u64;
        for region in file.plan(Plan::Windows(1000), &Kept::default()).unwrap() {
            indexed.query(region, Rule::StartsIn).unwrap().for_each_record(|_| planned += 1).unwrap();
        }
        assert_eq!(planned, sequential);
    }

    #[test]
    fn a_plain_sam_is_read_whole_and_refused_regions_in_one_line() {
        let dir = scratch("alignment-file-sam");
        let sam = dir.join("r.sam");
        let text = "@SQ\tSN:c\tLN:100\nr1\t0\tc\t5\t60\t4M\t*\t0\t0\tACGT\t*\n";
        std::fs::write(&sam, text).unwrap();
        let file = AlignmentFile::open(&sam, &OpenOptions::default(), &Kept::default()).unwrap();
        assert!(file.is_sam() && !file.can_read_by_region());
        assert_eq!(count_all(&file), 1);
        let e = file.for_regions(&Kept::default()).err().unwrap().to_string();
        assert_eq!(e, sam_not_indexable(&sam).to_string());
        let given = OpenOptions { index: Some(dir.join("r.sam.csi")), ..OpenOptions::default() };
        assert_eq!(AlignmentFile::open(&sam, &given, &Kept::default()).err().unwrap().to_string(), e);
    }
}
