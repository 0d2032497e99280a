//! /proc/self/mountinfo: [`MountEntry`] is one mount (ids, device number, mount point,
//! file system type, source, per-mount and super options), [`parse`] reads the table
//! (undoing the kernel's octal escapes such as `\040` for a space) and [`find_mount`]
//! picks the mount a path lives on by the longest matching mount point.

use std::path::Path;

/// One line of mountinfo: `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    pub mount_id: u32,
    pub parent_id: u32,
    pub major: u32,
    pub minor: u32,
    /// The directory of the file system that is mounted here (bind mounts: not "/").
    pub root: String,
    pub mount_point: String,
    /// Per-mount options (rw, noatime, ...).
    pub mount_options: Vec<String>,
    pub fs_type: String,
    /// A device (/dev/vda1), a server export (nfs1:/export) or a placeholder (tmpfs).
    pub source: String,
    /// Options of the file system itself (rsize, wsize, ... for NFS).
    pub super_options: Vec<String>,
}

impl MountEntry {
    /// Parses one line; `None` when it is not a mountinfo line.
    pub fn parse(line: &str) -> Option<MountEntry> {
        let mut fields = line.split_ascii_whitespace();
        let mount_id = fields.next()?.parse().ok()?;
        let parent_id = fields.next()?.parse().ok()?;
        let (major, minor) = fields.next()?.split_once(':')?;
        let root = unescape(fields.next()?);
        let mount_point = unescape(fields.next()?);
        let mount_options = split_options(fields.next()?);
        // Optional fields (shared:N, master:N, ...) run up to a lone "-".
        for field in fields.by_ref() {
            if field == "-" {
                break;
            }
        }
        let fs_type = unescape(fields.next()?);
        let source = unescape(fields.next()?);
        let super_options = fields.next().map(split_options).unwrap_or_default();
        Some(MountEntry {
            mount_id,
            parent_id,
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
            root,
            mount_point,
            mount_options,
            fs_type,
            source,
            super_options,
        })
    }

    /// "major:minor", as /sys/dev/block and /sys/class/bdi name devices.
    pub fn device_number(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }

    /// Per-mount options followed by the super options not already among them.
    pub fn options(&self) -> Vec<String> {
        let mut merged = self.mount_options.clone();
        for option in &self.super_options {
            if !merged.contains(option) {
                merged.push(option.clone());
            }
        }
        merged
    }
}

fn split_options(field: &str) -> Vec<String> {
    field
        .split(',')
        .filter(|o| !o.is_empty())
        .map(unescape)
        .collect()
}

/// All mounts in the table; lines that do not parse are skipped.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines().filter_map(MountEntry::parse).collect()
}

/// Undoes the kernel's escaping of space, tab, newline and backslash as `\ooo` octal.
pub fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && is_octal_triplet(&bytes[i + 1..]) {
            let value = (bytes[i + 1] - b'0') as u32 * 64
                + (bytes[i + 2] - b'0') as u32 * 8
                + (bytes[i + 3] - b'0') as u32;
            if let Ok(byte) = u8::try_from(value) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_octal_triplet(rest: &[u8]) -> bool {
    rest.len() >= 3 && rest[..3].iter().all(|b| (b'0'..=b'7').contains(b))
}

/// The mount `path` (absolute, symlinks resolved) lives on: the entry whose mount point
/// is the longest whole-component prefix of it; of equal ones the last, which is the
/// one on top.
pub fn find_mount<'a>(mounts: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    let mut best: Option<(&MountEntry, usize)> = None;
    for mount in mounts {
        let point = Path::new(&mount.mount_point);
        if path.starts_with(point) {
            let depth = point.components().count();
            if best.is_none_or(|(_, d)| depth >= d) {
                best = Some((mount, depth));
            }
        }
    }
    best.map(|(m, _)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = include_str!("../tests/fixtures/mountinfo");

    #[test]
    fn parses_fields_and_optional_tags() {
        let line = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 - ext3 /dev/root rw,errors=continue";
        let m = MountEntry::parse(line).unwrap();
        assert_eq!((m.mount_id, m.parent_id, m.major, m.minor), (36, 35, 98, 0));
        assert_eq!(m.root, "/mnt1");
        assert_eq!(m.mount_point, "/mnt2");
        assert_eq!(m.mount_options, ["rw", "noatime"]);
        assert_eq!(m.fs_type, "ext3");
        assert_eq!(m.source, "/dev/root");
        assert_eq!(m.super_options, ["rw", "errors=continue"]);
        assert_eq!(m.options(), ["rw", "noatime", "errors=continue"]);
        assert_eq!(m.device_number(), "98:0");
    }

    #[test]
    fn no_optional_fields_and_garbage_lines() {
        let m = MountEntry::parse("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard").unwrap();
        assert_eq!(m.fs_type, "ext4");
        assert!(MountEntry::parse("").is_none());
        assert!(MountEntry::parse("not a mountinfo line").is_none());
        assert!(
            MountEntry::parse("1 2 3:4 / /x rw shared:1").is_none(),
            "no separator"
        );
    }

    #[test]
    fn unescapes_octal_sequences() {
        assert_eq!(unescape(r"/mnt/my\040data"), "/mnt/my data");
        assert_eq!(unescape(r"a\011b\012c\134d"), "a\tb\nc\\d");
        assert_eq!(unescape(r"trailing\04"), r"trailing\04");
        assert_eq!(unescape(r"not\999octal"), r"not\999octal");
        assert_eq!(unescape(r"caf\303\251"), "café");
    }

    #[test]
    fn longest_prefix_wins_by_whole_components() {
        let mounts = parse(TABLE);
        let at = |p: &str| find_mount(&mounts, Path::new(p)).map(|m| m.mount_point.as_str());
        assert_eq!(at("/"), Some("/"));
        assert_eq!(at("/home/user"), Some("/"));
        assert_eq!(at("/scratch"), Some("/scratch"));
        assert_eq!(at("/scratch/run1/f.0"), Some("/scratch"));
        assert_eq!(
            at("/scratchy/x"),
            Some("/"),
            "a prefix of a name is not a parent"
        );
        assert_eq!(at("/mnt/my data/dir"), Some("/mnt/my data"));
        assert_eq!(at("/mnt/nfs/results"), Some("/mnt/nfs"));
        assert_eq!(find_mount(&[], Path::new("/x")), None);
    }

    #[test]
    fn the_mount_on_top_wins_among_equal_points() {
        let mounts = parse(TABLE);
        let m = find_mount(&mounts, Path::new("/data/x")).unwrap();
        assert_eq!(m.fs_type, "xfs", "the later (upper) mount of /data");
    }

    #[test]
    fn escaped_mount_point_is_found_with_its_source() {
        let mounts = parse(TABLE);
        let m = find_mount(&mounts, Path::new("/mnt/my data")).unwrap();
        assert_eq!(m.source, "/dev/mapper/vg-data lv");
        assert_eq!(m.fs_type, "ext4");
    }
}
