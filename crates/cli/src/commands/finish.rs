//! The end of every workload command: remove what iolab wrote (unless --keep), print
//! the summary, write --json, and turn the results into an exit code.

use anyhow::{Context, Result};
use iolab_comm::Comm;
use iolab_core::result::{RunRecord, RunStatus};

use crate::sink::RunSink;
use iolab_engine::PreparedTarget;

use crate::cli::OutputArgs;
use crate::exit;
use crate::runtime::Runtime;

/// Removes this rank's files and, once every rank is done, the work directory.
pub fn cleanup(
    comm: &dyn Comm,
    target: PreparedTarget,
    files: &[std::path::PathBuf],
    keep: bool,
) -> Result<()> {
    let PreparedTarget::Dir { workdir, .. } = target else {
        return Ok(());
    };
    if keep {
        workdir.release();
        return Ok(());
    }
    let mut all = files.to_vec();
    all.extend(workdir.created());
    let removed = workdir.remove_files(&all);
    comm.barrier();
    let _ = workdir.remove_if_empty();
    removed.context("cleaning up")
}

/// Finishes a run on every rank: marks it in the store, prints it and writes --json on
/// rank 0, and returns the exit code.
pub fn conclude(rt: &Runtime, mut sink: RunSink, output: &OutputArgs) -> Result<u8> {
    let record = &sink.record;
    let interrupted = rt.interrupted() || record.phases.iter().any(|p| p.interrupted);
    let errors: u64 = record.phases.iter().map(|p| p.error_count).sum();
    let mismatches: u64 = record.phases.iter().map(|p| p.verify_failures).sum();
    let status = if interrupted {
        RunStatus::Interrupted
    } else if errors > 0 || mismatches > 0 {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    sink.finish(status);
    let record = &sink.record;
    if rt.is_root() {
        if !output.quiet {
            print!("{}", iolab_report::text::render_run(record));
            if !record.id.is_empty() {
                println!("stored as {}", record.id);
            }
        }
        if let Some(path) = &output.json {
            let json = serde_json::to_string_pretty(record).context("encoding the result")?;
            std::fs::write(path, json + "\n")
                .with_context(|| format!("--json {}", path.display()))?;
        }
    }
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    if let Some(e) = first_environment_error(record, rt.comm.size() > 1) {
        // Out of space, permission denied, direct I/O refused: a configuration problem
        // the user must fix, not a storage verdict. Every rank has the same result; rank
        // 0 says it once.
        if !rt.is_root() {
            return Ok(exit::USAGE);
        }
        anyhow::bail!("{e}");
    }
    if errors > 0 || mismatches > 0 {
        if rt.is_root() {
            eprintln!(
                "iolab: the benchmark ran but failed validation: {errors} I/O error{}, {mismatches} block{} failed verification",
                if errors == 1 { "" } else { "s" },
                if mismatches == 1 { "" } else { "s" }
            );
        }
        return Ok(exit::FAILED);
    }
    Ok(exit::OK)
}

/// Ends a run that stopped with an error: stored as interrupted (Ctrl-C) or failed, and
/// the error handed back for its one-line message and exit code.
pub fn abandon(mut sink: RunSink, e: iolab_engine::EngineError) -> anyhow::Error {
    let status = match e {
        iolab_engine::EngineError::Interrupted => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    sink.finish(status);
    e.into()
}

/// The first error the environment caused; with several ranks, prefixed by the rank and
/// host it happened on.
fn first_environment_error(record: &RunRecord, ranks: bool) -> Option<String> {
    const ENVIRONMENT: [i32; 6] = [28, 122, 13, 1, 30, 22]; // ENOSPC EDQUOT EACCES EPERM EROFS EINVAL
    record
        .phases
        .iter()
        .flat_map(|p| p.errors.iter())
        .find(|e| e.errno.is_some_and(|n| ENVIRONMENT.contains(&n)))
        .map(|e| {
            if ranks {
                format!("rank {} on {}: {}", e.rank, e.host, e.message)
            } else {
                e.message.clone()
            }
        })
}
