//! [`Payload`]: the bytes uploads send. One random buffer per worker, and each object's
//! body read from it in pieces that start at offsets varying with the object, so no two
//! objects (or parts of one) repeat each other for a deduplicating or compressing server,
//! at no cost per byte and with memory flat in the object size.

use iolab_core::rng::Rng;

/// The size of one piece of a body, and the random data pieces start anywhere in.
pub const PIECE: usize = 1 << 20;
const WINDOW: usize = 1 << 20;

pub struct Payload {
    data: Box<[u8]>,
}

impl Payload {
    pub fn new(seed: u64) -> Payload {
        let mut data = vec![0u8; PIECE + WINDOW].into_boxed_slice();
        Rng::new(seed).fill(&mut data);
        Payload { data }
    }

    /// Bytes this payload holds (for the memory pre-flight).
    pub const BYTES: u64 = (PIECE + WINDOW) as u64;

    /// Calls `f` with the pieces of `len` bytes of body `data_offset` (an object's own
    /// number: the same number gives the same bytes).
    pub fn pieces(
        &self,
        data_offset: u64,
        len: u64,
        mut f: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut left = len;
        let mut i = 0u64;
        while left > 0 {
            let n = left.min(PIECE as u64) as usize;
            let start = (iolab_core::rng::mix(&[data_offset, i]) % WINDOW as u64) as usize;
            f(&self.data[start..start + n])?;
            left -= n as u64;
            i += 1;
        }
        Ok(())
    }
}
