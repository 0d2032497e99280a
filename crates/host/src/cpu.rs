//! The processors: [`cpu_info`] fills a [`CpuInfo`] from /proc/cpuinfo (model),
//! /sys/devices/system/cpu (online CPUs, topology: sockets and cores; cpufreq governor)
//! and /sys/devices/system/node (NUMA nodes), falling back to /proc/cpuinfo's
//! "physical id" / "core id" where sysfs hides topology.

use std::collections::BTreeSet;

use iolab_core::CpuList;
use iolab_core::inventory::CpuInfo;

use crate::root::{SysRoot, dir_names, noted, read_text, read_trimmed};

/// Keys naming the CPU model in /proc/cpuinfo, by architecture (x86, ppc, arm, s390).
const MODEL_KEYS: &[&str] = &["model name", "cpu", "Hardware", "Processor", "machine"];

pub(crate) fn cpu_info(root: &SysRoot, notes: &mut Vec<String>) -> CpuInfo {
    let cpuinfo =
        noted(notes, "CPU model", read_text(&root.proc_path("cpuinfo"))).unwrap_or_default();
    let records = cpuinfo_records(&cpuinfo);

    let model = MODEL_KEYS
        .iter()
        .find_map(|key| records.iter().find_map(|r| field(r, key)))
        .map(str::to_string);
    if model.is_none() && !cpuinfo.is_empty() {
        notes.push("CPU model unknown: no model name in /proc/cpuinfo".to_string());
    }

    let online = online_cpus(root, notes, &records);
    let threads = online.as_ref().map(|c| c.len() as u32);

    let (sockets, cores) = topology(root, online.as_deref().unwrap_or_default(), &records, notes);

    let numa_nodes = noted(
        notes,
        "NUMA nodes",
        dir_names(&root.sys_path("devices/system/node")),
    )
    .map(|names| names.iter().filter(|n| is_numbered(n, "node")).count() as u32)
    .filter(|n| *n > 0);

    let governor = noted(
        notes,
        "CPU frequency governor",
        read_trimmed(&root.sys_path("devices/system/cpu/cpu0/cpufreq/scaling_governor")),
    );

    CpuInfo {
        model,
        sockets,
        cores,
        threads,
        numa_nodes,
        governor,
    }
}

/// (sockets, physical cores) from sysfs per online CPU, else from /proc/cpuinfo's
/// "physical id" and "core id".
fn topology(
    root: &SysRoot,
    online: &[usize],
    records: &[Vec<(&str, &str)>],
    notes: &mut Vec<String>,
) -> (Option<u32>, Option<u32>) {
    let mut packages = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let cpu_dir = root.sys_path("devices/system/cpu");
    for cpu in online {
        let topology = cpu_dir.join(format!("cpu{cpu}/topology"));
        let package = read_trimmed(&topology.join("physical_package_id"));
        let core = read_trimmed(&topology.join("core_id"));
        if let (Ok(p), Ok(c)) = (package, core) {
            cores.insert((p.clone(), c));
            packages.insert(p);
        }
    }
    if packages.is_empty() {
        for r in records {
            if let (Some(p), Some(c)) = (field(r, "physical id"), field(r, "core id")) {
                packages.insert(p.to_string());
                cores.insert((p.to_string(), c.to_string()));
            }
        }
    }
    if packages.is_empty() {
        notes.push(
            "CPU sockets and cores unknown: no topology in /sys or /proc/cpuinfo".to_string(),
        );
        return (None, None);
    }
    (Some(packages.len() as u32), Some(cores.len() as u32))
}

/// Online CPU numbers from /sys/devices/system/cpu/online, else the processors listed
/// in /proc/cpuinfo.
fn online_cpus(
    root: &SysRoot,
    notes: &mut Vec<String>,
    records: &[Vec<(&str, &str)>],
) -> Option<Vec<usize>> {
    let path = root.sys_path("devices/system/cpu/online");
    let from_sys =
        read_trimmed(&path).and_then(|s| s.parse::<CpuList>().map_err(|e| e.to_string()));
    match from_sys {
        Ok(list) => Some(list.0),
        Err(why) => {
            let listed: Vec<usize> = records
                .iter()
                .filter_map(|r| field(r, "processor")?.parse().ok())
                .collect();
            if listed.is_empty() {
                notes.push(format!("CPU threads unknown: {why}"));
                None
            } else {
                Some(listed)
            }
        }
    }
}

/// /proc/cpuinfo as one list of (key, value) per blank-line separated record.
fn cpuinfo_records(text: &str) -> Vec<Vec<(&str, &str)>> {
    text.split("\n\n")
        .map(|block| {
            block
                .lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim(), v.trim()))
                .collect::<Vec<_>>()
        })
        .filter(|r| !r.is_empty())
        .collect()
}

fn field<'a>(record: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    record
        .iter()
        .find(|(k, v)| *k == key && !v.is_empty())
        .map(|(_, v)| *v)
}

/// "node12" for prefix "node", not "node" nor "nodes".
pub(crate) fn is_numbered(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixture;

    const CPUINFO: &str = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
processor\t: 2\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 1\ncore id\t: 0\n\n\
processor\t: 3\nmodel name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz\nphysical id\t: 1\ncore id\t: 1\n\n";

    #[test]
    fn topology_from_sysfs() {
        let fx = Fixture::new();
        fx.file("proc/cpuinfo", CPUINFO);
        fx.file("sys/devices/system/cpu/online", "0-3\n");
        // Two sockets, two cores each, no SMT; package ids as on a real two-socket box.
        for (cpu, package, core) in [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1)] {
            let t = format!("sys/devices/system/cpu/cpu{cpu}/topology");
            fx.file(&format!("{t}/physical_package_id"), &format!("{package}\n"));
            fx.file(&format!("{t}/core_id"), &format!("{core}\n"));
        }
        fx.file(
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
            "performance\n",
        );
        fx.dir("sys/devices/system/node/node0")
            .dir("sys/devices/system/node/node1");
        fx.file("sys/devices/system/node/online", "0-1\n");
        let mut notes = Vec::new();
        let cpu = cpu_info(&fx.root(), &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            cpu.model.as_deref(),
            Some("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz")
        );
        assert_eq!(
            (cpu.sockets, cpu.cores, cpu.threads),
            (Some(2), Some(4), Some(4))
        );
        assert_eq!(cpu.numa_nodes, Some(2));
        assert_eq!(cpu.governor.as_deref(), Some("performance"));
    }

    #[test]
    fn cpuinfo_fallback_and_notes_for_the_rest() {
        let fx = Fixture::new();
        fx.file("proc/cpuinfo", CPUINFO);
        let mut notes = Vec::new();
        let cpu = cpu_info(&fx.root(), &mut notes);
        assert_eq!(
            (cpu.sockets, cpu.cores, cpu.threads),
            (Some(2), Some(3), Some(4))
        );
        assert_eq!(cpu.numa_nodes, None);
        assert_eq!(cpu.governor, None);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes.iter().any(|n| n.starts_with("NUMA nodes unknown")));
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("CPU frequency governor unknown"))
        );
    }

    #[test]
    fn nothing_readable() {
        let fx = Fixture::new();
        let mut notes = Vec::new();
        let cpu = cpu_info(&fx.root(), &mut notes);
        assert_eq!(cpu, CpuInfo::default());
        assert!(notes.len() >= 4, "{notes:?}");
    }

    #[test]
    fn numbered_names() {
        assert!(is_numbered("node12", "node"));
        assert!(!is_numbered("node", "node"));
        assert!(!is_numbered("nodes", "node"));
        assert!(!is_numbered("has_cpu", "node"));
    }
}
