//! Whatever is stored comes back equal: a run written phase by phase, an imported run,
//! values at the edges (empty histograms, NaN, huge counts), and random records.

use iolab_core::result::{OpKind, RunStatus};
use iolab_core::units::{ByteCount, Nanos};
use iolab_store::{RunId, StoreError};
use proptest::prelude::*;

use crate::fixtures::{data_phase, meta_phase, run_record, temp_store};

#[test]
fn a_run_written_phase_by_phase_loads_back_equal() {
    let (_dir, _path, mut store) = temp_store();
    let mut record = run_record(Some("v7.4"), 1_700_000_000_000);
    let id = store.begin_run(&record).unwrap();
    assert_eq!(id, RunId(1));

    for phase in [
        data_phase(4, 1_700_000_001_000),
        meta_phase(1_700_000_040_000),
    ] {
        store.add_phase(id, &phase).unwrap();
        record.phases.push(phase);
    }
    record.warnings.push("CV over 10 % in 1 phase".into());
    record.spec["score"] = serde_json::json!({ "total": 4.5, "valid": false });
    store.update_spec(id, &record.spec).unwrap();
    assert!(matches!(
        store.update_spec(RunId(99), &record.spec),
        Err(StoreError::NoSuchRun { .. })
    ));
    record.status = RunStatus::Complete;
    record.finished_at_ms = Some(1_700_000_060_000);
    store
        .finish_run(id, RunStatus::Complete, 1_700_000_060_000, &record.warnings)
        .unwrap();

    let loaded = store.load_run(id).unwrap();
    assert_eq!(loaded.id, "r1");
    record.id = "r1".into();
    assert_eq!(loaded, record);
    // The parts most likely to be lost, checked by name as well.
    let phase = &loaded.phases[0];
    assert_eq!(phase.ops.len(), 3);
    assert_eq!(phase.op(OpKind::Read).unwrap().histogram.count(), 501);
    assert_eq!(phase.per_rank.len(), 2);
    assert_eq!(phase.errors[0].offset, Some(8192));
    assert_eq!(phase.errors[1].offset, None);
    assert!(phase.telemetry.is_some());
    assert!(loaded.phases[1].telemetry.is_none());
    assert!(loaded.provenance.inventory.is_some());
}

#[test]
fn an_imported_run_keeps_its_status_and_phases() {
    let (_dir, _path, mut store) = temp_store();
    let mut record = run_record(None, 1_600_000_000_000);
    record.kind = "io500".into();
    record.status = RunStatus::Failed;
    record.finished_at_ms = Some(1_600_000_900_000);
    record.id = "from-elsewhere".into();
    record.phases = vec![
        meta_phase(1_600_000_000_500),
        data_phase(1, 1_600_000_100_000),
    ];

    let id = store.import_run(&record).unwrap();
    let loaded = store.load_run(id).unwrap();
    record.id = id.to_string();
    assert_eq!(loaded, record);
    let rows = store.list_runs(&Default::default()).unwrap();
    assert!(rows[0].imported);
}

#[test]
fn begin_run_stores_phases_already_in_the_record_but_not_its_status() {
    let (_dir, _path, mut store) = temp_store();
    let mut record = run_record(Some("x"), 5);
    record.phases.push(meta_phase(6));
    record.status = RunStatus::Complete;
    record.finished_at_ms = Some(9);
    let id = store.begin_run(&record).unwrap();
    store.add_phase(id, &data_phase(2, 7)).unwrap();

    let loaded = store.load_run(id).unwrap();
    assert_eq!(loaded.status, RunStatus::Incomplete);
    assert_eq!(loaded.finished_at_ms, None);
    let names: Vec<_> = loaded.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["create", "randrw-4KiB"]);
}

#[test]
fn not_a_number_survives_as_not_a_number() {
    let (_dir, _path, mut store) = temp_store();
    let id = store.begin_run(&run_record(None, 1)).unwrap();
    let mut phase = data_phase(1, 2);
    phase.extra.insert("ratio".into(), f64::NAN);
    phase.extra.insert("inf".into(), f64::INFINITY);
    phase.ops[0].latency.mean = f64::NAN;
    store.add_phase(id, &phase).unwrap();

    let loaded = store.load_run(id).unwrap();
    let back = &loaded.phases[0];
    assert!(back.extra["ratio"].is_nan());
    // JSON has no infinity either: it comes back as NaN rather than failing the load.
    assert!(back.extra["inf"].is_nan());
    assert!(back.ops[0].latency.mean.is_nan());
    assert_eq!(back.extra["cache_ratio"], 0.125);
}

#[test]
fn counts_beyond_sqlite_integers_are_refused_and_nothing_is_half_written() {
    let (_dir, _path, mut store) = temp_store();
    let id = store.begin_run(&run_record(None, 1)).unwrap();
    let mut phase = data_phase(1, 2);
    phase.ops[2].bytes = ByteCount(u64::MAX);
    let err = store.add_phase(id, &phase).unwrap_err();
    assert!(matches!(err, StoreError::Sql { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("cannot store a phase of run r1 in "),
        "{msg}"
    );
    assert!(
        msg.contains("18446744073709551615 is larger than the largest integer SQLite stores"),
        "{msg}"
    );
    // The failed phase rolled back whole; the next one takes its place.
    store.add_phase(id, &meta_phase(3)).unwrap();
    let loaded = store.load_run(id).unwrap();
    assert_eq!(loaded.phases.len(), 1);
    assert_eq!(loaded.phases[0].name, "create");
}

#[test]
fn largest_storable_values_round_trip() {
    let (_dir, _path, mut store) = temp_store();
    let id = store.begin_run(&run_record(None, i64::MIN)).unwrap();
    let mut phase = meta_phase(i64::MAX);
    phase.elapsed = Nanos(i64::MAX as u64);
    phase.ops[0].ops = i64::MAX as u64;
    phase.errors.push(iolab_core::result::ErrorRecord {
        rank: u32::MAX,
        host: "ünïcødé-host".into(),
        op: OpKind::Remove,
        path: "/tmp/'quoted' \"path\"".into(),
        offset: Some(i64::MAX as u64),
        errno: Some(i32::MIN),
        message: String::new(),
    });
    store.add_phase(id, &phase).unwrap();
    assert_eq!(store.load_run(id).unwrap().phases[0], phase);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_phases_round_trip(
        label in proptest::option::of("\\PC{0,12}"),
        ops in 0u64..(1 << 40),
        latencies in proptest::collection::vec(1u64..10_000_000_000, 0..50),
        threads in 1u32..512,
        extra in proptest::collection::btree_map("[a-z_]{1,8}", -1e12f64..1e12, 0..4),
        warnings in proptest::collection::vec("\\PC{0,20}", 0..3),
    ) {
        let (_dir, _path, mut store) = temp_store();
        let mut record = run_record(label.as_deref(), 42);
        let id = store.begin_run(&record).unwrap();
        let mut phase = data_phase(threads, 43);
        let mut histogram = iolab_core::histogram::LatencyHistogram::new();
        for v in &latencies {
            histogram.record(*v);
        }
        phase.ops[0].ops = ops;
        phase.ops[0].latency = histogram.summary();
        phase.ops[0].histogram = histogram;
        phase.extra = extra;
        phase.warnings = warnings;
        store.add_phase(id, &phase).unwrap();
        record.phases.push(phase);
        record.id = id.to_string();
        prop_assert_eq!(store.load_run(id).unwrap(), record);
    }
}
