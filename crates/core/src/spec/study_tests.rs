use super::keys::edit_distance;
use super::*;
use crate::spec::RwKind;
use crate::units::ByteCount;

const NFS_LIKE: &str = r#"
name = "mini"
repeat = 2

[defaults]
block_size = "1MiB"

[[sweep]]
name = "sequential"
over = { threads = [1, 2, 4] }
[[sweep.phase]]
name = "seq-write"
rw = "write"
total_size = "2TB"
[[sweep.phase]]
name = "seq-read"
rw = "read"
total_size = "2TB"
"#;

fn data(p: &PlannedPhase) -> &DataSpec {
    match &p.spec {
        PhaseSpec::Data(d) => d,
        _ => panic!("{} is not a data phase", p.name),
    }
}

#[test]
fn a_sweep_runs_its_phases_in_order_for_every_point() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let phases = s.expand("mini.toml", &Overrides::default()).unwrap();
    assert_eq!(phases.len(), 3 * 2 * 2);
    let names: Vec<(&str, u32, u32)> = phases
        .iter()
        .map(|p| (p.name.as_str(), data(p).threads, p.repetition))
        .collect();
    assert_eq!(
        &names[..4],
        &[
            ("seq-write", 1, 0),
            ("seq-read", 1, 0),
            ("seq-write", 1, 1),
            ("seq-read", 1, 1)
        ]
    );
    assert_eq!(names[11], ("seq-read", 4, 1));
    assert_eq!(phases[4].coordinates["threads"], "2");
    assert_eq!(phases[4].point, 1);
    assert_eq!(data(&phases[0]).block_size, ByteCount::mib(1));
    assert_eq!(data(&phases[1]).rw, RwKind::Read);
    assert_eq!(
        data(&phases[1]).total_size,
        Some(ByteCount(2_000_000_000_000))
    );
}

#[test]
fn product_and_zip_sweeps() {
    let text = r#"
name = "m"
[[sweep]]
name = "matrix"
over = { block_size = ["128KiB", "4KiB"], threads = [1, 64], sync = [false, true] }
phase = [{ name = "w", rw = "write", size = "1GiB" }]
[[sweep]]
name = "paired"
mode = "zip"
over = { threads = [64, 128], queue_depth = [8, 4] }
phase = [{ name = "r", rw = "randread", size = "1GiB" }]
"#;
    let phases = StudySpec::from_toml(text, "m.toml")
        .unwrap()
        .expand("m.toml", &Overrides::default())
        .unwrap();
    assert_eq!(phases.len(), 8 + 2);
    assert_eq!(
        (data(&phases[8]).threads, data(&phases[8]).queue_depth),
        (64, 8)
    );
    assert_eq!(
        (data(&phases[9]).threads, data(&phases[9]).queue_depth),
        (128, 4)
    );
    assert_eq!(phases[9].point, 9);
    let bad = text.replace("queue_depth = [8, 4]", "queue_depth = [8]");
    let err = StudySpec::from_toml(&bad, "m.toml")
        .unwrap()
        .expand("m.toml", &Overrides::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("needs lists of equal length"),
        "{err}"
    );
}

#[test]
fn a_typo_is_named_with_its_line() {
    let text = NFS_LIKE.replace(
        "total_size = \"2TB\"\n[[sweep.phase]]",
        "totalsize = \"2TB\"\n[[sweep.phase]]",
    );
    let err = StudySpec::from_toml(&text, "mini.toml").unwrap_err();
    assert_eq!(err.option, "mini.toml:14");
    assert!(
        err.reason.starts_with("unknown option `totalsize`"),
        "{err}"
    );
}

#[test]
fn toml_syntax_errors_are_one_line_with_the_line() {
    let err = StudySpec::from_toml("name = \"x\"\nrepeat = \n", "x.toml").unwrap_err();
    assert_eq!(err.option, "x.toml:2");
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn invalid_values_name_the_phase() {
    let text = NFS_LIKE.replace("rw = \"read\"", "rw = \"sideways\"");
    let err = StudySpec::from_toml(&text, "mini.toml")
        .unwrap()
        .expand("mini.toml", &Overrides::default())
        .unwrap_err();
    assert_eq!(
        err.option,
        "mini.toml: sweep 'sequential', phase 'seq-read'"
    );
    assert!(err.reason.contains("unknown variant `sideways`"), "{err}");
    let conflict = NFS_LIKE.replace("rw = \"write\"", "rw = \"write\"\nthreads = 3");
    let err = StudySpec::from_toml(&conflict, "mini.toml")
        .unwrap()
        .expand("mini.toml", &Overrides::default())
        .unwrap_err();
    assert!(
        err.reason
            .contains("sets `threads`, which the sweep varies"),
        "{err}"
    );
}

#[test]
fn overrides_scale_and_set() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let o = Overrides {
        scale: Some(0.001),
        set: vec![
            Overrides::parse_set("direct=true").unwrap(),
            Overrides::parse_set("block-size=4KiB").unwrap(),
        ],
        repeat: Some(1),
        user_swept: Vec::new(),
    };
    let phases = s.expand("mini.toml", &o).unwrap();
    assert_eq!(phases.len(), 6);
    let d = data(&phases[0]);
    assert_eq!(d.total_size, Some(ByteCount(2_000_000_000 / 4096 * 4096)));
    assert!(d.direct);
    assert_eq!(d.block_size, ByteCount::kib(4));
    assert!(Overrides::parse_set("nonsense").is_err());
}

/// What the user sets runs as set: --scale shrinks only the study's own values.
#[test]
fn scale_leaves_explicit_set_values_alone() {
    let text = r#"
name = "s1"
[[sweep]]
name = "metadata"
over = { threads = [2] }
[[sweep.phase]]
name = "md"
kind = "meta"
files_per_dir = 3000
total_files = 960000
runtime = "300s"
ops = "create,stat"
"#;
    let s = StudySpec::from_toml(text, "s1.toml").unwrap();
    let o = Overrides {
        scale: Some(0.01),
        set: vec![
            Overrides::parse_set("files_per_dir=3000").unwrap(),
            Overrides::parse_set("total_files=6000").unwrap(),
        ],
        repeat: None,
        user_swept: Vec::new(),
    };
    let phases = s.expand("s1.toml", &o).unwrap();
    let PhaseSpec::Meta(m) = &phases[0].spec else {
        panic!("not a metadata phase")
    };
    assert_eq!(m.files_per_dir, 3000);
    assert_eq!(m.total_files_for(2).unwrap(), 6000);
    // The study's own runtime is scaled (300 s x 0.01 = 3 s) ...
    assert_eq!(m.runtime.map(|t| t.to_string()).as_deref(), Some("3s"));
    // ... a runtime the user sets is not.
    let o = Overrides {
        scale: Some(0.005),
        set: vec![Overrides::parse_set("runtime=3s").unwrap()],
        repeat: None,
        user_swept: Vec::new(),
    };
    let phases = s.expand("s1.toml", &o).unwrap();
    let PhaseSpec::Meta(m) = &phases[0].spec else {
        panic!("not a metadata phase")
    };
    assert_eq!(m.runtime.map(|t| t.to_string()).as_deref(), Some("3s"));
}

#[test]
fn metadata_phases_take_their_own_options_and_leave_data_options_alone() {
    let text = r#"
name = "s1"
[defaults]
direct = true
block_size = "1MiB"
[[sweep]]
name = "metadata"
over = { threads = [1, 2, 4] }
[[sweep.phase]]
name = "md"
kind = "meta"
files_per_dir = 3000
total_files = 960000
ops = "create,stat,remove"
"#;
    let s = StudySpec::from_toml(text, "s1.toml").unwrap();
    let phases = s.expand("s1.toml", &Overrides::default()).unwrap();
    assert_eq!(phases.len(), 3);
    let PhaseSpec::Meta(m) = &phases[2].spec else {
        panic!("not a metadata phase")
    };
    assert_eq!(m.threads, 4);
    assert_eq!(m.total_files_for(4).unwrap(), 960_000);
    assert_eq!(m.ops.len(), 3);
    assert_eq!(phases[2].spec.kind(), "meta");
    // --scale shrinks the file count and keeps the directories per thread.
    let small = s
        .expand(
            "s1.toml",
            &Overrides {
                scale: Some(0.001),
                ..Overrides::default()
            },
        )
        .unwrap();
    let PhaseSpec::Meta(m) = &small[0].spec else {
        panic!("not a metadata phase")
    };
    assert_eq!((m.files_per_dir, m.total_files), (3, Some(960)));
    assert_eq!(m.dirs_per_thread_for(1).unwrap(), 320);
    // An option of the other kind on the phase itself is a mistake.
    let bad = text.replace("ops = ", "block_size = \"4KiB\"\nops = ");
    let err = StudySpec::from_toml(&bad, "s1.toml")
        .unwrap()
        .expand("s1.toml", &Overrides::default())
        .unwrap_err();
    assert_eq!(err.option, "s1.toml: sweep 'metadata', phase 'md'");
    assert_eq!(err.reason, "`block_size` is not an option of a meta phase");
}

#[test]
fn an_unknown_set_key_is_an_error_naming_set_and_the_key() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let expand = |set: &str| {
        s.expand(
            "mini.toml",
            &Overrides {
                set: vec![Overrides::parse_set(set).unwrap()],
                ..Overrides::default()
            },
        )
    };
    let err = expand("blocksize=64KiB").unwrap_err();
    assert_eq!(err.option, "--set");
    assert!(
        err.reason
            .starts_with("unknown option `blocksize` (did you mean `block_size`?)"),
        "{err}"
    );
    // Nothing near enough: no suggestion.
    let err = expand("colour=blue").unwrap_err();
    assert_eq!(err.option, "--set");
    assert!(err.reason.starts_with("unknown option `colour`;"), "{err}");
    // A known key of either kind is fine.
    assert!(expand("queue-depth=4").is_ok());
}

#[test]
fn a_set_key_no_phase_has_is_refused() {
    // A data-only study: `files_per_dir` is a metadata option.
    let s = StudySpec::from_toml(
        "name = \"d\"\n[[sweep]]\nname = \"s\"\nphase = [{ name = \"p\", rw = \"read\" }]\n",
        "d.toml",
    )
    .unwrap();
    let err = s
        .expand(
            "d.toml",
            &Overrides {
                set: vec![Overrides::parse_set("files_per_dir=10").unwrap()],
                ..Overrides::default()
            },
        )
        .unwrap_err();
    assert_eq!(err.option, "--set");
    assert_eq!(
        err.reason,
        "`files_per_dir` is an option of no phase of this study (its phases are data)"
    );
}

/// `--set` on a swept key replaces the sweep's values: a list (S3's 100/0 mix beside 90
/// and 70), or one value (one point), each point labelled with what it runs; a list for a
/// key no sweep varies is refused.
#[test]
fn set_replaces_a_swept_list() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let with = |set: &str| {
        s.expand(
            "mini.toml",
            &Overrides {
                set: vec![Overrides::parse_set(set).unwrap()],
                ..Overrides::default()
            },
        )
    };
    let phases = with("threads=[1,8,16]").unwrap();
    let mut threads: Vec<&str> = phases
        .iter()
        .map(|p| p.coordinates["threads"].as_str())
        .collect();
    threads.dedup();
    assert_eq!(threads, ["1", "8", "16"]);
    assert!(
        phases
            .iter()
            .all(|p| data(p).threads.to_string() == p.coordinates["threads"])
    );
    let one = with("threads=8").unwrap();
    assert!(
        one.iter()
            .filter(|p| p.sweep == "sequential")
            .all(|p| { p.coordinates["threads"] == "8" && data(p).threads == 8 })
    );
    let err = with("queue_depth=[1,2]").unwrap_err();
    assert_eq!(err.option, "--set");
    assert!(
        err.reason.starts_with("`queue_depth` is given a list"),
        "{}",
        err.reason
    );
}

#[test]
fn closest_suggests_only_near_names() {
    let known: Vec<String> = ["block_size", "queue_depth", "threads"]
        .map(String::from)
        .to_vec();
    assert_eq!(closest("blocksize", &known), Some("block_size"));
    assert_eq!(closest("queue_dept", &known), Some("queue_depth"));
    assert_eq!(closest("thread", &known), Some("threads"));
    assert_eq!(closest("verbose", &known), None);
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
}

/// A huge repeat or sweep is refused at once, naming what to lower, instead of planning
/// for minutes.
#[test]
fn repeat_and_phase_count_are_bounded() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let o = |repeat| Overrides {
        repeat: Some(repeat),
        ..Overrides::default()
    };
    let err = s.expand("mini.toml", &o(100_000)).unwrap_err().to_string();
    assert_eq!(
        err,
        "--repeat: 100000 is more than the 1000 repetitions iolab runs of a phase"
    );
    assert_eq!(s.expand("mini.toml", &o(1000)).unwrap().len(), 6 * 1000);
    let wide = format!(
        "name = \"w\"\n[[sweep]]\nname = \"t\"\nover = {{ threads = [{}] }}\n[[sweep.phase]]\nname = \"p\"\nrw = \"read\"\nsize = \"1MiB\"\n",
        (1..=200)
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let s = StudySpec::from_toml(&wide, "w.toml").unwrap();
    let err = s.expand("w.toml", &o(1000)).unwrap_err().to_string();
    assert!(
        err.starts_with("w.toml: expands to more than 100000 phases (sweep 't': 200 points x 1000 repetitions x 1 phases)"),
        "{err}"
    );
}

/// `--set compress_ratio=2` (or a default) reaches the phases that write; the study's
/// reads run as before instead of refusing the study.
#[test]
fn data_reduction_from_set_or_defaults_reaches_only_the_writing_phases() {
    let s = StudySpec::from_toml(NFS_LIKE, "mini.toml").unwrap();
    let o = Overrides {
        scale: Some(0.001),
        set: vec![
            Overrides::parse_set("compress_ratio=2").unwrap(),
            Overrides::parse_set("dedupe-ratio=1.5").unwrap(),
        ],
        repeat: Some(1),
        user_swept: Vec::new(),
    };
    let phases = s.expand("mini.toml", &o).unwrap();
    let (writes, reads): (Vec<_>, Vec<_>) = phases.iter().partition(|p| data(p).rw.writes());
    assert_eq!((writes.len(), reads.len()), (3, 3));
    assert!(
        writes
            .iter()
            .all(|p| data(p).compress_ratio == Some(2.0) && data(p).dedupe_ratio == Some(1.5))
    );
    assert!(
        reads
            .iter()
            .all(|p| data(p).compress_ratio.is_none() && data(p).dedupe_ratio.is_none())
    );
    // In [defaults] too.
    let text = NFS_LIKE.replace("[defaults]\n", "[defaults]\ncompress_ratio = 3\n");
    let phases = StudySpec::from_toml(&text, "mini.toml")
        .unwrap()
        .expand("mini.toml", &Overrides::default())
        .unwrap();
    assert_eq!(data(&phases[0]).compress_ratio, Some(3.0));
    assert_eq!(data(&phases[1]).compress_ratio, None, "{}", phases[1].name);
    // On a read phase itself: refused, as on the command line.
    let text = NFS_LIKE.replace("rw = \"read\"\n", "rw = \"read\"\ncompress_ratio = 2\n");
    let err = StudySpec::from_toml(&text, "mini.toml")
        .unwrap()
        .expand("mini.toml", &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("compress"), "{err}");
}

#[test]
fn a_study_holds_s3_phases_swept_and_scaled() {
    let text = r#"
name = "objects"
[defaults]
bucket = "bench"
[[sweep]]
name = "sizes"
over = { object_size = ["4KiB", "1MiB"], concurrency = [2, 8] }
mode = "zip"
[[sweep.phase]]
name = "s3"
kind = "s3"
ops = "put,get,delete"
objects = 1000
"#;
    let s = StudySpec::from_toml(text, "o.toml").unwrap();
    let o = Overrides {
        scale: Some(0.1),
        ..Overrides::default()
    };
    let phases = s.expand("o.toml", &o).unwrap();
    assert_eq!(phases.len(), 2);
    let PhaseSpec::S3(p) = &phases[1].spec else {
        panic!("not an S3 phase: {:?}", phases[1].spec)
    };
    assert_eq!(p.bucket, "bench");
    assert_eq!(p.object_size, ByteCount::mib(1));
    assert_eq!(p.concurrency, 8);
    assert_eq!(p.objects, 100, "--scale shrinks the object count");
    assert_eq!(
        p.ops,
        [
            crate::spec::S3Op::Put,
            crate::spec::S3Op::Get,
            crate::spec::S3Op::Delete
        ]
    );
    assert_eq!(phases[1].spec.kind(), "s3");
    // An option of another kind on an S3 phase is named.
    let bad = text.replace("objects = 1000", "objects = 1000\nrw = \"read\"");
    let e = StudySpec::from_toml(&bad, "o.toml")
        .unwrap()
        .expand("o.toml", &Overrides::default())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("`rw` is not an option of a s3 phase"),
        "{e}"
    );
}
