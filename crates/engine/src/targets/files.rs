//! The targets' files around the timed phase: [`prepare_files`] lays out (or creates)
//! every local target's files untimed, targets in parallel; [`client_warnings`] says
//! what their file system clients cache beyond iolab's reach; [`record_complete`] notes
//! after a write which files now hold complete data, so a read reuses them.

use std::sync::atomic::AtomicBool;

use iolab_core::spec::{DataSpec, Layout, RandomKind};

use super::TargetOnRank;
use crate::data::{client_cache_warning, client_write_warning};
use crate::error::EngineError;
use crate::layout::{create_for_write, lay_out, set_cache_state};
use crate::plan::DataPlan;
use crate::target::PreparedTarget;
use crate::units::UnitRow;
use crate::workdir::{FileInfo, VerifyInfo};

/// Adds `more` to `warnings`, each once.
pub(super) fn add_once(warnings: &mut Vec<String>, more: Vec<String>) {
    for w in more {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
}

/// Untimed preparation of every local target's files, targets in parallel; returns
/// warnings about the page cache.
pub(super) fn prepare_files(
    local: &[TargetOnRank<'_>],
    plans: &[DataPlan],
    data: &DataSpec,
    stop: &AtomicBool,
) -> Result<Vec<String>, EngineError> {
    let results: Vec<Result<Vec<String>, EngineError>> = std::thread::scope(|s| {
        let handles: Vec<_> = local
            .iter()
            .zip(plans)
            .map(|(t, plan)| s.spawn(move || prepare_target_files(t, plan, data, stop)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(EngineError::Setup("preparing files failed".into())))
            })
            .collect()
    });
    let mut warnings = Vec::new();
    for r in results {
        add_once(&mut warnings, r?);
    }
    Ok(warnings)
}

fn prepare_target_files(
    t: &TargetOnRank<'_>,
    plan: &DataPlan,
    data: &DataSpec,
    stop: &AtomicBool,
) -> Result<Vec<String>, EngineError> {
    if matches!(t.prepared, PreparedTarget::Null) {
        return Ok(Vec::new());
    }
    // A device or image prepared for reading only is never written, its layout included.
    if let PreparedTarget::Device {
        check,
        writable: false,
    } = t.prepared
        && data.writes_target()
    {
        return Err(EngineError::DeviceRefused {
            path: check.path.clone(),
            what: "what it holds, and it was prepared for reading only".into(),
        });
    }
    let workdir = t.prepared.workdir();
    if data.rw.reads() {
        lay_out(&plan.owned_files, workdir, data, t.alignment, stop)?;
        set_cache_state(&plan.files, data)
    } else {
        create_for_write(&plan.owned_files, workdir, data)?;
        Ok(Vec::new())
    }
}

/// What the targets' file system clients do that the page-cache controls and O_DIRECT do
/// not reach (ceph-fuse's object cache, weed mount's chunk cache and write buffer): one
/// warning per client and kind.
pub(super) fn client_warnings(local: &[TargetOnRank<'_>], data: &DataSpec) -> Vec<String> {
    let mut warnings = Vec::new();
    for t in local {
        let Some(workdir) = t.prepared.workdir() else {
            continue;
        };
        let Some(c) = iolab_backend::files::client_cache(workdir.path()) else {
            continue;
        };
        let read = data
            .rw
            .reads()
            .then(|| client_cache_warning(&c, data.direct))
            .flatten();
        add_once(
            &mut warnings,
            [read, client_write_warning(&c, data)]
                .into_iter()
                .flatten()
                .collect(),
        );
    }
    warnings
}

/// After a write, records which files now hold complete data, so a read that follows
/// (this run's --read, or a later run after --keep) reads them instead of laying out.
/// A record that cannot be written (the target's file system is full) is a warning: the
/// measurement stands, a later read lays the file out again.
pub(super) fn record_complete(
    local: &[TargetOnRank<'_>],
    ids: &[String],
    plans: &[DataPlan],
    data: &DataSpec,
    rows: &[UnitRow],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let covers_all = !data.rw.is_random() || data.random == RandomKind::FullCoverage;
    if !data.rw.writes() || data.rw.is_mixed() || !covers_all {
        return warnings;
    }
    let verify = VerifyInfo::of(data);
    for (t, plan) in local.iter().zip(plans) {
        let Some(workdir) = t.prepared.workdir() else {
            continue;
        };
        let Some(row) = rows.iter().find(|r| r.unit == t.unit) else {
            continue;
        };
        if row.measure.error_count > 0 || row.completed.len() != plan.workers.len() {
            continue;
        }
        let all_done = plan
            .workers
            .iter()
            .zip(&row.completed)
            .all(|(w, c)| *c >= w.blocks);
        for (k, f) in plan.owned_files.iter().enumerate() {
            let done = if data.layout == Layout::Shared {
                all_done
            } else {
                row.completed[k] * plan.block_size >= f.size
            };
            let info = FileInfo {
                size: f.size,
                verify,
            };
            if done && let Err(e) = workdir.set_file_info(&f.path, &info) {
                warnings.push(format!(
                    "target {}: {e}; a later read of it lays its file out again",
                    ids[t.unit as usize]
                ));
            }
        }
    }
    warnings
}
