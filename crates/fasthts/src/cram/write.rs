//! CRAM output, encoded by htslib as samtools encodes it (`sam_hdr_write`,
//! `sam_write1`): the same library with the same options writes the same
//! bytes, the 20-byte file id in the file definition included (htslib
//! puts the output's name there, so the writer is given the name the user
//! gave).
//!
//! htslib writes into one end of a socket; a thread reads the other end
//! and the bytes are handed to any [`Write`] on the caller's thread, so a
//! CRAM output goes through the same temporary-file, standard-output and
//! broken-pipe handling as BAM and SAM.

use super::{c_path, ffi, quiet_htslib};
use crate::bam::{AuxValue, CigarOp, Header, RecordRef};
use crate::Error;
use std::ffi::{c_int, CString};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::thread::JoinHandle;

/// How to write a CRAM output: samtools' `--reference`/`-T`, its
/// `--output-fmt-option`s (or `-O cram,OPT=VAL,...`) and `-l`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CramWriteOptions {
    /// The reference FASTA (with its `.fai`, made if missing, as htslib
    /// does); `None`: as htslib finds it (`REF_PATH`, `REF_CACHE` by `M5`,
    /// `UR`), else the reference is embedded (`embed_ref=2`, htslib's
    /// fallback, with its warnings).
    pub reference: Option<PathBuf>,
    /// htslib's format options, `OPT=VAL` (`version=3.1`, `embed_ref=1`,
    /// `seqs_per_slice=N`, ...), applied in order before the header is written.
    pub options: Vec<String>,
    /// Compression level (`-l`), 0 to 9; `None`: htslib's default.
    pub level: Option<u32>,
}

impl CramWriteOptions {
    /// Whether `key` (of `KEY=VAL`) is one of the output options htslib
    /// applies to CRAM (those samtools passes through to it).
    pub fn is_cram_option(key: &str) -> bool {
        matches!(
            key.to_ascii_lowercase().as_str(),
            "reference"
                | "version"
                | "embed_ref"
                | "no_ref"
                | "seqs_per_slice"
                | "bases_per_slice"
                | "slices_per_container"
                | "use_bzip2"
                | "use_lzma"
                | "use_tok"
                | "use_fqz"
                | "use_arith"
                | "lossy_names"
                | "store_md"
                | "store_nm"
                | "ignore_md5"
                | "decode_md"
        )
    }
}

/// A CRAM output being written record by record.
pub struct CramWriter<W: Write> {
    fp: NonNull<ffi::htsFile>,
    hdr: NonNull<ffi::sam_hdr_t>,
    record: NonNull<ffi::bam1_t>,
    /// The name errors give the output.
    path: PathBuf,
    /// What htslib has written, as the drain thread read it.
    chunks: Receiver<Vec<u8>>,
    drain: Option<JoinHandle<io::Result<()>>>,
    out: Option<W>,
    indexed: bool,
    /// Long CIGARs put back in place of BAM's `CG` tag.
    scratch: Vec<u8>,
}

// SAFETY: the htslib objects are owned by this writer alone and used by
// one thread at a time (`&mut self`).
unsafe impl<W: Write + Send> Send for CramWriter<W> {}

impl<W: Write> CramWriter<W> {
    /// Starts a CRAM output into `out` named `name` (the name the user
    /// gave, `-` for standard output: htslib writes it into the file
    /// definition), writes `header` (htslib adds `M5`/`UR` to `@SQ` as it
    /// does for samtools) and, with `index`, starts a `.crai` that htslib
    /// builds as it writes containers and saves there at the end. `threads`
    /// above 1: htslib encodes containers on a pool of its own (the bytes
    /// are the same as with one).
    pub fn create(
        name: &Path,
        header: &Header,
        options: &CramWriteOptions,
        threads: usize,
        index: Option<&Path>,
        out: W,
    ) -> Result<CramWriter<W>, Error> {
        quiet_htslib();
        if options.level.is_some_and(|l| l > 9) {
            return Err(Error::InvalidArgument("level must be between 0 and 9".into()));
        }
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(Error::from(io::Error::last_os_error()).with_path(name));
        }
        // SAFETY: socketpair just made both descriptors, owned by nobody else.
        let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let (tx, chunks) = std::sync::mpsc::channel();
        let drain = std::thread::Builder::new()
            .name("cram-drain".into())
            .spawn(move || {
                let mut from = std::fs::File::from(theirs);
                loop {
                    let mut buf = vec![0u8; 1 << 16];
                    let n = match from.read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    buf.truncate(n);
                    if tx.send(buf).is_err() {
                        // The writer is gone (an error): nothing more is wanted.
                        return Ok(());
                    }
                }
            })
            .map_err(|e| Error::from(e).with_path(name))?;
        let c_name = c_path(name)?;
        let mode = match options.level {
            Some(level) => CString::new(format!("wc{level}")).expect("no NUL"),
            None => CString::new("wc").expect("no NUL"),
        };
        let fd = ours.into_raw_fd();
        // SAFETY: `fd` is open and now owned by the hFILE (closed with it).
        let hfile = unsafe { ffi::hdopen(fd, c"w".as_ptr()) };
        if hfile.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: hdopen failed, so `fd` is still ours to close.
            unsafe { libc::close(fd) };
            return Err(Error::from(e).with_path(name));
        }
        // SAFETY: `hfile` is valid; hts_hopen takes it over when it succeeds.
        let fp = unsafe { ffi::hts_hopen(hfile, c_name.as_ptr(), mode.as_ptr()) };
        let Some(fp) = NonNull::new(fp) else {
            // SAFETY: hts_hopen failed, so it left `hfile` open and ours to
            // close; nothing else holds it. Closing it ends the drain.
            unsafe { ffi::hclose_abruptly(hfile) };
            let _ = drain.join();
            return Err(Error::Message("htslib cannot start a CRAM output".into()).with_path(name));
        };
        let mut writer = CramWriter {
            fp,
            hdr: NonNull::dangling(),
            // SAFETY: allocates an empty record (NULL on failure, checked below).
            record: NonNull::dangling(),
            path: name.to_path_buf(),
            chunks,
            drain: Some(drain),
            out: Some(out),
            indexed: false,
            scratch: Vec::new(),
        };
        let mut have_header = false;
        let mut have_record = false;
        let started = (|| {
            let fp = writer.fp.as_ptr();
            for option in options.reference.iter().map(|r| {
                let mut o = b"reference=".to_vec();
                o.extend_from_slice(std::os::unix::ffi::OsStrExt::as_bytes(r.as_os_str()));
                o
            }) {
                apply_option(fp, &option, name)?;
            }
            for option in &options.options {
                apply_option(fp, option.as_bytes(), name)?;
            }
            let text = header_text(header);
            // SAFETY: `text` holds `len` bytes; htslib copies them.
            let hdr = unsafe { ffi::sam_hdr_parse(text.len(), text.as_ptr().cast()) };
            writer.hdr = NonNull::new(hdr).ok_or_else(|| Error::Message("htslib cannot read the output's header".into()).with_path(name))?;
            have_header = true;
            // SAFETY: allocates an empty record (NULL on failure).
            writer.record = NonNull::new(unsafe { ffi::bam_init1() }).ok_or_else(|| Error::Message("out of memory".into()))?;
            have_record = true;
            // htslib's warnings here are samtools': no reference found,
            // so the reference is embedded (embed_ref=2).
            // SAFETY: sets a global integer.
            unsafe { ffi::hts_set_log_level(ffi::HTS_LOG_WARNING) };
            // SAFETY: `fp` and `hdr` are open.
            let written = unsafe { ffi::sam_hdr_write(fp, writer.hdr.as_ptr()) };
            // SAFETY: as above.
            unsafe { ffi::hts_set_log_level(ffi::HTS_LOG_OFF) };
            if written != 0 {
                return Err(Error::Message(
                    "cannot write the CRAM header (is the reference FASTA readable, and the one the @SQ M5 tags name?)".into(),
                )
                .with_path(name));
            }
            if let Some(index) = index {
                let c_index = c_path(index)?;
                // SAFETY: `fp` and `hdr` are open; htslib copies the name.
                if unsafe { ffi::sam_idx_init(fp, writer.hdr.as_ptr(), 0, c_index.as_ptr()) } < 0 {
                    return Err(Error::Message("cannot start the index".into()).with_path(index));
                }
                writer.indexed = true;
            }
            // After the header and index, as samtools does: threads set
            // before the header change the bytes.
            if threads > 1 {
                // SAFETY: `fp` is open.
                unsafe { ffi::hts_set_threads(fp, threads as c_int) };
            }
            writer.pass_on()
        })();
        if let Err(e) = started {
            if !have_header {
                writer.hdr = NonNull::dangling();
            }
            if !have_record {
                writer.record = NonNull::dangling();
            }
            writer.close(have_header, have_record);
            return Err(e);
        }
        Ok(writer)
    }

    /// Writes one record (BAM bytes without `block_size`; a long CIGAR in
    /// a `CG` tag is put back first, as htslib's BAM reader does).
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        let (record, n_cigar) = match long_cigar(record) {
            Some((cg, n)) => {
                restore_long_cigar(record, cg, &mut self.scratch);
                (&self.scratch[..], Some(n))
            }
            None => (record, None),
        };
        // SAFETY: `record` is owned by this writer and not shared.
        fill(unsafe { self.record.as_mut() }, record, n_cigar).map_err(|e| Error::Message(e.into()).with_path(&self.path))?;
        // SAFETY: all three are open.
        if unsafe { ffi::sam_write1(self.fp.as_ptr(), self.hdr.as_ptr(), self.record.as_ptr()) } < 0 {
            return Err(self.failed("cannot encode CRAM (a reference sequence missing or not matching its @SQ M5?)"));
        }
        self.pass_on()
    }

    /// Ends the output (flushes the last container, writes the EOF
    /// container and the index) and returns the writer everything went to.
    pub fn finish(mut self) -> Result<W, Error> {
        if self.indexed {
            // SAFETY: `fp` is open with an index started.
            if unsafe { ffi::sam_idx_save(self.fp.as_ptr()) } < 0 {
                let e = self.failed("cannot write the CRAM output or its index");
                self.close(true, true);
                return Err(e);
            }
        }
        // SAFETY: closes what is open; nothing is used afterwards.
        let closed = unsafe { ffi::hts_close(self.fp.as_ptr()) };
        self.fp = NonNull::dangling();
        let drained = self.drain.take().map(|d| d.join().unwrap_or_else(|_| Err(io::Error::other("CRAM drain thread failed"))));
        self.pass_on()?;
        if let Some(Err(e)) = drained {
            return Err(Error::from(e).with_path(&self.path));
        }
        if closed != 0 {
            return Err(Error::Message("cannot finish the CRAM output (htslib could not encode its last container)".into()).with_path(&self.path));
        }
        let mut out = self.out.take().expect("present until finished");
        out.flush().map_err(Error::from)?;
        Ok(out)
    }

    /// Hands what htslib has written so far to the output.
    fn pass_on(&mut self) -> Result<(), Error> {
        let out = self.out.as_mut().expect("present until finished");
        loop {
            match self.chunks.try_recv() {
                Ok(chunk) => out.write_all(&chunk)?,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return Ok(()),
            }
        }
    }

    /// An htslib failure: the drain's own error if that is what stopped it.
    fn failed(&mut self, what: &str) -> Error {
        Error::Message(what.into()).with_path(&self.path)
    }

    fn close(&mut self, have_header: bool, have_record: bool) {
        if self.fp != NonNull::dangling() {
            // SAFETY: `fp` is open and not used afterwards.
            unsafe { ffi::hts_close(self.fp.as_ptr()) };
            self.fp = NonNull::dangling();
        }
        if have_header && self.hdr != NonNull::dangling() {
            // SAFETY: made by sam_hdr_parse, not used afterwards.
            unsafe { ffi::sam_hdr_destroy(self.hdr.as_ptr()) };
        }
        self.hdr = NonNull::dangling();
        if have_record && self.record != NonNull::dangling() {
            // SAFETY: made by bam_init1, not used afterwards.
            unsafe { ffi::bam_destroy1(self.record.as_ptr()) };
        }
        self.record = NonNull::dangling();
        // The socket is closed with `fp`: the drain ends.
        if let Some(d) = self.drain.take() {
            // Keep the drain from blocking on a full channel: it is unbounded.
            let _ = d.join();
        }
    }
}

impl<W: Write> Drop for CramWriter<W> {
    fn drop(&mut self) {
        let (h, r) = (self.hdr != NonNull::dangling(), self.record != NonNull::dangling());
        self.close(h, r);
    }
}

/// Applies one `OPT=VAL` format option as samtools' `-O cram,OPT=VAL` does.
fn apply_option(fp: *mut ffi::htsFile, option: &[u8], name: &Path) -> Result<(), Error> {
    let shown = String::from_utf8_lossy(option).into_owned();
    let c = CString::new(option).map_err(|_| Error::InvalidArgument(format!("output option {shown:?} contains a NUL byte")))?;
    let mut list: *mut ffi::hts_opt = std::ptr::null_mut();
    // SAFETY: `list` starts empty; htslib copies the string.
    if unsafe { ffi::hts_opt_add(&mut list, c.as_ptr()) } != 0 {
        // SAFETY: frees what was added (NULL is allowed).
        unsafe { ffi::hts_opt_free(list) };
        return Err(Error::InvalidArgument(format!("output option {shown:?} is not one htslib knows")));
    }
    // SAFETY: `fp` is open and `list` is a valid list.
    let applied = unsafe { ffi::hts_opt_apply(fp, list) };
    // SAFETY: the list is not used afterwards.
    unsafe { ffi::hts_opt_free(list) };
    if applied != 0 {
        let what = match shown.split_once('=') {
            Some(("reference", file)) => return Err(Error::Message("cannot read the reference FASTA (or its .fai)".into()).with_path(Path::new(file))),
            _ => format!("cannot apply output option {shown:?}"),
        };
        return Err(Error::Message(what).with_path(name));
    }
    Ok(())
}

/// The header as SAM text with an `@SQ` line for each reference (samtools
/// writes the references of the binary header; sort and view have added
/// missing lines already).
fn header_text(header: &Header) -> Vec<u8> {
    let mut text = header.text.clone();
    if let Some(end) = text.iter().position(|&b| b == 0) {
        text.truncate(end);
    }
    text
}

/// Where the `CG` field of a record whose CIGAR is BAM's placeholder for
/// a long one lies in `record`, and its operation count, by htslib's rules
/// (`bam_tag2cigar`: placed, first operation a soft clip of the whole
/// read, a `CG:B:I` array at least as long as the placeholder).
fn long_cigar(record: &[u8]) -> Option<(std::ops::Range<usize>, u32)> {
    let r = RecordRef::new_prevalidated(record);
    let stored = r.raw_cigar();
    if stored.is_empty() || r.ref_id() < 0 || r.pos() < 0 {
        return None;
    }
    if stored.get(0) != Some((CigarOp::SoftClip, r.seq_len() as u32)) {
        return None;
    }
    match r.aux().find(*b"CG") {
        Some(AuxValue::Array { subtype: b'I' | b'i', count, bytes }) if count >= stored.len() && count < (1 << 29) => {
            // `bytes` lies in `record`, after the tag, type, subtype and count.
            let at = bytes.as_ptr() as usize - record.as_ptr() as usize;
            Some((at - 8..at + bytes.len(), count as u32))
        }
        _ => None,
    }
}

/// `record` with the CIGAR of its `CG` field (`cg`, the whole field) in
/// place of the placeholder and the field removed, into `out` (the
/// fixed fields' `n_cigar` is not touched: [`fill`] is given the count).
fn restore_long_cigar(record: &[u8], cg: std::ops::Range<usize>, out: &mut Vec<u8>) {
    let l_name = usize::from(record[8]);
    let cigar = 32 + l_name;
    let n_stored = usize::from(u16::from_le_bytes([record[12], record[13]]));
    out.clear();
    out.extend_from_slice(&record[..cigar]);
    out.extend_from_slice(&record[cg.start + 8..cg.end]);
    out.extend_from_slice(&record[cigar + 4 * n_stored..cg.start]);
    out.extend_from_slice(&record[cg.end..]);
}

/// Fills htslib's record from BAM bytes (as `bam_read1` does: the name
/// padded with NULs so the CIGAR is 4-byte aligned); `n_cigar`: the
/// operation count of a long CIGAR put back ([`restore_long_cigar`]).
fn fill(b: &mut ffi::bam1_t, record: &[u8], n_cigar: Option<u32>) -> Result<(), &'static str> {
    if record.len() < 32 {
        return Err("record shorter than its fixed fields");
    }
    let i32_at = |at: usize| i32::from_le_bytes(record[at..at + 4].try_into().expect("4 bytes"));
    let u16_at = |at: usize| u16::from_le_bytes([record[at], record[at + 1]]);
    let l_name = usize::from(record[8]);
    let n_cigar = n_cigar.unwrap_or_else(|| u32::from(u16_at(12)));
    let body = &record[32..];
    if l_name == 0 || body.len() < l_name {
        return Err("record shorter than its read name");
    }
    let extranul = (4 - l_name % 4) % 4;
    let l_data = body.len() + extranul;
    if l_data > i32::MAX as usize {
        return Err("record too large");
    }
    if (b.m_data as usize) < l_data + 1 || b.data.is_null() {
        let size = (l_data + 1).next_power_of_two().max(64);
        // SAFETY: `data` is NULL or htslib's malloc'ed buffer, which
        // htslib frees with free(): realloc keeps it so.
        let grown = unsafe { libc::realloc(b.data.cast(), size) } as *mut u8;
        if grown.is_null() {
            return Err("out of memory");
        }
        b.data = grown;
        b.m_data = size as u32;
    }
    // SAFETY: `data` has room for `l_data + 1` bytes (just ensured).
    let data = unsafe { std::slice::from_raw_parts_mut(b.data, l_data) };
    data[..l_name].copy_from_slice(&body[..l_name]);
    data[l_name..l_name + extranul].fill(0);
    data[l_name + extranul..].copy_from_slice(&body[l_name..]);
    b.l_data = l_data as c_int;
    let c = &mut b.core;
    c.tid = i32_at(0);
    c.pos = i64::from(i32_at(4));
    c.l_qname = (l_name + extranul) as u16;
    c.l_extranul = extranul as u8;
    c.qual = record[9];
    c.bin = u16_at(10);
    c.n_cigar = n_cigar;
    c.flag = u16_at(14);
    c.l_qseq = i32_at(16);
    c.mtid = i32_at(20);
    c.mpos = i64::from(i32_at(24));
    c.isize = i64::from(i32_at(28));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::record::tests::encode;

    #[test]
    fn long_cigars_are_put_back_as_htslib_reads_them() {
        // 70,000 operations 1M1I: BAM's placeholder and CG tag.
        let n = 70_000u32;
        let ops: Vec<u32> = (0..n).map(|i| if i % 2 == 0 { 1 << 4 } else { 1 << 4 | 1 }).collect();
        let l_seq = n as usize;
        let seq = "A".repeat(l_seq);
        let mut aux = b"XAZx\0CGBI".to_vec();
        aux.extend_from_slice(&n.to_le_bytes());
        for op in &ops {
            aux.extend_from_slice(&op.to_le_bytes());
        }
        aux.extend_from_slice(b"NMi\x05\0\0\0");
        let record = encode("r1", 0, 0, 10, 60, &[(4, l_seq as u32), (3, n / 2)], &seq, &aux);
        let (cg, count) = long_cigar(&record).expect("placeholder recognised");
        assert_eq!(count, n);
        let mut out = Vec::new();
        restore_long_cigar(&record, cg, &mut out);
        let mut b = ffi::bam1_t {
            core: ffi::bam1_core_t {
                pos: 0,
                tid: 0,
                bin: 0,
                qual: 0,
                l_extranul: 0,
                flag: 0,
                l_qname: 0,
                n_cigar: 0,
                l_qseq: 0,
                mtid: 0,
                mpos: 0,
                isize: 0,
            },
            id: 0,
            data: std::ptr::null_mut(),
            l_data: 0,
            m_data: 0,
            mempolicy: 0,
        };
        fill(&mut b, &out, Some(count)).unwrap();
        assert_eq!(b.core.n_cigar, n);
        assert_eq!((b.core.l_qname, b.core.l_extranul), (4, 1));
        // SAFETY: `fill` made `l_data` bytes.
        let data = unsafe { std::slice::from_raw_parts(b.data, b.l_data as usize) };
        assert_eq!(&data[..4], b"r1\0\0");
        assert_eq!(u32::from_le_bytes(data[4..8].try_into().unwrap()), ops[0]);
        assert_eq!(u32::from_le_bytes(data[8..12].try_into().unwrap()), ops[1]);
        let aux_start = 4 + 4 * n as usize + l_seq.div_ceil(2) + l_seq;
        assert_eq!(&data[aux_start..], b"XAZx\0NMi\x05\0\0\0");
        // SAFETY: allocated by `fill` with realloc.
        unsafe { libc::free(b.data.cast()) };
        // A short CIGAR is left alone.
        assert!(long_cigar(&encode("r", 0, 0, 1, 60, &[(0, 4)], "ACGT", b"")).is_none());
    }
}
