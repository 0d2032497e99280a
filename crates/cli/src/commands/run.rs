//! `iolab run`: one data workload on a directory or device, with the summary printed,
//! `--json` written, and iolab's files removed at the end (unless --keep).

use anyhow::{Context, Result};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{MonotonicClock, prepare_target};

use crate::cli::RunArgs;
use crate::commands::finish::{abandon, cleanup, conclude};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

pub fn run(args: RunArgs) -> Result<u8> {
    Runtime::with(|rt| run_in(rt, args))
}

fn run_in(rt: &Runtime, args: RunArgs) -> Result<u8> {
    let spec = args.spec;
    let on_host = iolab_engine::memory::ranks_on_this_host(rt.comm.as_ref());
    rt.agree(
        spec.validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(iolab_engine::memory::check_buffers_here(&spec, on_host)?))
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
    let mut sink = RunSink::start(
        rt,
        &args.output.store,
        "run",
        serde_json::to_value(&spec).context("recording the spec")?,
        describe(&args.target),
        args.target.dir.as_deref(),
        args.output.label.clone(),
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

/// How a target is named in results: the directory, or "device /dev/X".
pub fn describe(t: &iolab_core::spec::TargetSpec) -> String {
    match (&t.dir, &t.device) {
        (_, Some(d)) => format!("device {}", d.display()),
        (Some(d), None) => d.display().to_string(),
        (None, None) => String::new(),
    }
}
