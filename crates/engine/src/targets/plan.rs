//! Planning each of this rank's targets: [`plan_local`] plans the data workload on each
//! as on a rank of its own, names a directory's files by rank (ranks on several hosts
//! may share one), refuses a block size the target's direct I/O cannot take and a
//! target without room, and notes the files in the work directory (cleanup removes them
//! even after a failure).

use std::path::{Path, PathBuf};

use iolab_core::SpecError;
use iolab_core::spec::DataSpec;
use iolab_core::units::ByteCount;

use super::{TargetOnRank, TargetsOptions};
use crate::error::EngineError;
use crate::plan::{DataPlan, DataTarget, PlanContext, plan_data};
use crate::target::PreparedTarget;

/// Plans each local target, in the order of `opts.local`.
pub(super) fn plan_local(
    opts: &TargetsOptions<'_>,
    rank: u32,
) -> Result<Vec<DataPlan>, EngineError> {
    let ctx = PlanContext {
        rank: 0,
        ranks: 1,
        read_shift: 0,
        ..PlanContext::default()
    };
    let data = opts.data;
    let mut plans = Vec::with_capacity(opts.local.len());
    for t in opts.local {
        let id = opts.id(t);
        let on_target =
            |e: SpecError| SpecError::new(e.option, format!("target {id}: {}", e.reason));
        let target = t.prepared.data_target();
        let mut plan = plan_data(data, &target, &ctx).map_err(on_target)?;
        if let DataTarget::Dir(_) = target {
            // Ranks on different hosts may share a directory (a path on a shared file
            // system given on every host): name files by rank.
            for f in plan.files.iter_mut().chain(plan.owned_files.iter_mut()) {
                f.path = by_rank(&f.path, rank);
            }
        }
        check_alignment(t, data).map_err(on_target)?;
        check_space(t, &plan)?;
        if let Some(w) = t.prepared.workdir() {
            for f in &plan.owned_files {
                w.note_used(&f.path);
            }
        }
        plans.push(plan);
    }
    Ok(plans)
}

fn check_alignment(t: &TargetOnRank<'_>, data: &DataSpec) -> Result<(), SpecError> {
    let bs = data.block_size.get();
    if data.direct && !matches!(t.prepared, PreparedTarget::Null) && !bs.is_multiple_of(t.alignment)
    {
        return Err(SpecError::new(
            "--block-size",
            format!(
                "{} is not a multiple of {}, the direct-I/O alignment of {}; use a multiple of it or drop --direct",
                data.block_size,
                ByteCount(t.alignment),
                t.path.display()
            ),
        ));
    }
    Ok(())
}

/// "dir/data.r0.t3" becomes "dir/data.r<rank>.t3".
fn by_rank(path: &Path, rank: u32) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let renamed = match name.strip_prefix("data.r0.") {
        Some(rest) => format!("data.r{rank}.{rest}"),
        None => format!("data.r{rank}.{}", name.trim_start_matches("data.")),
    };
    path.with_file_name(renamed)
}

fn check_space(t: &TargetOnRank<'_>, plan: &DataPlan) -> Result<(), EngineError> {
    let PreparedTarget::Dir { workdir, .. } = t.prepared else {
        return Ok(());
    };
    let need: u64 = if plan.spec.rw.writes() {
        plan.total_bytes
    } else {
        plan.owned_files
            .iter()
            .filter(|f| workdir.file_info(&f.path).is_none_or(|i| i.size < f.size))
            .map(|f| f.size)
            .sum()
    };
    workdir.check_space(need)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_by_rank() {
        assert_eq!(
            by_rank(Path::new("/t/iolab-work/data.r0.t3"), 5),
            PathBuf::from("/t/iolab-work/data.r5.t3")
        );
        assert_eq!(
            by_rank(Path::new("/t/iolab-work/data.shared"), 2),
            PathBuf::from("/t/iolab-work/data.r2.shared")
        );
    }
}
