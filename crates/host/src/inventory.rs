//! Collects the [`Inventory`] of the machine under test: [`collect`] gathers host, OS,
//! kernel, CPU, memory, mitigations and NICs, and [`target_info`] describes the file
//! system a target path lives on (mount, options, capacity, physical disks). Nothing
//! here fails: what cannot be read is `None` plus a line in `Inventory::notes`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use iolab_core::inventory::{Inventory, TargetInfo};

use crate::block::{device_info, physical_disks, resolve_source};
use crate::cpu::cpu_info;
use crate::mount_options::{key_options, redact};
use crate::mountinfo::{self, find_mount};
use crate::net::interfaces;
use crate::root::{SysRoot, dir_names, noted, read_text, read_trimmed};

/// Describes this machine and, given a target, the storage under it.
pub fn collect(root: &SysRoot, target: Option<&Path>) -> Inventory {
    let mut notes = Vec::new();
    let hostname = hostname(root, &mut notes);
    let os = os_name(root, &mut notes);
    let kernel = kernel_release(root, &mut notes);
    let cpu = cpu_info(root, &mut notes);
    let memory_bytes = memory_total(root, &mut notes);
    let mitigations = mitigations(root, &mut notes);
    let target = target.map(|t| target_info(root, t, &mut notes));
    let network = interfaces(root, &mut notes);
    Inventory {
        hostname,
        collected_at_ms: iolab_core::civil::now_ms(),
        os,
        kernel,
        cpu,
        memory_bytes,
        mitigations,
        target,
        network,
        notes,
    }
}

/// The mount `target` lives on and the physical disks under it. `target` need not exist
/// yet (a run creates its directory): its nearest existing ancestor stands in.
pub fn target_info(root: &SysRoot, target: &Path, notes: &mut Vec<String>) -> TargetInfo {
    let path = absolute(target);
    let mut info = TargetInfo {
        path: path.display().to_string(),
        ..TargetInfo::default()
    };
    let table_path = root.proc_path("self/mountinfo");
    let Some(table) = noted(notes, "target file system", read_text(&table_path)) else {
        return info;
    };
    let mounts = mountinfo::parse(&table);
    let Some(mount) = find_mount(&mounts, &path) else {
        notes.push(format!(
            "target file system unknown: no mount in {} holds {}",
            table_path.display(),
            path.display()
        ));
        return info;
    };
    let options = mount.options();
    info.mount_point = Some(mount.mount_point.clone());
    info.fs_type = Some(mount.fs_type.clone());
    info.source = Some(mount.source.clone());
    info.device_number = Some(mount.device_number());
    info.key_options = key_options(&mount.fs_type, &mount.source, &options);
    info.mount_options = redact(options);
    (info.capacity_bytes, info.free_bytes) = capacity(&path, &mount.mount_point, notes);
    info.source_device = resolve_source(root, mount, notes);
    if let Some(device) = &info.source_device {
        info.block_devices = physical_disks(root, device, notes)
            .iter()
            .map(|disk| device_info(root, disk, notes))
            .collect();
    }
    info
}

/// Size and free space (df's "Available") of the file system holding `path`, measured
/// at its nearest existing ancestor as long as that is still inside the mount.
fn capacity(path: &Path, mount_point: &str, notes: &mut Vec<String>) -> (Option<u64>, Option<u64>) {
    let existing = path.ancestors().find(|p| p.exists());
    let Some(existing) = existing.filter(|p| p.starts_with(mount_point)) else {
        notes.push(format!(
            "target capacity unknown: nothing of {} exists under {mount_point}",
            path.display()
        ));
        return (None, None);
    };
    match rustix::fs::statvfs(existing) {
        Ok(st) => (
            Some(st.f_blocks.saturating_mul(st.f_frsize)),
            Some(st.f_bavail.saturating_mul(st.f_frsize)),
        ),
        Err(e) => {
            notes.push(format!(
                "target capacity unknown: statvfs {}: {e}",
                existing.display()
            ));
            (None, None)
        }
    }
}

/// `target` made absolute, with the symlinks of its existing part resolved and `.`/`..`
/// of the rest folded, so it compares with mountinfo's mount points.
fn absolute(target: &Path) -> PathBuf {
    let joined = if target.is_absolute() {
        target.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(target)
    };
    // Component by component, so a `..` applies to where a symlink really leads.
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::Normal(name) => {
                out.push(name);
                if let Ok(real) = out.canonicalize() {
                    out = real;
                }
            }
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn hostname(root: &SysRoot, notes: &mut Vec<String>) -> String {
    let from_proc = read_trimmed(&root.proc_path("sys/kernel/hostname"));
    match from_proc {
        Ok(name) => name,
        Err(_) if root.is_live() => rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned(),
        Err(why) => {
            notes.push(format!("hostname unknown: {why}"));
            String::new()
        }
    }
}

fn kernel_release(root: &SysRoot, notes: &mut Vec<String>) -> Option<String> {
    match read_trimmed(&root.proc_path("sys/kernel/osrelease")) {
        Ok(release) => Some(release),
        Err(_) if root.is_live() => Some(
            rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
        ),
        Err(why) => noted(notes, "kernel", Err(why)),
    }
}

/// PRETTY_NAME from os-release ("Debian GNU/Linux 12 (bookworm)").
fn os_name(root: &SysRoot, notes: &mut Vec<String>) -> Option<String> {
    let path = root.etc_path("os-release");
    let text = noted(notes, "OS", read_text(&path))?;
    let pretty = text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("PRETTY_NAME=")?;
        Some(value.trim_matches(|c| c == '"' || c == '\'').to_string())
    });
    if pretty.is_none() {
        notes.push(format!("OS unknown: no PRETTY_NAME in {}", path.display()));
    }
    pretty
}

/// MemTotal from /proc/meminfo, in bytes.
fn memory_total(root: &SysRoot, notes: &mut Vec<String>) -> Option<u64> {
    let path = root.proc_path("meminfo");
    let text = noted(notes, "memory", read_text(&path))?;
    let kib = text.lines().find_map(|line| {
        let rest = line.strip_prefix("MemTotal:")?;
        rest.split_whitespace().next()?.parse::<u64>().ok()
    });
    if kib.is_none() {
        notes.push(format!("memory unknown: no MemTotal in {}", path.display()));
    }
    kib.map(|k| k * 1024)
}

/// /sys/devices/system/cpu/vulnerabilities: name -> status line.
fn mitigations(root: &SysRoot, notes: &mut Vec<String>) -> BTreeMap<String, String> {
    let dir = root.sys_path("devices/system/cpu/vulnerabilities");
    let mut out = BTreeMap::new();
    for name in noted(notes, "CPU vulnerability mitigations", dir_names(&dir)).unwrap_or_default() {
        if let Some(status) = noted(
            notes,
            &format!("mitigation {name}"),
            read_trimmed(&dir.join(&name)),
        ) {
            out.insert(name, status);
        }
    }
    out
}

#[cfg(test)]
#[path = "inventory_tests.rs"]
mod tests;
