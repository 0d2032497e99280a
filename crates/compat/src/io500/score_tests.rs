//! Score arithmetic on fixed phase values, IO500's validity rules, and one published
//! IO500 result recomputed.

use super::*;

const BW_PHASES: [&str; 4] = [
    "ior-easy-write",
    "ior-hard-write",
    "ior-easy-read",
    "ior-hard-read",
];
const MD_PHASES: [&str; 8] = [
    "mdtest-easy-write",
    "mdtest-hard-write",
    "find",
    "mdtest-easy-stat",
    "mdtest-hard-stat",
    "mdtest-easy-delete",
    "mdtest-hard-read",
    "mdtest-hard-delete",
];

/// The twelve scored phases with the given figures, writes running 301 s.
fn run(bw: [f64; 4], md: [f64; 8]) -> Vec<PhaseFigure> {
    let mut out = Vec::new();
    for (name, v) in BW_PHASES.iter().zip(bw) {
        out.push(PhaseFigure::new(name, v, 301.0));
    }
    for (name, v) in MD_PHASES.iter().zip(md) {
        let mut f = PhaseFigure::new(name, v, 301.0);
        if *name == "find" {
            f.found = Some(10);
        }
        out.push(f);
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

fn set(phases: &mut [PhaseFigure], name: &str, f: impl FnOnce(&mut PhaseFigure)) {
    f(phases.iter_mut().find(|p| p.name == name).unwrap());
}

#[test]
fn geometric_means_and_total() {
    // Bandwidth: (1 * 2 * 4 * 8)^(1/4) = 64^(1/4) = 2 * sqrt(2).
    // Metadata: (1^7 * 256)^(1/8) = 2. Total: sqrt(2 * sqrt(2) * 2) = 2^(5/4).
    let s = score(
        &run(
            [1.0, 2.0, 4.0, 8.0],
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 256.0],
        ),
        Some(TimeSpan::from_secs(300)),
    );
    assert!(close(s.bandwidth, 2.0 * 2f64.sqrt()), "{}", s.bandwidth);
    assert!(close(s.metadata, 2.0), "{}", s.metadata);
    assert!(close(s.total, 2f64.powf(1.25)), "{}", s.total);
    assert_eq!((s.bandwidth_phases, s.metadata_phases), (4, 8));
    assert!(s.valid(), "{:?}", s.reasons);
    assert!(s.notes.is_empty());
}

#[test]
fn equal_figures_give_that_figure() {
    let s = score(&run([4.0; 4], [9.0; 8]), None);
    assert!(close(s.bandwidth, 4.0));
    assert!(close(s.metadata, 9.0));
    assert!(close(s.total, 6.0));
    assert!(s.valid());
}

#[test]
fn a_zero_phase_is_left_out_and_invalidates() {
    let mut phases = run([1.0, 2.0, 4.0, 8.0], [1.0; 8]);
    set(&mut phases, "ior-hard-read", |p| p.value = 0.0);
    let s = score(&phases, None);
    // (1 * 2 * 4)^(1/3) = 2: the zero does not drag the mean to 0.
    assert!(close(s.bandwidth, 2.0), "{}", s.bandwidth);
    assert_eq!(s.bandwidth_phases, 3);
    assert_eq!(
        s.reasons,
        [Invalid::Zero {
            phase: "ior-hard-read".into()
        }]
    );
    assert!(close(s.total, 2f64.sqrt()));
}

#[test]
fn a_group_without_figures_scores_zero() {
    let s = score(&run([0.0; 4], [1.0; 8]), None);
    assert_eq!((s.bandwidth, s.bandwidth_phases), (0.0, 0));
    assert_eq!(s.total, 0.0);
    assert_eq!(s.reasons.len(), 4);
    let s = score(&[], None);
    assert_eq!(s.total, 0.0);
    assert_eq!(s.reasons.len(), 12);
    assert!(
        s.reasons
            .iter()
            .all(|r| matches!(r, Invalid::Missing { .. }))
    );
}

#[test]
fn a_short_stonewall_is_invalid_for_submission_but_scored() {
    let mut phases = run([2.0; 4], [2.0; 8]);
    for w in [
        "ior-easy-write",
        "mdtest-easy-write",
        "ior-hard-write",
        "mdtest-hard-write",
    ] {
        set(&mut phases, w, |p| p.time = 61.25);
    }
    let s = score(&phases, Some(TimeSpan::from_secs(60)));
    assert!(close(s.total, 2.0));
    assert_eq!(s.reasons.len(), 5);
    assert_eq!(s.reasons[0], Invalid::Stonewall { secs: 60.0 });
    assert_eq!(
        s.reasons[0].to_string(),
        "the stonewall was 60 s; IO500 requires 300 s"
    );
    assert_eq!(
        s.reasons[1].to_string(),
        "ior-easy-write ran 61.250 s; a write phase must run at least 300 s"
    );
    // Reads may be short: only write phases must run 300 s.
    let mut phases = run([2.0; 4], [2.0; 8]);
    set(&mut phases, "ior-easy-read", |p| p.time = 3.0);
    assert!(score(&phases, Some(TimeSpan::from_secs(300))).valid());
    // IO500 also refuses a longer stonewall (`stonewall-time != 300`).
    assert!(!score(&phases, Some(TimeSpan::from_secs(600))).valid());
}

#[test]
fn io_errors_an_empty_find_and_reported_phases_invalidate() {
    let mut phases = run([2.0; 4], [2.0; 8]);
    set(&mut phases, "ior-hard-write", |p| p.errors = 3);
    set(&mut phases, "find", |p| p.found = Some(0));
    set(&mut phases, "mdtest-hard-stat", |p| {
        p.valid = false;
        p.notes.push("Errors (1) occured during phase".into());
    });
    let s = score(&phases, None);
    let text: Vec<String> = s.reasons.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        text,
        [
            "ior-hard-write counted 3 I/O errors",
            "find matched no file",
            "mdtest-hard-stat: Errors (1) occured during phase",
        ]
    );
    // The figures still count: validity and score are separate.
    assert!(close(s.total, 2.0));
}

#[test]
fn a_flag_with_a_known_cause_is_reported_once() {
    let mut phases = run([2.0; 4], [2.0; 8]);
    set(&mut phases, "ior-easy-write", |p| {
        p.valid = false;
        p.time = 10.0;
    });
    let s = score(&phases, None);
    assert_eq!(s.reasons.len(), 1, "{:?}", s.reasons);
    assert!(matches!(s.reasons[0], Invalid::ShortWrite { .. }));
}

#[test]
fn unscored_phases_do_not_count() {
    let mut phases = run([2.0; 4], [2.0; 8]);
    phases.push(PhaseFigure::new("timestamp", 0.0, 0.001));
    let mut rnd = PhaseFigure::new("ior-rnd4K-easy-read", 0.0, 0.0);
    rnd.valid = false;
    phases.push(rnd);
    phases.push(PhaseFigure::new("find-easy", 1e6, 1.0));
    phases.push(PhaseFigure::new("mystery", 1e6, 1.0));
    let s = score(&phases, Some(TimeSpan::from_secs(300)));
    assert!(s.valid(), "{:?}", s.reasons);
    assert!(close(s.total, 2.0));
    assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
    assert!(s.notes[0].starts_with("ior-rnd4K-easy-read"));
    assert!(s.notes[1].starts_with("mystery is not an IO500 phase"));
}

#[test]
fn figures_from_counts_use_gib_and_thousands() {
    let f = PhaseFigure::from_bytes("ior-easy-write", 600 * GIB, Nanos::from_secs(300));
    assert_eq!(f.value, 2.0);
    assert_eq!(f.time, 300.0);
    let f = PhaseFigure::from_items("mdtest-easy-write", 3_000_000, Nanos::from_secs(300));
    assert_eq!(f.value, 10.0);
    assert_eq!(f.items, Some(3_000_000));
    assert_eq!(PhaseFigure::from_items("find", 5, Nanos::ZERO).value, 0.0);
}

/// A published result, recomputed: ACC Cyfronet AGH, Helios, Lustre, IO500 ISC24
/// submission 708 (github.com/IO500/submission-data, results/2024.05.03-09.25.44/
/// result_summary.txt, io500-isc24_v3, 640 procs):
///   [RESULT] ior-easy-write 352.803032 GiB/s : time 386.698 seconds
///   [RESULT] mdtest-easy-write 119.113150 kIOPS : time 373.799 seconds
///   [RESULT] ior-hard-write 5.996531 GiB/s : time 324.188 seconds
///   [RESULT] mdtest-hard-write 66.621419 kIOPS : time 374.882 seconds
///   [RESULT] find 2872.215129 kIOPS : time 24.132 seconds
///   [RESULT] ior-easy-read 464.646333 GiB/s : time 293.619 seconds
///   [RESULT] mdtest-easy-stat 415.688686 kIOPS : time 107.918 seconds
///   [RESULT] ior-hard-read 227.682852 GiB/s : time 8.760 seconds
///   [RESULT] mdtest-hard-stat 305.227639 kIOPS : time 82.610 seconds
///   [RESULT] mdtest-easy-delete 96.720801 kIOPS : time 459.993 seconds
///   [RESULT] mdtest-hard-read 114.129044 kIOPS : time 219.393 seconds
///   [RESULT] mdtest-hard-delete 58.712616 kIOPS : time 425.723 seconds
///   [SCORE ] Bandwidth 122.312630 GiB/s : IOPS 192.355126 kiops : TOTAL 153.386640
#[test]
fn a_published_result_recomputes_to_its_score() {
    let figures = [
        ("ior-easy-write", 352.803032, 386.698),
        ("mdtest-easy-write", 119.113150, 373.799),
        ("ior-hard-write", 5.996531, 324.188),
        ("mdtest-hard-write", 66.621419, 374.882),
        ("find", 2872.215129, 24.132),
        ("ior-easy-read", 464.646333, 293.619),
        ("mdtest-easy-stat", 415.688686, 107.918),
        ("ior-hard-read", 227.682852, 8.760),
        ("mdtest-hard-stat", 305.227639, 82.610),
        ("mdtest-easy-delete", 96.720801, 459.993),
        ("mdtest-hard-read", 114.129044, 219.393),
        ("mdtest-hard-delete", 58.712616, 425.723),
    ];
    let phases: Vec<PhaseFigure> = figures
        .iter()
        .map(|(n, v, t)| PhaseFigure::new(n, *v, *t))
        .collect();
    let s = score(&phases, Some(TimeSpan::from_secs(300)));
    // The figures are printed to 6 decimals, so the recomputation agrees with the
    // published score to within a few units of the 6th decimal.
    assert!((s.bandwidth - 122.312630).abs() < 2e-6, "{}", s.bandwidth);
    assert!((s.metadata - 192.355126).abs() < 2e-6, "{}", s.metadata);
    assert!((s.total - 153.386640).abs() < 2e-6, "{}", s.total);
    assert!(s.valid(), "{:?}", s.reasons);
}
