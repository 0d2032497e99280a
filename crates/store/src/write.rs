//! Writing runs: [`Store::begin_run`], [`Store::add_phase`] (one transaction per phase, as
//! soon as it ends), [`Store::finish_run`], [`Store::import_run`] and [`Store::delete_run`].
//! A process that dies between these calls leaves every committed phase and a run whose
//! status stays `incomplete`.

use iolab_core::result::{PhaseResult, RunRecord, RunStatus};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, named_params};

use crate::codec::{Fail, Int, name_of, to_json};
use crate::error::{Action, Ctx, StoreError};
use crate::store::Store;
use iolab_core::listing::RunId;

impl Store {
    /// Stores a run that is starting: its label, kind, spec, provenance and warnings, with
    /// status `incomplete` and no finish time whatever `record` says. `record.id` is
    /// ignored; phases already in `record` are stored too. Returns the new run's id.
    pub fn begin_run(&mut self, record: &RunRecord) -> Result<RunId, StoreError> {
        self.insert_whole(record, RunStatus::Incomplete, None, false, Action::BeginRun)
    }

    /// Stores a run made elsewhere (an IO500 result file, another database's export) as
    /// it is: status, finish time and all its phases, in one transaction. The run is
    /// marked `imported`; `record.id` is ignored.
    pub fn import_run(&mut self, record: &RunRecord) -> Result<RunId, StoreError> {
        self.insert_whole(
            record,
            record.status,
            record.finished_at_ms,
            true,
            Action::ImportRun,
        )
    }

    /// Appends a phase to a stored run, in one transaction: the phase row with its
    /// per-operation figures and histograms, per-rank rows and errors. Call it as soon as
    /// the phase ends.
    pub fn add_phase(&mut self, run: RunId, phase: &PhaseResult) -> Result<(), StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::AddPhase(run),
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| ctx.sql(e))?;
        let next_seq: Option<i64> = tx
            .query_row(
                "SELECT (SELECT coalesce(max(seq) + 1, 0) FROM phases WHERE run_id = ?1)
                 FROM runs WHERE id = ?1",
                [run.0],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| ctx.sql(e))?;
        let seq = next_seq.ok_or(StoreError::NoSuchRun { id: run })?;
        insert_phase(&tx, &ctx, run, seq, phase).map_err(|f| f.at(&ctx))?;
        tx.commit().map_err(|e| ctx.sql(e))
    }

    /// Records how a run ended. `warnings` replaces the run's warnings: pass the full
    /// list (`RunRecord::warnings`), including those given to `begin_run`.
    pub fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at_ms: i64,
        warnings: &[String],
    ) -> Result<(), StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::FinishRun(run),
        };
        let warnings = to_json(&ctx, || "warnings".into(), warnings)?;
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET status = ?2, finished_at_ms = ?3, warnings = ?4 WHERE id = ?1",
                (run.0, name_of(&status), finished_at_ms, warnings),
            )
            .map_err(|e| ctx.sql(e))?;
        if changed == 0 {
            return Err(StoreError::NoSuchRun { id: run });
        }
        Ok(())
    }

    /// Replaces a run's resolved spec: what a run learns about itself at its end (the
    /// IO500 score) is kept with the configuration it came from.
    pub fn update_spec(&mut self, run: RunId, spec: &serde_json::Value) -> Result<(), StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::FinishRun(run),
        };
        let spec = to_json(&ctx, || "spec".into(), spec)?;
        let changed = self
            .conn
            .execute("UPDATE runs SET spec = ?2 WHERE id = ?1", (run.0, spec))
            .map_err(|e| ctx.sql(e))?;
        if changed == 0 {
            return Err(StoreError::NoSuchRun { id: run });
        }
        Ok(())
    }

    /// Deletes a run with all its phases.
    pub fn delete_run(&mut self, run: RunId) -> Result<(), StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action: Action::DeleteRun(run),
        };
        // Phases and their rows go with it (ON DELETE CASCADE, foreign keys are on).
        let changed = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [run.0])
            .map_err(|e| ctx.sql(e))?;
        if changed == 0 {
            return Err(StoreError::NoSuchRun { id: run });
        }
        Ok(())
    }

    fn insert_whole(
        &mut self,
        record: &RunRecord,
        status: RunStatus,
        finished_at_ms: Option<i64>,
        imported: bool,
        action: Action,
    ) -> Result<RunId, StoreError> {
        let ctx = Ctx {
            path: &self.path,
            action,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| ctx.sql(e))?;
        let run = insert_run(&tx, &ctx, record, status, finished_at_ms, imported)
            .map_err(|f| f.at(&ctx))?;
        for (seq, phase) in (0_i64..).zip(&record.phases) {
            insert_phase(&tx, &ctx, run, seq, phase).map_err(|f| f.at(&ctx))?;
        }
        tx.commit().map_err(|e| ctx.sql(e))?;
        Ok(run)
    }
}

fn insert_run(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    record: &RunRecord,
    status: RunStatus,
    finished_at_ms: Option<i64>,
    imported: bool,
) -> Result<RunId, Fail> {
    let prov = &record.provenance;
    let inventory = prov.inventory.as_ref();
    let kernel = inventory.and_then(|i| i.kernel.as_deref());
    let fs_type = inventory
        .and_then(|i| i.target.as_ref())
        .and_then(|t| t.fs_type.as_deref());
    tx.execute(
        "INSERT INTO runs (record_schema, label, kind, status, started_at_ms, finished_at_ms,
             imported, iolab_version, git_revision, hosts, ranks, target, command, kernel,
             fs_type, spec, provenance, warnings)
         VALUES (:record_schema, :label, :kind, :status, :started_at_ms, :finished_at_ms,
             :imported, :iolab_version, :git_revision, :hosts, :ranks, :target, :command,
             :kernel, :fs_type, :spec, :provenance, :warnings)",
        named_params! {
            ":record_schema": record.schema,
            ":label": record.label,
            ":kind": record.kind,
            ":status": name_of(&status),
            ":started_at_ms": record.started_at_ms,
            ":finished_at_ms": finished_at_ms,
            ":imported": imported,
            ":iolab_version": prov.iolab_version,
            ":git_revision": prov.git_revision,
            ":hosts": to_json(ctx, || "hosts".into(), &prov.hosts)?,
            ":ranks": prov.ranks,
            ":target": prov.target,
            ":command": to_json(ctx, || "command".into(), &prov.command)?,
            ":kernel": kernel,
            ":fs_type": fs_type,
            ":spec": to_json(ctx, || "spec".into(), &record.spec)?,
            ":provenance": to_json(ctx, || "provenance".into(), prov)?,
            ":warnings": to_json(ctx, || "warnings".into(), &record.warnings)?,
        },
    )?;
    Ok(RunId(tx.last_insert_rowid()))
}

fn insert_phase(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    run: RunId,
    seq: i64,
    phase: &PhaseResult,
) -> Result<(), Fail> {
    let what = |field: &str| format!("phase {seq} ('{}') {field}", phase.name);
    let telemetry = match &phase.telemetry {
        Some(t) => Some(to_json(ctx, || what("telemetry"), t)?),
        None => None,
    };
    let figures = match &phase.figures {
        Some(f) => Some(to_json(ctx, || what("figures"), f)?),
        None => None,
    };
    tx.prepare_cached(
        "INSERT INTO phases (run_id, seq, name, kind, repetition, params, started_at_ms,
             elapsed_ns, first_done_ns, ranks, workers, error_count, verify_failures,
             interrupted, spec, cpu, extra, warnings, timeline, telemetry, figures)
         VALUES (:run_id, :seq, :name, :kind, :repetition, :params, :started_at_ms,
             :elapsed_ns, :first_done_ns, :ranks, :workers, :error_count, :verify_failures,
             :interrupted, :spec, :cpu, :extra, :warnings, :timeline, :telemetry, :figures)",
    )?
    .execute(named_params! {
        ":run_id": run.0,
        ":seq": seq,
        ":name": phase.name,
        ":kind": name_of(&phase.kind),
        ":repetition": phase.repetition,
        ":params": to_json(ctx, || what("params"), &phase.params)?,
        ":started_at_ms": phase.started_at_ms,
        ":elapsed_ns": Int(phase.elapsed.0),
        ":first_done_ns": Int(phase.first_done.0),
        ":ranks": phase.ranks,
        ":workers": phase.workers,
        ":error_count": Int(phase.error_count),
        ":verify_failures": Int(phase.verify_failures),
        ":interrupted": phase.interrupted,
        ":spec": to_json(ctx, || what("spec"), &phase.spec)?,
        ":cpu": to_json(ctx, || what("cpu"), &phase.cpu)?,
        ":extra": to_json(ctx, || what("extra"), &phase.extra)?,
        ":warnings": to_json(ctx, || what("warnings"), &phase.warnings)?,
        ":timeline": to_json(ctx, || what("timeline"), &phase.timeline)?,
        ":telemetry": telemetry,
        ":figures": figures,
    })?;
    let phase_id = tx.last_insert_rowid();
    insert_ops(tx, ctx, phase_id, phase, &what)?;
    insert_ranks(tx, ctx, phase_id, phase, &what)?;
    insert_errors(tx, phase_id, phase)?;
    Ok(())
}

fn insert_ops(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    phase_id: i64,
    phase: &PhaseResult,
    what: &dyn Fn(&str) -> String,
) -> Result<(), Fail> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO phase_ops (phase_id, seq, op, ops, bytes, iops, bandwidth,
             first_done_ops, first_done_bytes, first_done_iops, first_done_bandwidth, errors,
             latency_count, latency_min_ns, latency_mean_ns, latency_p50_ns, latency_p90_ns,
             latency_p99_ns, latency_p99_9_ns, latency_p99_99_ns, latency_max_ns, histogram)
         VALUES (:phase_id, :seq, :op, :ops, :bytes, :iops, :bandwidth,
             :first_done_ops, :first_done_bytes, :first_done_iops, :first_done_bandwidth,
             :errors, :latency_count, :latency_min_ns, :latency_mean_ns, :latency_p50_ns,
             :latency_p90_ns, :latency_p99_ns, :latency_p99_9_ns, :latency_p99_99_ns,
             :latency_max_ns, :histogram)",
    )?;
    for (seq, op) in (0_i64..).zip(&phase.ops) {
        let histogram = op
            .histogram
            .to_bytes()
            .map_err(|source| StoreError::EncodeHistogram {
                action: ctx.action,
                what: what(&format!("{} latency histogram", op.op.name())),
                source,
            })?;
        let lat = &op.latency;
        insert.execute(named_params! {
            ":phase_id": phase_id,
            ":seq": seq,
            ":op": name_of(&op.op),
            ":ops": Int(op.ops),
            ":bytes": Int(op.bytes.0),
            ":iops": op.iops.0,
            ":bandwidth": op.bandwidth.0,
            ":first_done_ops": Int(op.first_done_ops),
            ":first_done_bytes": Int(op.first_done_bytes.0),
            ":first_done_iops": op.first_done_iops.0,
            ":first_done_bandwidth": op.first_done_bandwidth.0,
            ":errors": Int(op.errors),
            ":latency_count": Int(lat.count),
            ":latency_min_ns": Int(lat.min.0),
            ":latency_mean_ns": lat.mean,
            ":latency_p50_ns": Int(lat.p50.0),
            ":latency_p90_ns": Int(lat.p90.0),
            ":latency_p99_ns": Int(lat.p99.0),
            ":latency_p99_9_ns": Int(lat.p99_9.0),
            ":latency_p99_99_ns": Int(lat.p99_99.0),
            ":latency_max_ns": Int(lat.max.0),
            ":histogram": histogram,
        })?;
    }
    Ok(())
}

fn insert_ranks(
    tx: &Transaction<'_>,
    ctx: &Ctx<'_>,
    phase_id: i64,
    phase: &PhaseResult,
    what: &dyn Fn(&str) -> String,
) -> Result<(), Fail> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO phase_ranks (phase_id, seq, rank, host, threads, elapsed_ns,
             first_done_ns, ops, cpu, errors)
         VALUES (:phase_id, :seq, :rank, :host, :threads, :elapsed_ns, :first_done_ns, :ops,
             :cpu, :errors)",
    )?;
    for (seq, rank) in (0_i64..).zip(&phase.per_rank) {
        insert.execute(named_params! {
            ":phase_id": phase_id,
            ":seq": seq,
            ":rank": rank.rank,
            ":host": rank.host,
            ":threads": rank.threads,
            ":elapsed_ns": Int(rank.elapsed.0),
            ":first_done_ns": Int(rank.first_done.0),
            ":ops": to_json(ctx, || what(&format!("rank {} ops", rank.rank)), &rank.ops)?,
            ":cpu": to_json(ctx, || what(&format!("rank {} cpu", rank.rank)), &rank.cpu)?,
            ":errors": Int(rank.errors),
        })?;
    }
    Ok(())
}

fn insert_errors(tx: &Transaction<'_>, phase_id: i64, phase: &PhaseResult) -> Result<(), Fail> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO phase_errors (phase_id, seq, rank, host, op, path, \"offset\", errno,
             message)
         VALUES (:phase_id, :seq, :rank, :host, :op, :path, :offset, :errno, :message)",
    )?;
    for (seq, error) in (0_i64..).zip(&phase.errors) {
        insert.execute(named_params! {
            ":phase_id": phase_id,
            ":seq": seq,
            ":rank": error.rank,
            ":host": error.host,
            ":op": name_of(&error.op),
            ":path": error.path,
            ":offset": error.offset.map(Int),
            ":errno": error.errno,
            ":message": error.message,
        })?;
    }
    Ok(())
}
