//! IOR's run on iolab's engine: [`run_ior`] runs an IOR plan (iolab_compat::ior_plan),
//! each repetition on its target made ready anew and cleaned after it; a repetition
//! ([`run_repetition`]) runs its write and then its read phase as IOR orders them, with
//! IOR's side files: the stonewalling status file (written after a stonewalled write,
//! read before a read of an earlier one) and the per-rank CSV. Each phase's figures go to
//! the caller as IOR reports them ([`IorPhase`]) the moment it ends.

use std::path::PathBuf;

use iolab_comm::{Comm, CommExt};
use iolab_compat::ior_output::{Access, IorPhase};
use iolab_compat::ior_plan::{IorPlan, file_base, random_read_sources};
use iolab_compat::rank_details::ior_rank_lines;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, TargetSpec};
use iolab_engine::Clock;
use iolab_engine::EngineError;
use iolab_engine::Env;
use iolab_engine::FileNames;
use iolab_engine::PreparedTarget;
use iolab_engine::{DataOptions, DataOutcome, run_data};
use iolab_engine::{finish_target, prepare_target};

/// Why an IOR repetition stopped.
#[derive(Debug, thiserror::Error)]
pub enum IorError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A repetition's target could not be made ready (before any of its phases).
    #[error(transparent)]
    Prepare(EngineError),
    /// A repetition's files could not be removed after it.
    #[error("cleaning up")]
    Cleanup(#[source] EngineError),
    #[error(transparent)]
    Comm(#[from] iolab_comm::CommError),
    /// One of IOR's side files (`-O stoneWallingStatusFile=`, ...) could not be written.
    #[error("{option}{path}")]
    SideFile {
        option: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A `-z -z` read of a file no earlier iolab write left.
    #[error(
        "ior -r -z -z: {} holds no data an earlier iolab ior -w wrote; run the write first (with -k)",
        .0.display()
    )]
    NoData(PathBuf),
    #[error("ior -o: a read needs a directory")]
    NoDirectory,
}

/// What one repetition did: the files it wrote (for the cleanup) and how it ended.
#[derive(Debug)]
struct IorRepetition {
    files: Vec<PathBuf>,
    outcome: Result<(), IorError>,
}

/// How a run reports: a phase's run returned (with or without its result), and a
/// phase's figures (of repetition `rep`) with its results, the moment it ends.
pub struct IorHooks<'a> {
    pub phase_ended: &'a dyn Fn(),
    pub on_phase: &'a mut dyn FnMut(u32, &IorPhase, Vec<PhaseResult>),
}

/// What a whole run found: every phase's figures in order, and whether one failed (an
/// I/O error in a repetition's first phase, a transfer that did not hold its data).
#[derive(Debug, Default)]
pub struct IorRun {
    pub figures: Vec<IorPhase>,
    pub failed: bool,
}

/// Runs every repetition of `plan` (from the second on after -d seconds), each on its
/// target made ready anew and its files removed after it unless -k (the cleanup's error
/// is the run's when the repetition itself went well).
pub fn run_ior<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &IorPlan,
    hooks: &mut IorHooks<'_>,
) -> Result<IorRun, IorError> {
    let o = &plan.options;
    let target = TargetSpec {
        dir: Some(plan.dir.clone()),
        keep: o.keep_file,
        ..TargetSpec::default()
    };
    let mut run = IorRun::default();
    for rep in 0..o.repetitions.max(1) {
        if rep > 0 && o.inter_test_delay > 0 {
            std::thread::sleep(std::time::Duration::from_secs(o.inter_test_delay));
        }
        let prepared = prepare_target(env.comm, &target, BackendKind::Psync, true)
            .map_err(IorError::Prepare)?;
        let outer = &mut *hooks.on_phase;
        let mut each = IorHooks {
            phase_ended: hooks.phase_ended,
            on_phase: &mut |rep, f, phases| {
                run.failed |=
                    phases[0].error_count > 0 || phases.iter().any(|p| p.verify_failures > 0);
                run.figures.push(*f);
                outer(rep, f, phases);
            },
        };
        let done = run_repetition(env, clock, plan, &prepared, rep, &mut each);
        let cleaned = finish_target(env.comm, prepared, &done.files, o.keep_file);
        done.outcome?;
        cleaned.map_err(IorError::Cleanup)?;
    }
    Ok(run)
}

/// Runs repetition `rep` of `plan` on `target`: the write, then the read.
fn run_repetition<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    plan: &IorPlan,
    target: &PreparedTarget,
    rep: u32,
    hooks: &mut IorHooks<'_>,
) -> IorRepetition {
    let run = Repetition {
        env,
        clock,
        plan,
        target,
        rep,
    };
    let mut files = Vec::new();
    let mut written = None;
    for (access, spec) in [(Access::Write, &plan.write), (Access::Read, &plan.read)] {
        let Some(spec) = spec else { continue };
        let step = run.access(access, spec, &mut written);
        (hooks.phase_ended)();
        let step = step.and_then(|ran| {
            files.extend(ran.files.iter().cloned());
            let f = after_phase(env.comm, plan, access, spec, &ran, &mut written)?;
            Ok((f, ran.phases))
        });
        match step {
            Ok((f, phases)) => (hooks.on_phase)(rep, &f, phases),
            Err(e) => {
                return IorRepetition {
                    files,
                    outcome: Err(e),
                };
            }
        }
    }
    IorRepetition {
        files,
        outcome: Ok(()),
    }
}

/// What every phase of a repetition shares.
struct Repetition<'a, C> {
    env: &'a Env<'a>,
    clock: &'a C,
    plan: &'a IorPlan,
    target: &'a PreparedTarget,
    rep: u32,
}

impl<C: Clock> Repetition<'_, C> {
    /// One phase: the read's transfers (as far as a stonewalled write got, or as the
    /// file holds for `-z -z`), its options, and the run.
    fn access(
        &self,
        access: Access,
        spec: &DataSpec,
        written: &mut Option<Vec<u64>>,
    ) -> Result<DataOutcome, IorError> {
        let Repetition {
            env,
            clock,
            plan,
            target,
            rep,
        } = *self;
        let o = &plan.options;
        let comm = env.comm;
        if access == Access::Read && written.is_none() {
            *written = read_status_file(comm, plan);
        }
        // -z -z: IOR draws each transfer over the size of the file as it is (its
        // fileSizeForRead, a stat), -s x -b/-t of them or until -D.
        let random_read = access == Access::Read && plan.write.is_none() && o.random_offset > 1;
        if random_read && written.is_none() {
            *written = Some(existing_blocks(comm, plan, target)?);
        }
        let topo = comm.topology();
        let nodes = topo.hosts().len() as u32;
        let on_first = topo.ranks_on_first_host();
        let opts = DataOptions {
            name: Some(access.name().into()),
            repetition: rep,
            // A stonewalled write is read back as far as it got, as IOR's status file.
            written_blocks: if access == Access::Read {
                written.clone()
            } else {
                None
            },
            names: FileNames::Ior(file_base(&o.test_file)),
            no_verify_pass: !o.check_write,
            own_cache_policy: true,
            ops_per_worker: random_read.then(|| plan.bytes_per_rank / o.transfer_size),
            // -Z: the task each task reads, drawn as IOR draws it.
            read_from: (access == Access::Read)
                .then(|| random_read_sources(o, comm.size(), nodes, on_first, rep))
                .flatten(),
            ..DataOptions::default()
        };
        Ok(run_data(env, clock, spec, target, &opts)?)
    }
}

/// After a phase: the status file of a stonewalled write, the phase's figures as IOR
/// reports them and the per-rank CSV.
fn after_phase(
    comm: &dyn Comm,
    plan: &IorPlan,
    access: Access,
    spec: &DataSpec,
    ran: &DataOutcome,
    written: &mut Option<Vec<u64>>,
) -> Result<IorPhase, IorError> {
    if access == Access::Write && spec.stonewall.is_some() {
        *written = Some(ran.completed.clone());
        write_status_file(comm, plan, &ran.completed)?;
    }
    let phase = &ran.phases[0];
    let f = ior_phase(access, spec, phase);
    save_rank_details(comm, plan, &f, phase)?;
    Ok(f)
}

/// A phase's figures as IOR reports them: every byte and transfer over the phase time.
pub fn ior_phase(access: Access, spec: &DataSpec, p: &PhaseResult) -> IorPhase {
    let op = p.ops.iter().find(|o| {
        matches!(
            (access, o.op),
            (Access::Write, OpKind::Write) | (Access::Read, OpKind::Read)
        )
    });
    let (bytes, transfers, latency) = op.map_or((0, 0, 0.0), |o| {
        (o.bytes.get(), o.ops, o.latency.mean / 1e9)
    });
    IorPhase {
        access,
        bytes,
        transfers,
        total_s: p.elapsed.as_secs_f64(),
        latency_s: latency,
        stonewall: (spec.wear_out && spec.stonewall.is_some()).then(|| {
            (
                p.first_done.as_secs_f64(),
                op.map_or(0, |o| o.first_done_bytes.get()),
            )
        }),
    }
}

/// Every rank learns whether rank 0's step succeeded (one rank: the error as it is).
fn agree<T>(comm: &dyn Comm, step: Result<T, IorError>) -> Result<T, IorError> {
    if comm.size() == 1 {
        return step;
    }
    let step = step.map_err(|e| {
        let mut text = e.to_string();
        if let Some(source) = std::error::Error::source(&e) {
            let source = source.to_string();
            let source = source.split(" (os error").next().unwrap_or_default();
            if !text.contains(source) {
                text = format!("{text}: {source}");
            }
        }
        EngineError::Setup(text)
    });
    Ok(iolab_engine::agree(comm, step)?)
}

/// `-O saveRankPerformanceDetailsCSV=F`: rank 0 appends a line per rank, as IOR does.
fn save_rank_details(
    comm: &dyn Comm,
    plan: &IorPlan,
    f: &IorPhase,
    p: &PhaseResult,
) -> Result<(), IorError> {
    let Some(path) = &plan.options.rank_details_csv else {
        return Ok(());
    };
    let result = if comm.rank() == 0 {
        let secs: Vec<f64> = p.per_rank.iter().map(|r| r.elapsed.as_secs_f64()).collect();
        append(path, &ior_rank_lines(f.access.name(), f.bytes, &secs)).map_err(|source| {
            IorError::SideFile {
                option: "-O saveRankPerformanceDetailsCSV=",
                path: path.clone(),
                source,
            }
        })
    } else {
        Ok(())
    };
    agree(comm, result)
}

/// Appends `text` to the file at `path` (made if missing), as C's fopen(path, "a").
pub fn append(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}

/// `-O stoneWallingStatusFile=F` with a stonewalled write: rank 0 writes the transfers
/// each task reached (after wear-out, the most any task did), as IOR writes it.
fn write_status_file(comm: &dyn Comm, plan: &IorPlan, completed: &[u64]) -> Result<(), IorError> {
    let Some(path) = &plan.options.stonewall_status_file else {
        return Ok(());
    };
    let result = if comm.rank() == 0 {
        let pairs = completed.iter().copied().max().unwrap_or(0);
        std::fs::write(path, pairs.to_string()).map_err(|source| IorError::SideFile {
            option: "-O stoneWallingStatusFile=",
            path: path.clone(),
            source,
        })
    } else {
        Ok(())
    };
    agree(comm, result)
}

/// A read without a write in this run reads as many transfers per rank as the status
/// file of an earlier stonewalled write says (IOR's ReadStoneWallingIterations: rank 0
/// reads it; missing or unreadable, the whole -b x -s is read, as IOR does).
fn read_status_file(comm: &dyn Comm, plan: &IorPlan) -> Option<Vec<u64>> {
    let path = plan.options.stonewall_status_file.as_ref()?;
    let mine = if comm.rank() == 0 {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0)
    } else {
        0
    };
    let pairs = comm.all_max(mine);
    (pairs > 0).then(|| vec![pairs; comm.size() as usize])
}

/// The transfers each task's file holds now (IOR stats the file a `-z -z` read draws
/// over): rank 0 looks at every task's file, as iolab recorded it when it wrote it.
fn existing_blocks(
    comm: &dyn Comm,
    plan: &IorPlan,
    target: &PreparedTarget,
) -> Result<Vec<u64>, IorError> {
    let o = &plan.options;
    let tasks = comm.size();
    let looked = if comm.rank() == 0 {
        file_sizes(plan, target, tasks)
    } else {
        Ok(Vec::new())
    };
    // Every rank learns whether rank 0 found the files before any waits for their sizes.
    let sizes = agree(comm, looked)?;
    let sizes: Vec<u64> = comm.broadcast(0, &sizes)?;
    let t = o.transfer_size;
    Ok(if o.file_per_proc {
        sizes.iter().map(|s| s / t).collect()
    } else {
        // One shared file: each task draws over its share of the file's transfers.
        let all = sizes.first().copied().unwrap_or(0) / t;
        (0..u64::from(tasks))
            .map(|_| all / u64::from(tasks))
            .collect()
    })
}

/// The bytes iolab recorded in each task's file (one shared file: one size).
fn file_sizes(plan: &IorPlan, target: &PreparedTarget, tasks: u32) -> Result<Vec<u64>, IorError> {
    let o = &plan.options;
    let workdir = target.workdir().ok_or(IorError::NoDirectory)?;
    let base = file_base(&o.test_file);
    let names: Vec<String> = if o.file_per_proc {
        (0..tasks).map(|r| format!("{base}.{r:08}")).collect()
    } else {
        vec![base]
    };
    names
        .iter()
        .map(|name| {
            let path = workdir.join(name);
            workdir
                .file_info(&path)
                .map(|i| i.size)
                .ok_or(IorError::NoData(path))
        })
        .collect()
}
