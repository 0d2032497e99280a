//! Tests of [`MetaSpec`] and [`FindSpec`]: defaults match the flags, flags and study files
//! give the same spec, validation names the option, the S1 table is expressible, and
//! find's size test rounds as find does.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct MetaCli {
    #[command(flatten)]
    spec: MetaSpec,
}

#[derive(Parser)]
struct FindCli {
    #[command(flatten)]
    spec: FindSpec,
}

#[test]
fn defaults_match_the_flags() {
    let d = MetaSpec::default();
    assert_eq!(d.threads, 1);
    assert_eq!(d.files_per_dir, 1000);
    assert_eq!(d.dirs_per_thread, None);
    assert_eq!(
        d.ops,
        vec![MetaOp::Create, MetaOp::Stat, MetaOp::Read, MetaOp::Remove]
    );
    assert_eq!(d.file_size, ByteCount(0));
    assert!(!d.shared_dir);
    assert_eq!(d.backend, MetaBackendKind::Posix);
    assert_eq!(d.seed, DEFAULT_SEED);
    assert!(d.validate().is_ok());
    let from_toml: MetaSpec = toml::from_str("").unwrap();
    assert_eq!(from_toml, d);
    let f = FindSpec::default();
    assert_eq!(f.threads, 1);
    assert_eq!(f.entry_type, EntryType::Any);
    assert_eq!(toml::from_str::<FindSpec>("").unwrap(), f);
}

#[test]
fn flags_and_toml_give_the_same_spec() {
    let flags = MetaCli::parse_from([
        "iolab",
        "--threads",
        "16",
        "--files-per-dir",
        "3000",
        "--dirs-per-thread",
        "20",
        "--ops",
        "create,stat,remove",
        "--file-size",
        "3901",
        "--shared-dir",
        "--runtime",
        "300s",
        "--wear-out",
    ])
    .spec;
    let toml: MetaSpec = toml::from_str(
        "threads = 16\nfiles_per_dir = 3000\ndirs_per_thread = 20\nops = [\"create\", \"stat\", \"remove\"]\nfile_size = 3901\nshared_dir = true\nruntime = \"5m\"\nwear_out = true",
    )
    .unwrap();
    assert_eq!(flags, toml);
    let json = serde_json::to_string(&flags).unwrap();
    assert_eq!(serde_json::from_str::<MetaSpec>(&json).unwrap(), flags);
    assert!(flags.validate().is_ok());

    let find = FindCli::parse_from([
        "iolab", "--newer", "/ts", "--size", "3901c", "--name", "*01*", "-t", "4",
    ])
    .spec;
    let back: FindSpec = serde_json::from_str(&serde_json::to_string(&find).unwrap()).unwrap();
    assert_eq!(back, find);
    assert_eq!(find.size, Some(SizeTest::bytes(3901)));
    assert!(find.needs_stat());
}

#[test]
fn unknown_study_keys_are_named() {
    let err = toml::from_str::<MetaSpec>("files = 3")
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown field `files`"), "{err}");
}

#[test]
fn the_s1_table_is_expressible() {
    let spec = MetaCli::parse_from([
        "iolab",
        "--files-per-dir",
        "3000",
        "--total-files",
        "960000",
    ])
    .spec;
    let dirs: Vec<u32> = [1, 2, 4, 8, 16, 32]
        .iter()
        .map(|w| spec.dirs_per_thread_for(*w).unwrap())
        .collect();
    assert_eq!(dirs, vec![320, 160, 80, 40, 20, 10]);
    for w in [1, 2, 4, 8, 16, 32] {
        assert_eq!(spec.total_files_for(w).unwrap(), 960_000);
        assert_eq!(spec.total_files_note(w), None);
    }
    // 7 threads do not divide 960000 files: rounded up, and said so.
    assert_eq!(spec.dirs_per_thread_for(7).unwrap(), 46);
    assert_eq!(spec.total_files_for(7).unwrap(), 966_000);
    assert!(spec.total_files_note(7).unwrap().contains("966000 files"));
    // Without --total-files, --dirs-per-thread (default 1) holds.
    assert_eq!(MetaSpec::default().dirs_per_thread_for(64).unwrap(), 1);
}

#[test]
fn validation_names_the_option() {
    let bad = |f: fn(&mut MetaSpec)| {
        let mut s = MetaSpec::default();
        f(&mut s);
        s.validate().unwrap_err().option
    };
    assert_eq!(bad(|s| s.threads = 0), "--threads");
    assert_eq!(bad(|s| s.dirs_per_thread = Some(0)), "--dirs-per-thread");
    assert_eq!(
        bad(|s| {
            s.total_files = Some(10);
            s.dirs_per_thread = Some(2)
        }),
        "--total-files"
    );
    assert_eq!(bad(|s| s.files_per_dir = 0), "--files-per-dir");
    assert_eq!(bad(|s| s.depth = 99), "--depth");
    assert_eq!(
        bad(|s| {
            s.depth = 2;
            s.branching = 0
        }),
        "--branching"
    );
    assert_eq!(bad(|s| s.wear_out = true), "--wear-out");
    assert_eq!(
        bad(|s| {
            s.runtime = Some(TimeSpan::from_secs(1));
            s.ops = vec![MetaOp::Stat]
        }),
        "--runtime"
    );
    assert_eq!(bad(|s| s.file_size = ByteCount::gib(1)), "--file-size");
    assert_eq!(bad(|s| s.cpus = Some(CpuList(vec![]))), "--cpus");
}

#[test]
fn phases_must_come_in_a_sensible_order() {
    let check = |ops: &[MetaOp]| {
        let s = MetaSpec {
            ops: ops.to_vec(),
            ..MetaSpec::default()
        };
        s.validate().map_err(|e| e.to_string())
    };
    use MetaOp::*;
    assert!(check(&[Mkdir, Create, Stat, Read, Remove, Rmdir]).is_ok());
    assert!(check(&[Create]).is_ok());
    assert!(check(&[Stat, Remove]).is_ok(), "a kept tree");
    assert!(check(&[Mkdir, Rmdir]).is_ok());
    assert_eq!(
        check(&[Stat, Create]).unwrap_err(),
        "--ops: create must come before stat"
    );
    assert_eq!(
        check(&[Create, Create]).unwrap_err(),
        "--ops: names create twice"
    );
    assert!(
        check(&[Create, Rmdir])
            .unwrap_err()
            .contains("rmdir needs remove")
    );
    assert!(check(&[Mkdir, Stat]).unwrap_err().contains("add create"));
    assert!(check(&[]).unwrap_err().contains("names no operation"));
    // Directories only need no files.
    let dirs_only = MetaSpec {
        ops: vec![Mkdir, Rmdir],
        files_per_dir: 0,
        ..MetaSpec::default()
    };
    assert!(dirs_only.validate().is_ok());
}

#[test]
fn find_size_rounds_up_like_find() {
    let t = |s: &str| s.parse::<SizeTest>().unwrap();
    assert!(t("3901c").matches(3901));
    assert!(!t("3901c").matches(3900));
    assert!(t("1k").matches(1) && t("1k").matches(1024) && !t("1k").matches(1025));
    assert!(!t("1k").matches(0));
    // find's classic surprise: -size -1M matches only empty files.
    assert!(t("-1M").matches(0) && !t("-1M").matches(1));
    assert!(t("+1M").matches(1_048_577) && !t("+1M").matches(1_048_576));
    assert!(t("2").matches(1000), "512-byte blocks by default");
    assert_eq!(t("+10k").to_string(), "+10k");
    assert_eq!(t("5").to_string(), "5b");
    for bad in ["", "c", "12x", "+", "1.5k"] {
        let err = bad.parse::<SizeTest>().unwrap_err().to_string();
        assert!(err.contains("invalid size test"), "{bad}: {err}");
    }
    let negative = FindCli::parse_from(["iolab", "--size", "-10k"]).spec;
    assert_eq!(negative.size.unwrap().cmp, SizeCmp::LessThan);
}

#[test]
fn find_validation_names_the_option() {
    let mut f = FindSpec {
        threads: 0,
        ..FindSpec::default()
    };
    assert_eq!(f.validate().unwrap_err().option, "--threads");
    f.threads = 1;
    f.name = Some("a/b".into());
    assert_eq!(f.validate().unwrap_err().option, "--name");
}
