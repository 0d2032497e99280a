//! Running one [`Check`]: [`applies`] decides whether it concerns this machine,
//! [`evaluate`] reads its [`Source`] (one value, or one per disk, interface or CPU),
//! applies its [`Pick`] and [`Rule`], and turns each reading into a [`Finding`]. A
//! source that cannot be read gives status unknown with the reason in `note`.

use std::collections::BTreeSet;
use std::path::Path;

use iolab_core::CpuList;
use iolab_core::inventory::Inventory;

use super::{Check, Disks, Finding, Pick, Rule, Severity, Source, Status, When};
use crate::block::active_choice;
use crate::cpu::is_numbered;
use crate::mount_options::is_nfs;
use crate::root::{SysRoot, dir_names, read_trimmed, reason};

/// One value read for a check, or why it could not be.
struct Reading {
    subject: Option<String>,
    source: String,
    value: Result<String, String>,
}

impl Reading {
    fn file(subject: Option<String>, path: &Path) -> Self {
        Reading {
            subject,
            source: path.display().to_string(),
            value: read_trimmed(path),
        }
    }
}

pub(super) fn applies(check: &Check, root: &SysRoot, inventory: &Inventory) -> bool {
    match check.when {
        When::Always => true,
        When::TargetNfs => target_fs(inventory).is_some_and(is_nfs),
        When::IdleDriver(driver) => {
            read_trimmed(&root.sys_path("devices/system/cpu/cpuidle/current_driver"))
                .is_ok_and(|d| d == driver)
        }
    }
}

fn target_fs(inventory: &Inventory) -> Option<&str> {
    inventory.target.as_ref()?.fs_type.as_deref()
}

pub(super) fn evaluate(check: &Check, root: &SysRoot, inventory: &Inventory) -> Vec<Finding> {
    if let Source::Cpus(attr) = check.source {
        return vec![merged_over_cpus(check, root, attr)];
    }
    readings(check.source, root, inventory)
        .into_iter()
        .map(|r| judge(check, r))
        .collect()
}

fn readings(source: Source, root: &SysRoot, inventory: &Inventory) -> Vec<Reading> {
    match source {
        Source::Sysctl(name) => {
            let path = root.proc_path(&format!("sys/{}", name.replace('.', "/")));
            vec![Reading::file(None, &path)]
        }
        Source::Sys(rel) => vec![Reading::file(None, &root.sys_path(rel))],
        Source::Proc(rel) => vec![Reading::file(None, &root.proc_path(rel))],
        Source::Device(attr, which) => disks(root, inventory, which)
            .into_iter()
            .map(|disk| {
                let path = root.sys_path("class/block").join(&disk).join(attr);
                Reading::file(Some(disk), &path)
            })
            .collect(),
        Source::Interface(attr) => inventory
            .network
            .iter()
            .filter(|n| n.driver.is_some() && n.state.as_deref() == Some("up"))
            .map(|n| {
                let path = root.sys_path("class/net").join(&n.name).join(attr);
                Reading::file(Some(n.name.clone()), &path)
            })
            .collect(),
        Source::MountOption(..) | Source::MountOptions(_) => {
            vec![mount_option(source, root, inventory)]
        }
        Source::TargetBdi(attr) => vec![target_bdi(root, inventory, attr)],
        Source::Vulnerabilities => vec![vulnerabilities(root)],
        Source::DeepestIdleState => vec![deepest_idle_state(root)],
        Source::Cpus(_) => Vec::new(),
    }
}

/// A key option of the target's mount (or its default), or several shown together.
fn mount_option(source: Source, root: &SysRoot, inventory: &Inventory) -> Reading {
    let value = match source {
        Source::MountOption(key, default) => key_option(inventory, key)
            .or(default.map(str::to_string))
            .ok_or_else(|| format!("mount option {key} not shown for the target")),
        Source::MountOptions(keys) => {
            let shown: Vec<String> = keys
                .iter()
                .filter_map(|k| key_option(inventory, k).map(|v| format!("{k}={v}")))
                .collect();
            Ok(if shown.is_empty() {
                "defaults".to_string()
            } else {
                shown.join(",")
            })
        }
        _ => Err("not a mount option".to_string()),
    };
    Reading {
        subject: None,
        source: root.proc_path("self/mountinfo").display().to_string(),
        value,
    }
}

/// A file of the target mount's backing device info (/sys/class/bdi/<major:minor>/).
fn target_bdi(root: &SysRoot, inventory: &Inventory, attr: &str) -> Reading {
    let bdi = root.sys_path("class/bdi");
    match inventory
        .target
        .as_ref()
        .and_then(|t| t.device_number.as_ref())
    {
        Some(number) => Reading::file(None, &bdi.join(number).join(attr)),
        None => Reading {
            subject: None,
            source: bdi.display().to_string(),
            value: Err("the target's mount is unknown".to_string()),
        },
    }
}

fn key_option(inventory: &Inventory, key: &str) -> Option<String> {
    inventory.target.as_ref()?.key_options.get(key).cloned()
}

/// The physical disks a per-device check looks at: those under the target, or every
/// disk with a device behind it (no loop, ram, zram, dm, md) when there is no target.
fn disks(root: &SysRoot, inventory: &Inventory, which: Disks) -> Vec<String> {
    let class = root.sys_path("class/block");
    let names: Vec<String> = match &inventory.target {
        Some(target) => target
            .block_devices
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        None => dir_names(&class)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| {
                class.join(n).join("device").exists() && !class.join(n).join("partition").exists()
            })
            .collect(),
    };
    names
        .into_iter()
        .filter(|name| {
            let rotational =
                read_trimmed(&class.join(name).join("queue/rotational")).is_ok_and(|r| r != "0");
            match which {
                Disks::All => true,
                Disks::Rotational => rotational,
                Disks::NonRotational => !rotational,
            }
        })
        .collect()
}

fn vulnerabilities(root: &SysRoot) -> Reading {
    let dir = root.sys_path("devices/system/cpu/vulnerabilities");
    let source = dir.display().to_string();
    let names = match dir_names(&dir) {
        Ok(names) if !names.is_empty() => names,
        Ok(_) => {
            return Reading {
                subject: None,
                source,
                value: Err(reason(&dir, "empty")),
            };
        }
        Err(why) => {
            return Reading {
                subject: None,
                source,
                value: Err(why),
            };
        }
    };
    let (mut vulnerable, mut mitigated, mut unaffected, mut other) = (Vec::new(), 0, 0, 0);
    for name in names {
        match read_trimmed(&dir.join(&name)) {
            Ok(s) if s.starts_with("Vulnerable") => vulnerable.push(name),
            Ok(s) if s.starts_with("Mitigation") => mitigated += 1,
            Ok(s) if s.starts_with("Not affected") => unaffected += 1,
            _ => other += 1,
        }
    }
    let mut parts = Vec::new();
    if !vulnerable.is_empty() {
        parts.push(format!(
            "{} vulnerable ({})",
            vulnerable.len(),
            vulnerable.join(", ")
        ));
    }
    parts.push(format!("{mitigated} mitigated"));
    parts.push(format!("{unaffected} not affected"));
    if other > 0 {
        parts.push(format!("{other} other"));
    }
    Reading {
        subject: None,
        source,
        value: Ok(parts.join(", ")),
    }
}

/// "133 us (C6)": the exit latency of cpu0's deepest idle state that is not disabled.
fn deepest_idle_state(root: &SysRoot) -> Reading {
    let dir = root.sys_path("devices/system/cpu/cpu0/cpuidle");
    let source = dir.display().to_string();
    let value = dir_names(&dir).and_then(|states| {
        let mut deepest: Option<(u64, String)> = None;
        for state in states.iter().filter(|s| is_numbered(s, "state")) {
            let path = dir.join(state);
            if read_trimmed(&path.join("disable")).is_ok_and(|d| d != "0") {
                continue;
            }
            let latency: u64 = read_trimmed(&path.join("latency"))?
                .parse()
                .map_err(|_| reason(&path.join("latency"), "not a number"))?;
            let name = read_trimmed(&path.join("name")).unwrap_or_else(|_| state.clone());
            if deepest.as_ref().is_none_or(|(l, _)| latency >= *l) {
                deepest = Some((latency, name));
            }
        }
        deepest
            .map(|(latency, name)| format!("{latency} us ({name})"))
            .ok_or_else(|| reason(&dir, "no idle states"))
    });
    Reading {
        subject: None,
        source,
        value,
    }
}

/// One finding over all online CPUs: the distinct values, the worst verdict.
fn merged_over_cpus(check: &Check, root: &SysRoot, attr: &str) -> Finding {
    let cpu_dir = root.sys_path("devices/system/cpu");
    let cpus = read_trimmed(&cpu_dir.join("online"))
        .ok()
        .and_then(|s| s.parse::<CpuList>().ok())
        .map(|l| l.0)
        .unwrap_or_else(|| vec![0]);
    let source = cpu_dir.join(format!("cpu*/{attr}")).display().to_string();
    let mut values = BTreeSet::new();
    let mut first_error = None;
    for cpu in cpus {
        match read_trimmed(&cpu_dir.join(format!("cpu{cpu}/{attr}"))) {
            Ok(v) => {
                values.insert(v);
            }
            Err(why) => {
                first_error.get_or_insert(why);
            }
        }
    }
    if values.is_empty() {
        return judge(
            check,
            Reading {
                subject: None,
                source,
                value: Err(first_error.unwrap_or_default()),
            },
        );
    }
    let findings: Vec<Finding> = values
        .iter()
        .map(|v| {
            judge(
                check,
                Reading {
                    subject: None,
                    source: source.clone(),
                    value: Ok(v.clone()),
                },
            )
        })
        .collect();
    let worst = findings
        .iter()
        .find(|f| f.status == Status::Warn)
        .or_else(|| findings.iter().find(|f| f.status == Status::Unknown))
        .unwrap_or(&findings[0]);
    Finding {
        current: Some(values.into_iter().collect::<Vec<_>>().join(", ")),
        ..worst.clone()
    }
}

fn judge(check: &Check, reading: Reading) -> Finding {
    let mut finding = Finding {
        id: check.id.to_string(),
        title: check.title.to_string(),
        subject: reading.subject,
        source: reading.source,
        current: None,
        recommended: check.recommended.to_string(),
        severity: Severity::Info,
        status: Status::Unknown,
        why: check.why.to_string(),
        note: None,
    };
    let raw = match reading.value {
        Ok(raw) => raw,
        Err(why) => {
            finding.note = Some(why);
            return finding;
        }
    };
    let picked = match check.pick {
        Pick::Whole => Some(raw.clone()),
        Pick::Bracketed => Some(active_choice(&raw)),
        Pick::Field(n) => raw.split_whitespace().nth(n).map(str::to_string),
    };
    finding.current = Some(match check.pick {
        Pick::Field(_) => raw.split_whitespace().collect::<Vec<_>>().join(" "),
        _ => picked.clone().unwrap_or_else(|| raw.clone()),
    });
    let verdict = picked.as_deref().and_then(|v| passes(check.rule, v));
    match verdict {
        Some(true) => (finding.status, finding.severity) = (Status::Pass, Severity::Ok),
        Some(false) => (finding.status, finding.severity) = (Status::Warn, check.severity),
        None => finding.note = Some(format!("cannot judge '{raw}'")),
    }
    finding
}

/// `None` when the value is not what the rule needs (not a number).
fn passes(rule: Rule, value: &str) -> Option<bool> {
    let number = || value.split_whitespace().next()?.parse::<u64>().ok();
    match rule {
        Rule::AtLeast(min) => Some(number()? >= min),
        Rule::AtMost(max) => Some(number()? <= max),
        Rule::OneOf(good) => Some(good.contains(&value)),
        Rule::Record => Some(true),
    }
}
