//! `iolab inventory`'s text: the machine under test ([`Inventory`]) as aligned
//! "key: value" lines, "unknown" for what could not be read.

use std::fmt::Write as _;

use iolab_core::inventory::{Inventory, TargetInfo};
use iolab_core::units::ByteCount;

/// A value read, or "unknown".
fn or_unknown<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(|x| x.to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The inventory as aligned "key: value" lines (`iolab inventory`).
pub fn render_inventory_text(inv: &Inventory) -> String {
    let mut out = String::new();
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
        out.push_str(&target_lines(t));
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

/// The target's lines: its file system and mount, options, capacity and devices.
fn target_lines(t: &TargetInfo) -> String {
    let mut out = String::new();
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
    out
}

/// A byte count as "1.5 GiB", or "unknown".
fn bytes(b: &Option<u64>) -> String {
    b.map(|b| ByteCount(b).human())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What could not be read says "unknown"; a target lists its options and devices.
    #[test]
    fn an_inventory_prints_a_line_per_item_and_unknown_for_the_unread() {
        let mut inv = Inventory {
            hostname: "node1".into(),
            memory_bytes: Some(1 << 30),
            ..Inventory::default()
        };
        inv.target = Some(TargetInfo {
            path: "/data".into(),
            fs_type: Some("xfs".into()),
            mount_options: vec!["rw".into(), "noatime".into()],
            ..TargetInfo::default()
        });
        let text = render_inventory_text(&inv);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "host:        node1");
        assert_eq!(lines[1], "os:          unknown");
        assert_eq!(lines[4], "memory:      1.00 GiB");
        assert_eq!(
            lines[5],
            "target:      /data on unknown (xfs) mounted at unknown"
        );
        assert_eq!(lines[6], "  options:   rw,noatime");
        assert_eq!(lines[7], "  capacity:  unknown (unknown free)");
        assert_eq!(lines.len(), 8);
    }
}
