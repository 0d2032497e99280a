//! iolab-store: the results database. [`Store`] keeps every run ([`RunRecord`]) and each
//! of its phases ([`PhaseResult`]) in SQLite as soon as it ends, with versioned
//! migrations ([`SCHEMA_VERSION`]), WAL so several studies can write at once, and a schema
//! documented in docs/store-schema.md for plain `sqlite3` queries. Runs are named by
//! [`RunId`] ("r42") or by label ([`Store::resolve`]); [`Store::list_runs`] filters them.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use iolab_core::result::{Provenance, RunRecord, RunStatus};
//! use iolab_store::{RunFilter, Store};
//!
//! # let dir = tempfile::tempdir()?;
//! let mut store = Store::open(dir.path().join("results.db"))?;
//! let mut record = RunRecord::new("run", serde_json::json!({}), Provenance::default(), 0);
//! record.label = Some("v7.4".into());
//! let id = store.begin_run(&record)?; // status "incomplete" until finish_run
//! // for each phase, as soon as it ends: store.add_phase(id, &phase)?;
//! store.finish_run(id, RunStatus::Complete, 1_000, &record.warnings)?;
//!
//! assert_eq!(store.resolve("v7.4")?, id);
//! let loaded = store.load_run(id)?;
//! assert_eq!(loaded.id, id.to_string()); // "r1"
//! assert_eq!(store.list_runs(&RunFilter::default())?.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! [`RunRecord`]: iolab_core::result::RunRecord
//! [`PhaseResult`]: iolab_core::result::PhaseResult
#![forbid(unsafe_code)]

mod codec;
mod error;
mod list;
mod migrate;
mod path;
mod read;
mod schema;
mod store;
mod write;

pub use error::{Action, StoreError};
pub use iolab_core::listing::{Figure, Peak, RunId, RunSummaryRow};
pub use list::RunFilter;
pub use path::{DB_ENV, default_db_path, default_db_path_from};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{BUSY_TIMEOUT, Store};
