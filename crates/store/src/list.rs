//! Finding runs: [`Store::list_runs`] with a [`RunFilter`] gives one [`RunSummaryRow`]
//! per run (newest first) with its [`Peak`] figures; [`Store::resolve`] turns what a user
//! typed ("r42", "42" or a label) into a [`RunId`].

use std::collections::BTreeMap;

use iolab_core::listing::{Figure, Peak, RunId, RunSummaryRow};
use iolab_core::result::{OpKind, PhaseKind, RunStatus};
use iolab_core::units::{BytesPerSec, OpsPerSec};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use crate::codec::{Fail, from_name, get_f64, name_of};
use crate::error::{Action, Ctx, StoreError};
use crate::store::Store;

/// Which runs to list. Every field left `None` matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// The label exactly, or a glob when it holds `*`, `?` or `[` ("v7.*"; SQLite GLOB,
    /// case-sensitive). Runs without a label match only no filter.
    pub label: Option<String>,
    /// The run's kind exactly ("run", "study", "io500", ...).
    pub kind: Option<String>,
    pub status: Option<RunStatus>,
    /// Runs started at or after this time (ms since the Unix epoch).
    pub since_ms: Option<i64>,
    /// Runs started before this time (ms since the Unix epoch).
    pub until_ms: Option<i64>,
    /// At most this many runs (the newest).
    pub limit: Option<u32>,
}

impl Store {
    /// The runs matching `filter`, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummaryRow>, StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::ListRuns,
        };
        let tx = self.conn.unchecked_transaction().map_err(|e| ctx.sql(e))?;
        list(&tx, filter).map_err(|f| f.at(&ctx))
    }

    /// The run a user means: "r42" or "42" is run 42 (if it exists, else a label spelled
    /// that way); anything else is a label, and the latest run carrying it wins.
    pub fn resolve(&self, reference: &str) -> Result<RunId, StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::Resolve,
        };
        let reference = reference.trim();
        if reference.is_empty() {
            return Err(StoreError::EmptyReference);
        }
        let as_id = RunId::parse(reference);
        if let Some(id) = as_id {
            let exists: bool = self
                .conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
                    [id.0],
                    |r| r.get(0),
                )
                .map_err(|e| ctx.sql(e))?;
            if exists {
                return Ok(id);
            }
        }
        let latest: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE label = ?1
                 ORDER BY started_at_ms DESC, id DESC LIMIT 1",
                [reference],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| ctx.sql(e))?;
        match (latest, as_id) {
            (Some(id), _) => Ok(RunId(id)),
            (None, Some(id)) => Err(StoreError::NoSuchRun { id }),
            (None, None) => Err(StoreError::NoSuchLabel {
                label: reference.to_string(),
            }),
        }
    }
}

fn list(conn: &Connection, filter: &RunFilter) -> Result<Vec<RunSummaryRow>, Fail> {
    let mut sql = String::from(
        "SELECT id, label, kind, status, started_at_ms, finished_at_ms, imported, target,
             (SELECT count(*) FROM phases WHERE run_id = runs.id) AS phases,
             json_extract(provenance, '$.process') AS process
         FROM runs WHERE 1",
    );
    let mut args: Vec<Value> = Vec::new();
    let mut clause = |sql_part: &str, value: Value| {
        args.push(value);
        sql.push_str(&format!(" AND {sql_part} ?{}", args.len()));
    };
    if let Some(label) = &filter.label {
        let is_glob = label.contains(['*', '?', '[']);
        clause(
            if is_glob { "label GLOB" } else { "label =" },
            label.clone().into(),
        );
    }
    if let Some(kind) = &filter.kind {
        clause("kind =", kind.clone().into());
    }
    if let Some(status) = filter.status {
        clause("status =", name_of(&status).into());
    }
    if let Some(since) = filter.since_ms {
        clause("started_at_ms >=", since.into());
    }
    if let Some(until) = filter.until_ms {
        clause("started_at_ms <", until.into());
    }
    sql.push_str(" ORDER BY started_at_ms DESC, id DESC");
    if let Some(limit) = filter.limit {
        sql.push_str(&format!(" LIMIT {limit}"));
    }

    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let id = RunId(row.get("id")?);
        let status: String = row.get("status")?;
        out.push(RunSummaryRow {
            id,
            label: row.get("label")?,
            kind: row.get("kind")?,
            status: from_name(id, || "status".into(), &status)?,
            started_at_ms: row.get("started_at_ms")?,
            finished_at_ms: row.get("finished_at_ms")?,
            imported: row.get("imported")?,
            target: row.get("target")?,
            phases: row.get("phases")?,
            // Written by this crate from a typed value; a malformed one is just unknown.
            process: row
                .get::<_, Option<String>>("process")?
                .and_then(|j| serde_json::from_str(&j).ok()),
            headline: peaks(conn, id)?,
        });
    }
    Ok(out)
}

/// Whether a phase's figure of merit for `op` is bandwidth; the rule of
/// `PhaseResult::headline`, applied to stored rows.
fn is_bandwidth(kind: PhaseKind, op: OpKind) -> bool {
    op.moves_data() && kind != PhaseKind::Meta
}

fn peaks(conn: &Connection, run: RunId) -> Result<Vec<Peak>, Fail> {
    let mut stmt = conn.prepare_cached(
        "SELECT p.kind AS kind, o.op AS op, max(o.iops) AS iops, max(o.bandwidth) AS bandwidth
         FROM phases p JOIN phase_ops o ON o.phase_id = p.id
         WHERE p.run_id = ?1 GROUP BY p.kind, o.op",
    )?;
    let mut rows = stmt.query([run.0])?;
    // (op, is a rate) -> best value: per operation, bandwidth before rate.
    let mut best: BTreeMap<(OpKind, bool), f64> = BTreeMap::new();
    while let Some(row) = rows.next()? {
        let kind: String = row.get("kind")?;
        let op: String = row.get("op")?;
        let kind: PhaseKind = from_name(run, || "phase kind".into(), &kind)?;
        let op: OpKind = from_name(run, || "operation".into(), &op)?;
        let bw = is_bandwidth(kind, op);
        let value = get_f64(row, if bw { "bandwidth" } else { "iops" })?;
        let slot = best.entry((op, !bw)).or_insert(value);
        if value > *slot {
            *slot = value;
        }
    }
    Ok(best
        .into_iter()
        .map(|((op, is_rate), v)| Peak {
            op,
            figure: if is_rate {
                Figure::Rate(OpsPerSec(v))
            } else {
                Figure::Bandwidth(BytesPerSec(v))
            },
        })
        .collect())
}
