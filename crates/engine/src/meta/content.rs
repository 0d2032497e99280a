//! [`Content`]: what create writes into a file and read expects back. One pseudo-random
//! buffer per worker (the same for every file of a seed), whose first 16 bytes are stamped
//! with the file's owner and index, so any worker can check any file and a file that was
//! swapped, truncated, extended or overwritten is caught. Stamping and checking reuse the
//! buffer: nothing is allocated per file.

use iolab_core::rng::{Rng, mix};

/// Bytes at the start of each file that identify it.
const STAMP: usize = 16;

pub struct Content {
    expected: Vec<u8>,
    seed_word: u64,
}

impl Content {
    pub fn new(size: usize, seed: u64) -> Content {
        let mut expected = vec![0u8; size];
        Rng::new(mix(&[seed, 0xF11E_C0DE])).fill(&mut expected);
        Content {
            expected,
            seed_word: mix(&[seed, 0x57A3_9000]),
        }
    }

    pub fn size(&self) -> usize {
        self.expected.len()
    }

    /// The contents of file `index` of worker `owner`.
    #[inline]
    pub fn item(&mut self, owner: u32, index: u64) -> &[u8] {
        let mut stamp = [0u8; STAMP];
        stamp[..8].copy_from_slice(&(owner as u64 ^ self.seed_word).to_le_bytes());
        stamp[8..].copy_from_slice(&(index ^ self.seed_word.rotate_left(17)).to_le_bytes());
        let n = STAMP.min(self.expected.len());
        self.expected[..n].copy_from_slice(&stamp[..n]);
        &self.expected
    }

    /// Compares what was read with file `index` of worker `owner`; None when it matches,
    /// else what differs.
    pub fn check(&mut self, owner: u32, index: u64, read: &[u8]) -> Option<String> {
        let size = self.expected.len();
        let want = self.item(owner, index);
        if read.len() > size {
            return Some(format!("it holds more than the {size} bytes create wrote"));
        }
        if read.len() < size {
            return Some(format!(
                "it holds {} bytes, not the {size} create wrote",
                read.len()
            ));
        }
        if read == want {
            return None;
        }
        let at = read.iter().zip(want).position(|(a, b)| a != b)?;
        Some(format!(
            "its contents differ from what create wrote, first at byte {at}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_distinct_and_checks_itself() {
        let mut c = Content::new(3901, 7);
        let a = c.item(0, 1).to_vec();
        let b = c.item(0, 2).to_vec();
        let other_owner = c.item(1, 1).to_vec();
        assert_eq!(a.len(), 3901);
        assert_ne!(a, b);
        assert_ne!(a, other_owner);
        assert_eq!(a[16..], b[16..]);
        assert_eq!(c.check(0, 1, &a), None);
        assert!(c.check(0, 2, &a).unwrap().contains("first at byte"));
        let mut changed = a.clone();
        changed[3000] ^= 1;
        assert!(c.check(0, 1, &changed).unwrap().contains("byte 3000"));
        assert!(
            c.check(0, 1, &a[..100])
                .unwrap()
                .contains("holds 100 bytes")
        );
        let mut longer = a.clone();
        longer.push(0);
        assert!(c.check(0, 1, &longer).unwrap().contains("more than"));
    }

    #[test]
    fn tiny_and_empty_files() {
        let mut c = Content::new(3, 1);
        assert_eq!(c.item(5, 5).len(), 3);
        let three = c.item(5, 5).to_vec();
        assert_eq!(c.check(5, 5, &three), None);
        let mut empty = Content::new(0, 1);
        assert!(empty.item(0, 0).is_empty());
        assert_eq!(empty.check(0, 0, &[]), None);
    }
}
