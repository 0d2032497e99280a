//! v3.0 DLIO's sizing of a read_threads of 1 (docs/ai.md "Reader threads as v3.0 DLIO
//! sizes them"): a preset run given `--read-threads 1` stores and reports the threads
//! DLIO would use on this host, `--exact-read-threads` stores 1, and a cap DLIO could
//! not read is refused in one line.

use super::json_of;
use crate::common::{Ran, iolab, path, run};

/// The host's online CPUs as /sys/devices/system/cpu/online lists them ("0-3,6").
fn online_cpus() -> u32 {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    list.trim()
        .split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// The runs' shape: retinanet's preset for a B200, 8 files, batches of 2, one epoch.
const SHAPE: [&str; 12] = [
    "--preset",
    "retinanet",
    "--accelerator",
    "b200",
    "--files",
    "8",
    "--batch-size",
    "2",
    "--computation-time",
    "1ms",
    "--epochs",
    "1",
];

/// `train datagen` of [`SHAPE`] in `data`.
fn datagen(data: &str) {
    let mut a = vec!["train", "datagen", "--data-dir", data, "--no-store"];
    a.extend(SHAPE);
    run(&a).expect(0);
}

/// `train run` of [`SHAPE`] on `data` with `extra`, `DLIO_MAX_AUTO_THREADS` set to `cap`
/// (or unset): what it printed and its JSON record.
fn run_with(data: &str, extra: &[&str], cap: Option<&str>) -> (Ran, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let mut c = iolab();
    c.args(["train", "run", "--data-dir", data, "--no-store"])
        .args(SHAPE)
        .args(extra)
        .args(["--json", path(&json)]);
    match cap {
        Some(v) => c.env("DLIO_MAX_AUTO_THREADS", v),
        None => c.env_remove("DLIO_MAX_AUTO_THREADS"),
    };
    let r = Ran::from(c.output().unwrap());
    let v = if r.code == 0 {
        json_of(&json)
    } else {
        serde_json::Value::Null
    };
    (r, v)
}

#[test]
fn a_preset_run_of_one_read_thread_stores_the_threads_dlio_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("r");
    let data = path(&data);
    datagen(data);
    let cpus = online_cpus();
    // (cap, accelerators in the process, --exact-read-threads) -> threads used.
    for (cap, accs, exact) in [
        (Some("3"), 1, false),
        (None, 1, false),
        (Some("3"), 2, false),
        (Some("1"), 1, false),
        (Some("3"), 1, true),
    ] {
        let accs_arg = accs.to_string();
        let mut extra = vec!["--read-threads", "1", "--accelerators", &accs_arg];
        if exact {
            extra.push("--exact-read-threads");
        }
        let (r, v) = run_with(data, &extra, cap);
        let r = r.expect(0);
        let limit = cap.map_or(8, |c| c.parse().unwrap());
        let threads = if exact {
            1
        } else {
            (cpus / accs).max(1).min(limit)
        };
        let what = format!("cap {cap:?}, {accs} accelerators, exact {exact}");
        let workload = &v["spec"]["workload"];
        assert_eq!(workload["read_threads"], threads, "{what}");
        assert_eq!(workload["exact_read_threads"], exact, "{what}");
        assert_eq!(
            v["phases"][0]["params"]["read_threads"],
            threads.to_string(),
            "{what}"
        );
        let sizing = &workload["read_threads_sizing"];
        if exact {
            assert!(sizing.is_null(), "{what}: {sizing}");
        } else {
            assert_eq!(
                *sizing,
                serde_json::json!({
                    "asked": 1, "cpus": cpus, "accelerators_on_host": accs, "cap": limit
                }),
                "{what}"
            );
        }
        // The text says it when the threads are not the asked 1.
        let says = format!(
            "reader threads: 1 asked, {threads} used as v3.0 DLIO sizes a read_threads of 1: {cpus} CPUs / {accs} accelerator"
        );
        assert_eq!(
            r.stdout.contains(&says),
            threads != 1,
            "{what}:\n{}",
            r.stdout
        );
    }
    // A cap DLIO could not read: one line naming the variable, exit 2, nothing run.
    let (r, _) = run_with(data, &["--read-threads", "1"], Some("many"));
    let r = r.expect(2);
    assert!(
        r.error_line()
            .contains("DLIO_MAX_AUTO_THREADS: 'many' is not a whole number"),
        "{}",
        r.stderr
    );
}

/// Under `mpirun -np 2` on one host, DLIO's ranks_per_node is 2: each rank's share of
/// the host's CPUs, and both ranks run it (the job agrees on one host's figures).
#[cfg(feature = "mpi")]
#[test]
fn two_ranks_on_one_host_share_its_cpus() {
    use crate::mpi::{mpirun, mpirun_available, run_limited};
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("r");
    let json = dir.path().join("run.json");
    datagen(path(&data));
    let mut c = mpirun(2);
    c.args(["train", "run", "--read-threads", "1", "--json", path(&json)])
        .args(["--data-dir", path(&data), "--no-store"])
        .args(SHAPE)
        .env_remove("DLIO_MAX_AUTO_THREADS");
    run_limited(c, std::time::Duration::from_secs(120)).expect(0);
    let v = json_of(&json);
    let cpus = online_cpus();
    let workload = &v["spec"]["workload"];
    assert_eq!(workload["read_threads"], (cpus / 2).clamp(1, 8));
    assert_eq!(
        workload["read_threads_sizing"],
        serde_json::json!({"asked": 1, "cpus": cpus, "accelerators_on_host": 2, "cap": 8})
    );
}

/// `train datagen` of 6 npz files into `out`/d (`out` made new) with `extra`,
/// `DLIO_MAX_AUTO_THREADS` set to `cap` (or unset): what it printed, its JSON record and
/// the data directory.
fn datagen_with(
    out: &std::path::Path,
    extra: &[&str],
    cap: Option<&str>,
) -> (Ran, serde_json::Value, std::path::PathBuf) {
    std::fs::create_dir(out).unwrap();
    let (data, json) = (out.join("d"), out.join("gen.json"));
    let mut c = iolab();
    c.args(["train", "datagen", "--data-dir", path(&data), "--no-store"])
        .args(["--files", "6", "--record-length", "4096"])
        .args(["--record-length-stdev", "1024", "--json", path(&json)])
        .args(extra);
    match cap {
        Some(v) => c.env("DLIO_MAX_AUTO_THREADS", v),
        None => c.env_remove("DLIO_MAX_AUTO_THREADS"),
    };
    let r = Ran::from(c.output().unwrap());
    let v = if r.code == 0 {
        json_of(&json)
    } else {
        serde_json::Value::Null
    };
    (r, v, data)
}

/// Every file under `dir`/train, by name, with its bytes.
fn dataset_files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("train"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// v3.0 DLIO sizes a write_threads of 1 as a read_threads of 1 with a cap of 32 when
/// DLIO_MAX_AUTO_THREADS is unset (docs/ai.md "Writer threads"): datagen stores and
/// reports the threads, each accelerator's files taken by at most as many threads, and
/// the files are the same bytes whatever the threads.
#[test]
fn datagen_sizes_a_write_threads_of_one_as_dlio_and_writes_the_same_files() {
    let root = tempfile::tempdir().unwrap();
    let cpus = online_cpus();
    let mut first: Option<Vec<(String, Vec<u8>)>> = None;
    // (cap, accelerators, --write-threads, --exact-write-threads) -> threads used.
    for (n, (cap, accs, asked, exact)) in [
        (Some("3"), 1, None, false),
        (None, 1, Some("1"), false),
        (Some("3"), 2, None, false),
        (Some("1"), 1, None, false),
        (Some("3"), 1, Some("1"), true),
        (None, 1, Some("2"), false),
    ]
    .into_iter()
    .enumerate()
    {
        let accs_arg = accs.to_string();
        let mut extra = vec!["--accelerators", &accs_arg];
        if let Some(n) = asked {
            extra.extend(["--write-threads", n]);
        }
        if exact {
            extra.push("--exact-write-threads");
        }
        let (r, v, data) = datagen_with(&root.path().join(n.to_string()), &extra, cap);
        let r = r.expect(0);
        let limit = cap.map_or(32, |c| c.parse().unwrap());
        let sized = !exact && asked != Some("2");
        let threads = match (exact, asked) {
            (true, _) => 1,
            (_, Some("2")) => 2,
            _ => (cpus / accs).max(1).min(limit),
        };
        let what = format!("cap {cap:?}, {accs} accelerators, asked {asked:?}, exact {exact}");
        let workload = &v["spec"]["workload"];
        assert_eq!(workload["write_threads"], threads, "{what}");
        assert_eq!(workload["exact_write_threads"], exact, "{what}");
        // The reader threads are not datagen's: left as asked.
        assert!(workload["read_threads_sizing"].is_null(), "{what}");
        let phase = &v["phases"][0];
        assert_eq!(
            phase["params"]["write_threads"],
            threads.to_string(),
            "{what}"
        );
        // Each accelerator has 6 / accs files and at most as many threads.
        assert_eq!(phase["workers"], accs * threads.min(6 / accs), "{what}");
        let sizing = &workload["write_threads_sizing"];
        if sized {
            assert_eq!(
                *sizing,
                serde_json::json!({
                    "asked": 1, "cpus": cpus, "accelerators_on_host": accs, "cap": limit
                }),
                "{what}"
            );
        } else {
            assert!(sizing.is_null(), "{what}: {sizing}");
        }
        let says = format!(
            "writer threads: 1 asked, {threads} used as v3.0 DLIO sizes a write_threads of 1: {cpus} CPUs / {accs} accelerator"
        );
        assert_eq!(
            r.stdout.contains(&says),
            sized && threads != 1,
            "{what}:\n{}",
            r.stdout
        );
        // What a file holds depends on its index and the seed, not on who wrote it.
        let files = dataset_files(&data);
        assert_eq!(files.len(), 6, "{what}");
        match &first {
            None => first = Some(files),
            Some(f) => assert!(*f == files, "{what}: other bytes than the first run's"),
        }
    }
    // tfrecord: one writer an accelerator, as DLIO's TFRecord generator loops; its
    // write_threads sized all the same, as DLIO's config sizes it.
    let tf = ["--format", "tfrecord"];
    let (r, v, _) = datagen_with(&root.path().join("tf"), &tf, Some("3"));
    let r = r.expect(0);
    let threads = cpus.min(3);
    assert_eq!(v["spec"]["workload"]["write_threads"], threads);
    assert_eq!(v["phases"][0]["workers"], 1);
    let says = format!(
        "writer threads: 1 per accelerator, 1 in all (v3.0 DLIO's tfrecord generator writes a rank's files in one loop: its write_threads, {threads}, is not used)"
    );
    assert!(r.stdout.contains(&says), "{}", r.stdout);
}

/// Writer threads iolab cannot run, refused in one line with exit 2 before the data
/// directory is made: a cap DLIO could not read (it reads DLIO_MAX_AUTO_THREADS for
/// both of its sizings), a count of 0, and buffers over the host's memory.
#[test]
fn datagen_refuses_writer_threads_it_cannot_run_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (r, _, data) = datagen_with(&root.path().join("a"), &[], Some("many"));
    assert_eq!(
        r.expect(2).error_line(),
        "iolab: error: DLIO_MAX_AUTO_THREADS: 'many' is not a whole number (v3.0 DLIO's cap on the writer threads it sizes a write_threads of 1 to): unset it or give one, e.g. 32"
    );
    assert!(!data.exists());
    // Kept with --exact-write-threads too, as DLIO reads it whatever it sizes.
    let exact = ["--exact-write-threads"];
    let (r, _, data) = datagen_with(&root.path().join("b"), &exact, Some("many"));
    assert!(
        r.expect(2)
            .error_line()
            .contains("'many' is not a whole number")
    );
    assert!(!data.exists());
    let (r, _, data) = datagen_with(&root.path().join("c"), &["--write-threads", "0"], None);
    assert_eq!(
        r.expect(2).error_line(),
        "iolab: error: --write-threads: must be between 1 and 256"
    );
    assert!(!data.exists());
    // 1024 accelerators x 256 threads x 8 MiB: 2 TiB of write buffers.
    let mut c = iolab();
    let data = root.path().join("big");
    c.args(["train", "datagen", "--data-dir", path(&data), "--no-store"])
        .args(["--files", "300000", "--record-length", "4096"])
        .args(["--accelerators", "1024", "--write-threads", "256"]);
    let r = Ran::from(c.output().unwrap()).expect(2);
    assert!(
        r.error_line().starts_with(
            "iolab: error: --write-threads: 262144 writer threads on this host (up to 256 per accelerator) x 8MiB of write buffer need 2.00 TiB"
        ),
        "{}",
        r.stderr
    );
    assert!(!data.exists());
}

/// Under `mpirun -np 2` on one host each rank sizes its writers from its share of the
/// host's CPUs, writes its accelerator's files (DLIO's rank `i mod 2`), and the dataset
/// is the same bytes one process writes.
#[cfg(feature = "mpi")]
#[test]
fn two_ranks_write_a_dataset_with_their_share_of_the_hosts_cpus() {
    use crate::mpi::{mpirun, mpirun_available, run_limited};
    if !mpirun_available() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let (r, _, alone) = datagen_with(&root.path().join("one"), &[], None);
    r.expect(0);
    let out = root.path().join("two");
    std::fs::create_dir(&out).unwrap();
    let (data, json) = (out.join("d"), out.join("gen.json"));
    let mut c = mpirun(2);
    c.args(["train", "datagen", "--data-dir", path(&data), "--no-store"])
        .args(["--files", "6", "--record-length", "4096"])
        .args(["--record-length-stdev", "1024", "--json", path(&json)])
        .env_remove("DLIO_MAX_AUTO_THREADS");
    run_limited(c, std::time::Duration::from_secs(120)).expect(0);
    let v = json_of(&json);
    let cpus = online_cpus();
    let threads = (cpus / 2).clamp(1, 32);
    let workload = &v["spec"]["workload"];
    assert_eq!(workload["write_threads"], threads);
    assert_eq!(
        workload["write_threads_sizing"],
        serde_json::json!({"asked": 1, "cpus": cpus, "accelerators_on_host": 2, "cap": 32})
    );
    assert_eq!(v["phases"][0]["workers"], 2 * threads.min(3));
    assert!(dataset_files(&alone) == dataset_files(&data));
}
