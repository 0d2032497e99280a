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
        print!("{}", render(&inv));
    }
    Ok(exit::OK)
}

fn or_unknown<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The inventory as aligned "key: value" lines.
fn render(inv: &iolab_core::inventory::Inventory) -> String {
    use iolab_core::units::ByteCount;
    use std::fmt::Write as _;
    let mut out = String::new();
    let bytes = |b: &Option<u64>| {
        b.map(|b| ByteCount(b).human())
            .unwrap_or_else(|| "unknown".into())
    };
    let _ = writeln!(out, "host:        {}", inv.hostname);
    let _ = writeln!(out, "os:          {}", or_unknown(&inv.os));
    let _ = writeln!(out, "kernel:      {}", or_unknown(&inv.kernel));
    let c = &inv.cpu;
    let _ = writeln!(
        out,
        "cpu:         {} ({} sockets, {} cores, {} threads, {} NUMA nodes, governor {})",
        or_unknown(&c.model),
        or_unknown(&c.sockets),
        or_unknown(&c.cores),
        or_unknown(&c.threads),
        or_unknown(&c.numa_nodes),
        or_unknown(&c.governor)
    );
    let _ = writeln!(out, "memory:      {}", bytes(&inv.memory_bytes));
    if let Some(t) = &inv.target {
        let _ = writeln!(
            out,
            "target:      {} on {} ({}) mounted at {}",
            t.path,
            or_unknown(&t.source),
            or_unknown(&t.fs_type),
            or_unknown(&t.mount_point)
        );
        let _ = writeln!(
            out,
            "  options:   {}",
            if t.mount_options.is_empty() {
                "unknown".into()
            } else {
                t.mount_options.join(",")
            }
        );
        for (k, v) in &t.key_options {
            let _ = writeln!(out, "  {k}: {v}");
        }
        let _ = writeln!(
            out,
            "  capacity:  {} ({} free)",
            bytes(&t.capacity_bytes),
            bytes(&t.free_bytes)
        );
        for d in &t.block_devices {
            let _ = writeln!(
                out,
                "  device:    {} {} {} rotational={} scheduler={} nr_requests={} read_ahead_kb={}",
                d.name,
                or_unknown(&d.model),
                bytes(&d.size_bytes),
                or_unknown(&d.rotational),
                or_unknown(&d.scheduler),
                or_unknown(&d.queue_depth),
                or_unknown(&d.read_ahead_kb)
            );
        }
    }
    for n in &inv.network {
        let speed = n
            .speed_mbps
            .map(|s| format!("{s} Mb/s"))
            .unwrap_or_else(|| "unknown speed".into());
        let _ = writeln!(
            out,
            "network:     {} {} mtu {} {}",
            n.name,
            speed,
            or_unknown(&n.mtu),
            or_unknown(&n.state)
        );
    }
    for (name, status) in &inv.mitigations {
        let _ = writeln!(out, "mitigation:  {name}: {status}");
    }
    for note in &inv.notes {
        let _ = writeln!(out, "note:        {note}");
    }
    out
}
