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
