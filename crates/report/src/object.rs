//! What an S3 phase adds to its operations' lines, from the figures it keeps by name
//! (docs/figures.md, "Object storage"): the time to first byte of its GETs, warp's
//! measurement window with each operation's rate inside it, and the answers that were
//! not a success by HTTP status (retried ones included) with the retries.

use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::units::{BytesPerSec, Nanos};

fn ns(v: f64) -> String {
    Nanos(v.max(0.0) as u64).human()
}

/// The lines of an S3 phase's own figures, in words.
pub fn object_lines(p: &PhaseResult) -> Vec<String> {
    let x = &p.extra;
    let mut out = Vec::new();
    if let Some(n) = x.get("ttfb_count") {
        let g = |k: &str| x.get(&format!("ttfb_{k}")).copied().unwrap_or(0.0);
        out.push(format!(
            "time to first byte ({n:.0} GETs): min {}  mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            ns(g("min_ns")),
            ns(g("mean_ns")),
            ns(g("p50_ns")),
            ns(g("p90_ns")),
            ns(g("p99_ns")),
            ns(g("p99.9_ns")),
            ns(g("max_ns"))
        ));
    }
    if let Some(line) = window_line(x) {
        out.push(line);
    }
    let statuses: Vec<String> = x
        .iter()
        .filter_map(|(k, v)| {
            let s = k.strip_prefix("http_")?;
            Some(if s == "0" {
                format!("no answer x{v:.0}")
            } else {
                format!("{s} x{v:.0}")
            })
        })
        .collect();
    if !statuses.is_empty() {
        out.push(format!(
            "answers not 2xx, retried ones included: {}; retries {:.0}",
            statuses.join(", "),
            x.get("retries").copied().unwrap_or(0.0)
        ));
    }
    for (k, what) in [
        ("keys_listed", "keys listed"),
        ("objects_deleted", "objects deleted"),
        ("parts", "multipart parts"),
    ] {
        if let Some(v) = x.get(k) {
            out.push(format!("{what}: {v:.0}"));
        }
    }
    out
}

/// warp's measurement window (the time from its start to its end) with each operation's
/// rate inside it, when the phase kept one.
fn window_line(x: &std::collections::BTreeMap<String, f64>) -> Option<String> {
    let (Some(s), Some(e)) = (x.get("window_start_ns"), x.get("window_end_ns")) else {
        return None;
    };
    let figures: Vec<String> = [
        OpKind::Put,
        OpKind::Get,
        OpKind::Stat,
        OpKind::Delete,
        OpKind::List,
    ]
    .iter()
    .filter_map(|op| {
        let n = op.name();
        let ops = x.get(&format!("window_{n}_ops_per_sec"))?;
        let bytes = x
            .get(&format!("window_{n}_bytes_per_sec"))
            .copied()
            .unwrap_or(0.0);
        Some(if op.moves_data() {
            format!("{n} {} ({}/s)", BytesPerSec(bytes).human(), rate(*ops))
        } else {
            format!("{n} {}/s", rate(*ops))
        })
    })
    .collect();
    Some(format!(
        "warp's window {} ({} to {}{}): {}",
        ns(e - s),
        ns(*s),
        ns(*e),
        if x.get("window_exact") == Some(&0.0) {
            ", approximate"
        } else {
            ""
        },
        figures.join(", ")
    ))
}

fn rate(v: f64) -> String {
    iolab_core::units::OpsPerSec(v).human()
}

/// Whether a figure kept by name is one [`object_lines`] shows.
pub fn shown(key: &str) -> bool {
    key.starts_with("ttfb_")
        || key.starts_with("window_")
        || key.starts_with("http_")
        || matches!(key, "retries" | "keys_listed" | "objects_deleted" | "parts")
}
