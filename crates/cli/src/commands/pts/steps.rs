//! The steps of one of PTS's tests on the device: the active range, the purge, the
//! workload-independent preconditioning and the rounds until steady.

use std::path::Path;

use anyhow::{Result, bail};
use iolab_core::result::{OpKind, PhaseResult};
use iolab_core::spec::{DataSpec, Layout, RwKind};
use iolab_core::units::ByteCount;
use iolab_engine::EngineError;
use iolab_engine::data::DataOptions;
use iolab_suites::pts::{PtsMatrix, PtsRounds};

use super::figures::{cell_tag, fmt_value, mix_name, record_figures};
use super::{Plan, PtsArgs, cell_spec};

/// Runs one phase of the test (a cell, or the preconditioning).
pub(super) type RunPhase<'a> =
    dyn Fn(&DataSpec, &DataOptions) -> Result<PhaseResult, EngineError> + 'a;

/// The active range in whole MiB (every block size divides it), refused when it has no
/// room for one largest block per thread at least: a round on less is no round.
pub(super) fn active_bytes(args: &PtsArgs, plan: &Plan, range: u8, size: u64) -> Result<u64> {
    let largest = plan
        .subs
        .iter()
        .flat_map(|m| m.block_sizes.iter().copied())
        .max()
        .unwrap_or(4096);
    let active = (u128::from(size) * u128::from(range) / 100) as u64 / (1 << 20) * (1 << 20);
    let need = largest * u64::from(plan.threads) * 2;
    if active < need.max(args.precondition_block_size.get()) {
        bail!(
            "--device: {} holds {} ({}% active: {}), less than one round needs ({} for {} threads of {} blocks); nothing was written",
            args.target_path().display(),
            ByteCount(size).human(),
            range,
            ByteCount(active).human(),
            ByteCount(need).human(),
            plan.threads,
            ByteCount(largest)
        );
    }
    Ok(active)
}

/// Discards the whole device (PTS's purge, as far as iolab can) and says what was done.
pub(super) fn purge_step(args: &PtsArgs, size: u64, is_block_device: bool) -> String {
    if args.no_purge {
        return "left out (--no-purge)".to_string();
    }
    let path = args.target_path();
    match purge(&path, size) {
        Ok(()) => format!(
            "{} discarded ({})",
            ByteCount(size).human(),
            if iolab_backend::nbd::is_uri(&path) {
                "NBD trim"
            } else if is_block_device {
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

/// What the preconditioning and the rounds of one test share: its arguments and plan,
/// the active range, the " of BS" its lines end with, how a phase runs and how a line is
/// said.
pub(super) struct Steps<'a> {
    pub args: &'a PtsArgs,
    pub plan: &'a Plan,
    pub active: u64,
    pub of: &'a str,
    pub run: &'a RunPhase<'a>,
    pub say: &'a dyn Fn(String),
}

impl Steps<'_> {
    /// Workload-independent preconditioning: sequential writes of the active range,
    /// `--precondition` times. Its phase joins `phases`; the text says what it did.
    pub(super) fn precondition(
        &self,
        name: String,
        phases: &mut Vec<PhaseResult>,
    ) -> Result<String, EngineError> {
        let Steps {
            args,
            plan,
            active,
            of,
            run,
            say,
        } = *self;
        if args.precondition == 0 {
            return Ok("left out (--precondition 0)".to_string());
        }
        let spec = DataSpec {
            rw: RwKind::Write,
            block_size: args.precondition_block_size,
            threads: 1,
            queue_depth: plan.queue_depth.max(8),
            backend: args.backend,
            direct: true,
            total_size: Some(ByteCount(active)),
            layout: Layout::Shared,
            ..DataSpec::default()
        };
        let opts = DataOptions {
            name: Some(name),
            loops: args.precondition,
            ..DataOptions::default()
        };
        say(format!(
            "preconditioning{of}: {} x {} of sequential {} writes",
            args.precondition,
            ByteCount(active).human(),
            args.precondition_block_size
        ));
        let p = run(&spec, &opts)?;
        let text = format!(
            "{} of sequential {} writes ({}x the active range) in {:.1} s",
            p.op(OpKind::Write)
                .map_or(ByteCount(0), |w| w.bytes)
                .human(),
            args.precondition_block_size,
            args.precondition,
            p.elapsed.as_secs_f64()
        );
        phases.push(p);
        Ok(text)
    }

    /// Rounds of the matrix's cells until its tracked cells are steady (or `max_rounds`).
    /// Every cell's phase joins `phases`, the ones before an error too.
    pub(super) fn rounds(
        &self,
        matrix: &PtsMatrix,
        phases: &mut Vec<PhaseResult>,
    ) -> Result<PtsRounds, EngineError> {
        let Steps {
            args,
            plan,
            active,
            of,
            run,
            say,
        } = *self;
        let cells = matrix.cells();
        let mut rounds = PtsRounds::default();
        for round in 0..plan.max_rounds {
            let mut values = Vec::with_capacity(cells.len());
            for cell in &cells {
                let spec = cell_spec(args, *cell, active, plan.cell_time);
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
