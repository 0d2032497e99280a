//! The warnings a data phase carries about what its reads and writes probably measure:
//! the page cache, a network client's own cache or write buffer.

use iolab_core::spec::DataSpec;
use iolab_core::units::ByteCount;

use crate::plan::DataPlan;

/// The memory of this machine in bytes, if known.
pub(crate) fn memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Direct writes through a client that takes them into a write buffer of its own (weed
/// mount): without an fsync or O_SYNC the phase ends before the data leaves the client,
/// the uploads happening at close, after the phase's clock has stopped.
pub fn client_write_warning(
    c: &iolab_backend::files::ClientCache,
    spec: &DataSpec,
) -> Option<String> {
    if !spec.rw.writes()
        || !spec.direct
        || !c.direct_writes_buffered
        || spec.sync
        || spec.fsync_at_end
        || spec.fsync_every.is_some()
    {
        return None;
    }
    Some(format!(
        "direct writes on {} through {} return once in its own write buffer and are sent to the servers at close or fsync (O_DIRECT does not go past it): the phase ends before its data reaches them; add --fsync-at-end or --sync for the servers' figure",
        c.file_system, c.client
    ))
}

/// Reads through a client with a cache of its own: what they probably measure.
pub fn client_cache_warning(c: &iolab_backend::files::ClientCache, direct: bool) -> Option<String> {
    if direct && c.direct_bypasses {
        return None;
    }
    let advice = if c.direct_bypasses {
        "; --direct reads go past it to the servers"
    } else {
        "; direct I/O does not go past it either"
    };
    Some(format!(
        "reads on {} through {}, which keeps file data in {}: neither --cache cold nor --drop-caches empties it, so data this client wrote or read before is probably served from that cache{advice}",
        c.file_system, c.client, c.what
    ))
}

pub(super) fn cache_warning(plan: &DataPlan, warnings: &mut Vec<String>) {
    let per_host = plan.files.iter().map(|f| f.size).sum::<u64>();
    if let Some(mem) = memory_total()
        && per_host < mem
    {
        warnings.push(format!(
            "buffered reads of {} on a host with {} of memory: the page cache may be serving them (use --direct, a data set larger than memory, or --cache cold without --runtime)",
            ByteCount(per_host).human(),
            ByteCount(mem).human()
        ));
    }
}

#[cfg(test)]
mod client_cache_tests {
    use super::client_cache_warning;
    use iolab_backend::files::ClientCache;

    fn cache(direct_bypasses: bool) -> ClientCache {
        ClientCache {
            file_system: "CephFS",
            client: "ceph-fuse",
            what: "its object cache",
            direct_bypasses,
            direct_writes_buffered: false,
        }
    }

    #[test]
    fn direct_writes_into_a_client_buffer_are_named_unless_synced() {
        use iolab_core::spec::{DataSpec, RwKind};
        let weed = ClientCache {
            file_system: "SeaweedFS",
            client: "weed mount",
            what: "its chunk cache",
            direct_bypasses: false,
            direct_writes_buffered: true,
        };
        let mut spec = DataSpec {
            rw: RwKind::Write,
            direct: true,
            ..DataSpec::default()
        };
        let w = super::client_write_warning(&weed, &spec).unwrap();
        assert!(
            w.starts_with(
                "direct writes on SeaweedFS through weed mount return once in its own write buffer"
            ),
            "{w}"
        );
        assert_eq!(super::client_write_warning(&cache(true), &spec), None);
        for synced in [
            DataSpec {
                fsync_at_end: true,
                ..spec.clone()
            },
            DataSpec {
                sync: true,
                ..spec.clone()
            },
            DataSpec {
                fsync_every: Some(1),
                ..spec.clone()
            },
            DataSpec {
                rw: RwKind::Read,
                ..spec.clone()
            },
        ] {
            assert_eq!(
                super::client_write_warning(&weed, &synced),
                None,
                "{synced:?}"
            );
        }
        // Buffered writes: the page cache's warning says that, where there is one.
        spec.direct = false;
        assert_eq!(super::client_write_warning(&weed, &spec), None);
    }

    #[test]
    fn a_client_cache_is_named_unless_direct_reads_go_past_it() {
        assert_eq!(client_cache_warning(&cache(true), true), None);
        let w = client_cache_warning(&cache(true), false).unwrap();
        assert!(w.starts_with("reads on CephFS through ceph-fuse, which keeps file data in its object cache: neither --cache cold nor --drop-caches empties it"), "{w}");
        assert!(
            w.ends_with("--direct reads go past it to the servers"),
            "{w}"
        );
        let w = client_cache_warning(&cache(false), true).unwrap();
        assert!(w.ends_with("direct I/O does not go past it either"), "{w}");
    }
}
