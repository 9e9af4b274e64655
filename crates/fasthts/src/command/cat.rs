//! `cat`: samtools 1.16's concatenation of BAM or CRAM files without
//! decoding their records (`bam_cat.c`).
//!
//! BAM: the header (from `-h FILE` or the first input, with an `@PG`
//! line unless `--no-PG`) is compressed into blocks of its own; of each
//! input, the records that share a block with the end of its header are
//! compressed again (blocks of their own, as htslib's `bgzf_write` and
//! `bgzf_flush` cut them), and its later blocks are copied as they are,
//! except for its last 28 bytes when they look like an empty block (the
//! EOF marker); one EOF marker ends the output. Compressed by the system's
//! libdeflate at htslib's default level, as samtools is, the output has
//! samtools' bytes.
//!
//! CRAM: containers are copied by htslib as samtools copies them
//! ([`crate::cram::cat`]).
//!
//! Unlike samtools, an input cut inside a BGZF block is refused (samtools
//! copies the partial block with a warning), and standard input may be
//! the first input (samtools 1.16 fails: it has closed it after looking
//! at its format).

use super::{Report, Warning};
use crate::bam::Header;
use crate::bgzf::{htslib_libdeflate_level, Block, BlockHeader, DEFAULT_LEVEL, EOF_MARKER};
use crate::format::Format;
use crate::input::{self, Peeked};
use crate::output::{Named, TempOutput};
use crate::sort::{add_missing_sq_lines, add_pg_line};
use crate::Error;
use fasthts_io::compression::Compression;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// What `cat` is asked besides its inputs and output.
#[derive(Clone, Debug, Default)]
pub struct CatOptions {
    /// `-h FILE`: the header to write (SAM, BAM or CRAM); `None`: the
    /// first input's.
    pub header: Option<PathBuf>,
    /// `(version, command line)` for the `@PG` line, or `None` (`--no-PG`).
    pub program: Option<(String, String)>,
}

/// Reads samtools' `-b FILE` list of inputs: one name a line (a trailing
/// `\r` dropped, empty lines skipped), from a plain or compressed file;
/// `:a.bam,b.bam` (a name starting with a colon that is no file) lists
/// them in place, as htslib's `hts_readlines` does.
pub fn read_file_list(list: &Path) -> Result<Vec<PathBuf>, Error> {
    use std::os::unix::ffi::OsStrExt;
    let invalid = || Error::Message(format!("invalid file list \"{}\"", list.display()));
    let bytes = match std::fs::File::open(list) {
        Ok(file) => {
            let (mut text, _) = fasthts_io::compression::decompress(Box::new(file), 1).map_err(|e| Error::from(e).with_path(list))?;
            let mut bytes = Vec::new();
            text.read_to_end(&mut bytes).map_err(|e| Error::from(e).with_path(list))?;
            bytes
        }
        Err(_) => match list.as_os_str().as_bytes().strip_prefix(b":") {
            Some(names) => return Ok(names.split(|&c| c == b',').map(|n| PathBuf::from(std::ffi::OsStr::from_bytes(n))).collect()),
            None => return Err(invalid()),
        },
    };
    Ok(bytes
        .split(|&c| c == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .filter(|line| !line.is_empty())
        .map(|line| PathBuf::from(std::ffi::OsStr::from_bytes(line)))
        .collect())
}

/// Concatenates `inputs` (`-`: standard input) into `output` (`-`:
/// standard output) as samtools cat does (see the module's note). The
/// first input's format decides: BAM inputs are all BAM (BGZF), CRAM
/// inputs all CRAM; SAM is refused, as by samtools. A file output is
/// written under a temporary name and renamed into place once complete;
/// on an error, nothing is left.
pub fn cat_files(inputs: &[PathBuf], output: &Path, options: &CatOptions, report: &dyn Report) -> Result<(), Error> {
    let Some(first) = inputs.first() else {
        return Err(Error::InvalidArgument("no input files".into()));
    };
    let mut read = inputs.to_vec();
    read.extend(options.header.iter().cloned());
    crate::output::refuse_input_as_output(&[output], &read)?;
    let peeked = input::peek(first)?;
    match peeked.format() {
        Format::Bam(Compression::Bgzf) => with_output(output, |out| bam_cat(peeked, inputs, options, out, report)),
        Format::Cram => {
            drop(peeked);
            inputs[1..].iter().try_for_each(|path| check_cram_input(path))?;
            crate::cram::cat::cram_cat(inputs, output, options.header.as_deref(), options.program.as_ref())
        }
        format => Err(not_concatenable(format).with_path(first)),
    }
}

/// Refuses an input after a first CRAM that is not CRAM too (standard
/// input, which cannot be read twice, is refused by [`crate::cram::cat`]).
fn check_cram_input(path: &Path) -> Result<(), Error> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    match input::peek(path)?.format() {
        Format::Cram => Ok(()),
        Format::Bam(_) => {
            Err(Error::Message("is BAM, and the first input CRAM: BAM and CRAM cannot be concatenated together".into()).with_path(path))
        }
        _ => Err(Error::Message("input is not BAM or CRAM".into()).with_path(path)),
    }
}

/// Why an input of `format` cannot be concatenated.
fn not_concatenable(format: Format) -> Error {
    match format {
        Format::Bam(_) => {
            Error::Message("uncompressed BAM cannot be concatenated block by block (compress it first, e.g. with fasthts view -b)".into())
        }
        Format::Cram => Error::Message("is CRAM, and the inputs before it BAM: BAM and CRAM cannot be concatenated together".into()),
        _ => Error::Message("input is not BAM or CRAM".into()),
    }
}

/// Runs `write` on the output named `output` (standard output for `-`),
/// and, for a file, renames it into place when `write` succeeded.
fn with_output(output: &Path, write: impl FnOnce(&mut dyn Write) -> Result<(), Error>) -> Result<(), Error> {
    if output.as_os_str() == "-" {
        let mut stdout = io::BufWriter::with_capacity(1 << 20, Named::new(io::stdout().lock(), crate::output::stdout_name()));
        write(&mut stdout)?;
        return stdout.flush().map_err(Error::from);
    }
    let (temp, file) = TempOutput::create(output)?;
    let mut writer = io::BufWriter::with_capacity(1 << 20, Named::new(crate::output::WritebackFile::new(file), temp.shown()));
    write(&mut writer)?;
    let file = writer.into_inner().map_err(|e| Error::from(e.into_error()))?.into_inner().into_inner();
    crate::output::sync_if_file(&file).map_err(|e| Error::from(e).with_path(temp.shown()))?;
    temp.commit()?;
    Ok(())
}

/// `data` compressed as htslib's `bgzf_write` then `bgzf_flush` compress
/// it into an output opened `"w"`: blocks of [`crate::bgzf::BLOCK_DATA_SIZE`]
/// bytes at the default level, by the system's libdeflate.
fn write_flushed(data: &[u8], out: &mut dyn Write) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let blocks = crate::bgzf::compress_all_as_htslib(data, htslib_libdeflate_level(DEFAULT_LEVEL));
    out.write_all(&blocks[..blocks.len() - EOF_MARKER.len()])
}

/// The header samtools writes: with its `@PG` line, the text as htslib
/// rebuilds it; without, as read.
fn header_bytes(header: &Header, options: &CatOptions) -> Vec<u8> {
    match &options.program {
        Some((version, command_line)) => {
            let text = add_missing_sq_lines(&add_pg_line(&header.text, "fasthts", version, command_line), &header.references);
            Header { text, references: header.references.clone() }.to_bytes()
        }
        None => header.to_bytes(),
    }
}

fn bam_cat(first: Peeked, inputs: &[PathBuf], options: &CatOptions, out: &mut dyn Write, report: &dyn Report) -> Result<(), Error> {
    if let Some(path) = &options.header {
        let header = input::open(path)?.header().clone();
        write_flushed(&header_bytes(&header, options), out)?;
    }
    let mut first = Some(first);
    for (i, path) in inputs.iter().enumerate() {
        let peeked = match first.take() {
            Some(p) => p,
            None => input::peek(path)?,
        };
        match peeked.format() {
            Format::Bam(Compression::Bgzf) => {}
            format => return Err(not_concatenable(format).with_path(path)),
        }
        let mut blocks = BlockStream::new(peeked.into_reader());
        let (header, rest_of_block) = read_header(&mut blocks).map_err(|e| e.with_path(path))?;
        if i == 0 && options.header.is_none() {
            write_flushed(&header_bytes(&header, options), out)?;
        }
        write_flushed(&rest_of_block, out)?;
        let tail = copy_blocks(&mut blocks, out, path)?;
        finish_input(tail, path, out, report)?;
    }
    out.write_all(&EOF_MARKER)?;
    Ok(())
}

/// What samtools does with an input's last 28 bytes (`tail`; `None` when
/// nothing followed the header's block): dropped when they begin like a
/// gzip member and end with an uncompressed size of 0 (the EOF marker),
/// else copied with a warning. A missing EOF marker is warned about as
/// htslib does.
fn finish_input(tail: Option<[u8; 28]>, path: &Path, out: &mut dyn Write, report: &dyn Report) -> Result<(), Error> {
    if tail != Some(EOF_MARKER) {
        report.warning(Warning::MissingEofMarker { path: path.to_path_buf() });
    }
    let Some(tail) = tail else { return Ok(()) };
    let empty_block = tail[0] == 0x1f && tail[1] == 0x8b && tail[24..] == [0; 4];
    if !empty_block {
        report.warning(Warning::UnexpectedBlockStructure { path: path.to_path_buf() });
        out.write_all(&tail)?;
    }
    Ok(())
}

/// A BGZF input read as it comes, a window of it in memory.
struct BlockStream {
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    /// The window: `buf[start..end]` is the input from `offset` on.
    start: usize,
    end: usize,
    offset: u64,
    at_end: bool,
}

/// Bytes read from an input at a time.
const READ_BYTES: usize = 4 << 20;

impl BlockStream {
    fn new(reader: Box<dyn Read + Send>) -> BlockStream {
        BlockStream { reader, buf: Vec::new(), start: 0, end: 0, offset: 0, at_end: false }
    }

    fn window(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Reads until the window holds `n` bytes or the input has ended;
    /// false when it has ended first.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        while self.end - self.start < n && !self.at_end {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let want = self.end + READ_BYTES.max(n);
            if self.buf.len() < want {
                self.buf.resize(want, 0);
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.at_end = true,
                Ok(got) => self.end += got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start >= n)
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// The size of the block at the window's start, once all of it is in
    /// the window; `None` at the end of the input.
    fn next_block(&mut self) -> Result<Option<usize>, Error> {
        if !self.fill(BlockHeader::FIXED_LEN)? {
            return match self.end - self.start {
                0 => Ok(None),
                _ => Err(truncated(self.offset)),
            };
        }
        let extra = BlockHeader::extra_len(self.window());
        self.fill(BlockHeader::FIXED_LEN + extra)?;
        let header = BlockHeader::parse(self.window(), self.offset)?;
        if !self.fill(header.size)? {
            return Err(truncated(self.offset));
        }
        Ok(Some(header.size))
    }
}

fn truncated(offset: u64) -> Error {
    Error::Message(format!("truncated file: the BGZF block at offset {offset} is cut short"))
}

/// Reads an input's BAM header, block by block; returns it and the rest
/// of the block where it ends (records to compress again).
fn read_header(blocks: &mut BlockStream) -> Result<(Header, Vec<u8>), Error> {
    let mut inflated = Vec::new();
    let mut decompressor = libdeflater::Decompressor::new();
    let mut walk = HeaderWalk::default();
    loop {
        let Some(size) = blocks.next_block()? else {
            return Err(Error::Message("couldn't read the BAM header (the file ends inside it)".into()));
        };
        let block =
            Block::parse(blocks.window(), 0).map_err(|e| Error::Message(format!("{e} in the BGZF block at offset {}", blocks.offset)))?;
        let at = inflated.len();
        inflated.resize(at + block.uncompressed_size as usize, 0);
        block
            .inflate_into(blocks.window(), &mut decompressor, &mut inflated[at..])
            .map_err(|e| Error::Message(format!("{e} in the BGZF block at offset {}", blocks.offset)))?;
        blocks.consume(size);
        if let Some(len) = walk.advance(&inflated)? {
            let header = Header::read_from(&mut &inflated[..len])?;
            return Ok((header, inflated[len..].to_vec()));
        }
    }
}

/// Where a BAM header ends in its decompressed bytes, found as they
/// arrive without going over the same bytes twice.
#[derive(Default)]
struct HeaderWalk {
    /// Bytes of the header known so far.
    at: usize,
    /// References still to step over (`None`: before the count).
    references_left: Option<u32>,
}

impl HeaderWalk {
    /// The header's length once `bytes` holds all of it.
    fn advance(&mut self, bytes: &[u8]) -> Result<Option<usize>, Error> {
        let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        if self.references_left.is_none() {
            if bytes.len() >= 4 && bytes[..4] != *b"BAM\x01" {
                return Err(crate::bam::BamError::NotBam.into());
            }
            let Some(l_text) = u32_at(4) else { return Ok(None) };
            let Some(n_ref) = u32_at(8 + l_text as usize) else { return Ok(None) };
            self.at = 12 + l_text as usize;
            self.references_left = Some(n_ref);
        }
        while let Some(left @ 1..) = self.references_left {
            let Some(l_name) = u32_at(self.at) else { return Ok(None) };
            let next = self.at + 4 + l_name as usize + 4;
            if bytes.len() < next {
                return Ok(None);
            }
            self.at = next;
            self.references_left = Some(left - 1);
        }
        Ok(Some(self.at))
    }
}

/// Copies the rest of `blocks` to `out` as it is but its last 28 bytes,
/// which it returns (`None` when nothing was left), as samtools'
/// `bgzf_raw_read` loop holds them back; checks that the input is whole
/// blocks. Errors reading name `path`; errors writing are `out`'s.
fn copy_blocks(blocks: &mut BlockStream, out: &mut dyn Write, path: &Path) -> Result<Option<[u8; 28]>, Error> {
    const HELD: usize = EOF_MARKER.len();
    let mut copied = 0u64;
    let mut held = Vec::with_capacity(2 * HELD);
    loop {
        // Whole blocks in the window, from its start.
        let mut whole = 0;
        loop {
            let window = &blocks.buf[blocks.start + whole..blocks.end];
            if window.len() < BlockHeader::FIXED_LEN || window.len() < BlockHeader::FIXED_LEN + BlockHeader::extra_len(window) {
                break;
            }
            let header = BlockHeader::parse(window, blocks.offset + whole as u64).map_err(|e| Error::from(e).with_path(path))?;
            if window.len() < header.size {
                break;
            }
            whole += header.size;
        }
        if whole == 0 {
            match blocks.next_block().map_err(|e| e.with_path(path))? {
                Some(_) => continue,
                None => break,
            }
        }
        let window = &blocks.buf[blocks.start..blocks.start + whole];
        if window.len() >= HELD {
            out.write_all(&held)?;
            held.clear();
            out.write_all(&window[..window.len() - HELD])?;
            held.extend_from_slice(&window[window.len() - HELD..]);
        } else {
            held.extend_from_slice(window);
            let over = held.len().saturating_sub(HELD);
            out.write_all(&held[..over])?;
            held.drain(..over);
        }
        copied += whole as u64;
        blocks.consume(whole);
    }
    match copied {
        0 => Ok(None),
        // samtools: "truncated file?" when its first read is shorter.
        1..28 => Err(Error::Message("truncated file? (less than an empty block follows the header)".into()).with_path(path)),
        _ => Ok(Some(held.as_slice().try_into().expect("28 bytes held once 28 were copied"))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{data, scratch};
    use super::*;

    #[test]
    fn the_header_end_is_found_however_its_bytes_arrive() {
        let header = Header {
            text: b"@SQ\tSN:a\tLN:5\n@SQ\tSN:bb\tLN:7\n".to_vec(),
            references: vec![crate::bam::Reference { name: "a".into(), len: 5 }, crate::bam::Reference { name: "bb".into(), len: 7 }],
        };
        let mut bytes = header.to_bytes();
        let len = bytes.len();
        bytes.extend_from_slice(b"records follow");
        for step in [1, 3, 7, len, bytes.len()] {
            let mut walk = HeaderWalk::default();
            let mut found = None;
            let mut end = 0;
            while found.is_none() && end < bytes.len() {
                end = (end + step).min(bytes.len());
                found = walk.advance(&bytes[..end]).unwrap();
            }
            assert_eq!(found, Some(len), "step {step}");
        }
        assert!(HeaderWalk::default().advance(b"CRAM\x03\x00\x00\x00").is_err());
    }

    #[test]
    fn file_lists_as_htslib_reads_them() {
        let dir = scratch("cat-lists");
        let list = dir.join("list.txt");
        std::fs::write(&list, "a.bam\n\nb.bam\r\n c.bam\n").unwrap();
        let names = read_file_list(&list).unwrap();
        assert_eq!(names, [PathBuf::from("a.bam"), PathBuf::from("b.bam"), PathBuf::from(" c.bam")]);
        assert_eq!(read_file_list(Path::new(":x.bam,y.bam")).unwrap(), [PathBuf::from("x.bam"), PathBuf::from("y.bam")]);
        let missing = read_file_list(&dir.join("missing.txt")).unwrap_err().to_string();
        assert!(missing.starts_with("invalid file list"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn one_file_alone_without_pg_is_itself() {
        let dir = scratch("cat-self");
        let input = data("small.bam");
        let output = dir.join("out.bam");
        let options = CatOptions { header: None, program: None };
        cat_files(std::slice::from_ref(&input), &output, &options, &|_: Warning| {}).unwrap();
        assert!(std::fs::read(&output).unwrap() == std::fs::read(&input).unwrap());
        let refused = cat_files(std::slice::from_ref(&input), &input, &options, &|_: Warning| {}).unwrap_err().to_string();
        assert!(refused.contains("same file as input"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
