//! Where the kernel's tables are: [`SysRoot`] names the /proc, /sys and /etc trees every
//! reader in this crate goes through, so tests point it at fixture trees. The small
//! readers here turn any failure into a one-line reason ("path: error") that callers
//! keep as a note; none of them panics.

use std::fmt::Display;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The roots of the trees read: /proc, /sys and /etc on a live system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysRoot {
    pub proc: PathBuf,
    pub sys: PathBuf,
    pub etc: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::live()
    }
}

impl SysRoot {
    /// The running system.
    pub fn live() -> Self {
        SysRoot {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
            etc: PathBuf::from("/etc"),
        }
    }

    /// A fixture tree: `base/proc`, `base/sys`, `base/etc`.
    pub fn under(base: &Path) -> Self {
        SysRoot {
            proc: base.join("proc"),
            sys: base.join("sys"),
            etc: base.join("etc"),
        }
    }

    /// True when this reads the running system; only then may a reader fall back to a
    /// system call (uname, statvfs) for what the tree does not show.
    pub fn is_live(&self) -> bool {
        *self == Self::live()
    }

    pub fn proc_path(&self, rel: &str) -> PathBuf {
        self.proc.join(rel)
    }

    pub fn sys_path(&self, rel: &str) -> PathBuf {
        self.sys.join(rel)
    }

    pub fn etc_path(&self, rel: &str) -> PathBuf {
        self.etc.join(rel)
    }
}

/// The reason a read failed, as kept in notes: "path: error".
pub(crate) fn reason(path: &Path, error: impl Display) -> String {
    format!("{}: {error}", path.display())
}

/// A whole file as text.
pub(crate) fn read_text(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| reason(path, e))
}

/// A one-value file (sysfs, sysctl), trimmed. An empty file is an error: it says nothing.
pub(crate) fn read_trimmed(path: &Path) -> Result<String, String> {
    let text = read_text(path)?;
    let text = text.trim();
    if text.is_empty() {
        return Err(reason(path, "empty"));
    }
    Ok(text.to_string())
}

/// A one-value file parsed as a number (or anything else `FromStr`).
pub(crate) fn read_parsed<T: FromStr>(path: &Path) -> Result<T, String> {
    let text = read_trimmed(path)?;
    text.parse()
        .map_err(|_| reason(path, format_args!("cannot parse '{text}'")))
}

/// The last component of a symlink's target (a driver's or a device's kernel name).
pub(crate) fn link_name(path: &Path) -> Result<String, String> {
    let target = fs::read_link(path).map_err(|e| reason(path, e))?;
    target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| reason(path, "link has no file name"))
}

/// The entries of a directory, sorted by name.
pub(crate) fn dir_names(path: &Path) -> Result<Vec<String>, String> {
    let entries = fs::read_dir(path).map_err(|e| reason(path, e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Keeps the value, or records why it is unknown and gives `None`.
pub(crate) fn noted<T>(notes: &mut Vec<String>, what: &str, value: Result<T, String>) -> Option<T> {
    match value {
        Ok(v) => Some(v),
        Err(why) => {
            notes.push(format!("{what} unknown: {why}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixture;

    #[test]
    fn readers_give_reasons_not_panics() {
        let fx = Fixture::new();
        fx.file("sys/a", "  42\n");
        fx.file("sys/empty", "\n");
        fx.symlink("sys/link", "../../bus/virtio/drivers/virtio_net");
        let root = fx.root();
        assert_eq!(read_parsed::<u32>(&root.sys_path("a")), Ok(42));
        assert!(
            read_trimmed(&root.sys_path("empty"))
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            read_trimmed(&root.sys_path("missing"))
                .unwrap_err()
                .contains("missing")
        );
        assert!(read_parsed::<u32>(&root.sys_path("link")).is_err());
        assert_eq!(link_name(&root.sys_path("link")).unwrap(), "virtio_net");
        let mut notes = Vec::new();
        assert_eq!(
            noted(
                &mut notes,
                "speed",
                read_parsed::<u32>(&root.sys_path("nope"))
            ),
            None
        );
        assert!(notes[0].starts_with("speed unknown: "), "{notes:?}");
        assert!(!root.is_live());
        assert!(SysRoot::live().is_live());
    }
}
