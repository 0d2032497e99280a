//! The device guard for an NBD export ([`inspect_export`]): libblkid needs a file, so the
//! export's first and last MiB are read through NBD into a sparse file of the export's
//! size (its middle a hole) and probed there by `wipefs --no-act`, as a local device is.
//! Every signature libblkid looks for sits in those ends (file systems, partition tables
//! and their backups, md, LVM, ZFS labels). Any non-zero byte read is data, too: an
//! export is written only when its ends read as zeros, or with --allow-destroy.

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::{DeviceCheck, Signature, probe_signatures};
use crate::error::BackendError;
use crate::libnbd::Export;

/// Bytes read at each end of the export.
pub const PROBED: u64 = 1 << 20;

/// Connects to `uri` and looks at it as [`crate::device::inspect_device`] looks at a
/// device: its size, the signatures at its ends, and the first non-zero byte there.
pub fn inspect_export(uri: &str) -> Result<DeviceCheck, BackendError> {
    let export = Export::connect(uri)?;
    let size = export.size();
    let head_len = PROBED.min(size);
    let tail_at = size.saturating_sub(PROBED).max(head_len);
    let mut head = vec![0u8; head_len as usize];
    let mut tail = vec![0u8; (size - tail_at) as usize];
    export.pread(&mut head, 0)?;
    export.pread(&mut tail, tail_at)?;
    let data_at = head
        .iter()
        .position(|&b| b != 0)
        .map(|i| i as u64)
        .or_else(|| {
            tail.iter()
                .position(|&b| b != 0)
                .map(|i| tail_at + i as u64)
        });
    let signatures = if data_at.is_some() {
        probe_ends(uri, size, &head, &tail, tail_at)?
    } else {
        // All zeros: nothing for libblkid to find.
        Vec::new()
    };
    Ok(DeviceCheck {
        path: PathBuf::from(uri),
        size,
        is_block_device: true,
        signatures,
        in_use: None,
        data_at,
        written_since_marked: false,
    })
}

/// The signatures libblkid finds in a sparse copy of the export's ends.
fn probe_ends(
    uri: &str,
    size: u64,
    head: &[u8],
    tail: &[u8],
    tail_at: u64,
) -> Result<Vec<Signature>, BackendError> {
    let failed = |e: std::io::Error| BackendError::Probe {
        path: PathBuf::from(uri),
        why: format!("cannot make a sparse copy of its ends to probe: {e}"),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let copy = std::env::temp_dir().join(format!("iolab-nbd-probe.{}.{nanos}", std::process::id()));
    // A new file (never one already there), removed once probed.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&copy)
        .map_err(failed)?;
    let filled = file
        .set_len(size)
        .and_then(|()| file.write_all_at(head, 0))
        .and_then(|()| file.write_all_at(tail, tail_at));
    drop(file);
    let found = filled
        .map_err(failed)
        .and_then(|()| probe_signatures(&copy));
    let _ = std::fs::remove_file(&copy);
    found.map_err(|e| match e {
        BackendError::Probe { why, .. } => BackendError::Probe {
            path: PathBuf::from(uri),
            why,
        },
        other => other,
    })
}
