//! Finding runs: list filters (label exact and glob, kind, status, dates, limit), headline
//! peaks, resolving ids and labels (the latest run wins), deleting, and the messages a
//! user sees when a run is not there. Also the example queries of docs/store-schema.md.

use iolab_core::result::{OpKind, RunStatus};
use iolab_core::units::{BytesPerSec, OpsPerSec};
use iolab_store::{Figure, Peak, RunFilter, RunId, Store, StoreError};
use rusqlite::Connection;

use crate::fixtures::{data_phase, meta_phase, run_record, temp_store};

const DAY_MS: i64 = 86_400_000;
const T0: i64 = 1_700_000_000_000;

/// Five runs: v7.3 and v7.4 (twice, the second later), an unlabelled one and an io500.
fn populated() -> (tempfile::TempDir, std::path::PathBuf, Store) {
    let (dir, path, mut store) = temp_store();
    let runs = [
        (Some("v7.3"), "study", T0, 1),
        (Some("v7.4"), "study", T0 + DAY_MS, 2),
        (None, "run", T0 + 2 * DAY_MS, 4),
        (Some("v7.4"), "study", T0 + 3 * DAY_MS, 8),
        (Some("io500-sc24"), "io500", T0 + 4 * DAY_MS, 16),
    ];
    for (label, kind, started, threads) in runs {
        let mut record = run_record(label, started);
        record.kind = kind.into();
        let id = store.begin_run(&record).unwrap();
        store
            .add_phase(id, &data_phase(threads, started + 1))
            .unwrap();
        store
            .add_phase(id, &data_phase(threads * 2, started + 2))
            .unwrap();
        store.add_phase(id, &meta_phase(started + 3)).unwrap();
        if kind != "io500" {
            store
                .finish_run(id, RunStatus::Complete, started + 10, &[])
                .unwrap();
        }
    }
    (dir, path, store)
}

fn ids(store: &Store, filter: RunFilter) -> Vec<i64> {
    store
        .list_runs(&filter)
        .unwrap()
        .iter()
        .map(|r| r.id.0)
        .collect()
}

#[test]
fn lists_newest_first_with_filters() {
    let (_dir, _path, store) = populated();
    assert_eq!(ids(&store, RunFilter::default()), [5, 4, 3, 2, 1]);
    let label = |l: &str| RunFilter {
        label: Some(l.into()),
        ..Default::default()
    };
    assert_eq!(ids(&store, label("v7.4")), [4, 2]);
    // The storing process comes with each row, for telling running from abandoned.
    let rows = store.list_runs(&RunFilter::default()).unwrap();
    let p = rows[0].process.as_ref().expect("the process is listed");
    assert_eq!(
        (p.host.as_str(), p.pid, p.start_ticks),
        ("node01", 4242, 123_456)
    );
    assert_eq!(ids(&store, label("v7.*")), [4, 2, 1]);
    assert_eq!(ids(&store, label("v7.[3]")), [1]);
    assert_eq!(
        ids(&store, label("V7.4")),
        Vec::<i64>::new(),
        "labels are case-sensitive"
    );
    assert_eq!(
        ids(&store, label("*")),
        [5, 4, 2, 1],
        "unlabelled runs match no label"
    );
    assert_eq!(
        ids(
            &store,
            RunFilter {
                kind: Some("io500".into()),
                ..Default::default()
            }
        ),
        [5]
    );
    assert_eq!(
        ids(
            &store,
            RunFilter {
                status: Some(RunStatus::Incomplete),
                ..Default::default()
            }
        ),
        [5]
    );
    // since is inclusive, until exclusive.
    let window = RunFilter {
        since_ms: Some(T0 + DAY_MS),
        until_ms: Some(T0 + 3 * DAY_MS),
        ..Default::default()
    };
    assert_eq!(ids(&store, window), [3, 2]);
    assert_eq!(
        ids(
            &store,
            RunFilter {
                limit: Some(2),
                ..Default::default()
            }
        ),
        [5, 4]
    );
    let combined = RunFilter {
        label: Some("v7.4".into()),
        since_ms: Some(T0 + 2 * DAY_MS),
        ..Default::default()
    };
    assert_eq!(ids(&store, combined), [4]);
}

#[test]
fn a_listed_run_carries_its_phases_and_peaks() {
    let (_dir, _path, store) = populated();
    let rows = store
        .list_runs(&RunFilter {
            label: Some("v7.3".into()),
            ..Default::default()
        })
        .unwrap();
    let row = &rows[0];
    assert_eq!(row.id, RunId(1));
    assert_eq!(row.label.as_deref(), Some("v7.3"));
    assert_eq!(row.kind, "study");
    assert_eq!(row.status, RunStatus::Complete);
    assert_eq!(row.started_at_ms, T0);
    assert_eq!(row.finished_at_ms, Some(T0 + 10));
    assert!(!row.imported);
    assert_eq!(row.target, "/mnt/nfs/bench");
    assert_eq!(row.phases, 3);

    // Peaks: the 2-thread phase has the better read; data ops in the meta phase are rates.
    let peak_read = data_phase(2, 0).op(OpKind::Read).unwrap().bandwidth;
    let write_bw = data_phase(1, 0).op(OpKind::Write).unwrap().bandwidth;
    let meta = meta_phase(0);
    let rate = |op| meta.op(op).unwrap().iops;
    let fsync = data_phase(1, 0).op(OpKind::Fsync).unwrap().iops;
    assert_eq!(
        row.headline,
        vec![
            Peak {
                op: OpKind::Read,
                figure: Figure::Bandwidth(peak_read)
            },
            Peak {
                op: OpKind::Write,
                figure: Figure::Bandwidth(write_bw)
            },
            Peak {
                op: OpKind::Write,
                figure: Figure::Rate(rate(OpKind::Write))
            },
            Peak {
                op: OpKind::Fsync,
                figure: Figure::Rate(fsync)
            },
            Peak {
                op: OpKind::Create,
                figure: Figure::Rate(rate(OpKind::Create))
            },
            Peak {
                op: OpKind::Stat,
                figure: Figure::Rate(OpsPerSec(0.0))
            },
        ]
    );
    assert!(peak_read > BytesPerSec(0.0));
}

#[test]
fn an_empty_store_lists_nothing() {
    let (_dir, _path, store) = temp_store();
    assert!(store.list_runs(&RunFilter::default()).unwrap().is_empty());
}

#[test]
fn resolves_ids_and_labels_the_latest_run_winning() {
    let (_dir, _path, mut store) = populated();
    assert_eq!(store.resolve("r3").unwrap(), RunId(3));
    assert_eq!(store.resolve("3").unwrap(), RunId(3));
    assert_eq!(store.resolve(" R3 ").unwrap(), RunId(3));
    assert_eq!(store.resolve("v7.4").unwrap(), RunId(4));
    assert_eq!(store.resolve("v7.3").unwrap(), RunId(1));

    // An earlier start imported later does not become the latest.
    let mut old = run_record(Some("v7.4"), T0 - DAY_MS);
    old.status = RunStatus::Complete;
    let imported = store.import_run(&old).unwrap();
    assert_eq!(imported, RunId(6));
    assert_eq!(store.resolve("v7.4").unwrap(), RunId(4));

    // A label that looks like an id is found when no run has that id.
    store.begin_run(&run_record(Some("2024"), T0)).unwrap();
    assert_eq!(store.resolve("2024").unwrap(), RunId(7));
    assert_eq!(store.resolve("r2").unwrap(), RunId(2));
}

#[test]
fn unknown_references_say_what_to_do() {
    let (_dir, _path, store) = populated();
    let err = store.resolve("r42").unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchRun { id: RunId(42) }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "no run with id r42; `iolab results list` shows the runs"
    );
    assert_eq!(
        store.resolve("42").unwrap_err().to_string(),
        "no run with id r42; `iolab results list` shows the runs"
    );

    let err = store.resolve("v7.5").unwrap_err();
    assert!(
        matches!(&err, StoreError::NoSuchLabel { label } if label == "v7.5"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "no run labelled 'v7.5'; `iolab results list` shows the runs"
    );
    assert!(
        matches!(store.resolve("v7.*"), Err(StoreError::NoSuchLabel { .. })),
        "resolve takes no globs"
    );

    let err = store.resolve("  ").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no run given: name a run by its id (r42 or 42) or by its label"
    );

    assert_eq!(
        store.load_run(RunId(42)).unwrap_err().to_string(),
        "no run with id r42; `iolab results list` shows the runs"
    );
}

#[test]
fn writing_to_a_missing_run_is_refused() {
    let (_dir, _path, mut store) = temp_store();
    let err = store.add_phase(RunId(9), &meta_phase(1)).unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchRun { id: RunId(9) }),
        "{err:?}"
    );
    let err = store
        .finish_run(RunId(9), RunStatus::Complete, 2, &[])
        .unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchRun { id: RunId(9) }),
        "{err:?}"
    );
    let err = store.delete_run(RunId(9)).unwrap_err();
    assert!(
        matches!(err, StoreError::NoSuchRun { id: RunId(9) }),
        "{err:?}"
    );
}

#[test]
fn deleting_a_run_removes_all_its_rows() {
    let (_dir, path, mut store) = populated();
    store.delete_run(RunId(2)).unwrap();
    assert_eq!(ids(&store, RunFilter::default()), [5, 4, 3, 1]);
    assert!(matches!(
        store.load_run(RunId(2)),
        Err(StoreError::NoSuchRun { .. })
    ));
    let conn = Connection::open(&path).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM phases WHERE run_id = 2"), 0);
    assert_eq!(count("SELECT count(*) FROM phases"), 12);
    assert_eq!(count("SELECT count(*) FROM phase_ops"), 12 * 3);
    assert_eq!(count("SELECT count(*) FROM phase_ranks"), 8 * 2);
    assert_eq!(count("SELECT count(*) FROM phase_errors"), 8 * 2);
    // Ids are not reused: a new run after deleting the last one gets a fresh id.
    drop(conn);
    store.delete_run(RunId(5)).unwrap();
    assert_eq!(store.begin_run(&run_record(None, 1)).unwrap(), RunId(6));
}

/// The queries docs/store-schema.md shows, run against a known store.
#[test]
fn the_documented_queries_work() {
    let (_dir, path, _store) = populated();
    let conn = Connection::open(&path).unwrap();

    // Peak read bandwidth per label, with the thread count where it happened.
    let mut stmt = conn
        .prepare(
            "SELECT label, max(bandwidth) / 1048576.0 AS peak_mib_s,
                    json_extract(params, '$.threads') AS threads
             FROM op_results
             WHERE op = 'read' AND phase_kind = 'data' AND status = 'complete'
             GROUP BY label ORDER BY label",
        )
        .unwrap();
    let rows: Vec<(Option<String>, f64, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let labels: Vec<_> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(labels, [None, Some("v7.3".into()), Some("v7.4".into())]);
    assert_eq!(rows[2].2, "16", "v7.4's peak is its 16-thread phase");

    // Peak IOPS per label and operation.
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM (SELECT label, op, max(iops) FROM op_results
             WHERE label IS NOT NULL GROUP BY label, op)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 3 * 5);

    // Runs on an NFS target, and the host list.
    let nfs: i64 = conn
        .query_row(
            "SELECT count(*) FROM runs, json_each(runs.hosts)
             WHERE fs_type LIKE 'nfs%' AND json_each.value = 'node02'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(nfs, 5);

    // p99 latency of one phase in microseconds.
    let p99_us: f64 = conn
        .query_row(
            "SELECT latency_p99_ns / 1000.0 FROM op_results
             WHERE run_id = 1 AND phase_seq = 0 AND op = 'read'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let want = data_phase(1, 0).op(OpKind::Read).unwrap().latency.p99.0 as f64 / 1000.0;
    assert_eq!(p99_us, want);

    // Incomplete runs and how many phases they kept.
    let (id, phases): (i64, i64) = conn
        .query_row(
            "SELECT r.id, count(p.id) FROM runs r LEFT JOIN phases p ON p.run_id = r.id
             WHERE r.status = 'incomplete' GROUP BY r.id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((id, phases), (5, 3));

    // A sweep as a table: run 4 swept 8 and 16 threads (and the meta phase's 8).
    let mut stmt = conn
        .prepare(
            "SELECT CAST(json_extract(params, '$.threads') AS INTEGER) AS threads, op,
                    round(avg(mib_per_sec), 1) AS mean_mib_s, count(*) AS repetitions
             FROM op_results WHERE run_id = 4 AND op = 'read'
             GROUP BY threads, op ORDER BY op, threads",
        )
        .unwrap();
    let sweep: Vec<(i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(sweep, [(8, 1), (16, 1)]);

    // Phases with warnings or errors: the two data phases of each run.
    let flagged: i64 = conn
        .query_row(
            "SELECT count(*) FROM phases
             WHERE error_count > 0 OR verify_failures > 0 OR warnings != '[]'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        flagged,
        5 * 3,
        "data phases have errors, meta phases verify failures"
    );

    // The per-second read bandwidth of a phase.
    let mut stmt = conn
        .prepare(
            "SELECT t.key AS second, t.value / 1048576.0 AS mib_s
             FROM phases p, json_each(p.timeline, '$.series') s, json_each(s.value, '$.bytes') t
             WHERE p.run_id = 1 AND p.seq = 0 AND json_extract(s.value, '$.op') = 'read'",
        )
        .unwrap();
    let timeline: Vec<(i64, f64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want = data_phase(1, 0)
        .timeline
        .series(OpKind::Read)
        .unwrap()
        .bytes
        .clone();
    let want: Vec<(i64, f64)> = (0..)
        .zip(want.iter().map(|b| *b as f64 / 1048576.0))
        .collect();
    assert_eq!(timeline, want);
}
