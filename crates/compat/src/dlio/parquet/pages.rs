//! A column chunk's pages as pyarrow 23 writes them for DLIO's generator
//! (`pq.ParquetWriter(path, schema, compression=None)`, one `write_table` a row group):
//! a dictionary page and RLE_DICTIONARY data pages, falling back to PLAIN pages once the
//! dictionary reaches 1 MiB, a data page closed once its estimated size reaches 1 MiB,
//! checked after each write batch of 1,024 levels (a list column's batch ends at a row's
//! end); nullable columns, so every page carries definition levels (and a list's
//! repetition levels); statistics in every page header. [`ChunkPlan`] is a chunk's
//! pages, [`Rle`] arrow's RLE/bit-packed hybrid encoder for levels and indices.
//!
//! Random values make the dictionary's size random: pyarrow's holds every distinct
//! value of the chunk so far; iolab's holds the expected number of distinct values of
//! as many uniform random draws ([`distinct`]), so a file's layout does not depend on
//! its bytes and lands within a few entries of pyarrow's.

use iolab_core::spec::ParquetColumn;

use super::{Compact, physical};

/// pyarrow's data page and dictionary page limits and its write batch.
const PAGE_LIMIT: u64 = 1 << 20;
const DICT_LIMIT: u64 = 1 << 20;
const WRITE_BATCH: u64 = 1024;
/// Parquet's page types and encodings.
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
pub(super) const PLAIN: i32 = 0;
pub(super) const RLE: i32 = 3;
pub(super) const RLE_DICTIONARY: i32 = 8;

/// The expected number of distinct values among `n` uniform draws from the element's
/// `bits`-bit patterns (what pyarrow's dictionary of random values holds).
pub fn distinct(n: u64, bits: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    let domain = 2f64.powi(bits as i32);
    let d = (-domain * ((n as f64) * (-1.0 / domain).ln_1p()).exp_m1()).round() as u64;
    d.clamp(1, n)
}

/// Bits of a dictionary index: arrow's `bit_width()` (1 for one entry).
fn index_bits(entries: u64) -> u32 {
    if entries <= 1 {
        1
    } else {
        64 - (entries - 1).leading_zeros()
    }
}

/// One data page: its rows, its values, and the dictionary entries it indexes (None:
/// PLAIN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePlan {
    pub rows: u64,
    pub values: u64,
    pub dictionary: Option<u64>,
}

/// A column chunk's pages: the dictionary's entries (written first) and the data pages
/// in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    pub dictionary: u64,
    pub pages: Vec<PagePlan>,
}

/// arrow's estimate of a dictionary data page's bytes (DictEncoder's
/// EstimatedDataEncodedSize: the bit-width byte, RleEncoder's MaxBufferSize and
/// MinBufferSize).
fn dict_page_estimate(values: u64, bits: u32) -> u64 {
    let bits = u64::from(bits);
    let runs = values.div_ceil(8);
    let max = (runs + runs * bits).max(runs * (1 + bits.div_ceil(8)));
    let min = (1 + (512 * bits).div_ceil(8)).max(10 + bits.div_ceil(8));
    1 + max + min
}

impl ChunkPlan {
    /// The pages of a chunk of `rows` rows of `col`, as pyarrow closes them.
    pub fn new(col: &ParquetColumn, rows: u64) -> ChunkPlan {
        let size = col.size.max(1);
        let width = physical(col.dtype).1;
        let bits = (col.dtype.bytes() * 8) as u32;
        let batch_rows = WRITE_BATCH.div_ceil(size);
        let mut plan = ChunkPlan {
            dictionary: 0,
            pages: Vec::new(),
        };
        let (mut page_rows, mut done_rows, mut fallback) = (0u64, 0u64, false);
        while done_rows < rows {
            let n = batch_rows.min(rows - done_rows);
            done_rows += n;
            page_rows += n;
            let entries = distinct(done_rows * size, bits);
            let estimate = if fallback {
                page_rows * size * width
            } else {
                dict_page_estimate(page_rows * size, index_bits(entries))
            };
            let dictionary = (!fallback).then_some(entries);
            if estimate >= PAGE_LIMIT {
                plan.pages.push(page(page_rows, size, dictionary));
                page_rows = 0;
            }
            if !fallback && entries * width >= DICT_LIMIT {
                fallback = true;
                plan.dictionary = entries;
                if page_rows > 0 {
                    plan.pages.push(page(page_rows, size, dictionary));
                    page_rows = 0;
                }
            }
        }
        if !fallback {
            plan.dictionary = distinct(rows * size, bits);
        }
        if page_rows > 0 {
            let dictionary = (!fallback).then_some(plan.dictionary);
            plan.pages.push(page(page_rows, size, dictionary));
        }
        plan
    }
}

fn page(rows: u64, size: u64, dictionary: Option<u64>) -> PagePlan {
    PagePlan {
        rows,
        values: rows * size,
        dictionary,
    }
}

/// arrow's RleEncoder: runs of 8 or more equal values as (count, value), the rest
/// bit-packed in runs of up to 63 groups of 8.
pub struct Rle {
    bits: u32,
    out: Vec<u8>,
    acc: u64,
    acc_bits: u32,
    buffered: [u64; 8],
    count: usize,
    repeat: u64,
    current: u64,
    literal: u64,
    indicator: Option<usize>,
}

impl Rle {
    pub fn new(bits: u32) -> Rle {
        Rle {
            bits,
            out: Vec::new(),
            acc: 0,
            acc_bits: 0,
            buffered: [0; 8],
            count: 0,
            repeat: 0,
            current: 0,
            literal: 0,
            indicator: None,
        }
    }

    pub fn put(&mut self, v: u64) {
        if self.current == v {
            self.repeat += 1;
            if self.repeat > 8 {
                return;
            }
        } else {
            if self.repeat >= 8 {
                self.flush_repeated();
            }
            self.repeat = 1;
            self.current = v;
        }
        self.buffered[self.count] = v;
        self.count += 1;
        if self.count == 8 {
            self.flush_buffered();
        }
    }

    /// `n` times `v`: a long run costs what its first values cost.
    pub fn put_run(&mut self, v: u64, n: u64) {
        for i in 0..n {
            if self.current == v && self.repeat >= 8 {
                self.repeat += n - i;
                return;
            }
            self.put(v);
        }
    }

    fn flush_buffered(&mut self) {
        if self.repeat >= 8 {
            self.count = 0;
            if self.literal != 0 {
                self.flush_literal(true);
            }
            return;
        }
        self.literal += self.count as u64;
        let full = self.literal / 8 + 1 >= 64;
        self.flush_literal(full);
        self.repeat = 0;
    }

    fn flush_literal(&mut self, close: bool) {
        let at = *self.indicator.get_or_insert_with(|| {
            self.out.push(0);
            self.out.len() - 1
        });
        for i in 0..self.count {
            self.acc |= self.buffered[i] << self.acc_bits;
            self.acc_bits += self.bits;
            while self.acc_bits >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.acc_bits -= 8;
            }
        }
        self.count = 0;
        if close {
            self.out[at] = ((self.literal.div_ceil(8) << 1) | 1) as u8;
            self.indicator = None;
            self.literal = 0;
        }
    }

    fn flush_repeated(&mut self) {
        let mut c = Compact::default();
        c.varint(self.repeat << 1);
        self.out.extend(c.out);
        let bytes = self.bits.div_ceil(8) as usize;
        self.out
            .extend_from_slice(&self.current.to_le_bytes()[..bytes]);
        self.count = 0;
        self.repeat = 0;
    }

    /// The encoded bytes.
    pub fn finish(mut self) -> Vec<u8> {
        if self.literal > 0 || self.repeat > 0 || self.count > 0 {
            let all_repeat =
                self.literal == 0 && (self.repeat == self.count as u64 || self.count == 0);
            if self.repeat > 0 && all_repeat {
                self.flush_repeated();
            } else {
                if self.count > 0 {
                    self.buffered[self.count..].fill(0);
                    self.count = 8;
                }
                self.literal += self.count as u64;
                self.flush_literal(true);
                self.repeat = 0;
            }
        }
        self.out
    }
}

/// A level stream's section of a data page: its length, then its RLE bytes.
fn level_section(rle: Rle) -> Vec<u8> {
    let b = rle.finish();
    let mut out = (b.len() as u32).to_le_bytes().to_vec();
    out.extend(b);
    out
}

/// The levels before a page's values: a list column's repetition levels (0 then
/// `size - 1` ones a row) and every column's definition levels (all present).
pub fn page_levels(size: u64, rows: u64) -> Vec<u8> {
    if size <= 1 {
        let mut def = Rle::new(1);
        def.put_run(1, rows);
        return level_section(def);
    }
    let mut rep = Rle::new(1);
    for _ in 0..rows {
        rep.put(0);
        rep.put_run(1, size - 1);
    }
    let mut def = Rle::new(2);
    def.put_run(3, rows * size);
    let mut out = level_section(rep);
    out.extend(level_section(def));
    out
}

/// Bytes of a dictionary page's indices for `values` values of `entries` entries, as
/// [`dictionary_indices`] writes them: the bit width's byte, then bit-packed runs (no
/// value repeats its predecessor, so there is no RLE run but for a one-entry
/// dictionary).
pub fn indices_len(values: u64, entries: u64) -> u64 {
    let bits = u64::from(index_bits(entries));
    if entries <= 1 {
        let mut c = Compact::default();
        c.varint(values << 1);
        return 1 + c.out.len() as u64 + 1;
    }
    let groups = values.div_ceil(8);
    1 + groups * bits + groups.div_ceil(63)
}

/// A data page's indices: every entry in order, then entries drawn by `next` that
/// differ from the one before.
pub fn dictionary_indices(values: u64, entries: u64, mut next: impl FnMut() -> u64) -> Vec<u8> {
    let bits = index_bits(entries);
    let mut rle = Rle::new(bits);
    let mut last = u64::MAX;
    for i in 0..values {
        let mut v = if i < entries { i } else { next() % entries };
        if v == last && entries > 1 {
            v = (v + 1) % entries;
        }
        rle.put(v);
        last = v;
    }
    let mut out = vec![bits as u8];
    out.extend(rle.finish());
    out
}

/// pyarrow's page statistics: max and min of the element's width, no nulls, exact.
fn statistics(c: &mut Compact, id: i16, width: u64) {
    let zero = vec![0u8; width as usize];
    c.begin(id);
    c.bytes(1, &zero);
    c.bytes(2, &zero);
    c.i64(3, 0);
    c.bytes(5, &zero);
    c.bytes(6, &zero);
    c.bool(7, true);
    c.bool(8, true);
    c.end();
}

/// A data page's header: `values` values in `body` bytes, dictionary-encoded or PLAIN.
pub fn data_page_header(values: u64, body: u64, dictionary: bool, width: u64) -> Vec<u8> {
    let mut c = Compact::default();
    c.last.push(0);
    c.i32(1, DATA_PAGE);
    c.i32(2, body as i32);
    c.i32(3, body as i32);
    c.begin(5);
    c.i32(1, values as i32);
    c.i32(2, if dictionary { RLE_DICTIONARY } else { PLAIN });
    c.i32(3, RLE);
    c.i32(4, RLE);
    statistics(&mut c, 5, width);
    c.end();
    c.out.push(0);
    c.out
}

/// A dictionary page's header: `entries` PLAIN values of `width` bytes.
pub fn dictionary_page_header(entries: u64, width: u64) -> Vec<u8> {
    let mut c = Compact::default();
    c.last.push(0);
    c.i32(1, DICTIONARY_PAGE);
    c.i32(2, (entries * width) as i32);
    c.i32(3, (entries * width) as i32);
    c.begin(7);
    c.i32(1, entries as i32);
    c.i32(2, PLAIN);
    c.bool(3, false);
    c.end();
    c.out.push(0);
    c.out
}

/// Statistics of a column chunk in its footer entry (as a page's).
pub(super) fn chunk_statistics(c: &mut Compact, width: u64) {
    statistics(c, 12, width);
}
