//! `iolab find`: a parallel walk of a directory tree (IO500's find phase) counting the
//! entries scanned and those matching --newer, --size, --name and --type; it reads only,
//! and prints the scan rate and the matches.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_core::result::RunStatus;
use iolab_core::spec::FindSpec;
use iolab_engine::meta::run_find;
use iolab_engine::{Env, MonotonicClock};

use crate::cli::OutputArgs;
use crate::commands::finish::conclude;
use crate::progress::ProgressLine;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::telemetry::TelemetryProbe;

#[derive(Args, Debug)]
pub struct FindArgs {
    /// Directory to walk; {host} and {rank} are replaced per rank. Nothing in it is
    /// changed.
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: PathBuf,

    #[command(flatten)]
    pub spec: FindSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}

pub fn find(args: FindArgs) -> Result<u8> {
    let rt = Runtime::start()?;
    args.spec.validate()?;
    let comm = rt.comm.as_ref();
    let mut sink = RunSink::start(
        &rt,
        &args.output.store,
        "find",
        serde_json::to_value(&args.spec).context("recording the spec")?,
        args.dir.display().to_string(),
        Some(&args.dir),
        args.output.label.clone(),
    );
    let progress = ProgressLine::new(args.output.progress, args.output.quiet);
    let show = |p: &iolab_engine::Progress<'_>| progress.show(p);
    let probe = TelemetryProbe::new(sink.record.provenance.inventory.as_ref(), None);
    let env = Env::new(comm, rt.interrupt)
        .with_progress(&show)
        .with_probe(&probe);
    let phase = run_find(&env, &MonotonicClock, &args.spec, &args.dir);
    progress.finish();
    match phase {
        Ok(p) => sink.phase(p),
        Err(e) => {
            sink.finish(RunStatus::Failed);
            return Err(e.into());
        }
    }
    conclude(&rt, sink, &args.output)
}
