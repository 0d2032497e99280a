//! From every rank's outcome to one [`PhaseResult`]: merge histograms, counts and
//! timelines, take the phase time as the slowest rank's and first-done as the earliest
//! finish anywhere, keep per-rank rows, and warn where a load generator was saturated or
//! the storage stalled (no operation completed for seconds: a server restarting).

use std::collections::BTreeMap;

use iolab_core::result::{
    CountAt, CpuUsage, OpCount, OpResult, PhaseKind, PhaseResult, RankSummary, Timeline, host_cpus,
};
use iolab_core::units::Nanos;

use crate::phase::{PhaseRun, RankOutcome};
use crate::recorder::{FirstDoneRate, WorkerMeasure};

/// A rank whose CPU use reaches this share of what it could use is flagged.
const SATURATED: f64 = 0.90;

/// A stretch this long without a completed operation is reported.
const STALL: Nanos = Nanos(5 * Nanos::SECOND.0);

/// The phase's pause (docs/figures.md) as a warning, when it lasted [`STALL`] or more.
fn stall_warning(t: &Timeline, elapsed: Nanos) -> Option<String> {
    let p = t.pause(elapsed)?;
    (p.length >= STALL).then(|| {
        format!(
            "no operation completed for {:.1} s ({:.1}-{:.1} s into the phase): the storage stalled (a server restarting, failing over or overloaded) or one operation took that long",
            p.length.as_secs_f64(),
            p.start.as_secs_f64(),
            (p.start + p.length).as_secs_f64()
        )
    })
}

/// The identity of a phase, decided by the caller.
#[derive(Clone, Debug, Default)]
pub struct PhaseMeta {
    pub name: String,
    pub kind: Option<PhaseKind>,
    pub params: BTreeMap<String, String>,
    pub repetition: u32,
    pub spec: serde_json::Value,
    pub warnings: Vec<String>,
}

/// What the summed first-done rates amount to over the first-done time: never more than
/// was done in all.
fn first_done_count(rate: Option<&FirstDoneRate>, first_done: Nanos, total: OpCount) -> OpCount {
    let Some(r) = rate else {
        return OpCount::default();
    };
    let secs = first_done.as_secs_f64();
    OpCount {
        ops: ((r.ops_per_sec * secs).round() as u64).min(total.ops),
        bytes: ((r.bytes_per_sec * secs).round() as u64).min(total.bytes),
    }
}

pub fn assemble(meta: PhaseMeta, run: &PhaseRun) -> PhaseResult {
    let total = run.merged.clone().unwrap_or_else(|| {
        let mut total = WorkerMeasure::default();
        for o in &run.outcomes {
            total.merge(&o.measure);
        }
        total
    });
    let mut warnings = meta.warnings;
    warnings.extend(run.outcomes.iter().filter_map(saturation_warning));
    let Ranks {
        elapsed,
        first_done,
        cpu,
        per_rank,
    } = Ranks::of(&run.outcomes);
    let ops = total
        .ops
        .iter()
        .map(|(op, m)| {
            OpResult::new(
                *op,
                CountAt {
                    count: m.count,
                    at: elapsed,
                },
                CountAt {
                    count: first_done_count(total.first_done.get(op), first_done, m.count),
                    at: first_done,
                },
                m.errors,
                m.histogram.clone(),
            )
        })
        .collect();
    warnings.extend(stall_warning(&total.timeline, elapsed));
    let workers = run.outcomes.iter().map(|o| o.threads).sum();
    let reduction = total.data.as_ref().map(reduction_figures);
    let mut extra = reduction.unwrap_or_default();
    extra.extend(extra_figures(&total));
    if let Some(depth) = total.latency_depth {
        extra.insert("latency_depth".into(), f64::from(depth));
    }
    PhaseResult {
        figures: None,
        name: meta.name,
        kind: meta.kind.unwrap_or(PhaseKind::Data),
        params: meta.params,
        repetition: meta.repetition,
        spec: meta.spec,
        started_at_ms: run.started_at_ms,
        ranks: run.outcomes.len() as u32,
        workers,
        elapsed,
        first_done,
        ops,
        timeline: total.timeline,
        cpu,
        per_rank,
        errors: total.errors,
        error_count: total.error_count,
        verify_failures: total.verify_failures,
        extra,
        warnings,
        interrupted: run.interrupted,
        telemetry: run.telemetry.clone(),
    }
}

/// A warning when rank `o` kept the CPUs it could use saturated (the load generator may
/// be the bottleneck); phases under a second are too short to judge.
fn saturation_warning(o: &RankOutcome) -> Option<String> {
    let busy = o.cpu.percent_of_one_cpu() / 100.0;
    let usable = o.threads.min(o.cpu.cpus.max(1)) as f64;
    (o.cpu.wall >= Nanos::SECOND && busy >= SATURATED * usable && o.threads > 0).then(|| {
        format!(
            "rank {} on {} kept {:.0}% of {} CPU{} busy: the load generator may be the bottleneck",
            o.rank,
            o.host,
            o.cpu.percent_of_one_cpu(),
            usable as u32,
            if usable as u32 == 1 { "" } else { "s" }
        )
    })
}

/// What the ranks' outcomes give the phase: the slowest rank's time, the earliest
/// finish, the CPU use of all hosts and a row per rank.
struct Ranks {
    elapsed: Nanos,
    first_done: Nanos,
    cpu: CpuUsage,
    per_rank: Vec<RankSummary>,
}

impl Ranks {
    fn of(outcomes: &[RankOutcome]) -> Ranks {
        let mut elapsed = Nanos::ZERO;
        let mut first_done = Nanos(u64::MAX);
        let mut cpu = CpuUsage::default();
        let mut per_rank = Vec::new();
        for o in outcomes {
            elapsed = elapsed.max(o.elapsed);
            first_done = first_done.min(o.first_done);
            cpu.user = cpu.user + o.cpu.user;
            cpu.system = cpu.system + o.cpu.system;
            per_rank.push(RankSummary {
                rank: o.rank,
                host: o.host.clone(),
                threads: o.threads,
                elapsed: o.elapsed,
                first_done: o.first_done,
                ops: o.measure.ops.iter().map(|(k, m)| (*k, m.count)).collect(),
                cpu: o.cpu,
                errors: o.measure.error_count,
                cpu_set: o.cpu_set.clone(),
            });
        }
        if first_done == Nanos(u64::MAX) {
            first_done = Nanos::ZERO;
        }
        first_done = first_done.min(elapsed);
        cpu.wall = elapsed;
        // Ranks sharing a host share its CPUs: count each host's once.
        let mut hosts: Vec<&str> = Vec::new();
        for r in &per_rank {
            if !hosts.contains(&r.host.as_str()) {
                hosts.push(&r.host);
            }
        }
        cpu.cpus = hosts
            .iter()
            .map(|h| host_cpus(per_rank.iter().filter(|r| r.host == *h)))
            .sum();
        Ranks {
            elapsed,
            first_done,
            cpu,
            per_rank,
        }
    }
}

/// The data-reduction figures of a phase: the ratios asked and those measured over the
/// sampled writes (docs/figures.md, *Data reduction*).
fn reduction_figures(d: &crate::worker::reduction::DataSample) -> BTreeMap<String, f64> {
    let mut extra = BTreeMap::new();
    let mut put = |key: &str, v: Option<f64>| {
        if let Some(v) = v {
            extra.insert(key.to_string(), v);
        }
    };
    put("compress_ratio", d.asked_compress);
    put("compress_ratio_measured", d.compress_ratio());
    put("compress_ratio_stream", d.stream_compress_ratio());
    put("dedupe_ratio", d.asked_dedupe);
    put("dedupe_ratio_measured", d.dedupe_ratio());
    put("repeat_ratio_512", d.unit_repeat_ratio());
    put("sampled_writes", Some(d.writes as f64));
    put("sampled_bytes", Some(d.bytes as f64));
    extra
}

/// A workload's own counts, and the summaries of its own distributions
/// (`<name>_count`, `_min_ns`, `_mean_ns`, `_p50_ns`, `_p90_ns`, `_p99_ns`, `_p99.9_ns`,
/// `_max_ns`), as the phase's `extra` figures.
fn extra_figures(total: &WorkerMeasure) -> BTreeMap<String, f64> {
    let mut extra: BTreeMap<String, f64> = total
        .counters
        .iter()
        .map(|(k, v)| (k.clone(), *v as f64))
        .collect();
    for (name, h) in &total.histograms {
        if h.is_empty() {
            continue;
        }
        let s = h.summary();
        for (label, v) in [
            ("count", s.count as f64),
            ("min_ns", s.min.0 as f64),
            ("mean_ns", s.mean),
            ("p50_ns", s.p50.0 as f64),
            ("p90_ns", s.p90.0 as f64),
            ("p99_ns", s.p99.0 as f64),
            ("p99.9_ns", s.p99_9.0 as f64),
            ("max_ns", s.max.0 as f64),
        ] {
            extra.insert(format!("{name}_{label}"), v);
        }
    }
    extra
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use iolab_comm::{Comm, InProcess};
    use iolab_core::result::OpKind;

    use super::*;
    use crate::clock::Clock;
    use crate::phase::{Env, WorkerReport, run_phase};
    use crate::recorder::Recorder;

    const MIB: u64 = 1 << 20;

    struct Still;
    impl Clock for Still {
        fn now(&self) -> Nanos {
            Nanos::ZERO
        }
    }

    /// Three ranks, two on host "a" and one on "b"; rank r writes r + 1 MiB in 1 MiB
    /// blocks and every rank finishes at 500 ms.
    #[test]
    fn per_host_rows_add_up_their_ranks_and_count_cpus_once() {
        let interrupt = AtomicBool::new(false);
        let hosts = |r: u32| {
            if r < 2 {
                "a".to_string()
            } else {
                "b".to_string()
            }
        };
        let results = InProcess::run(3, hosts, |comm: &dyn Comm| {
            let env = Env::new(comm, &interrupt);
            let writes = u64::from(comm.rank()) + 1;
            let run = run_phase(&env, &Still, "write", 1, false, |i, control| {
                let start = control.ready_and_wait(true).unwrap();
                let mut rec = Recorder::new(start, Nanos::SECOND);
                for t in 1..=writes {
                    rec.record(OpKind::Write, Nanos(1), MIB, Nanos(t * 100_000_000));
                }
                control.finished(i);
                Ok(WorkerReport {
                    measure: rec.finish(),
                    completed: writes,
                    finished_at: Nanos(500_000_000),
                })
            })
            .unwrap();
            assemble(PhaseMeta::default(), &run)
        });
        let cpus = iolab_backend::process::allowed_cpus().len() as u32;
        // Only rank 0 receives every rank's outcome; the others assemble their own.
        assert_eq!(results[1].per_rank.len(), 1);
        assert_eq!(results[2].per_rank.len(), 1);
        for p in &results[..1] {
            assert_eq!(p.elapsed, Nanos(500_000_000));
            // The three ranks share this machine's CPUs, but count as two hosts.
            assert_eq!(p.cpu.cpus, 2 * cpus);
            let h = p.per_host();
            assert_eq!(h.len(), 2);
            assert_eq!((h[0].host.as_str(), h[0].ranks.clone()), ("a", vec![0, 1]));
            assert_eq!((h[1].host.as_str(), h[1].ranks.clone()), ("b", vec![2]));
            assert_eq!((h[0].workers, h[0].ops, h[0].bytes.0), (2, 3, 3 * MIB));
            assert_eq!((h[1].workers, h[1].ops, h[1].bytes.0), (1, 3, 3 * MIB));
            // Over the phase's 0.5 s.
            assert_eq!(h[0].iops.get(), 6.0);
            assert_eq!(h[0].bandwidth.get(), 6.0 * MIB as f64);
            assert_eq!((h[0].cpu.cpus, h[0].cpu.wall), (cpus, p.elapsed));
            let cpu_a = p.per_rank[0].cpu.user + p.per_rank[1].cpu.user;
            assert_eq!(h[0].cpu.user, cpu_a);

            let json = serde_json::to_value(p).unwrap();
            let rows = json["per_host"].as_array().unwrap();
            assert_eq!(rows.len(), 2);
            assert_eq!(rows[0]["host"], "a");
            assert_eq!(rows[0]["ranks"], serde_json::json!([0, 1]));
            assert_eq!(rows[1]["ops"], 3);
            // Written and read back, the phase is the same (per_host is derived).
            let back: PhaseResult = serde_json::from_value(json).unwrap();
            assert_eq!(&back, p);
        }
    }
}

#[cfg(test)]
mod stall_tests {
    use super::*;
    use iolab_core::result::Silences;

    fn silent(span: (u64, u64), gaps: &[(u64, u64)]) -> Timeline {
        let ms = Nanos::from_millis;
        Timeline {
            interval: Nanos::SECOND,
            silences: Silences {
                span: Some((ms(span.0), ms(span.1))),
                gaps: gaps.iter().map(|g| (ms(g.0), ms(g.1))).collect(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_stretch_without_completions_is_a_stall() {
        // The MDS restart measured on CephFS: 13 s without a completion in a create phase.
        let t = silent((1, 19_900), &[(3_020, 16_240), (100, 130)]);
        assert_eq!(
            stall_warning(&t, Nanos::from_millis(19_950)).unwrap(),
            "no operation completed for 13.2 s (3.0-16.2 s into the phase): the storage stalled (a server restarting, failing over or overloaded) or one operation took that long"
        );
    }

    #[test]
    fn short_pauses_are_not_stalls_and_one_to_the_end_is() {
        let ms = Nanos::from_millis;
        assert_eq!(
            stall_warning(&silent((0, 6_000), &[(1_000, 5_900)]), ms(6_000)),
            None
        );
        let w = stall_warning(&silent((0, 1_000), &[]), ms(7_000)).unwrap();
        assert!(
            w.starts_with("no operation completed for 6.0 s (1.0-7.0 s"),
            "{w}"
        );
        assert_eq!(stall_warning(&Timeline::default(), ms(9_000)), None);
    }
}
