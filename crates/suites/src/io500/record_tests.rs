//! IO500 phases as iolab phases and back, imported runs and the score of stored runs.

use std::path::Path;

use super::*;
use iolab_compat::io500::parse::read;

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat/tests/fixtures/io500")
        .join(rel)
}

fn plans() -> Vec<PhasePlan> {
    plan_phases(&Io500Spec::default())
}

#[test]
fn phases_become_iolab_phases_and_back() {
    let plans = plans();
    let mut easy = PhaseFigure::new("ior-easy-write", 2.5, 320.25);
    easy.errors = 2;
    easy.valid = false;
    easy.notes.push("Errors (2) occured".into());
    let p = phase_result(&easy, &plans, 8, 1000);
    assert_eq!((p.kind, p.ranks, p.error_count), (PhaseKind::Data, 8, 2));
    assert_eq!(p.elapsed, Nanos(320_250_000_000));
    let op = &p.ops[0];
    assert_eq!(op.op, OpKind::Write);
    assert_eq!(op.bytes.get(), (2.5 * 320.25 * GIB as f64) as u64);
    assert_eq!(op.ops, op.bytes.get() / (2 * 1024 * 1024));
    assert_eq!(p.params["transfer"], "2MiB");
    assert!(
        p.spec.get("block_size").is_some(),
        "the IOR phase keeps its DataSpec"
    );
    let back = figure_of(&p);
    assert_eq!(back.value, 2.5);
    assert!((back.time - 320.25).abs() < 1e-9);
    assert_eq!((back.valid, back.errors), (false, 2));
    assert_eq!(back.notes, easy.notes);

    let mut hard = PhaseFigure::new("mdtest-hard-write", 10.0, 300.0);
    hard.items = Some(3_000_000);
    let p = phase_result(&hard, &plans, 8, 0);
    assert_eq!(p.kind, PhaseKind::Meta);
    assert_eq!((p.ops[0].op, p.ops[0].ops), (OpKind::Create, 3_000_000));
    assert_eq!(p.ops[0].bytes.get(), 3_000_000 * 3901);

    let mut find = PhaseFigure::new("find", 500.0, 20.0);
    find.found = Some(42);
    let p = phase_result(&find, &plans, 8, 0);
    assert_eq!(
        (p.kind, p.ops[0].op, p.ops[0].ops),
        (PhaseKind::Find, OpKind::Scan, 10_000_000)
    );
    assert_eq!(p.extra[MATCHED_KEY], 42.0);
    assert_eq!(figure_of(&p).found, Some(42));

    let other = phase_result(&PhaseFigure::new("find-easy", 1.0, 2.0), &plans, 1, 0);
    assert_eq!(other.kind, PhaseKind::Find);
}

#[test]
fn a_runner_phase_is_scored_from_its_counts() {
    let plans = plans();
    let mut p = phase_result(
        &PhaseFigure::new("ior-easy-write", 1.0, 300.0),
        &plans,
        1,
        0,
    );
    p.extra.clear();
    let at = Nanos::from_secs(300);
    let count = OpCount {
        ops: 1,
        bytes: 600 * GIB,
    };
    p.ops[0] = OpResult::new(
        OpKind::Write,
        iolab_core::result::CountAt { count, at },
        iolab_core::result::CountAt {
            count: OpCount::default(),
            at,
        },
        0,
        LatencyHistogram::new(),
    );
    assert_eq!(figure_of(&p).value, 2.0);
    let mut m = phase_result(
        &PhaseFigure::new("mdtest-easy-stat", 1.0, 10.0),
        &plans,
        1,
        0,
    );
    m.extra.clear();
    m.ops[0].ops = 50_000;
    assert_eq!(figure_of(&m).value, 5.0);
    m.interrupted = true;
    assert!(!figure_of(&m).valid);
}

#[test]
fn an_imported_run_scores_as_its_file() {
    let parsed = read(&fixture("lustre-isc24")).unwrap();
    let run = run_from_parsed(&parsed, Provenance::default(), 1_700_000_000_000);
    assert_eq!(run.kind, KIND);
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.phases.len(), 13);
    assert!(run.phases.iter().all(|p| p.name != "timestamp"));
    assert_eq!(run.phases[0].ranks, 80);
    assert_eq!(run.spec["imported"]["version"], "io500-isc24_v3");
    assert_eq!(run.spec["stonewall"], "300s");
    let s = score_from_run(&run);
    assert_eq!(s, parsed.check().score);
    // The store keeps it as JSON; it comes back the same.
    let json = serde_json::to_string(&run).unwrap();
    let back: RunRecord = serde_json::from_str(&json).unwrap();
    assert_eq!(score_from_run(&back), s);

    assert_eq!(run.spec["score"]["total"], s.total);
    assert_eq!(run.spec["score"]["valid"], true);

    // A 60 s stonewall: invalid for submission, but not a failed run.
    let parsed = read(&fixture("debug-60s")).unwrap();
    let run = run_from_parsed(&parsed, Provenance::default(), 0);
    assert_eq!(run.status, RunStatus::Complete);
    assert_eq!(run.spec["score"]["valid"], false);
    assert_eq!(
        run.warnings[0],
        "the stonewall was 60 s; IO500 requires 300 s"
    );
    let s = score_from_run(&run);
    assert!(
        s.reasons
            .contains(&iolab_compat::io500::score::Invalid::Stonewall { secs: 60.0 })
    );
    assert!((s.total - parsed.check().score.total).abs() < 1e-12);
}

#[test]
fn an_iolab_configuration_gives_the_stonewall() {
    let config = iolab_core::spec::io500::Io500Config {
        tool: "iolab".into(),
        ranks: 1,
        target: ".".into(),
        spec: Io500Spec {
            stonewall: TimeSpan::from_secs(5),
            ..Io500Spec::default()
        },
    };
    let run = RunRecord::new(
        KIND,
        serde_json::to_value(&config).unwrap(),
        Provenance::default(),
        0,
    );
    assert_eq!(stonewall_in(&run.spec), Some(TimeSpan::from_secs(5)));
    let s = score_from_run(&run);
    assert_eq!(
        s.reasons[0],
        iolab_compat::io500::score::Invalid::Stonewall { secs: 5.0 }
    );
    assert_eq!(s.total, 0.0);
}
