//! SAM text, read and written byte for byte as htslib 1.16 does.
//!
//! Reading, SAM text → BAM records (as `samtools view -b` writes them), in
//! three layers:
//!
//! - [`SamHeader`] turns the `@` header lines into a BAM
//!   [`Header`](crate::bam::Header) (text kept verbatim, one `\n` per line,
//!   `\r\n` folded to `\n`; references from `@SQ SN:/LN:` in order) and a
//!   [`RefNames`] lookup.
//! - [`encode_record`] appends one SAM line's BAM record (`block_size` + data)
//!   to a caller's buffer, replicating htslib's `sam_parse1` + `bam_write1`:
//!   smallest integer aux types, B-array type rescue, `l_extranul` not
//!   written, CIGARs of more than 65,535 operations moved to a `CG:B,I` tag
//!   behind a `<l_seq>S<rlen>N` placeholder, reads with an unknown RNAME or
//!   POS 0 turned unmapped (with a [`Warnings`] flag), the same hard errors.
//! - [`SamReader`] streams a plain-text SAM (compressed SAM once
//!   decompressed: [`crate::input::open`]) from any [`Read`](std::io::Read) in large chunks and encodes records
//!   into a caller's arena ([`SamReader::next_batch`]) or hands out
//!   [`RecordRef`](crate::bam::RecordRef)s one at a time
//!   ([`SamReader::for_each_record`]). [`BgzfSamReader`] reads a bgzipped
//!   SAM held whole with the BGZF virtual offset of each line end, for an
//!   index of it.
//!
//! Nothing is allocated per record on the common path; the rare paths
//! (a `CG` tag in the input, float fields longer than 256 bytes) allocate.
//!
//! ```
//! use fasthts::sam::SamReader;
//! let sam = b"@SQ\tSN:chr1\tLN:1000\nr1\t0\tchr1\t5\t60\t4M\t*\t0\t0\tACGT\tIIII\tNM:i:0\n";
//! let mut reader = SamReader::new(&sam[..]).unwrap();
//! assert_eq!(reader.header().references[0].name, "chr1");
//! let mut n = 0;
//! reader
//!     .for_each_record(|rec| {
//!         assert_eq!(rec.pos(), 4);
//!         n += 1;
//!         Ok::<(), fasthts::sam::SamError>(())
//!     })
//!     .unwrap();
//! assert_eq!(n, 1);
//! ```
//!
//! Writing, BAM records → SAM text (as `samtools view --no-PG` prints it):
//! [`format_header`] and [`format_record`] append the text of a header and
//! of one record; [`ParallelFormatter`] and [`format_records_parallel`]
//! format batches of records on the rayon pool; [`SamWriter`] writes a whole
//! file through one reused buffer. Numbers are printed as htslib prints them
//! ([`put_printf_g`], [`put_kputd`]).
//!
//! ```
//! use fasthts::bam::BamFile;
//! use fasthts::sam::SamWriter;
//! # let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/small.bam");
//! let bam = BamFile::open(path)?;
//! let mut sam = SamWriter::new(Vec::new(), bam.header());
//! sam.write_header()?;
//! let mut records = bam.records()?;
//! while let Some(r) = records.next_record()? {
//!     sam.write_record(&r)?;
//! }
//! let text = sam.finish()?;
//! assert!(text.starts_with(b"@"));
//! # Ok::<(), fasthts::Error>(())
//! ```

mod bgzf_lines;
mod bytes;
mod encode;
mod encode_aux;
mod format_number;
mod header;
mod parse_number;
mod reader;
mod ref_names;
mod write;

#[cfg(test)]
mod tests;

pub use bgzf_lines::BgzfSamReader;
pub(crate) use bgzf_lines::{bgzf_error, next_line as next_bgzf_line};
pub(crate) use reader::qname_of;
pub use encode::{encode_record, encode_record_with, wide_positions, wide_positions_len, wide_span, Field, Positions, RecordError, Warnings, WIDE_POSITIONS_LEN};
pub use format_number::{put_kputd, put_printf_g, put_printf_g_precision};
pub use header::{HeaderError, HeaderWarning, SamHeader};
pub use reader::{RecordWarning, SamReader, DEFAULT_CHUNK_BYTES, MAX_KEPT_WARNINGS};
pub use ref_names::RefNames;
pub use write::{format_header, format_record, format_records_parallel, format_wide_record, ParallelFormatter, SamWriter};
pub(crate) use encode::nt16;
pub(crate) use write::format_aux;

pub use crate::error::sam::SamError;
