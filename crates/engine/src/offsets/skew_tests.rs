use super::*;
use iolab_core::spec::{DataSpec, RwKind};

fn sizes(spec: &DataSpec) -> [SizeDraw; 2] {
    [0, 1].map(|d| SizeDraw::of_spec(spec, d, spec.unit(), 5))
}

fn spec(dist: &str) -> DataSpec {
    DataSpec {
        rw: RwKind::Randread,
        distribution: Some(dist.parse().unwrap()),
        ..DataSpec::default()
    }
}

/// Hits per block of `draws` draws over `blocks` blocks of one unit.
fn hits(dist: &str, blocks: u64, draws: usize) -> Vec<u64> {
    let spec = spec(dist);
    let [mut r, w] = sizes(&spec);
    let d = spec.distribution.clone().unwrap();
    let mut g = Skewed::new(&d, blocks, &[&r.clone(), &w], 4096, 99);
    let mut counts = vec![0u64; blocks as usize];
    for _ in 0..draws {
        let (at, len) = g.next(&mut r).unwrap();
        assert_eq!(len, 1);
        counts[at as usize] += 1;
    }
    counts
}

/// The share of all hits on the `fraction` most hit blocks.
fn hot_share(mut counts: Vec<u64>, fraction: f64) -> f64 {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top = (counts.len() as f64 * fraction) as usize;
    counts[..top].iter().sum::<u64>() as f64 / counts.iter().sum::<u64>() as f64
}

#[test]
fn zipf_puts_the_exact_zipf_share_on_its_most_popular_blocks() {
    let n = 10_000u64;
    let theta = 1.2;
    let h = |k: u64| (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>();
    // The share of a true Zipf law on the 1 % and 10 % most popular ranks.
    for (fraction, exact) in [(0.01, h(100) / h(n)), (0.10, h(1000) / h(n))] {
        let got = hot_share(hits("zipf:1.2", n, 400_000), fraction);
        assert!((got - exact).abs() < 0.02, "{fraction}: {got} vs {exact}");
    }
}

#[test]
fn pareto_follows_fios_law_through_fios_hash() {
    // fio's pareto: rank = (n - 1) * u^(ln h / ln(1 - h)), so P(rank <= k) =
    // ((k + 1) / (n - 1))^(1 / power); with h = 0.2 the first 20 % of the ranks take
    // 80 % of the draws. fio's hash then folds ranks onto blocks (some blocks take two),
    // so the expected share of the busiest 20 % of blocks is computed through it.
    let n = 10_000u64;
    let power = 0.2f64.ln() / 0.8f64.ln();
    let cdf = |k: u64| {
        (((k + 1) as f64) / (n - 1) as f64)
            .min(1.0)
            .powf(1.0 / power)
    };
    let ranks_top = cdf(n / 5 - 1);
    assert!((ranks_top - 0.80).abs() < 0.001, "{ranks_top}");
    let spec = spec("pareto:0.2");
    let d = spec.distribution.clone().unwrap();
    let [r, w] = sizes(&spec);
    let Kind::Pareto { offset, .. } = Skewed::new(&d, n, &[&r, &w], 4096, 99).kind else {
        panic!()
    };
    let mut block = vec![0f64; n as usize];
    for k in 0..n {
        let p = cdf(k) - if k == 0 { 0.0 } else { cdf(k - 1) };
        block[spread(k, offset, n) as usize] += p;
    }
    let expected = hot_share_of(block, 0.2);
    let got = hot_share(hits("pareto:0.2", n, 400_000), 0.2);
    assert!(expected > 0.80);
    assert!((got - expected).abs() < 0.01, "{got} vs {expected}");
}

fn hot_share_of(mut p: Vec<f64>, fraction: f64) -> f64 {
    p.sort_unstable_by(|a, b| b.total_cmp(a));
    p[..(p.len() as f64 * fraction) as usize]
        .iter()
        .sum::<f64>()
        / p.iter().sum::<f64>()
}

#[test]
fn normal_is_the_mean_of_twelve_draws() {
    // The mean of 12 uniform draws over n: a standard deviation of n / 12, so the 10 %
    // of the ranks around the middle (within 0.6 of a deviation) take about 45 %.
    let got = hot_share(hits("normal:0", 10_000, 400_000), 0.10);
    assert!((got - 0.4515).abs() < 0.02, "{got}");
    // A deviation widens it: fewer draws on the same share.
    let wide = hot_share(hits("normal:40", 10_000, 400_000), 0.10);
    assert!(wide < got - 0.05, "{wide} vs {got}");
}

#[test]
fn zones_take_their_shares_of_the_draws() {
    let counts = hits("zoned:60/10:30/20:8/30:2/40", 1000, 200_000);
    let zone = |a: usize, b: usize| counts[a..b].iter().sum::<u64>() as f64 / 200_000.0;
    for (range, share) in [
        ((0, 100), 0.60),
        ((100, 300), 0.30),
        ((300, 600), 0.08),
        ((600, 1000), 0.02),
    ] {
        let got = zone(range.0, range.1);
        assert!((got - share).abs() < 0.01, "{range:?}: {got}");
    }
    // Absolute zones: 1000 blocks of 4 KiB; 70 % on the first 400 KiB.
    let counts = hits("zoned_abs:70/400KiB:30/3600KiB", 1000, 100_000);
    let first = counts[..100].iter().sum::<u64>() as f64 / 100_000.0;
    assert!((first - 0.70).abs() < 0.01, "{first}");
}

#[test]
fn reads_and_writes_share_the_popular_blocks() {
    let spec = DataSpec {
        rw: RwKind::Randrw,
        ..spec("zipf:1.2")
    };
    let [mut r, mut w] = sizes(&spec);
    let d = spec.distribution.clone().unwrap();
    let mut g = Skewed::new(&d, 1000, &[&r.clone(), &w.clone()], 4096, 1);
    let top = |v: Vec<u64>| {
        let mut c = vec![0u32; 1000];
        v.iter().for_each(|b| c[*b as usize] += 1);
        (0..1000).max_by_key(|b| c[*b]).unwrap()
    };
    let reads: Vec<u64> = (0..5000).map(|_| g.next(&mut r).unwrap().0).collect();
    let writes: Vec<u64> = (0..5000).map(|_| g.next(&mut w).unwrap().0).collect();
    assert_eq!(top(reads), top(writes));
}
