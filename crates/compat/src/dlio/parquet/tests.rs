use super::pages::{dictionary_indices, indices_len, page_levels};
use super::*;
use iolab_core::spec::ParquetColumn;

fn schema() -> ParquetSchema {
    let col = |name: &str, dtype, size| ParquetColumn {
        name: name.into(),
        dtype,
        size,
        read: false,
    };
    ParquetSchema {
        row_group_size: 4,
        columns: vec![
            col("a", ParquetDtype::Float16, 1),
            col("b", ParquetDtype::Float64, 1),
            col("c", ParquetDtype::Int8, 1),
            col("d", ParquetDtype::Float32, 3),
        ],
    }
}

#[test]
fn the_footer_written_reads_back_to_the_layout_s_chunks() {
    let l = ParquetLayout::new(&schema(), 10).unwrap();
    assert_eq!(l.groups.len(), 3);
    assert_eq!(l.groups[2].0, 2);
    let f = read_footer(&footer(&l)).unwrap();
    assert_eq!(f.rows, 10);
    assert_eq!(f.groups.len(), 3);
    let paths: Vec<&str> = f.groups[0].1.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["a", "b", "c", "d.list.element"]);
    for (g, (rows, chunks)) in f.groups.iter().enumerate() {
        assert_eq!(*rows, l.groups[g].0);
        for (c, ch) in chunks.iter().enumerate() {
            let placed = &l.groups[g].1[c];
            assert_eq!((ch.start, ch.len), (placed.offset, placed.len));
            // The parts the writer puts fill the chunk exactly.
            let parts = l.chunk_parts(g, c, || 7);
            let bytes: u64 = parts
                .iter()
                .map(|p| match p {
                    Part::Bytes(b) => b.len() as u64,
                    Part::Random(n) => *n,
                })
                .sum();
            assert_eq!(bytes, ch.len, "group {g} column {c}");
        }
    }
    assert_eq!(l.groups[0].1[0].offset, 4, "after PAR1");
    assert_eq!(l.file_len(), l.data_end() + footer(&l).len() as u64 + 8);
}

#[test]
fn dlio_reads_whole_row_groups_or_a_span_and_columns_read_each_chunk() {
    let l = ParquetLayout::new(&schema(), 8).unwrap();
    let f = read_footer(&footer(&l)).unwrap();
    let len = l.file_len();
    let whole = dlio_reads(len, &f, None);
    assert_eq!(
        whole[0],
        (0, len),
        "a small file: the footer read takes all of it"
    );
    let g0 = &l.groups[0].1;
    assert_eq!(whole[1], (4, g0[3].offset + g0[3].len - 4));
    assert_eq!(whole.len(), 3);
    let cols = ["b".to_string(), "d".to_string()];
    let span = dlio_reads(len, &f, Some(&cols));
    assert_eq!(
        span[1],
        (g0[1].offset, g0[3].offset + g0[3].len - g0[1].offset)
    );
    let each = column_reads(len, &f, &cols);
    assert_eq!(each.len(), 1 + 2 * 2);
    assert_eq!(each[1], (g0[1].offset, g0[1].len));
    assert_eq!(each[2], (g0[3].offset, g0[3].len));
}

#[test]
fn a_cut_footer_is_an_error_not_a_panic() {
    let l = ParquetLayout::new(&schema(), 8).unwrap();
    let f = footer(&l);
    for cut in [1, f.len() / 2, f.len() - 1] {
        assert!(read_footer(&f[..cut]).is_err(), "{cut}");
    }
    assert!(read_footer(&[0x19, 0xfc, 0xff, 0xff, 0xff, 0x0f]).is_err());
}

#[test]
fn metadata_range_is_read_off_the_last_8_bytes() {
    let l = ParquetLayout::new(&schema(), 8).unwrap();
    let meta = footer(&l);
    let len = l.file_len();
    let mut last8 = (meta.len() as u32).to_le_bytes().to_vec();
    last8.extend(b"PAR1");
    assert_eq!(
        metadata_range(len, &last8),
        Some((l.data_end(), meta.len() as u64))
    );
    assert_eq!(metadata_range(len, b"\0\0\0\0PAR2"), None);
    assert_eq!(metadata_range(len, b"PAR1"), None, "short");
    // A length past the file's start is refused, not wrapped.
    assert_eq!(
        metadata_range(20, &[255, 255, 0, 0, b'P', b'A', b'R', b'1']),
        None
    );
}

fn column(dtype: ParquetDtype, size: u64) -> ParquetColumn {
    ParquetColumn {
        name: "x".into(),
        dtype,
        size,
        read: false,
    }
}

/// Bytes of a chunk as the layout places it.
fn chunk_len(dtype: ParquetDtype, size: u64, rows: u64) -> u64 {
    let schema = ParquetSchema {
        row_group_size: rows,
        columns: vec![column(dtype, size)],
    };
    ParquetLayout::new(&schema, rows).unwrap().groups[0].1[0].len
}

#[test]
fn levels_and_indices_are_pyarrow_s_bytes() {
    // pyarrow 23 on DLIO's dlrm and flux files (bytes read off their pages): 6,144
    // definition levels of a nullable column, a flux row's repetition and definition
    // levels, and the first indices of a dictionary of distinct values (13 bits).
    assert_eq!(page_levels(1, 6144), [3, 0, 0, 0, 0x80, 0x60, 0x01]);
    let flux = page_levels(524_328, 1);
    assert_eq!(
        flux,
        [
            6, 0, 0, 0, 0x03, 0xfe, 0xc0, 0x80, 0x40, 0x01, 4, 0, 0, 0, 0xd0, 0x80, 0x40, 0x03
        ]
    );
    let idx = dictionary_indices(6144, 6144, || 0);
    assert_eq!(
        idx[..9],
        [0x0d, 0x7f, 0x00, 0x20, 0x00, 0x08, 0x80, 0x01, 0x40]
    );
    assert_eq!(idx.len() as u64, indices_len(6144, 6144));
    assert_eq!(idx.len() + 7, 10_005, "pyarrow's page body");
    // Random draws never repeat the last index: the length holds for any draws.
    let mut x = 0u64;
    let drawn = dictionary_indices(6144, 256, || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        x >> 33
    });
    assert_eq!(drawn.len() as u64, indices_len(6144, 256));
    assert_eq!(
        dictionary_indices(5, 1, || 0).len() as u64,
        indices_len(5, 1)
    );
}

#[test]
fn dlrm_chunks_are_pyarrow_s_sizes_and_flux_falls_back_to_plain() {
    // dlrm's row group of 6,144 rows, pyarrow's chunk bytes: float64 59,244, float32
    // 34,652, int8 (an INT32) 7,256; float16's dictionary is random (21,758-21,786).
    assert_eq!(chunk_len(ParquetDtype::Float64, 1, 6144), 59_244);
    assert_eq!(chunk_len(ParquetDtype::Float32, 1, 6144), 34_652);
    assert_eq!(chunk_len(ParquetDtype::Int8, 1, 6144), 7_256);
    let f16 = chunk_len(ParquetDtype::Float16, 1, 6144);
    assert!((21_700..21_850).contains(&f16), "{f16}");
    // flux's t5_encodings, 4 rows: the dictionary passes 1 MiB in the first row, so a
    // dictionary page, that row's indices, then a PLAIN page a row (pyarrow: 524,290
    // entries, pages of 1,311,880 and 3 x 2,097,330 bytes after their headers).
    let plan = ChunkPlan::new(&column(ParquetDtype::Float32, 524_328), 4);
    assert!((524_280..524_310).contains(&plan.dictionary), "{plan:?}");
    let kinds: Vec<(u64, bool)> = plan
        .pages
        .iter()
        .map(|p| (p.rows, p.dictionary.is_some()))
        .collect();
    assert_eq!(kinds, [(1, true), (1, false), (1, false), (1, false)]);
    let t5 = column(ParquetDtype::Float32, 524_328);
    assert_eq!(
        page_levels(t5.size, 1).len() as u64 + indices_len(524_328, plan.dictionary),
        1_311_880
    );
    // mean's 8,232 floats a row: 32 rows fill the dictionary, then PLAIN pages of 32.
    let mean = ChunkPlan::new(&column(ParquetDtype::Float32, 8232), 288);
    let rows: Vec<u64> = mean.pages.iter().map(|p| p.rows).collect();
    assert_eq!(rows, [32; 9]);
    assert!(mean.pages[0].dictionary.is_some() && mean.pages[1].dictionary.is_none());
}
