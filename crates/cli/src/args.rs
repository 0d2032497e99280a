//! The options several commands share (the live page, front-ends', output, the results
//! database) and `iolab run`'s. Workload flags come straight from the spec types in
//! iolab-core (one definition per setting).

use std::path::PathBuf;

use clap::Args;
use iolab_core::spec::{DataSpec, TargetSpec};

/// `--stall-timeout` when not given.
pub const DEFAULT_STALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// The live page's options (every long-running command has them).
#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Serve a live page, Prometheus /metrics and /api/status while the run lasts, on
    /// ADDR (HOST:PORT, :PORT or PORT; 127.0.0.1 unless a host is named), or on any free
    /// port of 127.0.0.1 when ADDR is left out. Read-only; rank 0 serves.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
    pub serve: Option<String>,

    /// With --serve: keep serving this long after the run ends, so that a last scrape or
    /// look sees the final figures.
    #[arg(long, value_name = "DURATION", requires = "serve")]
    pub serve_linger: Option<iolab_core::units::TimeSpan>,
}

impl ServeArgs {
    /// Starts the --serve server on rank 0 (nothing without --serve); every rank takes
    /// rank 0's outcome, so a port in use ends the job on every rank at once.
    pub fn start(&self, rt: &crate::runtime::Runtime) -> anyhow::Result<()> {
        let started = if rt.is_root() {
            self.serve_here(&crate::live::command_name())
        } else {
            Ok(())
        };
        rt.agree(started)
    }

    /// On the rank that serves: the server, when --serve asks for one (not collective).
    fn serve_here(&self, command: &str) -> anyhow::Result<()> {
        match &self.serve {
            Some(addr) => crate::live::serve(addr, command, self.serve_linger).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// What the front-ends of other tools' command lines (`iolab fio`, `ior`, `mdtest`) take
/// of iolab's own, before the tool's arguments.
#[derive(Args, Debug, Clone, Default)]
pub struct FrontEndArgs {
    /// A label to find this run by later.
    #[arg(long)]
    pub label: Option<String>,

    #[command(flatten)]
    pub store: StoreArgs,

    #[command(flatten)]
    pub live: ServeArgs,
}

/// Where a run is recorded, and the label it is found by.
pub struct Recording<'a> {
    pub store: &'a StoreArgs,
    pub label: Option<String>,
}

impl FrontEndArgs {
    /// Where the run is recorded: --db, --no-store and --label.
    pub fn recording(&self) -> Recording<'_> {
        Recording {
            store: &self.store,
            label: self.label.clone(),
        }
    }

    /// The output the engine's phases get: quiet (the tool's own output is printed),
    /// labelled, served as asked.
    pub fn output(&self) -> OutputArgs {
        OutputArgs {
            label: self.label.clone(),
            quiet: true,
            live: self.live.clone(),
            ..OutputArgs::default()
        }
    }
}

/// Output options every workload command shares.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Write the result as JSON (schema iolab.run/1, see docs/json-schema.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// A label to find this run by later ("v7.4", "raid6-baseline").
    #[arg(long)]
    pub label: Option<String>,

    /// Show progress even when stderr is not a terminal (a line every 10 s).
    #[arg(long)]
    pub progress: bool,

    /// Print nothing but errors.
    #[arg(long, short = 'Q')]
    pub quiet: bool,

    #[command(flatten)]
    pub live: ServeArgs,

    /// End the job when a worker completes no operation, or a rank does not answer, for
    /// this long (a hung server, a stopped process); the run is stored as failed naming
    /// the rank, host and phase. 0 turns the watchdog off [default: 5min].
    #[arg(long, value_name = "DURATION")]
    pub stall_timeout: Option<iolab_core::units::TimeSpan>,

    #[command(flatten)]
    pub store: StoreArgs,
}

impl OutputArgs {
    /// Where the run is recorded: --db, --no-store and --label.
    pub fn recording(&self) -> Recording<'_> {
        Recording {
            store: &self.store,
            label: self.label.clone(),
        }
    }

    /// The watchdog's limit (None when --stall-timeout is 0).
    pub fn stall_timeout(&self) -> Option<std::time::Duration> {
        let d = self
            .stall_timeout
            .map_or(DEFAULT_STALL_TIMEOUT, |t| t.nanos().to_duration());
        (!d.is_zero()).then_some(d)
    }

    /// What rank 0 sets up before any work is done: the --json check, the live state the
    /// progress display reads, and the --serve server.
    pub fn prepare(&self, rt: &crate::runtime::Runtime) -> anyhow::Result<()> {
        self.check_json(rt)?;
        if rt.is_root() {
            let command = crate::live::command_name();
            crate::live::init(&command);
            self.live.serve_here(&command)?;
        }
        Ok(())
    }

    /// Refuses a --json file that cannot be written, before any work is done (rank 0
    /// writes it). A file this check creates is removed again.
    fn check_json(&self, rt: &crate::runtime::Runtime) -> anyhow::Result<()> {
        let Some(path) = self.json.as_deref().filter(|_| rt.is_root()) else {
            return Ok(());
        };
        // A path that is there (a file, or a link, even one to nothing) is only opened
        // for writing, never created or removed; a new one is created and removed again.
        let existed = std::fs::symlink_metadata(path).is_ok();
        let mut open = std::fs::OpenOptions::new();
        open.write(true);
        if !existed {
            open.create_new(true);
        }
        match open.open(path) {
            Ok(_) => {
                if !existed {
                    let _ = std::fs::remove_file(path);
                }
                Ok(())
            }
            // A link to a file not there yet: writing the result will create it.
            Err(e) if existed && e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => {
                let why = e.to_string();
                let why = why.split(" (os error").next().unwrap_or_default();
                anyhow::bail!("--json {}: {why}", path.display())
            }
        }
    }
}

/// Where results are kept.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Results database [default: $IOLAB_DB, else ~/.local/share/iolab/results.db].
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,

    /// Do not store this run in the results database.
    #[arg(long)]
    pub no_store: bool,
}

/// The results database of a command that reads it (or deletes from it) but stores no
/// run of its own: --db without --no-store.
#[derive(Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// Results database [default: $IOLAB_DB, else ~/.local/share/iolab/results.db].
    #[arg(long, value_name = "FILE", global = true)]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: TargetSpec,

    #[command(flatten)]
    pub spec: DataSpec,

    #[command(flatten)]
    pub output: OutputArgs,
}
