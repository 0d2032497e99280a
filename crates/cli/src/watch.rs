//! [`Watch`]: what looks on while a workload command runs: the live progress line and
//! the device telemetry probe. One place builds them and the engine's [`Env`] from them.

use std::path::Path;
use std::sync::Arc;

use iolab_core::inventory::Inventory;
use iolab_engine::{Env, Progress, Stall};

use crate::args::OutputArgs;
use crate::progress::ProgressLine;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::telemetry::TelemetryProbe;

type ShowFn = dyn Fn(&Progress<'_>) + Sync + Send;

pub struct Watch {
    pub progress: Arc<ProgressLine>,
    show: Box<ShowFn>,
    probe: TelemetryProbe,
    stall_timeout: Option<std::time::Duration>,
    /// --serve: rank 0 receives every rank's counts with each tick, for the page's hosts.
    per_rank: bool,
}

/// What rank 0 does when the watchdog ends the job: says why and stores the run as
/// failed with that reason.
fn on_stall(stall: &Stall) {
    let why = format!("failed: {stall}");
    eprintln!("iolab: {stall}; ending the job (--stall-timeout)");
    crate::sink::fail_current(&why);
}

impl Watch {
    /// Progress as `output` asks; telemetry of the devices under the run's target (and
    /// `device` when the target is one).
    pub fn new(output: &OutputArgs, sink: &RunSink, device: Option<&Path>) -> Watch {
        Watch::with_inventory(output, sink.record.provenance.inventory.as_ref(), device)
    }

    /// The same, from an inventory rather than a run's record.
    pub fn with_inventory(
        output: &OutputArgs,
        inventory: Option<&Inventory>,
        device: Option<&Path>,
    ) -> Watch {
        Watch::with_probe(output, TelemetryProbe::new(inventory, device))
    }

    /// Progress as `output` asks; telemetry of the devices under every one of `paths`.
    pub fn for_paths(output: &OutputArgs, inventory: Option<&Inventory>, paths: &[&Path]) -> Watch {
        Watch::with_probe(output, TelemetryProbe::for_paths(inventory, paths))
    }

    fn with_probe(output: &OutputArgs, probe: TelemetryProbe) -> Watch {
        let progress = Arc::new(ProgressLine::new(output.progress, output.quiet));
        let line = progress.clone();
        Watch {
            progress,
            show: Box::new(move |p| {
                if let Some(live) = crate::live::current() {
                    live.progress(p);
                }
                line.show(p)
            }),
            probe,
            stall_timeout: output.stall_timeout(),
            per_rank: output.live.serve.is_some(),
        }
    }

    /// The engine's view of the run, watched.
    pub fn env<'a>(&'a self, rt: &'a Runtime) -> Env<'a> {
        Env::new(rt.comm.as_ref(), rt.interrupt)
            .with_progress(&*self.show)
            .with_probe(&self.probe)
            .with_stall_timeout(self.stall_timeout, &on_stall)
            .with_per_rank_progress(self.per_rank)
    }
}
