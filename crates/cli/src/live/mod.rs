//! Watching a run while it runs: [`Live`] holds the [`LiveState`] rank 0 updates from
//! the engine's progress ticks and from every finished phase, and [`serve`] starts a
//! small read-only HTTP server ([`http`], hyper) with the live page (`/`), Prometheus
//! metrics (`/metrics`) and the state as JSON (`/api/status`). The server binds 127.0.0.1
//! unless told another address, answers only GET and HEAD, never reads a request body,
//! bounds its connections, their request heads and their time, closes every connection
//! after its answer, and stops when the run ends (`Server::stop`).

mod counters;
mod hosts;
pub mod http;
pub mod kvcache;
mod latency;
mod metrics;
pub mod state;
pub mod targets;
mod train;

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use hyper::StatusCode;
use iolab_core::result::PhaseResult;
use iolab_core::units::TimeSpan;
use iolab_engine::Progress;

pub use state::LiveState;

const PAGE: &str = include_str!("page.html");

/// The live state, shared by the progress callback, the sink and the server threads.
#[derive(Default)]
pub struct Live {
    state: Mutex<LiveState>,
}

static LIVE: OnceLock<Arc<Live>> = OnceLock::new();

/// How long the server outlives the run (--serve-linger).
static LINGER: OnceLock<Duration> = OnceLock::new();

/// The server while it runs.
static SERVER: Mutex<Option<http::Server>> = Mutex::new(None);

/// The live state of this process's run, once `--serve` started it.
pub fn current() -> Option<&'static Arc<Live>> {
    LIVE.get()
}

impl Live {
    pub fn update(&self, f: impl FnOnce(&mut LiveState)) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut s);
    }

    pub fn snapshot(&self) -> LiveState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn progress(&self, p: &Progress<'_>) {
        self.update(|s| s.tick(p));
    }

    /// The phases the run will go through, with their estimated seconds.
    pub fn plan(&self, phases: impl IntoIterator<Item = (String, Option<f64>)>) {
        self.update(|s| {
            s.phases = phases
                .into_iter()
                .map(|(name, estimate_secs)| state::PlannedPhase {
                    name,
                    estimate_secs,
                    ..state::PlannedPhase::default()
                })
                .collect();
            s.update_eta();
        });
    }

    pub fn phase_done(&self, phase: &PhaseResult) {
        self.update(|s| s.phase_done(phase));
    }

    /// A phase of `iolab targets` ended (see [`LiveState::targets_done`]).
    pub fn targets_done(&self, summary: &PhaseResult, targets: &[PhaseResult]) {
        self.update(|s| s.targets_done(summary, targets));
    }
}

/// Starts this process's live state (rank 0, once).
pub fn init(command: &str) {
    let live = LIVE.get_or_init(|| Arc::new(Live::default()));
    live.update(|s| {
        if s.command.is_empty() {
            s.command = command.to_string();
            s.status = "running".into();
            s.started_at_ms = iolab_core::civil::now_ms();
        }
    });
}

/// Tells the live state what the run will go through (rank 0; nothing without one).
pub fn plan(phases: impl IntoIterator<Item = (String, Option<f64>)>) {
    if let Some(live) = current() {
        live.plan(phases);
    }
}

/// Tells the live state the storage targets of `iolab targets`, by their index in the
/// list every rank shares (rank 0; nothing without a live state).
pub fn targets(list: Vec<targets::TargetInfo>) {
    if let Some(live) = current() {
        live.update(|s| s.target_list = list);
    }
}

/// Keeps the server answering for --serve-linger after the run ended, then stops it.
pub fn linger_and_stop() {
    if let Some(d) = LINGER.get() {
        std::thread::sleep(*d);
    }
    let server = SERVER.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(mut s) = server {
        s.stop();
    }
}

/// "run", "study run", "io500": the command as typed, for the page and the labels.
pub fn command_name() -> String {
    let args: Vec<String> = crate::runtime::command_line()
        .into_iter()
        .skip(1)
        .take(2)
        .collect();
    match args.as_slice() {
        [a, b, ..]
            if !b.starts_with('-') && matches!(a.as_str(), "study" | "io500" | "targets") =>
        {
            format!("{a} {b}")
        }
        [a, ..] => a.clone(),
        [] => String::new(),
    }
}

/// Where `--serve` binds: an address as given, a bare port on 127.0.0.1, or none at all
/// for any free port on 127.0.0.1.
pub fn parse_addr(given: &str) -> Result<SocketAddr> {
    let text = given.trim();
    let full = if text.is_empty() {
        "127.0.0.1:0".to_string()
    } else if let Some(port) = text.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if text.chars().all(|c| c.is_ascii_digit()) {
        format!("127.0.0.1:{text}")
    } else {
        text.to_string()
    };
    full.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("--serve {given}: not an address; use HOST:PORT, :PORT or PORT"))
}

/// Starts the server for `command` on rank 0 and returns the address it listens on. A
/// port the user named that cannot be bound is an error before the run starts; when
/// any free port was asked for, a failure is a warning and the run goes on.
pub fn serve(given: &str, command: &str, linger: Option<TimeSpan>) -> Result<Option<SocketAddr>> {
    let addr = parse_addr(given)?;
    let listener = match std::net::TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) if addr.port() == 0 => {
            eprintln!(
                "iolab: warning: --serve: cannot listen on {addr} ({e}); the run goes on without the live page"
            );
            return Ok(None);
        }
        Err(e) => bail!(
            "--serve {given}: cannot listen on {addr}: {e}; choose another port, or --serve alone for any free port"
        ),
    };
    init(command);
    let live = LIVE.get().expect("initialized above").clone();
    if let Some(l) = linger {
        let _ = LINGER.set(Duration::from_nanos(l.nanos().0));
    }
    let server = http::Server::start(listener, move |path| route(path, &live))?;
    let bound = server.addr();
    *SERVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(server);
    eprintln!("iolab: live page at http://{bound}/ (metrics at /metrics, status at /api/status)");
    Ok(Some(bound))
}

/// The answer to a GET of `path`.
fn route(path: &str, live: &Live) -> http::Answer {
    match path {
        "/" | "/index.html" => (StatusCode::OK, PAGE.to_string(), "text/html; charset=utf-8"),
        "/api/status" => match serde_json::to_string(&live.snapshot()) {
            Ok(json) => (StatusCode::OK, json, "application/json"),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{e}\n"),
                "text/plain",
            ),
        },
        "/metrics" => match metrics::render(&live.snapshot()) {
            Ok(text) => (
                StatusCode::OK,
                text,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{e}\n"),
                "text/plain",
            ),
        },
        _ => (
            StatusCode::NOT_FOUND,
            "not found: try /, /metrics or /api/status\n".to_string(),
            "text/plain",
        ),
    }
}
