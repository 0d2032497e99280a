//! `iolab train run` on each reader backend: psync, io_uring at a queue depth, and null
//! (no storage, the loader's own ceiling) read the same dataset in the same reads and
//! bytes; a backend or queue depth the readers cannot use is refused in one line.

use super::json_of;
use crate::common::{path, run};

#[test]
fn the_readers_read_the_same_bytes_on_psync_uring_and_null() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    // 4 files of 2 samples of ~300 KB: a sample's read is its file's (~600 KB) whole,
    // 3 reads of up to 256 KiB.
    let common = [
        "--data-dir",
        path(&data),
        "--files",
        "4",
        "--samples-per-file",
        "2",
        "--record-length",
        "300000",
        "--no-store",
    ];
    let mut args = vec!["train", "datagen"];
    args.extend(common);
    run(&args).expect(0);
    let dataset: u64 = std::fs::read_dir(data.join("train"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let mut seen = Vec::new();
    for (backend, depth) in [("psync", "1"), ("uring", "4"), ("null", "1")] {
        let json = dir.path().join(format!("{backend}.json"));
        let mut args = vec!["train", "run", "--backend", backend, "--queue-depth", depth];
        args.extend(common);
        args.extend(["--json", path(&json)]);
        let r = run(&args);
        if backend == "uring"
            && r.code != 0
            && r.stderr.contains("io_uring is not available")
            && std::env::var("IOLAB_TEST_SUITE").is_err()
        {
            eprintln!("skipped io_uring: {}", r.stderr.trim());
            continue;
        }
        let r = r.expect(0);
        let v = json_of(&json);
        let phase = &v["phases"][0];
        assert_eq!(phase["spec"]["backend"], backend, "{}", r.stdout);
        let op = &phase["ops"][0];
        let (reads, bytes) = (op["ops"].as_u64().unwrap(), op["bytes"].as_u64().unwrap());
        // The pytorch loader reads a sample's whole file: every file twice.
        assert_eq!(bytes, 2 * dataset, "{backend}");
        assert_eq!(phase["figures"]["samples"], 8, "{backend}");
        seen.push((reads, bytes));
    }
    assert!(seen.len() >= 2);
    assert!(seen.iter().all(|s| *s == seen[0]), "{seen:?}");
    assert_eq!(seen[0].0, 8 * 3, "three reads per ~600 KB file at 256 KiB");
    // What the readers cannot do: one line naming the option, exit 2, nothing run.
    for (bad, says) in [
        (
            ["--queue-depth", "4"],
            "--queue-depth: more than 1 read in flight needs --backend uring",
        ),
        (
            ["--backend", "nbd"],
            "--backend: training reads local files: use psync, uring or null",
        ),
    ] {
        let mut args = vec!["train", "run"];
        args.extend(bad);
        args.extend(common);
        let r = run(&args).expect(2);
        assert!(r.error_line().contains(says), "{}", r.stderr);
    }
}

#[test]
fn a_run_whose_reader_threads_share_one_cpu_says_so() {
    // mpirun binds a rank to one core when it starts two or fewer: the loader's threads
    // then share it, which halved the loader cost DLIO's unbound ranks were held to.
    if !crate::common::on_path("taskset", "--version") {
        eprintln!("skipped: no taskset to run iolab on one CPU");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let common = [
        "--data-dir",
        path(&data),
        "--files",
        "4",
        "--record-length",
        "4096",
        "--read-threads",
        "2",
        "--no-store",
    ];
    let mut args = vec!["train", "datagen"];
    args.extend(common);
    run(&args).expect(0);
    let mut args = vec!["train", "run"];
    args.extend(common);
    let says = "this rank's 2 reader threads shared 1 CPU (its affinity mask): mpirun binds each rank to a core unless --bind-to none";
    // One CPU of this process's own mask.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap();
    let first = allowed.trim().split([',', '-']).next().unwrap();
    let mut one = std::process::Command::new("taskset");
    one.args(["-c", first, env!("CARGO_BIN_EXE_iolab")])
        .args(&args)
        .env("IOLAB_DB", crate::common::test_db());
    let r = crate::common::Ran::from(one.output().unwrap()).expect(0);
    assert!(r.stdout.contains(says), "{}", r.stdout);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let r = run(&args).expect(0);
    assert_eq!(r.stdout.contains(says), cpus == 1, "{}", r.stdout);
}
