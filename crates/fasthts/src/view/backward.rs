//! samtools view `-B`: the backward CIGAR operation (`B`) collapsed, as
//! samtools' `bam_remove_B` does it (the overlapping bases merged, the
//! better base kept with its quality reduced by the other's).

const BACK: u32 = 9;

/// Whether CIGAR operation `op` consumes the query (M I S = X).
fn consumes_query(op: u32) -> bool {
    matches!(op, 0 | 1 | 4 | 7 | 8)
}

fn base(seq: &[u8], i: usize) -> u8 {
    seq[i / 2] >> ((1 - (i & 1)) * 4) & 0xf
}

fn set_base(seq: &mut [u8], i: usize, c: u8) {
    let shift = (1 - (i & 1)) * 4;
    seq[i / 2] = (seq[i / 2] & !(0xf << shift)) | c << shift;
}

/// Writes `data` (a record without `block_size`) with its `B` operations
/// collapsed to `out` (cleared first) and returns true; false when the
/// record has none (or is unmapped) and is left as it is. A `B` samtools
/// cannot collapse (first, or longer than the query before it) leaves the
/// record flagged unmapped, its bases as far as samtools got.
pub fn remove_backward(data: &[u8], out: &mut Vec<u8>) -> bool {
    let name_end = 32 + usize::from(data[8]);
    let n_cigar = usize::from(u16::from_le_bytes([data[12], data[13]]));
    let flag = u16::from_le_bytes([data[14], data[15]]);
    let l_seq = i32::from_le_bytes(data[16..20].try_into().expect("4 bytes")) as usize;
    let cigar: Vec<u32> =
        data[name_end..name_end + 4 * n_cigar].chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).collect();
    if flag & crate::bam::flags::UNMAPPED != 0 || !cigar.iter().any(|&c| c & 0xf == BACK) {
        return false;
    }
    out.clear();
    out.extend_from_slice(data);
    let seq_start = name_end + 4 * n_cigar;
    let qual_start = seq_start + l_seq.div_ceil(2);
    let aux_start = qual_start + l_seq;
    let set_unmapped = |out: &mut Vec<u8>| {
        let f = flag | crate::bam::flags::UNMAPPED;
        out[14..16].copy_from_slice(&f.to_le_bytes());
    };
    if cigar[0] & 0xf == BACK || l_seq == 0 {
        set_unmapped(out);
        return true;
    }
    let (head, tail) = out.split_at_mut(qual_start);
    let seq = &mut head[seq_start..];
    let qual = &mut tail[..l_seq];
    let no_qual = qual[0] == 0xff;
    let mut new_cigar: Vec<u32> = Vec::with_capacity(n_cigar);
    let (mut i, mut j, mut end_j) = (0usize, 0usize, -1i64);
    for (k, &c) in cigar.iter().enumerate() {
        let (op, len) = (c & 0xf, (c >> 4) as usize);
        if op == BACK {
            if k == n_cigar - 1 {
                break;
            }
            if len > j {
                set_unmapped(out);
                return true;
            }
            // Shorten the query-consuming operations before it by `len`.
            let mut t = new_cigar.len() as i64 - 1;
            let mut u = 0;
            while t >= 0 {
                let c1 = new_cigar[t as usize];
                if consumes_query(c1 & 0xf) {
                    let len1 = (c1 >> 4) as usize;
                    if u + len1 >= len {
                        new_cigar[t as usize] -= ((len - u) as u32) << 4;
                        break;
                    }
                    u += len1;
                }
                t -= 1;
            }
            if t >= 0 && new_cigar[t as usize] >> 4 == 0 {
                t -= 1;
            }
            new_cigar.truncate((t + 1) as usize);
            end_j = j as i64;
            j -= len;
        } else {
            new_cigar.push(c);
            if consumes_query(op) {
                if i != j {
                    for u in 0..len {
                        let c = base(seq, i + u);
                        if ((j + u) as i64) < end_j {
                            let c0 = base(seq, j + u);
                            if c != c0 {
                                if qual[j + u] < qual[i + u] {
                                    set_base(seq, j + u, c);
                                    qual[j + u] = qual[i + u] - qual[j + u];
                                } else {
                                    qual[j + u] -= qual[i + u];
                                }
                            } else {
                                qual[j + u] = qual[j + u].max(qual[i + u]);
                            }
                        } else {
                            set_base(seq, j + u, c);
                            qual[j + u] = qual[i + u];
                        }
                    }
                }
                i += len;
                j += len;
            }
        }
    }
    if no_qual {
        qual[0] = 0xff;
    }
    // Adjacent operations of one kind merged, empty ones dropped.
    for k in 1..new_cigar.len() {
        if new_cigar[k] & 0xf == new_cigar[k - 1] & 0xf {
            new_cigar[k] += new_cigar[k - 1] >> 4 << 4;
            new_cigar[k - 1] &= 0xf;
        }
    }
    new_cigar.retain(|&c| c >> 4 != 0);
    let mut record = Vec::with_capacity(data.len());
    record.extend_from_slice(&out[..name_end]);
    for c in &new_cigar {
        record.extend_from_slice(&c.to_le_bytes());
    }
    record.extend_from_slice(&out[seq_start..seq_start + j.div_ceil(2)]);
    record.extend_from_slice(&out[qual_start..qual_start + j]);
    record.extend_from_slice(&data[aux_start..]);
    record[12..14].copy_from_slice(&(new_cigar.len() as u16).to_le_bytes());
    record[16..20].copy_from_slice(&(j as i32).to_le_bytes());
    *out = record;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bam::record::tests::encode;

    #[test]
    fn records_without_b_are_left_alone() {
        let d = encode("r", 0, 0, 10, 60, &[(0, 4)], "ACGT", b"");
        assert!(!remove_backward(&d, &mut Vec::new()));
    }

    #[test]
    fn a_backward_step_merges_the_overlap() {
        // 4M 2B 3M: the last two bases of the first M and the first two of
        // the second overlap; the result is 5M. Equal bases keep the higher
        // quality; different ones the first base, quality less the other's.
        for (seq, bases, quals) in [("ACGTGTC", b"ACGTC", [30, 30, 30, 30, 30]), ("ACGTTAC", b"ACGTC", [30, 30, 0, 0, 30])] {
            let d = encode("r", 0, 0, 10, 60, &[(0, 4), (9, 2), (0, 3)], seq, b"");
            let mut out = Vec::new();
            assert!(remove_backward(&d, &mut out));
            let r = crate::bam::RecordRef::new(&out, 1).unwrap();
            assert_eq!(r.cigar().iter().map(|(op, l)| (op.letter(), l)).collect::<Vec<_>>(), vec![(b'M', 5)]);
            assert_eq!((0..5).map(|i| r.base(i)).collect::<Vec<_>>(), bases);
            assert_eq!(r.qual(), &quals);
        }
    }

    #[test]
    fn a_leading_backward_step_unmaps() {
        let d = encode("r", 0, 0, 10, 60, &[(9, 2), (0, 4)], "ACGT", b"");
        let mut out = Vec::new();
        assert!(remove_backward(&d, &mut out));
        assert_eq!(crate::bam::RecordRef::new(&out, 1).unwrap().flag(), 4);
    }
}
