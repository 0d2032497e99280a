//! Bringing a database to [`SCHEMA_VERSION`]: [`migrate`] applies the missing
//! [`MIGRATIONS`] in one immediate transaction, refuses a database written by a newer
//! iolab, and refuses a SQLite file that belongs to something else.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Action, Ctx, StoreError};
use crate::schema::{APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION};

/// What the database header says about its owner and version.
struct Header {
    application_id: i32,
    user_version: i64,
    has_tables: bool,
}

fn read_header(conn: &Connection) -> rusqlite::Result<Header> {
    Ok(Header {
        application_id: conn.pragma_query_value(None, "application_id", |r| r.get(0))?,
        user_version: conn.pragma_query_value(None, "user_version", |r| r.get(0))?,
        has_tables: conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\')",
            [],
            |r| r.get(0),
        )?,
    })
}

/// Whether the header is one this build can use (or migrate).
fn check(path: &Path, header: &Header) -> Result<(), StoreError> {
    let foreign = header.user_version < 0
        || match header.application_id {
            APPLICATION_ID => false,
            0 => header.user_version != 0 || header.has_tables,
            _ => true,
        };
    if foreign {
        return Err(StoreError::NotIolab {
            path: path.to_path_buf(),
        });
    }
    if header.user_version > i64::from(SCHEMA_VERSION) {
        return Err(StoreError::SchemaTooNew {
            path: path.to_path_buf(),
            found: header.user_version,
            supported: SCHEMA_VERSION,
            binary: env!("CARGO_PKG_VERSION"),
        });
    }
    Ok(())
}

/// Reads the header and refuses a database that is not this build's to use; true when
/// it is already at [`SCHEMA_VERSION`]. Writes nothing, so a refused file is untouched.
pub(crate) fn inspect(conn: &Connection, path: &Path) -> Result<bool, StoreError> {
    let ctx = Ctx {
        path,
        action: Action::Open,
    };
    // One read transaction, so the three values come from the same version of the file
    // even while another process is migrating it.
    let header = conn
        .unchecked_transaction()
        .and_then(|tx| read_header(&tx))
        .map_err(|e| open_error(&ctx, e))?;
    check(path, &header)?;
    Ok(header.application_id == APPLICATION_ID && header.user_version == i64::from(SCHEMA_VERSION))
}

/// Brings the database at `path` (open as `conn`) to [`SCHEMA_VERSION`].
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let ctx = Ctx {
        path,
        action: Action::Open,
    };
    // Immediate: take the write lock before reading the version again, so two processes
    // opening a new database at once migrate it once, one after the other.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| ctx.sql(e))?;
    let header = read_header(&tx).map_err(|e| ctx.sql(e))?;
    check(path, &header)?;
    let from = header.user_version;
    let failed = |source| StoreError::Migrate {
        path: path.to_path_buf(),
        from,
        to: SCHEMA_VERSION,
        source,
    };
    let start = usize::try_from(from).expect("checked: 0 <= version <= SCHEMA_VERSION");
    for script in &MIGRATIONS[start..] {
        tx.execute_batch(script).map_err(failed)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(failed)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(failed)?;
    tx.commit().map_err(failed)
}

/// The first read of a file tells whether it is a database at all.
pub(crate) fn open_error(ctx: &Ctx<'_>, source: rusqlite::Error) -> StoreError {
    match ctx.sql(source) {
        StoreError::Sql { path, source, .. } => StoreError::Open { path, source },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(application_id: i32, user_version: i64, has_tables: bool) -> Header {
        Header {
            application_id,
            user_version,
            has_tables,
        }
    }

    fn verdict(h: Header) -> &'static str {
        match check(Path::new("/x.db"), &h) {
            Ok(()) => "ok",
            Err(StoreError::NotIolab { .. }) => "foreign",
            Err(StoreError::SchemaTooNew { .. }) => "too new",
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn headers_are_judged_by_owner_and_version() {
        let latest = i64::from(SCHEMA_VERSION);
        assert_eq!(verdict(header(0, 0, false)), "ok", "a new file");
        assert_eq!(verdict(header(APPLICATION_ID, latest, true)), "ok");
        assert_eq!(verdict(header(APPLICATION_ID, latest + 1, true)), "too new");
        assert_eq!(
            verdict(header(0, 0, true)),
            "foreign",
            "someone else's tables"
        );
        assert_eq!(
            verdict(header(0, 3, false)),
            "foreign",
            "someone else's version"
        );
        assert_eq!(
            verdict(header(42, 0, false)),
            "foreign",
            "someone else's id"
        );
        assert_eq!(verdict(header(APPLICATION_ID, -1, true)), "foreign");
    }
}
