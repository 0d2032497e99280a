//! The test bed as the studies document it: [`environment_table`] lays the provenance and
//! inventory of several runs side by side as an [`EnvTable`] of (section, item, value per
//! run); anything that could not be read is "unknown".

use iolab_core::inventory::{BlockDeviceInfo, Inventory, NetInterfaceInfo};
use iolab_core::result::RunRecord;
use iolab_core::units::ByteCount;
use serde::Serialize;

/// Shown where the inventory could not read a value.
pub const UNKNOWN: &str = "unknown";
/// Shown where a run has no such item at all (another device, another interface).
pub const ABSENT: &str = "—";

/// Rows of items, one value column per run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvTable {
    pub columns: Vec<String>,
    pub rows: Vec<EnvRow>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvRow {
    pub section: &'static str,
    pub item: String,
    pub values: Vec<String>,
}

/// The environment of `runs`, columns named `names` (one per run).
pub fn environment_table(runs: &[RunRecord], names: &[String]) -> EnvTable {
    let per_run: Vec<Vec<(&'static str, String, Option<String>)>> =
        runs.iter().map(run_items).collect();
    let mut keys: Vec<(&'static str, String)> = Vec::new();
    for items in &per_run {
        for (section, item, _) in items {
            if !keys.iter().any(|(s, i)| s == section && i == item) {
                keys.push((section, item.clone()));
            }
        }
    }
    let rows = keys
        .into_iter()
        .map(|(section, item)| EnvRow {
            values: per_run
                .iter()
                .map(
                    |items| match items.iter().find(|(s, i, _)| *s == section && *i == item) {
                        Some((_, _, Some(v))) => v.clone(),
                        Some((_, _, None)) => UNKNOWN.to_string(),
                        None => ABSENT.to_string(),
                    },
                )
                .collect(),
            section,
            item,
        })
        .collect();
    EnvTable {
        columns: names.to_vec(),
        rows,
    }
}

type Item = (&'static str, String, Option<String>);

fn item(section: &'static str, name: &str, value: Option<String>) -> Item {
    (section, name.to_string(), value)
}

fn run_items(run: &RunRecord) -> Vec<Item> {
    let p = &run.provenance;
    let mut items = vec![
        item("Run", "Run", Some(run.id.clone()).filter(|s| !s.is_empty())),
        item("Run", "iolab", Some(p.iolab_version.clone())),
        item("Run", "Git revision", p.git_revision.clone()),
        item("Run", "Command", Some(p.command.join(" "))),
        item("Run", "Hosts", Some(p.hosts.join(", "))),
        item("Run", "Ranks", Some(p.ranks.to_string())),
        item("Run", "Target", Some(p.target.clone())),
    ];
    let empty = Inventory::default();
    let inv = p.inventory.as_ref();
    items.extend(host_items(inv.unwrap_or(&empty), inv.is_some()));
    items.extend(storage_items(inv.unwrap_or(&empty)));
    if let Some(inv) = inv {
        items.extend(inv.network.iter().map(nic_item));
        if !inv.notes.is_empty() {
            items.push(item("Notes", "Inventory", Some(inv.notes.join("; "))));
        }
    }
    items
}

fn host_items(inv: &Inventory, known: bool) -> Vec<Item> {
    let c = &inv.cpu;
    let num = |v: Option<u32>| v.map(|v| v.to_string());
    vec![
        item(
            "Host",
            "Hostname",
            Some(inv.hostname.clone()).filter(|h| known && !h.is_empty()),
        ),
        item("Host", "OS", inv.os.clone()),
        item("Host", "Kernel", inv.kernel.clone()),
        item("Host", "CPU model", c.model.clone()),
        item("Host", "Sockets", num(c.sockets)),
        item("Host", "Cores", num(c.cores)),
        item("Host", "Logical CPUs", num(c.threads)),
        item("Host", "NUMA nodes", num(c.numa_nodes)),
        item("Host", "CPU governor", c.governor.clone()),
        item(
            "Host",
            "Memory",
            inv.memory_bytes.map(|b| ByteCount(b).human()),
        ),
        item("Host", "CPU vulnerabilities", mitigations(inv)),
    ]
}

fn mitigations(inv: &Inventory) -> Option<String> {
    if inv.mitigations.is_empty() {
        return None;
    }
    let vulnerable: Vec<String> = inv
        .mitigations
        .iter()
        .filter_map(|(name, status)| {
            let part = vulnerable_part(status)?;
            Some(if part == status.trim() {
                name.clone()
            } else {
                format!("{name} ({part})")
            })
        })
        .collect();
    Some(if vulnerable.is_empty() {
        format!("none vulnerable ({} checked)", inv.mitigations.len())
    } else {
        format!("vulnerable: {}", vulnerable.join(", "))
    })
}

/// The first part of a sysfs vulnerability status that says Vulnerable: the whole status
/// ("Vulnerable"), or one of its ';'-separated parts ("Mitigation: Retpolines; BHI:
/// Vulnerable" gives "BHI: Vulnerable"). "Not affected" and mitigations are not.
fn vulnerable_part(status: &str) -> Option<&str> {
    status
        .split(';')
        .map(str::trim)
        .find(|part| part.contains("Vulnerable") && !part.contains("Not affected"))
}

fn storage_items(inv: &Inventory) -> Vec<Item> {
    let t = inv.target.clone().unwrap_or_default();
    let size = |b: Option<u64>| b.map(|b| ByteCount(b).human());
    let options = (!t.mount_options.is_empty()).then(|| t.mount_options.join(","));
    let mut items = vec![
        item("Storage", "File system", t.fs_type.clone()),
        item("Storage", "Mount point", t.mount_point.clone()),
        item("Storage", "Source", t.source.clone()),
        item("Storage", "Mount options", options),
        item("Storage", "Capacity", size(t.capacity_bytes)),
        item("Storage", "Free", size(t.free_bytes)),
    ];
    for (k, v) in &t.key_options {
        items.push(item("Storage", &format!("Option {k}"), Some(v.clone())));
    }
    items.extend(t.block_devices.iter().map(device_item));
    items
}

fn or_unknown(v: Option<String>, what: &str) -> String {
    v.unwrap_or_else(|| format!("{what} {UNKNOWN}"))
}

fn device_item(d: &BlockDeviceInfo) -> Item {
    let kind = d
        .rotational
        .map(|r| if r { "HDD" } else { "SSD" }.to_string());
    let parts = [
        or_unknown(d.model.clone(), "model"),
        or_unknown(d.size_bytes.map(|b| ByteCount(b).human()), "size"),
        or_unknown(kind, "rotational"),
        or_unknown(
            d.scheduler.clone().map(|s| format!("scheduler {s}")),
            "scheduler",
        ),
        or_unknown(
            d.queue_depth.map(|q| format!("nr_requests {q}")),
            "nr_requests",
        ),
        or_unknown(
            d.read_ahead_kb.map(|r| format!("read-ahead {r} KiB")),
            "read-ahead",
        ),
    ];
    item(
        "Storage",
        &format!("Device {}", d.name),
        Some(parts.join(", ")),
    )
}

fn nic_item(n: &NetInterfaceInfo) -> Item {
    let speed = n.speed_mbps.map(|s| {
        if s >= 1000 && s % 1000 == 0 {
            format!("{} Gb/s", s / 1000)
        } else {
            format!("{s} Mb/s")
        }
    });
    let mut parts = vec![
        or_unknown(speed, "speed"),
        or_unknown(n.mtu.map(|m| format!("MTU {m}")), "MTU"),
        or_unknown(n.state.clone(), "state"),
        n.driver.clone().unwrap_or_else(|| "virtual".to_string()),
    ];
    parts.extend(n.addresses.iter().cloned());
    item(
        "Network",
        &format!("Interface {}", n.name),
        Some(parts.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::run_with;

    #[test]
    fn missing_inventory_reads_unknown() {
        let a = run_with("a", vec![]);
        let mut b = run_with("b", vec![]);
        let mut inv = Inventory {
            os: Some("Debian 12".into()),
            ..Inventory::default()
        };
        inv.network.push(NetInterfaceInfo {
            name: "ib0".into(),
            speed_mbps: Some(100_000),
            ..NetInterfaceInfo::default()
        });
        b.provenance.inventory = Some(inv);
        let t = environment_table(&[a, b], &["a".into(), "b".into()]);
        let row = |item: &str| {
            t.rows
                .iter()
                .find(|r| r.item == item)
                .map(|r| r.values.clone())
                .unwrap()
        };
        assert_eq!(row("OS"), ["unknown", "Debian 12"]);
        assert_eq!(row("Kernel"), ["unknown", "unknown"]);
        assert_eq!(
            row("Interface ib0"),
            ["—", "100 Gb/s, MTU unknown, state unknown, virtual"]
        );
    }

    #[test]
    fn a_vulnerable_part_makes_the_entry_vulnerable() {
        let mut run = run_with("a", vec![]);
        run.provenance.inventory = Some(Inventory {
            mitigations: [
                (
                    "spectre_v2",
                    "Mitigation: Retpolines; IBPB: conditional; BHI: Vulnerable",
                ),
                (
                    "mds",
                    "Vulnerable: Clear CPU buffers attempted, no microcode",
                ),
                ("meltdown", "Not affected"),
                ("spectre_v1", "Mitigation: usercopy/swapgs barriers"),
                ("retbleed", "Mitigation: IBRS; PBRSB-eIBRS: Not affected"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            ..Inventory::default()
        });
        let t = environment_table(&[run.clone()], &["a".into()]);
        let row = |t: &EnvTable| {
            t.rows
                .iter()
                .find(|r| r.item == "CPU vulnerabilities")
                .map(|r| r.values[0].clone())
                .unwrap()
        };
        assert_eq!(row(&t), "vulnerable: mds, spectre_v2 (BHI: Vulnerable)");
        let inv = run.provenance.inventory.as_mut().unwrap();
        inv.mitigations.remove("spectre_v2");
        inv.mitigations.remove("mds");
        let t = environment_table(&[run], &["a".into()]);
        assert_eq!(row(&t), "none vulnerable (3 checked)");
    }
}
