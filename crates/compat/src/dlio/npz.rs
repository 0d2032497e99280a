//! numpy's `.npz` as `np.savez(path, x=records, y=labels)` writes it for DLIO: a stored
//! (uncompressed) zip of `x.npy` (uint8, shape (dim1, dim2, samples)) and `y.npy` (int64
//! zeros, one per sample), each local header carrying a zip64 extra field as numpy's
//! `force_zip64=True` makes it, times 1980-01-01, mode 0600. [`NpzLayout`] gives every
//! byte around the samples, so a writer streams the samples and a reader knows where
//! they are; [`inspect`] reads a file's shape back from its first bytes.

use crate::dlio::CompatError;

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const END_SIG: u32 = 0x0605_4b50;
/// numpy's ARRAY_ALIGN: the npy header ends on a multiple of 64 bytes.
const ARRAY_ALIGN: usize = 64;
const DOS_DATE_1980: u16 = 0x0021;

/// One npz file of DLIO's: its samples' shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpzLayout {
    pub dim1: u64,
    pub dim2: u64,
    pub samples: u64,
}

/// An npy header (format 1.0): magic, version, length, the dict padded to 64 bytes.
fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let total = 10 + dict.len() + 1;
    let pad = (ARRAY_ALIGN - total % ARRAY_ALIGN) % ARRAY_ALIGN;
    dict.push_str(&" ".repeat(pad));
    dict.push('\n');
    let mut out = Vec::with_capacity(10 + dict.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

fn local_header(name: &str, crc: u32, size: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(30 + name.len() + 20);
    h.extend_from_slice(&LOCAL_SIG.to_le_bytes());
    h.extend_from_slice(&45u16.to_le_bytes()); // version needed: zip64
    h.extend_from_slice(&0u16.to_le_bytes()); // flags
    h.extend_from_slice(&0u16.to_le_bytes()); // stored
    h.extend_from_slice(&0u16.to_le_bytes()); // time
    h.extend_from_slice(&DOS_DATE_1980.to_le_bytes());
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(&(name.len() as u16).to_le_bytes());
    h.extend_from_slice(&20u16.to_le_bytes());
    h.extend_from_slice(name.as_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // zip64 extra
    h.extend_from_slice(&16u16.to_le_bytes());
    h.extend_from_slice(&size.to_le_bytes());
    h.extend_from_slice(&size.to_le_bytes());
    h
}

fn central_entry(name: &str, crc: u32, size: u64, offset: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(46 + name.len());
    h.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
    h.extend_from_slice(&0x032du16.to_le_bytes()); // made by: unix, 4.5
    h.extend_from_slice(&45u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(&DOS_DATE_1980.to_le_bytes());
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(&(size as u32).to_le_bytes());
    h.extend_from_slice(&(size as u32).to_le_bytes());
    h.extend_from_slice(&(name.len() as u16).to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes()); // extra
    h.extend_from_slice(&0u16.to_le_bytes()); // comment
    h.extend_from_slice(&0u16.to_le_bytes()); // disk
    h.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
    h.extend_from_slice(&(0o600u32 << 16).to_le_bytes());
    h.extend_from_slice(&(offset as u32).to_le_bytes());
    h.extend_from_slice(name.as_bytes());
    h
}

impl NpzLayout {
    /// The sample bytes (x's array).
    pub fn data_len(&self) -> u64 {
        self.dim1 * self.dim2 * self.samples
    }

    fn x_npy_header(&self) -> Vec<u8> {
        npy_header("|u1", &[self.dim1, self.dim2, self.samples])
    }

    fn x_member_len(&self) -> u64 {
        self.x_npy_header().len() as u64 + self.data_len()
    }

    /// Where the samples start.
    pub fn data_offset(&self) -> u64 {
        (30 + 5 + 20) as u64 + self.x_npy_header().len() as u64
    }

    /// The bytes before the samples: x's local header (with `crc`, the CRC-32 of x.npy's
    /// header and samples) and x's npy header.
    pub fn head(&self, crc: u32) -> Vec<u8> {
        let mut h = local_header("x.npy", crc, self.x_member_len());
        h.extend_from_slice(&self.x_npy_header());
        h
    }

    /// x's npy header alone (what the CRC starts with).
    pub fn x_header(&self) -> Vec<u8> {
        self.x_npy_header()
    }

    /// The bytes after the samples: y.npy's member, the central directory and its end.
    pub fn tail(&self, x_crc: u32) -> Vec<u8> {
        let mut y = npy_header("<i8", &[self.samples]);
        y.extend(std::iter::repeat_n(0u8, 8 * self.samples as usize));
        let y_crc = crc32fast::hash(&y);
        let y_offset = self.data_offset() + self.data_len();
        let mut t = local_header("y.npy", y_crc, y.len() as u64);
        t.extend_from_slice(&y);
        let cd_offset = y_offset + t.len() as u64;
        let mut cd = central_entry("x.npy", x_crc, self.x_member_len(), 0);
        cd.extend(central_entry("y.npy", y_crc, y.len() as u64, y_offset));
        let cd_len = cd.len() as u32;
        t.extend(cd);
        t.extend_from_slice(&END_SIG.to_le_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&cd_len.to_le_bytes());
        t.extend_from_slice(&(cd_offset as u32).to_le_bytes());
        t.extend_from_slice(&0u16.to_le_bytes());
        t
    }

    /// The whole file's bytes.
    pub fn file_len(&self) -> u64 {
        self.data_offset() + self.data_len() + self.tail(0).len() as u64
    }

    /// Refuses a file the zip layout above cannot hold (4 GiB and more need zip64 in
    /// the central directory, which this writer does not emit).
    pub fn check(&self) -> Result<(), CompatError> {
        if self.file_len() >= u64::from(u32::MAX) {
            return Err(CompatError::new(format!(
                "an npz file of {}x{}x{} samples is 4 GiB or more, beyond what iolab writes: lower --record-length or --samples-per-file",
                self.dim1, self.dim2, self.samples
            )));
        }
        Ok(())
    }
}

/// Reads an npz file's x shape from its first bytes (at least its local header and npy
/// header: 512 bytes suffice for any shape DLIO writes).
pub fn inspect(head: &[u8]) -> Result<NpzLayout, CompatError> {
    let bad = |why: &str| CompatError::new(format!("not an npz file as numpy writes it: {why}"));
    if head.len() < 30 || u32::from_le_bytes(head[0..4].try_into().unwrap()) != LOCAL_SIG {
        return Err(bad("no zip local header at offset 0"));
    }
    let name_len = u16::from_le_bytes([head[26], head[27]]) as usize;
    let extra_len = u16::from_le_bytes([head[28], head[29]]) as usize;
    let method = u16::from_le_bytes([head[8], head[9]]);
    if method != 0 {
        return Err(bad("its first member is compressed (np.savez_compressed)"));
    }
    let start = 30 + name_len + extra_len;
    let name = head
        .get(30..30 + name_len)
        .ok_or_else(|| bad("truncated header"))?;
    if name != b"x.npy" {
        return Err(bad("its first member is not x.npy"));
    }
    let npy = head.get(start..).ok_or_else(|| bad("truncated header"))?;
    if npy.len() < 10 || &npy[0..6] != b"\x93NUMPY" {
        return Err(bad("x.npy has no npy magic"));
    }
    let (len, dict_start) = match npy[6] {
        1 => (u16::from_le_bytes([npy[8], npy[9]]) as usize, 10),
        2 | 3 => (
            u32::from_le_bytes(
                npy.get(8..12)
                    .ok_or_else(|| bad("truncated"))?
                    .try_into()
                    .unwrap(),
            ) as usize,
            12,
        ),
        _ => return Err(bad("unknown npy version")),
    };
    let dict = npy
        .get(dict_start..dict_start + len)
        .ok_or_else(|| bad("npy header longer than the bytes given"))?;
    let dict = std::str::from_utf8(dict).map_err(|_| bad("npy header is not text"))?;
    if !dict.contains("'|u1'") {
        return Err(bad("x is not uint8"));
    }
    let shape = dict
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("no shape"))?;
    let dims: Vec<u64> = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<u64>().map_err(|_| bad("shape is not numbers")))
        .collect::<Result<_, _>>()?;
    match dims.as_slice() {
        [d1, d2, n] => Ok(NpzLayout {
            dim1: *d1,
            dim2: *d2,
            samples: *n,
        }),
        [d1, d2] => Ok(NpzLayout {
            dim1: *d1,
            dim2: *d2,
            samples: 1,
        }),
        _ => Err(bad("x is not 2- or 3-dimensional")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(l: NpzLayout, data: &[u8]) -> Vec<u8> {
        let mut h = crc32fast::Hasher::new();
        h.update(&l.x_header());
        h.update(data);
        let crc = h.finalize();
        let mut f = l.head(crc);
        f.extend_from_slice(data);
        f.extend(l.tail(crc));
        f
    }

    #[test]
    fn same_bytes_as_numpy_savez() {
        // np.savez('t.npz', x=np.zeros((3,5,2), dtype=np.uint8), y=[0,0]) with numpy
        // 2.4.6: 536 bytes; x's member at 0, y's at 213, the central directory at 412.
        let l = NpzLayout {
            dim1: 3,
            dim2: 5,
            samples: 2,
        };
        let f = file(l, &[0u8; 30]);
        assert_eq!(f.len(), 536);
        assert_eq!(l.file_len(), 536);
        assert_eq!(&f[213..217], b"PK\x03\x04");
        assert_eq!(&f[412..416], b"PK\x01\x02");
        // The CRC numpy's zipfile recorded for x.npy and y.npy.
        assert_eq!(&f[14..18], &[0x1e, 0x12, 0x7b, 0xee]);
        assert_eq!(&f[f.len() - 22..f.len() - 18], b"PK\x05\x06");
        assert_eq!(&f[f.len() - 6..f.len() - 2], &412u32.to_le_bytes());
        assert_eq!(inspect(&f).unwrap(), l);
    }

    #[test]
    fn inspect_refuses_other_files() {
        assert!(inspect(b"not a zip at all, not at all, no no no").is_err());
    }
}
