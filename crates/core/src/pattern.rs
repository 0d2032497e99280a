//! Block contents. [`stamp_unique`] makes every written 4 KiB distinct (so deduplicating
//! or compressing storage cannot flatter a result); [`fill_verify`] / [`check_verify`]
//! write and check self-describing blocks that encode seed, file and offset plus a
//! checksum, so a misplaced or corrupted block is reported with where it went wrong.

use crate::rng::{Rng, mix};

/// "IOLABVF1": the first word of every verify block.
pub const VERIFY_MAGIC: u64 = u64::from_le_bytes(*b"IOLABVF1");
/// Bytes of header before the pseudo-random payload.
pub const VERIFY_HEADER: usize = 48;
/// The smallest block `--verify` can describe.
pub const VERIFY_MIN_BLOCK: u64 = 64;

/// Overwrites the first 16 bytes of every 4 KiB of `buf` with (offset, sequence), so no
/// two writes carry the same data. The rest of the buffer keeps its random fill.
#[inline]
pub fn stamp_unique(buf: &mut [u8], offset: u64, sequence: u64) {
    let mut pos = 0;
    while pos + 16 <= buf.len() {
        let off = offset + pos as u64;
        buf[pos..pos + 8].copy_from_slice(&off.to_le_bytes());
        buf[pos + 8..pos + 16].copy_from_slice(&(sequence ^ 0x5DEE_CE66_D1CE_5EED).to_le_bytes());
        pos += 4096;
    }
}

fn checksum(data: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ data.len() as u64;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("chunk of 8"));
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01B3).rotate_left(29);
    }
    for &b in chunks.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3);
    }
    h ^ (h >> 32)
}

fn word(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

/// Fills `buf` (one block) with a verify block for (seed, file, offset).
pub fn fill_verify(buf: &mut [u8], seed: u64, file_id: u64, offset: u64) {
    assert!(
        buf.len() as u64 >= VERIFY_MIN_BLOCK,
        "verify blocks are at least {VERIFY_MIN_BLOCK} bytes (checked when the spec is validated)"
    );
    let len = buf.len() as u64;
    buf[0..8].copy_from_slice(&VERIFY_MAGIC.to_le_bytes());
    buf[8..16].copy_from_slice(&seed.to_le_bytes());
    buf[16..24].copy_from_slice(&file_id.to_le_bytes());
    buf[24..32].copy_from_slice(&offset.to_le_bytes());
    buf[32..40].copy_from_slice(&len.to_le_bytes());
    Rng::new(mix(&[seed, file_id, offset])).fill(&mut buf[VERIFY_HEADER..]);
    let sum = checksum(&buf[VERIFY_HEADER..]) ^ checksum(&buf[..40]);
    buf[40..48].copy_from_slice(&sum.to_le_bytes());
}

/// What is wrong with a block read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyMismatch {
    /// No verify header at all: the block was never written by iolab --verify.
    NoHeader,
    /// A verify block, but written for another place (a misdirected write).
    WrongPlace {
        seed: u64,
        file_id: u64,
        offset: u64,
    },
    /// The header is right but the contents changed (corruption).
    Checksum,
}

impl std::fmt::Display for VerifyMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VerifyMismatch::NoHeader => {
                write!(f, "no verify header (block not written by iolab --verify)")
            }
            VerifyMismatch::WrongPlace {
                seed,
                file_id,
                offset,
            } => write!(
                f,
                "block belongs elsewhere (seed {seed}, file {file_id}, offset {offset})"
            ),
            VerifyMismatch::Checksum => write!(f, "checksum mismatch (contents changed)"),
        }
    }
}

/// Checks a block read back against what [`fill_verify`] wrote there.
pub fn check_verify(
    buf: &[u8],
    seed: u64,
    file_id: u64,
    offset: u64,
) -> Result<(), VerifyMismatch> {
    if (buf.len() as u64) < VERIFY_MIN_BLOCK || word(buf, 0) != VERIFY_MAGIC {
        return Err(VerifyMismatch::NoHeader);
    }
    let (s, f, o, len) = (word(buf, 8), word(buf, 16), word(buf, 24), word(buf, 32));
    if s != seed || f != file_id || o != offset || len != buf.len() as u64 {
        return Err(VerifyMismatch::WrongPlace {
            seed: s,
            file_id: f,
            offset: o,
        });
    }
    let sum = checksum(&buf[VERIFY_HEADER..]) ^ checksum(&buf[..40]);
    if sum != word(buf, 40) {
        return Err(VerifyMismatch::Checksum);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_block_checks() {
        let mut b = vec![0u8; 4096];
        fill_verify(&mut b, 1, 2, 8192);
        assert_eq!(check_verify(&b, 1, 2, 8192), Ok(()));
    }

    #[test]
    fn a_flipped_bit_is_caught() {
        let mut b = vec![0u8; 4096];
        fill_verify(&mut b, 1, 2, 8192);
        for pos in [40usize, 48, 1000, 4095] {
            let mut c = b.clone();
            c[pos] ^= 0x10;
            assert_eq!(
                check_verify(&c, 1, 2, 8192),
                Err(VerifyMismatch::Checksum),
                "byte {pos}"
            );
        }
    }

    #[test]
    fn a_misplaced_block_names_where_it_belongs() {
        let mut b = vec![0u8; 512];
        fill_verify(&mut b, 1, 2, 0);
        assert_eq!(
            check_verify(&b, 1, 2, 512),
            Err(VerifyMismatch::WrongPlace {
                seed: 1,
                file_id: 2,
                offset: 0
            })
        );
        assert_eq!(
            check_verify(&[0u8; 512], 1, 2, 0),
            Err(VerifyMismatch::NoHeader)
        );
    }

    #[test]
    fn stamps_make_buffers_distinct() {
        let mut a = vec![7u8; 8192];
        let mut b = a.clone();
        stamp_unique(&mut a, 0, 1);
        stamp_unique(&mut b, 0, 2);
        assert_ne!(a[..4096], b[..4096]);
        assert_ne!(a[4096..], b[4096..]);
        assert_eq!(a[16..4096], b[16..4096]);
    }
}
