use iolab_core::spec::{RandomKind, RateProcess, RwKind, ThinkCount};
use iolab_core::units::{ByteCount, Nanos, TimeSpan};

use crate::fio::jobfile::{RawOption, Section};
use crate::fio::{FioJob, FioPlan, plan_jobs};

fn plan(opts: &[(&str, &str)]) -> Result<FioPlan, String> {
    let mut options = vec![("size", "16m")];
    options.extend_from_slice(opts);
    let s = Section {
        globals: 0,
        name: "j".into(),
        at: "j.fio:1".into(),
        options: options
            .iter()
            .map(|(k, v)| RawOption {
                key: k.to_string(),
                value: (!v.is_empty()).then(|| v.to_string()),
                at: "j.fio:2".into(),
            })
            .collect(),
    };
    let job = FioJob::from_section(&s).map_err(|e| e.to_string())?;
    plan_jobs(&[job], 1)
        .map(|mut p| p.remove(0))
        .map_err(|e| e.to_string())
}

#[test]
fn bssplit_runs_as_fio_completes_its_shares() {
    let p = plan(&[("rw", "randread"), ("bssplit", "4k/10:64k/50:32k/40")]).unwrap();
    assert_eq!(
        p.spec.block_sizes.unwrap().to_string(),
        "4KiB/10:64KiB/50:32KiB/40"
    );
    // Short of 100 %: fio's draw gives the rest to the largest share.
    let p = plan(&[("rw", "randread"), ("bssplit", "4k/10:64k/50")]).unwrap();
    assert_eq!(p.spec.block_sizes.unwrap().to_string(), "4KiB/10:64KiB/90");
    assert!(p.notes[0].contains("64KiB (the largest share) takes the other 40%"));
    // Blanks (and fio's 0) share what is left, in whole percents; the rest as above.
    let p = plan(&[("rw", "read"), ("bssplit", "4k/0:8k:16k/1")]).unwrap();
    assert_eq!(
        p.spec.block_sizes.unwrap().to_string(),
        "4KiB/49:8KiB/50:16KiB/1"
    );
}

#[test]
fn bssplit_that_cannot_run_is_refused_by_name() {
    let err = |opts: &[(&str, &str)]| plan(opts).unwrap_err();
    assert_eq!(
        err(&[("rw", "read"), ("bssplit", "4k/150:8k")]),
        "j.fio:2: [j] bssplit: 4KiB has a share of 150%, over 100% (fio would take it as 100%)"
    );
    assert!(
        err(&[("rw", "read"), ("bssplit", "4k/60:8k/60")]).ends_with(
            "bssplit: the shares add up to 120%, over 100% (fio would give the last sizes less than asked)"
        )
    );
    assert_eq!(
        err(&[("rw", "read"), ("bssplit", "4k/50:6k/50")]),
        "j.fio:2: [j] bssplit: 6KiB is not a multiple of 4KiB, the smallest size: every size must be (fio would cut it to one)"
    );
    assert!(
        err(&[("rw", "read"), ("bsrange", "4k-10k")])
            .contains("[j] bsrange: 10KiB is not a multiple of 4KiB")
    );
    assert!(err(&[("rw", "read"), ("bssplit", "4k/4x")]).contains("[j] bssplit: '4x'"));
}

#[test]
fn sizes_per_direction_of_a_mixed_job() {
    let p = plan(&[("rw", "randrw"), ("bs", "8k"), ("bssplit", "4k/50:64k/50,")]).unwrap();
    let s = &p.spec;
    assert_eq!(
        s.block_sizes.as_ref().unwrap().to_string(),
        "4KiB/50:64KiB/50"
    );
    assert_eq!(s.write_block_size, Some(ByteCount::kib(8)));
    let p = plan(&[("rw", "randrw"), ("bsrange", "4k-16k,8k-64k")]).unwrap();
    let s = &p.spec;
    assert_eq!(s.block_sizes.as_ref().unwrap().to_string(), "4KiB-16KiB");
    assert_eq!(
        s.write_block_sizes.as_ref().unwrap().to_string(),
        "8KiB-64KiB"
    );
    // A write-only job takes the writes' part.
    let p = plan(&[("rw", "write"), ("bssplit", "4k,16k/50:32k/50")]).unwrap();
    assert_eq!(p.spec.block_sizes.unwrap().to_string(), "16KiB/50:32KiB/50");
}

#[test]
fn rates_are_per_job_clone_and_per_direction_as_in_fio() {
    // fio's rate is each clone's: 4 clones at 100 I/Os per second are 400.
    let p = plan(&[("rw", "randread"), ("rate_iops", "100"), ("numjobs", "4")]).unwrap();
    assert_eq!(p.spec.rate_iops, Some(400));
    // A mixed job: each direction its own limit; "100," limits only reads.
    let p = plan(&[("rw", "randrw"), ("rate_iops", "100")]).unwrap();
    let s = &p.spec;
    assert_eq!(
        (s.rate_iops, s.read_rate_iops, s.write_rate_iops),
        (None, Some(100), Some(100))
    );
    let p = plan(&[("rw", "randrw"), ("rate_iops", "100,")]).unwrap();
    assert_eq!(
        (p.spec.read_rate_iops, p.spec.write_rate_iops),
        (Some(100), None)
    );
    let p = plan(&[("rw", "randrw"), ("rate", "1m,512k")]).unwrap();
    assert_eq!(
        (p.spec.read_rate, p.spec.write_rate),
        (Some(ByteCount::mib(1)), Some(ByteCount::kib(512)))
    );
    // rate_iops with drawn sizes: fio paces bytes at the smallest size.
    let p = plan(&[
        ("rw", "randread"),
        ("rate_iops", "100"),
        ("bssplit", "4k/50:64k/50"),
    ])
    .unwrap();
    assert_eq!(
        (p.spec.rate, p.spec.rate_iops),
        (Some(ByteCount(409_600)), None)
    );
    // Poisson: one gap per I/O, at the rate's I/Os of the smallest size.
    let p = plan(&[
        ("rw", "randread"),
        ("rate", "400k"),
        ("rate_process", "poisson"),
        ("bssplit", "4k/50:64k/50"),
    ])
    .unwrap();
    assert_eq!(
        (p.spec.rate_iops, p.spec.rate_process),
        (Some(100), RateProcess::Poisson)
    );
    // Minimums per clone too, with their window.
    let p = plan(&[
        ("rw", "read"),
        ("rate", "2m"),
        ("rate_min", "1m"),
        ("rate_cycle", "500"),
        ("numjobs", "2"),
    ])
    .unwrap();
    assert_eq!(p.spec.rate_min, Some(ByteCount::mib(2)));
    assert_eq!(p.spec.rate_cycle, Some(TimeSpan(Nanos::from_millis(500))));
}

#[test]
fn rates_that_cannot_run_are_refused_by_name() {
    let err = |opts: &[(&str, &str)]| plan(opts).unwrap_err();
    assert!(
        err(&[("rw", "read"), ("rate", "1k")])
            .contains("[j] rate: 1KiB per second is less than one I/O of 4KiB per second")
    );
    assert!(
        err(&[("rw", "read"), ("rate", "1m"), ("rate_iops", "10")])
            .contains("[j] rate_iops: and rate are mutually exclusive")
    );
    // 0 is fio's default: no limit.
    assert_eq!(
        plan(&[("rw", "read"), ("rate_iops", "0")])
            .unwrap()
            .spec
            .rate_iops,
        None
    );
    assert!(
        err(&[("rw", "read"), ("rate_iops", "10"), ("rate_iops_min", "20")])
            .contains("[j] rate_iops_min: 20 is above the rate")
    );
}

#[test]
fn random_offsets_follow_fios_generator_and_distribution() {
    // lfsr: every block once per pass, random map or not.
    let p = plan(&[
        ("rw", "randread"),
        ("norandommap", ""),
        ("random_generator", "lfsr"),
    ])
    .unwrap();
    assert_eq!(p.spec.random, RandomKind::FullCoverage);
    // A skewed distribution has no random map in fio.
    let p = plan(&[("rw", "randread"), ("random_distribution", "zipf:1.2")]).unwrap();
    assert_eq!(p.spec.random, RandomKind::Uniform);
    assert_eq!(p.spec.distribution.unwrap().to_string(), "zipf:1.2");
    // fio ignores it for sequential I/O.
    let p = plan(&[("rw", "read"), ("random_distribution", "zipf:1.2")]).unwrap();
    assert_eq!(p.spec.distribution, None);
    assert!(p.notes[0].contains("no effect on rw=read"));
    // blockalign other than the block size turns the random map off.
    let p = plan(&[("rw", "randread"), ("bs", "8k"), ("blockalign", "4k")]).unwrap();
    assert_eq!(p.spec.block_align, Some(ByteCount::kib(4)));
    assert_eq!(p.spec.random, RandomKind::Uniform);
}

#[test]
fn thinktime_maps_with_fios_units() {
    let p = plan(&[
        ("rw", "randread"),
        ("thinktime", "500"),
        ("thinktime_spin", "1s"),
        ("thinktime_blocks", "8"),
        ("thinktime_blocks_type", "issue"),
    ])
    .unwrap();
    let s = &p.spec;
    assert_eq!(s.think_time, Some(TimeSpan(Nanos(500_000))));
    // fio cuts the spin to the think time.
    assert_eq!(s.think_spin, s.think_time);
    assert!(p.notes.iter().any(|n| n.contains("cut to it")));
    assert_eq!((s.think_every, s.think_count), (8, ThinkCount::Issue));
    assert_eq!(s.rw, RwKind::Randread);
}
