//! [`StoreError`], every way the results store can fail, each with what was being done
//! ([`Action`]), on which database and which run, and what to try.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use iolab_core::error::HistogramError;
use rusqlite::ErrorCode;
use thiserror::Error;

use iolab_core::listing::RunId;

/// How long a write waits for another process's transaction (another study storing its
/// phase) before giving up with [`StoreError::Busy`], which reports it. Phase writes
/// take milliseconds.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// `r12` (or `12`) as a run id.
/// What the store was doing when something failed; names the run where there is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Open,
    BeginRun,
    AddPhase(RunId),
    FinishRun(RunId),
    ImportRun,
    LoadRun(RunId),
    ListRuns,
    Resolve,
    DeleteRun(RunId),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Open => write!(f, "open the results database"),
            Action::BeginRun => write!(f, "store a new run"),
            Action::AddPhase(run) => write!(f, "store a phase of run {run}"),
            Action::FinishRun(run) => write!(f, "mark run {run} finished"),
            Action::ImportRun => write!(f, "import a run"),
            Action::LoadRun(run) => write!(f, "load run {run}"),
            Action::ListRuns => write!(f, "list runs"),
            Action::Resolve => write!(f, "look up a run"),
            Action::DeleteRun(run) => write!(f, "delete run {run}"),
        }
    }
}

#[derive(Debug, Error)]
pub enum StoreError {
    #[error(
        "cannot tell where to keep the results database: none of IOLAB_DB, XDG_DATA_HOME \
         or HOME is set; pass --db PATH or set IOLAB_DB"
    )]
    NoDefaultPath,

    #[error("cannot create the directory {} for the results database: {source}", dir.display())]
    CreateDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot open the results database {}: {source}; pass another --db if this file is not one", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "the results database {} can only be read here and needs migrating to this iolab's schema first; open it once where it can be written",
        path.display()
    )]
    ReadOnlyOld { path: PathBuf },

    #[error(
        "{} is a SQLite database but not an iolab results database; pass another --db",
        path.display()
    )]
    NotIolab { path: PathBuf },

    #[error(
        "the results database {} has schema version {found}, but this iolab ({binary}) knows \
         versions up to {supported}; use a newer iolab, or another --db",
        path.display()
    )]
    SchemaTooNew {
        path: PathBuf,
        found: i64,
        supported: u32,
        binary: &'static str,
    },

    #[error(
        "cannot migrate the results database {} from schema version {from} to {to}: {source}",
        path.display()
    )]
    Migrate {
        path: PathBuf,
        from: i64,
        to: u32,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "cannot {action}: the results database {} stayed locked by another process for {} s; \
         try again, or use another --db",
        path.display(), waited.as_secs()
    )]
    Busy {
        path: PathBuf,
        action: Action,
        waited: Duration,
        #[source]
        source: rusqlite::Error,
    },

    #[error("cannot {action} in {}: {source}", path.display())]
    Sql {
        path: PathBuf,
        action: Action,
        #[source]
        source: rusqlite::Error,
    },

    #[error("no run with id {id}; `iolab results list` shows the runs")]
    NoSuchRun { id: RunId },

    #[error("no run labelled '{label}'; `iolab results list` shows the runs")]
    NoSuchLabel { label: String },

    #[error("no run given: name a run by its id (r42 or 42) or by its label")]
    EmptyReference,

    #[error("cannot {action}: its {what} does not encode as JSON: {source}")]
    EncodeJson {
        action: Action,
        what: String,
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot {action}: its {what} does not encode: {source}")]
    EncodeHistogram {
        action: Action,
        what: String,
        #[source]
        source: HistogramError,
    },

    #[error(
        "run {run} is stored, but its {what} does not decode ({source}); was the database \
         written by another iolab or edited by hand?"
    )]
    DecodeJson {
        run: RunId,
        what: String,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "run {run} is stored, but its {what} does not decode ({source}); was the database \
         written by another iolab or edited by hand?"
    )]
    DecodeHistogram {
        run: RunId,
        what: String,
        #[source]
        source: HistogramError,
    },
}

/// Where a failing statement ran: the database and what the store was doing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx<'a> {
    pub path: &'a Path,
    pub action: Action,
}

impl Ctx<'_> {
    /// Wraps a SQLite error; "database is locked" after the busy timeout becomes
    /// [`StoreError::Busy`], which says what to do about it.
    pub fn sql(&self, source: rusqlite::Error) -> StoreError {
        let busy = matches!(
            source.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        );
        if busy {
            StoreError::Busy {
                path: self.path.to_path_buf(),
                action: self.action,
                waited: BUSY_TIMEOUT,
                source,
            }
        } else {
            StoreError::Sql {
                path: self.path.to_path_buf(),
                action: self.action,
                source,
            }
        }
    }

    pub fn encode_json(&self, what: impl Into<String>, source: serde_json::Error) -> StoreError {
        StoreError::EncodeJson {
            action: self.action,
            what: what.into(),
            source,
        }
    }
}
