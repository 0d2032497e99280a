//! Block contents besides iolab's own data (which is [`crate::data_gen`]'s):
//! [`fill_verify`] / [`check_verify`]
//! write and check self-describing blocks that encode seed, file and offset plus a
//! checksum, so a misplaced or corrupted block is reported with where it went wrong.
//! [`fill_ior_timestamp`] / [`ior_timestamp_mismatch`] are IOR's `--dataPacketType=timestamp`
//! buffer and its `-R`/`-W` check, word for word, for the modes named after IOR.
//! [`fill_fio_random`] / [`fio_scramble`] are fio's default write buffer and the stamps
//! it puts in it before every write (`--pattern fio`).

use crate::rng::{Rng, mix};

/// "IOLABVF1": the first word of every verify block.
pub const VERIFY_MAGIC: u64 = u64::from_le_bytes(*b"IOLABVF1");
/// Bytes of header before the pseudo-random payload.
pub const VERIFY_HEADER: usize = 48;
/// The smallest block `--verify` can describe.
pub const VERIFY_MIN_BLOCK: u64 = 64;

/// fio's `buffer_pattern`: `0x` and hex digits (the bytes in the order written,
/// 0xdeadbeef is de ad be ef; an odd digit count gets a leading 0, as fio's), or a
/// "quoted" or 'quoted' string, or several of these written one after the other
/// (`'abc'0x00`). At most 4 KiB, as a pattern repeats.
pub fn parse_buffer_pattern(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err("is empty: give 0x and hex digits, or a quoted string".into());
    }
    while !rest.is_empty() {
        if let Some(hex) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let end = hex
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(hex.len());
            let digits = &hex[..end];
            if digits.is_empty() {
                return Err(format!("'{text}': 0x without hex digits"));
            }
            let padded = if digits.len() % 2 == 1 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            for i in (0..padded.len()).step_by(2) {
                out.push(u8::from_str_radix(&padded[i..i + 2], 16).map_err(|e| e.to_string())?);
            }
            rest = &hex[end..];
        } else if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let body = &rest[1..];
            let end = body
                .find(q)
                .ok_or_else(|| format!("'{text}': the string has no closing {q}"))?;
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else {
            return Err(format!(
                "'{text}' is not a pattern: give 0x and hex digits (0xdeadbeef) or a quoted string (\"abc\")"
            ));
        }
        rest = rest.trim_start();
    }
    if out.is_empty() {
        return Err(format!("'{text}' holds no bytes"));
    }
    if out.len() > 4096 {
        return Err(format!("'{text}' is {} bytes; at most 4096", out.len()));
    }
    Ok(out)
}

/// A 64-bit hash of a dedupe unit: equal units hash equal, and distinct units of
/// random data collide with probability 2^-64 per pair.
pub fn unit_hash(data: &[u8]) -> u64 {
    checksum(data) ^ (data.len() as u64).rotate_left(17)
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

/// Word `i` of an IOR timestamp buffer: `(uint64_t) rank << 32 | rand_seed + i` with
/// IOR's `int rand_seed` (the -G signature as an unsigned int, read back as a signed one
/// and widened as C widens it).
#[inline]
fn ior_word(signature: u32, rank: u64, i: u64) -> u64 {
    (rank << 32) | (signature as i32 as i64 as u64).wrapping_add(i)
}

/// Fills `buf` as IOR's `generate_memory_pattern` does for `--dataPacketType=timestamp`:
/// 8-byte words `rank << 32 | signature + i` (native byte order), and the bytes after the
/// last whole word set to their index. IOR writes this same buffer for every transfer.
pub fn fill_ior_timestamp(buf: &mut [u8], signature: u32, rank: u64) {
    let whole = buf.len() / 8 * 8;
    let (words, rest) = buf.split_at_mut(whole);
    for (i, w) in words.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&ior_word(signature, rank, i as u64).to_ne_bytes());
    }
    for (i, b) in rest.iter_mut().enumerate() {
        *b = (whole + i) as u8;
    }
}

/// IOR's `verify_memory_pattern` for timestamp data: checks every word of `buf` (IOR reads
/// all of it "to ensure that performance numbers stay the same") and returns the offset
/// of the first byte that differs, or None.
pub fn ior_timestamp_mismatch(buf: &[u8], signature: u32, rank: u64) -> Option<usize> {
    let whole = buf.len() / 8 * 8;
    let mut differs = 0u64;
    for (i, w) in buf[..whole].chunks_exact(8).enumerate() {
        let got = u64::from_ne_bytes(w.try_into().expect("8 bytes"));
        differs |= got ^ ior_word(signature, rank, i as u64);
    }
    let tail_ok = buf[whole..]
        .iter()
        .enumerate()
        .all(|(i, b)| *b == (whole + i) as u8);
    if differs == 0 && tail_ok {
        return None;
    }
    // The slow path only on a mismatch: find where.
    let mut expected = vec![0u8; buf.len()];
    fill_ior_timestamp(&mut expected, signature, rank);
    buf.iter().zip(&expected).position(|(a, b)| a != b)
}

/// fio's multiplier for its buffer words (hash.h's GOLDEN_RATIO_64).
const FIO_GOLDEN: u64 = 0x61C8_8646_80B5_83EB;
/// fio's seed lanes (lib/rand.c, CONFIG_SEED_BUCKETS=4, fio's default build) and their
/// factors.
const FIO_LANES: [u64; 4] = [1, 2, 3, 5];

/// Fills `buf` as fio fills a write buffer (lib/rand.c's `__fill_random_buf`): 8-byte
/// words (native order) in four interleaved lanes, lane p starting at `seed` times
/// 1, 2, 3, 5, each next word of a lane the previous one times 2^64/phi (mod 2^64); the
/// words after the last group of four continue lane 0, and a tail under 8 bytes takes
/// the first bytes of the next word. Multiplication leaves a word's low bits with short
/// periods (a seed with many low zero bits gives words a compressor shrinks a few per
/// cent): built the same way, it gives a compressing target what fio's does.
pub fn fill_fio_random(buf: &mut [u8], seed: u64) {
    let mut lanes = FIO_LANES.map(|p| seed.wrapping_mul(p));
    let grouped = buf.len() / 32 * 32;
    let (groups, rest) = buf.split_at_mut(grouped);
    for group in groups.chunks_exact_mut(32) {
        for (w, lane) in group.chunks_exact_mut(8).zip(&mut lanes) {
            w.copy_from_slice(&lane.to_ne_bytes());
            *lane = lane.wrapping_mul(FIO_GOLDEN);
        }
    }
    let mut word = lanes[0];
    for w in rest.chunks_mut(8) {
        w.copy_from_slice(&word.to_ne_bytes()[..w.len()]);
        word = word.wrapping_mul(FIO_GOLDEN);
    }
}

/// The seed of one fio buffer from `rng`: fio draws it as the product of two 32-bit
/// draws (`__get_next_seed` on 64-bit Linux), so its low bits are zero more often than
/// a uniform draw's.
pub fn fio_buffer_seed(rng: &mut Rng) -> u64 {
    (rng.next_u64() >> 32) * (rng.next_u64() >> 32)
}

/// fio's `small_content_scramble`, done to a reused buffer before each write: in every
/// whole 512-byte block, the block's file offset at byte 64 x ((nanoseconds ^ offset)
/// & 7) (one of the block's first 8 cache lines, the same for every block of the write)
/// and the write's start time, seconds then nanoseconds, at bytes 48..64. Each 512-byte
/// block of a file then differs from every other, but a compressor still finds the rest
/// of a 4 KiB write again in the next one.
#[inline]
pub fn fio_scramble(buf: &mut [u8], offset: u64, seconds: u64, nanoseconds: u64) {
    let line = ((nanoseconds ^ offset) & 7) as usize * 64;
    let mut at = offset;
    for block in buf.chunks_exact_mut(512) {
        block[line..line + 8].copy_from_slice(&at.to_ne_bytes());
        block[48..56].copy_from_slice(&seconds.to_ne_bytes());
        block[56..64].copy_from_slice(&nanoseconds.to_ne_bytes());
        at = at.wrapping_add(512);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_patterns_parse_as_fio_writes_them() {
        assert_eq!(
            parse_buffer_pattern("0xdeadbeef").unwrap(),
            [0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(parse_buffer_pattern("0xabc").unwrap(), [0x0a, 0xbc]);
        assert_eq!(parse_buffer_pattern("\"ab\"0x00").unwrap(), b"ab\0");
        assert_eq!(parse_buffer_pattern("'x' 0x01").unwrap(), b"x\x01");
        for bad in ["", "0x", "deadbeef", "\"open", "\"\""] {
            assert!(parse_buffer_pattern(bad).is_err(), "{bad}");
        }
        assert!(parse_buffer_pattern(&format!("0x{}", "ab".repeat(4097))).is_err());
    }

    #[test]
    fn ior_timestamp_words_are_iors() {
        // IOR -G 1837294926, rank 1: word 0 = 1 << 32 | 1837294926, word 2 = ... + 2.
        let mut b = vec![0u8; 8 * 3 + 3];
        fill_ior_timestamp(&mut b, 1_837_294_926, 1);
        let word = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(0), (1u64 << 32) | 1_837_294_926);
        assert_eq!(word(2), (1u64 << 32) | 1_837_294_928);
        // The bytes after the last whole word hold their index, as IOR's (char) i.
        assert_eq!(&b[24..], &[24, 25, 26]);
        // A signature above i32::MAX is a negative int in IOR: widened with its sign.
        let mut n = vec![0u8; 8];
        fill_ior_timestamp(&mut n, 0xFFFF_FFFF, 3);
        assert_eq!(u64::from_ne_bytes(n[..8].try_into().unwrap()), u64::MAX);
        assert_eq!(ior_timestamp_mismatch(&b, 1_837_294_926, 1), None);
        // Another rank's data, a changed byte, a changed tail: each found where it is.
        assert_eq!(ior_timestamp_mismatch(&b, 1_837_294_926, 0), Some(4));
        let mut c = b.clone();
        c[17] ^= 1;
        assert_eq!(ior_timestamp_mismatch(&c, 1_837_294_926, 1), Some(17));
        c = b.clone();
        c[26] = 0;
        assert_eq!(ior_timestamp_mismatch(&c, 1_837_294_926, 1), Some(26));
    }

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
    fn fio_words_run_in_four_lanes_of_golden_ratio_steps() {
        let seed = 0x1234_5678_9ABC_DEF1;
        let mut buf = vec![0u8; 4096 + 20];
        fill_fio_random(&mut buf, seed);
        let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
        for (p, factor) in [1u64, 2, 3, 5].into_iter().enumerate() {
            assert_eq!(word(p), seed.wrapping_mul(factor));
        }
        for i in 0..508 {
            assert_eq!(word(i + 4), word(i).wrapping_mul(FIO_GOLDEN), "word {i}");
        }
        // 4096 + 20 bytes: after the 128 groups, lane 0 goes on for 2 words and 4 bytes.
        assert_eq!(word(512), word(508).wrapping_mul(FIO_GOLDEN));
        assert_eq!(word(513), word(512).wrapping_mul(FIO_GOLDEN));
        let next = word(513).wrapping_mul(FIO_GOLDEN).to_ne_bytes();
        assert_eq!(buf[4112..], next[..4]);
    }

    #[test]
    fn fio_scramble_stamps_each_512_bytes_where_fio_does() {
        let mut buf = vec![0xAAu8; 4096 + 100];
        // (nanoseconds ^ offset) & 7 = 1: the offset goes in the second cache line, as
        // fio 3.33 put it in a file it wrote (its time then: 0 s, 0x71c20c9 ns).
        let (offset, nanoseconds) = (1 << 20, 0x71c_20c9);
        fio_scramble(&mut buf, offset, 0, nanoseconds);
        let word = |buf: &[u8], i: usize| u64::from_ne_bytes(buf[i..i + 8].try_into().unwrap());
        for b in 0..8 {
            let at = b * 512;
            assert_eq!(word(&buf, at + 48), 0);
            assert_eq!(word(&buf, at + 56), nanoseconds);
            assert_eq!(word(&buf, at + 64), offset + at as u64);
            for (i, byte) in buf[at..at + 512].iter().enumerate() {
                if !(48..72).contains(&i) {
                    assert_eq!(*byte, 0xAA, "block {b} byte {i}");
                }
            }
        }
        // The part block after the last whole one is left as it was.
        assert!(buf[4096..].iter().all(|b| *b == 0xAA));
        // Another time moves the offset to another line.
        fio_scramble(&mut buf, offset, 1, 6);
        assert_eq!(word(&buf, 6 * 64), offset);
        assert_eq!(word(&buf, 48), 1);
    }
}
