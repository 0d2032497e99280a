//! `iolab find`: a parallel walk of a directory tree (IO500's find phase) counting the
//! entries scanned and those matching --newer, --size, --name and --type; it reads only,
//! and prints the scan rate and the matches.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_core::result::RunStatus;
use iolab_core::spec::FindSpec;
use iolab_engine::MonotonicClock;
use iolab_engine::run_find;

use crate::args::OutputArgs;
use crate::commands::finish::conclude;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::watch::Watch;

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
    Runtime::with(|rt| find_in(rt, args))
}

fn find_in(rt: &Runtime, args: FindArgs) -> Result<u8> {
    rt.agree(
        args.spec
            .validate()
            .map_err(anyhow::Error::from)
            .and_then(|()| args.output.prepare(rt)),
    )?;
    let mut sink = RunSink::start(
        rt,
        args.output.recording(),
        "find",
        serde_json::to_value(&args.spec).context("recording the spec")?,
        args.dir.display().to_string(),
        Some(&args.dir),
    );
    let watch = Watch::new(&args.output, &sink, None);
    let progress = &watch.progress;
    let env = watch.env(rt);
    let phase = run_find(&env, &MonotonicClock, &args.spec, &args.dir);
    progress.finish();
    match phase {
        Ok(p) => sink.phase(p),
        Err(e) => {
            sink.finish(RunStatus::Failed);
            return Err(e.into());
        }
    }
    conclude(rt, sink, &args.output)
}
