//! The warnings of a targets run about what its figures mean: targets sharing one
//! device or one network/FUSE client (what those clients cache is the engine's to say).

use iolab_comm::{Comm, CommExt};
use iolab_engine::PreparedTarget;

use super::prepare::TargetSet;

/// Targets that sit on one device (several directories of one file system, or one
/// device listed twice under partitions) each measure a share of it: their sum is that
/// one device's bandwidth. One warning per shared device. Directories of one mount of a
/// network or FUSE file system share the client, not necessarily a device: where their
/// data lives is the file system's choice, and the warning says so.
pub(super) fn shared_devices(comm: &dyn Comm, set: &TargetSet) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    // (target, host, device, the file system's type when it is a network or FUSE one)
    let mine: Vec<(String, String, u64, Option<String>)> = set
        .local
        .iter()
        .filter_map(|t| {
            let (dev, remote) = match &t.prepared {
                PreparedTarget::Dir { base, .. } => (
                    std::fs::metadata(base).ok()?.dev(),
                    iolab_backend::files::fs_type(base)
                        .ok()
                        .filter(|f| iolab_backend::files::is_remote_fs(f)),
                ),
                PreparedTarget::Device { check, .. } => {
                    let m = std::fs::metadata(&check.path).ok()?;
                    let dev = if check.is_block_device {
                        m.rdev()
                    } else {
                        m.dev()
                    };
                    (dev, None)
                }
                PreparedTarget::Null => return None,
            };
            Some((
                t.target.entry.id.clone(),
                t.target.host.clone(),
                dev,
                remote,
            ))
        })
        .collect();
    let all: Vec<(String, String, u64, Option<String>)> = comm
        .all_gather(&mine)
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect();
    type Group = ((String, u64, Option<String>), Vec<String>);
    let mut groups: Vec<Group> = Vec::new();
    for (id, host, dev, remote) in all {
        match groups.iter_mut().find(|(k, _)| k.0 == host && k.1 == dev) {
            Some((_, ids)) => ids.push(id),
            None => groups.push(((host, dev, remote), vec![id])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|((host, dev, remote), ids)| match remote {
            Some(fs) => format!(
                "targets {} on {host} are on one {fs} mount ({}:{}): they share this client and its link; whether they share servers depends on where the file system puts each one's data (a Ceph pool, a SeaweedFS path rule, a Lustre OST or BeeGFS target per directory keeps them apart)",
                ids.join(", "),
                major(dev),
                minor(dev),
            ),
            None => format!(
                "targets {} on {host} are on one device ({}:{}): each measures a share of it, and their sum is that one device's bandwidth, not {}",
                ids.join(", "),
                major(dev),
                minor(dev),
                ids.len()
            ),
        })
        .collect()
}

/// glibc's gnu_dev_major and gnu_dev_minor.
fn major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)
}

fn minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0xff)
}
