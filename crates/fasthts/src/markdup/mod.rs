//! Duplicate marking as samtools 1.16 markdup does it, on records given in
//! coordinate order (from a file, or from a sort's merge): a [`Marker`]
//! takes each record, marks duplicates among the reads within the maximum
//! read length behind it, and hands records on, in the order given, once
//! nothing can change them.
//!
//! Reads are keyed by their unclipped 5' positions and orientation (and
//! the mate's, from the `MC` tag `samtools fixmate -m` adds), in two
//! hashes as samtools keys them: pairs, and single reads (where a pair's
//! read also goes, so that a single read matching one is its duplicate).
//! Of two reads with one key, the lower score (quality sum of the read and,
//! from its `ms` tag, its mate) is the duplicate. With `-t` or `-d` the
//! duplicates of each original are then checked together (optical
//! duplicates among them; `do` tags naming the final original), as
//! samtools' "duplicate chains" are.
//!
//! The buffer, its hashes and the chains follow samtools' own, quirks
//! included (a hash entry leaves with the read that made it, whichever
//! read it points to by then; a duplicate waits until its chain is checked,
//! holding back the reads after it), since they decide which reads meet.
//! Records live in reused slots: nothing is allocated per record once the
//! buffer has grown to the depth of the data.

mod optical;
mod read_names;
mod record;

use crate::bam::RecordRef;
use crate::Error;
use optical::ChainEntry;
use read_names::{BarcodeSource, CoordsFailure, CoordsRegex, PosixRegex, Warnings};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// How paired reads' positions are compared (`--mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DuplicateMode {
    /// `t`: by the template's start and end (samtools' default).
    #[default]
    Template,
    /// `s`: by each read's sequence start.
    Sequence,
}

/// Where barcodes that duplicates must share come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Barcodes {
    /// None.
    #[default]
    None,
    /// A string tag (`--barcode-tag`).
    Tag(String),
    /// The first group of a POSIX extended regular expression on the read
    /// name (`--barcode-rgx`); `--barcode-name` is Illumina's eighth field.
    NameRegex(String),
}

impl DuplicateMode {
    /// samtools' `--mode` letter: `t` or `s`.
    pub fn from_letter(letter: &str) -> Result<DuplicateMode, Error> {
        match letter {
            "t" => Ok(DuplicateMode::Template),
            "s" => Ok(DuplicateMode::Sequence),
            _ => Err(Error::InvalidArgument(format!("invalid duplicate mode {letter:?} (t or s)"))),
        }
    }
}

impl Barcodes {
    /// From samtools' `--barcode-tag`, `--barcode-name` and
    /// `--barcode-rgx`, refusing a tag with either of the others as
    /// samtools does (a regular expression wins over `--barcode-name`).
    pub fn from_options(tag: Option<&str>, name: bool, regex: Option<&str>) -> Result<Barcodes, Error> {
        if tag.is_some() && (name || regex.is_some()) {
            return Err(Error::InvalidArgument("cannot specify --barcode-tag and --barcode-name (or --barcode-rgx) at same time".into()));
        }
        Ok(match (tag, regex) {
            (Some(tag), _) => Barcodes::Tag(tag.to_string()),
            (None, Some(regex)) => Barcodes::NameRegex(regex.to_string()),
            (None, None) if name => Barcodes::illumina_name(),
            (None, None) => Barcodes::None,
        })
    }

    /// `--barcode-name`: the UMI in the eighth colon-delimited field.
    pub fn illumina_name() -> Barcodes {
        Barcodes::NameRegex(read_names::ILLUMINA_UMI.to_string())
    }
}

/// samtools markdup's options that decide the marks.
#[derive(Clone, Debug)]
pub struct MarkdupOptions {
    /// Leave duplicates out of the output (`-r`).
    pub remove_duplicates: bool,
    /// The longest read expected (`-l`; negative: 300): how far behind
    /// the current position reads are kept for comparison.
    pub max_read_length: i64,
    /// Mark the supplementary, secondary and unmapped records of
    /// duplicates too (`-S`; a second pass over the records).
    pub mark_supplementary: bool,
    /// Tag duplicates with their original's name in `do` (`-t`).
    pub tag_originals: bool,
    /// Optical duplicate distance (`-d`; 0: none): duplicates get a `dt`
    /// tag, `SQ` for optical ones, `LB` for others.
    pub optical_distance: i64,
    /// Clear duplicate flags and `dt`/`do` tags of the input (`-c`).
    pub clear_previous: bool,
    /// How pairs are compared (`--mode`).
    pub mode: DuplicateMode,
    /// Examine QC-failed reads too (`--include-fails`).
    pub include_fails: bool,
    /// Check the duplicates of an original against each other (off with
    /// `--no-multi-dup`; only with `-t` or `-d`).
    pub check_chains: bool,
    /// `--read-coords` (a POSIX extended regular expression) and
    /// `--coords-order` (`txy`, `xyt`, `xty`, `xy` or their x/y swaps).
    pub read_coords: Option<(String, String)>,
    /// Barcodes duplicates must share.
    pub barcodes: Barcodes,
}

impl Default for MarkdupOptions {
    /// samtools markdup's defaults.
    fn default() -> Self {
        MarkdupOptions {
            remove_duplicates: false,
            max_read_length: 300,
            mark_supplementary: false,
            tag_originals: false,
            optical_distance: 0,
            clear_previous: false,
            mode: DuplicateMode::Template,
            include_fails: false,
            check_chains: true,
            read_coords: None,
            barcodes: Barcodes::None,
        }
    }
}

/// samtools markdup's counts (its `-s` report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MarkdupStats {
    /// Records read.
    pub read: u64,
    /// Records written (by the first pass: `-S` removals not subtracted).
    pub written: u64,
    /// Secondary, supplementary, unmapped (and QC-failed) records.
    pub excluded: u64,
    /// Records compared.
    pub examined: u64,
    /// Paired reads with a mapped mate.
    pub paired: u64,
    /// Other reads.
    pub single: u64,
    /// Duplicate paired reads.
    pub duplicate_pair: u64,
    /// Duplicate single reads.
    pub duplicate_single: u64,
    /// Optical duplicates among the paired.
    pub duplicate_pair_optical: u64,
    /// Optical duplicates among the single.
    pub duplicate_single_optical: u64,
    /// Supplementary, secondary and unmapped records marked (`-S`).
    pub duplicate_non_primary: u64,
    /// Those of optical duplicates.
    pub duplicate_non_primary_optical: u64,
}

impl MarkdupStats {
    /// Picard's estimate of the library size from the pairs (samtools'
    /// `estimate_library_size`), with the warning samtools prints when it
    /// cannot make one.
    pub fn estimated_library_size(&self) -> (u64, Option<String>) {
        let (reads, dups, optical) = (self.paired, self.duplicate_pair, self.duplicate_pair_optical);
        let non_optical_pairs = reads.wrapping_sub(optical) / 2;
        let unique_pairs = reads.wrapping_sub(dups) / 2;
        let duplicate_pairs = dups.wrapping_sub(optical) / 2;
        if non_optical_pairs == 0 || duplicate_pairs == 0 || unique_pairs == 0 || non_optical_pairs <= duplicate_pairs {
            let warning = format!(
                "unable to calculate estimated library size. Read pairs {} should be greater than duplicate pairs {}, which should both be non zero.",
                non_optical_pairs as i64, duplicate_pairs as i64
            );
            return (0, Some(warning));
        }
        let (c, n) = (unique_pairs as f64, non_optical_pairs as f64);
        let f = |x: f64| c / x - 1.0 + (-n / x).exp();
        let (mut m, mut big_m) = (1.0f64, 100.0f64);
        if f(m * c) < 0.0 {
            return (0, Some("unable to calculate estimated library size.".to_string()));
        }
        while f(big_m * c) > 0.0 {
            big_m *= 10.0;
        }
        for _ in 0..40 {
            let r = (m + big_m) / 2.0;
            let u = f(r * c);
            if u > 0.0 {
                m = r;
            } else if u < 0.0 {
                big_m = r;
            } else {
                break;
            }
        }
        ((c * (m + big_m) / 2.0) as u64, None)
    }

    /// samtools' statistics, as its `-s` report names them (in its order,
    /// `COMMAND` aside), with the library-size warning, if any: the one
    /// list both the report's text and Python's dict are made from.
    pub fn fields(&self) -> ([(&'static str, u64); 15], Option<String>) {
        let (library, warning) = self.estimated_library_size();
        let primary = self.duplicate_single + self.duplicate_pair;
        let fields = [
            ("READ", self.read),
            ("WRITTEN", self.written),
            ("EXCLUDED", self.excluded),
            ("EXAMINED", self.examined),
            ("PAIRED", self.paired),
            ("SINGLE", self.single),
            ("DUPLICATE PAIR", self.duplicate_pair),
            ("DUPLICATE SINGLE", self.duplicate_single),
            ("DUPLICATE PAIR OPTICAL", self.duplicate_pair_optical),
            ("DUPLICATE SINGLE OPTICAL", self.duplicate_single_optical),
            ("DUPLICATE NON PRIMARY", self.duplicate_non_primary),
            ("DUPLICATE NON PRIMARY OPTICAL", self.duplicate_non_primary_optical),
            ("DUPLICATE PRIMARY TOTAL", primary),
            ("DUPLICATE TOTAL", primary + self.duplicate_non_primary),
            (LIBRARY_SIZE, library),
        ];
        (fields, warning)
    }

    /// samtools' statistics text; `command` is the command line it shows.
    /// Returns the text and the library-size warning, if any.
    pub fn text(&self, command: &str) -> (String, Option<String>) {
        use std::fmt::Write;
        let (fields, warning) = self.fields();
        let mut text = format!("COMMAND: {command}\n");
        for (name, value) in fields {
            // samtools prints the library size as a signed long.
            let _ = match name {
                LIBRARY_SIZE => writeln!(text, "{name}: {}", value as i64),
                _ => writeln!(text, "{name}: {value}"),
            };
        }
        (text, warning)
    }
}

/// The last of samtools' statistics (its spelling, with underscores).
const LIBRARY_SIZE: &str = "ESTIMATED_LIBRARY_SIZE";

// Orientations and leftmost markers, as samtools' (primes it hashes).
const O_FF: i8 = 2;
const O_RR: i8 = 3;
const O_FR: i8 = 5;
const O_RF: i8 = 7;
const R_LE: i8 = 11;
const R_RI: i8 = 13;

/// A read's position key (samtools' `key_data_t`; a single read's key has
/// no mate fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    this_coord: i64,
    other_coord: i64,
    this_ref: i32,
    other_ref: i32,
    barcode: u32,
    leftmost: i8,
    orientation: i8,
}

/// FxHash's multiply-rotate over the key's words: quick, and the keys'
/// coordinates spread it well enough.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    fn write_i32(&mut self, n: i32) {
        self.write_u64(n as u32 as u64);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_i8(&mut self, n: i8) {
        self.write_u64(n as u8 as u64);
    }
}

type KeyMap<V> = HashMap<Key, V, BuildHasherDefault<KeyHasher>>;

const NONE: u32 = u32::MAX;

/// A read in the buffer (samtools' `read_queue_t`).
#[derive(Default)]
struct Slot {
    /// The record, with its `block_size`.
    data: Vec<u8>,
    tid: i32,
    /// Its unclipped 5' position once examined, else its position.
    pos: i64,
    /// The keys this read put into the hashes (and takes out on leaving).
    pair_key: Option<Key>,
    single_key: Option<Key>,
    /// The next read in its duplicate chain.
    duplicate: u32,
    /// Checked as part of its original's chain.
    dup_checked: bool,
    /// Its place in the input (the queue's front is `Marker::front_seq`).
    seq: u64,
}

/// Names of duplicates whose other records `-S` marks, with their
/// original's name (`-t`) and whether they are optical, in one arena.
#[derive(Default)]
struct DuplicateNames {
    arena: Vec<u8>,
    entries: Vec<DuplicateName>,
    by_hash: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
}

struct DuplicateName {
    name: (usize, usize),
    original: Option<(usize, usize)>,
    optical: bool,
    /// The next entry whose name has the same hash.
    next: u32,
}

fn name_hash(name: &[u8]) -> u64 {
    // FNV-1a.
    name.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

impl DuplicateNames {
    fn find(&self, name: &[u8]) -> Option<u32> {
        let mut at = *self.by_hash.get(&name_hash(name))?;
        while at != NONE {
            let e = &self.entries[at as usize];
            if &self.arena[e.name.0..e.name.1] == name {
                return Some(at);
            }
            at = e.next;
        }
        None
    }

    /// Adds a name not there yet (the first duplicate of a name keeps its
    /// original and type, as samtools' `add_duplicate`).
    fn add(&mut self, name: &[u8], original: Option<&[u8]>, optical: bool) {
        if self.find(name).is_some() {
            return;
        }
        let mut stored = |bytes: &[u8]| {
            let start = self.arena.len();
            self.arena.extend_from_slice(bytes);
            (start, self.arena.len())
        };
        let name_at = stored(name);
        let original = original.map(stored);
        let head = self.by_hash.entry(name_hash(name)).or_insert(NONE);
        self.entries.push(DuplicateName { name: name_at, original, optical, next: *head });
        *head = (self.entries.len() - 1) as u32;
    }
}

/// Which counter an optical duplicate adds to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pair,
    Single,
}

/// samtools markdup over records given in coordinate order.
pub struct Marker {
    options: MarkdupOptions,
    coords: Option<CoordsRegex>,
    barcodes: BarcodeSource,
    check_chains: bool,
    exclude: u16,
    /// Records may end with 64-bit positions ([`crate::sam::Positions::Wide`]).
    wide: bool,
    slots: Vec<Slot>,
    free: Vec<u32>,
    queue: VecDeque<u32>,
    pair_hash: KeyMap<u32>,
    single_hash: KeyMap<u32>,
    duplicate_names: DuplicateNames,
    prev_tid: i32,
    prev_coord: i64,
    /// The input number of the read at the queue's front, and of the next.
    front_seq: u64,
    next_seq: u64,
    /// Reads at the front known to be out of the window and to have no
    /// chain to check: where the next chain check starts (see
    /// [`Marker::find_duplicate_chains`]).
    settled: usize,
    stats: MarkdupStats,
    optical_warnings: Warnings,
    barcode_warnings: Warnings,
    log: Vec<String>,
    // Buffers kept between records.
    name_buffer: Vec<u8>,
    c_name: Vec<u8>,
    chain: Vec<ChainEntry>,
    chain_names: Vec<u8>,
    newly_optical: Vec<usize>,
}

/// Records handed on: the record (with its `block_size`), to the output or
/// (with `-S`) to the second pass.
pub type Emit<'a> = dyn FnMut(&[u8]) -> Result<(), Error> + 'a;

impl Marker {
    /// A marker with `options`; refuses bad regular expressions or
    /// coordinate orders as samtools does.
    pub fn new(options: &MarkdupOptions) -> Result<Marker, Error> {
        let mut options = options.clone();
        if options.optical_distance < 0 {
            options.optical_distance = 0;
        }
        if options.max_read_length < 0 {
            options.max_read_length = 300;
        }
        let coords = match &options.read_coords {
            Some((pattern, order)) => Some(CoordsRegex::new(pattern, order)?),
            None => None,
        };
        let barcodes = match &options.barcodes {
            Barcodes::None => BarcodeSource::None,
            Barcodes::Tag(tag) => {
                let b = tag.as_bytes();
                BarcodeSource::Tag([b.first().copied().unwrap_or(0), b.get(1).copied().unwrap_or(0)])
            }
            Barcodes::NameRegex(pattern) => {
                BarcodeSource::Name(PosixRegex::new(pattern).map_err(|e| Error::InvalidArgument(format!("barcode regex error \"{e}\"")))?)
            }
        };
        let check_chains = options.check_chains && (options.tag_originals || options.optical_distance != 0);
        let exclude =
            record::SECONDARY | record::SUPPLEMENTARY | record::UNMAPPED | if options.include_fails { 0 } else { record::QC_FAIL };
        Ok(Marker {
            options,
            coords,
            barcodes,
            check_chains,
            exclude,
            wide: false,
            slots: Vec::new(),
            free: Vec::new(),
            queue: VecDeque::new(),
            pair_hash: KeyMap::default(),
            single_hash: KeyMap::default(),
            duplicate_names: DuplicateNames::default(),
            prev_tid: 0,
            prev_coord: 0,
            front_seq: 0,
            next_seq: 0,
            settled: 0,
            stats: MarkdupStats::default(),
            optical_warnings: Warnings::default(),
            barcode_warnings: Warnings::default(),
            log: Vec::new(),
            name_buffer: Vec::new(),
            c_name: Vec::new(),
            chain: Vec::new(),
            chain_names: Vec::new(),
            newly_optical: Vec::new(),
        })
    }

    /// Records given may end with 64-bit positions (a SAM read with
    /// [`crate::sam::Positions::Wide`] for a SAM output): they are read
    /// from there, and tags are added before them.
    pub fn keep_wide_positions(&mut self) {
        self.wide = true;
    }

    /// POS and PNEXT, 64-bit when kept so.
    fn positions(&self, r: &RecordRef<'_>) -> (i64, i64) {
        if self.wide {
            let (pos, mpos, _) = crate::sam::wide_positions(r.as_bytes());
            (pos, mpos)
        } else {
            (i64::from(r.pos()), i64::from(r.mate_pos()))
        }
    }

    /// The counts so far.
    pub fn stats(&self) -> &MarkdupStats {
        &self.stats
    }

    /// Takes the warnings samtools would have printed so far (its first ten
    /// of each kind, and when it stopped), without `[markdup] warning: `.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    /// Takes one record (coordinate order), and hands on those that can no
    /// longer change.
    pub fn push(&mut self, r: &RecordRef<'_>, emit: &mut Emit<'_>) -> Result<(), Error> {
        let tid = r.ref_id();
        let (pos, _) = self.positions(r);
        if tid >= 0 && (tid < self.prev_tid || (tid == self.prev_tid && pos < self.prev_coord)) {
            return Err(Error::Message("not in coordinate sorted order".into()));
        }
        if tid != self.prev_tid || pos < self.prev_coord {
            // The window moved other than forward: reads out of it may be
            // back in (only in files samtools' order check lets through
            // with unplaced reads among placed ones).
            self.settled = 0;
        }
        self.prev_coord = pos;
        self.prev_tid = tid;
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        {
            let slot = &mut self.slots[idx as usize];
            slot.data.clear();
            slot.data.extend_from_slice(&(r.as_bytes().len() as u32).to_le_bytes());
            slot.data.extend_from_slice(r.as_bytes());
            slot.tid = tid;
            slot.pos = pos;
            slot.pair_key = None;
            slot.single_key = None;
            slot.duplicate = NONE;
            slot.dup_checked = false;
            slot.seq = self.next_seq;
        }
        self.next_seq += 1;
        self.queue.push_back(idx);
        self.stats.read += 1;
        let mut flag = record::flag(&self.slots[idx as usize].data);
        if self.options.clear_previous && flag & record::DUPLICATE != 0 {
            flag ^= record::DUPLICATE;
            let data = &mut self.slots[idx as usize].data;
            record::set_flag(data, flag);
            record::delete(data, *b"dt");
            record::delete(data, *b"do");
        }
        if flag & self.exclude == 0 {
            self.stats.examined += 1;
            if flag & record::PAIRED != 0 && flag & record::MATE_UNMAPPED == 0 {
                self.examine_pair(idx, r)?;
            } else {
                self.examine_single(idx, r)?;
            }
        } else {
            self.stats.excluded += 1;
        }
        self.write_out(emit)
    }

    /// Ends the input: checks the chains left and hands on every record.
    pub fn finish(&mut self, emit: &mut Emit<'_>) -> Result<(), Error> {
        if self.options.tag_originals || self.options.optical_distance != 0 {
            self.find_duplicate_chains(false)?;
        }
        while let Some(idx) = self.queue.pop_front() {
            self.front_seq += 1;
            self.settled = 0;
            let data = &self.slots[idx as usize].data;
            if !self.options.remove_duplicates || record::flag(data) & record::DUPLICATE == 0 {
                emit(data)?;
                self.stats.written += 1;
            }
            self.free.push(idx);
        }
        if self.optical_warnings.count > 0 {
            self.log.push(format!("number of failed attempts to get coordinates from read names = {}", self.optical_warnings.count));
        }
        if self.barcode_warnings.count > 0 {
            self.log.push(format!("number of failed attempts to get barcodes = {}", self.barcode_warnings.count));
        }
        Ok(())
    }

    /// The second pass of `-S`: marks a supplementary, secondary or unmapped
    /// record of a duplicate; returns whether to write it.
    pub fn mark_other_record(&mut self, data: &mut Vec<u8>) -> Result<bool, Error> {
        let flag = record::flag(data);
        if flag & (record::SUPPLEMENTARY | record::UNMAPPED | record::SECONDARY) != 0 {
            if let Some(at) = self.duplicate_names.find(record::name(data)) {
                record::set_flag(data, flag | record::DUPLICATE);
                self.stats.duplicate_non_primary += 1;
                let entry = &self.duplicate_names.entries[at as usize];
                if self.options.tag_originals {
                    if let Some((b, e)) = entry.original {
                        let original = &self.duplicate_names.arena[b..e];
                        record::update_string(data, *b"do", original, self.wide)
                            .map_err(|()| Error::Message("unable to append supplementary 'do' tag".into()))?;
                    }
                }
                if self.options.optical_distance != 0 {
                    let value: &[u8] = if entry.optical { b"SQ" } else { b"LB" };
                    if entry.optical {
                        self.stats.duplicate_non_primary_optical += 1;
                    }
                    let _ = record::update_string(data, *b"dt", value, self.wide);
                }
            }
        }
        Ok(!self.options.remove_duplicates || record::flag(data) & record::DUPLICATE == 0)
    }

    fn in_window(&self, idx: u32) -> bool {
        let s = &self.slots[idx as usize];
        s.pos + self.options.max_read_length > self.prev_coord && s.tid == self.prev_tid && (self.prev_tid != -1 || self.prev_coord != -1)
    }

    /// Hands on the reads at the front that are out of reach of new reads
    /// (samtools' moving window), taking their keys out of the hashes.
    fn write_out(&mut self, emit: &mut Emit<'_>) -> Result<(), Error> {
        let mut chains_checked = false;
        while let Some(&idx) = self.queue.front() {
            if self.in_window(idx) {
                break;
            }
            if !chains_checked && self.check_chains {
                self.find_duplicate_chains(true)?;
                chains_checked = true;
            }
            let slot = &self.slots[idx as usize];
            let flag = record::flag(&slot.data);
            if self.check_chains && flag & record::DUPLICATE != 0 && !slot.dup_checked && flag & self.exclude == 0 {
                break;
            }
            if !self.options.remove_duplicates || flag & record::DUPLICATE == 0 {
                emit(&slot.data)?;
                self.stats.written += 1;
            }
            if let Some(key) = slot.pair_key {
                self.pair_hash.remove(&key);
            }
            if let Some(key) = slot.single_key {
                self.single_hash.remove(&key);
            }
            self.queue.pop_front();
            self.front_seq += 1;
            self.settled = self.settled.saturating_sub(1);
            self.free.push(idx);
        }
        Ok(())
    }

    /// Links `next` after `idx` in a duplicate chain; a read that gets a
    /// chain is one the next chain check must look at again.
    fn link(&mut self, idx: u32, next: u32) {
        self.slots[idx as usize].duplicate = next;
        let place = self.slots[idx as usize].seq.saturating_sub(self.front_seq) as usize;
        self.settled = self.settled.min(place);
    }

    fn flag(&self, idx: u32) -> u16 {
        record::flag(&self.slots[idx as usize].data)
    }

    fn paired_with_mapped_mate(&self, idx: u32) -> bool {
        let f = self.flag(idx);
        f & record::PAIRED != 0 && f & record::MATE_UNMAPPED == 0
    }

    fn barcode(&mut self, idx: u32) -> u32 {
        read_names::barcode(&self.barcodes, &self.slots[idx as usize].data, &mut self.c_name, &mut self.barcode_warnings, &mut self.log)
    }

    /// samtools' `make_single_key`.
    fn single_key(&mut self, idx: u32, r: &RecordRef<'_>) -> Key {
        let reverse = r.flag() & record::REVERSE != 0;
        let (pos, _) = self.positions(r);
        let (this_coord, orientation) = if reverse { (unclipped_end(r, pos), O_RR) } else { (unclipped_start(r, pos), O_FF) };
        let barcode = self.barcode(idx);
        Key { this_coord, other_coord: 0, this_ref: r.ref_id() + 1, other_ref: 0, barcode, leftmost: 0, orientation }
    }

    /// samtools' `make_pair_key`.
    fn pair_key(&mut self, idx: u32, r: &RecordRef<'_>) -> Result<Key, Error> {
        let this_ref = r.ref_id() + 1;
        let other_ref = r.mate_ref_id() + 1;
        let (pos, mate_pos) = self.positions(r);
        let this_start = unclipped_start(r, pos);
        let this_end = unclipped_end(r, pos);
        let name = || String::from_utf8_lossy(record::name(&self.slots[idx as usize].data)).into_owned();
        let Some(at) = record::find(&self.slots[idx as usize].data, *b"MC") else {
            return Err(Error::Message(format!("no MC tag. Please run samtools fixmate on file first (read {})", name())));
        };
        let Some(mate_cigar) = record::string_value(&self.slots[idx as usize].data, at) else {
            return Err(Error::Message(format!("MC tag wrong type. Please use the MC tag provided by samtools fixmate (read {})", name())));
        };
        let other_end = unclipped_other_end(mate_pos, mate_cigar);
        let other_start = unclipped_other_start(mate_pos, mate_cigar);
        let flag = r.flag();
        let rev = flag & record::REVERSE != 0;
        let mrev = flag & record::MATE_REVERSE != 0;
        let read1 = flag & record::READ1 != 0;
        let (mut this_coord, mut other_coord) = (this_start, other_start);
        let leftmost;
        let orientation;
        match self.options.mode {
            DuplicateMode::Template => {
                leftmost = if this_ref != other_ref {
                    this_ref < other_ref
                } else if rev == mrev {
                    if !rev {
                        this_start <= other_start
                    } else {
                        this_end <= other_end
                    }
                } else if rev {
                    this_end <= other_start
                } else {
                    this_start <= other_end
                };
                orientation = if rev == mrev {
                    if leftmost {
                        other_coord = other_end;
                    } else {
                        this_coord = this_end;
                    }
                    // Same strand: read 1 forward (leftmost) is FF, and
                    // the other combinations follow from it.
                    if (rev != read1) == leftmost {
                        O_FF
                    } else {
                        O_RR
                    }
                } else if !rev {
                    other_coord = other_end;
                    if leftmost {
                        O_FR
                    } else {
                        O_RF
                    }
                } else {
                    this_coord = this_end;
                    if leftmost {
                        O_RF
                    } else {
                        O_FR
                    }
                };
            }
            DuplicateMode::Sequence => {
                let difference = if this_ref != other_ref {
                    i64::from(this_ref - other_ref)
                } else if rev == mrev {
                    if !rev {
                        this_start - other_start
                    } else {
                        this_end - other_end
                    }
                } else if rev {
                    this_end - other_start
                } else {
                    this_start - other_end
                };
                leftmost = match difference.cmp(&0) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Greater => false,
                    std::cmp::Ordering::Equal => {
                        if pos == mate_pos {
                            read1
                        } else {
                            pos < mate_pos
                        }
                    }
                };
                orientation = match (rev == mrev, rev, leftmost) {
                    (true, false, true) | (true, true, false) => O_FF,
                    (true, true, true) | (true, false, false) => O_RR,
                    (false, false, true) | (false, true, false) => O_FR,
                    (false, true, true) | (false, false, false) => O_RF,
                };
                this_coord = if rev { this_end } else { this_start };
                other_coord = if mrev { other_end } else { other_start };
            }
        }
        let barcode = self.barcode(idx);
        Ok(Key { this_coord, other_coord, this_ref, other_ref, barcode, leftmost: if leftmost { R_LE } else { R_RI }, orientation })
    }

    /// The `ms` tag (the mate's score) of a read.
    fn mate_score(&self, idx: u32) -> Result<i64, Error> {
        let data = &self.slots[idx as usize].data;
        match record::find(data, *b"ms").map(|at| record::integer_value(data, at)) {
            Some(score) if score != -1 => Ok(score),
            _ => Err(Error::Message(format!(
                "no ms score tag. Please run samtools fixmate on file first (read {})",
                String::from_utf8_lossy(record::name(data))
            ))),
        }
    }

    fn score(&self, idx: u32) -> i64 {
        record::quality_score(&self.slots[idx as usize].data)
    }

    /// The last read of the chain that starts at `idx`.
    fn chain_end(&self, mut idx: u32) -> u32 {
        while self.slots[idx as usize].duplicate != NONE {
            idx = self.slots[idx as usize].duplicate;
        }
        idx
    }

    fn examine_pair(&mut self, idx: u32, r: &RecordRef<'_>) -> Result<(), Error> {
        let pair_key = self.pair_key(idx, r)?;
        let single_key = self.single_key(idx, r);
        self.stats.paired += 1;
        self.slots[idx as usize].pos = single_key.this_coord;
        // Into the singles' hash, where a single read is its duplicate.
        match self.single_hash.get(&single_key).copied() {
            None => {
                self.single_hash.insert(single_key, idx);
                self.slots[idx as usize].single_key = Some(single_key);
            }
            Some(found) => {
                if !self.paired_with_mapped_mate(found) {
                    // A single read is the duplicate even if it scores more.
                    if self.check_chains {
                        self.link(idx, found);
                    }
                    self.single_hash.insert(single_key, idx);
                    self.mark_duplicate(idx, found, Kind::Single)?;
                    self.stats.duplicate_single += 1;
                }
            }
        }
        match self.pair_hash.get(&pair_key).copied() {
            None => {
                self.pair_hash.insert(pair_key, idx);
                self.slots[idx as usize].pair_key = Some(pair_key);
            }
            Some(found) => {
                let (found_qc, new_qc) = (self.flag(found) & record::QC_FAIL, self.flag(idx) & record::QC_FAIL);
                let (old_score, new_score) = if found_qc != new_qc {
                    if found_qc != 0 {
                        (0, 1)
                    } else {
                        (1, 0)
                    }
                } else {
                    let old = self.score(found) + self.mate_score(found)?;
                    (old, self.score(idx) + self.mate_score(idx)?)
                };
                let tie = if new_score == old_score {
                    let (new_name, old_name) =
                        (record::name(&self.slots[idx as usize].data), record::name(&self.slots[found as usize].data));
                    if new_name < old_name {
                        1
                    } else {
                        -1
                    }
                } else {
                    0
                };
                let (original, duplicate) = if new_score + tie > old_score {
                    if self.check_chains {
                        let head = self.slots[idx as usize].duplicate;
                        if head != NONE {
                            let end = self.chain_end(head);
                            self.link(end, found);
                        } else {
                            self.link(idx, found);
                        }
                    }
                    self.pair_hash.insert(pair_key, idx);
                    (idx, found)
                } else {
                    if self.check_chains {
                        let found_chain = self.slots[found as usize].duplicate;
                        if found_chain != NONE {
                            let mine = self.slots[idx as usize].duplicate;
                            if mine != NONE {
                                let end = self.chain_end(found_chain);
                                self.link(end, mine);
                            }
                            self.link(idx, found_chain);
                        }
                        self.link(found, idx);
                    }
                    (found, idx)
                };
                self.mark_duplicate(original, duplicate, Kind::Pair)?;
                self.stats.duplicate_pair += 1;
            }
        }
        Ok(())
    }

    fn examine_single(&mut self, idx: u32, r: &RecordRef<'_>) -> Result<(), Error> {
        let key = self.single_key(idx, r);
        self.stats.single += 1;
        self.slots[idx as usize].pos = key.this_coord;
        let Some(found) = self.single_hash.get(&key).copied() else {
            self.single_hash.insert(key, idx);
            self.slots[idx as usize].single_key = Some(key);
            return Ok(());
        };
        let prepend = |m: &mut Marker| {
            if m.check_chains {
                let chain = m.slots[found as usize].duplicate;
                if chain != NONE {
                    m.link(idx, chain);
                }
                m.link(found, idx);
            }
        };
        if self.paired_with_mapped_mate(found) {
            // Matching one read of a pair: a duplicate.
            prepend(self);
            self.mark_duplicate(found, idx, Kind::Single)?;
        } else if self.score(idx) > self.score(found) {
            if self.check_chains {
                self.link(idx, found);
            }
            self.single_hash.insert(key, idx);
            self.mark_duplicate(idx, found, Kind::Single)?;
        } else {
            prepend(self);
            self.mark_duplicate(found, idx, Kind::Single)?;
        }
        self.stats.duplicate_single += 1;
        Ok(())
    }

    /// Whether two reads are optical duplicates by their names' coordinates.
    fn is_optical(&mut self, original: u32, duplicate: u32) -> bool {
        let distance = self.options.optical_distance;
        let o_name = record::name(&self.slots[original as usize].data);
        let Ok(o) = read_names::coordinates(self.coords.as_ref(), o_name, &mut self.c_name, &mut self.optical_warnings, &mut self.log)
        else {
            return false;
        };
        let d_name = record::name(&self.slots[duplicate as usize].data);
        let Ok(d) = read_names::coordinates(self.coords.as_ref(), d_name, &mut self.c_name, &mut self.optical_warnings, &mut self.log)
        else {
            return false;
        };
        read_names::close(o_name, &o, d_name, &d, distance)
    }

    /// samtools' `mark_duplicates`: flags `duplicate`, tags it, and notes
    /// it for `-S`.
    fn mark_duplicate(&mut self, original: u32, duplicate: u32, kind: Kind) -> Result<(), Error> {
        let warnings_before = self.optical_warnings.count;
        let flag = self.flag(duplicate) | record::DUPLICATE;
        record::set_flag(&mut self.slots[duplicate as usize].data, flag);
        self.name_buffer.clear();
        self.name_buffer.extend_from_slice(record::name(&self.slots[original as usize].data));
        if self.options.tag_originals {
            record::update_string(&mut self.slots[duplicate as usize].data, *b"do", &self.name_buffer, self.wide)
                .map_err(|()| Error::Message("unable to append 'do' tag".into()))?;
        }
        let mut optical = false;
        if self.options.optical_distance != 0 {
            optical = self.is_optical(original, duplicate);
            let data = &mut self.slots[duplicate as usize].data;
            let _ = record::update_string(data, *b"dt", if optical { b"SQ" } else { b"LB" }, self.wide);
            if optical {
                match kind {
                    Kind::Pair => self.stats.duplicate_pair_optical += 1,
                    Kind::Single => self.stats.duplicate_single_optical += 1,
                }
            }
        }
        if self.optical_warnings.count == read_names::WARNING_MAX && warnings_before != self.optical_warnings.count {
            self.log.push(format!("{} decipher read name warnings.  New warnings will not be reported.", self.optical_warnings.count));
        }
        if self.options.mark_supplementary && self.has_other_records(duplicate) {
            let data = &self.slots[duplicate as usize].data;
            let original = self.options.tag_originals.then_some(&self.name_buffer[..]);
            self.duplicate_names.add(record::name(data), original, optical);
        }
        Ok(())
    }

    /// Whether a read may have records `-S` marks: an `SA` or `XA` tag, or
    /// an unmapped mate.
    fn has_other_records(&self, idx: u32) -> bool {
        let data = &self.slots[idx as usize].data;
        record::find(data, *b"SA").is_some() || record::flag(data) & record::MATE_UNMAPPED != 0 || record::find(data, *b"XA").is_some()
    }

    /// samtools' `optical_retag`: a duplicate found optical later.
    fn retag_optical(&mut self, idx: u32, paired: bool) -> Result<(), Error> {
        record::update_string(&mut self.slots[idx as usize].data, *b"dt", b"SQ", self.wide)
            .map_err(|()| Error::Message("unable to update 'dt' tag".into()))?;
        if paired {
            self.stats.duplicate_pair_optical += 1;
        } else {
            self.stats.duplicate_single_optical += 1;
        }
        if self.options.mark_supplementary && self.has_other_records(idx) {
            let name = record::name(&self.slots[idx as usize].data);
            match self.duplicate_names.find(name) {
                Some(at) => self.duplicate_names.entries[at as usize].optical = true,
                None => return Err(Error::Message(format!("duplicate name {} not found in hash", String::from_utf8_lossy(name)))),
            }
        }
        Ok(())
    }

    /// samtools' `find_duplicate_chains`: checks the chains of originals
    /// out of the window (all with `in_range` false), from the front.
    ///
    /// samtools walks from the front every time; where a duplicate waiting
    /// for its chain holds the front back, that is every read of a deep
    /// region, for each new read. The reads the last walk passed stay
    /// passed (out of the window, no chain) until one gets a chain
    /// ([`Marker::link`]) or the window moves back, so the walk starts
    /// after them: the same chains are checked, in the same order.
    fn find_duplicate_chains(&mut self, in_range: bool) -> Result<(), Error> {
        let mut i = if in_range { self.settled } else { 0 };
        while i < self.queue.len() {
            let idx = self.queue[i];
            if in_range && self.in_window(idx) {
                break;
            }
            i += 1;
            if self.flag(idx) & record::DUPLICATE != 0 || self.slots[idx as usize].duplicate == NONE {
                continue;
            }
            match self.check_chain_against_original(idx)? {
                None => {}
                Some(CoordsFailure::Warned) => {
                    self.slots[idx as usize].duplicate = NONE;
                    continue;
                }
                Some(CoordsFailure::NoMatch) => {
                    return Err(Error::Message(format!(
                        "duplicate checking failed: read name {} does not match the --read-coords expression",
                        String::from_utf8_lossy(record::name(&self.slots[idx as usize].data))
                    )))
                }
            }
            if self.options.optical_distance != 0 {
                self.check_duplicate_chain()?;
            }
            self.slots[idx as usize].duplicate = NONE;
        }
        if in_range {
            self.settled = i;
        }
        Ok(())
    }

    /// samtools' `check_chain_against_original`: points `do` tags at the
    /// original, marks optical duplicates of it, and gathers the chain for
    /// [`Marker::check_duplicate_chain`]. Returns the original's coordinate
    /// failure, if any.
    fn check_chain_against_original(&mut self, original: u32) -> Result<Option<CoordsFailure>, Error> {
        let distance = self.options.optical_distance;
        self.name_buffer.clear();
        self.name_buffer.extend_from_slice(record::name(&self.slots[original as usize].data));
        let original_coords = if distance != 0 {
            read_names::coordinates(self.coords.as_ref(), &self.name_buffer, &mut self.c_name, &mut self.optical_warnings, &mut self.log)
        } else {
            Ok(Default::default())
        };
        self.chain.clear();
        self.chain_names.clear();
        let mut current = self.slots[original as usize].duplicate;
        while current != NONE {
            self.slots[current as usize].dup_checked = true;
            if self.options.tag_originals {
                let data = &self.slots[current as usize].data;
                if let Some(at) = record::find(data, *b"do") {
                    match record::string_value(data, at) {
                        Some(name) if name == &self.name_buffer[..] => {}
                        Some(_) => {
                            record::update_string(&mut self.slots[current as usize].data, *b"do", &self.name_buffer, self.wide)
                                .map_err(|()| Error::Message("unable to update 'do' tag".into()))?;
                        }
                        None => {
                            return Err(Error::Message(format!(
                                "'do' tag has wrong type for read {}",
                                String::from_utf8_lossy(record::name(data))
                            )))
                        }
                    }
                }
            }
            let flag = self.flag(current);
            let name_start = self.chain_names.len();
            self.chain_names.extend_from_slice(record::name(&self.slots[current as usize].data));
            let mut entry = ChainEntry {
                slot: current,
                name: (name_start, self.chain_names.len()),
                coords: read_names::Coordinates { x: -1, y: -1, beg: 0, end: 0 },
                optical: false,
                score: 0,
                mate_score: 0,
                paired: flag & record::PAIRED != 0 && flag & record::MATE_UNMAPPED == 0,
                qc_fail: flag & record::QC_FAIL != 0,
            };
            if let (true, Ok(o)) = (distance != 0, &original_coords) {
                let data = &self.slots[current as usize].data;
                entry.optical = record::string_tag(data, *b"dt") == Some(&b"SQ"[..]);
                let name = &self.chain_names[name_start..];
                let mut is_optical = false;
                if let Ok(d) =
                    read_names::coordinates(self.coords.as_ref(), name, &mut self.c_name, &mut self.optical_warnings, &mut self.log)
                {
                    is_optical = read_names::close(&self.name_buffer, o, name, &d, distance);
                    entry.coords = d;
                }
                if !entry.optical && is_optical {
                    self.retag_optical(current, entry.paired)?;
                    entry.optical = true;
                }
                entry.score = self.score(current);
                if entry.paired {
                    entry.mate_score = self.mate_score(current)?;
                }
            }
            self.chain.push(entry);
            current = self.slots[current as usize].duplicate;
        }
        Ok(original_coords.err())
    }

    /// samtools' `check_duplicate_chain`, without its quadratic loop (see
    /// [`optical`]).
    fn check_duplicate_chain(&mut self) -> Result<(), Error> {
        let mut chain = std::mem::take(&mut self.chain);
        let mut newly = std::mem::take(&mut self.newly_optical);
        optical::find_optical(&mut chain, &self.chain_names, self.options.optical_distance, &mut newly);
        let result = newly.iter().try_for_each(|&k| self.retag_optical(chain[k].slot, chain[k].paired));
        self.chain = chain;
        self.newly_optical = newly;
        result
    }
}

/// How far the records given to a [`Marker`] so far reach on their
/// reference: the last record's reference and the largest unclipped end
/// of the records on it. What decides where a coordinate-sorted stream
/// may be cut into pieces marked by markers of their own
/// ([`MarkdupOptions::independent_start`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The reference of the last record.
    pub tid: i32,
    /// The largest unclipped end (samtools' `unclipped_end`, 1-based) of
    /// the records on `tid`.
    pub end: i64,
}

impl Reach {
    /// `before` extended by the next record `r` (coordinate order).
    pub fn extend(before: Option<Reach>, r: &RecordRef<'_>) -> Reach {
        let end = unclipped_end(r, i64::from(r.pos()));
        match before {
            Some(b) if b.tid == r.ref_id() => Reach { tid: b.tid, end: b.end.max(end) },
            _ => Reach { tid: r.ref_id(), end },
        }
    }

    /// The reach of records whose own reaches were `pieces`, in order
    /// (`None`: a piece without records).
    pub fn join(pieces: impl IntoIterator<Item = Option<Reach>>) -> Option<Reach> {
        pieces.into_iter().fold(None, |acc, piece| match (acc, piece) {
            (Some(a), Some(p)) if a.tid == p.tid => Some(Reach { tid: p.tid, end: a.end.max(p.end) }),
            (acc, None) => acc,
            (_, p) => p,
        })
    }
}

impl MarkdupOptions {
    /// Whether a fresh [`Marker`] started at `r` marks `r` and every record
    /// after it as one marker given all the records before `r` (which
    /// reach `before`) would: `r` is on another reference, or unplaced, or
    /// starts a window length past every earlier record's unclipped end and
    /// its own unclipped start lies beyond them. Then when `r` arrives
    /// every earlier read is out of the window (so its duplicate chains are
    /// checked and it is handed on, its keys leaving the hashes), and none
    /// of `r`'s keys, whose coordinates are at least its unclipped start,
    /// can equal an earlier read's, whose are at most that read's
    /// unclipped end. The marks and counts of the records before `r` are
    /// likewise those of a marker that ends there (`Marker::finish`).
    pub fn independent_start(&self, before: Option<Reach>, r: &RecordRef<'_>) -> bool {
        let Some(before) = before else { return true };
        if r.ref_id() < 0 || r.ref_id() != before.tid {
            return true;
        }
        let window = if self.max_read_length < 0 { 300 } else { self.max_read_length };
        let pos = i64::from(r.pos());
        pos >= before.end.saturating_add(window) && unclipped_start(r, pos) > before.end
    }
}

/// samtools' `unclipped_start` of a read at `pos`: 1-based, leading
/// clips included.
fn unclipped_start(r: &RecordRef<'_>, pos: i64) -> i64 {
    let clips = record::leading_clips(r.cigar().iter().map(|(op, len)| (op.letter(), len)));
    pos - clips + 1
}

/// samtools' `unclipped_end` of a read at `pos`: htslib's end position
/// (`bam_endpos`) plus trailing clips.
fn unclipped_end(r: &RecordRef<'_>, pos: i64) -> i64 {
    let cigar = r.cigar();
    let ref_len = if r.flag() & record::UNMAPPED != 0 { 0 } else { cigar.reference_len() };
    let end = pos + if ref_len == 0 { 1 } else { ref_len };
    let mut clipped = 0i64;
    for i in (0..cigar.len()).rev() {
        let (op, len) = cigar.get(i).expect("in range");
        if matches!(op.letter(), b'S' | b'H') {
            clipped += i64::from(len);
        } else {
            break;
        }
    }
    end + clipped
}

/// Reads a CIGAR string's next number as samtools does (`strtol` on a
/// digit, else 1), returning it and the rest.
fn cigar_number(text: &[u8]) -> (i64, &[u8]) {
    if text.first().is_some_and(u8::is_ascii_digit) {
        let digits = text.iter().take_while(|c| c.is_ascii_digit()).count();
        (record::strtol(&text[..digits]).unwrap_or(0), &text[digits..])
    } else {
        (1, text)
    }
}

/// samtools' `unclipped_other_start`: the mate's 1-based unclipped start
/// from its position and `MC` CIGAR.
fn unclipped_other_start(mate_pos: i64, cigar: &[u8]) -> i64 {
    let mut rest = cigar;
    let mut clipped = 0;
    while let Some(&c) = rest.first() {
        if c == b'*' {
            break;
        }
        let (n, after) = cigar_number(rest);
        match after.first() {
            Some(b'S' | b'H') => clipped += n,
            _ => break,
        }
        rest = &after[1..];
    }
    mate_pos - clipped + 1
}

/// samtools' `unclipped_other_end`: the mate's unclipped end from its
/// position and `MC` CIGAR (leading clips not counted).
fn unclipped_other_end(mate_pos: i64, cigar: &[u8]) -> i64 {
    let mut rest = cigar;
    let mut ref_len = 0;
    let mut skip = true;
    while let Some(&c) = rest.first() {
        if c == b'*' {
            break;
        }
        let (n, after) = cigar_number(rest);
        match after.first() {
            Some(b'M' | b'D' | b'N' | b'=' | b'X') => {
                ref_len += n;
                skip = false;
            }
            Some(b'S' | b'H') if !skip => ref_len += n,
            Some(_) => {}
            None => break,
        }
        rest = &after[1..];
    }
    mate_pos + ref_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mate_cigar_ends() {
        assert_eq!(unclipped_other_start(99, b"5S20M3S"), 95);
        assert_eq!(unclipped_other_end(99, b"5S20M3S"), 122);
        assert_eq!(unclipped_other_end(99, b"20M2D4M"), 125);
        assert_eq!(unclipped_other_start(99, b"*"), 100);
    }

    #[test]
    fn library_size_as_picard() {
        let stats = MarkdupStats { paired: 1000, duplicate_pair: 200, ..Default::default() };
        assert!(stats.estimated_library_size().0 > 400);
        let none = MarkdupStats::default();
        assert!(none.estimated_library_size().1.is_some());
    }
}
