//! An entry's bytes: iolab's data (`iolab_core::data_gen`, docs/flash.md), a function of
//! the worker's base and the entry's name. Unit `i` (512 bytes) of an entry is data unit
//! `first + i`, `first` a 64-bit mix of the seed and the entry's path (its rank's
//! directory or object prefix in it; on a block device, the device and the entry's
//! offset), so no 512-byte unit repeats within an entry, across
//! entries, workers, ranks or tiers, and no byte run repeats for a compressor (as
//! kv-cache.py's noise XOR-stamped per key: neither compresses nor deduplicates). The
//! same key gives the same bytes on every tier: an entry demoted from the CPU tier is
//! what writing it to storage directly would have written. The `.npy` header overlays
//! the first bytes.

use std::path::Path;
use std::sync::Arc;

use iolab_backend::object::BodySource;
use iolab_core::data_gen::{DataBase, UNIT, fill_unique};
use iolab_core::rng::mix;

use super::path_hash;

/// A worker's data: its base (64 KiB drawn once from the seed) and the seed.
#[derive(Clone)]
pub(super) struct EntryData {
    base: Arc<DataBase>,
    seed: u64,
}

impl EntryData {
    pub(super) fn new(seed: u64) -> EntryData {
        EntryData {
            base: Arc::new(DataBase::new(mix(&[seed, 0xDA7A]))),
            seed,
        }
    }

    /// The first unit id of the entry at `path` (at `offset` on a device, else 0).
    pub(super) fn first(&self, path: &Path, offset: u64) -> u64 {
        mix(&[self.seed, path_hash(path), offset])
    }

    /// Fills `buf` with the entry's bytes from `at` (a multiple of 512), `header` over
    /// its first bytes.
    pub(super) fn fill(&self, buf: &mut [u8], first: u64, at: u64, header: &[u8]) {
        debug_assert!(at.is_multiple_of(UNIT as u64));
        fill_unique(buf, &self.base, first.wrapping_add(at / UNIT as u64));
        if let Some(rest) = header.get(at as usize..) {
            let n = rest.len().min(buf.len());
            buf[..n].copy_from_slice(&rest[..n]);
        }
    }

    /// The entry at `path`, `header` + `payload` bytes, as the body of a PUT: made a
    /// piece at a time as it is sent (nothing held but the piece).
    pub(super) fn body(&self, path: &Path, header: &[u8], payload: u64) -> EntryBody {
        EntryBody {
            data: self.clone(),
            first: self.first(path, 0),
            header: header.to_vec(),
            len: header.len() as u64 + payload,
        }
    }
}

/// An entry's bytes as an upload's body ([`BodySource`]).
pub(super) struct EntryBody {
    data: EntryData,
    first: u64,
    header: Vec<u8>,
    len: u64,
}

/// The bytes made at once for a body: what one piece sends.
const PIECE: u64 = 1 << 20;

impl BodySource for EntryBody {
    fn len(&self) -> u64 {
        self.len
    }

    fn pieces(
        &self,
        offset: u64,
        len: u64,
        f: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let end = offset.saturating_add(len).min(self.len);
        let mut piece = vec![0u8; PIECE.min(end.saturating_sub(offset) + UNIT as u64) as usize];
        let mut at = offset;
        while at < end {
            // Made from the unit `at` is in; sent from `at`.
            let from = at - at % UNIT as u64;
            let n = (end - from).min(piece.len() as u64) as usize;
            self.data
                .fill(&mut piece[..n], self.first, from, &self.header);
            f(&piece[(at - from) as usize..n])?;
            at = from + n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body's pieces from any offset (a part size not a multiple of 512) are the bytes
    /// the whole entry holds there.
    #[test]
    fn a_body_from_any_offset_is_the_entrys_bytes_there() {
        let d = EntryData::new(9);
        let path = Path::new("rank_0/conv_1_turn_1.npy");
        let header = vec![7u8; 128];
        let mut whole = vec![0u8; 3 << 20];
        d.fill(&mut whole, d.first(path, 0), 0, &header);
        assert_eq!(&whole[..128], &header[..]);
        let body = d.body(path, &header, whole.len() as u64 - 128);
        assert_eq!(body.len(), whole.len() as u64);
        for (offset, len) in [
            (0, 3 << 20),
            (700, 5000),
            (1 << 20, (2 << 20) - 3),
            (100, 20),
        ] {
            let mut got = Vec::new();
            body.pieces(offset, len, &mut |p| {
                got.extend_from_slice(p);
                Ok(())
            })
            .unwrap();
            let (o, l) = (offset as usize, len as usize);
            assert!(got == whole[o..o + l], "{offset} {len}");
        }
    }
}
