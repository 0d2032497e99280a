//! MLPerf Storage's judgement of a training run: [`judge_runs`] gives the checks of its
//! counted runs ([`CountedRuns`]) and their verdict, from iolab_core::train's rules.

use iolab_core::spec::TrainConfig;
use iolab_core::train::{
    Check, RunOutcome, ValidityInput, Verdict, runs_rule, v3_dataset_rule, v3_required_files,
    validity,
};

/// What a run's counted runs measured that MLPerf's checks look at.
pub struct CountedRuns<'a> {
    pub outcomes: &'a [RunOutcome],
    /// Caches dropped before each.
    pub dropped: bool,
    /// Bytes the devices under the data read while they lasted, when known.
    pub device_read: Option<u64>,
    pub bytes_read: u64,
}

/// The checks of `runs` of `cfg` on `accelerators` in all, on hosts of `hosts_memory`
/// bytes together (v3.0's dataset rule too when `cfg` is a v3.0 mode), and their verdict.
pub fn judge_runs(
    cfg: &TrainConfig,
    accelerators: u64,
    hosts_memory: u64,
    runs: &CountedRuns<'_>,
) -> (Vec<Check>, Verdict) {
    let mut checks = validity(&ValidityInput {
        dataset_bytes: cfg.dataset_bytes(),
        hosts_memory,
        caches_dropped: runs.dropped,
        device_read_bytes: runs.device_read,
        bytes_read: runs.bytes_read,
        steps_per_epoch: cfg.steps_per_epoch(accelerators),
    });
    if cfg.mode.is_some() {
        let file_bytes = cfg.samples_per_file as f64 * cfg.record_length;
        let required = v3_required_files(
            cfg.samples_per_file,
            file_bytes,
            cfg.batch_size,
            accelerators,
            hosts_memory,
        );
        checks.push(v3_dataset_rule(cfg.files, required));
    }
    checks.extend(runs_rule(runs.outcomes));
    let verdict = Verdict::of(&checks);
    (checks, verdict)
}
