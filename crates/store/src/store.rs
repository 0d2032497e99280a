//! [`Store`]: one connection to a results database, opened with WAL, a busy timeout and
//! foreign keys, and migrated to the current schema. Writes live in `write.rs`, reads in
//! `read.rs` and `list.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

use crate::error::{Action, Ctx, StoreError};
use crate::migrate::{inspect, migrate, open_error};
use crate::path::default_db_path;

pub use crate::error::BUSY_TIMEOUT;

/// An open results database. Writes take `&mut self`; each is one transaction.
#[derive(Debug)]
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    wal: bool,
}

impl Store {
    /// Opens (creating it and its parent directories if needed) the database at `path`,
    /// and migrates it to the current schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        let ctx = Ctx {
            path: &path,
            action: Action::Open,
        };
        configure(&conn).map_err(|e| open_error(&ctx, e))?;
        // Refuse what is not ours before changing anything in the file (WAL is persistent).
        let current = inspect(&conn, &path)?;
        let wal = use_wal(&conn).map_err(|e| open_error(&ctx, e))?;
        if !current {
            migrate(&mut conn, &path)?;
        }
        Ok(Store { conn, path, wal })
    }

    /// Opens an existing database for reading only, changing nothing in it or beside it
    /// (no WAL files, no migration): what `results list` and `show` need on a read-only
    /// mount or a copy someone else owns. Its schema must be current.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        use rusqlite::OpenFlags;
        let path = path.as_ref().to_path_buf();
        let open_error_of = |source| StoreError::Open {
            path: path.clone(),
            source,
        };
        // immutable=1: SQLite reads the file as it is, without the -shm/-wal files a
        // read-only directory could not hold.
        let uri = format!(
            "file:{}?immutable=1",
            path.to_string_lossy()
                .replace('%', "%25")
                .replace('?', "%3f")
                .replace('#', "%23")
        );
        let conn = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(open_error_of)?;
        let ctx = Ctx {
            path: &path,
            action: Action::Open,
        };
        configure(&conn).map_err(|e| open_error(&ctx, e))?;
        if !inspect(&conn, &path)? {
            return Err(StoreError::ReadOnlyOld { path });
        }
        Ok(Store {
            conn,
            path,
            wal: false,
        })
    }

    /// Opens the database named by `IOLAB_DB`, else the one under the XDG data
    /// directory (see [`crate::default_db_path_from`]).
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open(default_db_path()?)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// False when the file system refused WAL mode (SQLite then uses its rollback
    /// journal: still safe, but a writer blocks readers). The CLI may warn about it.
    pub fn is_wal(&self) -> bool {
        self.wal
    }
}

/// Settings of this connection only.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", true)
}

/// Puts the file in WAL mode (it stays so); returns whether the file system allowed it.
fn use_wal(conn: &Connection) -> rusqlite::Result<bool> {
    // Switching a new file to WAL needs an exclusive lock, and SQLite does not call the
    // busy handler for it: when several processes open a new database at once, retry.
    let mode: String = retry_while_busy(|| {
        conn.pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
    })?;
    // In WAL mode NORMAL survives any crash of the process; only a power loss may undo
    // the last commits, never corrupt the file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Runs `f` again while SQLite answers "database is locked", for up to [`BUSY_TIMEOUT`].
fn retry_while_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}
