//! [`EntryName`]: an entry's name in a fixed buffer, a prefix checked once and then an
//! index's decimal digits, handed to the metadata calls as a C string without a scan.

use std::ffi::CStr;

/// Room for the prefix and the NUL besides an index's 20 digits.
const ROOM: usize = 64;

/// An entry name: a prefix without NUL bytes, the decimal digits of an index, its NUL.
/// The index after the one spelled last adds one to the digits (a worker goes through its
/// entries in order); any other is spelled afresh, and so is index 0 always.
#[derive(Clone, Debug)]
pub struct EntryName {
    /// Indexed by `u8` positions (under `ROOM` in use): every one is in the buffer, so
    /// no access to it is bounds-checked.
    buf: [u8; 256],
    prefix: u8,
    /// Where the NUL is.
    end: u8,
    /// The index after the one spelled (0 also when none was, or it was `u64::MAX`).
    next: u64,
}

impl EntryName {
    /// A name starting with `prefix`; None when the prefix holds a NUL byte or leaves no
    /// room for 20 digits and the NUL.
    pub fn new(prefix: &[u8]) -> Option<EntryName> {
        if prefix.contains(&0) || prefix.len() + 21 > ROOM {
            return None;
        }
        let mut buf = [0u8; 256];
        buf[..prefix.len()].copy_from_slice(prefix);
        Some(EntryName {
            buf,
            prefix: prefix.len() as u8,
            end: prefix.len() as u8,
            next: 0,
        })
    }

    /// The name of `index`.
    #[inline]
    pub fn of(&mut self, index: u64) -> &CStr {
        if index != self.next || index == 0 || !self.count_on() {
            self.spell(index);
        }
        self.next = index.wrapping_add(1);
        let name = &self.buf[..=usize::from(self.end)];
        debug_assert_eq!(name.iter().position(|b| *b == 0), Some(name.len() - 1));
        // SAFETY: the prefix holds no NUL (checked in `new`), the bytes after it are ASCII
        // digits and the byte at `end` is the NUL: exactly one NUL, the last byte.
        unsafe { CStr::from_bytes_with_nul_unchecked(name) }
    }

    #[cold]
    #[inline(never)]
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
        let prefix = usize::from(self.prefix);
        self.end = (prefix + n) as u8;
        self.buf[prefix..prefix + n].copy_from_slice(&digits[20 - n..]);
        self.buf[prefix + n] = 0;
    }

    /// Adds one to the digits spelled, from the last: a 9 turns 0 and carries. False
    /// when every digit was a 9 (the number takes one digit more: `spell` writes it).
    /// One digit changes in nine of ten names, so this is a few instructions, in line,
    /// with no call (a `fill` of the carried digits was a call to memset every time).
    #[inline]
    fn count_on(&mut self) -> bool {
        let mut at = self.end;
        while at > self.prefix {
            at -= 1;
            let d = &mut self.buf[usize::from(at)];
            if *d != b'9' {
                *d += 1;
                return true;
            }
            *d = b'0';
        }
        false
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
        for i in order.chain([u64::MAX - 1, u64::MAX, 0, 1, 0, 0, 1, 2]) {
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
