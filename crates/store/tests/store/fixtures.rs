//! Test fixtures built with the core types' plain constructors: [`run_record`] is a run
//! with provenance and inventory, [`data_phase`] and [`meta_phase`] are phases with
//! several operations, histograms, timeline, per-rank rows, errors and telemetry.
// Fixtures set what the tests look at and default the rest, so a field added to a core
// type with a Default does not break them.
#![allow(clippy::needless_update)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use iolab_core::histogram::LatencyHistogram;
use iolab_core::inventory::{BlockDeviceInfo, CpuInfo, Inventory, NetInterfaceInfo, TargetInfo};
use iolab_core::result::{CheckpointFigures, PhaseFigures};
use iolab_core::result::{
    CpuUsage, ErrorRecord, OpCount, OpKind, OpResult, OpSeries, PhaseKind, PhaseResult, Provenance,
    RankSummary, RunProcess, RunRecord, Timeline,
};
use iolab_core::telemetry::{CpuSeries, DeviceSeries, Telemetry};
use iolab_core::units::{ByteCount, BytesPerSec, Nanos};
use iolab_store::Store;
use serde_json::json;

/// A fresh database in its own temporary directory (kept alive by the returned guard).
pub fn temp_store() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("nested").join("results.db");
    let store = Store::open(&path).expect("open a new store");
    (dir, path, store)
}

pub fn inventory() -> Inventory {
    Inventory {
        hostname: "node01".into(),
        collected_at_ms: 1_700_000_000_000,
        os: Some("Debian GNU/Linux 12".into()),
        kernel: Some("6.1.0-18-amd64".into()),
        cpu: CpuInfo {
            model: Some("AMD EPYC 7543".into()),
            sockets: Some(2),
            cores: Some(64),
            threads: Some(128),
            numa_nodes: Some(8),
            governor: None,
            ..CpuInfo::default()
        },
        memory_bytes: Some(512 << 30),
        mitigations: BTreeMap::from([("spectre_v2".into(), "Mitigation: Retpolines".into())]),
        target: Some(TargetInfo {
            path: "/mnt/nfs/bench".into(),
            mount_point: Some("/mnt/nfs".into()),
            fs_type: Some("nfs4".into()),
            source: Some("nfs1:/export".into()),
            device_number: Some("0:53".into()),
            source_device: None,
            mount_options: vec!["rw".into(), "rsize=1048576".into(), "nconnect=8".into()],
            key_options: BTreeMap::from([
                ("rsize".into(), "1048576".into()),
                ("nconnect".into(), "8".into()),
            ]),
            capacity_bytes: Some(10 << 40),
            free_bytes: None,
            block_devices: vec![BlockDeviceInfo {
                name: "nvme0n1".into(),
                rotational: Some(false),
                scheduler: Some("none".into()),
                queue_depth: Some(1023),
                ..BlockDeviceInfo::default()
            }],
            ..TargetInfo::default()
        }),
        network: vec![NetInterfaceInfo {
            name: "ib0".into(),
            speed_mbps: Some(100_000),
            mtu: Some(4092),
            state: Some("up".into()),
            driver: Some("mlx5_core".into()),
            addresses: vec!["10.0.0.1/24".into()],
            ..NetInterfaceInfo::default()
        }],
        notes: vec!["block devices: under NFS, none local".into()],
        ..Inventory::default()
    }
}

pub fn provenance() -> Provenance {
    Provenance {
        iolab_version: "0.1.0".into(),
        git_revision: Some("cf38267".into()),
        command: vec![
            "iolab".into(),
            "study".into(),
            "run".into(),
            "nfs".into(),
            "--label".into(),
            "v7.4 \"rc1\"".into(),
        ],
        hosts: vec!["node01".into(), "node02".into()],
        ranks: 2,
        target: "/mnt/nfs/bench".into(),
        inventory: Some(inventory()),
        process: Some(RunProcess {
            host: "node01".into(),
            pid: 4242,
            start_ticks: 123_456,
            boot_id: "0f6c1a2e-8d1b-4c59-9e7a-3b2d1c0e9f8a".into(),
        }),
    }
}

/// A run as the CLI builds it before storing it: no phases yet.
pub fn run_record(label: Option<&str>, started_at_ms: i64) -> RunRecord {
    let spec = json!({"preset": "nfs", "threads": [1, 2, 4], "block_size": "1MiB", "scale": 0.25});
    let mut record = RunRecord::new("study", spec, provenance(), started_at_ms);
    record.label = label.map(str::to_string);
    record.warnings = vec!["page cache may serve reads: data set 2 GiB < RAM 512 GiB".into()];
    record
}

fn histogram(base_ns: u64, samples: u64) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    for i in 0..samples {
        h.record(base_ns + i * 37);
    }
    h.record(base_ns * 100); // a tail
    h
}

fn op(op: OpKind, ops: u64, block: u64, elapsed: Nanos, base_ns: u64) -> OpResult {
    OpResult::new(
        op,
        iolab_core::result::CountAt {
            count: OpCount {
                ops,
                bytes: ops * block,
            },
            at: elapsed,
        },
        iolab_core::result::CountAt {
            count: OpCount {
                ops: ops * 9 / 10,
                bytes: ops * 9 / 10 * block,
            },
            at: Nanos(elapsed.0 * 9 / 10),
        },
        ops % 3,
        if ops == 0 {
            LatencyHistogram::new()
        } else {
            histogram(base_ns, 500)
        },
    )
}

fn rank(rank: u32, host: &str, elapsed: Nanos) -> RankSummary {
    RankSummary {
        rank,
        host: host.into(),
        threads: 4,
        elapsed,
        first_done: Nanos(elapsed.0 - 1_000_000),
        ops: BTreeMap::from([
            (
                OpKind::Read,
                OpCount {
                    ops: 1000 + u64::from(rank),
                    bytes: 4096 * 1000,
                },
            ),
            (
                OpKind::Write,
                OpCount {
                    ops: 10,
                    bytes: 40960,
                },
            ),
        ]),
        cpu: CpuUsage {
            user: Nanos(300_000_000),
            system: Nanos(700_000_000),
            wall: elapsed,
            cpus: 64,
        },
        errors: u64::from(rank),
        cpu_set: Vec::new(),
    }
}

fn telemetry() -> Telemetry {
    Telemetry {
        interval: Nanos::SECOND,
        host: "node01".into(),
        devices: vec![DeviceSeries {
            name: "nvme0n1".into(),
            read_iops: vec![1200.5, 1300.25],
            write_iops: vec![0.0, 1.0],
            read_bytes_per_sec: vec![4.9e6, 5.3e6],
            write_bytes_per_sec: vec![0.0, 4096.0],
            queue_size: vec![7.9, 8.0],
            read_await_ms: vec![0.21, 0.19],
            write_await_ms: vec![0.0, 0.05],
            util_percent: vec![99.5, 100.0],
            ..DeviceSeries::default()
        }],
        cpu: CpuSeries {
            user_percent: vec![3.5, 4.0],
            system_percent: vec![12.25, 11.0],
            iowait_percent: vec![0.5, 0.0],
            ..CpuSeries::default()
        },
        ..Telemetry::default()
    }
}

/// A random-read/write data phase with everything a phase can carry.
pub fn data_phase(threads: u32, started_at_ms: i64) -> PhaseResult {
    let elapsed = Nanos::from_secs(30);
    let ops = vec![
        op(
            OpKind::Read,
            120_000 * u64::from(threads),
            4096,
            elapsed,
            80_000,
        ),
        op(OpKind::Write, 40_000, 4096, elapsed, 150_000),
        op(OpKind::Fsync, 12, 0, elapsed, 2_000_000),
    ];
    PhaseResult {
        // Typed figures ride through the store as they are (a checkpoint's, here).
        figures: Some(PhaseFigures::Checkpoint(CheckpointFigures {
            checkpoints: 2,
            checkpoint_bytes: ByteCount(3 << 30),
            duration_mean: Nanos(1_234_567_891),
            throughput_mean: BytesPerSec(2.5e9),
            slowest_rank_mean: Nanos(1_000_000_007),
            simulated_ranks: 8,
        })),
        name: "randrw-4KiB".into(),
        kind: PhaseKind::Data,
        params: BTreeMap::from([
            ("threads".into(), threads.to_string()),
            ("block_size".into(), "4KiB".into()),
        ]),
        repetition: 1,
        spec: json!({"pattern": "random", "block_size": 4096, "read_percent": 75, "direct": true}),
        started_at_ms,
        ranks: 2,
        workers: threads * 2,
        elapsed,
        first_done: Nanos(elapsed.0 * 9 / 10),
        ops,
        timeline: Timeline {
            interval: Nanos::SECOND,
            series: vec![
                OpSeries {
                    op: OpKind::Read,
                    ops: vec![4000, 4100, 3900],
                    bytes: vec![4000 * 4096, 4100 * 4096, 3900 * 4096],
                    latency_sum: vec![320_000_000, 330_000_000, 310_000_000],
                },
                OpSeries {
                    op: OpKind::Write,
                    ops: vec![1300, 1400, 0],
                    bytes: vec![1300 * 4096, 1400 * 4096, 0],
                    latency_sum: vec![195_000_000, 210_000_000, 0],
                },
            ],
            ..Default::default()
        },
        cpu: CpuUsage {
            user: Nanos(600_000_000),
            system: Nanos(1_400_000_000),
            wall: elapsed,
            cpus: 128,
        },
        per_rank: vec![
            rank(0, "node01", elapsed),
            rank(1, "node02", Nanos(elapsed.0 - 5)),
        ],
        errors: vec![
            ErrorRecord {
                rank: 1,
                host: "node02".into(),
                op: OpKind::Write,
                path: "/mnt/nfs/bench/f.1".into(),
                offset: Some(8192),
                errno: Some(5),
                message: "EIO: input/output error".into(),
            },
            ErrorRecord {
                rank: 0,
                host: "node01".into(),
                op: OpKind::Fsync,
                path: "/mnt/nfs/bench/f.0".into(),
                offset: None,
                errno: None,
                message: "ENOSPC".into(),
            },
        ],
        error_count: 2,
        verify_failures: 0,
        extra: BTreeMap::from([("cache_ratio".into(), 0.125)]),
        warnings: vec!["CV 12.5 % over 10 %: noisy".into()],
        interrupted: false,
        telemetry: Some(telemetry()),
    }
}

/// A metadata phase: rates rather than bandwidth, no telemetry, an empty timeline.
pub fn meta_phase(started_at_ms: i64) -> PhaseResult {
    let elapsed = Nanos::from_millis(12_345);
    PhaseResult {
        figures: None,
        name: "create".into(),
        kind: PhaseKind::Meta,
        params: BTreeMap::from([("threads".into(), "8".into())]),
        repetition: 0,
        spec: json!({"files_per_thread": 1000, "file_size": "3901B"}),
        started_at_ms,
        ranks: 1,
        workers: 8,
        elapsed,
        first_done: Nanos(elapsed.0 - 7),
        ops: vec![
            op(OpKind::Create, 8000, 0, elapsed, 20_000),
            op(OpKind::Write, 8000, 3901, elapsed, 9_000),
            op(OpKind::Stat, 0, 0, elapsed, 1),
        ],
        timeline: Timeline::default(),
        cpu: CpuUsage::default(),
        per_rank: vec![],
        errors: vec![],
        error_count: 0,
        verify_failures: 3,
        extra: BTreeMap::new(),
        warnings: vec![],
        interrupted: true,
        telemetry: None,
    }
}
