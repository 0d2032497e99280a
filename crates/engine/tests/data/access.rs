//! Sizes drawn per I/O (fio's bssplit and bsrange), skewed offsets, pacing, think time
//! and the minimum rate, end to end: bytes and I/Os as stored, file contents, and rates
//! measured by the phase's own figures.

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess};
use iolab_core::result::OpKind;
use iolab_core::spec::{BackendKind, DataSpec, RandomKind, RateProcess, RwKind, TargetSpec};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};
use iolab_engine::{DataOptions, run_data};
use iolab_engine::{Env, MonotonicClock, prepare_target};

use super::{dir_target, files_in, null_spec, run_fake, run_real};

fn mix(s: &str) -> Option<iolab_core::spec::SizeMix> {
    Some(s.parse().unwrap())
}

/// A split's I/Os come in its shares: their mean size is the split's mean, and a
/// size-based share moves its bytes and no more than one I/O beyond.
#[test]
fn a_split_moves_its_mean_size_and_its_share() {
    let split = mix("4KiB/10:64KiB/50:32KiB/40");
    let mean = split.as_ref().unwrap().mean();
    for rw in [RwKind::Read, RwKind::Randread] {
        let spec = DataSpec {
            rw,
            block_sizes: split.clone(),
            size: Some(ByteCount::mib(256)),
            ..null_spec()
        };
        let p = &run_fake(&spec, 10)[0];
        let r = p.op(OpKind::Read).unwrap();
        let got = r.bytes.get() as f64 / r.ops as f64;
        // About 5700 I/Os: the mean within 3 % (its standard error is under 1 %).
        assert!((got / mean - 1.0).abs() < 0.03, "{rw:?}: {got} vs {mean}");
        assert!(
            (256 << 20..(256 << 20) + 65536).contains(&r.bytes.get()),
            "{rw:?}: {}",
            r.bytes
        );
    }
}

/// Random offsets that cover every block once with drawn sizes (fio's random map): every
/// byte of the file is written exactly once, so the bytes moved are the file's size and
/// no 4 KiB of it is left as it was (zeros).
#[test]
fn full_coverage_with_drawn_sizes_writes_every_block_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = DataSpec {
        rw: RwKind::Randwrite,
        block_sizes: mix("4KiB/50:16KiB/25:64KiB/25"),
        random: RandomKind::FullCoverage,
        size: Some(ByteCount::mib(8)),
        backend: BackendKind::Psync,
        ..DataSpec::default()
    };
    let p = &run_real(&spec, &dir_target(dir.path(), true))[0];
    let w = p.op(OpKind::Write).unwrap();
    assert_eq!(w.bytes, ByteCount::mib(8));
    assert_eq!(files_in(dir.path()), [("data.r0.t0".to_string(), 8 << 20)]);
    let data = std::fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
    let zero = data.chunks(4096).position(|c| c.iter().all(|b| *b == 0));
    assert_eq!(zero, None, "a block never written");
    // Cut at blocks already done, the I/Os are smaller on average than the split's.
    assert!(w.ops > (8 << 20) / 65536, "{}", w.ops);
}

/// A range draws every multiple of its start up to its end.
#[test]
fn a_range_moves_the_mean_of_its_sizes() {
    let spec = DataSpec {
        rw: RwKind::Write,
        block_sizes: mix("4KiB-64KiB"),
        size: Some(ByteCount::mib(128)),
        ..null_spec()
    };
    let p = &run_fake(&spec, 10)[0];
    let w = p.op(OpKind::Write).unwrap();
    let got = w.bytes.get() as f64 / w.ops as f64;
    assert!((got / (34.0 * 1024.0) - 1.0).abs() < 0.03, "{got}");
}

/// --rate-iops is the rate of all workers of all ranks together: 3 ranks of 2 workers
/// asked for 600 I/Os per second do 600 per second, as their stored figures say.
#[test]
fn a_paced_run_holds_its_rate_over_ranks_and_workers() {
    for process in [RateProcess::Linear, RateProcess::Poisson] {
        let spec = DataSpec {
            threads: 2,
            rate_iops: Some(600),
            rate_process: process,
            runtime: Some(TimeSpan(Nanos::from_millis(1500))),
            ..null_spec()
        };
        let results = InProcess::run(
            3,
            |r| format!("h{r}"),
            |comm: &dyn Comm| {
                let stop = AtomicBool::new(false);
                let env = Env::new(comm, &stop);
                let target =
                    prepare_target(comm, &TargetSpec::default(), spec.backend, true).unwrap();
                run_data(
                    &env,
                    &MonotonicClock,
                    &spec,
                    &target,
                    &DataOptions::default(),
                )
                .unwrap()
            },
        );
        let p = &results[0].phases[0];
        let iops = p.op(OpKind::Read).unwrap().iops.get();
        // Linear: within 3 %; Poisson's 900 arrivals vary by about 1/30 on their own.
        let tolerance = if process == RateProcess::Linear {
            0.03
        } else {
            0.12
        };
        assert!(
            (iops / 600.0 - 1.0).abs() < tolerance,
            "{process:?}: {iops}"
        );
    }
}

/// A byte rate with drawn sizes: the bandwidth, not the I/O count, is held.
#[test]
fn a_byte_rate_holds_the_bandwidth_of_drawn_sizes() {
    let spec = DataSpec {
        rw: RwKind::Randread,
        block_sizes: mix("4KiB/50:64KiB/50"),
        rate: Some(ByteCount::mib(20)),
        runtime: Some(TimeSpan(Nanos::from_millis(1500))),
        threads: 3,
        ..null_spec()
    };
    let p = &run_real(&spec, &TargetSpec::default())[0];
    let bw = p.op(OpKind::Read).unwrap().bandwidth.get();
    assert!((bw / (20 << 20) as f64 - 1.0).abs() < 0.05, "{bw}");
}

/// A think time of 2 ms after every 10 I/Os: 100 I/Os take at least 9 pauses' time,
/// counted in the phase (an upper bound would be a timing assertion).
#[test]
fn think_time_is_part_of_the_phase() {
    let spec = DataSpec {
        size: Some(ByteCount::kib(400)),
        think_time: Some(TimeSpan(Nanos::from_millis(2))),
        think_every: 10,
        ..null_spec()
    };
    let p = &run_real(&spec, &TargetSpec::default())[0];
    assert_eq!(p.op(OpKind::Read).unwrap().ops, 100);
    assert!(p.elapsed >= Nanos::from_millis(18), "{:?}", p.elapsed);
}

/// A minimum the workers cannot keep (they are held to half of it) fails the phase with
/// the worker's shortfall, after fio's 2 s settle.
#[test]
fn a_rate_below_the_minimum_fails_the_phase() {
    let spec = DataSpec {
        rate_iops: Some(100),
        rate_iops_min: Some(100),
        // A pause of 20 ms after every I/O holds it to about 50 per second.
        runtime: Some(TimeSpan::from_secs(5)),
        size: Some(ByteCount::kib(4)),
        think_time: Some(TimeSpan(Nanos::from_millis(20))),
        ..null_spec()
    };
    let p = &run_real(&spec, &TargetSpec::default())[0];
    let e = &p.errors.first().expect("a shortfall").message;
    assert!(
        e.starts_with("reads ran at ")
            && e.contains("below this worker's part (100.0) of --rate-iops-min 100"),
        "{e}"
    );
    assert!(
        p.elapsed < Nanos::from_secs(5),
        "it ended early: {:?}",
        p.elapsed
    );
}

/// Absolute zones beyond a worker's share are refused before anything runs (fio ends
/// such a job with "zoned_abs sizes exceed file size").
#[test]
fn absolute_zones_beyond_the_share_are_refused() {
    let spec = DataSpec {
        rw: RwKind::Randread,
        distribution: Some("zoned_abs:50/2MiB:50/4MiB".parse().unwrap()),
        size: Some(ByteCount::mib(4)),
        ..null_spec()
    };
    let comm = iolab_comm::SingleProcess::new();
    let stop = AtomicBool::new(false);
    let env = Env::new(&comm, &stop);
    let target = prepare_target(&comm, &TargetSpec::default(), spec.backend, true).unwrap();
    let err = run_data(
        &env,
        &MonotonicClock,
        &spec,
        &target,
        &DataOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "--distribution: its zones cover 6MiB but a worker's share of a file is 4MiB"
    );
}
