use super::*;
use iolab_core::spec::RwKind;

const MS: u64 = 1_000_000;

fn spec(f: impl FnOnce(&mut DataSpec)) -> DataSpec {
    let mut s = DataSpec::default();
    f(&mut s);
    s.validate().unwrap();
    s
}

/// The due times of a worker's first `n` I/Os of `len` bytes, issued as soon as due.
fn dues(p: &mut Pace, dir: IoDir, len: u64, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            let (_, due) = p.choose(dir, Nanos::ZERO);
            p.issued(dir, len);
            due.0
        })
        .collect()
}

#[test]
fn workers_interleave_into_one_even_stream() {
    // 1000 I/Os per second over 4 workers: each every 4 ms, worker w w ms later.
    let s = spec(|s| s.rate_iops = Some(1000));
    let mut all: Vec<u64> = (0..4)
        .flat_map(|w| {
            let mut p = Pace::new(&s, 4, w, Nanos(5 * MS), 1).unwrap();
            dues(&mut p, IoDir::Read, 4096, 25)
        })
        .collect();
    all.sort_unstable();
    let expect: Vec<u64> = (0..100).map(|k| 5 * MS + k * MS).collect();
    assert_eq!(all, expect);
}

#[test]
fn a_byte_rate_spaces_ios_by_their_size() {
    // 1 MiB/s, one worker: a 4 KiB I/O takes 1/256 s of the schedule, a 64 KiB one 1/16.
    let s = spec(|s| {
        s.block_sizes = Some("4KiB/50:64KiB/50".parse().unwrap());
        s.rate = Some(ByteCount::mib(1));
    });
    let mut p = Pace::new(&s, 1, 0, Nanos::ZERO, 1).unwrap();
    assert_eq!(dues(&mut p, IoDir::Read, 4096, 1), [0]);
    assert_eq!(dues(&mut p, IoDir::Read, 65536, 1), [3_906_250]);
    assert_eq!(dues(&mut p, IoDir::Read, 4096, 1), [3_906_250 + 62_500_000]);
}

#[test]
fn the_schedule_does_not_drift_over_a_million_ios() {
    // 3 I/Os per second: 333 333 333.3 ns each; the millionth is due at exactly 1e6 / 3 s.
    let s = spec(|s| s.rate_iops = Some(3));
    let mut p = Pace::new(&s, 1, 0, Nanos::ZERO, 1).unwrap();
    for _ in 0..1_000_000 {
        p.issued(IoDir::Read, 4096);
    }
    let (_, due) = p.choose(IoDir::Read, Nanos::ZERO);
    assert_eq!(due.0, 1_000_000 * 1_000_000_000 / 3);
}

#[test]
fn poisson_gaps_have_the_asked_mean_and_spread() {
    let s = spec(|s| {
        s.rate_iops = Some(1000);
        s.rate_process = RateProcess::Poisson;
    });
    let mut p = Pace::new(&s, 2, 1, Nanos::ZERO, 3).unwrap();
    let d = dues(&mut p, IoDir::Read, 4096, 100_001);
    let gaps: Vec<f64> = d.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
    // Two workers share 1000 per second: 2 ms a gap; exponential: sd = mean.
    assert!((mean / 2e6 - 1.0).abs() < 0.02, "{mean}");
    assert!(
        (var.sqrt() / mean - 1.0).abs() < 0.03,
        "{}",
        var.sqrt() / mean
    );
}

#[test]
fn directions_paced_apart_switch_to_the_one_due() {
    // Writes at 100 per second, reads unlimited: a write not yet due gives way to a read.
    let s = spec(|s| {
        s.rw = RwKind::Randrw;
        s.write_rate_iops = Some(100);
    });
    let mut p = Pace::new(&s, 1, 0, Nanos::ZERO, 1).unwrap();
    assert_eq!(
        p.choose(IoDir::Write, Nanos(1)),
        (IoDir::Write, Nanos::ZERO)
    );
    p.issued(IoDir::Write, 4096);
    assert_eq!(p.choose(IoDir::Write, Nanos(1)), (IoDir::Read, Nanos(1)));
    assert_eq!(
        p.choose(IoDir::Write, Nanos(10 * MS)),
        (IoDir::Write, Nanos(10 * MS))
    );
    // Both limited: the one due first.
    let s = spec(|s| {
        s.rw = RwKind::Randrw;
        s.read_rate_iops = Some(100);
        s.write_rate_iops = Some(50);
    });
    let mut p = Pace::new(&s, 1, 0, Nanos::ZERO, 1).unwrap();
    p.issued(IoDir::Read, 4096);
    p.issued(IoDir::Write, 4096);
    assert_eq!(
        p.choose(IoDir::Write, Nanos(1)),
        (IoDir::Read, Nanos(10 * MS))
    );
    // One limit for both: a write waits its turn, it does not switch.
    let s = spec(|s| {
        s.rw = RwKind::Randrw;
        s.rate_iops = Some(100);
    });
    let mut p = Pace::new(&s, 1, 0, Nanos::ZERO, 1).unwrap();
    p.issued(IoDir::Read, 4096);
    assert_eq!(
        p.choose(IoDir::Write, Nanos(1)),
        (IoDir::Write, Nanos(10 * MS))
    );
}

#[test]
fn think_time_comes_every_n_ios_or_after_io_time() {
    let s = spec(|s| {
        s.think_time = Some("1ms".parse().unwrap());
        s.think_every = 3;
    });
    let mut t = Think::new(&s, Nanos::ZERO).unwrap();
    let due: Vec<bool> = (1..=7).map(|c| t.due(c, c, Nanos(c))).collect();
    assert_eq!(due, [false, false, true, false, false, true, false]);
    // Every 10 ms of I/O plus the pause itself, whatever the count (fio's iotime).
    let s = spec(|s| {
        s.think_time = Some("1ms".parse().unwrap());
        s.think_io_time = Some("10ms".parse().unwrap());
    });
    let mut t = Think::new(&s, Nanos::ZERO).unwrap();
    assert!(!t.due(100, 100, Nanos(10 * MS)));
    assert!(t.due(101, 101, Nanos(11 * MS)));
    assert!(!t.due(200, 200, Nanos(21 * MS)));
    assert!(t.due(201, 201, Nanos(22 * MS)));
}

#[test]
fn a_worker_below_its_part_of_the_minimum_falls_short_after_the_settle() {
    // 10 MiB/s over 2 workers: 5 MiB/s each, checked over 1 s windows after 2 s.
    let s = spec(|s| s.rate_min = Some(ByteCount::mib(10)));
    let mut m = MinRate::new(&s, 2, Nanos::ZERO).unwrap();
    let sec = |n: u64| Nanos(n * 1_000_000_000);
    let mib = |n: u64| n << 20;
    assert_eq!(m.check(sec(1), [mib(1), 0, 0], [1, 0, 0]), None);
    // The first check after the settle only notes where it stands.
    assert_eq!(m.check(sec(2), [mib(12), 0, 0], [3, 0, 0]), None);
    // Half a second later: not a whole window yet.
    assert_eq!(
        m.check(Nanos(2_500_000_000), [mib(12), 0, 0], [3, 0, 0]),
        None
    );
    assert_eq!(m.check(sec(3), [mib(18), 0, 0], [4, 0, 0]), None);
    let short = m.check(sec(4), [mib(22), 0, 0], [5, 0, 0]).unwrap();
    assert_eq!(short.dir, IoDir::Read);
    assert_eq!(short.got, mib(4) as f64);
    assert_eq!(short.part, mib(5) as f64);
}
