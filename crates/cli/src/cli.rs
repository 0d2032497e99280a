//! The command line: subcommands with long kebab-case flags and human units. Workload
//! flags come straight from the spec types in iolab-core (one definition per setting).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use iolab_core::spec::{DataSpec, TargetSpec};

#[derive(Parser, Debug)]
#[command(
    name = "iolab",
    version,
    about = "Storage benchmark and characterization for HPC and AI storage",
    long_about = "iolab runs data and metadata workloads on any POSIX path or block device, on one node or across many under MPI, and reports bandwidth, IOPS and latency figures you can trust.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a data workload (fio-style): sequential or random, read, write or mixed.
    Run(RunArgs),
    /// Run a study: sweeps and matrices from a preset or a study file.
    Study(crate::commands::study::StudyArgs),
    /// List, show, export or delete stored runs.
    Results(crate::commands::results::ResultsArgs),
    /// Compare two runs or labels: peak against peak for every metric, with the change in %.
    Compare(crate::commands::results::CompareArgs),
    /// Write a report of a run (and runs to compare it with): HTML with charts, Markdown, CSV.
    Report(crate::commands::results::ReportArgs),
    /// Run a metadata workload (mdtest-style): create, stat, read, remove trees.
    Meta(crate::commands::meta::MetaArgs),
    /// Walk a tree in parallel and count matching files (IO500's find phase).
    Find(crate::commands::find::FindArgs),
    /// Benchmark every storage target at once and flag slow ones.
    Targets(crate::commands::targets::TargetsArgs),
    /// Measure the network between ranks alone (no storage involved).
    Net(crate::commands::net::NetArgs),
    /// Run an object storage workload over S3 (warp-style): put, get, stat, list, delete, mixed.
    S3(crate::commands::s3::S3Args),
    /// Find the highest IOPS at an acceptable latency: step the load up until a latency objective breaks.
    Ladder(crate::commands::ladder::LadderArgs),
    /// Check the tuning of this machine against what storage studies recommend (reads only).
    Audit(crate::commands::audit::AuditArgs),
    /// Project a device's lifetime at a write rate against its rated endurance.
    Endurance(crate::commands::endurance::EnduranceArgs),
    /// Describe the machine under test: CPU, memory, kernel, file system, devices, network.
    Inventory(crate::commands::inventory::InventoryArgs),
    /// Run the IO500 suite, plan it, or score an IO500 result.
    Io500(crate::commands::io500::Io500Args),
    /// Run fio command lines and job files on iolab's engine, printing fio's output shapes.
    Fio(crate::commands::fio::FioArgs),
    /// Run an IOR command line (POSIX) on iolab's engine, printing IOR's results tables.
    Ior(crate::commands::ior::IorArgs),
    /// Run an mdtest command line (files, POSIX) on iolab's engine, printing mdtest's table.
    Mdtest(crate::commands::mdtest::MdtestArgs),
    /// AI training's data loading as MLPerf Storage's DLIO runs it: datagen, run, search.
    Train(crate::commands::train::TrainArgs),
    /// LLM checkpointing as MLPerf Storage v2.0 runs it: Llama 3 8B to 1T shards, written and read back.
    Checkpoint(crate::commands::checkpoint::CheckpointArgs),
    /// SNIA PTS 2.0's IOPS test on a flash device: purge, precondition, rounds until steady.
    Pts(crate::commands::pts::PtsArgs),
}

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

impl FrontEndArgs {
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

impl DbArgs {
    /// Opens the database to read and write; one that cannot be written (a read-only
    /// mount) is opened read-only, so it can still be listed, shown and compared. A
    /// --db that is not there is refused: these commands store no run, so a typo in the
    /// path would otherwise create an empty database and list nothing, exit 0.
    pub fn open(&self) -> anyhow::Result<iolab_store::Store> {
        if let Some(p) = &self.db
            && std::fs::symlink_metadata(p).is_err()
        {
            anyhow::bail!(
                "--db {}: no such results database; check the path (runs are stored \
                 there by a command given --db {0})",
                p.display()
            );
        }
        let writable = crate::sink::open_store(&StoreArgs {
            db: self.db.clone(),
            no_store: true,
        });
        let Err(e) = writable else {
            return writable;
        };
        let path = match &self.db {
            Some(p) => Some(p.clone()),
            None => iolab_store::default_db_path().ok(),
        };
        match path.filter(|p| p.is_file()) {
            Some(p) => iolab_store::Store::open_read_only(&p).map_err(|_| e),
            None => Err(e),
        }
    }
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
