//! The figures of a training run, defined as DLIO computes them (utils/statscounter.py;
//! samples/s as v3.0's DLIO, over AU's window): [`StepTimes`] is one step of one accelerator,
//! [`AcceleratorEpoch`] an accelerator's epoch, [`EpochFigures`] all accelerators'
//! epoch and [`RunFigures`] the run's means. MLPerf Storage's validity checks are
//! [`validity`]. Pure functions: times in, figures out.

use serde::{Deserialize, Serialize};

mod v3;
pub use v3::{
    CheckpointMemory, V3_READ_WITHIN_S, v3_checkpoint_memory_rule, v3_dataset_rule,
    v3_required_files, v3_subset_rule,
};

/// One step of one accelerator, in seconds: waiting for its batch (`load`), from the
/// step's start to the end of its compute (`proc`), the compute it was asked to do
/// (`compute`: a sleep of this length) and the compute as the clock measured it
/// (`measured`: from the batch's arrival to the sleep's end, overshoot and all, as
/// DLIO's statscounter times its `compute`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    pub load: f64,
    pub proc: f64,
    pub compute: f64,
    #[serde(default)]
    pub measured: f64,
}

/// One accelerator's epoch, as DLIO's compute_metrics_train sees a block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AcceleratorEpoch {
    pub steps: u64,
    /// Seconds from the epoch's start (before its loader starts) to its last step's end.
    pub elapsed: f64,
    /// The asked compute of every step but the first.
    pub compute_after_first: f64,
    /// The measured compute of every step but the first.
    #[serde(default)]
    pub measured_after_first: f64,
    /// The first step's proc time (load + compute), which DLIO takes out of the time.
    pub first_proc: f64,
    /// Summed waits for batches, and summed compute (asked, measured), over all steps.
    pub load_sum: f64,
    pub compute_sum: f64,
    #[serde(default)]
    pub measured_sum: f64,
    pub samples: u64,
    pub bytes: u64,
    pub reads: u64,
}

impl AcceleratorEpoch {
    /// Folds a block's steps as DLIO does; `elapsed` spans the block.
    pub fn from_steps(steps: &[StepTimes], elapsed: f64, batch: u64) -> AcceleratorEpoch {
        AcceleratorEpoch {
            steps: steps.len() as u64,
            elapsed,
            compute_after_first: steps.iter().skip(1).map(|s| s.compute).sum(),
            measured_after_first: steps.iter().skip(1).map(|s| s.measured).sum(),
            first_proc: steps.first().map_or(0.0, |s| s.proc),
            load_sum: steps.iter().map(|s| s.load).sum(),
            compute_sum: steps.iter().map(|s| s.compute).sum(),
            measured_sum: steps.iter().map(|s| s.measured).sum(),
            samples: steps.len() as u64 * batch,
            bytes: 0,
            reads: 0,
        }
    }

    /// Accelerator utilization in %, DLIO's: the measured compute of every step but the
    /// first over the time the block took without the first step's load and compute.
    /// Zero when no compute was asked (DLIO's convention for computation_time 0).
    pub fn au_percent(&self) -> f64 {
        self.utilization(self.measured_after_first)
    }

    /// AU over the asked compute: the same window, the compute as configured (a sleep
    /// that overshoots does not raise it).
    pub fn au_nominal_percent(&self) -> f64 {
        self.utilization(self.compute_after_first)
    }

    fn utilization(&self, compute: f64) -> f64 {
        let time = self.elapsed - self.first_proc;
        if self.compute_after_first == 0.0 || time <= 0.0 {
            return 0.0;
        }
        compute / time * 100.0
    }

    /// Samples per second of this accelerator as v3.0's DLIO computes it: over the
    /// same window as AU (its `metric_exclude_start_steps: 1`), the batches of every
    /// step but the first over the block's time less the first step's load and compute.
    /// (DLIO 2.0.0 counted every step over the whole block: with a slow first batch,
    /// lower.) Zero with fewer than two steps, as DLIO's empty window.
    pub fn samples_per_sec(&self) -> f64 {
        let time = self.elapsed - self.first_proc;
        if self.steps < 2 || time <= 0.0 {
            return 0.0;
        }
        let after_first = self.samples as f64 * (self.steps - 1) as f64 / self.steps as f64;
        after_first / time
    }
}

/// All accelerators' epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochFigures {
    pub epoch: u32,
    /// The mean of the accelerators' AU (DLIO: allreduce / comm size).
    pub au_percent: f64,
    /// The same over the asked compute ([`AcceleratorEpoch::au_nominal_percent`]).
    #[serde(default)]
    pub au_nominal_percent: f64,
    /// The sum of the accelerators' samples per second.
    pub samples_per_sec: f64,
    /// DLIO's I/O figure: samples/s x record_length, in MiB/s ("MB/second").
    pub dlio_mib_per_sec: f64,
    /// Bytes really read per second (the longest accelerator's time).
    pub bytes_per_sec: f64,
    pub steps: u64,
    pub samples: u64,
    pub bytes: u64,
    pub reads: u64,
    /// The longest accelerator's epoch, seconds.
    pub elapsed: f64,
    /// Mean wait for a batch and mean compute (asked, measured) per step, seconds.
    pub load_mean: f64,
    pub compute_mean: f64,
    #[serde(default)]
    pub compute_measured_mean: f64,
    /// The lowest accelerator's AU.
    pub au_min_percent: f64,
}

impl EpochFigures {
    pub fn of(epoch: u32, accs: &[AcceleratorEpoch], record_length: f64) -> EpochFigures {
        let n = accs.len().max(1) as f64;
        let steps: u64 = accs.iter().map(|a| a.steps).sum();
        let elapsed = accs.iter().map(|a| a.elapsed).fold(0.0, f64::max);
        let samples_per_sec: f64 = accs.iter().map(AcceleratorEpoch::samples_per_sec).sum();
        let bytes: u64 = accs.iter().map(|a| a.bytes).sum();
        EpochFigures {
            epoch,
            au_percent: accs.iter().map(AcceleratorEpoch::au_percent).sum::<f64>() / n,
            au_nominal_percent: accs
                .iter()
                .map(AcceleratorEpoch::au_nominal_percent)
                .sum::<f64>()
                / n,
            samples_per_sec,
            dlio_mib_per_sec: samples_per_sec * record_length / 1_048_576.0,
            bytes_per_sec: if elapsed > 0.0 {
                bytes as f64 / elapsed
            } else {
                0.0
            },
            steps,
            samples: accs.iter().map(|a| a.samples).sum(),
            bytes,
            reads: accs.iter().map(|a| a.reads).sum(),
            elapsed,
            load_mean: accs.iter().map(|a| a.load_sum).sum::<f64>() / steps.max(1) as f64,
            compute_mean: accs.iter().map(|a| a.compute_sum).sum::<f64>() / steps.max(1) as f64,
            compute_measured_mean: accs.iter().map(|a| a.measured_sum).sum::<f64>()
                / steps.max(1) as f64,
            au_min_percent: if accs.is_empty() {
                0.0
            } else {
                accs.iter()
                    .map(AcceleratorEpoch::au_percent)
                    .fold(f64::INFINITY, f64::min)
            },
        }
    }
}

/// A run's figures over its epochs: DLIO's summary.json "metric" block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    pub accelerators: u64,
    pub epochs: Vec<EpochFigures>,
    pub au_mean_percent: f64,
    /// The epochs' mean AU over the asked compute.
    #[serde(default)]
    pub au_nominal_mean_percent: f64,
    /// numpy's std (population) of the epochs' AU.
    pub au_stdev_percent: f64,
    pub samples_per_sec_mean: f64,
    pub samples_per_sec_stdev: f64,
    pub dlio_mib_per_sec_mean: f64,
    pub au_threshold: f64,
    /// DLIO's train_au_meet_expectation: the mean AU at or above the threshold.
    pub au_met: bool,
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt())
}

impl RunFigures {
    pub fn of(
        accelerators: u64,
        epochs: Vec<EpochFigures>,
        record_length: f64,
        au_threshold: f64,
    ) -> RunFigures {
        let au: Vec<f64> = epochs.iter().map(|e| e.au_percent).collect();
        let tp: Vec<f64> = epochs.iter().map(|e| e.samples_per_sec).collect();
        let (au_mean, au_std) = mean_std(&au);
        let (tp_mean, tp_std) = mean_std(&tp);
        let nominal: Vec<f64> = epochs.iter().map(|e| e.au_nominal_percent).collect();
        RunFigures {
            accelerators,
            au_nominal_mean_percent: mean_std(&nominal).0,
            epochs,
            au_mean_percent: au_mean,
            au_stdev_percent: au_std,
            samples_per_sec_mean: tp_mean,
            samples_per_sec_stdev: tp_std,
            dlio_mib_per_sec_mean: tp_mean * record_length / 1_048_576.0,
            au_threshold,
            au_met: au_mean >= au_threshold,
        }
    }
}

/// One verdict of MLPerf Storage's rules on a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub rule: String,
    pub ok: bool,
    pub detail: String,
}

/// What the validity checks look at.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValidityInput {
    pub dataset_bytes: f64,
    /// Memory of every host of the job, summed.
    pub hosts_memory: u64,
    pub caches_dropped: bool,
    /// Bytes the devices under the data read while the run lasted, when known.
    pub device_read_bytes: Option<u64>,
    pub bytes_read: u64,
    pub steps_per_epoch: u64,
}

/// MLPerf Storage's rules for a closed training submission that one run can show: the
/// dataset at least 5x the hosts' memory (else it may be cached), caches dropped before
/// the run, devices showing the traffic, and 500 steps per epoch.
pub fn validity(v: &ValidityInput) -> Vec<Check> {
    let mut checks = Vec::new();
    let need = 5.0 * v.hosts_memory as f64;
    checks.push(Check {
        rule: "dataset >= 5 x hosts' memory".into(),
        ok: v.hosts_memory > 0 && v.dataset_bytes >= need,
        detail: format!(
            "{:.2} GiB of data, 5 x {:.2} GiB of memory = {:.2} GiB{}",
            v.dataset_bytes / 1073741824.0,
            v.hosts_memory as f64 / 1073741824.0,
            need / 1073741824.0,
            if v.dataset_bytes >= need {
                ""
            } else {
                ": possibly served from the page cache"
            }
        ),
    });
    checks.push(Check {
        rule: "caches dropped".into(),
        ok: v.caches_dropped,
        detail: if v.caches_dropped {
            "the page cache was emptied before the run".into()
        } else {
            "the page cache was not emptied before the run (--drop-caches, as root)".into()
        },
    });
    checks.push(Check {
        rule: "device traffic".into(),
        ok: v
            .device_read_bytes
            .is_some_and(|d| d as f64 >= 0.5 * v.bytes_read as f64),
        detail: match v.device_read_bytes {
            Some(d) => format!(
                "the devices read {:.2} GiB of the {:.2} GiB the loader read",
                d as f64 / 1073741824.0,
                v.bytes_read as f64 / 1073741824.0
            ),
            None => "no device counters for the data's file system".into(),
        },
    });
    checks.push(Check {
        rule: "500 steps per epoch".into(),
        ok: v.steps_per_epoch >= 500,
        detail: format!("{} steps per epoch", v.steps_per_epoch),
    });
    checks
}

/// MLPerf Storage's rule across runs: the counted runs' AU (or samples/s) within 5 % of
/// each other (max over min).
pub fn runs_agree(values: &[f64]) -> Check {
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let spread = if min > 0.0 {
        max / min - 1.0
    } else {
        f64::INFINITY
    };
    Check {
        rule: "runs within 5 %".into(),
        ok: values.len() >= 2 && spread <= 0.05,
        detail: format!(
            "{} runs, spread {:.1} %",
            values.len(),
            if spread.is_finite() {
                spread * 100.0
            } else {
                0.0
            }
        ),
    }
}

/// One run of a repeated training run (`iolab train run --runs`, `--mlperf`): its seed,
/// whether it was a warm-up, and its figures (the mean over its epochs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// "warmup" or the counted run's number from 1.
    pub run: String,
    pub seed: u64,
    pub au_percent: f64,
    pub samples_per_sec: f64,
}

impl RunOutcome {
    pub fn is_warmup(&self) -> bool {
        self.run == "warmup"
    }
}

/// MLPerf Storage's rules across a submission's runs: at least one warm-up run (not
/// counted), 5 counted runs each with its own seed, and the counted runs' AU and
/// samples/s each within 5 % of each other ([`runs_agree`]). AU is left out when no run
/// computed (it is 0 by definition, samples/s is the figure).
pub fn runs_rule(runs: &[RunOutcome]) -> Vec<Check> {
    let warmups = runs.iter().filter(|r| r.is_warmup()).count();
    let counted: Vec<&RunOutcome> = runs.iter().filter(|r| !r.is_warmup()).collect();
    let seeds: std::collections::BTreeSet<u64> = counted.iter().map(|r| r.seed).collect();
    let mut checks = vec![
        Check {
            rule: "one warm-up run".into(),
            ok: warmups >= 1,
            detail: format!("{warmups} warm-up run(s) before the counted ones (--mlperf)"),
        },
        Check {
            rule: "5 counted runs, new seeds".into(),
            ok: counted.len() >= 5 && seeds.len() == counted.len(),
            detail: format!(
                "{} counted run(s), {} distinct seed(s)",
                counted.len(),
                seeds.len()
            ),
        },
    ];
    let au: Vec<f64> = counted.iter().map(|r| r.au_percent).collect();
    if au.iter().any(|&a| a > 0.0) {
        checks.push(Check {
            rule: "runs' AU within 5 %".into(),
            ..runs_agree(&au)
        });
    }
    let sps: Vec<f64> = counted.iter().map(|r| r.samples_per_sec).collect();
    checks.push(Check {
        rule: "runs' samples/s within 5 %".into(),
        ..runs_agree(&sps)
    });
    checks
}

/// The verdict of a set of checks: valid when every one passed, else the rules that
/// failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub valid: bool,
    pub failed: Vec<String>,
}

impl Verdict {
    pub fn of(checks: &[Check]) -> Verdict {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.rule.clone())
            .collect();
        Verdict {
            valid: failed.is_empty(),
            failed,
        }
    }
}

/// One trial of MLPerf Storage's search for the most accelerators at the AU threshold
/// (`iolab_suites::train::search` runs it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchPoint {
    pub accelerators: u64,
    pub au_percent: f64,
    pub samples_per_sec: f64,
    pub passed: bool,
}

/// The search's curve (in the order tried) and its answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub points: Vec<SearchPoint>,
    /// The most accelerators that passed; None when even one failed.
    pub best: Option<u64>,
    /// Why the search stopped climbing ("AU below the threshold at 8", "--max 16").
    pub stopped: String,
}

#[cfg(test)]
mod tests;
