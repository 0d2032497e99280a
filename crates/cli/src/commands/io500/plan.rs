//! `iolab io500 plan`: the phases in IO500's order with their parameters, and the
//! capacity and time a run will need, checked against the target's free space.

use std::path::Path;

use anyhow::{Context, Result, bail};
use iolab_core::units::ByteCount;
use iolab_suites::io500::{Assumptions, PlanView, estimate, plan_phases};

use super::Io500PlanArgs;
use crate::exit;

pub(super) fn plan(args: Io500PlanArgs) -> Result<u8> {
    args.spec.validate()?;
    if args.ranks == 0 || args.ranks > crate::commands::MAX_PLAN_RANKS {
        bail!(
            "--ranks must be at least 1 and at most {}",
            crate::commands::MAX_PLAN_RANKS
        );
    }
    for (name, v) in [
        ("--assume-bandwidth", args.assume_bandwidth.get() as f64),
        (
            "--assume-hard-bandwidth",
            args.assume_hard_bandwidth.get() as f64,
        ),
        ("--assume-file-rate", args.assume_file_rate),
        ("--assume-find-rate", args.assume_find_rate),
    ] {
        if !v.is_finite() || v <= 0.0 {
            bail!("{name} must be more than 0");
        }
    }
    let assumed = Assumptions {
        easy_bandwidth: args.assume_bandwidth.get() as f64,
        hard_bandwidth: args.assume_hard_bandwidth.get() as f64,
        file_rate: args.assume_file_rate,
        find_rate: args.assume_find_rate,
    };
    let plans = plan_phases(&args.spec);
    let est = estimate(&args.spec, args.ranks, &assumed);
    let view = PlanView {
        spec: &args.spec,
        ranks: args.ranks,
        assumed: &assumed,
        plans: &plans,
        est: &est,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&view.json())?);
    } else {
        print!("{}", view.text());
    }
    if let Some(dir) = &args.dir {
        check_room(dir, est.capacity, est.inodes)?;
        if !args.json {
            println!("{} has room for it", dir.display());
        }
    }
    Ok(exit::OK)
}

fn check_room(dir: &Path, bytes: u64, inodes: u64) -> Result<()> {
    let short = iolab_backend::files::space_short(dir, bytes)
        .with_context(|| format!("--dir {}", dir.display()))?;
    if let Some(free) = short {
        bail!(
            "an IO500 run needs about {} in {} but only {} is free; lower --stonewall or --files-per-rank, or free space",
            ByteCount(bytes).human(),
            dir.display(),
            ByteCount(free).human()
        );
    }
    if let Some(free_inodes) = iolab_backend::files::fs_free_inodes(dir)
        .with_context(|| format!("--dir {}", dir.display()))?
        && inodes > free_inodes
    {
        bail!(
            "an IO500 run creates about {inodes} files in {} but only {free_inodes} inodes are free; lower --files-per-rank or --stonewall",
            dir.display()
        );
    }
    Ok(())
}
