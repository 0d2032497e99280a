//! IO500's score hash, the `hash = ...` line of its result.txt: [`ScoreHash`] rebuilds it
//! from the file's own values the way IO500's verifier (`u_verify_result_files` in
//! src/util.c) does, so an edited figure or score shows. The hash is an XOR of one
//! rotate-and-add hash per key/value pair, so the order of the pairs does not matter.

/// IO500's `rotladd`: rotate left by 2 and add the character (a C `char`, signed).
fn rotladd(x: u32, c: u8) -> u32 {
    x.rotate_left(2).wrapping_add(c as i8 as i32 as u32)
}

fn string_hash(mut hash: u32, s: &str) -> u32 {
    for c in s.bytes() {
        hash = rotladd(hash, c);
    }
    hash
}

/// IO500's score hash under construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScoreHash(pub u32);

impl ScoreHash {
    /// `u_hash_update_key_val`: XORs in the hash of `key` followed by `value`.
    pub fn add(&mut self, key: &str, value: &str) {
        self.0 ^= string_hash(string_hash(0, key), value);
    }

    /// As IO500 prints it: upper-case hex without leading zeros.
    pub fn text(self) -> String {
        format!("{:X}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash of a published result (ACC Cyfronet AGH Helios, ISC24 submission 708,
    /// result.txt: `hash = A7748DEE`), rebuilt from the values in that file.
    #[test]
    fn a_published_hash_is_rebuilt() {
        let mut h = ScoreHash::default();
        h.add("version", "io500-isc24_v3");
        for (k, v) in [
            ("ior-easy-write", "352.803032"),
            ("mdtest-easy-write", "119.113150"),
            ("ior-hard-write", "5.996531"),
            ("mdtest-hard-write", "66.621419"),
            ("find", "2872.215129"),
            ("ior-easy-read", "464.646333"),
            ("mdtest-easy-stat", "415.688686"),
            ("ior-hard-read", "227.682852"),
            ("mdtest-hard-stat", "305.227639"),
            ("mdtest-easy-delete", "96.720801"),
            ("mdtest-hard-read", "114.129044"),
            ("mdtest-hard-delete", "58.712616"),
            ("MD", "192.355126"),
            ("BW", "122.312630"),
            ("SCORE", "153.386640"),
        ] {
            h.add(k, v);
        }
        assert_eq!(h.text(), "A7748DEE");
        // An invalid run adds valid=NO.
        let mut invalid = h;
        invalid.add("valid", "NO");
        assert_ne!(invalid, h);
    }

    #[test]
    fn bytes_above_127_are_signed_chars() {
        assert_eq!(rotladd(0, 0xff), u32::MAX);
        assert_eq!(string_hash(0, "a"), 97);
        assert_eq!(string_hash(0, "ab"), 97 * 4 + 98);
    }
}
