//! How values cross into SQLite and back: [`Int`] carries a `u64` through SQLite's signed
//! integers (refusing what does not fit), `name_of` / `from_name` store plain enums by
//! their serde names, the JSON helpers attach run and field to any failure, and [`Fail`]
//! lets one function use `?` on both SQLite and store errors.

use std::collections::BTreeMap;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Ctx, StoreError};
use iolab_core::listing::RunId;

/// A `u64` stored in an INTEGER column. Counts, bytes and nanoseconds never reach 2^63 in
/// practice; one that does is refused on write rather than stored wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Int(pub u64);

#[derive(Debug, thiserror::Error)]
#[error("{0} is larger than the largest integer SQLite stores (2^63 - 1)")]
struct TooLarge(u64);

impl ToSql for Int {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        i64::try_from(self.0)
            .map(ToSqlOutput::from)
            .map_err(|_| rusqlite::Error::ToSqlConversionFailure(Box::new(TooLarge(self.0))))
    }
}

impl FromSql for Int {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let v = i64::column_result(value)?;
        u64::try_from(v)
            .map(Int)
            .map_err(|_| FromSqlError::OutOfRange(v))
    }
}

/// Reads a u64 column (stored through [`Int`]).
pub(crate) fn get_u64(row: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<u64> {
    row.get::<_, Int>(column).map(|i| i.0)
}

/// Reads a REAL column; SQLite stores NaN as NULL, so NULL reads back as NaN.
pub(crate) fn get_f64(row: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<f64> {
    row.get::<_, Option<f64>>(column)
        .map(|v| v.unwrap_or(f64::NAN))
}

/// The serde name of a plain enum value ("read", "complete", "meta").
pub(crate) fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        other => panic!("a plain enum serializes as a string, got {other:?}"),
    }
}

/// The enum value a serde name stands for.
pub(crate) fn from_name<T: DeserializeOwned>(
    run: RunId,
    what: impl FnOnce() -> String,
    name: &str,
) -> Result<T, StoreError> {
    serde_json::from_value(Value::String(name.to_string())).map_err(|source| {
        StoreError::DecodeJson {
            run,
            what: what(),
            source,
        }
    })
}

pub(crate) fn to_json<T: Serialize + ?Sized>(
    ctx: &Ctx<'_>,
    what: impl FnOnce() -> String,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| ctx.encode_json(what(), source))
}

pub(crate) fn from_json<T: DeserializeOwned>(
    run: RunId,
    what: impl FnOnce() -> String,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::DecodeJson {
        run,
        what: what(),
        source,
    })
}

/// `PhaseResult::extra` as JSON. JSON has no NaN or infinity (serde_json writes them as
/// null), so null reads back as NaN instead of making the whole run unreadable.
pub(crate) fn extra_from_json(
    run: RunId,
    what: impl FnOnce() -> String,
    text: &str,
) -> Result<BTreeMap<String, f64>, StoreError> {
    let raw: BTreeMap<String, Option<f64>> = from_json(run, what, text)?;
    Ok(raw
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
        .collect())
}

/// A failure inside a store operation, before it is given its context.
pub(crate) enum Fail {
    Sql(rusqlite::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sql(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl Fail {
    pub fn at(self, ctx: &Ctx<'_>) -> StoreError {
        match self {
            Fail::Sql(e) => ctx.sql(e),
            Fail::Store(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_core::result::{OpKind, PhaseKind, RunStatus};

    #[test]
    fn enums_are_stored_by_their_serde_names() {
        assert_eq!(name_of(&OpKind::Read), "read");
        assert_eq!(name_of(&RunStatus::Incomplete), "incomplete");
        assert_eq!(name_of(&PhaseKind::Meta), "meta");
        for op in OpKind::ALL {
            assert_eq!(name_of(&op), op.name());
            let back: OpKind = from_name(RunId(1), String::new, &name_of(&op)).unwrap();
            assert_eq!(back, op);
        }
    }

    #[test]
    fn unknown_names_do_not_decode() {
        let err = from_name::<RunStatus>(RunId(3), || "status".into(), "sideways").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("run r3 is stored, but its status does not decode"),
            "{err}"
        );
    }

    #[test]
    fn integers_beyond_i64_are_refused() {
        assert!(Int(i64::MAX as u64).to_sql().is_ok());
        let err = Int(u64::MAX).to_sql().unwrap_err();
        assert!(
            err.to_string()
                .contains("larger than the largest integer SQLite stores"),
            "{err}"
        );
    }
}
