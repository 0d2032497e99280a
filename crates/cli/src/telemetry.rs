//! [`TelemetryProbe`]: samples the block devices under the target and the CPU once a
//! second while each phase runs (rank 0), so reports can show whether the device or the
//! client was the limit.

use std::sync::Mutex;

use iolab_core::inventory::Inventory;
use iolab_core::telemetry::Telemetry;
use iolab_core::units::Nanos;
use iolab_engine::PhaseProbe;
use iolab_host::{Sampler, SysRoot};

pub struct TelemetryProbe {
    host: String,
    devices: Vec<String>,
    sampler: Mutex<Option<Sampler>>,
}

impl TelemetryProbe {
    /// Watches the devices the inventory found under the target (and a device target).
    pub fn new(inventory: Option<&Inventory>, device: Option<&std::path::Path>) -> Self {
        let mut devices: Vec<String> = inventory
            .and_then(|i| i.target.as_ref())
            .map(|t| t.block_devices.iter().map(|d| d.name.clone()).collect())
            .unwrap_or_default();
        if let Some(name) = device
            .and_then(|d| std::fs::canonicalize(d).ok())
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        {
            devices.push(name);
        }
        devices.sort();
        devices.dedup();
        TelemetryProbe {
            host: inventory.map(|i| i.hostname.clone()).unwrap_or_default(),
            devices,
            sampler: Mutex::new(None),
        }
    }

    /// Watches the devices under every one of `paths` (`iolab targets`: each target may
    /// sit on its own disks), besides those of the inventory's target.
    pub fn for_paths(inventory: Option<&Inventory>, paths: &[&std::path::Path]) -> Self {
        let mut probe = TelemetryProbe::new(inventory, None);
        let root = SysRoot::live();
        for path in paths {
            let device = std::fs::metadata(path)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()));
            if device {
                if let Some(name) = std::fs::canonicalize(path)
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                {
                    probe.devices.push(name);
                }
                continue;
            }
            let mut notes = Vec::new();
            let info = iolab_host::inventory::target_info(&root, path, &mut notes);
            probe
                .devices
                .extend(info.block_devices.into_iter().map(|d| d.name));
        }
        probe.devices.sort();
        probe.devices.dedup();
        probe
    }
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
