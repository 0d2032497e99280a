//! What rank 0 makes of an epoch: the figures of every accelerator's report
//! (iolab_core::train::EpochFigures), added to the phase the engine assembled, its
//! typed figures (iolab_core::result::TrainEpochFigures) among them.

use iolab_core::LatencyHistogram;
use iolab_core::result::{CpuUsage, PhaseFigures, PhaseResult, TrainEpochFigures};
use iolab_core::spec::TrainConfig;
use iolab_core::train::{AcceleratorEpoch, EpochFigures};
use iolab_core::units::Nanos;

use crate::train::run::RankReport;

/// Rank 0's epoch figures and the phase stored for it: the engine's phase (reads,
/// timeline, per-rank rows, errors) with the epoch's figures, and the CPU of the whole
/// processes (the loaders' reader threads with the accelerators).
pub(crate) fn epoch_phase(
    cfg: &TrainConfig,
    epoch: u32,
    reports: &[RankReport],
    mut phase: PhaseResult,
) -> (EpochFigures, PhaseResult) {
    let accs: Vec<AcceleratorEpoch> = reports
        .iter()
        .flat_map(|r| r.accs.iter().map(|a| a.epoch))
        .collect();
    let fig = EpochFigures::of(epoch, &accs, cfg.record_length);
    let mut loads = LatencyHistogram::new();
    for a in reports.iter().flat_map(|r| r.accs.iter()) {
        if let Ok(h) = LatencyHistogram::from_bytes(&a.load_hist) {
            loads.merge(&h);
        }
    }
    phase.cpu.user = Nanos(reports.iter().map(|r| r.cpu_user).sum());
    phase.cpu.system = Nanos(reports.iter().map(|r| r.cpu_system).sum());
    let figures = typed_figures(cfg, &fig, &accs, reports, &loads, &phase.cpu);
    phase.figures = Some(PhaseFigures::TrainEpoch(figures));
    let params = [
        ("epoch", epoch.to_string()),
        ("accelerators", accs.len().to_string()),
        ("batch_size", cfg.batch_size.to_string()),
        ("read_threads", cfg.read_threads.to_string()),
        ("format", cfg.format.extension().to_string()),
    ];
    for (k, v) in params {
        phase.params.insert(k.into(), v);
    }
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
        au_nominal_percent: fig.au_nominal_percent,
        au_min_percent: fig.au_min_percent,
        au_threshold_percent: cfg.au_threshold,
        samples_per_sec: fig.samples_per_sec,
        dlio_mib_per_sec: fig.dlio_mib_per_sec,
        accelerators: accs.len() as u64,
        steps: fig.steps,
        samples: fig.samples,
        load_mean: secs(fig.load_mean),
        compute_mean: secs(fig.compute_mean),
        compute_measured_mean: secs(fig.compute_measured_mean),
        first_step_mean: secs(accs.iter().map(|a| a.first_proc).sum::<f64>() / n),
        load_p50: loads.percentile(50.0),
        load_p99: loads.percentile(99.0),
        step_wait_mean: Nanos(waits.checked_div(all_steps).unwrap_or(0)),
        cpu_per_sample: Nanos(cpu_ns.checked_div(fig.samples).unwrap_or(0)),
    }
}
