//! The text `iolab train run` and `iolab train search` print: the workload, the runs,
//! the epochs, AU against the threshold, MLPerf's rules and the verdict.

use std::fmt::Write as _;

use iolab_core::spec::TrainConfig;
use iolab_core::train::{Check, RunFigures, RunOutcome, Verdict};
use iolab_core::units::ByteCount;
use iolab_suites::train::Dataset;
use iolab_suites::train::search::SearchResult;

#[allow(clippy::too_many_arguments)]
pub(super) fn render_run(
    cfg: &TrainConfig,
    f: &RunFigures,
    runs: &[RunOutcome],
    checks: &[Check],
    verdict: &Verdict,
    (mem_mine, mem_dlio): (u64, u64),
    cpu: &iolab_core::result::CpuUsage,
    dataset: &Dataset,
) -> String {
    let mut out = format!("iolab {} · train", env!("CARGO_PKG_VERSION"));
    if let Some(p) = cfg.preset {
        let _ = write!(out, " · {}", p.dlio_workload(cfg.accelerator));
    }
    let _ = writeln!(
        out,
        "\n  {} accelerators, {} {} files ({}), batch {}, {} reader threads, compute {:.4} s per step",
        f.accelerators,
        cfg.files,
        cfg.format.extension(),
        ByteCount(dataset.total_bytes()).human(),
        cfg.batch_size,
        cfg.read_threads,
        cfg.computation_time
    );
    if runs.len() > 1 {
        let _ = writeln!(
            out,
            "\n  {:>7} {:>20} {:>9} {:>12}",
            "run", "seed", "AU %", "samples/s"
        );
        for r in runs {
            let _ = writeln!(
                out,
                "  {:>7} {:>20} {:>9.2} {:>12.2}{}",
                r.run,
                r.seed,
                r.au_percent,
                r.samples_per_sec,
                if r.is_warmup() { "  (not counted)" } else { "" }
            );
        }
        out.push_str("\n  the counted runs' epochs:");
    }
    let _ = writeln!(
        out,
        "\n  {:>5} {:>9} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "epoch", "AU %", "min AU", "samples/s", "MiB/s (DLIO)", "read/s", "wait/step", "time"
    );
    for e in &f.epochs {
        let _ = writeln!(
            out,
            "  {:>5} {:>9.2} {:>8.2} {:>12.2} {:>12.2} {:>12} {:>9.4}s {:>9.2}s",
            e.epoch,
            e.au_percent,
            e.au_min_percent,
            e.samples_per_sec,
            e.dlio_mib_per_sec,
            iolab_core::units::BytesPerSec(e.bytes_per_sec).human(),
            e.load_mean,
            e.elapsed
        );
    }
    let samples: u64 = f.epochs.iter().map(|e| e.samples).sum();
    let _ = writeln!(
        out,
        "\n  AU {:.2}% (stdev {:.2}) against {:.0}%: {}; samples/s {:.2} (stdev {:.2}); DLIO's I/O figure {:.2} MiB/s",
        f.au_mean_percent,
        f.au_stdev_percent,
        f.au_threshold,
        if f.au_met { "met" } else { "NOT met" },
        f.samples_per_sec_mean,
        f.samples_per_sec_stdev,
        f.dlio_mib_per_sec_mean
    );
    if cfg.computation_time == 0.0 {
        out.push_str("  AU is 0 by definition with no compute (DLIO's convention): samples/s is the figure\n");
    }
    let _ = writeln!(
        out,
        "  CPU {:.1} µs per sample (user + system, all ranks); memory: iolab's readers hold {}, DLIO's loader about {}",
        if samples > 0 {
            (cpu.user.0 + cpu.system.0) as f64 / samples as f64 / 1000.0
        } else {
            0.0
        },
        ByteCount(mem_mine).human(),
        ByteCount(mem_dlio).human()
    );
    out.push_str("\n  MLPerf Storage's rules:\n");
    for c in checks {
        let _ = writeln!(
            out,
            "    {:<5} {:<28} {}",
            if c.ok { "ok" } else { "FAIL" },
            c.rule,
            c.detail
        );
    }
    if verdict.valid {
        out.push_str("\n  verdict: VALID under MLPerf Storage's run rules\n");
    } else {
        let _ = writeln!(
            out,
            "\n  verdict: NOT VALID under MLPerf Storage's run rules (failed: {}){}",
            verdict.failed.join("; "),
            if runs.len() == 1 {
                "; --mlperf runs the warm-up and the 5 counted runs"
            } else {
                ""
            }
        );
    }
    out
}

/// The search's table: accelerators tried, their AU and samples/s, and the answer.
pub(super) fn render_search(r: &SearchResult, threshold: f64, ranks: u64) -> String {
    let mut out = format!(
        "iolab {} · train search (AU threshold {threshold:.0}%)\n\n  {:>12} {:>9} {:>12}  verdict\n",
        env!("CARGO_PKG_VERSION"),
        "accelerators",
        "AU %",
        "samples/s"
    );
    for p in &r.points {
        let _ = writeln!(
            out,
            "  {:>12} {:>9.2} {:>12.2}  {}",
            p.accelerators * ranks,
            p.au_percent,
            p.samples_per_sec,
            if p.passed { "pass" } else { "fail" }
        );
    }
    match r.best {
        Some(b) => {
            let _ = writeln!(
                out,
                "\n  most accelerators at AU >= {threshold:.0}%: {} ({})",
                b * ranks,
                r.stopped
            );
        }
        None => {
            let _ = writeln!(
                out,
                "\n  no accelerator count met AU >= {threshold:.0}% ({})",
                r.stopped
            );
        }
    }
    out
}
