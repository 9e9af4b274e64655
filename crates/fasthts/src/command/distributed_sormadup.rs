//! `sormadup` on many machines: the steps `fasthts.dask.sormadup` runs as
//! tasks, with files on a shared filesystem between them, giving the
//! records of the one-machine [`super::sormadup_file`] (and so of samtools
//! collate, fixmate -m, sort and markdup). It stands on the distributed
//! sort ([`crate::sort::distributed`]: splits, samples, part boundaries,
//! the output assembled from the parts' blocks):
//!
//! 1. [`collate_split`] on every split of the input: each record to the
//!    file of its samtools collate bucket (the name's hash, of
//!    [`COLLATE_BUCKETS`]), in file order. A name's records all land in
//!    one bucket, so no name group is cut.
//! 2. [`fixmate_buckets`] on runs of whole buckets: each bucket's records
//!    (its files in split order: input order) sorted as samtools collate
//!    sorts a bucket, through fixmate -m, each fixed record to the file of
//!    the coordinate part that owns it. A part's files, taken in bucket
//!    order, hold its records in the order the one-machine sort receives
//!    them, so its ties come out the same.
//!
//!    An input whose header says it is grouped by name is not collated
//!    (unless asked), as on one machine: [`fixmate_split`] fixes each
//!    split's name groups in input order instead of steps 1 and 2, a group
//!    cut by a split's end fixed by the split it starts in.
//! 3. [`sort_fixed_part`] on every part: its files sorted by coordinate
//!    into a file of raw records, with how far its records reach.
//! 4. [`mark_parts`] on every part: duplicates marked from the part's
//!    first record at which markdup may start afresh
//!    ([`MarkdupOptions::independent_start`]; the records before it are
//!    handed over to the part before), on through the records of the parts
//!    after it up to theirs; written as a BAM whose record blocks the
//!    distributed sort's assembly places into the output.

use super::markdup::{MarkdupSummary, MarkedOutput};
use super::sormadup::{chain_header, grouped_by_name, COLLATE_BUCKETS};
use crate::bam::{BamFile, Header, RecordRef};
use crate::bgzf::VirtualOffset;
use crate::fixmate::{Fixmate, FixmateOptions, MateRecord};
use crate::markdup::{MarkdupOptions, Marker, Reach};
use crate::record_output::OutputFormat;
use crate::sort::distributed::{self as dist, Part, Shuffled, Split};
use crate::sort::{Comparator, RunReader, SortOptions, SortOrder};
use crate::Error;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// What [`plan`] found: the splits of the inputs and whether their records
/// are collated (as the one-machine sormadup decides from the header).
pub struct Planned {
    /// `(input's position, split)`, in input order.
    pub splits: Vec<(usize, Split)>,
    /// Whether the records go through samtools collate's order.
    pub collate: bool,
}

/// Checks the inputs (BAM files with the same references, read as
/// `samtools cat` would join them), the output (BAM) and the options, and
/// cuts each input into about `pieces` splits. Refuses what the cluster
/// cannot do as the one-machine sormadup does, in words: several inputs
/// grouped by name without `always_collate` (a group could continue from
/// one into the next), `-S` (its second pass needs every part's duplicates
/// first), CRAM inputs.
pub fn plan(
    inputs: &[PathBuf],
    output: &Path,
    pieces: usize,
    always_collate: bool,
    marking: &MarkdupOptions,
    report: &dyn crate::report::Report,
) -> Result<Planned, Error> {
    Marker::new(marking)?;
    if marking.mark_supplementary {
        return Err(Error::InvalidArgument(
            "mark_supplementary (-S) is not supported by fasthts.dask.sormadup: its second pass needs the duplicates of every part; use fasthts.sormadup"
                .into(),
        ));
    }
    let splits = dist::plan(inputs, output, pieces, None, report)?;
    let first = dist::open_input(&inputs[0])?;
    for path in &inputs[1..] {
        dist::open_input(path)?;
    }
    let header = first.header();
    crate::sort::check_editable(header)?;
    if (0..header.references.len()).any(|i| header.reference_len(i) > i32::MAX as u64) {
        return Err(Error::Message("output format is not compatible with very large references".into()));
    }
    let collate = always_collate || !grouped_by_name(&header.text);
    if !collate && inputs.len() > 1 {
        return Err(Error::Message(
            "its header says it is grouped by name: fasthts.dask.sormadup keeps that order for one input only (a name group could continue in the next input); pass collate=True, or join the inputs first".into(),
        )
        .with_path(&inputs[0]));
    }
    Ok(Planned { splits, collate })
}

/// Appends each record of `split`, from `entry` on, to `outputs[b]` where
/// `b` is samtools collate's bucket of its name ([`COLLATE_BUCKETS`]
/// files), in file order; the files are created (or emptied, when the
/// task runs again) first. Reports where the split's records began and
/// where the next split's begin, as [`dist::shuffle_split`] does.
pub fn collate_split(bam: &BamFile, split: Split, entry: VirtualOffset, outputs: &[PathBuf]) -> Result<Shuffled, Error> {
    if outputs.len() != COLLATE_BUCKETS as usize {
        return Err(Error::InvalidArgument(format!("{} bucket files, where collate has {COLLATE_BUCKETS}", outputs.len())));
    }
    let mut files = create_all(outputs)?;
    let entry = dist::at_block_start(bam, entry);
    let mut records = bam.records_from(entry)?;
    records.set_soft_limit(split.end);
    let mut count = 0;
    let exit = loop {
        if !records.advance()? {
            break None;
        }
        let start = dist::at_block_start(bam, records.record_start());
        if start.compressed() >= split.end {
            break Some(start);
        }
        let r = records.current();
        let b = crate::collate::bucket_of(r.name(), COLLATE_BUCKETS);
        append(&mut files[b], r.as_bytes(), &outputs[b])?;
        count += 1;
    };
    finish_all(files, outputs)?;
    Ok(Shuffled { entry, exit, records: count })
}

/// Creates (or empties) one buffered file per path.
fn create_all(paths: &[PathBuf]) -> Result<Vec<BufWriter<File>>, Error> {
    paths.iter().map(|p| File::create(p).map(|f| BufWriter::with_capacity(64 << 10, f)).map_err(|e| Error::from(e).with_path(p))).collect()
}

/// Appends a record (`block_size`, then `data`).
fn append(file: &mut BufWriter<File>, data: &[u8], path: &Path) -> Result<(), Error> {
    file.write_all(&(data.len() as u32).to_le_bytes()).and_then(|()| file.write_all(data)).map_err(|e| Error::from(e).with_path(path))
}

/// Flushes and syncs the files.
fn finish_all(files: Vec<BufWriter<File>>, paths: &[PathBuf]) -> Result<(), Error> {
    for (f, p) in files.into_iter().zip(paths) {
        f.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_data()).map_err(|e| Error::from(e).with_path(p))?;
    }
    Ok(())
}

/// For an input grouped by name, not collated (as the one-machine
/// sormadup keeps such an input's order): the name groups of `split`,
/// from `entry` on, fixed as `samtools fixmate -m` fixes them (`fix`,
/// with `mate_score` on), each fixed record appended to `outputs[p]` of
/// the coordinate part `p` that owns it (`boundaries`). A group belongs to
/// the split its first record is in, as far as each task can tell without
/// the others: a split after the first (`first` false) leaves out the
/// group its first record is in (the split before reads on through it),
/// and every split reads on past its end through the group of the next
/// split's first record. Reports where the split's records began and
/// where the next split's begin, as [`dist::shuffle_split`] does.
pub fn fixmate_split(
    bam: &BamFile,
    split: Split,
    entry: VirtualOffset,
    first: bool,
    fix: FixmateOptions,
    boundaries: &[Vec<u8>],
    outputs: &[PathBuf],
) -> Result<Shuffled, Error> {
    let header = bam.header();
    let cmp = Comparator::new(SortOrder::Coordinate, &header.text);
    let reference_lens: Vec<i64> = (0..header.references.len()).map(|i| header.reference_len(i) as i64).collect();
    let mut fixmate = Fixmate::new(FixmateOptions { mate_score: true, ..fix }, reference_lens);
    let mut files = create_all(outputs)?;
    let mut encoded = Vec::new();
    let mut write = |r: &MateRecord| -> Result<(), Error> {
        encoded.clear();
        r.append_to(&mut encoded, false)?;
        let p = dist::part_of(&RecordRef::new_prevalidated(&encoded[4..]), boundaries, &cmp);
        append(&mut files[p], &encoded[4..], &outputs[p])
    };
    let entry = dist::at_block_start(bam, entry);
    let mut records = bam.records_from(entry)?;
    records.set_soft_limit(split.end);
    // The name of the group left to the split before, while skipping it;
    // the name of the group read on through past the split's end.
    let mut skipping: Option<Vec<u8>> = None;
    let mut reading_on: Option<Vec<u8>> = None;
    let (mut exit, mut count, mut at_end, mut seen) = (None, 0u64, false, false);
    loop {
        if !records.advance()? {
            at_end = true;
            break;
        }
        let start = dist::at_block_start(bam, records.record_start());
        let r = records.current();
        if !seen {
            seen = true;
            if !first {
                skipping = Some(r.name().to_vec());
            }
        }
        if exit.is_none() && start.compressed() >= split.end {
            exit = Some(start);
            if skipping.is_some() {
                // The first group runs past the split: the split before's.
                break;
            }
            reading_on = Some(r.name().to_vec());
        }
        if reading_on.as_deref().is_some_and(|name| name != r.name()) {
            break;
        }
        if let Some(name) = &skipping {
            if name.as_slice() == r.name() {
                continue;
            }
            skipping = None;
        }
        fixmate.push(r.as_bytes(), false, &mut write)?;
        count += 1;
    }
    // Only the split that reads to the end of the input sees its end.
    match at_end {
        true => fixmate.finish(&mut write)?,
        false => fixmate.end_group(&mut write)?,
    }
    finish_all(files, outputs)?;
    Ok(Shuffled { entry, exit, records: count })
}

/// The buckets whose files `buckets` are (each bucket's files from every
/// split, in split order), in bucket order: each bucket's records sorted
/// as samtools collate sorts a bucket, then fixed as `samtools fixmate
/// -m` fixes them (`fix`, with `mate_score` on), each fixed record
/// appended to `outputs[p]` of the coordinate part `p` that owns it
/// (`boundaries`, from the distributed sort's samples). `last`: these are
/// the last buckets (samtools' `-r` drops a mapped record left waiting at
/// the end of the input only there). Returns the records written.
pub fn fixmate_buckets(
    header: &Header,
    buckets: &[Vec<PathBuf>],
    last: bool,
    fix: FixmateOptions,
    boundaries: &[Vec<u8>],
    outputs: &[PathBuf],
) -> Result<u64, Error> {
    let cmp = Comparator::new(SortOrder::Coordinate, &header.text);
    let reference_lens: Vec<i64> = (0..header.references.len()).map(|i| header.reference_len(i) as i64).collect();
    let mut fixmate = Fixmate::new(FixmateOptions { mate_score: true, ..fix }, reference_lens);
    let mut files = create_all(outputs)?;
    let mut written = 0u64;
    let mut encoded = Vec::new();
    let mut write = |r: &MateRecord| -> Result<(), Error> {
        encoded.clear();
        r.append_to(&mut encoded, false)?;
        let p = dist::part_of(&RecordRef::new_prevalidated(&encoded[4..]), boundaries, &cmp);
        append(&mut files[p], &encoded[4..], &outputs[p])?;
        written += 1;
        Ok(())
    };
    let n_ref = header.references.len();
    let (mut arena, mut keyed) = (Vec::new(), Vec::new());
    for files in buckets {
        arena.clear();
        for path in files {
            File::open(path).and_then(|mut f| f.read_to_end(&mut arena)).map_err(|e| Error::from(e).with_path(path))?;
        }
        crate::collate::keyed_records(&arena, &mut keyed);
        crate::collate::sort_bucket(&arena, &mut keyed);
        for k in &keyed {
            let data = &k.bytes(&arena)[4..];
            // Bucket files come from other tasks: check each record once.
            RecordRef::new(data, n_ref).map_err(|defect| Error::Message(format!("invalid record in bucket file: {defect}")))?;
            fixmate.push(data, false, &mut write)?;
        }
    }
    match last {
        true => fixmate.finish(&mut write)?,
        false => fixmate.end_group(&mut write)?,
    }
    finish_all(files, outputs)?;
    Ok(written)
}

/// What [`sort_fixed_part`] made: the records of a part, sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortedPart {
    /// Records in the part.
    pub records: u64,
    /// How far they reach (`None`: no records).
    pub reach: Option<Reach>,
}

/// Sorts the fixed records of one part (its files from every run of
/// buckets, in bucket order) by coordinate as the one-machine sort does
/// (ties in the order given), into `output`: raw records (`block_size`
/// and data), for [`mark_parts`]. `memory` bounds the sort's batches;
/// runs spill under `temp_prefix`.
pub fn sort_fixed_part(header: &Header, fixed: &[PathBuf], memory: usize, temp_prefix: &Path, output: &Path) -> Result<SortedPart, Error> {
    let n_ref = header.references.len();
    let options = SortOptions::bam(SortOrder::Coordinate, memory, crate::bgzf::DEFAULT_LEVEL, temp_prefix.to_path_buf());
    let feed = |push: &mut crate::sort::Push<'_>| -> Result<(), Error> {
        for path in fixed {
            let mut run = RunReader::open(path, 1 << 20)?;
            while run.advance()? {
                let r = RecordRef::new(&run.record[4..], n_ref)
                    .map_err(|defect| Error::Message(format!("invalid record in part file: {defect}")).with_path(path))?;
                push(&r)?;
            }
        }
        Ok(())
    };
    let consume = |produce: &mut crate::sort::Produce<'_>| -> Result<SortedPart, Error> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(output).map_err(|e| Error::from(e).with_path(output))?);
        let mut sorted = SortedPart { records: 0, reach: None };
        produce(&mut |record| {
            sorted.reach = Some(Reach::extend(sorted.reach, &RecordRef::new_prevalidated(&record[4..])));
            sorted.records += 1;
            out.write_all(record).map_err(|e| Error::from(e).with_path(output))
        })?;
        out.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_data()).map_err(|e| Error::from(e).with_path(output))?;
        Ok(sorted)
    };
    Ok(crate::sort::sort_records_into(header, &options, false, feed, consume)?.1)
}

/// The header the output gets: the one-machine sormadup's
/// (`program`: this run's @PG line).
pub fn output_header_of(input_header: &Header, collate: bool, program: &Option<(String, String)>) -> Header {
    chain_header(input_header, collate, program)
}

/// Marks the duplicates of the part whose sorted records are `sorted[0]`
/// (the parts after it follow in `sorted[1..]`; `before`: the reaches of
/// the parts before it, in order; `first`: it is the output's first part)
/// and writes them as the BAM `output` under `header`, compressed at
/// `level`. The records from the part's first independent start (see
/// [`MarkdupOptions::independent_start`]; the first part's first record)
/// are marked, on into the parts after it up to their first independent
/// start; those before it are the part before's. Returns where its
/// records lie in `output`, and markdup's counts and warnings for them.
pub fn mark_parts(
    header: &Header,
    sorted: &[PathBuf],
    before: &[Option<Reach>],
    first: bool,
    marking: &MarkdupOptions,
    level: u32,
    output: &Path,
) -> Result<(Part, MarkdupSummary), Error> {
    let n_ref = header.references.len();
    let mut marker = Marker::new(marking)?;
    let mut reach = Reach::join(before.iter().copied());
    let mut out = MarkedOutput::open(output, header, OutputFormat::Bam, level, Default::default(), None)?;
    let mut started = first;
    'parts: for (q, path) in sorted.iter().enumerate() {
        let mut run = RunReader::open(path, 1 << 20)?;
        while run.advance()? {
            let r = RecordRef::new(&run.record[4..], n_ref)
                .map_err(|defect| Error::Message(format!("invalid record in sorted part: {defect}")).with_path(path))?;
            let independent = marking.independent_start(reach, &r);
            if q == 0 && !started && independent {
                started = true;
            } else if q > 0 && independent {
                // The next part marks from here.
                break 'parts;
            }
            reach = Some(Reach::extend(reach, &r));
            if started {
                marker.push(&r, &mut |d| out.emit(d))?;
            }
        }
        if !started {
            // No independent start in the part: the part before marks it all.
            break;
        }
    }
    marker.finish(&mut |d| out.emit(d))?;
    let written = marker.stats().written;
    out.finish(&mut marker)?;
    let part = dist::part_layout(&BamFile::open(output)?, written)?;
    Ok((part, MarkdupSummary { stats: *marker.stats(), warnings: marker.take_warnings() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sam::SamReader;

    /// The generator's records, grouped by name and fixed as `fixmate -m`
    /// fixes them, in coordinate order (ties in fixmate's order).
    fn fixed_in_coordinate_order(args: &[&str]) -> Vec<Vec<u8>> {
        let sam = fasthts_testgen::cli::sam(args).unwrap();
        let mut reader = SamReader::new(&sam[..]).unwrap();
        let header = reader.header().clone();
        let mut records: Vec<Vec<u8>> = Vec::new();
        reader
            .for_each_record(|r| {
                records.push(r.as_bytes().to_vec());
                Ok::<_, Error>(())
            })
            .unwrap();
        records.sort_by(|a, b| RecordRef::new_prevalidated(a).name().cmp(RecordRef::new_prevalidated(b).name()));
        let lens = (0..header.references.len()).map(|i| header.reference_len(i) as i64).collect();
        let mut fixmate = Fixmate::new(FixmateOptions { mate_score: true, ..FixmateOptions::default() }, lens);
        let mut fixed = Vec::new();
        let mut write = |r: &MateRecord| {
            let mut encoded = Vec::new();
            r.append_to(&mut encoded, false)?;
            fixed.push(encoded[4..].to_vec());
            Ok(())
        };
        for r in &records {
            fixmate.push(r, false, &mut write).unwrap();
        }
        fixmate.finish(&mut write).unwrap();
        let key = |r: &[u8]| {
            let r = RecordRef::new_prevalidated(r);
            (r.ref_id() as u32, r.pos(), r.flag() & crate::bam::flags::REVERSE)
        };
        fixed.sort_by_key(|r| key(r));
        fixed
    }

    /// Records marked by one marker: what it hands on, and its counts.
    fn marked(records: &[Vec<u8>], options: &MarkdupOptions) -> (Vec<u8>, crate::markdup::MarkdupStats) {
        let mut marker = Marker::new(options).unwrap();
        let mut out = Vec::new();
        for r in records {
            marker
                .push(&RecordRef::new_prevalidated(r), &mut |d| {
                    out.extend_from_slice(d);
                    Ok(())
                })
                .unwrap();
        }
        marker
            .finish(&mut |d| {
                out.extend_from_slice(d);
                Ok(())
            })
            .unwrap();
        (out, *marker.stats())
    }

    /// Cut at every independent start (every record where a fresh marker
    /// may begin), the pieces marked each by a marker of its own give the
    /// one marker's records and counts, for markdup's options; dense data
    /// has such starts only at references' starts, sparse data many more.
    #[test]
    fn pieces_cut_at_independent_starts_mark_as_one_marker() {
        let common = ["-q", "--dup-fraction", "0.4", "--single-end-fraction", "0.08", "--chimeric-fraction", "0.05"];
        let dense = [&common[..], &["--seed", "11", "--reads", "3000", "--refs", "3", "--ref-len", "40000"]].concat();
        let sparse = [&common[..], &["--seed", "12", "--reads", "2000", "--refs", "4", "--ref-len", "3000000"]].concat();
        for (args, at_least) in [(dense, 2), (sparse, 300)] {
            let records = fixed_in_coordinate_order(&args);
            let option_sets = [
                MarkdupOptions::default(),
                MarkdupOptions { remove_duplicates: true, max_read_length: 150, ..MarkdupOptions::default() },
                MarkdupOptions { tag_originals: true, optical_distance: 100, ..MarkdupOptions::default() },
                MarkdupOptions { mode: crate::markdup::DuplicateMode::Sequence, include_fails: true, ..MarkdupOptions::default() },
            ];
            for options in option_sets {
                let whole = marked(&records, &options);
                assert!(whole.1.duplicate_pair > 0);
                let mut starts = vec![0];
                let mut reach = None;
                for (i, r) in records.iter().enumerate() {
                    let r = RecordRef::new_prevalidated(r);
                    if i > 0 && options.independent_start(reach, &r) {
                        starts.push(i);
                    }
                    reach = Some(Reach::extend(reach, &r));
                }
                assert!(starts.len() > at_least, "{} independent starts", starts.len());
                let ends = starts.iter().skip(1).copied().chain([records.len()]);
                let (mut bytes, mut stats) = (Vec::new(), crate::markdup::MarkdupStats::default());
                for (s, e) in starts.iter().copied().zip(ends) {
                    let (b, st) = marked(&records[s..e], &options);
                    bytes.extend_from_slice(&b);
                    stats.read += st.read;
                    stats.written += st.written;
                    stats.examined += st.examined;
                    stats.duplicate_pair += st.duplicate_pair;
                    stats.duplicate_single += st.duplicate_single;
                    stats.duplicate_pair_optical += st.duplicate_pair_optical;
                }
                assert!(bytes == whole.0, "{options:?}");
                let w = whole.1;
                let got =
                    (stats.read, stats.written, stats.examined, stats.duplicate_pair, stats.duplicate_single, stats.duplicate_pair_optical);
                assert_eq!(got, (w.read, w.written, w.examined, w.duplicate_pair, w.duplicate_single, w.duplicate_pair_optical));
                // A record just inside the window of one before is no independent start.
                let first = RecordRef::new_prevalidated(&records[starts[1]]);
                let reach = Some(Reach { tid: first.ref_id(), end: i64::from(first.pos()) - 10 });
                assert!(first.ref_id() < 0 || !options.independent_start(reach, &first));
            }
        }
    }

    #[test]
    fn reaches_join_in_order() {
        let r = |tid, end| Some(Reach { tid, end });
        assert_eq!(Reach::join([r(0, 50), None, r(0, 40)]), r(0, 50));
        assert_eq!(Reach::join([r(0, 50), r(1, 10)]), r(1, 10));
        assert_eq!(Reach::join([None, None]), None);
    }
}
