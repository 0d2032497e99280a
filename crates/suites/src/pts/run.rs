//! Running PTS's tests on a prepared device: [`run_pts`] takes a [`PtsPlan`] and runs,
//! for each of its tests, the purge, the workload-independent preconditioning and the
//! rounds until steady, and returns every phase with each test's [`PtsTestResult`].

use std::path::{Path, PathBuf};

use iolab_core::SpecError;
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{BackendKind, DataSpec, Layout, RandomKind, RwKind};
use iolab_core::units::{ByteCount, TimeSpan};
use iolab_engine::Clock;
use iolab_engine::EngineError;
use iolab_engine::Env;
use iolab_engine::PreparedTarget;
use iolab_engine::{DataOptions, run_data};

use super::figures::{cell_tag, latency_tables, mark_window, record_figures};
use super::{Cell, PtsMatrix, PtsRounds, PtsTest, PtsTestResult, fmt_value, mix_name};

/// The settings every cell shares, resolved from the command line.
#[derive(Clone, Debug)]
pub struct PtsPlan {
    pub test: PtsTest,
    /// The tests run one after the other, each with its purge and preconditioning (the
    /// throughput test's block sizes; one matrix otherwise).
    pub subs: Vec<PtsMatrix>,
    /// The active range in bytes from the device's start.
    pub active: u64,
    pub cell_time: TimeSpan,
    pub max_rounds: usize,
    /// The matrix is PTS's whole one (not limited by block sizes or mixes).
    pub whole_matrix: bool,
    pub threads: u32,
    pub queue_depth: u32,
    pub backend: BackendKind,
    /// Passes of sequential writes over the active range before the rounds (0: none).
    pub precondition: u32,
    pub precondition_block_size: ByteCount,
    /// The device or image, its size, and whether it is a block device (for the purge).
    pub device: PathBuf,
    pub size: u64,
    pub is_block_device: bool,
    /// Leave out the purge.
    pub no_purge: bool,
}

impl PtsPlan {
    /// The active range in whole MiB of a device of `size` bytes (every block size divides
    /// it), refused when it has no room for one largest block per thread at least: a round
    /// on less is no round.
    pub fn active_bytes(&self, range: u8) -> Result<u64, SpecError> {
        let size = self.size;
        let largest = self
            .subs
            .iter()
            .flat_map(|m| m.block_sizes.iter().copied())
            .max()
            .unwrap_or(4096);
        let active = (u128::from(size) * u128::from(range) / 100) as u64 / (1 << 20) * (1 << 20);
        let need = largest * u64::from(self.threads) * 2;
        if active < need.max(self.precondition_block_size.get()) {
            return Err(SpecError::new(
                "--device",
                format!(
                    "{} holds {} ({}% active: {}), less than one round needs ({} for {} threads of {} blocks); nothing was written",
                    self.device.display(),
                    ByteCount(size).human(),
                    range,
                    ByteCount(active).human(),
                    ByteCount(need).human(),
                    self.threads,
                    ByteCount(largest)
                ),
            ));
        }
        Ok(active)
    }
}

/// A PTS run that ended: every phase it ran (the window marked on them) and each test.
#[derive(Debug)]
pub struct PtsResult {
    pub tests: Vec<PtsTestResult>,
    pub phases: Vec<PhaseResult>,
}

/// A PTS run that stopped on an error or an interruption, with the phases that ran.
#[derive(Debug)]
pub struct PtsStopped {
    pub phases: Vec<PhaseResult>,
    pub error: EngineError,
}

/// How `run_pts` reports: a line of what it does, and a phase that just ended.
pub struct PtsHooks<'a> {
    pub say: &'a dyn Fn(String),
    pub phase_done: &'a dyn Fn(),
}

/// One cell's workload over `active` bytes.
pub fn cell_spec(plan: &PtsPlan, cell: Cell, active: u64) -> DataSpec {
    let sequential = plan.test == PtsTest::Throughput;
    DataSpec {
        rw: match (cell.read_percent, sequential) {
            (100, false) => RwKind::Randread,
            (0, false) => RwKind::Randwrite,
            (_, false) => RwKind::Randrw,
            (100, true) => RwKind::Read,
            (0, true) => RwKind::Write,
            (_, true) => RwKind::Rw,
        },
        rwmix_read: cell.read_percent,
        block_size: ByteCount(cell.block_size),
        threads: plan.threads,
        queue_depth: plan.queue_depth,
        backend: plan.backend,
        direct: true,
        layout: Layout::Shared,
        total_size: Some(ByteCount(active)),
        random: if sequential {
            DataSpec::default().random
        } else {
            RandomKind::Uniform
        },
        runtime: Some(plan.cell_time),
        ..DataSpec::default()
    }
}

/// Runs every test of `plan` on `target` (a device): purge, preconditioning, rounds.
pub fn run_pts<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    target: &PreparedTarget,
    plan: &PtsPlan,
    hooks: &PtsHooks<'_>,
) -> Result<PtsResult, PtsStopped> {
    let run = |spec: &DataSpec, opts: &DataOptions| -> Result<PhaseResult, EngineError> {
        if env.interrupt.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(EngineError::Interrupted);
        }
        let out = run_data(env, clock, spec, target, opts)?;
        (hooks.phase_done)();
        Ok(out
            .phases
            .into_iter()
            .next()
            .expect("a data run has its phase"))
    };
    let several = plan.subs.len() > 1;
    let mut phases: Vec<PhaseResult> = Vec::new();
    let mut tests = Vec::new();
    for matrix in plan.subs.clone() {
        let of = if several {
            format!(" ({} test)", ByteCount(matrix.block_sizes[0]))
        } else {
            String::new()
        };
        let purge = purge_step(plan);
        (hooks.say)(format!("purge{of}: {purge}"));
        target.mark_written();
        let wipc_name = if several {
            format!("pts-wipc-{}", ByteCount(matrix.block_sizes[0]))
        } else {
            "pts-wipc".into()
        };
        let steps = Steps {
            plan,
            of: &of,
            run: &run,
            say: hooks.say,
        };
        let done = steps.precondition(wipc_name, &mut phases).and_then(|wipc| {
            steps
                .rounds(&matrix, &mut phases)
                .map(|rounds| (wipc, rounds))
        });
        let (wipc, rounds) = match done {
            Ok(done) => done,
            Err(error) => return Err(PtsStopped { phases, error }),
        };
        let outcome = rounds.outcome(&matrix);
        let mut extra_tables = Vec::new();
        if let Some(o) = &outcome {
            mark_window(&mut phases, o, &matrix);
            if plan.test == PtsTest::Latency {
                extra_tables = latency_tables(&phases, &matrix, o);
            }
        }
        tests.push(PtsTestResult {
            matrix,
            purge,
            wipc,
            rounds,
            outcome,
            extra_tables,
        });
    }
    Ok(PtsResult { tests, phases })
}

/// Runs one phase of the test (a cell, or the preconditioning).
type RunPhase<'a> = dyn Fn(&DataSpec, &DataOptions) -> Result<PhaseResult, EngineError> + 'a;

/// Discards the whole device (PTS's purge, as far as iolab can) and says what was done.
fn purge_step(plan: &PtsPlan) -> String {
    if plan.no_purge {
        return "left out (--no-purge)".to_string();
    }
    let path = &plan.device;
    match purge(path, plan.size) {
        Ok(()) => format!(
            "{} discarded ({})",
            ByteCount(plan.size).human(),
            if iolab_backend::nbd::is_uri(path) {
                "NBD trim"
            } else if plan.is_block_device {
                "BLKDISCARD"
            } else {
                "punched out of the file"
            }
        ),
        Err(why) => format!(
            "NOT done: the device cannot discard ({why}); PTS asks for a purge (a secure erase, sanitize or format): the rounds start from the device's current state"
        ),
    }
}

/// Discards the whole device or image: BLKDISCARD, or the file's range punched out.
fn purge(path: &Path, size: u64) -> Result<(), String> {
    let f = iolab_backend::files::DataFile::open(
        path,
        iolab_backend::files::OpenSpec {
            write: true,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    f.discard(0, size).map_err(|e| e.to_string())
}

/// What the preconditioning and the rounds of one test share: the plan, the " of BS"
/// its lines end with, how a phase runs and how a line is said.
struct Steps<'a> {
    plan: &'a PtsPlan,
    of: &'a str,
    run: &'a RunPhase<'a>,
    say: &'a dyn Fn(String),
}

impl Steps<'_> {
    /// Workload-independent preconditioning: sequential writes of the active range,
    /// `precondition` times. Its phase joins `phases`; the text says what it did.
    fn precondition(
        &self,
        name: String,
        phases: &mut Vec<PhaseResult>,
    ) -> Result<String, EngineError> {
        let Steps { plan, of, run, say } = *self;
        if plan.precondition == 0 {
            return Ok("left out (--precondition 0)".to_string());
        }
        let spec = DataSpec {
            rw: RwKind::Write,
            block_size: plan.precondition_block_size,
            threads: 1,
            queue_depth: plan.queue_depth.max(8),
            backend: plan.backend,
            direct: true,
            total_size: Some(ByteCount(plan.active)),
            layout: Layout::Shared,
            ..DataSpec::default()
        };
        let opts = DataOptions {
            name: Some(name),
            fio: iolab_core::spec::FioSettings {
                loops: plan.precondition,
                ..Default::default()
            },
            ..DataOptions::default()
        };
        say(format!(
            "preconditioning{of}: {} x {} of sequential {} writes",
            plan.precondition,
            ByteCount(plan.active).human(),
            plan.precondition_block_size
        ));
        let p = run(&spec, &opts)?;
        let text = format!(
            "{} of sequential {} writes ({}x the active range) in {:.1} s",
            p.op(OpKind::Write)
                .map_or(ByteCount(0), |w| w.bytes)
                .human(),
            plan.precondition_block_size,
            plan.precondition,
            p.elapsed.as_secs_f64()
        );
        phases.push(p);
        Ok(text)
    }

    /// Rounds of the matrix's cells until its tracked cells are steady (or `max_rounds`).
    /// Every cell's phase joins `phases`, the ones before an error too.
    fn rounds(
        &self,
        matrix: &PtsMatrix,
        phases: &mut Vec<PhaseResult>,
    ) -> Result<PtsRounds, EngineError> {
        let Steps { plan, of, run, say } = *self;
        let cells = matrix.cells();
        let mut rounds = PtsRounds::default();
        for round in 0..plan.max_rounds {
            let mut values = Vec::with_capacity(cells.len());
            for cell in &cells {
                let spec = cell_spec(plan, *cell, plan.active);
                let mut params = std::collections::BTreeMap::new();
                params.insert("pts_round".to_string(), (round + 1).to_string());
                params.insert("pts_mix".to_string(), mix_name(cell.read_percent));
                let opts = DataOptions {
                    name: Some(format!("pts-r{}-{}", round + 1, cell_tag(cell))),
                    repetition: round as u32,
                    params,
                    ..DataOptions::default()
                };
                let mut p = run(&spec, &opts)?;
                values.push(record_figures(plan.test, &mut p, round + 1));
                phases.push(p);
            }
            rounds.rounds.push(values);
            say(format!(
                "round {}{of}: {}",
                round + 1,
                matrix
                    .tracked
                    .iter()
                    .map(|c| format!(
                        "{} {}",
                        c.name(),
                        fmt_value(
                            plan.test,
                            rounds.series(matrix, *c).last().copied().unwrap_or(0.0)
                        )
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if rounds.steady_now(matrix) {
                break;
            }
        }
        Ok(rounds)
    }
}
