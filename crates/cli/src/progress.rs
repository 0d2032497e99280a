//! The progress display. On a terminal, two indicatif lines redrawn as the engine
//! reports: the whole run (phase n of N, elapsed, ETA from the plan's estimates
//! corrected by what has run) above the current phase (rate over the last second,
//! average, workers done). Elsewhere nothing, unless --progress asks for a plain line
//! every ten seconds (batch and Slurm logs stay free of escape codes). Only rank 0
//! draws: only rank 0 gets progress from the engine.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use iolab_core::units::{BytesPerSec, Nanos, OpsPerSec};
use iolab_engine::Progress;

use crate::live::LiveState;

pub struct ProgressLine {
    enabled: bool,
    tty: bool,
    /// The two bars while they are drawn: made at the first report, cleared by
    /// [`ProgressLine::finish`] (a study clears them to print each phase's results) and
    /// made again at the next report.
    bars: Mutex<Option<Bars>>,
    /// When the run started, for its elapsed time across phases and bars.
    started: Instant,
    /// Phase and time of the last plain line.
    last: Mutex<Option<(String, Nanos)>>,
}

struct Bars {
    multi: MultiProgress,
    run: ProgressBar,
    phase: ProgressBar,
}

impl Bars {
    fn new() -> Bars {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(4));
        let run = multi.add(ProgressBar::new(1));
        run.set_style(
            ProgressStyle::with_template(
                "{prefix:.bold} [{bar:30.cyan/blue}] {pos}/{len} phases  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let phase = multi.add(ProgressBar::new_spinner());
        phase.set_style(
            ProgressStyle::with_template("  {spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        phase.enable_steady_tick(Duration::from_millis(250));
        Bars { multi, run, phase }
    }
}

const PLAIN_EVERY: Nanos = Nanos::from_secs(10);

impl ProgressLine {
    pub fn new(forced: bool, quiet: bool) -> Self {
        let tty =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        ProgressLine {
            enabled: !quiet && (tty || forced),
            tty,
            bars: Mutex::new(None),
            started: Instant::now(),
            last: Mutex::new(None),
        }
    }

    pub fn show(&self, p: &Progress<'_>) {
        if !self.enabled {
            return;
        }
        let state = crate::live::current().map(|l| l.snapshot());
        let (line, eta) = describe(p, state.as_ref());
        let elapsed = human_secs(self.started.elapsed().as_secs_f64());
        let run = format!("elapsed {elapsed}{eta}");
        if self.tty {
            let mut bars = self.bars.lock().unwrap_or_else(|e| e.into_inner());
            let b = bars.get_or_insert_with(Bars::new);
            if let Some(s) = &state {
                let (position, planned) = s.position();
                b.run.set_length(planned.max(1) as u64);
                b.run.set_position(position.saturating_sub(1) as u64);
                b.run.set_prefix(s.command.clone());
            }
            b.run.set_message(run);
            b.phase.set_message(line);
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((phase, t)) = &*last
            && phase == p.phase
            && p.elapsed.0 < t.0 + PLAIN_EVERY.0
        {
            return;
        }
        let position = state
            .as_ref()
            .map(|s| s.position())
            .filter(|(_, planned)| *planned > 1)
            .map(|(n, planned)| format!("phase {n} of {planned}  "))
            .unwrap_or_default();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}  {position}{run}");
        *last = Some((p.phase.to_string(), p.elapsed));
    }

    /// Clears the display before results are printed; the next report draws it again.
    pub fn finish(&self) {
        let bars = self.bars.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(b) = bars {
            b.phase.finish_and_clear();
            b.run.finish_and_clear();
            let _ = b.multi.clear();
        } else if self.enabled && self.tty {
            let _ = std::io::stderr().flush();
        }
    }
}

/// The current phase's line and the whole run's ETA ("  ETA 5m40s", or nothing), from
/// the live state when there is one (it keeps the per-second rates) or from the tick.
fn describe(p: &Progress<'_>, state: Option<&LiveState>) -> (String, String) {
    let current = state.and_then(|s| s.current.as_ref().filter(|c| c.name == p.phase));
    let secs = p.elapsed.as_secs_f64().max(1e-9);
    let (iops_now, bw_now, iops_avg, bw_avg) = match current {
        Some(c) => (
            c.iops_now,
            c.bytes_per_sec_now,
            c.iops_mean,
            c.bytes_per_sec_mean,
        ),
        None => {
            let (i, b) = (p.ops as f64 / secs, p.bytes as f64 / secs);
            (i, b, i, b)
        }
    };
    // p99 of the last second, or of this tick's operations without a live state: of
    // every operation together (the live buckets are not kept per operation), and said so.
    let p99 = current
        .and_then(|c| c.p99_now)
        .map(|s| Nanos((s * 1e9) as u64))
        .or_else(|| iolab_core::live_latency::quantile(p.latency, 0.99).map(Nanos));
    let p99 = p99
        .map(|n| format!("  p99 (all ops) {}", n.human()))
        .unwrap_or_default();
    let line = format!(
        "{}  {:.0}s  now {}/s {}{p99}  avg {}/s {}  {} of {} workers done",
        p.phase,
        p.elapsed.as_secs_f64(),
        OpsPerSec(iops_now).human(),
        BytesPerSec(bw_now).human(),
        OpsPerSec(iops_avg).human(),
        BytesPerSec(bw_avg).human(),
        p.workers_done,
        p.workers
    );
    let eta = match state.and_then(|s| s.eta_secs) {
        Some(eta) => format!("  ETA {}", human_secs(eta)),
        None => String::new(),
    };
    (line, eta)
}

fn human_secs(s: f64) -> String {
    let s = s.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}
