//! The parameters a data workload's results are stored with (`rw`, `block_size`, `layout`,
//! ...): what `results compare` matches runs on and reports show.

use std::collections::BTreeMap;

use iolab_core::spec::{DataSpec, Layout};

/// The stored parameters of `spec` run on `ranks` ranks.
pub fn params_of(spec: &DataSpec, ranks: u32) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("rw".into(), spec.rw.name().into());
    // A mix of sizes is shown as written (4KiB/10:64KiB/90, 4KiB-64KiB).
    let [read_mix, write_mix] = spec.size_mixes();
    let read = read_mix.map_or(spec.block_size.to_string(), ToString::to_string);
    let write = match (write_mix, spec.write_block_size) {
        (Some(m), _) => m.to_string(),
        (None, Some(w)) => w.to_string(),
        (None, None) => read.clone(),
    };
    if write != read && spec.rw.writes() && spec.rw.reads() {
        p.insert("write_block_size".into(), write);
    }
    p.insert("block_size".into(), read);
    if let Some(a) = spec.block_align {
        p.insert("block_align".into(), a.to_string());
    }
    if let Some(d) = &spec.distribution {
        p.insert("distribution".into(), d.to_string());
    }
    p.insert("threads".into(), spec.threads.to_string());
    p.insert("queue_depth".into(), spec.queue_depth.to_string());
    p.insert("backend".into(), spec.backend.name().into());
    p.insert("ranks".into(), ranks.to_string());
    p.insert(
        "layout".into(),
        match spec.layout {
            Layout::FilePerThread => "file-per-thread".into(),
            Layout::Shared => format!(
                "shared-{}",
                if spec.placement == iolab_core::spec::Placement::Strided {
                    "strided"
                } else {
                    "segmented"
                }
            ),
        },
    );
    p.insert("io".into(), io_of(spec).into());
    if spec.rw.is_mixed() {
        p.insert("rwmix_read".into(), spec.rwmix_read.to_string());
    }
    // O_SYNC writes are another workload than plain ones (S5 sets them side by side).
    if spec.sync {
        p.insert("sync".into(), "true".into());
    }
    p
}

/// How a phase's I/O reaches storage: `direct` (O_DIRECT), `buffered` (through the
/// page cache), or `uncached` for a user-space client (libnbd, libnfs): every I/O is a
/// command to the server, with no cache on this side, whatever --direct says.
fn io_of(spec: &DataSpec) -> &'static str {
    let caps = iolab_backend::capabilities_of(spec.backend, spec.queue_depth);
    if caps.reaches_export || caps.reaches_nfs {
        "uncached"
    } else if spec.direct {
        "direct"
    } else {
        "buffered"
    }
}
