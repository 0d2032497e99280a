use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    spec: DataSpec,
}

#[test]
fn defaults_match_the_flags() {
    let d = DataSpec::default();
    assert_eq!(d.rw, RwKind::Read);
    assert_eq!(d.block_size, ByteCount::kib(4));
    assert_eq!(d.threads, 1);
    assert_eq!(d.seed, DEFAULT_SEED);
    // A study file with no keys is the same workload as no flags.
    let from_toml: DataSpec = toml::from_str("").unwrap();
    assert_eq!(from_toml, d);
}

#[test]
fn flags_and_toml_give_the_same_spec() {
    let flags = Cli::parse_from([
        "iolab",
        "--rw",
        "randrw",
        "--rwmix-read",
        "70",
        "--block-size",
        "2048KiB",
        "--threads",
        "8",
        "--queue-depth",
        "8",
        "--runtime",
        "900s",
        "--direct",
    ])
    .spec;
    let toml: DataSpec = toml::from_str(
        "rw = \"randrw\"\nrwmix_read = 70\nblock_size = \"2MiB\"\nthreads = 8\nqueue_depth = 8\nruntime = \"15m\"\ndirect = true",
    )
    .unwrap();
    assert_eq!(flags, toml);
    assert_eq!(flags.read_percent(), 70);
    let json = serde_json::to_string(&flags).unwrap();
    assert_eq!(serde_json::from_str::<DataSpec>(&json).unwrap(), flags);
}

#[test]
fn unknown_study_keys_are_named() {
    let err = toml::from_str::<DataSpec>("blocksize = \"4k\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `blocksize`"), "{err}");
}

#[test]
fn validation_names_the_option() {
    let bad = |f: fn(&mut DataSpec)| {
        let mut s = DataSpec::default();
        f(&mut s);
        s.validate().unwrap_err().option
    };
    assert_eq!(bad(|s| s.threads = 0), "--threads");
    assert_eq!(bad(|s| s.queue_depth = 0), "--queue-depth");
    assert_eq!(bad(|s| s.block_size = ByteCount(0)), "--block-size");
    assert_eq!(bad(|s| s.fsync_every = Some(0)), "--fsync-every");
    assert_eq!(bad(|s| s.submit_batch = 4), "--submit-batch");
    assert_eq!(bad(|s| s.submit_batch = 0), "--submit-batch");
    assert_eq!(
        bad(|s| {
            s.verify = true;
            s.block_size = ByteCount(16)
        }),
        "--verify"
    );
    assert_eq!(bad(|s| s.size = Some(ByteCount(100))), "--size");
    assert_eq!(bad(|s| s.wear_out = true), "--wear-out");
    assert!(DataSpec::default().validate().is_ok());
}

#[test]
fn rw_kinds_know_their_mix() {
    assert_eq!(RwKind::Randread.read_percent(30), 100);
    assert_eq!(RwKind::Write.read_percent(30), 0);
    assert_eq!(RwKind::Randrw.read_percent(30), 30);
    assert!(RwKind::Randrw.is_random() && RwKind::Randrw.is_mixed());
}

#[test]
fn writes_of_their_own_size_only_where_one_size_is_not_assumed() {
    let error = |f: &dyn Fn(&mut DataSpec)| {
        let mut s = DataSpec {
            rw: RwKind::Randrw,
            write_block_size: Some(ByteCount::kib(64)),
            ..DataSpec::default()
        };
        f(&mut s);
        s.validate().err().map(|e| e.to_string())
    };
    assert_eq!(error(&|_| {}), None);
    assert_eq!(
        error(&|s| s.rw = RwKind::Randwrite),
        Some("--write-block-size: only applies to a mixed workload (rw, randrw), not randwrite: give --block-size 64KiB".into())
    );
    assert_eq!(
        error(&|s| {
            s.layout = Layout::Shared;
            s.placement = Placement::Strided;
        }),
        Some("--write-block-size: differs from --block-size, and a strided shared file interleaves the workers' blocks of one size".into())
    );
    // The same size twice is one size, anywhere.
    assert_eq!(
        error(&|s| {
            s.rw = RwKind::Write;
            s.write_block_size = Some(ByteCount::kib(4));
        }),
        None
    );
    // One I/O moves at most what Linux's read and write move (both sizes).
    assert_eq!(
        error(&|s| s.write_block_size = Some(ByteCount::gib(5))),
        Some("--write-block-size: 5GiB is more than one read or write can move on Linux (2 GiB - 4 KiB, 2147479552 bytes)".into())
    );
    assert_eq!(
        error(&|s| s.block_size = ByteCount::gib(4)),
        Some("--block-size: 4GiB is more than one read or write can move on Linux (2 GiB - 4 KiB, 2147479552 bytes)".into())
    );
    assert_eq!(
        error(&|s| s.size = Some(ByteCount::kib(32))),
        Some("--size: 32KiB is smaller than one block of 64KiB".into())
    );
}
