//! `iolab audit`: checks the settings the reference studies tuned (I/O scheduler,
//! read-ahead, THP, CPU governor and C-states, network buffers, dirty ratios, NFS mount
//! options and server threads) and prints each with its current and recommended value,
//! why it matters and a severity. Reads only; never changes anything.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_host::{Profile, Status, SysRoot};

use crate::exit;

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// The directory benchmarks will run in (its file system and devices are checked).
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// The machine's role: hpc-client, nfs-client, nfs-server, storage-server.
    #[arg(long)]
    pub profile: Option<String>,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,

    /// Show passing checks too.
    #[arg(long, short = 'a')]
    pub all: bool,
}

pub fn audit(args: AuditArgs) -> Result<u8> {
    let profile: Option<Profile> = args
        .profile
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--profile: {e}"))?;
    if let Some(d) = &args.dir
        && !d.exists()
    {
        anyhow::bail!("--dir {} does not exist", d.display());
    }
    let root = SysRoot::live();
    let inv = iolab_host::inventory::collect(&root, args.dir.as_deref());
    let findings = iolab_host::audit::run(&root, &inv, profile);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings).context("encoding the findings")?
        );
        return Ok(exit::OK);
    }
    for f in &findings {
        if f.status == Status::Pass && !args.all {
            continue;
        }
        let subject = f
            .subject
            .as_deref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        let status = match f.status {
            Status::Pass => "ok".to_string(),
            Status::Warn => format!("{:?}", f.severity).to_lowercase(),
            Status::Unknown => "unknown".to_string(),
        };
        println!("{status:<8} {}{subject}", f.title);
        println!(
            "         current {} · recommended {}",
            f.current.as_deref().unwrap_or("unknown"),
            f.recommended
        );
        println!("         {}", f.why);
        if let Some(n) = &f.note {
            println!("         ({n})");
        }
    }
    let warned = findings.iter().filter(|f| f.status == Status::Warn).count();
    let passed = findings.iter().filter(|f| f.status == Status::Pass).count();
    let unknown = findings.len() - warned - passed;
    println!(
        "{} checks: {warned} to look at, {passed} fine{}, {unknown} unknown",
        findings.len(),
        if args.all || passed == 0 {
            ""
        } else {
            " (not shown; --all shows them)"
        },
    );
    Ok(exit::OK)
}
