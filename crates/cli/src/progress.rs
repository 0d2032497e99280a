//! The live progress line: on a terminal a line rewritten once a second; elsewhere
//! nothing, unless --progress asks for a plain line every ten seconds.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use iolab_core::units::{ByteCount, Nanos, bandwidth, rate};
use iolab_engine::Progress;

pub struct ProgressLine {
    tty: bool,
    every: Nanos,
    enabled: bool,
    last: Mutex<Option<(String, Nanos, u64, u64)>>,
}

impl ProgressLine {
    pub fn new(forced: bool, quiet: bool) -> Self {
        let tty =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        ProgressLine {
            tty,
            every: if tty {
                Nanos::SECOND
            } else {
                Nanos::from_secs(10)
            },
            enabled: !quiet && (tty || forced),
            last: Mutex::new(None),
        }
    }

    pub fn show(&self, p: &Progress<'_>) {
        if !self.enabled {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let (prev_phase, prev_t, prev_ops, prev_bytes) = last.clone().unwrap_or_default();
        if prev_phase == p.phase && p.elapsed.0 < prev_t.0 + self.every.0 {
            return;
        }
        let (dt, dops, dbytes) = if prev_phase == p.phase {
            (
                p.elapsed.saturating_sub(prev_t),
                p.ops.saturating_sub(prev_ops),
                p.bytes.saturating_sub(prev_bytes),
            )
        } else {
            (p.elapsed, p.ops, p.bytes)
        };
        let line = format!(
            "{}  {:>6}  {:>8}/s  {:>12}  {} of {} workers done",
            p.phase,
            format!("{:.0}s", p.elapsed.as_secs_f64()),
            rate(dops, dt).human(),
            bandwidth(ByteCount(dbytes), dt).human(),
            p.workers_done,
            p.workers
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        *last = Some((p.phase.to_string(), p.elapsed, p.ops, p.bytes));
    }

    /// Clears the line before the summary is printed.
    pub fn finish(&self) {
        if self.enabled && self.tty && self.last.lock().map(|l| l.is_some()).unwrap_or(false) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
