//! Apache Parquet as DLIO's dlrm and flux datasets need it, written by hand in the
//! layout pyarrow gives DLIO's generator (uncompressed, nullable columns, a dictionary
//! page and dictionary-encoded data pages until the 1 MiB fallback to PLAIN: `pages`):
//! [`ParquetLayout`] places every row group's column chunks and [`Part`]s them for the
//! writer, [`footer`] is the FileMetaData; [`read_footer`] parses a footer (iolab's or
//! pyarrow's) into [`FileChunks`]; [`dlio_reads`] and [`column_reads`] are the byte
//! ranges a reader asks for. A scalar is one leaf, a list of `size` a LIST group.

use iolab_core::spec::{ParquetColumn, ParquetDtype, ParquetSchema};

use super::CompatError;

/// The footer pyarrow reads first (`ParquetFile`: the last 64 KiB).
pub const FOOTER_READ: u64 = 64 << 10;

// Parquet's physical types and encodings.
const INT32: i32 = 1;
const FLOAT: i32 = 4;
const DOUBLE: i32 = 5;
const FIXED: i32 = 7;

fn physical(d: ParquetDtype) -> (i32, u64) {
    match d {
        ParquetDtype::Float16 => (FIXED, 2),
        ParquetDtype::Float32 => (FLOAT, 4),
        ParquetDtype::Float64 => (DOUBLE, 8),
        ParquetDtype::Int8 | ParquetDtype::Uint8 => (INT32, 4),
    }
}

/// Thrift's compact protocol, the few kinds a footer needs.
#[derive(Default)]
struct Compact {
    out: Vec<u8>,
    last: Vec<i16>,
}

impl Compact {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    fn field(&mut self, id: i16, kind: u8) {
        let last = self.last.last_mut().expect("inside a struct");
        let delta = id - *last;
        *last = id;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            self.varint(((id << 1) ^ (id >> 15)) as u16 as u64);
        }
    }
    fn i32(&mut self, id: i16, v: i32) {
        self.field(id, 5);
        self.varint(((v << 1) ^ (v >> 31)) as u32 as u64);
    }
    fn i64(&mut self, id: i16, v: i64) {
        self.field(id, 6);
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }
    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { 1 } else { 2 });
    }
    fn bytes(&mut self, id: i16, b: &[u8]) {
        self.field(id, 8);
        self.varint(b.len() as u64);
        self.out.extend_from_slice(b);
    }
    fn begin(&mut self, id: i16) {
        self.field(id, 12);
        self.last.push(0);
    }
    fn end(&mut self) {
        self.out.push(0);
        self.last.pop();
    }
    fn list(&mut self, id: i16, kind: u8, n: usize) {
        self.field(id, 9);
        if n < 15 {
            self.out.push(((n as u8) << 4) | kind);
        } else {
            self.out.push(0xf0 | kind);
            self.varint(n as u64);
        }
    }
    /// A list element that is a struct.
    fn item(&mut self) {
        self.last.push(0);
    }
}

/// One column chunk of one row group: where it starts (its dictionary page), its bytes,
/// where its first data page starts, its values and its pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub offset: u64,
    pub len: u64,
    pub data_offset: u64,
    pub values: u64,
    pub plan: ChunkPlan,
}

/// A piece of a chunk as the writer puts it: bytes iolab made (headers, levels,
/// indices) or so many random bytes (dictionary entries, PLAIN values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Bytes(Vec<u8>),
    Random(u64),
}

/// Where everything of a file written from `schema` with `rows` rows goes.
pub struct ParquetLayout {
    pub schema: ParquetSchema,
    pub rows: u64,
    /// Per row group: its rows and its chunks (in column order).
    pub groups: Vec<(u64, Vec<Chunk>)>,
}

/// A chunk's pages and bytes, before it is placed: (plan, bytes to the first data
/// page, bytes in all).
fn chunk_shape(col: &ParquetColumn, rows: u64) -> Result<(ChunkPlan, u64, u64), CompatError> {
    let plan = ChunkPlan::new(col, rows);
    let width = physical(col.dtype).1;
    let dict =
        dictionary_page_header(plan.dictionary, width).len() as u64 + plan.dictionary * width;
    let mut len = dict;
    for p in &plan.pages {
        let body = page_body_len(col, p);
        if body > i32::MAX as u64 {
            return Err(CompatError::new(format!(
                "column {} of a row group of {rows} rows has a page of {body} bytes, more than a parquet page holds: lower the row group size",
                col.name
            )));
        }
        len += data_page_header(p.values, body, p.dictionary.is_some(), width).len() as u64 + body;
    }
    Ok((plan, dict, len))
}

/// A data page's bytes after its header: levels, then indices or PLAIN values.
fn page_body_len(col: &ParquetColumn, p: &PagePlan) -> u64 {
    let levels = page_levels(col.size, p.rows).len() as u64;
    levels
        + match p.dictionary {
            Some(entries) => indices_len(p.values, entries),
            None => p.values * physical(col.dtype).1,
        }
}

impl ParquetLayout {
    /// Places `rows` rows in row groups of `schema.row_group_size`, the last one short.
    pub fn new(schema: &ParquetSchema, rows: u64) -> Result<ParquetLayout, CompatError> {
        let per_group = schema.row_group_size.max(1);
        // Every full group's chunks have one shape, the last group's another.
        let shapes = |n: u64| -> Result<Vec<_>, CompatError> {
            schema.columns.iter().map(|c| chunk_shape(c, n)).collect()
        };
        let full = if rows >= per_group {
            shapes(per_group)?
        } else {
            Vec::new()
        };
        let tail = if !rows.is_multiple_of(per_group) {
            shapes(rows % per_group)?
        } else {
            Vec::new()
        };
        let mut offset = 4u64;
        let mut groups = Vec::new();
        let mut left = rows;
        while left > 0 {
            let n = left.min(per_group);
            let shape = if n == per_group { &full } else { &tail };
            let mut chunks = Vec::with_capacity(shape.len());
            for (col, (plan, dict, len)) in schema.columns.iter().zip(shape) {
                chunks.push(Chunk {
                    offset,
                    len: *len,
                    data_offset: offset + dict,
                    values: n * col.size.max(1),
                    plan: plan.clone(),
                });
                offset += len;
            }
            groups.push((n, chunks));
            left -= n;
        }
        Ok(ParquetLayout {
            schema: schema.clone(),
            rows,
            groups,
        })
    }

    /// Chunk `c` of row group `g` as the writer puts it, start to end; `next` draws the
    /// dictionary indices after every entry's first.
    pub fn chunk_parts(&self, g: usize, c: usize, mut next: impl FnMut() -> u64) -> Vec<Part> {
        let col = &self.schema.columns[c];
        let plan = &self.groups[g].1[c].plan;
        let width = physical(col.dtype).1;
        let mut parts = vec![
            Part::Bytes(dictionary_page_header(plan.dictionary, width)),
            Part::Random(plan.dictionary * width),
        ];
        for p in &plan.pages {
            let body = page_body_len(col, p);
            let mut head = data_page_header(p.values, body, p.dictionary.is_some(), width);
            head.extend(page_levels(col.size, p.rows));
            match p.dictionary {
                Some(entries) => {
                    head.extend(dictionary_indices(p.values, entries, &mut next));
                    parts.push(Part::Bytes(head));
                }
                None => {
                    parts.push(Part::Bytes(head));
                    parts.push(Part::Random(p.values * width));
                }
            }
        }
        parts
    }

    /// The end of the last chunk: where the footer starts.
    pub fn data_end(&self) -> u64 {
        self.groups
            .last()
            .and_then(|g| g.1.last())
            .map_or(4, |c| c.offset + c.len)
    }

    /// The whole file's bytes.
    pub fn file_len(&self) -> u64 {
        self.data_end() + footer(self).len() as u64 + 8
    }
}

mod footer;
mod pages;
mod read;
pub use footer::footer;
pub use pages::{ChunkPlan, PagePlan, Rle, distinct};
use pages::{
    data_page_header, dictionary_indices, dictionary_page_header, indices_len, page_levels,
};
pub use read::{
    ChunkRange, FileChunks, column_reads, dlio_reads, group_reads, metadata_range, read_footer,
};

#[cfg(test)]
mod tests;
