//! TFRecord files as DLIO's generator writes them: each record is a little-endian u64
//! length, the masked CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the
//! data; the data is a tf.train.Example with two features, `image` (the sample's bytes)
//! and `size` (an int64: DLIO puts int(sqrt(record_length)) there). [`ExampleLayout`]
//! gives the bytes around a sample so a writer streams it; [`crc32c`] and [`masked`]
//! are TensorFlow's checksums; [`records`] walks a file's records and checks them.

use crate::dlio::CompatError;

/// CRC-32C (Castagnoli) tables for slicing by 8.
const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut s = 1;
        while s < 8 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            s += 1;
        }
        i += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = tables();

/// Continues a CRC-32C over `data` (start with 0).
pub fn crc32c_update(crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut c = !crc;
    let mut chunks = data.chunks_exact(8);
    for b in &mut chunks {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) ^ c;
        let hi = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        c = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = t[0][((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_update(0, data)
}

/// TensorFlow's masked CRC (tensorflow/core/lib/hash/crc32c.h).
pub fn masked(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> u64 {
    let mut n = 1;
    let mut v = v >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// A length-delimited field's tag and length.
fn field(number: u64, len: u64, out: &mut Vec<u8>) {
    varint((number << 3) | 2, out);
    varint(len, out);
}

/// One record's bytes around its sample: `prefix`, the sample, `suffix`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExampleLayout {
    pub prefix: Vec<u8>,
    pub suffix: Vec<u8>,
    pub sample_len: u64,
}

impl ExampleLayout {
    /// The Example `{image: bytes_list[sample_len bytes], size: int64_list[size]}` as
    /// TensorFlow serializes DLIO's dict (the sample last).
    pub fn new(sample_len: u64, size: i64) -> ExampleLayout {
        // Feature{bytes_list{value: image}}
        let bytes_list_len = 1 + varint_len(sample_len) + sample_len;
        let image_feature_len = 1 + varint_len(bytes_list_len) + bytes_list_len;
        let image_key = b"image";
        let image_entry_len =
            1 + 1 + image_key.len() as u64 + 1 + varint_len(image_feature_len) + image_feature_len;
        // Feature{int64_list{value: [size] packed}}
        let mut packed = Vec::new();
        varint(size as u64, &mut packed);
        let mut int_list = Vec::new();
        field(1, packed.len() as u64, &mut int_list);
        int_list.extend_from_slice(&packed);
        let mut size_feature = Vec::new();
        field(3, int_list.len() as u64, &mut size_feature);
        size_feature.extend_from_slice(&int_list);
        let mut size_entry = Vec::new();
        field(1, 4, &mut size_entry);
        size_entry.extend_from_slice(b"size");
        field(2, size_feature.len() as u64, &mut size_entry);
        size_entry.extend_from_slice(&size_feature);
        // Protobuf writes map entries in key order: "size" before "image".
        let features_len = 1
            + varint_len(size_entry.len() as u64)
            + size_entry.len() as u64
            + 1
            + varint_len(image_entry_len)
            + image_entry_len;
        let mut prefix = Vec::new();
        field(1, features_len, &mut prefix); // Example.features
        field(1, size_entry.len() as u64, &mut prefix); // Features.feature["size"]
        prefix.extend_from_slice(&size_entry);
        field(1, image_entry_len, &mut prefix); // Features.feature["image"]
        field(1, image_key.len() as u64, &mut prefix);
        prefix.extend_from_slice(image_key);
        field(2, image_feature_len, &mut prefix); // the entry's value: Feature
        field(1, bytes_list_len, &mut prefix); // Feature.bytes_list
        field(1, sample_len, &mut prefix); // BytesList.value
        ExampleLayout {
            prefix,
            suffix: Vec::new(),
            sample_len,
        }
    }

    /// The Example's bytes (the record's data).
    pub fn data_len(&self) -> u64 {
        self.prefix.len() as u64 + self.sample_len + self.suffix.len() as u64
    }

    /// The record's bytes on disk: 12 bytes of header, the data, 4 of CRC.
    pub fn record_len(&self) -> u64 {
        12 + self.data_len() + 4
    }

    /// The record's header: length and its masked CRC.
    pub fn header(&self) -> [u8; 12] {
        let len = self.data_len().to_le_bytes();
        let mut h = [0u8; 12];
        h[..8].copy_from_slice(&len);
        h[8..].copy_from_slice(&masked(crc32c(&len)).to_le_bytes());
        h
    }
}

/// One record of a file, as [`records`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordSpan {
    pub offset: u64,
    pub data_len: u64,
}

/// Walks the records of a whole file and checks both CRCs of each.
pub fn records(file: &[u8]) -> Result<Vec<RecordSpan>, CompatError> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < file.len() {
        let bad = |why: String| CompatError::new(format!("TFRecord at offset {at}: {why}"));
        let head = file
            .get(at..at + 12)
            .ok_or_else(|| bad("truncated header".into()))?;
        let len = u64::from_le_bytes(head[..8].try_into().unwrap());
        let crc = u32::from_le_bytes(head[8..12].try_into().unwrap());
        if crc != masked(crc32c(&head[..8])) {
            return Err(bad("length CRC mismatch".into()));
        }
        let end = at
            .checked_add(12)
            .and_then(|s| s.checked_add(len as usize))
            .filter(|e| e + 4 <= file.len())
            .ok_or_else(|| bad(format!("record of {len} bytes runs past the file's end")))?;
        let data = &file[at + 12..end];
        let crc = u32::from_le_bytes(file[end..end + 4].try_into().unwrap());
        if crc != masked(crc32c(data)) {
            return Err(bad("data CRC mismatch".into()));
        }
        out.push(RecordSpan {
            offset: at as u64,
            data_len: len,
        });
        at = end + 4;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_known_values() {
        // RFC 3720's test vector and "123456789".
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_update(crc32c(b"1234"), b"56789"), 0xE306_9283);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
    }

    #[test]
    fn example_is_what_tensorflow_serializes() {
        // tf.train.Example(features={image: [b"\x01\x02\x03"], size: [1]})
        // .SerializeToString() with TensorFlow 2.21.
        let l = ExampleLayout::new(3, 1);
        let mut data = l.prefix.clone();
        data.extend_from_slice(&[1, 2, 3]);
        data.extend_from_slice(&l.suffix);
        assert_eq!(
            data,
            b"\n!\n\r\n\x04size\x12\x05\x1a\x03\n\x01\x01\n\x10\n\x05image\x12\x07\n\x05\n\x03\x01\x02\x03"
        );
        // 300 bytes with size 338 (two-byte varints): 338 bytes in all, as TensorFlow's.
        assert_eq!(ExampleLayout::new(300, 338).data_len(), 338);
        let mut file = l.header().to_vec();
        file.extend_from_slice(&data);
        file.extend_from_slice(&masked(crc32c(&data)).to_le_bytes());
        let r = records(&file).unwrap();
        assert_eq!(
            r,
            vec![RecordSpan {
                offset: 0,
                data_len: data.len() as u64
            }]
        );
        file[20] ^= 1;
        assert!(records(&file).unwrap_err().to_string().contains("data CRC"));
    }

    #[test]
    fn record_framing_is_tensorflows() {
        // tf.io.TFRecordWriter writing b"abc".
        let mut f = 3u64.to_le_bytes().to_vec();
        f.extend_from_slice(&masked(crc32c(&f)).to_le_bytes());
        f.extend_from_slice(b"abc");
        f.extend_from_slice(&masked(crc32c(b"abc")).to_le_bytes());
        assert_eq!(
            f,
            b"\x03\x00\x00\x00\x00\x00\x00\x00\xb0\x99I\x0eabcnW\xf1!"
        );
    }
}
