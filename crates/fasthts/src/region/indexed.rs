//! One type for an alignment file read through an index, under every
//! command and the Python package: a BAM (BAI or CSI), a bgzipped SAM
//! (CSI or BAI) or a CRAM file (`.crai`, read by htslib's iterator).
//!
//! [`IndexedFile::open`] finds the index once, under one policy: the one
//! given (samtools' `-X`, pysam's `index_filename`), else the one beside
//! the file as htslib finds it; an index is checked against the file
//! before it is used (every offset inside it; an index older than its file,
//! or one given by name, also chunk by chunk). Without an index the file is
//! refused, or indexed in memory ([`IndexedOptions::without_index`]). A job
//! that reads every placed record of the file through the index
//! ([`IndexedOptions::whole_file`]) gets one that describes the whole file.
//!
//! Queries name their rule ([`Rule`]): the records overlapping a region,
//! as samtools and pysam read them, or those starting in it, so that
//! regions tiling a reference see each record once (scatter/gather). A
//! piece of a larger query ([`IndexedFile::piece`]) reads the records
//! starting in its scope from where a query from an earlier position
//! begins, so that pieces read in parallel give together what one query
//! gives. Whatever the format, records come back as [`RecordRef`]s in file
//! order from a [`Records`] cursor.
//!
//! ```
//! use fasthts::region::indexed::{IndexedFile, IndexedOptions, Rule, WithoutIndex};
//! use fasthts::region::Region;
//! # let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam"));
//! let options = IndexedOptions { without_index: WithoutIndex::Build, ..Default::default() };
//! let file = IndexedFile::open(path, &options, &|_| {})?;
//! let mut records = file.query(Region { ref_id: 0, start: 1000, end: 2000 }, Rule::Overlap)?;
//! let mut n = 0;
//! while let Some(r) = records.next_record()? {
//!     assert!(r.end_pos() > 1000 && i64::from(r.pos()) < 2000);
//!     n += 1;
//! }
//! # let _ = n;
//! # Ok::<(), fasthts::Error>(())
//! ```

use super::sam::{SamGzFile, SamRegionReader};
use super::{Indexed, Region, RegionReader};
use crate::bam::{BamFile, Header, RecordRef};
use crate::cram::{Container, CramOptions, CramQuery, Fields, QueryPool};
use crate::index::{build_index, find_index, load_index, replace_if_not_covering, verify_index};
use crate::report::Report;
use crate::index::{Index, IndexFormat};
use crate::format::{self, Format};
use crate::input;
use crate::sam::{Positions, RefNames};
use crate::Error;
use fasthts_io::compression::Compression;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

mod cursor;
mod fetching;
mod mate;
mod overlap;

pub use cursor::Cursor;
pub use fetching::{FetchingQuery, Onwards};
pub use mate::pysam_mate;
pub use overlap::RegionRecords;

/// What to do with a file that has no index (none given, none beside it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WithoutIndex {
    /// Refuse it: "cannot load index" (samtools `view` and `depth -r`).
    #[default]
    Refuse,
    /// Index it in memory, leaving nothing on disk (FACETS snp-pileup,
    /// pysam's `AlignmentFile` without an index); a BAM or SAM not sorted
    /// by coordinate is refused, saying so.
    Build,
}

/// How [`IndexedFile::open`] finds and checks the index.
#[derive(Clone, Debug, Default)]
pub struct IndexedOptions {
    /// The index file to use (samtools' `-X`, pysam's `index_filename`);
    /// else the one beside the file, as htslib finds it.
    pub index: Option<PathBuf>,
    /// How a CRAM file is decoded (its reference).
    pub cram: CramOptions,
    /// Without an index file.
    pub without_index: WithoutIndex,
    /// The job reads every placed record of the file through the index
    /// (snp-pileup, a plan of the whole file): an index that does not
    /// describe the whole file (made for a prefix of it) is reported and
    /// replaced by one made in memory.
    pub whole_file: bool,
    /// How a bgzipped SAM's records with positions past BAM's 32 bits are
    /// read ([`SamGzFile::with_positions`]): refused, unless a job that
    /// reads 64-bit positions asks for them (depth).
    pub sam_positions: Positions,
}

/// The rule by which a query picks records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every record overlapping the region (htslib's iterator, samtools
    /// and pysam): starting before its end, ending after its start.
    Overlap,
    /// The records starting in the region: regions tiling a reference see
    /// each record once.
    StartsIn,
}

/// An alignment file opened with its index. Shared by the threads of a
/// job; each query is a cursor of its own.
pub struct IndexedFile {
    data: Data,
    /// The index is known to describe the whole file: made from it, or
    /// checked to ([`IndexedOptions::whole_file`]).
    whole: bool,
    /// A CRAM file's containers, listed on first use.
    containers: OnceLock<Vec<Container>>,
    /// The header's names → ids, mapped on first use.
    ref_names: OnceLock<RefNames>,
}

enum Data {
    Bam { bam: BamFile, index: Index },
    SamGz { sam: SamGzFile, index: Index },
    Cram(QueryPool),
}

/// The error of a region query on a file that no index describes, for any
/// format but BGZF BAM, bgzipped SAM and CRAM files.
pub fn not_indexable(format: Format, path: &Path) -> Error {
    match format {
        Format::Sam | Format::CompressedSam(_) => crate::index::sam_not_indexable(path),
        _ => Error::Message(
            "random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files (regions are read from a file through its index)".into(),
        )
        .with_path(path),
    }
}

/// The error of a region query on a file without an index.
pub fn no_index(path: &Path) -> Error {
    crate::index::no_index_for_regions(path)
}

impl IndexedFile {
    /// Opens the alignment file at `path` (a regular file: a pipe cannot
    /// be read by region) with its index, as `options` say. Errors name
    /// `path` (or the index). `report` hears of a stale index, or one that
    /// does not describe the whole file.
    pub fn open(path: &Path, options: &IndexedOptions, report: &dyn Report) -> Result<IndexedFile, Error> {
        // `DATA##idx##INDEX`: the index named with the data (htslib's).
        if let Some((data, index)) = path.to_str().and_then(|p| p.split_once("##idx##")) {
            let named = IndexedOptions { index: Some(PathBuf::from(index)), ..options.clone() };
            return Self::open(Path::new(data), &named, report);
        }
        if let Some(url) = input::remote_url(path) {
            return Self::open_remote(url, options)?.ok_or_else(|| no_index(Path::new(&fasthts_io::remote::display_url(url))));
        }
        let peeked = input::peek(path)?;
        let format = peeked.format();
        if !peeked.is_regular_file() || path.as_os_str() == "-" {
            return Err(Error::Message(
                "random alignment retrieval only works for indexed SAM.gz, BAM or CRAM files: this is not a regular file (a pipe or standard input cannot be read through an index)".into(),
            )
            .with_path(path));
        }
        drop(peeked);
        if let Some(index) = &options.index {
            std::fs::metadata(index).map_err(|e| Error::from(e).with_path(index))?;
        }
        match format {
            Format::Cram => Self::open_cram(path, options),
            Format::Bam(Compression::Bgzf) => Self::from_bam(BamFile::open(path)?, options, report),
            Format::CompressedSam(Compression::Bgzf) => Self::from_sam_gz(SamGzFile::open(path)?, options, report),
            // Plain or gzip SAM cannot have an index; a job that indexes
            // its inputs in memory has the text compressed in memory first.
            Format::Sam | Format::CompressedSam(Compression::Gzip) if options.without_index == WithoutIndex::Build && options.index.is_none() => {
                let compression = if format == Format::Sam { Compression::None } else { Compression::Gzip };
                let sam = SamGzFile::from_text(path, compression)?.with_positions(options.sam_positions);
                Ok(IndexedFile::new(Data::SamGz { index: build_sam_index(&sam, None)?, sam }, true))
            }
            other => {
                format::check_supported(other, path)?;
                Err(not_indexable(other, path))
            }
        }
    }

    /// A mapped BAM with its index, found as [`IndexedFile::open`] finds it.
    pub fn from_bam(bam: BamFile, options: &IndexedOptions, report: &dyn Report) -> Result<IndexedFile, Error> {
        let (index, whole) = index_for(&bam, options, report, |_| build_index(&bam))?;
        Ok(IndexedFile::new(Data::Bam { bam, index }, whole))
    }

    /// A mapped BAM with an index its caller has found and checked
    /// (a whole-file job's `covering_index`).
    pub fn with_index(bam: BamFile, index: Index) -> IndexedFile {
        IndexedFile::new(Data::Bam { bam, index }, true)
    }

    fn new(data: Data, whole: bool) -> IndexedFile {
        IndexedFile { data, whole, containers: OnceLock::new(), ref_names: OnceLock::new() }
    }

    /// A mapped bgzipped SAM with its index, found as [`IndexedFile::open`]
    /// finds it (one made in memory is a CSI, as `samtools index` makes for
    /// SAM).
    pub fn from_sam_gz(sam: SamGzFile, options: &IndexedOptions, report: &dyn Report) -> Result<IndexedFile, Error> {
        let build = |format: Option<IndexFormat>| build_sam_index(&sam, format);
        let (index, whole) = index_for(&sam, options, report, build)?;
        let sam = sam.with_positions(options.sam_positions);
        Ok(IndexedFile::new(Data::SamGz { sam, index }, whole))
    }

    /// [`IndexedFile::open`] of a URL: a BGZF BAM or bgzipped SAM whose
    /// header and index are fetched, or a CRAM file read by htslib through
    /// fasthts' requests with its `.crai` fetched (the index given, which
    /// may be a URL too, else the one beside it as htslib finds it:
    /// `URL.csi`, `URL.bai`, or `URL.crai`, then the same with the last
    /// extension replaced); a BAM's or SAM's records' ranges are fetched
    /// before they are read ([`IndexedFile::prefetch_pieces`]), a CRAM's
    /// as htslib reads them. `None` when no index is given and none lies
    /// beside it.
    pub fn open_remote(url: &str, options: &IndexedOptions) -> Result<Option<IndexedFile>, Error> {
        let peeked = input::peek(Path::new(url))?;
        let (object, head) = peeked.remote_object().expect("a URL is a remote object");
        Self::open_remote_object(url, Arc::clone(object), head, peeked.path(), options)
    }

    /// [`IndexedFile::open_remote`] of the object at `url` (named `path`
    /// in messages), opened, whose first bytes `head` were fetched.
    pub fn open_remote_object(
        url: &str,
        object: Arc<fasthts_io::remote::RemoteObject>,
        head: &[u8],
        path: &Path,
        options: &IndexedOptions,
    ) -> Result<Option<IndexedFile>, Error> {
        let format = format::recognise(head);
        match format {
            Format::Bam(Compression::Bgzf) | Format::CompressedSam(Compression::Bgzf) | Format::Cram => {}
            other => {
                format::check_supported(other, path)?;
                return Err(not_indexable(other, path));
            }
        }
        let (bytes, index_path) = match &options.index {
            Some(named) => (read_index_file(named, false)?.ok_or_else(|| not_found(named))?, named.clone()),
            None => {
                let mut found = None;
                for candidate in remote_index_candidates(url, format) {
                    if let Some(bytes) = read_index_file(&candidate, true)? {
                        found = Some((bytes, candidate));
                        break;
                    }
                }
                match found {
                    Some(found) => found,
                    None => return Ok(None),
                }
            }
        };
        let shown = fasthts_io::remote::shown_path(&index_path);
        if format == Format::Cram {
            let pool = QueryPool::open_remote(object, head, path, &options.cram, &bytes, &shown)?;
            return Ok(Some(IndexedFile::new(Data::Cram(pool), false)));
        }
        let index = Index::from_bytes(&bytes).map_err(|e| Error::from(e).with_path(&shown))?;
        let data = if let Format::CompressedSam(_) = format {
            let sam = SamGzFile::open_remote(path, object, head)?.with_positions(options.sam_positions);
            check_remote_index(&sam, &index, &shown)?;
            Data::SamGz { sam, index }
        } else {
            let bam = BamFile::open_remote(path, object, head)?;
            check_remote_index(&bam, &index, &shown)?;
            Data::Bam { bam, index }
        };
        Ok(Some(IndexedFile::new(data, false)))
    }

    /// [`IndexedFile::open_remote`] of `path`, a URL or `URL##idx##INDEX`
    /// (the index named with the data, as htslib reads it).
    pub fn open_url(path: &Path, options: &IndexedOptions) -> Result<Option<IndexedFile>, Error> {
        let text = path.to_str().unwrap_or_default();
        match text.split_once("##idx##") {
            Some((data, index)) => Self::open_remote(data, &IndexedOptions { index: Some(PathBuf::from(index)), ..options.clone() }),
            None => Self::open_remote(text, options),
        }
    }

    /// The BAM and its index (`None` for other formats).
    pub fn into_bam(self) -> Option<(BamFile, Index)> {
        match self.data {
            Data::Bam { bam, index } => Some((bam, index)),
            _ => None,
        }
    }

    /// Fetches what [`IndexedFile::piece`] of each `(scope, from)` will
    /// read of a remote BAM or bgzipped SAM, in parallel; nothing for a
    /// local one (nor a CRAM, whose ranges htslib asks for as it reads).
    /// The ranges are those the index gives for the pieces, each to the
    /// block after the one where what follows the piece starts.
    pub fn prefetch_pieces(&mut self, pieces: &[(Region, i64)]) -> Result<(), Error> {
        let Some((file, index)) = self.fetched_by_index() else { return Ok(()) };
        let ranges: Vec<(u64, u64)> = pieces.iter().filter_map(|&(scope, from)| piece_range(file, index, scope, from)).collect();
        self.fetch(&ranges)
    }

    /// [`IndexedFile::prefetch_pieces`] of whole regions: what their
    /// queries, and the pieces of them, read.
    pub fn prefetch_regions(&mut self, regions: &[Region]) -> Result<(), Error> {
        let pieces: Vec<(Region, i64)> = regions.iter().map(|r| (*r, r.start.max(0))).collect();
        self.prefetch_pieces(&pieces)
    }

    /// This file with what `queries` read fetched (a remote file; a local
    /// one is returned as it is): fetched into this handle when no one else
    /// holds it, else into a copy holding only the header
    /// ([`BamFile::remote_copy`]) and the index, so that a cursor still
    /// reading the other handle reads it undisturbed. The Python package's
    /// region reads come through here.
    pub fn with_queries_fetched(file: Arc<IndexedFile>, queries: &[(Region, Rule)]) -> Result<Arc<IndexedFile>, Error> {
        if file.fetched_by_index().is_none() || queries.iter().all(|&(region, rule)| file.check_query_fetched(region, rule).is_ok()) {
            return Ok(file);
        }
        let mut file = match Arc::try_unwrap(file) {
            Ok(file) => file,
            Err(shared) => shared.remote_copy().expect("a remote BAM or SAM has a copy")?,
        };
        file.prefetch_queries(queries)?;
        Ok(Arc::new(file))
    }

    /// A handle of this remote file of its own (a copy holding only the
    /// header, [`BamFile::remote_copy`], and the same index) with what
    /// `queries` read fetched; `None` for a local file. Threads that read
    /// different parts of one remote file each fetch into their own.
    pub fn fetched_copy(&self, queries: &[(Region, Rule)]) -> Option<Result<IndexedFile, Error>> {
        let copy = self.remote_copy()?;
        Some(copy.and_then(|file| {
            let fetched = Self::with_queries_fetched(Arc::new(file), queries)?;
            Ok(Arc::into_inner(fetched).expect("the copy has no other holder"))
        }))
    }

    /// Fetches what [`IndexedFile::query`] of each `(region, rule)` reads
    /// of a remote BAM or bgzipped SAM, in parallel; nothing for a local
    /// file (nor a CRAM, whose ranges htslib asks for as it reads).
    pub fn prefetch_queries(&mut self, queries: &[(Region, Rule)]) -> Result<(), Error> {
        let Some((file, index)) = self.fetched_by_index() else { return Ok(()) };
        let ranges: Vec<(u64, u64)> = queries.iter().filter_map(|&(region, rule)| query_range(file, index, region, rule)).collect();
        self.fetch(&ranges)
    }

    /// A remote BAM or bgzipped SAM (read by the ranges fetched into it
    /// first) and its index; `None` for any other file.
    fn fetched_by_index(&self) -> Option<(&dyn Indexed, &Index)> {
        match &self.data {
            Data::Bam { bam, index } if bam.is_remote() => Some((bam, index)),
            Data::SamGz { sam, index } if sam.is_remote() => Some((sam, index)),
            _ => None,
        }
    }

    /// Fetches `ranges` of a remote BAM or bgzipped SAM.
    fn fetch(&mut self, ranges: &[(u64, u64)]) -> Result<(), Error> {
        match &mut self.data {
            Data::Bam { bam, .. } => bam.prefetch(ranges),
            Data::SamGz { sam, .. } => sam.prefetch(ranges),
            Data::Cram(_) => Ok(()),
        }
    }

    /// Whether `[start, end)` may be read (always, but of a remote BAM or
    /// bgzipped SAM where it was not fetched).
    fn is_fetched(&self, start: u64, end: u64) -> bool {
        match &self.data {
            Data::Bam { bam, .. } => bam.is_fetched(start, end),
            Data::SamGz { sam, .. } => sam.is_fetched(start, end),
            Data::Cram(_) => true,
        }
    }

    /// [`IndexedFile::check_fetched`] of what [`IndexedFile::query`] of
    /// `region` by `rule` reads.
    fn check_query_fetched(&self, region: Region, rule: Rule) -> Result<(), Error> {
        let Some((file, index)) = self.fetched_by_index() else { return Ok(()) };
        if query_range(file, index, region, rule).is_none_or(|(s, e)| self.is_fetched(s, e)) {
            return Ok(());
        }
        Err(not_fetched(self.path()))
    }

    /// A remote BAM's or SAM's copy holding its header ([`BamFile::remote_copy`]),
    /// with the same index.
    fn remote_copy(&self) -> Option<Result<IndexedFile, Error>> {
        let copy = match &self.data {
            Data::Bam { bam, index } => bam.remote_copy()?.map(|bam| Data::Bam { bam, index: index.clone() }),
            Data::SamGz { sam, index } => sam.remote_copy()?.map(|sam| Data::SamGz { sam, index: index.clone() }),
            Data::Cram(_) => return None,
        };
        Some(copy.map(|data| IndexedFile::new(data, self.whole)))
    }

    /// Whether the file is a remote object (a URL).
    pub fn is_remote(&self) -> bool {
        match &self.data {
            Data::Bam { bam, .. } => bam.is_remote(),
            Data::SamGz { sam, .. } => sam.is_remote(),
            Data::Cram(pool) => pool.is_remote(),
        }
    }

    /// A remote file's piece or query that was not fetched first is
    /// refused (only `view` fetches its pieces yet), not read as zeros.
    fn check_fetched(&self, scope: Region, from: i64) -> Result<(), Error> {
        let Some((file, index)) = self.fetched_by_index() else { return Ok(()) };
        if piece_range(file, index, scope, from).is_none_or(|(s, e)| self.is_fetched(s, e)) {
            return Ok(());
        }
        Err(not_fetched(self.path()))
    }

    fn open_cram(path: &Path, options: &IndexedOptions) -> Result<IndexedFile, Error> {
        let named = options.index.as_deref();
        let pool = match CramQuery::open(path, &options.cram, named)? {
            Some(query) => QueryPool::new(query.named(path), path, &options.cram, named),
            None if options.without_index == WithoutIndex::Build => QueryPool::open_or_index(path, path, &options.cram)?.0,
            None => return Err(no_index(path)),
        };
        Ok(IndexedFile::new(Data::Cram(pool), false))
    }

    /// This file read by a job of the whole file (a plan, pysam's
    /// `fetch()`), as [`IndexedOptions::whole_file`] opens it: `None` when
    /// its index describes the whole file (made from it, checked to, or a
    /// CRAM's `.crai`, read by htslib), else the file again with an index
    /// made in memory (what the index lacked is reported).
    pub fn for_whole_file(&self, report: &dyn Report) -> Result<Option<IndexedFile>, Error> {
        // A remote file's index is taken to describe it, as samtools takes
        // it (checking it would fetch the file).
        if self.whole || self.is_remote() {
            return Ok(None);
        }
        let data = match &self.data {
            Data::Bam { bam, index } => match replace_if_not_covering(bam, index, report, |_| build_index(bam))? {
                Some(index) => Data::Bam { bam: BamFile::open(bam.path())?, index },
                None => return Ok(None),
            },
            Data::SamGz { sam, index } => match replace_if_not_covering(sam, index, report, |f| build_sam_index(sam, Some(f)))? {
                Some(index) => Data::SamGz { sam: SamGzFile::open(Indexed::path(sam))?.with_positions(sam.positions()), index },
                None => return Ok(None),
            },
            Data::Cram(_) => return Ok(None),
        };
        Ok(Some(IndexedFile::new(data, true)))
    }

    /// This CRAM file with its records decoded as `fields` say (its handles
    /// share the index, one made in memory included); `None` for other
    /// formats.
    pub fn with_cram_fields(&self, fields: Fields) -> Option<IndexedFile> {
        match &self.data {
            Data::Cram(pool) => Some(IndexedFile::new(Data::Cram(pool.with_fields(fields)), self.whole)),
            _ => None,
        }
    }

    /// A CRAM file's containers, in file order (listed once, from their
    /// headers); none for other formats.
    pub fn cram_containers(&self) -> Result<&[Container], Error> {
        if let Some(list) = self.containers.get() {
            return Ok(list);
        }
        let list = match &self.data {
            Data::Cram(pool) if pool.is_remote() => {
                return Err(
                    Error::Message("a remote CRAM file is read by region, not cut into containers, yet".into()).with_path(pool.path())
                );
            }
            Data::Cram(pool) => {
                let path = pool.path();
                let file = std::fs::File::open(path).map_err(|e| Error::from(e).with_path(path))?;
                crate::cram::containers(&file).map_err(|e| Error::from(e).with_path(path))?
            }
            _ => Vec::new(),
        };
        Ok(self.containers.get_or_init(|| list))
    }

    /// The name errors give the file.
    pub fn path(&self) -> &Path {
        match &self.data {
            Data::Bam { bam, .. } => bam.path(),
            Data::SamGz { sam, .. } => Indexed::path(sam),
            Data::Cram(pool) => pool.path(),
        }
    }

    /// The header (a SAM's and a CRAM's as a BAM's).
    pub fn header(&self) -> &Header {
        match &self.data {
            Data::Bam { bam, .. } => bam.header(),
            Data::SamGz { sam, .. } => Indexed::header(sam),
            Data::Cram(pool) => pool.header(),
        }
    }

    /// The reference names → ids of the header, as htslib's
    /// `sam_hdr_name2tid` looks them up (`@SQ SN:` names and `AN:`
    /// alternatives): what region text, BED and contig names are resolved
    /// with. Mapped once per file, on first use.
    pub fn ref_names(&self) -> &RefNames {
        self.ref_names.get_or_init(|| RefNames::new(self.header()))
    }

    /// The BAI or CSI index (`None` for CRAM, read by htslib through its
    /// `.crai`): where a job plans its pieces by compressed bytes.
    pub fn index(&self) -> Option<&Index> {
        match &self.data {
            Data::Bam { index, .. } | Data::SamGz { index, .. } => Some(index),
            Data::Cram(_) => None,
        }
    }

    /// The mapped BAM or bgzipped SAM and its index (`None` for CRAM):
    /// where a job plans by the index ([`super::plan`]).
    pub fn indexed(&self) -> Option<(&dyn Indexed, &Index)> {
        match &self.data {
            Data::Bam { bam, index } => Some((bam, index)),
            Data::SamGz { sam, index } => Some((sam, index)),
            Data::Cram(_) => None,
        }
    }

    /// The mapped BAM and its index, for jobs with a faster path over BAM
    /// records in place ([`RegionReader::for_each_record`]).
    pub fn bam(&self) -> Option<(&BamFile, &Index)> {
        match &self.data {
            Data::Bam { bam, index } => Some((bam, index)),
            _ => None,
        }
    }

    /// Whether the file is a bgzipped SAM.
    pub fn is_sam_gz(&self) -> bool {
        matches!(self.data, Data::SamGz { .. })
    }

    /// Whether the records may end with 64-bit positions (a bgzipped SAM
    /// opened with [`Positions::Wide`]; see [`crate::sam::wide_span`]).
    pub fn has_wide_positions(&self) -> bool {
        matches!(&self.data, Data::SamGz { sam, .. } if sam.positions() == Positions::Wide)
    }

    /// Whether the file is CRAM (decoded by htslib, whose `.crai` holds no
    /// counts per reference).
    pub fn is_cram(&self) -> bool {
        matches!(self.data, Data::Cram(_))
    }

    /// htslib's words for the file's format (`hts_format_description`),
    /// which FACETS' `-v` prints: `BAM version 1 compressed sequence data`.
    pub fn format_description(&self) -> String {
        match &self.data {
            Data::Bam { .. } => "BAM version 1 compressed sequence data".into(),
            Data::SamGz { sam, .. } => {
                // htslib reads the version from a first line `@HD\tVN:`.
                let text = &Indexed::header(sam).text;
                let version = text.strip_prefix(b"@HD\tVN:").map_or("1".into(), |rest| {
                    let end = rest.iter().position(|c| !(c.is_ascii_digit() || *c == b'.')).unwrap_or(rest.len());
                    String::from_utf8_lossy(&rest[..end]).into_owned()
                });
                let compressed = match sam.compression() {
                    Compression::None => "",
                    Compression::Gzip => " gzip-compressed",
                    _ => " BGZF-compressed",
                };
                format!("SAM version {version}{compressed} sequence data")
            }
            Data::Cram(pool) => {
                let (major, minor) = pool.version();
                format!("CRAM version {major}.{minor} compressed sequence data")
            }
        }
    }

    /// Whether the file lacks its end-of-file marker (BGZF's empty block,
    /// CRAM's EOF container): it is probably truncated, as htslib warns.
    pub fn missing_eof_marker(&self) -> Result<bool, Error> {
        match &self.data {
            Data::Bam { bam, .. } => Ok(!bam.has_eof_marker()),
            Data::SamGz { sam, .. } => Ok(!Indexed::bytes(sam).ends_with(&crate::bgzf::EOF_MARKER)),
            Data::Cram(pool) => pool.with(|q| Ok(q.missing_eof_container())),
        }
    }

    /// The records of `region` by `rule`, in file order (the unplaced
    /// records when its reference is -1, whatever the rule).
    pub fn query(&self, region: Region, rule: Rule) -> Result<Records<'_>, Error> {
        self.check_query_fetched(region, rule)?;
        let tid = region.ref_id;
        let region = if tid < 0 { Region::unplaced() } else { region };
        if rule == Rule::StartsIn || tid < 0 {
            let inner = match &self.data {
                Data::Bam { bam, index } => match super::region_start(bam, index, region) {
                    Some(start) => Inner::Bam(RegionReader::new(bam, region, start, super::following_start(bam, index, region))?),
                    None => Inner::Empty,
                },
                Data::SamGz { sam, index } => Inner::SamGz(sam.region_records(index, region)?),
                Data::Cram(pool) => Inner::cram(pool, tid, region.start, region.end)?,
            };
            return Ok(Records { inner, ending_past: None, starting_in: self.is_cram().then_some(region), wide: false });
        }
        let (beg, end) = (region.start.max(0), region.end);
        let inner = match &self.data {
            Data::Bam { bam, index } if !bam.is_remote() => Inner::Chunks(RegionRecords::new(bam, index, tid as usize, beg, end)),
            // A remote BAM is read from the linear index's offset on, as a
            // bgzipped SAM: the index's chunks of its larger bins lie far
            // apart, and fetching what spans them would fetch much more
            // than what is read (`query_range`).
            Data::Bam { bam, index } => match super::query_span(bam, index, overlapping(tid, end), beg) {
                Some((start, following)) => Inner::Bam(RegionReader::new(bam, overlapping(tid, end), start, following)?),
                None => Inner::Empty,
            },
            Data::SamGz { sam, index } => Inner::SamGz(SamRegionReader::query(sam, index, overlapping(tid, end), beg)?),
            Data::Cram(pool) => Inner::cram(pool, tid, beg, end)?,
        };
        let ending_past = (self.is_sam_gz() || matches!(&self.data, Data::Bam { bam, .. } if bam.is_remote())).then_some(beg);
        let wide = matches!(&self.data, Data::SamGz { sam, .. } if sam.positions() == Positions::Wide);
        Ok(Records { inner, ending_past, starting_in: None, wide })
    }

    /// The records of reference `tid` overlapping `[beg, ..)`, to its end,
    /// for a reader that will probably stop soon after `likely_end`: a
    /// local file's [`IndexedFile::query`] with that hint
    /// ([`Records::expect_end`]), a remote file's fetched in windows as it
    /// is read ([`FetchingQuery`]: the rest of the reference is not
    /// fetched).
    pub fn query_onwards(&self, tid: i32, beg: i64, likely_end: i64) -> Result<Onwards<'_>, Error> {
        if self.is_remote() {
            return Ok(Onwards::Remote(FetchingQuery::new(self, tid, beg, likely_end)));
        }
        let mut records = self.query(Region { ref_id: tid, start: beg, end: i64::MAX }, Rule::Overlap)?;
        records.expect_end(likely_end);
        Ok(Onwards::Local(records))
    }

    /// A piece of a larger query: the records starting in `scope`, read
    /// from where a query from position `from` (at or before the scope's
    /// start) begins, so that reads reaching into the scope from before it
    /// are among them. A caller wanting the records that overlap
    /// `[from, ..)` keeps those ending past `from`.
    pub fn piece(&self, scope: Region, from: i64) -> Result<Records<'_>, Error> {
        self.check_fetched(scope, from)?;
        let inner = match &self.data {
            Data::Bam { bam, index } => match super::query_span(bam, index, scope, from) {
                Some((start, following)) => Inner::Bam(RegionReader::new(bam, scope, start, following)?),
                None => Inner::Empty,
            },
            Data::SamGz { sam, index } => Inner::SamGz(SamRegionReader::query(sam, index, scope, from)?),
            Data::Cram(pool) => Inner::cram(pool, scope.ref_id, from, scope.end)?,
        };
        Ok(Records { inner, ending_past: None, starting_in: self.is_cram().then_some(scope), wide: false })
    }
}

/// Whether record `r` ends past position `from`: its end (from the CIGAR)
/// is worked out only for a record starting before `from` (one starting
/// at or after it ends after it, as every end lies past its start).
/// `wide`: `r` was read with [`Positions::Wide`], its start maybe past
/// what its 32-bit field holds.
#[inline]
fn ends_past(r: &RecordRef<'_>, from: i64, wide: bool) -> bool {
    let pos = if wide { crate::sam::wide_positions(r.as_bytes()).0 } else { i64::from(r.pos()) };
    pos >= from || pos + (r.end_pos() - i64::from(r.pos())) > from
}

/// The scope of a query for the records of `tid` that overlap a region
/// ending at `end`: those that start before `end` (read from the offset of
/// the region's start, which lies before every read overlapping it).
fn overlapping(tid: i32, end: i64) -> Region {
    Region { ref_id: tid, start: i64::MIN, end }
}

/// The compressed bytes [`IndexedFile::piece`] of `(scope, from)` reads
/// of `bam`: from where the index starts it past the end of the last
/// chunk holding records that overlap `[from, scope.end)` (the reader
/// stops at the first record after them, maybe cut by its block's end:
/// two of BGZF's largest blocks more), or to the end of the file when
/// nothing follows.
fn piece_range(bam: &dyn Indexed, index: &Index, scope: Region, from: i64) -> Option<(u64, u64)> {
    let len = bam.bytes().len() as u64;
    let past = 2 * crate::bgzf::MAX_BLOCK_SIZE as u64;
    let (start, following) = super::query_span(bam, index, scope, from)?;
    let last_chunk = usize::try_from(scope.ref_id)
        .ok()
        .and_then(|tid| index.query(tid, from.max(0), scope.end).iter().map(|c| c.end.compressed()).max());
    let end = match (following, last_chunk) {
        (None, _) => len,
        (Some(f), chunk) => f.compressed().max(chunk.unwrap_or(0)).saturating_add(past).min(len),
    };
    Some((start.compressed(), end))
}

/// The compressed bytes a query of `region` by `rule` reads of a remote
/// `file`, through [`IndexedFile::query`] or a [`Cursor`]: the span of the
/// piece they read ([`piece_range`]): of the records starting in the
/// region, or for an overlap query of those starting before its end, read
/// from the offset of its start.
fn query_range(file: &dyn Indexed, index: &Index, region: Region, rule: Rule) -> Option<(u64, u64)> {
    let beg = region.start.max(0);
    if region.ref_id >= 0 && rule == Rule::Overlap {
        return piece_range(file, index, overlapping(region.ref_id, region.end), beg);
    }
    let scope = if region.ref_id < 0 { Region::unplaced() } else { region };
    piece_range(file, index, scope, scope.start.max(0))
}

/// The index files htslib looks for beside the remote data file `url`
/// of `format`: `URL.csi`, `URL.bai` and each with the last extension
/// replaced; for CRAM `URL.crai`, and `.cram` replaced by `.crai`.
fn remote_index_candidates(url: &str, format: Format) -> Vec<PathBuf> {
    let name_start = url.rfind('/').map_or(0, |i| i + 1);
    let dot = url[name_start..].rfind('.').map(|dot| name_start + dot);
    if format == Format::Cram {
        let mut candidates = vec![PathBuf::from(format!("{url}.crai"))];
        if let Some(dot) = dot.filter(|&d| &url[d..] == ".cram") {
            candidates.push(PathBuf::from(format!("{}.crai", &url[..dot])));
        }
        return candidates;
    }
    let mut candidates = Vec::new();
    for ext in ["csi", "bai"] {
        candidates.push(PathBuf::from(format!("{url}.{ext}")));
        if let Some(dot) = dot {
            candidates.push(PathBuf::from(format!("{}.{ext}", &url[..dot])));
        }
    }
    candidates
}

/// A remote file's index `index` (named `shown`) made for it: as many
/// references as its header, its offsets within the file (the blocks it
/// points at are not fetched to be checked, as samtools does not).
fn check_remote_index(file: &dyn Indexed, index: &Index, shown: &Path) -> Result<(), Error> {
    let (in_index, in_header) = (index.references().len(), file.header().references.len());
    if in_index != in_header {
        let what = format!("{in_index} references in the index, {in_header} in the header of {}", file.path().display());
        return Err(Error::IndexMismatch(what).with_path(shown));
    }
    verify_index(file, index, false).map_err(|e| e.with_path(shown))
}

/// The error of a query of a remote file whose ranges were not fetched.
fn not_fetched(path: &Path) -> Error {
    Error::Message("this command cannot read regions of a remote file yet (view and depth -r can)".into()).with_path(path)
}

/// The bytes of the index file `path` (a URL or a local path); `None`
/// when there is none and it is `optional` (a candidate name).
fn read_index_file(path: &Path, optional: bool) -> Result<Option<Vec<u8>>, Error> {
    if let Some(url) = input::remote_url(path) {
        let shown = PathBuf::from(fasthts_io::remote::display_url(url));
        let object = match fasthts_io::remote::RemoteObject::open(url) {
            Ok(object) => object,
            Err(e) if optional && fasthts_io::remote::is_missing(url, &e) => return Ok(None),
            Err(e) => return Err(Error::from(e).with_path(&shown)),
        };
        let mut bytes = vec![0u8; object.len() as usize];
        object.read_range(0, &mut bytes).map_err(|e| Error::from(e).with_path(&shown))?;
        return Ok(Some(bytes));
    }
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::from(e).with_path(path)),
    }
}

fn not_found(path: &Path) -> Error {
    Error::from(std::io::Error::from(std::io::ErrorKind::NotFound)).with_path(path)
}

/// An index of a bgzipped SAM made in memory: in `format`, else a CSI,
/// as `samtools index` makes for SAM.
fn build_sam_index(sam: &SamGzFile, format: Option<IndexFormat>) -> Result<Index, Error> {
    let format = format.unwrap_or(IndexFormat::Csi { min_shift: 14, depth: 5 });
    crate::index::build_sam(Indexed::bytes(sam), Indexed::path(sam), format)
}

/// The index of `file` under the one policy: the one given (loaded, and
/// checked chunk by chunk: it was named, not found beside the file), else
/// the one beside it ([`find_index`]), else per `without_index`; for a
/// whole-file job, one that describes the whole file. `build` makes one
/// from the file, in the format of the one it replaces if any. The flag
/// says whether the index is known to describe the whole file.
fn index_for<F: Indexed>(
    file: &F,
    options: &IndexedOptions,
    report: &dyn Report,
    build: impl Fn(Option<IndexFormat>) -> Result<Index, Error>,
) -> Result<(Index, bool), Error> {
    let found = match &options.index {
        Some(path) => {
            let index = load_index(file, path)?;
            verify_index(file, &index, true).map_err(|e| e.with_path(path))?;
            Some(index)
        }
        None => find_index(file, report)?,
    };
    match (found, options.without_index) {
        (Some(index), _) if options.whole_file => {
            Ok((replace_if_not_covering(file, &index, report, |format| build(Some(format)))?.unwrap_or(index), true))
        }
        (Some(index), _) => Ok((index, false)),
        (None, WithoutIndex::Build) => Ok((build(None)?, true)),
        (None, WithoutIndex::Refuse) => Err(no_index(file.path())),
    }
}

/// The records of a query, in file order, as [`IndexedFile::query`] and
/// [`IndexedFile::piece`] pick them.
pub struct Records<'a> {
    inner: Inner<'a>,
    /// Only records ending past this position are kept (an overlap query
    /// read from a start offset).
    ending_past: Option<i64>,
    /// The records were read with [`Positions::Wide`] (a bgzipped SAM's
    /// for depth): their starts are read from the 64-bit field.
    wide: bool,
    /// Only records starting in this region are kept (htslib's iterator
    /// gives those overlapping it).
    starting_in: Option<Region>,
}

enum Inner<'a> {
    Bam(RegionReader<'a>),
    Chunks(RegionRecords<'a>),
    SamGz(SamRegionReader<'a>),
    Cram(crate::cram::region::Pooled<'a>),
    Empty,
}

impl<'a> Inner<'a> {
    fn cram(pool: &'a QueryPool, tid: i32, beg: i64, end: i64) -> Result<Inner<'a>, Error> {
        let mut query = pool.take()?;
        query.query(tid, beg, end)?;
        Ok(Inner::Cram(query))
    }
}

impl Records<'_> {
    /// Moves to the next record; false at the end. The record is then
    /// [`Records::current`].
    pub fn advance(&mut self) -> Result<bool, Error> {
        loop {
            let moved = match &mut self.inner {
                Inner::Bam(reader) => reader.advance().map_err(|e| Error::from(e).with_path(reader.path()))?,
                Inner::Chunks(reader) => reader.advance()?,
                Inner::SamGz(reader) => reader.advance()?,
                Inner::Cram(query) => query.advance()?,
                Inner::Empty => false,
            };
            if !moved {
                return Ok(false);
            }
            if self.keeps(&self.current()) {
                return Ok(true);
            }
        }
    }

    fn keeps(&self, r: &RecordRef<'_>) -> bool {
        let ends_after = self.ending_past.is_none_or(|from| ends_past(r, from, self.wide));
        let starts_in = self.starting_in.is_none_or(|region| {
            let pos = i64::from(r.pos());
            region.ref_id < 0 || (pos >= region.start && pos < region.end)
        });
        ends_after && starts_in
    }

    /// The record [`Records::advance`] moved to.
    pub fn current(&self) -> RecordRef<'_> {
        match &self.inner {
            Inner::Bam(reader) => reader.current(),
            Inner::Chunks(reader) => reader.current(),
            Inner::SamGz(reader) => reader.current(),
            Inner::Cram(query) => query.current(),
            Inner::Empty => panic!("Records::current called on an empty query"),
        }
    }

    /// The next record, or `None` after the last one.
    pub fn next_record(&mut self) -> Result<Option<RecordRef<'_>>, Error> {
        Ok(if self.advance()? { Some(self.current()) } else { None })
    }

    /// Calls `f` on each remaining record, as [`Records::next_record`] in a
    /// loop would; a BAM's records are walked in place
    /// ([`RegionReader::for_each_record`]).
    pub fn for_each_record(&mut self, mut f: impl FnMut(&RecordRef<'_>)) -> Result<(), Error> {
        if let (Inner::Bam(reader), None, None) = (&mut self.inner, self.ending_past, self.starting_in) {
            let path = reader.path().to_path_buf();
            return reader.for_each_record(f).map_err(|e| Error::from(e).with_path(&path));
        }
        while self.advance()? {
            f(&self.current());
        }
        Ok(())
    }

    /// Hints that reading will probably stop soon after position
    /// `likely_end` (see [`RegionRecords::expect_end`]); only an overlap
    /// query of a BAM reads less for it.
    pub fn expect_end(&mut self, likely_end: i64) {
        if let Inner::Chunks(reader) = &mut self.inner {
            reader.expect_end(likely_end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{data, scratch};
    use std::sync::Arc;

    /// small.bam as BAM, bgzipped SAM and CRAM (bases stored, no
    /// reference needed), each indexed.
    fn three_formats(dir: &Path) -> Vec<PathBuf> {
        let bam_path = dir.join("x.bam");
        std::fs::copy(data("small.bam"), &bam_path).unwrap();
        std::fs::copy(data("small.bam.bai"), dir.join("x.bam.bai")).unwrap();
        let bam = BamFile::open(&bam_path).unwrap();
        let mut text = bam.header().text.clone();
        while text.last() == Some(&0) {
            text.pop();
        }
        let mut records = bam.records().unwrap();
        let refs = &bam.header().references;
        let sam_gz = dir.join("x.sam.gz");
        let cram = dir.join("x.cram");
        let options = crate::cram::CramWriteOptions { options: vec!["no_ref=1".into(), "seqs_per_slice=300".into()], ..Default::default() };
        let crai = crate::cram::crai_path_for(&cram);
        let out = std::fs::File::create(&cram).unwrap();
        let mut writer = crate::cram::CramWriter::create(&cram, bam.header(), &options, 1, Some(&crai), out).unwrap();
        while let Some(r) = records.next_record().unwrap() {
            crate::sam::format_record(&r, refs, &mut text).unwrap();
            writer.write_record(r.as_bytes()).unwrap();
        }
        writer.finish().unwrap();
        // Small blocks: regions start inside the file.
        let mut bgzf = Vec::new();
        for chunk in text.chunks(20_000) {
            let mut block = crate::bgzf::compress_all(chunk, 1);
            block.truncate(block.len() - crate::bgzf::EOF_MARKER.len());
            bgzf.extend_from_slice(&block);
        }
        bgzf.extend_from_slice(&crate::bgzf::EOF_MARKER);
        std::fs::write(&sam_gz, &bgzf).unwrap();
        let index = crate::index::build_sam(&bgzf, &sam_gz, IndexFormat::Csi { min_shift: 14, depth: 5 }).unwrap();
        crate::index::write_index(&index, &dir.join("x.sam.gz.csi")).unwrap();
        vec![bam_path, sam_gz, cram]
    }

    /// (reference, position, name) of every record, in file order.
    fn every_record(path: &Path) -> Vec<(i32, i64, i64, Vec<u8>)> {
        let bam = BamFile::open(path).unwrap();
        let mut records = bam.records().unwrap();
        let mut all = Vec::new();
        while let Some(r) = records.next_record().unwrap() {
            all.push((r.ref_id(), i64::from(r.pos()), r.end_pos(), r.name().to_vec()));
        }
        all
    }

    fn names(records: &mut Records<'_>) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        records.for_each_record(|r| got.push(r.name().to_vec())).unwrap();
        got
    }

    /// Every format gives, for every region and rule, the records the
    /// rule picks from the whole file, in file order; so do pieces tiling
    /// the region, and the owning cursor at any batch size.
    #[test]
    fn every_format_gives_the_records_each_rule_picks() {
        let dir = scratch("indexed-formats");
        let paths = three_formats(&dir);
        let all = every_record(&paths[0]);
        let regions = [
            Region::whole(0),
            Region::whole(1),
            Region::unplaced(),
            Region { ref_id: 0, start: 0, end: 1 },
            Region { ref_id: 0, start: 10_000, end: 30_000 },
            Region { ref_id: 1, start: 100_000, end: 100_001 },
            Region { ref_id: 1, start: 250_000, end: i64::MAX },
        ];
        let files: Vec<Arc<IndexedFile>> =
            paths.iter().map(|p| Arc::new(IndexedFile::open(p, &IndexedOptions::default(), &|_| {}).unwrap())).collect();
        assert_eq!((files[0].bam().is_some(), files[2].is_cram()), (true, true));
        for region in regions {
            for rule in [Rule::Overlap, Rule::StartsIn] {
                let picks = |&(tid, pos, end, _): &(i32, i64, i64, Vec<u8>)| {
                    tid == region.ref_id
                        && (tid < 0
                            || match rule {
                                Rule::Overlap => pos < region.end && end > region.start.max(0),
                                Rule::StartsIn => pos >= region.start && pos < region.end,
                            })
                };
                let want: Vec<Vec<u8>> = all.iter().filter(|r| picks(r)).map(|r| r.3.clone()).collect();
                assert!(region.ref_id < 0 || region.end - region.start < 10 || !want.is_empty(), "{region}: a region without records tests little");
                for (file, path) in files.iter().zip(&paths) {
                    let what = format!("{} {region} {rule:?}", path.display());
                    assert_eq!(names(&mut file.query(region, rule).unwrap()), want, "{what}");
                    for batch in [1, 7, 100_000] {
                        let mut cursor = Cursor::new(file.clone(), [(region, rule)]);
                        let mut got = Vec::new();
                        while cursor.fill(batch, &mut |r| got.push(r.name().to_vec())).unwrap() > 0 {}
                        assert_eq!(got, want, "{what}, cursor in batches of {batch}");
                    }
                    if rule == Rule::Overlap && region.ref_id >= 0 {
                        // Pieces cut at 5 kb, each read from its own start
                        // (the first from the region's), tile the overlap.
                        let from = region.start.max(0);
                        let mut cuts: Vec<i64> = (1..).map(|i| from + i * 5000).take_while(|&c| c < region.end.min(400_000)).collect();
                        cuts.push(region.end);
                        let (mut got, mut start) = (Vec::new(), i64::MIN);
                        for (i, &cut) in cuts.iter().enumerate() {
                            let offset_pos = if i == 0 { from } else { start };
                            let scope = Region { ref_id: region.ref_id, start, end: cut };
                            file.piece(scope, offset_pos)
                                .unwrap()
                                .for_each_record(|r| {
                                    if r.end_pos() > from {
                                        got.push(r.name().to_vec());
                                    }
                                })
                                .unwrap();
                            start = cut;
                        }
                        assert_eq!(got, want, "{what}, in pieces");
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// One policy: no index refuses (or builds one in memory when asked);
    /// a pipe cannot be read by region; a named index is checked.
    #[test]
    fn the_index_policy() {
        let dir = scratch("indexed-policy");
        let paths = three_formats(&dir);
        for (path, index) in paths.iter().zip(["x.bam.bai", "x.sam.gz.csi", "x.cram.crai"]) {
            let moved = dir.join(format!("moved-{index}"));
            std::fs::rename(dir.join(index), &moved).unwrap();
            let err = IndexedFile::open(path, &IndexedOptions::default(), &|_| {}).err().expect("refused").to_string();
            assert_eq!(err, format!("{}: cannot load index (regions are read through the index: fasthts index it first)", path.display()));
            let built = IndexedOptions { without_index: WithoutIndex::Build, ..Default::default() };
            let file = IndexedFile::open(path, &built, &|_| {}).unwrap();
            assert!(file.query(Region::whole(0), Rule::Overlap).unwrap().next_record().unwrap().is_some());
            let named = IndexedOptions { index: Some(moved.clone()), ..Default::default() };
            IndexedFile::open(path, &named, &|_| {}).unwrap();
            std::fs::rename(&moved, dir.join(index)).unwrap();
        }
        // An index made for another file, named: refused, naming it.
        let foreign = IndexedOptions { index: Some(data("long_ref.bam.csi")), ..Default::default() };
        let err = IndexedFile::open(&paths[0], &foreign, &|_| {}).err().expect("refused").to_string();
        assert!(err.starts_with(&format!("{}: ", data("long_ref.bam.csi").display())), "{err}");
        let err = IndexedFile::open(Path::new("-"), &IndexedOptions::default(), &|_| {}).err().expect("refused").to_string();
        assert!(err.contains("not a regular file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
