//! `iolab run`: one data workload on a directory or device, with the summary printed,
//! `--json` written, and iolab's files removed at the end (unless --keep).

use anyhow::{Context, Result};
use iolab_core::result::{RunRecord, RunStatus};
use iolab_engine::data::{DataOptions, run_data};
use iolab_engine::{Env, MonotonicClock, prepare_target};

use crate::cli::RunArgs;
use crate::commands::finish::{cleanup, conclude};
use crate::progress::ProgressLine;
use crate::runtime::{Runtime, provenance};

pub fn run(args: RunArgs) -> Result<u8> {
    let rt = Runtime::start()?;
    let spec = args.spec;
    spec.validate()?;
    let writes = spec.rw.writes() || spec.verify || spec.rw.reads();
    let target = prepare_target(rt.comm.as_ref(), &args.target, spec.backend, writes)?;
    let progress = ProgressLine::new(args.output.progress, args.output.quiet);
    let show = |p: &iolab_engine::Progress<'_>| progress.show(p);
    let env = Env {
        comm: rt.comm.as_ref(),
        interrupt: rt.interrupt,
        progress: Some(&show),
    };
    let started = iolab_engine::phase::now_ms();
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
    let outcome = outcome?;
    cleaned?;

    let mut record = RunRecord::new(
        "run",
        serde_json::to_value(&spec).context("recording the spec")?,
        provenance(rt.comm.as_ref(), describe(&args.target)),
        started,
    );
    record.label = args.output.label.clone();
    record.phases = outcome.phases;
    record.status = RunStatus::Complete;
    conclude(&rt, record, &args.output)
}

fn describe(t: &iolab_core::spec::TargetSpec) -> String {
    match (&t.dir, &t.device) {
        (_, Some(d)) => format!("device {}", d.display()),
        (Some(d), None) => d.display().to_string(),
        (None, None) => String::new(),
    }
}
