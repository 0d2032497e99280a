//! What `iolab pts` reads of the device for its report: the kernel's write cache setting
//! and the inventory (sysfs for a block device, the file system under an image file).

use std::path::Path;

use iolab_core::units::ByteCount;

/// The kernel's name of a block device path (/dev/loop3 -> loop3).
fn kernel_name(device: &Path) -> Option<String> {
    let real = std::fs::canonicalize(device).ok()?;
    real.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn sys(name: &str, rel: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/block/{name}/{rel}"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub(super) fn write_cache(device: &Path) -> Option<String> {
    sys(&kernel_name(device)?, "queue/write_cache")
}

/// The device's inventory (sysfs), or the image file's file system.
pub(super) fn inventory(device: &Path, block: bool) -> Vec<(String, String)> {
    let mut rows = vec![("path".to_string(), device.display().to_string())];
    if iolab_backend::nbd::is_uri(device) {
        rows.push(("kind".into(), "NBD export (through libnbd)".into()));
        return rows;
    }
    if block && let Some(name) = kernel_name(device) {
        rows.push(("kernel name".into(), name.clone()));
        for (label, rel) in [
            ("model", "device/model"),
            ("serial", "device/serial"),
            ("firmware", "device/firmware_rev"),
            ("vendor", "device/vendor"),
            ("backing file", "loop/backing_file"),
            ("logical block size", "queue/logical_block_size"),
            ("physical block size", "queue/physical_block_size"),
            ("rotational", "queue/rotational"),
            ("discard granularity", "queue/discard_granularity"),
            ("discard max bytes", "queue/discard_max_bytes"),
            ("write cache", "queue/write_cache"),
            ("scheduler", "queue/scheduler"),
        ] {
            if let Some(v) = sys(&name, rel) {
                rows.push((label.into(), v));
            }
        }
        if let Some(sectors) = sys(&name, "size").and_then(|s| s.parse::<u64>().ok()) {
            rows.push(("capacity".into(), ByteCount(sectors * 512).human()));
        }
    } else {
        let mut notes = Vec::new();
        let t = iolab_host::inventory::target_info(
            &iolab_host::SysRoot::live(),
            device.parent().unwrap_or(Path::new("/")),
            &mut notes,
        );
        rows.push(("kind".into(), "image file".into()));
        if let (Some(fs), Some(m)) = (t.fs_type, t.mount_point) {
            rows.push(("file system".into(), format!("{fs} at {m}")));
        }
        for d in t.block_devices {
            rows.push((
                "under it".into(),
                format!("{} {}", d.name, d.model.unwrap_or_default())
                    .trim()
                    .to_string(),
            ));
        }
    }
    rows
}
