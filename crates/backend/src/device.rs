//! Guarding block devices and image files before iolab writes to them: [`inspect_device`]
//! reports a device's size, every signature util-linux's libblkid finds anywhere on it
//! ([`probe_signatures`], through `wipefs --no-act`), whether it (or a partition of it)
//! is mounted, used as swap or held by LVM/RAID/a loop device, and whether an image file
//! holds data iolab did not write.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use iolab_core::units::ByteCount;

use crate::error::BackendError;
use crate::files::{DataFile, OpenSpec};

mod on_nbd;

/// What iolab found on a device it was asked to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCheck {
    pub path: PathBuf,
    pub size: u64,
    pub is_block_device: bool,
    /// Every file system, volume or partition-table signature util-linux's libblkid
    /// finds anywhere on it (the end included: md 0.90/1.0, backup GPT, ZFS labels).
    pub signatures: Vec<Signature>,
    /// Why the device is busy ("mounted at /home", "active swap", "held by dm-0",
    /// "backs /dev/loop3").
    pub in_use: Option<String>,
    /// A regular file only: where its first non-zero byte is, unless iolab wrote it.
    pub data_at: Option<u64>,
    /// A regular file iolab once marked as its image, written since (by an iolab run
    /// killed mid-write, or by anyone else): its data is guarded as any other's, and the
    /// refusal says what happened.
    pub written_since_marked: bool,
}

/// One signature libblkid reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// libblkid's name for it ("ext4", "linux_raid_member", "gpt", "zfs_member").
    pub kind: String,
    /// Byte offset of the signature on the device.
    pub offset: u64,
}

impl DeviceCheck {
    /// What on the device makes writing it destroy something, if anything: everything
    /// found, with where it was found, for the refusal message.
    /// (A device in use, [`DeviceCheck::in_use`], is refused apart from this.)
    pub fn holds(&self) -> Option<String> {
        let mut what = Vec::new();
        for s in &self.signatures {
            what.push(format!(
                "a {} signature at byte {} ({})",
                s.kind,
                s.offset,
                self.where_on_device(s.offset)
            ));
        }
        if let Some(at) = self.data_at {
            let why = if self.is_block_device {
                // Only an NBD export's data is looked at, at its ends.
                "iolab writes an NBD export only if its first and last MiB read as zeros"
            } else if self.written_since_marked {
                "iolab marked it as its image, but it has been written since: by an iolab run killed before it ended, or by someone else"
            } else {
                "iolab writes a regular file only if it is empty, all zeros or an image iolab wrote"
            };
            what.push(format!("data (a non-zero byte at offset {at}; {why})"));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }

    fn where_on_device(&self, offset: u64) -> String {
        let from_end = self.size.saturating_sub(offset);
        if offset < self.size / 2 {
            format!("{} from the start", ByteCount(offset))
        } else {
            format!("{} before the end", ByteCount(from_end))
        }
    }
}

/// The extended attribute iolab sets on a regular file it wrote as a device image, so a
/// later run may write it again without --allow-destroy. Its value is the file's size
/// and modification time when iolab last wrote it ("2 SIZE MTIME_NS"): once anyone else
/// writes the file, or changes its size, the mark no longer holds and its data is
/// looked at again.
const IMAGE_XATTR: &std::ffi::CStr = c"user.iolab.image";

/// Looks at `path` (a block device, or an image file standing in for one): its size,
/// whether it is busy, every signature libblkid finds on it and, for a regular file,
/// whether it holds any data iolab did not write.
/// An NBD URI is looked at through the export ([`on_nbd::inspect_export`]).
pub fn inspect_device(path: &Path) -> Result<DeviceCheck, BackendError> {
    if crate::libnbd::is_uri(path) {
        return on_nbd::inspect_export(&path.to_string_lossy());
    }
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
        loop_backing(path)
    };
    let file = DataFile::open(path, OpenSpec::default())?;
    let size = file.len()?;
    let signatures = probe_signatures(path)?;
    let marked = !is_block_device && is_marked_image(path);
    let data_at = if is_block_device || marked {
        None
    } else {
        first_data(path)?
    };
    let written_since_marked =
        !is_block_device && !marked && attribute::<64>(path, IMAGE_XATTR).is_some();
    Ok(DeviceCheck {
        path: path.to_path_buf(),
        size,
        is_block_device,
        signatures,
        in_use,
        data_at,
        written_since_marked,
    })
}

/// The mark's value for `path` as it is now: its size and modification time.
fn image_state(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).ok()?;
    let mtime_ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
    Some(format!("2 {} {mtime_ns}", m.len()))
}

/// Sets the extended attribute `name` of `path` to `value` (best effort).
fn set_attribute(path: &Path, name: &std::ffi::CStr, value: &[u8]) {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    // SAFETY: both strings are NUL-terminated and the value is a valid buffer of its length.
    unsafe {
        libc::setxattr(
            c.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        );
    }
}

/// The extended attribute `name` of `path`, if it is set and at most `N` bytes long.
fn attribute<const N: usize>(path: &Path, name: &std::ffi::CStr) -> Option<Vec<u8>> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    let mut value = [0u8; N];
    // SAFETY: both strings are NUL-terminated and `value` is a writable buffer of its length.
    let n = unsafe {
        libc::getxattr(
            c.as_ptr(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    Some(
        value
            .get(..usize::try_from(n).ok().filter(|&n| n > 0)?)?
            .to_vec(),
    )
}

/// Marks a regular file iolab has just written as one of its images, as it is now (best
/// effort: a file system without user xattrs only means the next run asks for
/// --allow-destroy). Call it after writing, never before: a mark on a file iolab did not
/// write would let a later run overwrite whatever is put there.
pub fn mark_as_image(path: &Path) {
    if let Some(state) = image_state(path) {
        set_attribute(path, IMAGE_XATTR, state.as_bytes());
    }
}

/// Whether `path` is an image iolab wrote (or made) and no one has written since.
pub fn is_marked_image(path: &Path) -> bool {
    let mark = attribute::<64>(path, IMAGE_XATTR);
    mark.is_some_and(|m| image_state(path).is_some_and(|now| now.as_bytes() == m))
}

const RECORD_XATTR: &std::ffi::CStr = c"user.iolab.record";

/// Records beside an image iolab has just written in full what it holds (`text`, the
/// engine's record), valid only while the image stays as it is now: anyone's later write
/// voids it, as it voids the image mark. Best effort, as the mark.
pub fn record_image(path: &Path, text: &str) {
    if let Some(state) = image_state(path) {
        set_attribute(path, RECORD_XATTR, format!("{state}\n{text}").as_bytes());
    }
}

/// What [`record_image`] recorded for `path`, if no one has written it since.
pub fn image_record(path: &Path) -> Option<String> {
    let value = attribute::<1024>(path, RECORD_XATTR)?;
    let (state, record) = std::str::from_utf8(&value).ok()?.split_once('\n')?;
    (image_state(path)? == state).then(|| record.to_string())
}

/// Every signature util-linux's libblkid finds on `path`, through `wipefs --no-act`
/// (it probes the whole device, end included, and never writes with --no-act).
pub fn probe_signatures(path: &Path) -> Result<Vec<Signature>, BackendError> {
    let failed = |why: String| BackendError::Probe {
        path: path.to_path_buf(),
        why,
    };
    let out = std::process::Command::new("wipefs")
        .args(["--no-act", "--json", "--"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            failed(format!(
                "cannot run wipefs ({e}); install util-linux, which probes signatures with libblkid"
            ))
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(failed(format!("wipefs failed: {}", err.trim())));
    }
    parse_wipefs(&String::from_utf8_lossy(&out.stdout)).map_err(failed)
}

/// Reads `wipefs --json`'s output: `{"signatures": [{"offset": "0x438", "type": "ext4"}]}`
/// (an empty output means nothing found).
fn parse_wipefs(text: &str) -> Result<Vec<Signature>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("unreadable wipefs output: {e}"))?;
    let Some(list) = value.get("signatures").and_then(|s| s.as_array()) else {
        return Err("wipefs output has no \"signatures\" list".into());
    };
    list.iter()
        .map(|s| {
            let kind = s.get("type").and_then(|t| t.as_str()).unwrap_or("unknown");
            let offset = s.get("offset").and_then(|o| o.as_str()).unwrap_or("");
            let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16)
                .map_err(|_| format!("wipefs reported an unreadable offset {offset:?}"))?;
            Ok(Signature {
                kind: kind.to_string(),
                offset,
            })
        })
        .collect()
}

/// The offset of the first non-zero byte of a regular file, skipping holes.
fn first_data(path: &Path) -> Result<Option<u64>, BackendError> {
    use std::os::unix::fs::FileExt;
    use std::os::unix::io::AsRawFd;
    let io = |source| BackendError::File {
        op: "reading",
        path: path.to_path_buf(),
        source,
    };
    let file = fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    while pos < size {
        // SAFETY: a plain lseek on a file descriptor we own.
        let data = unsafe { libc::lseek(file.as_raw_fd(), pos as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            // ENXIO: only a hole from here to the end.
            break;
        }
        pos = data as u64;
        let n = file.read_at(&mut buf, pos).map_err(io)?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|&b| b != 0) {
            return Ok(Some(pos + i as u64));
        }
        pos += n as u64;
    }
    Ok(None)
}

/// A loop device this image file backs, if any.
fn loop_backing(path: &Path) -> Option<String> {
    let entries = fs::read_dir("/sys/block").ok()?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        if let Ok(backing) = fs::read_to_string(e.path().join("loop/backing_file"))
            && Path::new(backing.trim()) == path
        {
            return Some(format!("backs /dev/{name}"));
        }
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

    #[test]
    fn reads_wipefs_output() {
        let text = r#"{
   "signatures": [
      {"device": "md.img", "offset": "0xffe000", "type": "linux_raid_member", "uuid": "x", "label": null},
      {"device": "md.img", "offset": "0x438", "type": "ext4", "uuid": null, "label": null}
   ]
}"#;
        assert_eq!(
            parse_wipefs(text).unwrap(),
            vec![
                Signature {
                    kind: "linux_raid_member".into(),
                    offset: 0xffe000
                },
                Signature {
                    kind: "ext4".into(),
                    offset: 0x438
                }
            ]
        );
        assert_eq!(parse_wipefs("").unwrap(), vec![]);
        assert_eq!(parse_wipefs("{\"signatures\": [\n\n]}").unwrap(), vec![]);
        assert!(parse_wipefs("garbage").unwrap_err().contains("unreadable"));
    }

    #[test]
    fn names_where_a_signature_sits() {
        let check = DeviceCheck {
            path: "/dev/x".into(),
            size: 16 << 20,
            is_block_device: true,
            signatures: vec![Signature {
                kind: "linux_raid_member".into(),
                offset: (16 << 20) - 8192,
            }],
            in_use: None,
            data_at: None,
            written_since_marked: false,
        };
        assert_eq!(
            check.holds().unwrap(),
            "a linux_raid_member signature at byte 16769024 (8KiB before the end)"
        );
    }

    #[test]
    fn an_image_with_data_is_found_and_a_sparse_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        let f = fs::File::create(&img).unwrap();
        f.set_len(8 << 20).unwrap();
        assert_eq!(first_data(&img).unwrap(), None);
        use std::os::unix::fs::FileExt;
        f.write_at(b"hello", 5 << 20).unwrap();
        assert_eq!(first_data(&img).unwrap(), Some(5 << 20));
        let c = inspect_device(&img).unwrap();
        assert_eq!(c.data_at, Some(5 << 20));
        assert!(!c.is_block_device);
        mark_as_image(&img);
        if is_marked_image(&img) {
            assert_eq!(inspect_device(&img).unwrap().data_at, None);
        }
    }

    /// An image's record holds while the image is as it was recorded, and no longer once
    /// anyone writes it (its time moves).
    #[test]
    fn an_image_record_is_voided_by_a_write() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let img = dir.path().join("disk.img");
        fs::write(&img, vec![7u8; 8192]).unwrap();
        assert_eq!(image_record(&img), None);
        record_image(&img, "{\"size\":8192}");
        let Some(text) = image_record(&img) else {
            eprintln!("skipped: {} keeps no user xattrs", dir.path().display());
            return;
        };
        assert_eq!(text, "{\"size\":8192}");
        std::thread::sleep(std::time::Duration::from_millis(10));
        fs::write(&img, vec![8u8; 8192]).unwrap();
        assert_eq!(image_record(&img), None);
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
