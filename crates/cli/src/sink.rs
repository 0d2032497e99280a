//! [`RunSink`]: where a run's results go as they are produced. On rank 0 it opens the
//! results store, records the run (with the machine inventory) as incomplete before the
//! first phase, adds each phase as soon as it ends and marks the run finished; a store
//! that cannot be opened is a warning, never a lost benchmark.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use iolab_core::result::{PhaseResult, RunRecord, RunStatus};
use iolab_host::SysRoot;
use iolab_store::{RunId, Store};
use iolab_suites::AiError;

use crate::args::{DbArgs, Recording, StoreArgs};
use crate::runtime::{Runtime, provenance};

/// The run being recorded (database and id), for the stall watchdog, which ends the
/// job from inside a phase and so must mark the run failed without its `RunSink`.
static CURRENT: std::sync::Mutex<Option<(StoreArgs, RunId)>> = std::sync::Mutex::new(None);

/// Marks the run being recorded as failed, with `why` as its warning (rank 0).
pub fn fail_current(why: &str) {
    let current = CURRENT.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(live) = crate::live::current() {
        live.update(|s| s.status = "failed".to_string());
    }
    let Some((args, id)) = current else {
        return;
    };
    let now = iolab_core::civil::now_ms();
    if let Err(e) = open_store(&args)
        .and_then(|mut s| Ok(s.finish_run(id, RunStatus::Failed, now, &[why.to_string()])?))
    {
        eprintln!(
            "iolab: warning: run {id} could not be marked failed: {}",
            crate::exit::one_line(&e)
        );
    }
}

pub struct RunSink {
    store: Option<(Store, RunId)>,
    pub record: RunRecord,
    /// Why (part of) the run could not be stored, though it was asked to be: the run
    /// then ends non-zero, its figures only in its output.
    pub lost: Option<String>,
}

/// Opens the results store `args` point at.
pub fn open_store(args: &StoreArgs) -> Result<Store> {
    let store = match &args.db {
        Some(p) => Store::open(p),
        None => Store::open_default(),
    };
    store.context("opening the results database (choose one with --db FILE or IOLAB_DB)")
}

impl RunSink {
    /// Starts a run of `kind` on `target` (a directory, for the inventory), recorded
    /// where `to` says.
    pub fn start(
        rt: &Runtime,
        to: Recording<'_>,
        kind: &str,
        spec: serde_json::Value,
        target: String,
        dir: Option<&Path>,
    ) -> RunSink {
        let Recording { store: args, label } = to;
        let started = iolab_core::civil::now_ms();
        let mut prov = provenance(rt.comm.as_ref(), target);
        let root = rt.is_root();
        if root {
            let dir: Option<PathBuf> = dir.map(Path::to_path_buf);
            prov.inventory = Some(iolab_host::inventory::collect(
                &SysRoot::live(),
                dir.as_deref(),
            ));
        }
        let mut record = RunRecord::new(kind, spec, prov, started);
        record.label = label;
        let mut lost = None;
        let store = if root && !args.no_store {
            match open_store(args).and_then(|mut s| {
                let id = s.begin_run(&record).context("recording the run")?;
                Ok((s, id))
            }) {
                Ok(pair) => Some(pair),
                Err(e) => {
                    let why = crate::exit::one_line(&e);
                    eprintln!("iolab: warning: this run will not be stored: {why}");
                    lost = Some(why);
                    None
                }
            }
        } else {
            None
        };
        if let Some((_, id)) = &store {
            record.id = id.to_string();
            *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = Some((args.clone(), *id));
        }
        if let Some(live) = crate::live::current() {
            live.update(|s| {
                s.run_id = record.id.clone();
                s.label = record.label.clone();
            });
        }
        RunSink {
            store,
            record,
            lost,
        }
    }

    /// Keeps a finished phase (and stores it at once).
    pub fn phase(&mut self, phase: PhaseResult) {
        if let Some(live) = crate::live::current() {
            live.phase_done(&phase);
        }
        self.keep(phase);
    }

    /// Keeps a finished phase (and stores it at once) without telling the live state,
    /// for a command that tells it its own way (`iolab targets`).
    pub fn keep(&mut self, phase: PhaseResult) {
        if let Some((store, id)) = &mut self.store
            && let Err(e) = store.add_phase(*id, &phase)
        {
            eprintln!("iolab: warning: phase {} was not stored: {e}", phase.name);
            self.lost
                .get_or_insert_with(|| format!("phase {} was not stored: {e}", phase.name));
        }
        self.record.phases.push(phase);
    }

    pub fn phases(&mut self, phases: Vec<PhaseResult>) {
        for p in phases {
            self.phase(p);
        }
    }

    /// Marks the run finished with `status`.
    /// Adds `key` to the run's stored spec (the IO500 score, known at the end).
    pub fn annotate(&mut self, key: &str, value: serde_json::Value) {
        self.record.spec[key] = value;
        if let Some((store, id)) = &mut self.store
            && let Err(e) = store.update_spec(*id, &self.record.spec)
        {
            eprintln!("iolab: warning: the {key} of run {id} could not be stored: {e}");
        }
    }

    /// Removes the run from the store: it was refused before doing anything.
    pub fn discard(mut self) {
        CURRENT.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((store, id)) = &mut self.store
            && let Err(e) = store.delete_run(*id)
        {
            eprintln!(
                "iolab: warning: refused run {id} could not be removed from the results: {e}"
            );
        }
    }

    /// Ends a run an AI workload (train, checkpoint, kvcache) stopped with `e`: an I/O
    /// error is a failed benchmark (kept, exit 1, said on rank 0), Ctrl-C an interrupted
    /// one (kept, 130); anything else is a usage or runtime error: the run is removed and
    /// the error returned (exit 2).
    pub fn end_on(mut self, root: bool, e: AiError) -> Result<u8> {
        match e {
            AiError::Interrupted => {
                self.finish(RunStatus::Interrupted);
                Ok(crate::exit::INTERRUPTED)
            }
            AiError::Io(why) => {
                self.finish(RunStatus::Failed);
                if root {
                    eprintln!("iolab: the benchmark ran but failed: {why}");
                }
                Ok(crate::exit::FAILED)
            }
            e => {
                self.discard();
                Err(anyhow::Error::from(e))
            }
        }
    }

    pub fn finish(&mut self, status: RunStatus) {
        let now = iolab_core::civil::now_ms();
        self.record.status = status;
        self.record.finished_at_ms = Some(now);
        if let Some(live) = crate::live::current() {
            live.update(|s| s.status = format!("{status:?}").to_lowercase());
        }
        if let Some((store, id)) = &mut self.store
            && let Err(e) = store.finish_run(*id, status, now, &self.record.warnings)
        {
            eprintln!("iolab: warning: run {id} could not be marked finished: {e}");
            self.lost
                .get_or_insert_with(|| format!("run {id} could not be marked finished: {e}"));
        }
    }
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
        let writable = open_store(&StoreArgs {
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
