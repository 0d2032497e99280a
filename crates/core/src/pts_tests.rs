use super::*;

fn small() -> PtsMatrix {
    PtsMatrix::iops()
        .limited(Some(&[1 << 20, 64 << 10, 4 << 10]), Some(&[100, 65, 0]))
        .unwrap()
}

#[test]
fn the_iops_matrix_is_ptss_and_limits_keep_its_order() {
    let m = PtsMatrix::iops();
    assert_eq!(m.cells().len(), 56);
    assert_eq!(m.cells()[0].name(), "1MiB 100/0");
    assert_eq!(m.cells()[55].name(), "512B 0/100");
    let s = small();
    assert_eq!(
        s.cells().iter().map(Cell::name).collect::<Vec<_>>(),
        [
            "1MiB 100/0",
            "64KiB 100/0",
            "4KiB 100/0",
            "1MiB 65/35",
            "64KiB 65/35",
            "4KiB 65/35",
            "1MiB 0/100",
            "64KiB 0/100",
            "4KiB 0/100"
        ]
    );
    assert_eq!(s.tracked.len(), 3);
    let only4k = m.limited(Some(&[4 << 10]), None).unwrap();
    assert_eq!(
        only4k.tracked,
        [Cell {
            block_size: 4096,
            read_percent: 0
        }]
    );
    assert!(
        m.limited(Some(&[3 << 10]), None)
            .unwrap_err()
            .contains("3KiB")
    );
    assert!(m.limited(None, Some(&[70])).unwrap_err().contains("70/30"));
    assert!(
        m.limited(Some(&[8 << 10]), None)
            .unwrap_err()
            .contains("tracked")
    );
}

#[test]
fn the_throughput_and_latency_matrices_run_in_ptss_order() {
    let t = PtsMatrix::throughput(128 << 10);
    assert_eq!(
        t.cells().iter().map(Cell::name).collect::<Vec<_>>(),
        ["128KiB 100/0", "128KiB 0/100"]
    );
    assert_eq!(t.tracked[0].name(), "128KiB 0/100");
    let l = PtsMatrix::latency();
    let names: Vec<String> = l.cells().iter().map(Cell::name).collect();
    assert_eq!(names.len(), 9);
    assert_eq!(
        &names[..4],
        ["8KiB 100/0", "4KiB 100/0", "512B 100/0", "8KiB 65/35"]
    );
    assert_eq!(names[8], "512B 0/100");
    assert_eq!(l.tracked[0].name(), "4KiB 0/100");
    let e = l.limited(Some(&[64 << 10]), None).unwrap_err();
    assert!(e.contains("latency test (8KiB, 4KiB, 512B)"), "{e}");
    let e = l.limited(None, Some(&[100])).unwrap_err();
    assert!(e.contains("4KiB 0/100"), "{e}");
    // The series of the tracked cell where a mix-major round holds it.
    let r = PtsRounds {
        rounds: vec![(0..9).map(f64::from).collect()],
    };
    assert_eq!(r.series(&l, l.tracked[0]), [7.0]);
}

/// A round of the small matrix with the tracked cells at `w4k` (4 KiB writes),
/// `m64k` and `r1m`, the others at 1.
fn round(r1m: f64, m64k: f64, w4k: f64) -> Vec<f64> {
    vec![r1m, 1.0, 1.0, 1.0, m64k, 1.0, 1.0, 1.0, w4k]
}

#[test]
fn steady_when_every_tracked_cell_is_over_the_same_window() {
    let m = small();
    // 4 KiB writes fall for five rounds then hold; the others hold from the start.
    let w4k = [
        90_000.0, 60_000.0, 40_000.0, 30_000.0, 25_000.0, 20_000.0, 20_100.0, 19_900.0, 20_000.0,
        20_050.0, 19_950.0,
    ];
    let mut r = PtsRounds::default();
    let mut stopped = None;
    for (k, w) in w4k.iter().enumerate() {
        r.rounds.push(round(3000.0, 9000.0, *w));
        if r.steady_now(&m) {
            stopped = Some(k);
            break;
        }
    }
    // The window of rounds 5-9 (20000 ... 20050) is the first within the rule.
    assert_eq!(stopped, Some(9));
    let o = r.outcome(&m).unwrap();
    assert!(o.steady);
    assert_eq!(o.window, (5, 9));
    assert!((o.averages[8] - 20_010.0).abs() < 1e-9, "{:?}", o.averages);
    assert_eq!(o.averages[0], 3000.0);
    let (cell, v) = &o.tracked[0];
    assert_eq!(cell.name(), "4KiB 0/100");
    assert!((v.range - 200.0).abs() < 1e-9 && v.steady);
}

#[test]
fn never_steady_reports_the_last_five_of_at_most_25_rounds() {
    let m = small();
    let mut r = PtsRounds::default();
    for k in 0..30 {
        // 4 KiB writes swing by 50 %: never steady.
        let w = if k % 2 == 0 { 10_000.0 } else { 15_000.0 };
        r.rounds.push(round(3000.0, 9000.0, w));
        assert!(!r.steady_now(&m));
    }
    let o = r.outcome(&m).unwrap();
    assert!(!o.steady);
    assert_eq!(o.window, (20, 24), "rounds past the 25th do not count");
    assert!(!o.tracked[0].1.steady && o.tracked[2].1.steady);
    assert_eq!(
        PtsRounds {
            rounds: vec![round(1.0, 1.0, 1.0); 4]
        }
        .outcome(&m),
        None
    );
}
