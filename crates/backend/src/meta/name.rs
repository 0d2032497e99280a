//! [`EntryName`]: an entry's name in a fixed buffer, a prefix checked once and then an
//! index's decimal digits, handed to the metadata calls as a C string without a scan.

use std::ffi::CStr;

/// Room for the prefix and the NUL besides an index's 20 digits.
const ROOM: usize = 64;

/// An entry name: a prefix without NUL bytes, the decimal digits of an index, its NUL.
/// The index after the one spelled last adds one to the digits (a worker goes through its
/// entries in order); any other is spelled afresh.
#[derive(Clone, Debug)]
pub struct EntryName {
    buf: [u8; ROOM],
    prefix: usize,
    /// Where the NUL is, and the index spelled (None: none yet).
    end: usize,
    index: Option<u64>,
}

impl EntryName {
    /// A name starting with `prefix`; None when the prefix holds a NUL byte or leaves no
    /// room for 20 digits and the NUL.
    pub fn new(prefix: &[u8]) -> Option<EntryName> {
        if prefix.contains(&0) || prefix.len() + 21 > ROOM {
            return None;
        }
        let mut buf = [0u8; ROOM];
        buf[..prefix.len()].copy_from_slice(prefix);
        Some(EntryName {
            buf,
            prefix: prefix.len(),
            end: prefix.len(),
            index: None,
        })
    }

    /// The name of `index`.
    #[inline]
    pub fn of(&mut self, index: u64) -> &CStr {
        let next = self.index.and_then(|i| i.checked_add(1)) == Some(index);
        if !(next && self.count_on()) {
            self.spell(index);
        }
        self.index = Some(index);
        let name = &self.buf[..=self.end];
        debug_assert_eq!(name.iter().position(|b| *b == 0), Some(self.end));
        // SAFETY: the prefix holds no NUL (checked in `new`), the bytes after it are ASCII
        // digits and the byte at `end` is the NUL: exactly one NUL, the last byte.
        unsafe { CStr::from_bytes_with_nul_unchecked(name) }
    }

    fn spell(&mut self, mut index: u64) {
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            digits[19 - n] = b'0' + (index % 10) as u8;
            n += 1;
            index /= 10;
            if index == 0 {
                break;
            }
        }
        self.end = self.prefix + n;
        self.buf[self.prefix..self.end].copy_from_slice(&digits[20 - n..]);
        self.buf[self.end] = 0;
    }

    /// Adds one to the digits spelled, from the last; false (nothing changed) when every
    /// digit is a 9, which takes one digit more.
    #[inline]
    fn count_on(&mut self) -> bool {
        let digits = &mut self.buf[self.prefix..self.end];
        let Some(last) = digits.iter().rposition(|d| *d != b'9') else {
            return false;
        };
        digits[last] += 1;
        digits[last + 1..].fill(b'0');
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_counted_on_are_the_names_spelled_afresh() {
        let mut counted = EntryName::new(b"file.mdtest.7.").unwrap();
        let spell = |i: u64| EntryName::new(b"file.mdtest.7.").unwrap().of(i).to_owned();
        // In order across digit carries, then jumps back and forth, then in order again.
        let order = (0..1_205).chain([99, 5, 999_999, 1_000_000, 1_000_001, 3, 4, 10]);
        for i in order.chain([u64::MAX - 1, u64::MAX, 0]) {
            assert_eq!(counted.of(i), spell(i).as_c_str(), "index {i}");
        }
        assert_eq!(counted.of(1_000).to_bytes(), b"file.mdtest.7.1000");
        assert_eq!(
            counted.of(u64::MAX).to_bytes(),
            format!("file.mdtest.7.{}", u64::MAX).as_bytes()
        );
    }

    #[test]
    fn a_prefix_with_a_nul_or_too_long_is_refused() {
        assert!(EntryName::new(b"file\0x.").is_none());
        assert!(EntryName::new(&[b'a'; 44]).is_none());
        assert!(EntryName::new(&[b'a'; 43]).is_some());
    }
}
