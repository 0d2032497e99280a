//! A cache entry's bytes, as kv-cache.py lays them: a `.npy` file (numpy's v1.0
//! header, [`npy_header`], then the float16 array `(layers, 2, tokens, kv_heads,
//! head_dim)`) on the storage tier, the same bytes in a buffer on the CPU tier.
//! [`EntryIo`] is one worker's means to move them: one aligned buffer of
//! `transfer_size` bytes through which every entry is streamed (never held whole), and
//! the clock each operation is timed by.

use std::path::Path;
use std::sync::Arc;

use iolab_backend::buffer::BufferPool;
use iolab_backend::files::{DataFile, OpenSpec};
use iolab_core::kvcache::ModelShape;
use iolab_core::rng::{Rng, mix};
use iolab_core::units::Nanos;
use iolab_engine::Clock;

use super::KvError;

/// numpy's `.npy` v1.0 header for a float16 array of `tokens` tokens: magic, version,
/// length, the dict, padded with spaces and a newline to a multiple of 64 bytes.
pub fn npy_header(shape: &ModelShape, tokens: u64) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<f2', 'fortran_order': False, 'shape': ({}, 2, {}, {}, {}), }}",
        shape.layers,
        tokens,
        shape.kv_heads,
        shape.head_dim()
    );
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// Time spans of one storage operation: the whole of it and its device part (the
/// reads; the fsync of a write).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spans {
    pub total: Nanos,
    pub device: Nanos,
}

/// One worker's buffer and clock.
pub struct EntryIo<'c> {
    pool: BufferPool,
    pub clock: &'c dyn Clock,
    direct: bool,
    /// The noise every entry's blocks start from (the reference's noise buffer).
    seed: u64,
    /// True once the run is over: a streaming entry stops at its next piece.
    pub over: &'c dyn Fn() -> bool,
}

fn never() -> bool {
    false
}

const BLOCK: usize = 4096;

impl<'c> EntryIo<'c> {
    pub fn new(
        transfer: u64,
        direct: bool,
        seed: u64,
        clock: &'c dyn Clock,
    ) -> Result<EntryIo<'c>, KvError> {
        let mut pool = BufferPool::new(1, transfer, BLOCK as u64)
            .map_err(|e| KvError::Setup(format!("a transfer buffer of {transfer} bytes: {e}")))?;
        Rng::new(seed).fill(pool.get_mut(0));
        Ok(EntryIo {
            pool,
            clock,
            direct,
            seed,
            over: &never,
        })
    }

    fn transfer(&self) -> usize {
        self.pool.get(0).len()
    }

    /// Fills the buffer with chunk `chunk` of an entry's bytes: each 4 KiB block
    /// stamped with the key and its index, so no two blocks of a run are alike.
    fn stamp(&mut self, key_hash: u64, chunk: u64) {
        let buf = self.pool.get_mut(0);
        let per = (buf.len() / BLOCK) as u64;
        for (i, block) in buf.chunks_exact_mut(BLOCK).enumerate() {
            let tag = mix(&[key_hash, chunk * per + i as u64]);
            block[..8].copy_from_slice(&tag.to_le_bytes());
        }
    }

    /// Writes an entry of `header` + `payload` bytes as a new file at `path`: streamed
    /// in transfer-size writes, then fsynced. `from`: a CPU-tier entry's bytes being
    /// demoted (else generated).
    pub fn write_file(
        &mut self,
        path: &Path,
        header: &[u8],
        payload: u64,
        from: Option<&Arc<Vec<u8>>>,
    ) -> Result<Spans, KvError> {
        let key_hash = mix(&[self.seed, path_hash(path)]);
        let t0 = self.clock.now();
        let spec = OpenSpec {
            write: true,
            create: true,
            truncate: true,
            direct: self.direct,
            ..OpenSpec::default()
        };
        let file = DataFile::open(path, spec).map_err(|e| io_error("open", path, e))?;
        let total = header.len() as u64 + payload;
        let t = self.transfer() as u64;
        let mut at = 0u64;
        let mut chunk = 0u64;
        while at < total {
            if (self.over)() {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(KvError::Interrupted);
            }
            let n = (total - at).min(t) as usize;
            match from {
                Some(data) => {
                    self.pool.get_mut(0)[..n].copy_from_slice(&data[at as usize..at as usize + n])
                }
                None => {
                    self.stamp(key_hash, chunk);
                    if at == 0 {
                        self.pool.get_mut(0)[..header.len()].copy_from_slice(header);
                    }
                }
            }
            // O_DIRECT writes whole blocks; the file is cut to its size afterwards.
            let len = if self.direct {
                n.div_ceil(BLOCK) * BLOCK
            } else {
                n
            };
            file.write_all_at(&self.pool.get(0)[..len], at)
                .map_err(|e| io_error("write", path, e))?;
            at += n as u64;
            chunk += 1;
        }
        if self.direct && !total.is_multiple_of(BLOCK as u64) {
            file.set_len(total)
                .map_err(|e| io_error("truncate", path, e))?;
        }
        let t1 = self.clock.now();
        file.fsync().map_err(|e| io_error("fsync", path, e))?;
        let t2 = self.clock.now();
        Ok(Spans {
            total: t2.saturating_sub(t0),
            device: t2.saturating_sub(t1),
        })
    }

    /// Reads a file whole (after dropping its cached pages, as the reference's
    /// fadvise DONTNEED); returns the bytes read.
    pub fn read_file(&mut self, path: &Path) -> Result<(u64, Spans), KvError> {
        let t0 = self.clock.now();
        let spec = OpenSpec {
            direct: self.direct,
            ..OpenSpec::default()
        };
        let file = DataFile::open(path, spec).map_err(|e| io_error("open", path, e))?;
        if !self.direct {
            let _ = file.advise_dont_need();
        }
        let t1 = self.clock.now();
        let mut at = 0u64;
        loop {
            if (self.over)() {
                return Err(KvError::Interrupted);
            }
            let buf = self.pool.get_mut(0);
            let want = buf.len();
            let n = file
                .read_at(buf, at)
                .map_err(|e| io_error("read", path, e))?;
            at += n as u64;
            if n < want {
                break;
            }
        }
        let t2 = self.clock.now();
        Ok((
            at,
            Spans {
                total: t2.saturating_sub(t0),
                device: t2.saturating_sub(t1),
            },
        ))
    }

    /// A CPU-tier entry's bytes made: header + payload copied through the buffer.
    pub fn fill_memory(&mut self, header: &[u8], payload: u64) -> Result<Vec<u8>, KvError> {
        let total = header.len() + payload as usize;
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|_| {
            KvError::Setup(format!(
                "{total} bytes for a CPU-tier entry could not be allocated"
            ))
        })?;
        let key_hash = mix(&[self.seed, total as u64, self.clock.now().0]);
        let t = self.transfer();
        let mut chunk = 0;
        while v.len() < total {
            self.stamp(key_hash, chunk);
            let n = (total - v.len()).min(t);
            v.extend_from_slice(&self.pool.get(0)[..n]);
            chunk += 1;
        }
        v[..header.len()].copy_from_slice(header);
        Ok(v)
    }

    /// Reads a CPU-tier entry: its bytes copied out through the buffer.
    pub fn read_memory(&mut self, data: &[u8]) -> u64 {
        let t = self.transfer();
        for c in data.chunks(t) {
            self.pool.get_mut(0)[..c.len()].copy_from_slice(c);
        }
        std::hint::black_box(self.pool.get(0));
        data.len() as u64
    }
}

fn path_hash(path: &Path) -> u64 {
    let bytes = path.as_os_str().as_encoded_bytes();
    let words: Vec<u64> = bytes.iter().map(|&b| u64::from(b)).collect();
    mix(&words)
}

fn io_error(op: &str, path: &Path, e: impl std::fmt::Display) -> KvError {
    KvError::Io(format!("{op} of {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::kvcache::KvModel;

    #[test]
    fn the_header_is_numpys() {
        let h = npy_header(&KvModel::Llama31_8b.shape(), 1000);
        assert_eq!(h.len(), 128);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([h[8], h[9]]), 118);
        let text = String::from_utf8_lossy(&h[10..]);
        assert!(
            text.starts_with(
                "{'descr': '<f2', 'fortran_order': False, 'shape': (32, 2, 1000, 8, 128), }"
            ),
            "{text}"
        );
        assert!(text.ends_with(" \n"));
    }
}
