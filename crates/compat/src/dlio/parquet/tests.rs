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
            assert_eq!(
                (ch.start, ch.len),
                (l.groups[g].1[c].offset, l.groups[g].1[c].len)
            );
            // Values: 2, 8, 4 (int8 is an INT32), 4 x 3 bytes a row.
            let per_row = [2, 8, 4, 12][c];
            assert_eq!(l.value_bytes(g, c), per_row * rows);
            assert_eq!(
                l.chunk_prefix(g, c).len() as u64 + l.value_bytes(g, c),
                ch.len
            );
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
