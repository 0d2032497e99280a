//! `iolab train plan`: what a workload resolves to (DLIO's settings, sizes, memory),
//! printed without any I/O.

use anyhow::Result;
use iolab_report::train::render_train_plan;
use iolab_suites::train::threads::sized_here;

use super::{PlanArgs, memory_per_accelerator};

pub(super) fn plan(args: PlanArgs) -> Result<u8> {
    // One process on this host: its accelerators are the host's.
    let cfg = sized_here(&args.spec.resolve()?)?;
    let total = u64::from(cfg.accelerators);
    cfg.check_job(total)?;
    // No dataset yet: its files as the config sizes them.
    let file = (cfg.record_length as u64).saturating_mul(cfg.samples_per_file);
    let (mine, dlio) = memory_per_accelerator(&cfg, file);
    print!("{}", render_train_plan(&cfg, total, (mine, dlio)));
    Ok(crate::exit::OK)
}
