//! `collate`: samtools 1.16's grouping of records by read name, in
//! samtools' exact order ([`crate::collate`]). Records are dealt into
//! samtools' buckets in memory; past a memory budget the buckets are
//! appended to files in a temporary directory (removed when the run ends,
//! also on SIGINT/SIGTERM; one a killed run left is removed by the next
//! run that uses the prefix). The buckets are then sorted on the pool and
//! written in order.

use super::fixmate::{output_header, read_all, RecordsOut};
use super::{warn_after_reading, warn_if_truncated, with_threads, Report};
use crate::bam::Header;
use crate::collate::{bucket_of, keyed_records, sort_bucket, FastPairing, FastStep, Keyed};
use crate::cram::{CramOptions, CramWriteOptions};
use crate::input::{self, Input};
use crate::record_output::OutputFormat;
use crate::Error;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Records held in memory before the buckets are spilled, by default.
pub const COLLATE_DEFAULT_MEMORY: usize = 768 << 20;

/// `fasthts collate`'s options.
#[derive(Clone, Debug)]
pub struct CollateOptions {
    /// Number of buckets (samtools' `-n`, its temporary files) [64]: the
    /// output order depends on it.
    pub buckets: u32,
    /// `-f` with `-r`: fast mode, pairing primary READ1/READ2 records
    /// within a window of this many stored records (others are left out).
    pub fast: Option<usize>,
    /// Output format.
    pub format: OutputFormat,
    /// Compression level (samtools' `-l`, 1 by default; `-u`: 0).
    pub level: Option<u32>,
    /// Temporary files go to `PREFIX.fasthts-collate.PID.tmp/`.
    pub temp_prefix: PathBuf,
    /// Record bytes held in memory before the buckets are spilled.
    pub memory: usize,
    /// `(version, command line)` of the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
    /// Worker threads (all cores when `None`).
    pub threads: Option<usize>,
    /// Reference FASTA of a CRAM input and output.
    pub reference: Option<PathBuf>,
    /// htslib's CRAM output options (`OPT=VAL`).
    pub cram_options: Vec<String>,
}

impl Default for CollateOptions {
    fn default() -> Self {
        CollateOptions {
            buckets: 64,
            fast: None,
            format: OutputFormat::Bam,
            level: Some(1),
            temp_prefix: std::env::temp_dir().join("collate"),
            memory: COLLATE_DEFAULT_MEMORY,
            program: None,
            threads: None,
            reference: None,
            cram_options: Vec::new(),
        }
    }
}

/// samtools collate's header edit (`sam_hdr_update_hd(h, "SO",
/// "unsorted", "GO", "query")`, or a new `@HD VN:1.6 SO:unsorted
/// GO:query`), with the @HD line first as htslib rebuilds the text.
pub(super) fn collate_header_text(text: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&c| c == b'\n').collect();
    let hd = lines.iter().position(|l| l.starts_with(b"@HD\t"));
    let mut fields: Vec<Vec<u8>> = match hd {
        Some(i) => lines[i].strip_suffix(b"\n").unwrap_or(lines[i]).split(|&c| c == b'\t').skip(1).map(<[u8]>::to_vec).collect(),
        None => vec![b"VN:1.6".to_vec()],
    };
    for (tag, value) in [(&b"SO:"[..], &b"unsorted"[..]), (b"GO:", b"query")] {
        let field = [tag, value].concat();
        match fields.iter().position(|f| f.starts_with(tag)) {
            Some(i) => fields[i] = field,
            None => fields.push(field),
        }
    }
    let mut out = b"@HD".to_vec();
    for f in fields {
        out.push(b'\t');
        out.extend_from_slice(&f);
    }
    out.push(b'\n');
    for (i, line) in lines.iter().enumerate() {
        if Some(i) != hd {
            out.extend_from_slice(line);
        }
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    out
}

/// The directory of spilled buckets: created when first needed, removed
/// with its files when dropped (and by the signal handler, as a
/// registered temporary).
struct SpillDir {
    prefix: PathBuf,
    path: Option<PathBuf>,
}

impl SpillDir {
    fn path(&mut self) -> Result<&Path, Error> {
        if self.path.is_none() {
            let name = self.prefix.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let parent = self.prefix.parent().map(Path::to_path_buf).unwrap_or_default();
            let stem = format!("{name}.fasthts-collate.");
            crate::output::remove_stale(&parent, &stem, ".tmp");
            let mut path = self.prefix.as_os_str().to_owned();
            path.push(format!(".fasthts-collate.{}.tmp", std::process::id()));
            let path = PathBuf::from(path);
            crate::output::create_temporary_dir(&path).map_err(|e| Error::from(e).with_path(&path))?;
            self.path = Some(path);
        }
        Ok(self.path.as_deref().expect("created"))
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_dir_all(path);
            crate::output::unregister_temporary(path);
        }
    }
}

/// samtools' buckets: each a byte buffer of records (`block_size` and
/// data), appended to its own file when the buffers outgrow the budget.
struct Buckets {
    memory: Vec<Vec<u8>>,
    spilled: Vec<Option<BufWriter<File>>>,
    held: usize,
    budget: usize,
    dir: SpillDir,
}

impl Buckets {
    fn new(count: usize, budget: usize, prefix: &Path) -> Buckets {
        Buckets {
            memory: vec![Vec::new(); count],
            spilled: (0..count).map(|_| None).collect(),
            held: 0,
            budget,
            dir: SpillDir { prefix: prefix.to_path_buf(), path: None },
        }
    }

    fn file_name(&self, bucket: usize) -> Option<PathBuf> {
        self.dir.path.as_ref().map(|d| d.join(format!("{bucket:04}.bucket")))
    }

    /// Adds one record (`block_size` and data) to `bucket`.
    fn push(&mut self, bucket: usize, record: &[u8]) -> Result<(), Error> {
        self.push_parts(bucket, &[record])
    }

    /// Adds one record given in parts (`block_size`, then data) to `bucket`.
    fn push_parts(&mut self, bucket: usize, parts: &[&[u8]]) -> Result<(), Error> {
        for part in parts {
            self.memory[bucket].extend_from_slice(part);
            self.held += part.len();
        }
        if self.held > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Appends every buffer to its bucket's file.
    fn spill(&mut self) -> Result<(), Error> {
        for bucket in 0..self.memory.len() {
            if self.memory[bucket].is_empty() {
                continue;
            }
            if self.spilled[bucket].is_none() {
                let path = self.dir.path()?.join(format!("{bucket:04}.bucket"));
                let file = File::create(&path).map_err(|e| Error::from(e).with_path(&path))?;
                self.spilled[bucket] = Some(BufWriter::with_capacity(1 << 16, file));
            }
            let path = self.file_name(bucket).expect("the directory exists");
            let w = self.spilled[bucket].as_mut().expect("opened");
            w.write_all(&self.memory[bucket]).map_err(|e| Error::from(e).with_path(&path))?;
            self.memory[bucket].clear();
        }
        self.held = 0;
        Ok(())
    }

    /// Ends the writing: the spilled files flushed and closed.
    fn close_files(&mut self) -> Result<Vec<Option<PathBuf>>, Error> {
        let mut names = Vec::with_capacity(self.spilled.len());
        for bucket in 0..self.spilled.len() {
            match self.spilled[bucket].take() {
                Some(mut w) => {
                    let path = self.file_name(bucket).expect("the directory exists");
                    w.flush().map_err(|e| Error::from(e).with_path(&path))?;
                    names.push(Some(path));
                }
                None => names.push(None),
            }
        }
        Ok(names)
    }
}

/// samtools collate of `input` (BAM, SAM or CRAM; `-` for standard input)
/// to `output` (`-`: standard output; a file appears complete or not at
/// all), in samtools 1.16's order.
pub fn collate_file(input: &Path, output: &Path, options: &CollateOptions, report: &dyn Report) -> Result<(), Error> {
    if options.buckets < 1 {
        return Err(Error::InvalidArgument("the number of temporary files (-n) must be at least 1".into()));
    }
    if options.level.is_some_and(|l| l > 9) {
        return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
    }
    if output.as_os_str() != "-" {
        crate::output::refuse_input_as_output(&[output], &[input])?;
    }
    with_threads(options.threads, || {
        let threads = rayon::current_num_threads();
        let cram = CramOptions { reference: options.reference.clone(), threads, ..CramOptions::default() };
        // A SAM record past BAM's 32-bit positions is refused (the SAM
        // reader's default), whatever the output: samtools fails writing
        // it to its BAM temporary file.
        let mut opened = input::open_with(input, &cram)?;
        if let Input::Bam(bam) = &opened {
            warn_if_truncated(bam, report);
        }
        let header = opened.header();
        let edited = Header { text: collate_header_text(&header.text), references: header.references.clone() };
        let out_header = output_header(&edited, &options.program);
        let write_options = CramWriteOptions { reference: options.reference.clone(), options: options.cram_options.clone(), level: None };
        let mut out = RecordsOut::open(output, &out_header, options.format, options.level, &write_options)?;
        let mut buckets = Buckets::new(options.buckets as usize, options.memory, &options.temp_prefix);
        let count = options.buckets;
        let mut record = Vec::new();
        let mut handle = |r: &crate::bam::RecordRef<'_>| -> Result<(), Error> {
            let bytes = r.as_bytes();
            buckets.push_parts(bucket_of(r.name(), count), &[&(bytes.len() as u32).to_le_bytes(), bytes])
        };
        match options.fast {
            None => read_all(&mut opened, input, &mut handle)?,
            Some(store) => {
                let mut pairing = FastPairing::new(store);
                let mut fast = |r: &crate::bam::RecordRef<'_>| -> Result<(), Error> {
                    let bytes = r.as_bytes();
                    record.clear();
                    record.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    record.extend_from_slice(bytes);
                    match pairing.push(&record) {
                        FastStep::Dropped | FastStep::Stored { evicted: None } => Ok(()),
                        FastStep::Stored { evicted: Some(slot) } => {
                            let stored = pairing.slot(slot);
                            buckets.push(bucket_of(name_of(stored), count), stored)
                        }
                        FastStep::Paired { slot, new_is_read1 } => {
                            let (first, second) =
                                if new_is_read1 { (&record[..], pairing.slot(slot)) } else { (pairing.slot(slot), &record[..]) };
                            out.write(first)?;
                            out.write(second)
                        }
                    }
                };
                read_all(&mut opened, input, &mut fast)?;
                for stored in pairing.leftovers() {
                    buckets.push(bucket_of(name_of(stored), count), stored)?;
                }
            }
        }
        warn_after_reading(&mut opened, input, report);
        drop(opened);
        let files = buckets.close_files()?;
        let memory: Vec<Mutex<Vec<u8>>> = std::mem::take(&mut buckets.memory).into_iter().map(Mutex::new).collect();
        crate::gather::fill_in_order(
            files.len(),
            |_| (Vec::new(), Vec::<Keyed>::new()),
            |i, (arena, keyed): &mut (Vec<u8>, Vec<Keyed>)| -> Result<(), Error> {
                arena.clear();
                if let Some(path) = &files[i] {
                    File::open(path).and_then(|mut f| f.read_to_end(arena)).map_err(|e| Error::from(e).with_path(path))?;
                    // Read once: its disk space is freed now.
                    let _ = std::fs::remove_file(path);
                }
                let held = std::mem::take(&mut *memory[i].lock().expect("not poisoned"));
                if arena.is_empty() {
                    // Never spilled: the bucket's buffer is the arena.
                    *arena = held;
                } else {
                    arena.extend_from_slice(&held);
                }
                keyed_records(arena, keyed);
                sort_bucket(arena, keyed);
                Ok(())
            },
            |(arena, keyed)| {
                for k in keyed {
                    out.write(k.bytes(arena))?;
                }
                Ok(())
            },
        )?;
        drop(buckets);
        out.finish()
    })
}

/// samtools collate's order (64 buckets, its default `-n`, unless told)
/// of the records `read` hands over, each given to `emit` (`block_size`
/// and data) once all are read: the buckets are held in `memory` bytes,
/// spilled to files under `temp_prefix` past that, then sorted and
/// emitted one after the other on the calling thread (`emit` may block on
/// the pool, so no pool job may wait on it).
pub(super) fn collate_records(
    read: impl FnOnce(&mut (dyn FnMut(&crate::bam::RecordRef<'_>) -> Result<(), Error> + Send)) -> Result<(), Error>,
    count: u32,
    memory: usize,
    temp_prefix: &Path,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut buckets = Buckets::new(count as usize, memory, temp_prefix);
    read(&mut |r: &crate::bam::RecordRef<'_>| {
        let bytes = r.as_bytes();
        buckets.push_parts(bucket_of(r.name(), count), &[&(bytes.len() as u32).to_le_bytes(), bytes])
    })?;
    let files = buckets.close_files()?;
    let mut arena = Vec::new();
    let mut keyed = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let held = std::mem::take(&mut buckets.memory[i]);
        match file {
            Some(path) => {
                arena.clear();
                File::open(path).and_then(|mut f| f.read_to_end(&mut arena)).map_err(|e| Error::from(e).with_path(path))?;
                // Read once: its disk space is freed now.
                let _ = std::fs::remove_file(path);
                arena.extend_from_slice(&held);
            }
            // Never spilled: the bucket's buffer is the arena.
            None => arena = held,
        }
        keyed_records(&arena, &mut keyed);
        sort_bucket(&arena, &mut keyed);
        for k in &keyed {
            emit(k.bytes(&arena))?;
        }
    }
    Ok(())
}

/// The read name of a record given with its `block_size`.
fn name_of(record: &[u8]) -> &[u8] {
    let r = &record[4..];
    let name = &r[32..32 + usize::from(r[8])];
    name.strip_suffix(b"\0").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_as_samtools_edits_it() {
        assert_eq!(
            collate_header_text(b"@HD\tVN:1.4\tSO:coordinate\n@SQ\tSN:c\tLN:9\n"),
            b"@HD\tVN:1.4\tSO:unsorted\tGO:query\n@SQ\tSN:c\tLN:9\n"
        );
        assert_eq!(collate_header_text(b"@SQ\tSN:c\tLN:9\n"), b"@HD\tVN:1.6\tSO:unsorted\tGO:query\n@SQ\tSN:c\tLN:9\n");
        assert_eq!(collate_header_text(b"@CO\tx\n@HD\tGO:none\tVN:1.5"), b"@HD\tGO:query\tVN:1.5\tSO:unsorted\n@CO\tx\n");
    }
}
