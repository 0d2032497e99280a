//! `iolab run`: one data workload on a directory or device, with the summary printed,
//! `--json` written, and iolab's files removed at the end (unless --keep).

use anyhow::{Context, Result};
use iolab_core::SpecError;
use iolab_core::spec::DataSpec;
use iolab_core::units::ByteCount;
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{DataTarget, shares};
use iolab_engine::{MonotonicClock, PreparedTarget, prepare_target};

use crate::args::RunArgs;
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

pub fn run(args: RunArgs) -> Result<u8> {
    Runtime::with(|rt| run_in(rt, args))
}

fn run_in(rt: &Runtime, args: RunArgs) -> Result<u8> {
    let spec = args.spec;
    let on_host = iolab_engine::ranks_on_this_host(rt.comm.as_ref());
    rt.agree(
        spec.validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(iolab_engine::check_buffers_here(&spec, on_host)?))
            .and_then(|()| args.output.prepare(rt)),
    )?;
    // Reads of a device or image need no --allow-destroy (reads with verification lay
    // out their blocks first: they write).
    let target = prepare_target(
        rt.comm.as_ref(),
        &args.target,
        spec.backend,
        spec.writes_target(),
    )?;
    let target = agree_block_align(rt, &spec, spec.threads, target, args.target.keep)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "run",
        serde_json::to_value(&spec).context("recording the spec")?,
        describe(&args.target),
        args.target.dir.as_deref(),
    );
    crate::live::plan([(spec.name(), spec.runtime.map(|r| r.as_secs_f64()))]);
    let watch = Watch::new(&args.output, &sink, args.target.device.as_deref());
    let progress = &watch.progress;
    let env = watch.env(rt);
    let outcome = run_data(
        &env,
        &MonotonicClock,
        &spec,
        &target,
        &DataOptions::default(),
    );
    progress.finish();
    let files = outcome
        .as_ref()
        .map(|o| o.files.clone())
        .unwrap_or_default();
    let cleaned = cleanup(rt.comm.as_ref(), target, &files, args.target.keep);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Err(abandon(sink, e)),
    };
    cleaned?;
    sink.phases(outcome.phases);
    conclude(rt, sink, &args.output)
}

/// [`check_block_align`] for `threads` threads on every rank, agreed by all ranks
/// before anything is stored or written; on a refusal the work directory this run made
/// goes again.
pub(crate) fn agree_block_align(
    rt: &Runtime,
    spec: &DataSpec,
    threads: u32,
    target: PreparedTarget,
    keep: bool,
) -> Result<PreparedTarget> {
    let workers = rt.comm.size().saturating_mul(threads);
    let aligned = check_block_align(spec, &target.data_target(), workers);
    match rt.agree(aligned.map_err(anyhow::Error::from)) {
        Ok(()) => Ok(target),
        Err(e) => {
            let _ = cleanup(rt.comm.as_ref(), target, &[], keep);
            Err(e)
        }
    }
}

/// Refuses a --block-align larger than the share each of `workers` workers draws its
/// random offsets in: no aligned offset leaves room for an I/O, so the phase would end
/// at once with nothing done. (fio runs such a job without an I/O, and `iolab fio`
/// does as fio does.)
pub(crate) fn check_block_align(
    spec: &DataSpec,
    target: &DataTarget,
    workers: u32,
) -> Result<(), SpecError> {
    let Some(align) = spec.block_align.filter(|_| spec.rw.is_random()) else {
        return Ok(());
    };
    // Shares that cannot be planned are refused by the plan, as before.
    let Ok(shares) = shares(spec, target, workers) else {
        return Ok(());
    };
    let share = shares
        .into_iter()
        .min()
        .unwrap_or(0)
        .saturating_mul(spec.unit());
    if align.get() > share {
        return Err(SpecError::new(
            "--block-align",
            format!(
                "{align} is larger than the {} each worker draws its random offsets in, so no I/O would fit; use at most {0}",
                ByteCount(share)
            ),
        ));
    }
    Ok(())
}

/// How a target is named in results: the directory, or "device /dev/X".
pub fn describe(t: &iolab_core::spec::TargetSpec) -> String {
    if let Some(uri) = &t.nbd_uri {
        return format!("NBD export {uri}");
    }
    if let Some(url) = &t.nfs_url {
        return match &t.dir {
            Some(d) => format!("{url} {}", d.display()),
            None => url.clone(),
        };
    }
    match (&t.dir, &t.device) {
        (_, Some(d)) => format!("device {}", d.display()),
        (Some(d), None) => d.display().to_string(),
        (None, None) => String::new(),
    }
}
