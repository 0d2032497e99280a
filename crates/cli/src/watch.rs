//! [`Watch`]: what looks on while a workload command runs: the live progress line and
//! the device telemetry probe. One place builds them and the engine's [`Env`] from them.

use std::path::Path;
use std::sync::Arc;

use iolab_core::inventory::Inventory;
use iolab_engine::{Env, Progress};

use crate::cli::OutputArgs;
use crate::progress::ProgressLine;
use crate::runtime::Runtime;
use crate::sink::RunSink;
use crate::telemetry::TelemetryProbe;

type ShowFn = dyn Fn(&Progress<'_>) + Sync + Send;

pub struct Watch {
    pub progress: Arc<ProgressLine>,
    show: Box<ShowFn>,
    probe: TelemetryProbe,
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
        }
    }

    /// The engine's view of the run, watched.
    pub fn env<'a>(&'a self, rt: &'a Runtime) -> Env<'a> {
        Env::new(rt.comm.as_ref(), rt.interrupt)
            .with_progress(&*self.show)
            .with_probe(&self.probe)
    }
}
