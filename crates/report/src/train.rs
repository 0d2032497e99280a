//! The text `iolab train plan`, `train run` and `train search` print: the workload,
//! the runs, the epochs, AU against the threshold, MLPerf's rules and the verdict.

use std::fmt::Write as _;

use iolab_core::result::CpuUsage;
use iolab_core::spec::{MlperfMode, ThreadsKind, ThreadsSizing, TrainConfig};
use iolab_core::train::{Check, RunFigures, RunOutcome, SearchResult, Verdict};
use iolab_core::units::{ByteCount, Nanos};

/// What `iolab train run` measured and judged, for [`render_train_run`].
pub struct TrainRunReport<'a> {
    pub cfg: &'a TrainConfig,
    pub figures: &'a RunFigures,
    /// Every run, warm-ups included.
    pub runs: &'a [RunOutcome],
    pub checks: &'a [Check],
    pub verdict: &'a Verdict,
    /// Memory the readers hold: iolab's, and DLIO's loader's estimate, in bytes.
    pub memory: (u64, u64),
    pub cpu: &'a CpuUsage,
    /// The dataset's size in bytes.
    pub dataset_bytes: u64,
}

/// What `iolab train plan` prints: the workload a spec resolves to (preset, parquet
/// layout, dataset, loader, compute, AU threshold) for `total` accelerators, and the memory
/// one accelerator's loader holds in iolab and in DLIO (`memory`: bytes each).
pub fn render_train_plan(cfg: &TrainConfig, total: u64, (mine, dlio): (u64, u64)) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "iolab {} · train plan", env!("CARGO_PKG_VERSION"));
    if let Some(p) = cfg.preset {
        let _ = writeln!(
            out,
            "  preset          {} (DLIO workload {}){}",
            p.name(),
            p.dlio_workload(cfg.accelerator),
            cfg.mode.map_or(String::new(), |m| format!(
                ", MLPerf Storage v3.0 {}",
                m.name()
            ))
        );
    }
    if let Some(s) = &cfg.parquet {
        let _ = writeln!(
            out,
            "  parquet         {} columns, {} bytes a row, row groups of {} rows; reads {}",
            s.columns.len(),
            s.row_bytes(),
            s.row_group_size,
            match &cfg.read_columns {
                None => "every row group whole, on every rank (DLIO's reader)".to_string(),
                Some(c) => format!("{} columns, each chunk on its own", c.len()),
            }
        );
    }
    let _ = writeln!(
        out,
        "  dataset         {} {} files x {} samples of {:.0} bytes (stdev {:.0}): {}",
        cfg.files,
        cfg.format.extension(),
        cfg.samples_per_file,
        cfg.record_length,
        cfg.record_length_stdev,
        ByteCount(cfg.dataset_bytes() as u64).human()
    );
    let _ = writeln!(
        out,
        "  loader          {:?}, batch {}, {} reader threads ({} threads reading), prefetch {}, computation threads {}",
        cfg.loader,
        cfg.batch_size,
        cfg.read_threads,
        cfg.reader_threads(),
        cfg.prefetch,
        cfg.computation_threads
    );
    sized_line(&mut out, "read threads    ", cfg);
    let _ = writeln!(
        out,
        "  datagen         {} writer threads per accelerator",
        cfg.writer_threads()
    );
    if cfg.writer_threads() == cfg.write_threads {
        threads_sized_line(
            &mut out,
            "write threads   ",
            ThreadsKind::Write,
            cfg.write_threads,
            cfg.write_threads_sizing,
        );
    }
    let _ = writeln!(
        out,
        "  compute         {:.4} s per step, {} epochs, {} steps per epoch with {} accelerator(s)",
        cfg.computation_time,
        cfg.epochs,
        cfg.steps_per_epoch(total),
        total
    );
    let _ = writeln!(out, "  AU threshold    {:.0}%", cfg.au_threshold);
    let _ = writeln!(
        out,
        "  memory          iolab holds {} per accelerator; DLIO's loader about {}",
        ByteCount(mine).human(),
        ByteCount(dlio).human()
    );
    out
}

/// What `iolab train datagen` wrote, for [`render_train_datagen`].
pub struct DatagenReport<'a> {
    pub cfg: &'a TrainConfig,
    pub files: u64,
    pub bytes: u64,
    pub elapsed: Nanos,
    /// The writer threads that ran, all ranks together.
    pub workers: u32,
    /// The data directory.
    pub dir: &'a str,
}

/// What `iolab train datagen` prints: the files written, the writer threads and how
/// they were sized (v3.0 DLIO's rule for a write_threads of 1).
pub fn render_train_datagen(r: &DatagenReport<'_>) -> String {
    let (cfg, mut out) = (r.cfg, String::new());
    let _ = writeln!(
        out,
        "iolab {} · train datagen: {} {} files, {} in {} ({}, {:.1} files/s) in {}",
        env!("CARGO_PKG_VERSION"),
        r.files,
        cfg.format.extension(),
        ByteCount(r.bytes).human(),
        r.elapsed.human(),
        iolab_core::bandwidth(ByteCount(r.bytes), r.elapsed).human(),
        r.files as f64 / r.elapsed.as_secs_f64().max(1e-9),
        r.dir
    );
    let threads = cfg.writer_threads();
    let _ = write!(
        out,
        "  writer threads: {threads} per accelerator, {} in all",
        r.workers
    );
    if threads != cfg.write_threads {
        let _ = write!(
            out,
            " (v3.0 DLIO's {} generator writes a rank's files in one loop: its write_threads, {}, is not used)",
            cfg.format.extension(),
            cfg.write_threads
        );
    }
    out.push('\n');
    if threads == cfg.write_threads {
        threads_sized_line(
            &mut out,
            "writer threads: ",
            ThreadsKind::Write,
            cfg.write_threads,
            cfg.write_threads_sizing,
        );
    }
    out
}

/// The line saying what the reader threads were sized from when they are not the asked
/// count (v3.0 DLIO's rule for a read_threads of 1), after `label`; else nothing.
fn sized_line(out: &mut String, label: &str, cfg: &TrainConfig) {
    threads_sized_line(
        out,
        label,
        ThreadsKind::Read,
        cfg.read_threads,
        cfg.read_threads_sizing,
    );
}

/// The line saying what `kind`'s threads (`used`) were sized from when they are not the
/// asked count (v3.0 DLIO's rule for a count of 1), after `label`; else nothing.
pub fn threads_sized_line(
    out: &mut String,
    label: &str,
    kind: ThreadsKind,
    used: u32,
    sizing: Option<ThreadsSizing>,
) {
    if let Some(s) = sizing.filter(|s| s.changed()) {
        let _ = writeln!(
            out,
            "  {label}{} asked, {} used as v3.0 DLIO sizes a {} of 1: {} CPUs / {} accelerator{} on the host, at most {} ({} takes {})",
            s.asked,
            used,
            kind.setting(),
            s.cpus,
            s.accelerators_on_host,
            if s.accelerators_on_host == 1 { "" } else { "s" },
            s.cap,
            kind.exact_option(),
            s.asked
        );
    }
}

/// The whole text of a training run: workload, runs, epochs, totals, rules, verdict.
pub fn render_train_run(r: &TrainRunReport<'_>) -> String {
    let mut out = String::new();
    workload(&mut out, r);
    epochs(&mut out, r);
    totals(&mut out, r);
    rules(&mut out, r);
    out
}

/// The first lines: the workload, and the runs when there are several.
fn workload(out: &mut String, r: &TrainRunReport<'_>) {
    let _ = write!(out, "iolab {} · train", env!("CARGO_PKG_VERSION"));
    if let Some(p) = r.cfg.preset {
        let _ = write!(out, " · {}", p.dlio_workload(r.cfg.accelerator));
    }
    match r.cfg.mode {
        Some(MlperfMode::Whatif) => {
            out.push_str(" · v3.0 whatif (not a closed or open result)");
        }
        Some(m) => {
            let _ = write!(out, " · v3.0 {}", m.name());
        }
        None => {}
    }
    let _ = writeln!(
        out,
        "\n  {} accelerators, {} {} files ({}), batch {}, {} reader threads, compute {:.4} s per step",
        r.figures.accelerators,
        r.cfg.files,
        r.cfg.format.extension(),
        ByteCount(r.dataset_bytes).human(),
        r.cfg.batch_size,
        r.cfg.read_threads,
        r.cfg.computation_time
    );
    sized_line(out, "reader threads: ", r.cfg);
    if r.cfg.parquet.is_some() {
        let _ = writeln!(
            out,
            "  parquet: every accelerator reads every file ({}), as v3.0 DLIO's loader does: the files are not split across ranks",
            match &r.cfg.read_columns {
                None => "footer, then each row group whole".to_string(),
                Some(c) => format!("footer, then {} columns' chunks each on its own", c.len()),
            }
        );
    }
    if r.runs.len() > 1 {
        let _ = writeln!(
            out,
            "\n  {:>7} {:>20} {:>9} {:>12}",
            "run", "seed", "AU %", "samples/s"
        );
        for run in r.runs {
            let _ = writeln!(
                out,
                "  {:>7} {:>20} {:>9.2} {:>12.2}{}",
                run.run,
                run.seed,
                run.au_percent,
                run.samples_per_sec,
                if run.is_warmup() {
                    "  (not counted)"
                } else {
                    ""
                }
            );
        }
        out.push_str("\n  the counted runs' epochs:");
    }
}

/// The epochs' table.
fn epochs(out: &mut String, r: &TrainRunReport<'_>) {
    let _ = writeln!(
        out,
        "\n  {:>5} {:>9} {:>8} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "epoch", "AU %", "min AU", "samples/s", "MiB/s (DLIO)", "read/s", "wait/step", "time"
    );
    for e in &r.figures.epochs {
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
}

/// The mean compute per step over the epochs, (asked, measured), in seconds.
fn compute_per_step(r: &TrainRunReport<'_>) -> (f64, f64) {
    let steps: u64 = r.figures.epochs.iter().map(|e| e.steps).sum();
    let sum = |f: &dyn Fn(&iolab_core::train::EpochFigures) -> f64| {
        r.figures
            .epochs
            .iter()
            .map(|e| f(e) * e.steps as f64)
            .sum::<f64>()
            / steps.max(1) as f64
    };
    (sum(&|e| e.compute_mean), sum(&|e| e.compute_measured_mean))
}

/// AU, samples/s and DLIO's I/O figure over the run, the CPU and memory.
fn totals(out: &mut String, r: &TrainRunReport<'_>) {
    let samples: u64 = r.figures.epochs.iter().map(|e| e.samples).sum();
    let _ = writeln!(
        out,
        "\n  AU {:.2}% (stdev {:.2}) against {:.0}%: {}; samples/s {:.2} (stdev {:.2}); DLIO's I/O figure {:.2} MiB/s",
        r.figures.au_mean_percent,
        r.figures.au_stdev_percent,
        r.figures.au_threshold,
        if r.figures.au_met { "met" } else { "NOT met" },
        r.figures.samples_per_sec_mean,
        r.figures.samples_per_sec_stdev,
        r.figures.dlio_mib_per_sec_mean
    );
    if r.cfg.computation_time == 0.0 {
        out.push_str("  AU is 0 by definition with no compute (DLIO's convention): samples/s is the figure\n");
    } else {
        let (asked, measured) = compute_per_step(r);
        let _ = writeln!(
            out,
            "  AU over the asked compute {:.2}% (compute per step {:.6} s measured, {:.6} s asked)",
            r.figures.au_nominal_mean_percent, measured, asked
        );
    }
    let _ = writeln!(
        out,
        "  CPU {:.1} µs per sample (user + system, all ranks); memory: iolab's readers hold {}, DLIO's loader about {}",
        if samples > 0 {
            (r.cpu.user.0 + r.cpu.system.0) as f64 / samples as f64 / 1000.0
        } else {
            0.0
        },
        ByteCount(r.memory.0).human(),
        ByteCount(r.memory.1).human()
    );
    if r.cpu.cpus == 1 && r.cfg.read_threads > 1 {
        // What left the loader cost of a run under `mpirun -np 1` at half of what the
        // cores give: OpenMPI binds a rank to one core when it starts two or fewer.
        let _ = writeln!(
            out,
            "  this rank's {} reader threads shared 1 CPU (its affinity mask): mpirun binds each rank to a core unless --bind-to none",
            r.cfg.read_threads
        );
    }
}

/// MLPerf Storage's rules, one line each, and the verdict.
fn rules(out: &mut String, r: &TrainRunReport<'_>) {
    out.push_str("\n  MLPerf Storage's rules:\n");
    check_lines(out, r.checks);
    if r.verdict.valid {
        out.push_str("\n  verdict: VALID under MLPerf Storage's run rules\n");
    } else {
        let _ = writeln!(
            out,
            "\n  verdict: NOT VALID under MLPerf Storage's run rules (failed: {}){}",
            r.verdict.failed.join("; "),
            if r.runs.len() == 1 {
                "; --mlperf runs the warm-up and the 5 counted runs"
            } else {
                ""
            }
        );
    }
}

/// One line per rule checked: ok or FAIL, the rule, what was found.
pub(crate) fn check_lines(out: &mut String, checks: &[Check]) {
    for c in checks {
        let _ = writeln!(
            out,
            "    {:<5} {:<28} {}",
            if c.ok { "ok" } else { "FAIL" },
            c.rule,
            c.detail
        );
    }
}

/// The search's table: accelerators tried, their AU and samples/s, and the answer.
pub fn render_train_search(r: &SearchResult, threshold: f64, ranks: u64) -> String {
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
