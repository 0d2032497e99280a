//! A parquet footer read back: the thrift-compact FileMetaData parsed only as far as a
//! reader's byte ranges need ([`FileChunks`]: every row group's column chunks, by
//! name), and those ranges as DLIO's reader asks for them ([`dlio_reads`]) or column
//! by column ([`column_reads`]).

use super::super::CompatError;

/// One column chunk as a footer gives it: its dotted path and its byte range (from the
/// dictionary page, when there is one, to the end of its last page).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkRange {
    pub path: String,
    pub start: u64,
    pub len: u64,
}

/// Every row group of a file: its rows and its chunks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChunks {
    pub rows: u64,
    pub groups: Vec<(u64, Vec<ChunkRange>)>,
}

struct Parser<'a> {
    b: &'a [u8],
    at: usize,
}

type R<T> = Result<T, CompatError>;

fn bad() -> CompatError {
    CompatError::new("a parquet footer that does not parse (truncated or not thrift-compact)")
}

impl Parser<'_> {
    fn byte(&mut self) -> R<u8> {
        let v = *self.b.get(self.at).ok_or_else(bad)?;
        self.at += 1;
        Ok(v)
    }
    fn varint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad())
    }
    fn zigzag(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    fn binary(&mut self) -> R<&[u8]> {
        let n = self.varint()? as usize;
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(bad)?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    /// The next field's (id, kind), None at the struct's stop.
    fn field(&mut self, last: &mut i16) -> R<Option<(i16, u8)>> {
        let h = self.byte()?;
        if h == 0 {
            return Ok(None);
        }
        let kind = h & 0x0f;
        let id = if h >> 4 == 0 {
            self.zigzag()? as i16
        } else {
            *last + i16::from(h >> 4)
        };
        *last = id;
        Ok(Some((id, kind)))
    }
    fn list_head(&mut self) -> R<(usize, u8)> {
        let h = self.byte()?;
        let n = if h >> 4 == 15 {
            self.varint()? as usize
        } else {
            usize::from(h >> 4)
        };
        if n > self.b.len() {
            return Err(bad());
        }
        Ok((n, h & 0x0f))
    }
    fn skip(&mut self, kind: u8, depth: u32) -> R<()> {
        if depth > 32 {
            return Err(bad());
        }
        match kind {
            1 | 2 => {}
            3 => self.at += 1,
            4..=6 => {
                self.varint()?;
            }
            7 => self.at += 8,
            8 => {
                self.binary()?;
            }
            9 | 10 => {
                let (n, k) = self.list_head()?;
                for _ in 0..n {
                    self.skip(k, depth + 1)?;
                }
            }
            12 => {
                let mut last = 0;
                while let Some((_, k)) = self.field(&mut last)? {
                    self.skip(k, depth + 1)?;
                }
            }
            _ => return Err(bad()),
        }
        if self.at > self.b.len() {
            return Err(bad());
        }
        Ok(())
    }

    fn column_meta(&mut self) -> R<ChunkRange> {
        let (mut path, mut size, mut data, mut dict) = (Vec::new(), 0, 0, None);
        let mut last = 0;
        while let Some((id, k)) = self.field(&mut last)? {
            match (id, k) {
                (3, 9) => {
                    let (n, _) = self.list_head()?;
                    for _ in 0..n {
                        path.push(String::from_utf8_lossy(self.binary()?).into_owned());
                    }
                }
                (7, 6) => size = self.zigzag()? as u64,
                (9, 6) => data = self.zigzag()? as u64,
                (11, 6) => dict = Some(self.zigzag()? as u64),
                _ => self.skip(k, 1)?,
            }
        }
        let start = dict.filter(|&d| d > 0).map_or(data, |d| d.min(data));
        Ok(ChunkRange {
            path: path.join("."),
            start,
            len: size,
        })
    }

    fn row_group(&mut self) -> R<(u64, Vec<ChunkRange>)> {
        let (mut rows, mut chunks) = (0, Vec::new());
        let mut last = 0;
        while let Some((id, k)) = self.field(&mut last)? {
            match (id, k) {
                (1, 9) => {
                    let (n, _) = self.list_head()?;
                    for _ in 0..n {
                        let mut l = 0;
                        while let Some((cid, ck)) = self.field(&mut l)? {
                            if (cid, ck) == (3, 12) {
                                chunks.push(self.column_meta()?);
                            } else {
                                self.skip(ck, 1)?;
                            }
                        }
                    }
                }
                (3, 6) => rows = self.zigzag()? as u64,
                _ => self.skip(k, 1)?,
            }
        }
        Ok((rows, chunks))
    }
}

/// Parses a FileMetaData (the bytes before a file's last 8).
pub fn read_footer(meta: &[u8]) -> Result<FileChunks, CompatError> {
    let mut p = Parser { b: meta, at: 0 };
    let mut out = FileChunks::default();
    let mut last = 0;
    while let Some((id, k)) = p.field(&mut last)? {
        match (id, k) {
            (3, 6) => out.rows = p.zigzag()? as u64,
            (4, 9) => {
                let (n, _) = p.list_head()?;
                for _ in 0..n {
                    out.groups.push(p.row_group()?);
                }
            }
            _ => p.skip(k, 0)?,
        }
    }
    Ok(out)
}

/// DLIO's reader (parquet_reader_file_iterable.py): the footer's tail first, then per
/// row group one read from the first selected chunk's start to the last one's end
/// (every chunk when `columns` is None: the whole row group).
pub fn dlio_reads(file_len: u64, f: &FileChunks, columns: Option<&[String]>) -> Vec<(u64, u64)> {
    let tail = super::FOOTER_READ.min(file_len);
    let mut reads = vec![(file_len - tail, tail)];
    for (_, chunks) in &f.groups {
        reads.extend(group_reads(chunks, columns, true));
    }
    reads
}

/// The column-selective read beside it: the footer's tail, then each chosen chunk of
/// each row group on its own.
pub fn column_reads(file_len: u64, f: &FileChunks, columns: &[String]) -> Vec<(u64, u64)> {
    let tail = super::FOOTER_READ.min(file_len);
    let mut reads = vec![(file_len - tail, tail)];
    for (_, chunks) in &f.groups {
        reads.extend(group_reads(chunks, Some(columns), false));
    }
    reads
}

/// One row group's reads: with `span`, DLIO's one read from the first chosen chunk's
/// start to the last one's end (none when no chunk is chosen); else each chosen chunk
/// on its own. `columns` None chooses every chunk.
pub fn group_reads(
    chunks: &[ChunkRange],
    columns: Option<&[String]>,
    span: bool,
) -> Vec<(u64, u64)> {
    let chosen = chunks.iter().filter(|c| wanted(c, columns));
    if !span {
        return chosen.map(|c| (c.start, c.len)).collect();
    }
    let (lo, hi) = chosen.fold((u64::MAX, 0), |(lo, hi), c| {
        (lo.min(c.start), hi.max(c.start + c.len))
    });
    if hi > lo {
        vec![(lo, hi - lo)]
    } else {
        Vec::new()
    }
}

/// Where a file's FileMetaData lies, from its last 8 bytes (the metadata's length and
/// "PAR1") and its length: `(offset, len)`; None when the tail is not a parquet one.
pub fn metadata_range(file_len: u64, last8: &[u8]) -> Option<(u64, u64)> {
    let (len, magic) = last8.split_at_checked(4)?;
    if magic != b"PAR1" {
        return None;
    }
    let len = u64::from(u32::from_le_bytes(len.try_into().ok()?));
    let start = file_len.checked_sub(8)?.checked_sub(len)?;
    (start >= 4).then_some((start, len))
}

/// Whether a chunk belongs to one of `columns` (its path's first name).
fn wanted(c: &ChunkRange, columns: Option<&[String]>) -> bool {
    columns.is_none_or(|cols| {
        let top = c.path.split('.').next().unwrap_or("");
        cols.iter().any(|n| n == top)
    })
}
