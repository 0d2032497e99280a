//! `iolab io500 plan`: the phases in IO500's order with their parameters, and the
//! capacity and time a run will need, checked against the target's free space.

use std::path::Path;

use anyhow::{Context, Result, bail};
use iolab_core::units::{ByteCount, Nanos};
use iolab_suites::io500::{Assumptions, estimate, plan_phases};

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
    if args.json {
        let phases: Vec<serde_json::Value> = plans
            .iter()
            .zip(&est.phases)
            .map(|(p, e)| {
                serde_json::json!({
                    "name": p.def.name,
                    "scored": p.def.scored(),
                    "group": p.def.group,
                    "unit": p.def.unit().label(),
                    "works_on": p.def.works_on,
                    "params": p.params,
                    "data_spec": p.data,
                    "estimate": e,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "ranks": args.ranks,
            "spec": args.spec,
            "assumed": assumed,
            "phases": phases,
            "capacity": est.capacity,
            "inodes": est.inodes,
            "time": est.time,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_plan(&args, &plans, &est);
    }
    if let Some(dir) = &args.dir {
        check_room(dir, est.capacity, est.inodes)?;
        if !args.json {
            println!("{} has room for it", dir.display());
        }
    }
    Ok(exit::OK)
}

fn print_plan(
    args: &Io500PlanArgs,
    plans: &[iolab_suites::io500::PhasePlan],
    est: &iolab_suites::io500::Io500Estimate,
) {
    let s = &args.spec;
    println!(
        "IO500 on {} rank{}: stonewall {}{}, ior-easy transfers of {}, at most {} files per rank",
        args.ranks,
        if args.ranks == 1 { "" } else { "s" },
        s.stonewall,
        if s.stonewall_is_io500s() {
            ""
        } else {
            " (IO500 requires 300s: the result will be invalid for submission)"
        },
        s.ior_easy_transfer,
        s.files_per_rank
    );
    println!(
        "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  what",
        "#", "phase", "score", "time", "data", "files"
    );
    for (i, (p, e)) in plans.iter().zip(&est.phases).enumerate() {
        let unit = if p.def.scored() {
            p.def.unit().label()
        } else {
            "-"
        };
        let time = if e.stonewalled {
            duration(e.time)
        } else {
            format!("~{}", duration(e.time))
        };
        let data = if e.bytes > 0 {
            ByteCount(e.bytes).human()
        } else {
            "-".into()
        };
        let files = count(e.files);
        println!(
            "{:>3}  {:<20} {:<6} {:>8} {:>10} {:>9}  {}",
            i + 1,
            p.def.name,
            unit,
            time,
            data,
            files,
            p.describe()
        );
    }
    println!(
        "needs {} and {} inodes at most; takes about {} (write phases run for the stonewall plus wear-out; the rest at {}/s for ior-easy, {}/s for ior-hard, {} files/s, find at {} entries/s: --assume-* change that)",
        ByteCount(est.capacity).human(),
        count(est.inodes),
        duration(est.time),
        args.assume_bandwidth.human(),
        args.assume_hard_bandwidth.human(),
        args.assume_file_rate,
        args.assume_find_rate
    );
}

/// "-", "42", "3.00M".
fn count(n: u64) -> String {
    match n {
        0 => "-".into(),
        1..1000 => n.to_string(),
        _ => iolab_core::units::OpsPerSec(n as f64).human(),
    }
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

/// "45.0s", "5m00s", "1h02m".
fn duration(t: Nanos) -> String {
    let s = t.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        let s = s.round() as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = (s / 60.0).round() as u64;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}
