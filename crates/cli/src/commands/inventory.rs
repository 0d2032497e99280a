//! `iolab inventory`: the machine under test (CPU, memory, OS, kernel, mitigations, the
//! target's file system, mount options and block devices, network interfaces), as
//! text or JSON. Never fails for missing information: it says "unknown".

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use iolab_host::SysRoot;

use crate::exit;

#[derive(Args, Debug)]
pub struct InventoryArgs {
    /// Also describe the file system and devices under this directory.
    #[arg(short = 'd', long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn inventory(args: InventoryArgs) -> Result<u8> {
    if let Some(d) = &args.dir
        && !d.exists()
    {
        anyhow::bail!("--dir {} does not exist", d.display());
    }
    let inv = iolab_host::inventory::collect(&SysRoot::live(), args.dir.as_deref());
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&inv).context("encoding the inventory")?
        );
    } else {
        print!("{}", iolab_report::render_inventory_text(&inv));
    }
    Ok(exit::OK)
}
