//! [`TelemetryProbe`]: samples the block devices under the target and the CPU once a
//! second while each phase runs (rank 0), so reports can show whether the device or the
//! client was the limit. [`DiskProbe`]: adds up what the devices did over the phases'
//! timed parts (host's `DiskWatch`; fio's `disk_util`) beside another probe.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Mutex;

use iolab_core::inventory::Inventory;
use iolab_core::telemetry::Telemetry;
use iolab_core::units::Nanos;
use iolab_engine::PhaseProbe;
use iolab_host::telemetry::{DiskTotals, DiskWatch};
use iolab_host::{Sampler, SysRoot};

pub struct TelemetryProbe {
    host: String,
    devices: Vec<String>,
    sampler: Mutex<Option<Sampler>>,
}

impl TelemetryProbe {
    /// Watches the devices the inventory found under the target (and a device target).
    pub fn new(inventory: Option<&Inventory>, device: Option<&Path>) -> Self {
        TelemetryProbe::watching(
            inventory,
            device.and_then(device_name).into_iter().collect(),
        )
    }

    /// Watches the devices under every one of `paths` (`iolab targets`: each target may
    /// sit on its own disks; a path may be a device itself), besides those of the
    /// inventory's target.
    pub fn for_paths(inventory: Option<&Inventory>, paths: &[&Path]) -> Self {
        TelemetryProbe::watching(inventory, devices_under(paths))
    }

    fn watching(inventory: Option<&Inventory>, mut devices: Vec<String>) -> Self {
        devices.extend(
            inventory
                .and_then(|i| i.target.as_ref())
                .into_iter()
                .flat_map(|t| t.block_devices.iter().map(|d| d.name.clone())),
        );
        devices.sort();
        devices.dedup();
        TelemetryProbe {
            host: inventory.map(|i| i.hostname.clone()).unwrap_or_default(),
            devices,
            sampler: Mutex::new(None),
        }
    }
}

/// The block devices under `paths`: a device itself, or the disks under the file system
/// that holds a path.
pub fn devices_under(paths: &[&Path]) -> Vec<String> {
    let root = SysRoot::live();
    let mut devices = Vec::new();
    for path in paths {
        let is_device = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device());
        if is_device {
            devices.extend(device_name(path));
        } else {
            let info = iolab_host::inventory::target_info(&root, path, &mut Vec::new());
            devices.extend(info.block_devices.into_iter().map(|d| d.name));
        }
    }
    devices.sort();
    devices.dedup();
    devices
}

/// The kernel's name of a block device given by any path to it ("/dev/disk/by-id/..."
/// gives "sdb").
fn device_name(path: &Path) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    Some(real.file_name()?.to_string_lossy().into_owned())
}

impl PhaseProbe for TelemetryProbe {
    fn start(&self) {
        let s = Sampler::start(&SysRoot::live(), &self.host, &self.devices, Nanos::SECOND);
        *self.sampler.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }

    fn stop(&self) -> Option<Telemetry> {
        let s = self
            .sampler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()?;
        Some(s.stop())
    }
}

/// Reads the devices' counters when a phase's timed part starts and stops, into totals
/// shared by the run's phases, and hands on to `inner`.
pub struct DiskProbe<'a> {
    inner: Option<&'a dyn PhaseProbe>,
    watch: DiskWatch<'a>,
}

impl<'a> DiskProbe<'a> {
    pub fn new(
        inner: Option<&'a dyn PhaseProbe>,
        devices: Vec<String>,
        totals: &'a Mutex<DiskTotals>,
    ) -> Self {
        DiskProbe {
            inner,
            watch: DiskWatch::new(SysRoot::live(), devices, totals),
        }
    }
}

impl PhaseProbe for DiskProbe<'_> {
    fn start(&self) {
        self.watch.start();
        if let Some(p) = self.inner {
            p.start();
        }
    }

    fn stop(&self) -> Option<Telemetry> {
        let telemetry = self.inner.and_then(|p| p.stop());
        self.watch.stop();
        telemetry
    }
}
