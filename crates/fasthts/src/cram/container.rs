//! CRAM's container headers and the integers they are written in (ITF8,
//! LTF8): one reader of a container header, with htslib's checks, for
//! listing a file's containers ([`super::containers`]) and for building
//! its `.crai`.

use std::io::{self, Read};

/// A container header.
pub(super) struct ContainerHeader {
    /// Bytes of the header itself.
    pub(super) header_len: usize,
    /// Bytes of data after the header.
    pub(super) length: usize,
    /// Reference id (-1: unplaced reads; -2: several references).
    pub(super) ref_id: i32,
    /// First aligned position (1-based).
    pub(super) start: i32,
    /// Aligned span.
    pub(super) span: i32,
    /// Number of records.
    pub(super) records: i32,
    /// Number of blocks.
    pub(super) blocks: i32,
    /// Where each slice starts in the data.
    pub(super) landmarks: Vec<i32>,
}

impl ContainerHeader {
    /// CRAM's EOF container (htslib's test).
    pub(super) fn is_eof(&self) -> bool {
        self.records == 0 && self.ref_id == -1 && self.start == 0x454f46
    }
}

/// Reads a container header of CRAM `major` (2 or 3) at `r`'s position,
/// checking its CRC32 (CRAM 3) as htslib does: an error of kind
/// `InvalidData` when it fails or a length is negative, `UnexpectedEof`
/// when the header is cut off.
pub(super) fn container_header(r: &mut impl Read, major: u8) -> io::Result<ContainerHeader> {
    let mut bytes = Vec::with_capacity(64);
    let r = &mut Tee { inner: r, bytes: &mut bytes };
    let mut word = [0u8; 4];
    r.read_exact(&mut word)?;
    let length = i32::from_le_bytes(word);
    let ref_id = itf8(r)?;
    let start = itf8(r)?;
    let span = itf8(r)?;
    let records = itf8(r)?;
    if major >= 3 {
        ltf8(r)?; // record counter
    } else {
        itf8(r)?;
    }
    ltf8(r)?; // bases
    let blocks = itf8(r)?;
    let n_landmarks = itf8(r)?;
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    if length < 0 || n_landmarks < 0 {
        return Err(bad("a negative length or landmark count"));
    }
    let mut landmarks = Vec::with_capacity(n_landmarks.min(1 << 16) as usize);
    for _ in 0..n_landmarks {
        landmarks.push(itf8(r)?);
    }
    if major >= 3 {
        let crc = libdeflater::crc32(&r.bytes[..]);
        r.read_exact(&mut word)?;
        if u32::from_le_bytes(word) != crc {
            return Err(bad("header CRC32 mismatch"));
        }
    }
    Ok(ContainerHeader { header_len: r.bytes.len(), length: length as usize, ref_id, start, span, records, blocks, landmarks })
}

/// A reader that keeps a copy of the bytes read through it.
pub(super) struct Tee<'a> {
    pub(super) inner: &'a mut dyn Read,
    pub(super) bytes: &'a mut Vec<u8>,
}

impl Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

fn byte(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(u32::from(b[0]))
}

/// CRAM's ITF8 integer (1 to 5 bytes).
pub(super) fn itf8(r: &mut impl Read) -> io::Result<i32> {
    let b0 = byte(r)?;
    let v = if b0 < 0x80 {
        b0
    } else if b0 < 0xc0 {
        (b0 & 0x3f) << 8 | byte(r)?
    } else if b0 < 0xe0 {
        (b0 & 0x1f) << 16 | byte(r)? << 8 | byte(r)?
    } else if b0 < 0xf0 {
        (b0 & 0x0f) << 24 | byte(r)? << 16 | byte(r)? << 8 | byte(r)?
    } else {
        (b0 & 0x0f) << 28 | byte(r)? << 20 | byte(r)? << 12 | byte(r)? << 4 | (byte(r)? & 0x0f)
    };
    Ok(v as i32)
}

/// CRAM's LTF8 integer (1 to 9 bytes); only skipped here.
pub(super) fn ltf8(r: &mut impl Read) -> io::Result<()> {
    let b0 = byte(r)?;
    let extra = (b0 as u8).leading_ones();
    for _ in 0..extra.min(8) {
        byte(r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itf8_reads_every_length() {
        let cases: [(&[u8], i32); 5] = [
            (&[0x05], 5),
            (&[0x81, 0x02], 0x102),
            (&[0xc1, 0x02, 0x03], 0x10203),
            (&[0xe1, 0x02, 0x03, 0x04], 0x1020304),
            (&[0xff, 0xff, 0xff, 0xff, 0x0f], -1),
        ];
        for (bytes, want) in cases {
            assert_eq!(itf8(&mut &bytes[..]).unwrap(), want, "{bytes:?}");
        }
        let mut nine: &[u8] = &[0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9];
        ltf8(&mut nine).unwrap();
        assert_eq!(nine, &[9]);
    }

    /// CRAM 3's EOF container (23 bytes of header, 15 of data), as
    /// htslib writes it.
    const EOF_3: [u8; 38] = [
        0x0f, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xe0, 0x45, 0x4f, 0x46, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 0xbd,
        0xd9, 0x4f, 0x00, 0x01, 0x00, 0x06, 0x06, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0xee, 0x63, 0x01, 0x4b,
    ];

    #[test]
    fn a_container_header_is_read_with_its_crc32_checked() {
        let header = container_header(&mut &EOF_3[..], 3).unwrap();
        assert!(header.is_eof());
        assert_eq!((header.header_len, header.length, header.blocks, header.landmarks.len()), (23, 15, 1, 0));
        let mut flipped = EOF_3;
        flipped[9] ^= 0x01;
        let err = container_header(&mut &flipped[..], 3).err().unwrap();
        assert_eq!((err.kind(), err.to_string()), (io::ErrorKind::InvalidData, "header CRC32 mismatch".to_string()));
        let err = container_header(&mut &EOF_3[..21], 3).err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        // CRAM 2 has no CRC32: the header ends before it.
        assert_eq!(container_header(&mut &flipped[..], 2).unwrap().header_len, 19);
    }
}
