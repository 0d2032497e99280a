use super::*;
use crate::spec::{DataSpec, RandomKind, RwKind};

fn mix(s: &str) -> SizeMix {
    s.parse().unwrap()
}

#[test]
fn a_split_reads_and_prints_back() {
    let m = mix("4k/10:64KiB/50:32KiB/40");
    assert_eq!(m.to_string(), "4KiB/10:64KiB/50:32KiB/40");
    assert_eq!(mix(&m.to_string()), m);
    assert_eq!((m.smallest(), m.largest()), (4096, 65536));
    // 10 % of 4 KiB + 50 % of 64 KiB + 40 % of 32 KiB.
    assert!((m.mean() - (409.6 + 32768.0 + 13107.2)).abs() < 1e-6);
    let json = serde_json::to_string(&m).unwrap();
    assert_eq!(json, "\"4KiB/10:64KiB/50:32KiB/40\"");
    assert_eq!(serde_json::from_str::<SizeMix>(&json).unwrap(), m);
}

#[test]
fn blank_shares_take_what_the_others_leave() {
    assert_eq!(
        mix("4KiB/50:8KiB:16KiB").to_string(),
        "4KiB/50:8KiB/25:16KiB/25"
    );
    // 100 / 3: the first blank takes the remainder.
    assert_eq!(
        mix("4KiB:8KiB:16KiB").to_string(),
        "4KiB/34:8KiB/33:16KiB/33"
    );
    assert_eq!(mix("4KiB/").to_string(), "4KiB/100");
}

#[test]
fn a_split_that_does_not_add_up_is_refused() {
    let err = |s: &str| s.parse::<SizeMix>().unwrap_err();
    assert!(
        err("4KiB/150:8KiB").contains("share of 150%, over 100%"),
        "{}",
        err("4KiB/150:8KiB")
    );
    assert!(err("4KiB/60:8KiB/60").contains("add up to 120%, over 100%"));
    assert!(err("4KiB/10:8KiB/50").contains("add up to 60%, not 100%"));
    assert!(err("4KiB/100:8KiB").contains("8KiB gets no share"));
    assert!(err("4KiB/50:4KiB/50").contains("4KiB appears twice"));
    assert!(err("4KiB/x:8KiB").contains("'x'"));
    assert!(
        err("4Kb/50:8KiB/50").contains("'4Kb'"),
        "{}",
        err("4Kb/50:8KiB/50")
    );
    assert!(err("0/50:8KiB/50").contains("size of 0"));
    assert!(err("4KiB").contains("give shares"));
}

#[test]
fn a_range_reads_and_prints_back() {
    let m = mix("4k-64k");
    assert_eq!(m.to_string(), "4KiB-64KiB");
    assert_eq!((m.smallest(), m.largest()), (4096, 65536));
    // 4, 8, ..., 64 KiB, each as likely: a mean of 34 KiB.
    assert_eq!(m.mean(), 34.0 * 1024.0);
    assert!(
        "64k-4k"
            .parse::<SizeMix>()
            .unwrap_err()
            .contains("above its end")
    );
}

#[test]
fn distributions_read_and_print_back() {
    for text in [
        "zipf:1.2",
        "zipf:0.8:0.25",
        "pareto:0.9",
        "normal:5",
        "normal:0:0.5",
        "zoned:60/10:30/20:8/30:2/40",
        "zoned:50/50:50/50,100/100",
        "zoned_abs:60/1GiB:40/3GiB",
    ] {
        let d: Distribution = text.parse().unwrap();
        assert_eq!(d.to_string(), text);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<Distribution>(&json).unwrap(), d);
    }
    // A zone without its size takes an even part of what the others leave.
    let d: Distribution = "zoned:60/10:40".parse().unwrap();
    assert_eq!(d.to_string(), "zoned:60/10:40/90");
    // A direction without zones draws evenly.
    let Distribution::Zoned { read, write } = "zoned:,100/10".parse().unwrap() else {
        panic!()
    };
    assert!(read.is_empty());
    assert_eq!(
        write,
        [Zone {
            access: 100,
            size: 10
        }]
    );
}

#[test]
fn distributions_out_of_range_are_refused() {
    let err = |s: &str| s.parse::<Distribution>().unwrap_err();
    assert!(err("zipf:1").contains("not 1"));
    assert!(err("pareto:1.5").contains("between 0 and 1"));
    assert!(err("normal:100").contains("below 100"));
    assert!(err("zipf:1.2:2").contains("center 2"));
    assert!(err("zoned:60/10:30/20").contains("add up to 90%"));
    assert!(err("zoned:60/80:40/30").contains("sizes add up to 110%"));
    assert!(err("zoned:60/0:40/100").contains("0% cannot take 60%"));
    assert!(err("zoned_abs:60/1GiB:40").contains("needs its size"));
    assert!(err("gauss:5").contains("'gauss' is not a distribution"));
}

fn valid(f: impl FnOnce(&mut DataSpec)) -> Result<(), String> {
    let mut s = DataSpec::default();
    f(&mut s);
    s.validate().map_err(|e| e.to_string())
}

#[test]
fn a_mix_sizes_the_spec() {
    let mut s = DataSpec {
        rw: RwKind::Randrw,
        block_sizes: Some(mix("8KiB/50:64KiB/50")),
        write_block_size: Some(crate::units::ByteCount::kib(4)),
        ..DataSpec::default()
    };
    assert_eq!(s.unit(), 4096);
    assert_eq!(s.largest_io(), 65536);
    assert_eq!(s.grain(), 4096);
    assert_eq!(s.name(), "randrw-4KiB..64KiB");
    s.validate().unwrap();
    s.block_align = Some(crate::units::ByteCount(2048));
    assert_eq!(s.unit(), 2048);
}

#[test]
fn mixes_that_cannot_run_are_refused_by_option() {
    let sizes = |m: &str| {
        let m = mix(m);
        move |s: &mut DataSpec| s.block_sizes = Some(m)
    };
    assert!(
        valid(sizes("4KiB/50:6KiB/50"))
            .unwrap_err()
            .starts_with("--block-sizes: 6KiB is not a multiple of 4KiB")
    );
    assert!(
        valid(sizes("4KiB-10KiB"))
            .unwrap_err()
            .contains("10KiB is not a multiple of 4KiB")
    );
    assert!(
        valid(|s| {
            s.block_sizes = Some(mix("4KiB-64KiB"));
            s.verify = true;
        })
        .unwrap_err()
        .contains("--verify checks blocks of one size")
    );
    assert!(
        valid(|s| s.write_block_sizes = Some(mix("4KiB-8KiB")))
            .unwrap_err()
            .starts_with("--write-block-sizes: only applies to a mixed workload")
    );
    assert!(
        valid(|s| s.block_align = Some(crate::units::ByteCount::kib(4)))
            .unwrap_err()
            .starts_with("--block-align: only applies to random offsets")
    );
    assert!(
        valid(|s| {
            s.rw = RwKind::Randread;
            s.random = RandomKind::FullCoverage;
            s.block_align = Some(crate::units::ByteCount(512));
        })
        .unwrap_err()
        .contains("use --random uniform")
    );
    assert!(
        valid(|s| {
            s.rw = RwKind::Randread;
            s.block_align = Some(crate::units::ByteCount(3000));
        })
        .unwrap_err()
        .contains("must divide one another")
    );
}

#[test]
fn distributions_need_random_uniform_offsets() {
    let zipf: Distribution = "zipf:1.2".parse().unwrap();
    let z = zipf.clone();
    assert!(
        valid(move |s| s.distribution = Some(z))
            .unwrap_err()
            .starts_with("--distribution: only applies to random offsets")
    );
    let z = zipf.clone();
    assert!(
        valid(move |s| {
            s.rw = RwKind::Randread;
            s.random = RandomKind::FullCoverage;
            s.distribution = Some(z);
        })
        .unwrap_err()
        .contains("cannot be combined with --random full-coverage")
    );
    valid(move |s| {
        s.rw = RwKind::Randread;
        s.distribution = Some(zipf);
    })
    .unwrap();
}

#[test]
fn rates_below_one_io_or_in_both_kinds_are_refused() {
    use crate::units::ByteCount;
    assert!(
        valid(|s| s.rate = Some(ByteCount(1024)))
            .unwrap_err()
            .starts_with("--rate: 1KiB per second is less than one I/O of 4KiB per second")
    );
    assert!(
        valid(|s| s.rate_iops = Some(0))
            .unwrap_err()
            .starts_with("--rate-iops: must be at least 1")
    );
    assert!(
        valid(|s| {
            s.rate = Some(ByteCount::mib(1));
            s.rate_iops = Some(10);
        })
        .unwrap_err()
        .contains("give one kind")
    );
    assert!(
        valid(|s| s.write_rate_iops = Some(10))
            .unwrap_err()
            .starts_with("--write-rate-iops: only applies to a mixed workload")
    );
    assert!(
        valid(|s| {
            s.rate_iops = Some(10);
            s.rate_iops_min = Some(20);
        })
        .unwrap_err()
        .starts_with("--rate-iops-min: 20 is above the rate")
    );
    assert!(
        valid(|s| s.rate_process = RateProcess::Poisson)
            .unwrap_err()
            .starts_with("--rate-process: only applies with --rate")
    );
    assert!(
        valid(|s| s.rate_cycle = Some("500ms".parse().unwrap()))
            .unwrap_err()
            .starts_with("--rate-cycle: only applies with --rate-min")
    );
    assert!(
        valid(|s| {
            s.rw = RwKind::Randrw;
            s.rate_iops = Some(100);
            s.write_rate_iops = Some(50);
        })
        .unwrap_err()
        .starts_with("--write-rate-iops: and --rate-iops both limit")
    );
    valid(|s| {
        s.rw = RwKind::Randrw;
        s.read_rate_iops = Some(100);
        s.write_rate_iops = Some(50);
        s.rate_iops_min = Some(10);
        s.rate_process = RateProcess::Poisson;
    })
    .unwrap();
}

#[test]
fn think_options_need_a_think_time() {
    let t = |s: &str| Some(s.parse::<crate::units::TimeSpan>().unwrap());
    assert!(
        valid(|s| s.think_spin = t("1ms"))
            .unwrap_err()
            .starts_with("--think-spin: only applies with --think-time")
    );
    assert!(
        valid(|s| s.think_every = 4)
            .unwrap_err()
            .starts_with("--think-every: only applies with --think-time")
    );
    assert!(
        valid(|s| {
            s.think_time = t("1ms");
            s.think_spin = t("2ms");
        })
        .unwrap_err()
        .contains("longer than --think-time")
    );
    valid(|s| {
        s.think_time = t("1ms");
        s.think_spin = t("500us");
        s.think_every = 8;
        s.think_count = ThinkCount::Issue;
    })
    .unwrap();
}

/// A study file takes the options that are left out of a default spec's JSON (not set):
/// sizes, distributions, rates and pauses, swept too.
#[test]
fn a_study_takes_mixes_distributions_and_paces() {
    use crate::spec::{Overrides, PhaseSpec, StudySpec};
    let text = r#"
name = "paced"
[defaults]
block_sizes = "4KiB/10:64KiB/50:32KiB/40"
[[sweep]]
name = "skew"
over = { rate_iops = [100, 200] }
[[sweep.phase]]
name = "zipf-read"
rw = "randread"
distribution = "zipf:1.2"
think_time = "1ms"
think_every = 8
write_block_sizes = "4KiB-8KiB"
"#;
    // The writes' mix of a read-only phase is refused, naming the phase.
    let s = StudySpec::from_toml(text, "paced.toml").unwrap();
    let err = s.expand("paced.toml", &Overrides::default()).unwrap_err();
    assert_eq!(err.option, "paced.toml: sweep 'skew', phase 'zipf-read'");
    assert!(
        err.reason
            .starts_with("--write-block-sizes: only applies to a mixed workload")
    );
    let text = text.replace("write_block_sizes = \"4KiB-8KiB\"\n", "");
    let s = StudySpec::from_toml(&text, "paced.toml").unwrap();
    let phases = s.expand("paced.toml", &Overrides::default()).unwrap();
    let PhaseSpec::Data(d) = &phases[1].spec else {
        panic!()
    };
    assert_eq!(
        d.block_sizes.as_ref().unwrap().to_string(),
        "4KiB/10:64KiB/50:32KiB/40"
    );
    assert_eq!(d.distribution.as_ref().unwrap().to_string(), "zipf:1.2");
    assert_eq!((d.rate_iops, d.think_every), (Some(200), 8));
}
