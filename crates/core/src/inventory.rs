//! The machine under test, as recorded with every run: [`Inventory`] with its CPU,
//! memory, OS, target file system ([`TargetInfo`]), block devices ([`BlockDeviceInfo`])
//! and network interfaces ([`NetInterfaceInfo`]). Anything that could not be read is
//! `None` (shown as "unknown"), never an error. Collected by the `iolab-host` crate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inventory {
    pub hostname: String,
    pub collected_at_ms: i64,
    pub os: Option<String>,
    pub kernel: Option<String>,
    pub cpu: CpuInfo,
    pub memory_bytes: Option<u64>,
    /// /sys/devices/system/cpu/vulnerabilities: name -> status line.
    pub mitigations: BTreeMap<String, String>,
    pub target: Option<TargetInfo>,
    pub network: Vec<NetInterfaceInfo>,
    /// What could not be read, and why ("block devices: /sys not mounted").
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuInfo {
    pub model: Option<String>,
    pub sockets: Option<u32>,
    /// Physical cores over all sockets.
    pub cores: Option<u32>,
    /// Logical CPUs (hardware threads) online.
    pub threads: Option<u32>,
    pub numa_nodes: Option<u32>,
    /// cpufreq scaling governor of cpu0.
    pub governor: Option<String>,
}

/// The file system a target directory lives on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetInfo {
    pub path: String,
    pub mount_point: Option<String>,
    pub fs_type: Option<String>,
    /// What is mounted: a device (/dev/vda1) or a server export (nfs1:/export).
    pub source: Option<String>,
    /// The mount's device number "major:minor" from mountinfo (0:N for NFS and other
    /// file systems without a block device; names the NFS mount's /sys/class/bdi entry).
    pub device_number: Option<String>,
    /// Kernel name of the block device mounted ("nvme0n1p1", "dm-0"); `block_devices`
    /// lists the physical disks under it.
    pub source_device: Option<String>,
    /// Per-mount and file system options merged, secrets redacted.
    pub mount_options: Vec<String>,
    /// Options of interest parsed out of mount_options (rsize, wsize, nconnect, ...).
    pub key_options: BTreeMap<String, String>,
    pub capacity_bytes: Option<u64>,
    /// Space available to unprivileged users (df's "Available").
    pub free_bytes: Option<u64>,
    /// The physical disks under the mount (partitions, LVM and RAID walked through).
    pub block_devices: Vec<BlockDeviceInfo>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlockDeviceInfo {
    /// Kernel name, as in /sys/class/block and /proc/diskstats.
    pub name: String,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    /// The active I/O scheduler (the `[bracketed]` entry of queue/scheduler).
    pub scheduler: Option<String>,
    /// device/queue_depth (SCSI, SATA), else queue/nr_requests (NVMe, virtio).
    pub queue_depth: Option<u32>,
    pub read_ahead_kb: Option<u32>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetInterfaceInfo {
    pub name: String,
    /// Link speed; unknown when the link is down or virtual (sysfs reads -1 or fails).
    pub speed_mbps: Option<u64>,
    pub mtu: Option<u32>,
    pub state: Option<String>,
    /// Kernel driver; `None` for virtual interfaces (bridges, veth, bonds).
    pub driver: Option<String>,
    /// "address/prefix", IPv4 then IPv6 (link-local left out).
    pub addresses: Vec<String>,
}
