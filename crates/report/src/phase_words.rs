//! A phase's settings and a mixed phase's total in words, shared by the text summary, the
//! rated table and the run's text (their own module, below all three).

use iolab_core::result::{OpResult, PhaseKind, PhaseResult};
use iolab_core::units::{BytesPerSec, OpsPerSec};

/// What sets a phase apart from its neighbours in a study: block size, read share, sync,
/// threads, depth, backend, I/O mode, layout (the four phases of a block size x mix sweep
/// no longer print identical headers).
pub(crate) fn phase_settings(p: &PhaseResult) -> Vec<String> {
    let mut parts = param_words(&p.params);
    if p.ranks > 1 {
        parts.push(format!("{} ranks", p.ranks));
    }
    parts
}

/// The settings among `params` in words: "4KiB", "90% reads", "sync", "8 threads", "QD8"
/// ("4KiB reads", "64KiB writes" when a mix's writes have a size of their own).
pub(crate) fn param_words(params: &crate::sweep::Params) -> Vec<String> {
    let mut parts = Vec::new();
    let two_sizes = params.get("write_block_size").is_some();
    for key in [
        "block_size",
        "write_block_size",
        "rwmix_read",
        "sync",
        "threads",
        "queue_depth",
        "backend",
        "io",
        "layout",
        "distribution",
        "object_size",
        "range_size",
        "concurrency",
        "batch",
    ] {
        if let Some(v) = params.get(key) {
            parts.push(match key {
                "block_size" if two_sizes => format!("{v} reads"),
                "write_block_size" => format!("{v} writes"),
                "rwmix_read" => format!("{v}% reads"),
                "sync" if v == "true" => "sync".to_string(),
                "sync" => continue,
                "threads" => format!("{v} thread{}", if v == "1" { "" } else { "s" }),
                "queue_depth" => format!("QD{v}"),
                "object_size" => format!("{v} objects"),
                "range_size" => format!("ranges of {v}"),
                "concurrency" => format!("{v} connection{}", if v == "1" { "" } else { "s" }),
                "batch" if v == "1" => continue,
                "batch" => format!("{v} keys a DELETE"),
                _ => v.clone(),
            });
        }
    }
    parts
}

/// A mixed data phase's operations together (the figure the studies quote): total IOPS
/// and bandwidth, each the sum of the main operations' own, and their names; None for a
/// phase of one operation or a metadata phase.
pub(crate) fn mixed_total(p: &PhaseResult) -> Option<(OpsPerSec, BytesPerSec, Vec<&str>)> {
    let main: Vec<&OpResult> = p.ops.iter().filter(|o| !o.op.is_auxiliary()).collect();
    if main.len() < 2 || p.kind == PhaseKind::Meta {
        return None;
    }
    Some((
        OpsPerSec(main.iter().map(|o| o.iops.get()).sum()),
        BytesPerSec(main.iter().map(|o| o.bandwidth.get()).sum()),
        main.iter().map(|o| o.op.name()).collect(),
    ))
}
