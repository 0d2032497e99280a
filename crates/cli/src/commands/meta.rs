//! `iolab meta`: a metadata workload (mdtest class) in a directory: the phases of --ops
//! over a private tree per thread or one shared directory, the summary printed, `--json`
//! written, and the tree removed at the end (unless --keep).

use anyhow::{Context, Result};
use clap::Args;
use iolab_core::result::RunStatus;
use iolab_core::spec::{BackendKind, MetaBackendKind, MetaOp, MetaSpec, TargetSpec};
use iolab_engine::{MetaError, MetaOptions, finish_meta, run_meta};
use iolab_engine::{MonotonicClock, prepare_target};

use crate::args::OutputArgs;
use crate::commands::finish::{cleanup, conclude};
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

#[derive(Args, Debug)]
pub struct MetaArgs {
    #[command(flatten)]
    pub target: TargetSpec,

    #[command(flatten)]
    pub spec: MetaSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn meta(args: MetaArgs) -> Result<u8> {
    Runtime::with(|rt| meta_in(rt, args))
}

fn meta_in(rt: &Runtime, args: MetaArgs) -> Result<u8> {
    let spec = args.spec;
    rt.agree(
        spec.validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| args.output.prepare(rt)),
    )?;
    if args.target.device.is_some() || args.target.nbd_uri.is_some() {
        return Err(MetaError::NeedsDir.into());
    }
    let kind = match spec.backend {
        MetaBackendKind::Null => BackendKind::Null,
        MetaBackendKind::Posix => BackendKind::Psync,
        MetaBackendKind::Nfs => BackendKind::Nfs,
    };
    let comm = rt.comm.as_ref();
    // Only a run that creates files writes file data (over NFSv4 libnfs 4.0 cannot);
    // stat, read and remove of files an earlier run kept work over either version.
    let writes = spec.ops.contains(&MetaOp::Create);
    let target = prepare_target(comm, &args.target, kind, writes)?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "meta",
        serde_json::to_value(&spec).context("recording the spec")?,
        describe(&args.target),
        args.target.dir.as_deref(),
    );
    let watch = Watch::new(&args.output, &sink, None);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let opts = MetaOptions::default();
    let outcome = run_meta(&env, &MonotonicClock, &spec, &target, &opts);
    progress.finish();
    let keep = args.target.keep;
    let tree = match &outcome {
        Ok(o) => finish_meta(comm, &spec, &target, &opts, o, keep).map(Some),
        // A failed run has already removed any tree it made.
        Err(_) => Ok(None),
    };
    let cleaned = cleanup(comm, target, &[], keep);
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            sink.finish(RunStatus::Failed);
            return Err(e.into());
        }
    };
    let warnings = tree.context("removing the tree")?.unwrap_or_default();
    cleaned?;
    sink.phases(outcome.phases);
    sink.record.warnings.extend(warnings);
    conclude(rt, sink, &args.output)
}

fn describe(t: &TargetSpec) -> String {
    t.dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}
