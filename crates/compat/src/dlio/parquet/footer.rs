//! The FileMetaData of a [`ParquetLayout`], thrift-compact, with the fields pyarrow 23
//! writes: optional (nullable) schema elements with their logical types, per chunk its
//! encodings, offsets, statistics, page encoding counts and level histograms, per row
//! group its offset and sizes, and the column orders. pyarrow's `ARROW:schema`
//! key-value entry (its Arrow schema, about 14 KB for dlrm's 200 columns) is not
//! written: a reader without it takes the schema from the parquet one.

use iolab_core::spec::{ParquetColumn, ParquetDtype};

use super::pages::{PLAIN, RLE, RLE_DICTIONARY, chunk_statistics};
use super::{Chunk, Compact, FIXED, ParquetLayout, physical};

const OPTIONAL: i32 = 1;
const REPEATED: i32 = 2;

/// A leaf's logical type: float16, or int8/uint8 as an 8-bit IntType.
fn logical_type(c: &mut Compact, dtype: ParquetDtype) {
    let int = |c: &mut Compact, signed: bool| {
        c.begin(10);
        c.begin(10);
        c.field(1, 3);
        c.out.push(8);
        c.bool(2, signed);
        c.end();
        c.end();
    };
    match dtype {
        ParquetDtype::Int8 => {
            c.i32(6, 15);
            int(c, true);
        }
        ParquetDtype::Uint8 => {
            c.i32(6, 11);
            int(c, false);
        }
        ParquetDtype::Float16 => {
            c.begin(10);
            c.begin(15);
            c.end();
            c.end();
        }
        ParquetDtype::Float32 | ParquetDtype::Float64 => {}
    }
}

fn schema_elements(c: &mut Compact, cols: &[ParquetColumn]) {
    let n: usize = 1 + cols
        .iter()
        .map(|c| if c.size > 1 { 3 } else { 1 })
        .sum::<usize>();
    c.list(2, 12, n);
    c.item();
    c.i32(3, 0);
    c.bytes(4, b"schema");
    c.i32(5, cols.len() as i32);
    c.end();
    for col in cols {
        let (ty, _) = physical(col.dtype);
        if col.size > 1 {
            c.item();
            c.i32(3, OPTIONAL);
            c.bytes(4, col.name.as_bytes());
            c.i32(5, 1);
            c.i32(6, 3); // LIST
            c.begin(10);
            c.begin(3);
            c.end();
            c.end();
            c.end();
            c.item();
            c.i32(3, REPEATED);
            c.bytes(4, b"list");
            c.i32(5, 1);
            c.end();
        }
        c.item();
        c.i32(1, ty);
        if ty == FIXED {
            c.i32(2, 2);
        }
        c.i32(3, OPTIONAL);
        let name: &[u8] = if col.size > 1 {
            b"element"
        } else {
            col.name.as_bytes()
        };
        c.bytes(4, name);
        logical_type(c, col.dtype);
        c.end();
    }
}

/// A list of i64s (a level histogram).
fn i64_list(c: &mut Compact, id: i16, values: &[i64]) {
    c.list(id, 6, values.len());
    for &v in values {
        c.varint(((v << 1) ^ (v >> 63)) as u64);
    }
}

/// One chunk's ColumnMetaData.
fn column_meta(c: &mut Compact, col: &ParquetColumn, ch: &Chunk, rows: u64) {
    let (ty, width) = physical(col.dtype);
    c.begin(3);
    c.i32(1, ty);
    c.list(2, 5, 3);
    for e in [PLAIN, RLE, RLE_DICTIONARY] {
        c.varint(((e << 1) ^ (e >> 31)) as u64);
    }
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
    c.i64(9, ch.data_offset as i64);
    c.i64(11, ch.offset as i64);
    chunk_statistics(c, width);
    // Page counts: the dictionary page, PLAIN data pages, dictionary-encoded ones.
    let dict_pages = ch
        .plan
        .pages
        .iter()
        .filter(|p| p.dictionary.is_some())
        .count();
    let plain_pages = ch.plan.pages.len() - dict_pages;
    let stats: Vec<(i32, i32, usize)> = [
        (2, PLAIN, 1),
        (0, PLAIN, plain_pages),
        (0, RLE_DICTIONARY, dict_pages),
    ]
    .into_iter()
    .filter(|s| s.2 > 0)
    .collect();
    c.list(13, 12, stats.len());
    for (page, encoding, count) in stats {
        c.item();
        c.i32(1, page);
        c.i32(2, encoding);
        c.i32(3, count as i32);
        c.end();
    }
    c.begin(16);
    let values = ch.values as i64;
    if col.size > 1 {
        i64_list(c, 2, &[rows as i64, values - rows as i64]);
        i64_list(c, 3, &[0, 0, 0, values]);
    } else {
        i64_list(c, 2, &[]);
        i64_list(c, 3, &[0, values]);
    }
    c.end();
    c.end();
}

/// The FileMetaData of a layout, thrift-compact encoded.
pub fn footer(l: &ParquetLayout) -> Vec<u8> {
    let mut c = Compact::default();
    c.last.push(0);
    c.i32(1, 2);
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
            c.i64(2, 0);
            column_meta(&mut c, col, ch, *rows);
            c.end();
        }
        c.i64(2, total as i64);
        c.i64(3, *rows as i64);
        c.i64(5, chunks.first().map_or(4, |ch| ch.offset) as i64);
        c.i64(6, total as i64);
        c.end();
    }
    c.bytes(6, format!("iolab {}", env!("CARGO_PKG_VERSION")).as_bytes());
    let leaves = l.schema.columns.len();
    c.list(7, 12, leaves);
    for _ in 0..leaves {
        c.item();
        c.begin(1);
        c.end();
        c.end();
    }
    c.out.push(0);
    c.out
}
