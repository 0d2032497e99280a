//! The text `iolab checkpoint` prints: the plan of files per rank
//! ([`render_checkpoint_plan`]), each checkpoint's duration and throughput with the means
//! ([`render_checkpoint`]) and v3.0's checkpointing rules with the verdict
//! ([`render_checkpoint_rules`]).

use std::fmt::Write as _;

use iolab_core::checkpoint::{CheckpointOutcome, LlmShape, Round};
use iolab_core::train::{Check, Verdict};
use iolab_core::units::ByteCount;

/// "llama3_8b (tp 1 x pp 1 x dp 8, ZeRO 3), 8 ranks", and `subset` after it when the
/// job is a subset of the full one.
fn shape_words(shape: &LlmShape, subset: &str) -> String {
    format!(
        "{} (tp {} x pp {} x dp {}, ZeRO {}), {} ranks{}",
        shape.model.dlio_workload(),
        shape.tp,
        shape.pp,
        shape.dp,
        shape.zero,
        shape.ranks,
        if shape.is_subset() { subset } else { "" }
    )
}

/// `--plan`: every rank's files and bytes, and one checkpoint's.
pub fn render_checkpoint_plan(shape: &LlmShape) -> String {
    let mut out = format!(
        "iolab {} · checkpoint plan · {}; {} parameters\n",
        env!("CARGO_PKG_VERSION"),
        shape_words(shape, " (subset)"),
        shape.parameters()
    );
    for r in 0..shape.ranks {
        let files = shape.files_of_rank(r);
        let bytes: u64 = files.iter().map(|f| f.bytes).sum();
        let _ = writeln!(
            out,
            "  rank {r:>5}: {:>3} files, {:>16} bytes ({})",
            files.len(),
            bytes,
            ByteCount(bytes).human()
        );
        for f in files {
            let _ = writeln!(out, "      {}.pt  {} bytes", f.name, f.bytes);
        }
    }
    let _ = writeln!(
        out,
        "  one checkpoint: {} bytes ({})",
        shape.total_bytes(),
        ByteCount(shape.total_bytes()).human()
    );
    out
}

/// The run: the shape, one checkpoint's size and the largest rank's (`scale` below 1
/// said), then a table per direction with its mean.
pub fn render_checkpoint(shape: &LlmShape, scale: f64, o: &CheckpointOutcome) -> String {
    let gib = 1073741824.0;
    let total = shape.total_bytes() as f64 / gib;
    let mut out = format!(
        "iolab {} · checkpoint · {}\n  one checkpoint: {:.3} GiB; the largest rank writes {:.3} GiB{}\n",
        env!("CARGO_PKG_VERSION"),
        shape_words(shape, " (subset: this job's share of the full one)"),
        total,
        o.rank_bytes.iter().copied().max().unwrap_or(0) as f64 / gib,
        if scale < 1.0 {
            format!(" (scaled by {scale})")
        } else {
            String::new()
        }
    );
    let table = |name: &str, rounds: &[Round], out: &mut String| {
        if rounds.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\n  {name:<6} {:>10} {:>10} {:>14} {:>10}",
            "duration", "GiB/s", "slowest rank", "its time"
        );
        for (i, r) in rounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {:<6} {:>9.3}s {:>10.3} {:>14} {:>9.3}s",
                i + 1,
                r.duration,
                if r.duration > 0.0 {
                    r.bytes as f64 / gib / r.duration
                } else {
                    0.0
                },
                r.slowest_rank,
                r.slowest
            );
        }
        let n = rounds.len() as f64;
        let d = rounds.iter().map(|r| r.duration).sum::<f64>() / n;
        let tp = rounds
            .iter()
            .map(|r| {
                if r.duration > 0.0 {
                    r.bytes as f64 / gib / r.duration
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / n;
        let _ = writeln!(
            out,
            "  {name} mean: {d:.3} s, {tp:.3} GiB/s (DLIO's figure: checkpoint size over the slowest rank's time)"
        );
    };
    table("write", &o.writes, &mut out);
    if o.cache_dropped == Some(false) {
        out.push_str("\n  warning: the written files could not be flushed from the page cache before the reads: they may come from memory\n");
    }
    table("read", &o.reads, &mut out);
    out
}

/// MLPerf Storage v3.0's checkpointing rules on the run, and the gap they time.
pub fn render_checkpoint_rules(checks: &[Check], verdict: &Verdict, gap: Option<f64>) -> String {
    let mut out = String::new();
    if let Some(g) = gap {
        let _ = writeln!(
            out,
            "\n  the first read started {g:.2} s after the last write ended (flush step and --time-between included)"
        );
    }
    out.push_str("\n  MLPerf Storage v3.0's checkpointing rules:\n");
    crate::train::check_lines(&mut out, checks);
    let _ = writeln!(
        out,
        "\n  verdict: {}",
        if verdict.valid {
            "VALID under v3.0's checkpointing rules".to_string()
        } else {
            format!(
                "NOT VALID under v3.0's checkpointing rules (failed: {})",
                verdict.failed.join("; ")
            )
        }
    );
    out
}
