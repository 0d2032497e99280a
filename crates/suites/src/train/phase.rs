//! What rank 0 makes of an epoch: the figures of every accelerator's report
//! (iolab_core::train::EpochFigures) and the phase stored for it, its typed figures
//! (iolab_core::result::TrainEpochFigures) among them.

use iolab_core::LatencyHistogram;
use iolab_core::result::{
    CpuUsage, OpCount, OpKind, PhaseFigures, PhaseResult, RankSummary, Timeline, TrainEpochFigures,
};
use iolab_core::spec::TrainConfig;
use iolab_core::train::{AcceleratorEpoch, EpochFigures};
use iolab_core::units::Nanos;

use crate::train::run::RankReport;
use crate::train::whole_phase;

/// Rank 0's epoch figures and the phase stored for it.
pub(crate) fn epoch_phase(
    cfg: &TrainConfig,
    epoch: u32,
    reports: &[RankReport],
    started_at_ms: i64,
    interrupted: bool,
) -> (EpochFigures, PhaseResult) {
    let accs: Vec<AcceleratorEpoch> = reports
        .iter()
        .flat_map(|r| r.accs.iter().map(|a| a.epoch))
        .collect();
    let fig = EpochFigures::of(epoch, &accs, cfg.record_length);
    let mut reads = LatencyHistogram::new();
    let mut loads = LatencyHistogram::new();
    let mut timeline = Timeline::default();
    for a in reports.iter().flat_map(|r| r.accs.iter()) {
        timeline.merge(&a.timeline);
        if let Ok(h) = LatencyHistogram::from_bytes(&a.reads_hist) {
            reads.merge(&h);
        }
        if let Ok(h) = LatencyHistogram::from_bytes(&a.load_hist) {
            loads.merge(&h);
        }
    }
    let elapsed = Nanos((fig.elapsed * 1e9) as u64);
    let cpu = CpuUsage {
        user: Nanos(reports.iter().map(|r| r.cpu_user).sum()),
        system: Nanos(reports.iter().map(|r| r.cpu_system).sum()),
        wall: elapsed,
        cpus: iolab_backend::process::allowed_cpus().len() as u32,
    };
    let per_rank = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut ops = std::collections::BTreeMap::new();
            ops.insert(
                OpKind::Read,
                OpCount {
                    ops: r.accs.iter().map(|a| a.epoch.reads).sum(),
                    bytes: r.accs.iter().map(|a| a.epoch.bytes).sum(),
                },
            );
            RankSummary {
                rank: i as u32,
                host: r.host.clone(),
                threads: r.accs.len() as u32 * cfg.reader_threads(),
                elapsed: Nanos(r.elapsed),
                first_done: Nanos(r.elapsed),
                ops,
                cpu: CpuUsage {
                    user: Nanos(r.cpu_user),
                    system: Nanos(r.cpu_system),
                    wall: Nanos(r.elapsed),
                    cpus: cpu.cpus,
                },
                errors: r.accs.iter().filter(|a| a.error.is_some()).count() as u64,
                cpu_set: Vec::new(),
            }
        })
        .collect();
    let figures = typed_figures(cfg, &fig, &accs, reports, &loads, &cpu);
    let mut params = std::collections::BTreeMap::new();
    params.insert("epoch".into(), epoch.to_string());
    params.insert("accelerators".into(), accs.len().to_string());
    params.insert("batch_size".into(), cfg.batch_size.to_string());
    params.insert("read_threads".into(), cfg.read_threads.to_string());
    params.insert("format".into(), cfg.format.extension().to_string());
    let count = OpCount {
        ops: fig.reads,
        bytes: fig.bytes,
    };
    let phase = PhaseResult {
        params,
        cpu,
        per_rank,
        error_count: reports
            .iter()
            .flat_map(|r| r.accs.iter())
            .filter(|a| a.error.is_some())
            .count() as u64,
        figures: Some(PhaseFigures::TrainEpoch(figures)),
        interrupted,
        timeline,
        ..whole_phase(
            format!("train-epoch-{epoch}"),
            OpKind::Read,
            count,
            elapsed,
            reads,
            serde_json::to_value(cfg).unwrap_or_default(),
            started_at_ms,
            (
                reports.len() as u32,
                accs.len() as u32 * cfg.reader_threads(),
            ),
        )
    };
    (fig, phase)
}

/// The epoch's typed figures, from its figures and the accelerators' reports.
fn typed_figures(
    cfg: &TrainConfig,
    fig: &EpochFigures,
    accs: &[AcceleratorEpoch],
    reports: &[RankReport],
    loads: &LatencyHistogram,
    cpu: &CpuUsage,
) -> TrainEpochFigures {
    let secs = |s: f64| Nanos((s.max(0.0) * 1e9) as u64);
    let n = accs.len().max(1) as f64;
    let all_steps: u64 = accs.iter().map(|a| a.steps).sum();
    let waits: u64 = reports
        .iter()
        .flat_map(|r| r.accs.iter())
        .map(|a| a.wait_sum_ns)
        .sum();
    let cpu_ns = cpu.user.0 + cpu.system.0;
    TrainEpochFigures {
        au_percent: fig.au_percent,
        au_min_percent: fig.au_min_percent,
        au_threshold_percent: cfg.au_threshold,
        samples_per_sec: fig.samples_per_sec,
        dlio_mib_per_sec: fig.dlio_mib_per_sec,
        accelerators: accs.len() as u64,
        steps: fig.steps,
        samples: fig.samples,
        load_mean: secs(fig.load_mean),
        compute_mean: secs(fig.compute_mean),
        first_step_mean: secs(accs.iter().map(|a| a.first_proc).sum::<f64>() / n),
        load_p50: loads.percentile(50.0),
        load_p99: loads.percentile(99.0),
        step_wait_mean: Nanos(waits.checked_div(all_steps).unwrap_or(0)),
        cpu_per_sample: Nanos(cpu_ns.checked_div(fig.samples).unwrap_or(0)),
    }
}
