//! Guarding block devices before iolab writes to them: [`inspect_device`] reports a
//! device's size, any file system or volume signature on it ([`detect_signature`]) and
//! whether it (or a partition of it) is mounted, used as swap or held by LVM/RAID.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::BackendError;
use crate::files::{DataFile, OpenSpec};

/// What iolab found on a device it was asked to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCheck {
    pub path: PathBuf,
    pub size: u64,
    pub is_block_device: bool,
    /// The kind of data found at the start ("ext4 file system", "LVM2 physical volume").
    pub signature: Option<String>,
    /// Why the device is busy ("mounted at /home", "active swap", "held by dm-0").
    pub in_use: Option<String>,
}

/// Bytes read from the start of a device to look for signatures.
const PROBE_BYTES: usize = 256 * 1024;

/// Looks at `path` (a block device, or an image file standing in for one).
pub fn inspect_device(path: &Path) -> Result<DeviceCheck, BackendError> {
    let meta = fs::metadata(path).map_err(|source| BackendError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    // The device itself (/dev/disk/by-id/... names are links): every later open refuses
    // to follow a link, so a link planted where iolab writes cannot redirect it.
    let canonical = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let path = canonical.as_path();
    let is_block_device = meta.file_type().is_block_device();
    // Whether the device is busy is known without opening it; check first so a device we
    // may not even open is still reported as mounted.
    let in_use = if is_block_device {
        device_in_use(path, meta.rdev())
    } else {
        None
    };
    let file = DataFile::open(path, OpenSpec::default())?;
    let size = file.len()?;
    let mut head = vec![0u8; (size as usize).min(PROBE_BYTES)];
    if !head.is_empty() {
        file.read_exact_at(&mut head, 0)?;
    }
    let signature = detect_signature(&head).map(str::to_string);
    Ok(DeviceCheck {
        path: path.to_path_buf(),
        size,
        is_block_device,
        signature,
        in_use,
    })
}

fn at(head: &[u8], offset: usize, magic: &[u8]) -> bool {
    head.len() >= offset + magic.len() && &head[offset..offset + magic.len()] == magic
}

/// Names the file system, volume manager or partition table whose signature starts
/// `head` (the first bytes of a device), if any.
pub fn detect_signature(head: &[u8]) -> Option<&'static str> {
    const CHECKS: &[(usize, &[u8], &str)] = &[
        (0, b"XFSB", "xfs file system"),
        (0x438, &[0x53, 0xEF], "ext2/3/4 file system"),
        (0x10040, b"_BHRfS_M", "btrfs file system"),
        (0, b"LUKS\xba\xbe", "LUKS encrypted volume"),
        (0, b"bluestore block device", "Ceph BlueStore device"),
        (0, b"hsqs", "squashfs file system"),
        (0x400, &[0x10, 0x20, 0xF5, 0xF2], "f2fs file system"),
        (3, b"NTFS    ", "NTFS file system"),
        (0x52, b"FAT32", "FAT32 file system"),
        (0x36, b"FAT1", "FAT file system"),
        (0x8001, b"CD001", "ISO 9660 file system"),
        (0, &[0xFC, 0x4E, 0x2B, 0xA9], "Linux RAID (md) member"),
        (4096, &[0xFC, 0x4E, 0x2B, 0xA9], "Linux RAID (md) member"),
        (
            4096 + 24,
            &[0xC6, 0x85, 0x73, 0xF6, 0x4E, 0x1A, 0x45, 0xCA],
            "bcache device",
        ),
        (128 * 1024, &[0x0C, 0xB1, 0xBA, 0x00], "ZFS pool member"),
        (512, b"EFI PART", "GPT partition table"),
    ];
    for (offset, magic, name) in CHECKS {
        if at(head, *offset, magic) {
            return Some(name);
        }
    }
    for page in [4096usize, 8192, 16384, 65536] {
        if at(head, page - 10, b"SWAPSPACE2") || at(head, page - 10, b"SWAP-SPACE") {
            return Some("swap area");
        }
    }
    for sector in 0..4 {
        if at(head, sector * 512, b"LABELONE") {
            return Some("LVM2 physical volume");
        }
    }
    if at(head, 510, &[0x55, 0xAA]) {
        return Some("DOS partition table or boot sector");
    }
    None
}

/// Why a block device (major:minor `rdev`) is busy, if it is: it or one of its
/// partitions is mounted, is active swap, or is held by device mapper / md.
fn device_in_use(path: &Path, rdev: u64) -> Option<String> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let mut devs = vec![(major, minor, sys.clone())];
    // Partitions of a whole disk are subdirectories that have their own "partition" file.
    if let Ok(entries) = fs::read_dir(&sys) {
        for e in entries.flatten() {
            let p = e.path();
            if p.join("partition").exists()
                && let Ok(dev) = fs::read_to_string(p.join("dev"))
                && let Some((a, b)) = dev.trim().split_once(':')
                && let (Ok(a), Ok(b)) = (a.parse(), b.parse())
            {
                devs.push((a, b, p));
            }
        }
    }
    if let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") {
        for line in mountinfo.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() < 5 {
                continue;
            }
            if let Some((a, b)) = fields[2].split_once(':')
                && let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>())
                && devs.iter().any(|(ma, mi, _)| *ma == a && *mi == b)
            {
                return Some(format!("mounted at {}", fields[4].replace("\\040", " ")));
            }
        }
    }
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        let canon = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        for line in swaps.lines().skip(1) {
            if let Some(dev) = line.split_whitespace().next()
                && fs::canonicalize(dev).ok().as_deref() == Some(canon.as_path())
            {
                return Some("active swap".to_string());
            }
        }
    }
    for (_, _, dir) in &devs {
        if let Ok(holders) = fs::read_dir(dir.join("holders")) {
            let names: Vec<String> = holders
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !names.is_empty() {
                return Some(format!("held by {}", names.join(", ")));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(offset: usize, magic: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; PROBE_BYTES];
        v[offset..offset + magic.len()].copy_from_slice(magic);
        v
    }

    #[test]
    fn recognises_common_signatures() {
        assert_eq!(
            detect_signature(&with(0x438, &[0x53, 0xEF])),
            Some("ext2/3/4 file system")
        );
        assert_eq!(detect_signature(&with(0, b"XFSB")), Some("xfs file system"));
        assert_eq!(
            detect_signature(&with(0x10040, b"_BHRfS_M")),
            Some("btrfs file system")
        );
        assert_eq!(
            detect_signature(&with(4086, b"SWAPSPACE2")),
            Some("swap area")
        );
        assert_eq!(
            detect_signature(&with(512, b"LABELONE")),
            Some("LVM2 physical volume")
        );
        assert_eq!(
            detect_signature(&with(512, b"EFI PART")),
            Some("GPT partition table")
        );
        assert_eq!(
            detect_signature(&with(131072, &[0x0C, 0xB1, 0xBA, 0x00])),
            Some("ZFS pool member")
        );
    }

    #[test]
    fn zeros_and_random_data_carry_no_signature() {
        assert_eq!(detect_signature(&vec![0u8; PROBE_BYTES]), None);
        let mut r = vec![0u8; PROBE_BYTES];
        iolab_core::rng::Rng::new(9).fill(&mut r);
        // Random data could match a 2-byte magic by chance; this seed does not.
        assert_eq!(detect_signature(&r), None);
        assert_eq!(detect_signature(&[]), None);
    }

    #[test]
    fn inspects_an_image_file() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        fs::write(&img, with(0x438, &[0x53, 0xEF])).unwrap();
        let c = inspect_device(&img).unwrap();
        assert_eq!(c.size, PROBE_BYTES as u64);
        assert!(!c.is_block_device);
        assert_eq!(c.signature.as_deref(), Some("ext2/3/4 file system"));
        assert_eq!(c.in_use, None);
    }

    #[test]
    fn the_root_disk_is_in_use() {
        // Skips where no block device backs / (containers on overlay, tmpfs roots).
        let Ok(mountinfo) = fs::read_to_string("/proc/self/mountinfo") else {
            return;
        };
        let Some(line) = mountinfo.lines().find(|l| l.split(' ').nth(4) == Some("/")) else {
            return;
        };
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|r| r.split(' ').nth(1))
            .unwrap_or("");
        if !source.starts_with("/dev/") || !Path::new(source).exists() {
            eprintln!("skipped: / is not on a block device here ({source})");
            return;
        }
        let rdev = fs::metadata(source).unwrap().rdev();
        let why = device_in_use(Path::new(source), rdev).unwrap_or_default();
        assert!(why.starts_with("mounted at"), "{source}: {why:?}");
    }
}
