//! `iolab train plan`: what a workload resolves to (DLIO's settings, sizes, memory),
//! printed without any I/O.

use std::fmt::Write as _;

use anyhow::Result;
use iolab_core::units::ByteCount;

use super::{PlanArgs, memory_per_accelerator};

pub(super) fn plan(args: PlanArgs) -> Result<u8> {
    let cfg = args.spec.resolve()?;
    let total = u64::from(cfg.accelerators);
    cfg.check_job(total)?;
    // No dataset yet: its files as the config sizes them.
    let file = (cfg.record_length as u64).saturating_mul(cfg.samples_per_file);
    let (mine, dlio) = memory_per_accelerator(&cfg, file);
    let mut out = String::new();
    let _ = writeln!(out, "iolab {} · train plan", env!("CARGO_PKG_VERSION"));
    if let Some(p) = cfg.preset {
        let _ = writeln!(
            out,
            "  preset          {} (DLIO workload {}){}",
            p.name(),
            p.dlio_workload(cfg.accelerator),
            cfg.mode.map_or(String::new(), |m| format!(
                ", MLPerf Storage v3.0 {}",
                m.name()
            ))
        );
    }
    if let Some(s) = &cfg.parquet {
        let _ = writeln!(
            out,
            "  parquet         {} columns, {} bytes a row, row groups of {} rows; reads {}",
            s.columns.len(),
            s.row_bytes(),
            s.row_group_size,
            match &cfg.read_columns {
                None => "every row group whole, on every rank (DLIO's reader)".to_string(),
                Some(c) => format!("{} columns, each chunk on its own", c.len()),
            }
        );
    }
    let _ = writeln!(
        out,
        "  dataset         {} {} files x {} samples of {:.0} bytes (stdev {:.0}): {}",
        cfg.files,
        cfg.format.extension(),
        cfg.samples_per_file,
        cfg.record_length,
        cfg.record_length_stdev,
        ByteCount(cfg.dataset_bytes() as u64).human()
    );
    let _ = writeln!(
        out,
        "  loader          {:?}, batch {}, {} reader threads ({} threads reading), prefetch {}, computation threads {}",
        cfg.loader,
        cfg.batch_size,
        cfg.read_threads,
        cfg.reader_threads(),
        cfg.prefetch,
        cfg.computation_threads
    );
    let _ = writeln!(
        out,
        "  compute         {:.4} s per step, {} epochs, {} steps per epoch with {} accelerator(s)",
        cfg.computation_time,
        cfg.epochs,
        cfg.steps_per_epoch(total),
        total
    );
    let _ = writeln!(out, "  AU threshold    {:.0}%", cfg.au_threshold);
    let _ = writeln!(
        out,
        "  memory          iolab holds {} per accelerator; DLIO's loader about {}",
        ByteCount(mine).human(),
        ByteCount(dlio).human()
    );
    print!("{out}");
    Ok(crate::exit::OK)
}
