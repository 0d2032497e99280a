//! The end of every workload command: remove what iolab wrote (unless --keep), print
//! the summary, write --json, and turn the results into an exit code.

use anyhow::{Context, Result};
use iolab_comm::Comm;
use iolab_core::result::{RunRecord, RunStatus};

use crate::sink::RunSink;
use iolab_engine::PreparedTarget;

use crate::args::OutputArgs;
use crate::exit;
use crate::runtime::Runtime;

/// The start of a workload on a work directory of its own, once every rank's checks
/// agreed: the target prepared (for [`cleanup`]), the work directory's path and the sink
/// the run's phases go to.
pub fn start_in_workdir(
    rt: &Runtime,
    target: &iolab_core::spec::TargetSpec,
    output: &OutputArgs,
    kind: &str,
    spec: serde_json::Value,
) -> Result<(PreparedTarget, std::path::PathBuf, RunSink)> {
    let prepared = iolab_engine::prepare_target(
        rt.comm.as_ref(),
        target,
        iolab_core::spec::BackendKind::Psync,
        true,
    )?;
    let workdir = prepared
        .workdir()
        .map(|w| w.path().to_path_buf())
        .unwrap_or_default();
    let sink = RunSink::start(
        rt,
        output.recording(),
        kind,
        spec,
        crate::commands::run::describe(target),
        target.dir.as_deref(),
    );
    Ok((prepared, workdir, sink))
}

/// The target's end ([`iolab_engine::finish_target`]): this run's files removed unless
/// `keep`, stale ones and an empty work directory too.
pub fn cleanup(
    comm: &dyn Comm,
    target: PreparedTarget,
    files: &[std::path::PathBuf],
    keep: bool,
) -> Result<()> {
    iolab_engine::finish_target(comm, target, files, keep).context("cleaning up")
}

/// [`conclude`] for a command that printed its own report: says where the run is stored
/// (unless --quiet) instead of printing the run again.
pub fn conclude_after_report(rt: &Runtime, sink: RunSink, output: &OutputArgs) -> Result<u8> {
    if rt.is_root() && !output.quiet && !sink.record.id.is_empty() {
        println!("stored as {}", sink.record.id);
    }
    let quiet = OutputArgs {
        quiet: true,
        ..output.clone()
    };
    conclude(rt, sink, &quiet)
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
        show(record, output)?;
    }
    if interrupted {
        return Ok(exit::INTERRUPTED);
    }
    // Asked to be stored and not stored: the figures above are all there is of it.
    if let Some(why) = sink.lost.as_ref().filter(|_| rt.is_root()) {
        eprintln!(
            "iolab: error: the run was not stored ({why}); its figures are only in this output{}",
            if output.json.is_some() {
                " and --json"
            } else {
                ""
            }
        );
        return Ok(exit::FAILED);
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

/// Rank 0's end of a run: the run printed (unless --quiet) with where it is stored, and
/// --json written.
fn show(record: &RunRecord, output: &OutputArgs) -> Result<()> {
    if !output.quiet {
        print!("{}", iolab_report::text::render_run(record));
        if !record.id.is_empty() {
            println!("stored as {}", record.id);
        }
    }
    if let Some(path) = &output.json {
        let json = serde_json::to_string_pretty(record).context("encoding the result")?;
        std::fs::write(path, json + "\n").with_context(|| format!("--json {}", path.display()))?;
    }
    Ok(())
}

/// Marks a run of a reference-tool front-end (fio, IOR, mdtest) finished, interrupted or
/// failed (an I/O error or a verify failure) and gives its exit code; the front-end
/// prints its own output in the tool's shape.
pub fn finish_status(sink: &mut RunSink, interrupted: bool, failed: bool) -> u8 {
    let (status, code) = if interrupted {
        (RunStatus::Interrupted, exit::INTERRUPTED)
    } else if failed {
        (RunStatus::Failed, exit::FAILED)
    } else {
        (RunStatus::Complete, exit::OK)
    };
    sink.finish(status);
    code
}

/// Ends a run that stopped with an error: stored as interrupted (Ctrl-C) or failed, and
/// the error handed back for its one-line message and exit code.
pub fn abandon(mut sink: RunSink, e: iolab_engine::EngineError) -> anyhow::Error {
    if e.is_refusal() && sink.record.phases.is_empty() {
        // Refused before any I/O (no space, a device that is not iolab's): nothing ran,
        // so nothing is kept; the error says what to change.
        sink.discard();
        return e.into();
    }
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

/// A stonewall status file of IOR or mdtest (`-O stoneWallingStatusFile=F`, `-x F`),
/// checked before any work: iolab writes one only where there is none or where another
/// status file is (a count), never over a file that holds anything else, a link or a
/// device. Rank 0 looks; every rank takes its answer. Collective.
pub fn check_status_file(rt: &Runtime, path: Option<&str>, option: &str) -> Result<()> {
    let checked = match path.filter(|_| rt.is_root()) {
        None => Ok(()),
        Some(p) => status_file_ok(p).map_err(|why| anyhow::anyhow!("{option}{p}: {why}")),
    };
    rt.agree(checked)
}

fn status_file_ok(path: &str) -> std::result::Result<(), String> {
    let refuse = |what: &str| {
        Err(format!(
            "{what}; iolab writes a status file only where there is none or another status file (a count), so choose another path"
        ))
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.file_type().is_file() {
        return refuse("it is not a regular file");
    }
    // IOR and mdtest write a count of a few digits.
    let text = if meta.len() <= 64 {
        std::fs::read_to_string(path).unwrap_or_default()
    } else {
        String::new()
    };
    if meta.len() > 64 || !text.trim().chars().all(|c| c.is_ascii_digit()) {
        return refuse("it holds something other than a count");
    }
    Ok(())
}
