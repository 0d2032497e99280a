//! Apache Parquet as DLIO's dlrm and flux datasets need it, written by hand (PLAIN,
//! uncompressed, one data page per column chunk, a thrift-compact footer):
//! [`ParquetLayout`] places every row group's column chunks, [`footer`] is the
//! FileMetaData; [`read_footer`] parses a footer (iolab's or pyarrow's) into
//! [`FileChunks`]; [`dlio_reads`] and [`column_reads`] are the byte ranges a reader asks
//! for. Columns are required: a scalar is one leaf, a list of `size` a LIST group.

use iolab_core::spec::{ParquetColumn, ParquetDtype, ParquetSchema};

use super::CompatError;

/// The footer pyarrow reads first (`ParquetFile`: the last 64 KiB).
pub const FOOTER_READ: u64 = 64 << 10;

// Parquet's physical types and encodings.
const INT32: i32 = 1;
const FLOAT: i32 = 4;
const DOUBLE: i32 = 5;
const FIXED: i32 = 7;
const PLAIN: i32 = 0;
const RLE: i32 = 3;

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

/// One column chunk of one row group: where its page header starts and its bytes
/// (header, levels, values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub offset: u64,
    pub len: u64,
    pub header_len: u64,
    pub values: u64,
}

/// Where everything of a file written from `schema` with `rows` rows goes.
pub struct ParquetLayout {
    pub schema: ParquetSchema,
    pub rows: u64,
    /// Per row group: its rows and its chunks (in column order).
    pub groups: Vec<(u64, Vec<Chunk>)>,
}

/// RLE runs of a list column's levels for `rows` rows of `size`: repetition (0 then
/// size-1 ones per row) and definition (all 1), each length-prefixed.
fn levels(rows: u64, size: u64) -> (Vec<u8>, Vec<u8>) {
    let mut rep = Compact::default();
    for _ in 0..rows {
        rep.varint(1 << 1);
        rep.out.push(0);
        if size > 1 {
            rep.varint((size - 1) << 1);
            rep.out.push(1);
        }
    }
    let mut def = Compact::default();
    def.varint((rows * size) << 1);
    def.out.push(1);
    let framed = |v: Vec<u8>| {
        let mut f = (v.len() as u32).to_le_bytes().to_vec();
        f.extend(v);
        f
    };
    (framed(rep.out), framed(def.out))
}

fn page_header(values: u64, body: u64) -> Vec<u8> {
    let mut c = Compact::default();
    c.last.push(0);
    c.i32(1, 0);
    c.i32(2, body as i32);
    c.i32(3, body as i32);
    c.begin(5);
    c.i32(1, values as i32);
    c.i32(2, PLAIN);
    c.i32(3, RLE);
    c.i32(4, RLE);
    c.end();
    c.out.push(0);
    c.out
}

impl ParquetLayout {
    /// Places `rows` rows in row groups of `schema.row_group_size`, the last one short.
    pub fn new(schema: &ParquetSchema, rows: u64) -> Result<ParquetLayout, CompatError> {
        let mut offset = 4u64;
        let mut groups = Vec::new();
        let mut left = rows;
        while left > 0 {
            let n = left.min(schema.row_group_size.max(1));
            let mut chunks = Vec::new();
            for c in &schema.columns {
                let values = n * c.size;
                let data = values * physical(c.dtype).1;
                let lv = if c.size > 1 {
                    let (r, d) = levels(n, c.size);
                    (r.len() + d.len()) as u64
                } else {
                    0
                };
                let body = lv + data;
                if body > i32::MAX as u64 {
                    return Err(CompatError::new(format!(
                        "column {} of a row group of {n} rows is {body} bytes, more than a parquet page holds: lower the row group size",
                        c.name
                    )));
                }
                let header_len = page_header(values, body).len() as u64;
                chunks.push(Chunk {
                    offset,
                    len: header_len + body,
                    header_len,
                    values,
                });
                offset += header_len + body;
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

    /// The page header and the level bytes that precede chunk `c` of row group `g`'s
    /// values; the values follow (`values x` the element's physical bytes).
    pub fn chunk_prefix(&self, g: usize, c: usize) -> Vec<u8> {
        let (rows, chunks) = &self.groups[g];
        let col = &self.schema.columns[c];
        let ch = chunks[c];
        let mut out = Vec::new();
        let mut lv = Vec::new();
        if col.size > 1 {
            let (r, d) = levels(*rows, col.size);
            lv.extend(r);
            lv.extend(d);
        }
        let body = lv.len() as u64 + ch.values * physical(col.dtype).1;
        out.extend(page_header(ch.values, body));
        out.extend(lv);
        out
    }

    /// Bytes of values in chunk `c` of row group `g`.
    pub fn value_bytes(&self, g: usize, c: usize) -> u64 {
        self.groups[g].1[c].values * physical(self.schema.columns[c].dtype).1
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

fn schema_elements(c: &mut Compact, cols: &[ParquetColumn]) {
    let n: usize = 1 + cols
        .iter()
        .map(|c| if c.size > 1 { 3 } else { 1 })
        .sum::<usize>();
    c.list(2, 12, n);
    c.item();
    c.bytes(4, b"schema");
    c.i32(5, cols.len() as i32);
    c.end();
    for col in cols {
        let (ty, _) = physical(col.dtype);
        if col.size > 1 {
            c.item();
            c.i32(3, 0);
            c.bytes(4, col.name.as_bytes());
            c.i32(5, 1);
            c.i32(6, 3); // LIST
            c.end();
            c.item();
            c.i32(3, 2); // repeated
            c.bytes(4, b"list");
            c.i32(5, 1);
            c.end();
        }
        c.item();
        c.i32(1, ty);
        if ty == FIXED {
            c.i32(2, 2);
        }
        c.i32(3, 0); // required
        c.bytes(
            4,
            if col.size > 1 {
                b"element"
            } else {
                col.name.as_bytes()
            },
        );
        match col.dtype {
            ParquetDtype::Int8 => c.i32(6, 15),
            ParquetDtype::Uint8 => c.i32(6, 11),
            _ => {}
        }
        if col.dtype == ParquetDtype::Float16 {
            c.begin(10);
            c.begin(15);
            c.end();
            c.end();
        }
        c.end();
    }
}

/// The FileMetaData of a layout, thrift-compact encoded.
pub fn footer(l: &ParquetLayout) -> Vec<u8> {
    let mut c = Compact::default();
    c.last.push(0);
    c.i32(1, 1);
    schema_elements(&mut c, &l.schema.columns);
    c.i64(3, l.rows as i64);
    c.list(4, 12, l.groups.len());
    for (rows, chunks) in &l.groups {
        c.item();
        c.list(1, 12, chunks.len());
        let mut total = 0;
        for (col, ch) in l.schema.columns.iter().zip(chunks) {
            total += ch.len;
            c.item();
            c.i64(2, ch.offset as i64);
            c.begin(3);
            c.i32(1, physical(col.dtype).0);
            c.list(2, 5, 2);
            c.varint(((PLAIN << 1) ^ (PLAIN >> 31)) as u64);
            c.varint(((RLE << 1) ^ (RLE >> 31)) as u64);
            let path: Vec<&[u8]> = if col.size > 1 {
                vec![col.name.as_bytes(), b"list", b"element"]
            } else {
                vec![col.name.as_bytes()]
            };
            c.list(3, 8, path.len());
            for p in path {
                c.varint(p.len() as u64);
                c.out.extend_from_slice(p);
            }
            c.i32(4, 0);
            c.i64(5, ch.values as i64);
            c.i64(6, ch.len as i64);
            c.i64(7, ch.len as i64);
            c.i64(9, ch.offset as i64);
            // No dictionary page; set to 0 all the same, as DLIO's reader compares it
            // with 0 (pyarrow's files always have one; None would stop DLIO).
            c.i64(11, 0);
            c.end();
            c.end();
        }
        c.i64(2, total as i64);
        c.i64(3, *rows as i64);
        c.end();
    }
    c.bytes(6, format!("iolab {}", env!("CARGO_PKG_VERSION")).as_bytes());
    c.out.push(0);
    c.out
}

mod read;
pub use read::{
    ChunkRange, FileChunks, column_reads, dlio_reads, group_reads, metadata_range, read_footer,
};

#[cfg(test)]
mod tests;
