//! A parquet dataset's shape as DLIO's workload files give it (`dataset.parquet`):
//! [`ParquetSchema`] (row group size and [`ParquetColumn`]s), and which columns a reader
//! asks for ([`read_columns`]). The file format itself is iolab_compat::dlio::parquet.

use serde::{Deserialize, Serialize};

use crate::error::SpecError;

/// A column's element type, as DLIO's configs name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParquetDtype {
    Float16,
    Float32,
    Float64,
    Int8,
    Uint8,
}

impl ParquetDtype {
    /// Bytes of one element (the config's record_length counts these).
    pub fn bytes(self) -> u64 {
        match self {
            ParquetDtype::Float16 => 2,
            ParquetDtype::Float32 => 4,
            ParquetDtype::Float64 => 8,
            ParquetDtype::Int8 | ParquetDtype::Uint8 => 1,
        }
    }
}

/// One column: a scalar (`size` 1) or a fixed-size list of `size` elements.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParquetColumn {
    pub name: String,
    pub dtype: ParquetDtype,
    pub size: u64,
    /// The config's `read: true` (DLIO's reader never looks at it).
    #[serde(default)]
    pub read: bool,
}

impl ParquetColumn {
    /// Bytes of this column in one row.
    pub fn row_bytes(&self) -> u64 {
        self.dtype.bytes() * self.size
    }
}

/// The columns of every row and the rows per row group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParquetSchema {
    pub row_group_size: u64,
    pub columns: Vec<ParquetColumn>,
}

impl ParquetSchema {
    /// A row's bytes, as the config's record_length counts them.
    pub fn row_bytes(&self) -> u64 {
        self.columns.iter().map(ParquetColumn::row_bytes).sum()
    }

    /// The schema of a parquet dataset without a preset: one uint8 list column of a
    /// record's bytes.
    pub fn single(record_length: u64, row_group_size: u64) -> ParquetSchema {
        ParquetSchema {
            row_group_size,
            columns: vec![ParquetColumn {
                name: "data".into(),
                dtype: ParquetDtype::Uint8,
                size: record_length.max(1),
                read: true,
            }],
        }
    }
}

/// The columns `--columns` asks for: `all` (DLIO: every row group read whole; None),
/// `config` (the config's `read: true` columns), or names. A name the schema lacks is
/// refused, naming it.
pub fn read_columns(
    asked: Option<&str>,
    schema: &ParquetSchema,
) -> Result<Option<Vec<String>>, SpecError> {
    let asked = match asked.map(str::trim) {
        None | Some("all") => return Ok(None),
        Some("config") => {
            let cols: Vec<String> = schema
                .columns
                .iter()
                .filter(|c| c.read)
                .map(|c| c.name.clone())
                .collect();
            if cols.is_empty() {
                return Err(SpecError::new(
                    "--columns",
                    "config: the workload marks no column read: true; name the columns",
                ));
            }
            return Ok(Some(cols));
        }
        Some(s) => s,
    };
    let mut out = Vec::new();
    for name in asked.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(SpecError::new("--columns", "an empty column name"));
        }
        if !schema.columns.iter().any(|c| c.name == name) {
            let first = &schema.columns[0].name;
            let last = &schema.columns[schema.columns.len() - 1].name;
            return Err(SpecError::new(
                "--columns",
                format!(
                    "{name} is not a column of the workload's {} ({first} .. {last})",
                    schema.columns.len()
                ),
            ));
        }
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    Ok(Some(out))
}
