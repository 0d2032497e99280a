//! Reading a whole run back: [`Store::load_run`] rebuilds the [`RunRecord`] exactly as it
//! was stored (phases, per-operation figures and histograms, per-rank rows, errors,
//! timeline, telemetry, provenance), from one consistent snapshot of the database.

use iolab_core::histogram::{LatencyHistogram, LatencySummary};
use iolab_core::result::{ErrorRecord, OpResult, PhaseResult, RankSummary, RunRecord};
use iolab_core::units::{ByteCount, BytesPerSec, Nanos, OpsPerSec};
use rusqlite::{Row, Transaction};

use crate::codec::{Fail, Int, extra_from_json, from_json, from_name, get_f64, get_u64};
use crate::error::{Action, Ctx, StoreError};
use crate::store::Store;
use iolab_core::listing::RunId;

impl Store {
    /// The stored run `run`, with `id` set to its display form ("r42").
    pub fn load_run(&self, run: RunId) -> Result<RunRecord, StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::LoadRun(run),
        };
        // A read transaction: phases another process commits meanwhile are either all
        // in the snapshot or not at all.
        let tx = self.conn.unchecked_transaction().map_err(|e| ctx.sql(e))?;
        read_run(&tx, run).map_err(|f| f.at(&ctx))
    }
}

fn read_run(tx: &Transaction<'_>, run: RunId) -> Result<RunRecord, Fail> {
    let mut stmt = tx.prepare_cached(
        "SELECT record_schema, label, kind, status, started_at_ms, finished_at_ms, spec,
             provenance, warnings
         FROM runs WHERE id = ?1",
    )?;
    let mut rows = stmt.query([run.0])?;
    let Some(row) = rows.next()? else {
        return Err(StoreError::NoSuchRun { id: run }.into());
    };
    let status: String = row.get("status")?;
    let spec: String = row.get("spec")?;
    let provenance: String = row.get("provenance")?;
    let warnings: String = row.get("warnings")?;
    Ok(RunRecord {
        schema: row.get("record_schema")?,
        id: run.to_string(),
        label: row.get("label")?,
        kind: row.get("kind")?,
        started_at_ms: row.get("started_at_ms")?,
        finished_at_ms: row.get("finished_at_ms")?,
        status: from_name(run, || "status".into(), &status)?,
        spec: from_json(run, || "spec".into(), &spec)?,
        provenance: from_json(run, || "provenance".into(), &provenance)?,
        phases: read_phases(tx, run)?,
        warnings: from_json(run, || "warnings".into(), &warnings)?,
    })
}

fn read_phases(tx: &Transaction<'_>, run: RunId) -> Result<Vec<PhaseResult>, Fail> {
    let mut stmt = tx.prepare_cached("SELECT * FROM phases WHERE run_id = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([run.0])?;
    let mut phases = Vec::new();
    while let Some(row) = rows.next()? {
        phases.push(read_phase(tx, run, row)?);
    }
    Ok(phases)
}

fn read_phase(tx: &Transaction<'_>, run: RunId, row: &Row<'_>) -> Result<PhaseResult, Fail> {
    let phase_id: i64 = row.get("id")?;
    let seq: i64 = row.get("seq")?;
    let name: String = row.get("name")?;
    let what = |field: &str| format!("phase {seq} ('{name}') {field}");
    let text = |column: &str| row.get::<_, String>(column);
    let telemetry = match row.get::<_, Option<String>>("telemetry")? {
        Some(t) => Some(from_json(run, || what("telemetry"), &t)?),
        None => None,
    };
    let figures = match row.get::<_, Option<String>>("figures")? {
        Some(f) => Some(from_json(run, || what("figures"), &f)?),
        None => None,
    };
    Ok(PhaseResult {
        kind: from_name(run, || what("kind"), &text("kind")?)?,
        params: from_json(run, || what("params"), &text("params")?)?,
        repetition: row.get("repetition")?,
        spec: from_json(run, || what("spec"), &text("spec")?)?,
        started_at_ms: row.get("started_at_ms")?,
        ranks: row.get("ranks")?,
        workers: row.get("workers")?,
        elapsed: Nanos(get_u64(row, "elapsed_ns")?),
        first_done: Nanos(get_u64(row, "first_done_ns")?),
        ops: read_ops(tx, run, phase_id, &what)?,
        timeline: from_json(run, || what("timeline"), &text("timeline")?)?,
        cpu: from_json(run, || what("cpu"), &text("cpu")?)?,
        per_rank: read_ranks(tx, run, phase_id, &what)?,
        errors: read_errors(tx, run, phase_id, &what)?,
        error_count: get_u64(row, "error_count")?,
        verify_failures: get_u64(row, "verify_failures")?,
        extra: extra_from_json(run, || what("extra"), &text("extra")?)?,
        warnings: from_json(run, || what("warnings"), &text("warnings")?)?,
        interrupted: row.get("interrupted")?,
        telemetry,
        figures,
        name,
    })
}

fn read_ops(
    tx: &Transaction<'_>,
    run: RunId,
    phase_id: i64,
    what: &dyn Fn(&str) -> String,
) -> Result<Vec<OpResult>, Fail> {
    let mut stmt = tx.prepare_cached("SELECT * FROM phase_ops WHERE phase_id = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([phase_id])?;
    let mut ops = Vec::new();
    while let Some(row) = rows.next()? {
        let op_name: String = row.get("op")?;
        let blob: Vec<u8> = row.get("histogram")?;
        let histogram =
            LatencyHistogram::from_bytes(&blob).map_err(|source| StoreError::DecodeHistogram {
                run,
                what: what(&format!("{op_name} latency histogram")),
                source,
            })?;
        ops.push(OpResult {
            op: from_name(run, || what("operation"), &op_name)?,
            ops: get_u64(row, "ops")?,
            bytes: ByteCount(get_u64(row, "bytes")?),
            iops: OpsPerSec(get_f64(row, "iops")?),
            bandwidth: BytesPerSec(get_f64(row, "bandwidth")?),
            first_done_ops: get_u64(row, "first_done_ops")?,
            first_done_bytes: ByteCount(get_u64(row, "first_done_bytes")?),
            first_done_iops: OpsPerSec(get_f64(row, "first_done_iops")?),
            first_done_bandwidth: BytesPerSec(get_f64(row, "first_done_bandwidth")?),
            errors: get_u64(row, "errors")?,
            latency: read_latency(row)?,
            histogram,
        });
    }
    Ok(ops)
}

fn read_latency(row: &Row<'_>) -> rusqlite::Result<LatencySummary> {
    let ns = |column: &str| get_u64(row, column).map(Nanos);
    Ok(LatencySummary {
        count: get_u64(row, "latency_count")?,
        min: ns("latency_min_ns")?,
        mean: get_f64(row, "latency_mean_ns")?,
        p50: ns("latency_p50_ns")?,
        p90: ns("latency_p90_ns")?,
        p99: ns("latency_p99_ns")?,
        p99_9: ns("latency_p99_9_ns")?,
        p99_99: ns("latency_p99_99_ns")?,
        max: ns("latency_max_ns")?,
    })
}

fn read_ranks(
    tx: &Transaction<'_>,
    run: RunId,
    phase_id: i64,
    what: &dyn Fn(&str) -> String,
) -> Result<Vec<RankSummary>, Fail> {
    let mut stmt =
        tx.prepare_cached("SELECT * FROM phase_ranks WHERE phase_id = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([phase_id])?;
    let mut ranks = Vec::new();
    while let Some(row) = rows.next()? {
        let rank: u32 = row.get("rank")?;
        let ops: String = row.get("ops")?;
        let cpu: String = row.get("cpu")?;
        ranks.push(RankSummary {
            rank,
            host: row.get("host")?,
            threads: row.get("threads")?,
            elapsed: Nanos(get_u64(row, "elapsed_ns")?),
            first_done: Nanos(get_u64(row, "first_done_ns")?),
            ops: from_json(run, || what(&format!("rank {rank} ops")), &ops)?,
            cpu: from_json(run, || what(&format!("rank {rank} cpu")), &cpu)?,
            errors: get_u64(row, "errors")?,
            cpu_set: Vec::new(),
        });
    }
    Ok(ranks)
}

fn read_errors(
    tx: &Transaction<'_>,
    run: RunId,
    phase_id: i64,
    what: &dyn Fn(&str) -> String,
) -> Result<Vec<ErrorRecord>, Fail> {
    let mut stmt =
        tx.prepare_cached("SELECT * FROM phase_errors WHERE phase_id = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([phase_id])?;
    let mut errors = Vec::new();
    while let Some(row) = rows.next()? {
        let op: String = row.get("op")?;
        errors.push(ErrorRecord {
            rank: row.get("rank")?,
            host: row.get("host")?,
            op: from_name(run, || what("error operation"), &op)?,
            path: row.get("path")?,
            offset: row.get::<_, Option<Int>>("offset")?.map(|i| i.0),
            errno: row.get("errno")?,
            message: row.get("message")?,
        });
    }
    Ok(errors)
}
