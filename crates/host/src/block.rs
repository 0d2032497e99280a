//! The block devices under a mount: [`resolve_source`] finds the kernel name of the
//! device a mount sits on (by major:minor, else by its /dev name), [`physical_disks`]
//! walks from it up partitions to their disk and down the slaves of dm and md devices
//! (LVM, RAID) to the physical disks, and [`device_info`] reads one disk's queue
//! settings from `/sys/class/block/<name>`.

use std::path::PathBuf;

use iolab_core::inventory::BlockDeviceInfo;

use crate::mountinfo::MountEntry;
use crate::root::{SysRoot, dir_names, link_name, noted, read_parsed, read_trimmed};

/// Stacks deeper than this (dm on md on dm ...) are cut off: a cycle in a broken tree.
const MAX_DEPTH: usize = 16;

fn class_block(root: &SysRoot, name: &str) -> PathBuf {
    root.sys_path("class/block").join(name)
}

/// The kernel name ("vda1", "dm-0", "md0") of the block device `mount` sits on, or
/// `None` when it is not on one (NFS, tmpfs, overlay). A mount that names a /dev device
/// which cannot be found adds a note.
pub(crate) fn resolve_source(
    root: &SysRoot,
    mount: &MountEntry,
    notes: &mut Vec<String>,
) -> Option<String> {
    if mount.major != 0 {
        let link = root.sys_path("dev/block").join(mount.device_number());
        match link_name(&link) {
            Ok(name) => return Some(name),
            Err(why) if !mount.source.starts_with("/dev/") => {
                notes.push(format!(
                    "block device of {} unknown: {why}",
                    mount.mount_point
                ));
                return None;
            }
            Err(_) => {}
        }
    }
    let rest = mount.source.strip_prefix("/dev/")?;
    let found = match rest.strip_prefix("mapper/") {
        Some(dm_name) => dm_by_name(root, dm_name),
        None if !rest.contains('/') && class_block(root, rest).exists() => Some(rest.to_string()),
        None => None,
    };
    if found.is_none() {
        notes.push(format!(
            "block device of {} unknown: {} ({}) not found under {}",
            mount.mount_point,
            mount.source,
            mount.device_number(),
            root.sys_path("class/block").display()
        ));
    }
    found
}

/// The dm-N device whose dm/name is `dm_name` (what /dev/mapper/<dm_name> points to).
fn dm_by_name(root: &SysRoot, dm_name: &str) -> Option<String> {
    let names = dir_names(&root.sys_path("class/block")).ok()?;
    names
        .into_iter()
        .filter(|n| n.starts_with("dm-"))
        .find(|n| read_trimmed(&class_block(root, n).join("dm/name")).as_deref() == Ok(dm_name))
}

/// The physical disks under `name`, in order, each once: a partition leads to its disk,
/// a dm or md device to its slaves, a disk to itself.
pub(crate) fn physical_disks(root: &SysRoot, name: &str, notes: &mut Vec<String>) -> Vec<String> {
    let mut disks = Vec::new();
    walk(root, name, 0, &mut disks, notes);
    disks
}

fn walk(
    root: &SysRoot,
    name: &str,
    depth: usize,
    disks: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        notes.push(format!(
            "block device stack under {name} deeper than {MAX_DEPTH}: cut off"
        ));
        return;
    }
    let dir = class_block(root, name);
    if dir.join("partition").exists() {
        match parent_disk(root, name) {
            Some(parent) => walk(root, &parent, depth + 1, disks, notes),
            None => notes.push(format!("disk holding partition {name} unknown")),
        }
        return;
    }
    let slaves = dir_names(&dir.join("slaves")).unwrap_or_default();
    if slaves.is_empty() {
        if !disks.iter().any(|d| d == name) {
            disks.push(name.to_string());
        }
        return;
    }
    for slave in slaves {
        walk(root, &slave, depth + 1, disks, notes);
    }
}

/// The disk a partition belongs to: sysfs nests a partition's directory in its disk's
/// (…/block/nvme0n1/nvme0n1p1), so it is the directory above the one the class link
/// points to; without the link, the disk whose directory holds one named `name`.
fn parent_disk(root: &SysRoot, name: &str) -> Option<String> {
    if let Ok(target) = std::fs::read_link(class_block(root, name)) {
        let parent = target.parent()?.file_name()?.to_string_lossy().into_owned();
        if parent != "block" {
            return Some(parent);
        }
    }
    dir_names(&root.sys_path("class/block"))
        .ok()?
        .into_iter()
        .find(|disk| disk != name && class_block(root, disk).join(name).is_dir())
}

/// What matters about one disk for I/O: model, size and its request queue settings.
pub(crate) fn device_info(root: &SysRoot, name: &str, notes: &mut Vec<String>) -> BlockDeviceInfo {
    let dir = class_block(root, name);
    let queue = dir.join("queue");
    let what = |attr: &str| format!("{name} {attr}");
    BlockDeviceInfo {
        name: name.to_string(),
        model: noted(
            notes,
            &what("model"),
            read_trimmed(&dir.join("device/model")),
        ),
        // sysfs counts size in 512-byte sectors whatever the device's block size.
        size_bytes: noted(notes, &what("size"), read_parsed::<u64>(&dir.join("size")))
            .map(|s| s * 512),
        rotational: noted(
            notes,
            &what("rotational"),
            read_parsed::<u8>(&queue.join("rotational")),
        )
        .map(|r| r != 0),
        scheduler: noted(
            notes,
            &what("scheduler"),
            read_trimmed(&queue.join("scheduler")).map(|s| active_choice(&s)),
        ),
        // The device's own queue depth where it has one (SCSI, SATA), else the
        // block layer's request queue (NVMe, virtio).
        queue_depth: read_parsed(&dir.join("device/queue_depth"))
            .ok()
            .or_else(|| {
                noted(
                    notes,
                    &what("nr_requests"),
                    read_parsed(&queue.join("nr_requests")),
                )
            }),
        read_ahead_kb: noted(
            notes,
            &what("read_ahead_kb"),
            read_parsed(&queue.join("read_ahead_kb")),
        ),
        logical_block_size: noted(
            notes,
            &what("logical_block_size"),
            read_parsed(&queue.join("logical_block_size")),
        ),
        physical_block_size: noted(
            notes,
            &what("physical_block_size"),
            read_parsed(&queue.join("physical_block_size")),
        ),
    }
}

/// The active entry of a sysfs choice list: "none [mq-deadline] kyber" -> "mq-deadline".
/// A list without brackets ("none") is its own single choice.
pub(crate) fn active_choice(list: &str) -> String {
    if let Some(start) = list.find('[')
        && let Some(len) = list[start + 1..].find(']')
    {
        return list[start + 1..start + 1 + len].to_string();
    }
    list.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mountinfo::MountEntry;
    use crate::testing::Fixture;

    const PCI: &str = "pci0000:00/0000:00:02.0/virtio1";

    fn mount(line: &str) -> MountEntry {
        MountEntry::parse(line).unwrap()
    }

    fn queue(
        scheduler: &'static str,
        rotational: &'static str,
    ) -> Vec<(&'static str, &'static str)> {
        vec![
            ("size", "209715200"),
            ("device/model", "SAMSUNG MZQL2"),
            ("queue/rotational", rotational),
            ("queue/scheduler", scheduler),
            ("queue/nr_requests", "1023"),
            ("queue/read_ahead_kb", "128"),
            ("queue/logical_block_size", "512"),
            ("queue/physical_block_size", "4096"),
        ]
    }

    #[test]
    fn through_a_partition_to_its_disk() {
        let fx = Fixture::new();
        fx.disk(PCI, "nvme0n1", "259:0", &queue("[none] mq-deadline", "0"));
        fx.partition(PCI, "nvme0n1", "nvme0n1p1", "259:1");
        let root = fx.root();
        let mut notes = Vec::new();
        let m = mount("40 27 259:1 / /scratch rw - xfs /dev/nvme0n1p1 rw");
        let source = resolve_source(&root, &m, &mut notes).unwrap();
        assert_eq!(source, "nvme0n1p1");
        assert_eq!(physical_disks(&root, &source, &mut notes), ["nvme0n1"]);
        let info = device_info(&root, "nvme0n1", &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(info.model.as_deref(), Some("SAMSUNG MZQL2"));
        assert_eq!(info.size_bytes, Some(209_715_200 * 512));
        assert_eq!(info.rotational, Some(false));
        assert_eq!(info.scheduler.as_deref(), Some("none"));
        assert_eq!(info.queue_depth, Some(1023));
        assert_eq!(info.read_ahead_kb, Some(128));
        // A SCSI disk's own queue depth wins over the request queue.
        let mut attrs = queue("[mq-deadline] none", "1");
        attrs.push(("device/queue_depth", "32"));
        fx.disk(PCI, "sda", "8:0", &attrs);
        assert_eq!(device_info(&root, "sda", &mut notes).queue_depth, Some(32));
        assert_eq!(info.logical_block_size, Some(512));
        assert_eq!(info.physical_block_size, Some(4096));
    }

    #[test]
    fn through_a_dm_holder_on_md_raid_to_the_disks() {
        let fx = Fixture::new();
        fx.disk("sas/host0", "sda", "8:0", &queue("[mq-deadline] none", "1"));
        fx.partition("sas/host0", "sda", "sda1", "8:1");
        fx.disk(
            "sas/host1",
            "sdb",
            "8:16",
            &queue("[mq-deadline] none", "1"),
        );
        fx.partition("sas/host1", "sdb", "sdb1", "8:17");
        fx.virtual_disk("md0", "9:0", &["sda1", "sdb1"], &[]);
        fx.virtual_disk("dm-0", "253:0", &["md0"], &[("dm/name", "vg-data lv")]);
        let root = fx.root();
        let mut notes = Vec::new();

        let by_number = mount(r"41 27 253:0 / /data rw - ext4 /dev/mapper/vg-data\040lv rw");
        let dm = resolve_source(&root, &by_number, &mut notes).unwrap();
        assert_eq!(dm, "dm-0");
        assert_eq!(physical_disks(&root, &dm, &mut notes), ["sda", "sdb"]);

        // btrfs and friends report an anonymous 0:N; the /dev/mapper name still leads there.
        let by_name = mount(r"41 27 0:44 / /data rw - btrfs /dev/mapper/vg-data\040lv rw");
        assert_eq!(
            resolve_source(&root, &by_name, &mut notes).as_deref(),
            Some("dm-0")
        );
        let by_dev = mount("41 27 0:44 / /data rw - btrfs /dev/sdb1 rw");
        assert_eq!(
            resolve_source(&root, &by_dev, &mut notes).as_deref(),
            Some("sdb1")
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            device_info(&root, "sda", &mut notes).scheduler.as_deref(),
            Some("mq-deadline")
        );
    }

    #[test]
    fn network_and_memory_file_systems_have_no_device_and_no_note() {
        let fx = Fixture::new();
        let root = fx.root();
        let mut notes = Vec::new();
        let nfs = mount("42 27 0:53 / /mnt/nfs rw - nfs4 nfs1:/export rw,vers=4.2");
        assert_eq!(resolve_source(&root, &nfs, &mut notes), None);
        let tmp = mount("25 24 0:23 / /dev/shm rw - tmpfs tmpfs rw");
        assert_eq!(resolve_source(&root, &tmp, &mut notes), None);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn missing_device_gives_none_and_a_note() {
        let fx = Fixture::new();
        fx.dir("sys/class/block");
        let root = fx.root();
        let mut notes = Vec::new();
        let m = mount("27 1 254:0 / / rw - ext4 /dev/vda rw");
        assert_eq!(resolve_source(&root, &m, &mut notes), None);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("/dev/vda"), "{notes:?}");

        notes.clear();
        let info = device_info(&root, "vda", &mut notes);
        assert_eq!(info.name, "vda");
        assert_eq!(info.scheduler, None);
        assert_eq!(info.rotational, None);
        assert_eq!(
            notes.len(),
            8,
            "one note per unreadable attribute: {notes:?}"
        );
    }

    #[test]
    fn partition_without_class_link_found_by_scanning() {
        let fx = Fixture::new();
        fx.dir("sys/class/block/vda/vda1");
        fx.file("sys/class/block/vda1/partition", "1");
        let mut notes = Vec::new();
        assert_eq!(physical_disks(&fx.root(), "vda1", &mut notes), ["vda"]);
    }

    #[test]
    fn active_choice_of_lists() {
        assert_eq!(active_choice("none [mq-deadline] kyber bfq"), "mq-deadline");
        assert_eq!(active_choice("[none] mq-deadline"), "none");
        assert_eq!(active_choice("none"), "none");
        assert_eq!(active_choice("always [madvise] never"), "madvise");
    }
}
