//! `iolab audit`: checks the settings the reference studies tuned (I/O scheduler,
//! read-ahead, THP, CPU governor and C-states, network buffers, dirty ratios, NFS mount
//! options and server threads) and prints each with its current and recommended value,
//! why it matters and a severity. Reads only; never changes anything.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_host::{Profile, SysRoot};

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
    print!("{}", iolab_report::audit::render_audit(&findings, args.all));
    Ok(exit::OK)
}
