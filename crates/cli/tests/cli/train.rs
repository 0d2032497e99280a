//! `iolab train` and `iolab checkpoint` at a small scale: the files checked by readers
//! that are not iolab's (numpy's np.load, a TFRecord walk with its own CRC-32C in
//! Python), AU on a run whose wait is known (a FUSE file system that stalls every read),
//! the accelerator search on a throttled target, the checkpoint's bytes per rank, and
//! bad input refused in one line with exit 2.

use std::path::Path;
use std::process::Command;

use crate::common::{FaultFs, error_line, path, run};

/// The Python with numpy that scripts/test.sh installs (IOLAB_TEST_NUMPY); in CI its
/// absence fails the test, elsewhere it skips saying so.
fn numpy_python() -> Option<String> {
    if let Ok(p) = std::env::var("IOLAB_TEST_NUMPY") {
        return Some(p);
    }
    assert!(
        std::env::var("CI").is_err(),
        "IOLAB_TEST_NUMPY is not set: scripts/test.sh installs numpy in a venv and sets it"
    );
    eprintln!("skipped: IOLAB_TEST_NUMPY not set (scripts/test.sh sets it)");
    None
}

fn python(py: &str, script: &str, args: &[&str]) -> String {
    let o = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn npz_files_load_in_numpy_with_dlio_shapes() {
    let Some(py) = numpy_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--files",
        "5",
        "--samples-per-file",
        "3",
        "--record-length",
        "40000",
        "--record-length-stdev",
        "8000",
        "--no-store",
    ])
    .expect(0);
    assert!(r.stdout.contains("5 npz files"), "{}", r.stdout);
    let names: Vec<String> = std::fs::read_dir(data.join("train"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.contains(&"img_0_of_5.npz".to_string()), "{names:?}");
    let out = python(
        &py,
        "import sys, glob, numpy as np\n\
         for f in sorted(glob.glob(sys.argv[1] + '/train/*.npz')):\n\
         \x20   z = np.load(f)\n\
         \x20   x, y = z['x'], z['y']\n\
         \x20   assert x.dtype == np.uint8 and x.shape[2] == 3 and list(y) == [0, 0, 0], (x.shape, y)\n\
         \x20   print(x.shape[0], x.shape[1])\n",
        &[path(&data)],
    );
    let dims: Vec<(u64, u64)> = out
        .lines()
        .map(|l| {
            let mut it = l.split_whitespace().map(|v| v.parse::<u64>().unwrap());
            (it.next().unwrap(), it.next().unwrap())
        })
        .collect();
    assert_eq!(dims.len(), 5);
    // DLIO's dimension is int(sqrt(40000)) = 200, each side drawn with stdev 8000/2/200.
    assert!(
        dims.iter()
            .all(|(a, b)| (150..250).contains(a) && (150..250).contains(b)),
        "{dims:?}"
    );
    assert!(
        dims.iter().any(|d| *d != (200, 200)),
        "the stdev varies the sizes: {dims:?}"
    );
}

/// TFRecord walked and both CRCs of every record checked in Python (its own CRC-32C),
/// and the Example's fields found where TensorFlow puts them.
const TFRECORD_CHECK: &str = r#"
import sys, glob, struct
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def masked(c):
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
n = 0
for f in sorted(glob.glob(sys.argv[1] + '/train/*.tfrecord')):
    b = open(f, 'rb').read()
    at = 0
    while at < len(b):
        ln, = struct.unpack('<Q', b[at:at+8])
        assert struct.unpack('<I', b[at+8:at+12])[0] == masked(crc(b[at:at+8])), 'length crc'
        data = b[at+12:at+12+ln]
        assert struct.unpack('<I', b[at+12+ln:at+16+ln])[0] == masked(crc(data)), 'data crc'
        assert b'\n\x04size' in data[:32] and b'\n\x05image' in data[:48]
        at += 16 + ln
        n += 1
print(n)
"#;

#[test]
fn tfrecord_crcs_check_in_an_independent_reader() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--format",
        "tfrecord",
        "--files",
        "3",
        "--samples-per-file",
        "4",
        "--record-length",
        "2000",
        "--subfolders",
        "2",
        "--no-store",
    ])
    .expect(0);
    assert!(data.join("train/0/img_0_of_3.tfrecord").exists());
    assert!(data.join("train/1/img_1_of_3.tfrecord").exists());
    // Any python3 will do: no numpy needed.
    let py = std::env::var("IOLAB_TEST_NUMPY").unwrap_or_else(|_| "python3".into());
    // The subfolders are flattened for the check.
    let flat = dir.path().join("flat");
    std::fs::create_dir_all(flat.join("train")).unwrap();
    for sub in ["0", "1"] {
        for e in std::fs::read_dir(data.join("train").join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), flat.join("train").join(e.file_name())).unwrap();
        }
    }
    let out = python(&py, TFRECORD_CHECK, &[path(&flat)]);
    assert_eq!(out.trim(), "12");
    // And iolab reads the dataset back with its subfolders.
    let json = dir.path().join("run.json");
    run(&[
        "train",
        "run",
        "--data-dir",
        path(&data),
        "--format",
        "tfrecord",
        "--files",
        "3",
        "--samples-per-file",
        "4",
        "--record-length",
        "2000",
        "--batch-size",
        "2",
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(0);
    let v = json_of(&json);
    assert_eq!(v["phases"][0]["extra"]["steps"].as_f64().unwrap(), 6.0);
    // Every byte of the three files was read once.
    let bytes: u64 = [
        "0/img_0_of_3.tfrecord",
        "1/img_1_of_3.tfrecord",
        "0/img_2_of_3.tfrecord",
    ]
    .iter()
    .map(|f| std::fs::metadata(data.join("train").join(f)).unwrap().len())
    .sum();
    assert_eq!(v["phases"][0]["ops"][0]["bytes"].as_u64().unwrap(), bytes);
}

fn json_of(file: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[test]
fn au_is_compute_over_time_when_every_read_waits() {
    // Each read stalls 100 ms; each step computes 50 ms on one sample: with one reader
    // that prefetches one batch, a step takes 100 ms, so AU is 50 % (the first step,
    // which waits for two reads' worth, is left out as DLIO leaves it out).
    let Some(fs) = FaultFs::mount(&["read:stall=100ms"]) else {
        return;
    };
    let data = format!("{}/data", fs.dir());
    let common = [
        "--data-dir",
        &data,
        "--files",
        "8",
        "--record-length",
        "4096",
    ];
    let mut args = vec!["train", "datagen"];
    args.extend(common);
    args.push("--no-store");
    run(&args).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let json = dir.path().join("run.json");
    let mut args = vec!["train", "run"];
    args.extend(common);
    args.extend([
        "--batch-size",
        "1",
        "--read-threads",
        "1",
        "--prefetch",
        "1",
        "--computation-time",
        "50ms",
        "--summary-json",
        path(&summary),
        "--json",
        path(&json),
        "--no-store",
    ]);
    let r = run(&args).expect(0);
    let s = json_of(&summary);
    let au = s["metric"]["train_au_mean_percentage"].as_f64().unwrap();
    assert!((40.0..60.0).contains(&au), "AU {au}%:\n{}", r.stdout);
    assert_eq!(s["num_accelerators"], 1);
    assert_eq!(s["metric"]["train_au_meet_expectation"], "fail");
    // Samples/s: 8 samples over about 0.1 s each.
    let tp = s["metric"]["train_throughput_mean_samples_per_second"]
        .as_f64()
        .unwrap();
    assert!((6.0..11.0).contains(&tp), "{tp} samples/s");
    // The stored epoch carries the same AU, and every read went through the stall.
    let run_json = json_of(&json);
    let phase = &run_json["phases"][0];
    assert_eq!(phase["extra"]["au_percent"].as_f64().unwrap(), au);
    let reads = phase["ops"][0]["ops"].as_u64().unwrap();
    assert_eq!(reads, 8, "one read per 4 KiB file");
    assert!(phase["ops"][0]["latency"]["p50"].as_u64().unwrap() >= 100_000_000);
}

#[test]
fn search_finds_the_most_accelerators_on_a_throttled_target() {
    // Reads stall 50 ms each on a file system that serves two at a time (iolab-faultfs'
    // two FUSE threads): 40 samples/s for everyone, while each accelerator wants 10 (100
    // ms of compute per sample): one keeps up with room to spare (AU near 100 %), eight
    // cannot (at most 50 %).
    let Some(fs) = FaultFs::mount(&["read:stall=50ms"]) else {
        return;
    };
    let data = format!("{}/data", fs.dir());
    let common = [
        "--data-dir",
        &data,
        "--files",
        "64",
        "--record-length",
        "4096",
    ];
    let mut args = vec!["train", "datagen"];
    args.extend(common);
    args.push("--no-store");
    run(&args).expect(0);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let mut args = vec!["train", "search"];
    args.extend(common);
    args.extend([
        "--batch-size",
        "1",
        "--read-threads",
        "1",
        "--computation-time",
        "100ms",
        "--au-threshold",
        "80",
        "--steps",
        "6",
        "--max",
        "8",
        "--json",
        path(&json),
        "--no-store",
    ]);
    let r = run(&args).expect(0);
    assert!(
        r.stdout.contains("most accelerators at AU >= 80%"),
        "{}",
        r.stdout
    );
    let v = json_of(&json);
    let best = v["spec"]["search"]["best"].as_u64();
    let points = v["spec"]["search"]["points"].as_array().unwrap().clone();
    assert!(points.len() >= 3, "{points:?}");
    // One accelerator keeps up; eight cannot (80 samples/s wanted of 40).
    assert!(points[0]["passed"].as_bool().unwrap(), "{points:?}");
    let best = best.expect("one accelerator passed");
    assert!((1..8).contains(&best), "best {best}: {}", r.stdout);
    assert!(points.iter().any(|p| !p["passed"].as_bool().unwrap()));
}

#[test]
fn checkpoint_writes_dlio_s_bytes_per_rank_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let plan = run(&["checkpoint", "--model", "llama3-8b", "--plan"]).expect(0);
    // DLIO's sizes for Llama 3 8B on 8 ranks, ZeRO 3: 2007565312 + 12045637632 per rank.
    assert!(
        plan.stdout
            .contains("zero_pp_rank_7_mp_rank_0_optim_states.pt  12045637632 bytes"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout
            .contains("zero_pp_rank_0_mp_rank_0_model_states.pt  2007565312 bytes")
    );
    let json = dir.path().join("c.json");
    let r = run(&[
        "checkpoint",
        "--model",
        "llama3-405b",
        "--ranks",
        "8",
        "--dp",
        "2",
        "--scale",
        "0.00001",
        "--writes",
        "2",
        "--reads",
        "1",
        "--time-between",
        "0",
        "--dir",
        path(dir.path()),
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(0);
    assert!(r.stdout.contains("subset"), "{}", r.stdout);
    let v = json_of(&json);
    let ranks: Vec<u64> = v["spec"]["rank_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(ranks.len(), 8);
    let per_checkpoint: u64 = ranks.iter().sum();
    let write = &v["phases"][0];
    assert_eq!(write["name"], "checkpoint-write");
    assert_eq!(
        write["ops"][0]["bytes"].as_u64().unwrap(),
        2 * per_checkpoint
    );
    let read = &v["phases"][1];
    assert_eq!(read["ops"][0]["bytes"].as_u64().unwrap(), per_checkpoint);
    // Nothing left behind.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name() != "c.json")
            .count(),
        0
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--files",
        "2",
        "--record-length",
        "1000",
        "--no-store",
    ])
    .expect(0);
    // A dataset smaller than one batch.
    let r = run(&[
        "train",
        "run",
        "--data-dir",
        path(&data),
        "--files",
        "2",
        "--record-length",
        "1000",
        "--batch-size",
        "4",
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("--batch-size") && line.contains("fewer than one batch"),
        "{line}"
    );
    // A batch size of 0.
    let r = run(&[
        "train",
        "run",
        "--data-dir",
        path(&data),
        "--batch-size",
        "0",
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("--batch-size: must be at least 1"));
    // A format it does not write.
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--format",
        "hdf5",
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("--format: iolab does not write or read hdf5"));
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&data),
        "--format",
        "jpeg",
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("jpeg"));
    // A dataset directory iolab did not write is not written into.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("mine.txt"), "keep").unwrap();
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&foreign),
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("did not write"));
    assert_eq!(
        std::fs::read_to_string(foreign.join("mine.txt")).unwrap(),
        "keep"
    );
    // Fewer files than asked for.
    let r = run(&[
        "train",
        "run",
        "--data-dir",
        path(&data),
        "--files",
        "9",
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("fewer than the 9"));
    // A checkpoint larger than the free space, refused before anything is written.
    let r = run(&[
        "checkpoint",
        "--model",
        "llama3-1t",
        "--dir",
        path(dir.path()),
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(line.contains("--writes") && line.contains("free"), "{line}");
    assert!(!dir.path().join("iolab-work").exists());
}

#[test]
fn presets_resolve_to_dlio_s_workloads_and_run_small() {
    // Full scale, as DLIO's workload files give them.
    let p = run(&[
        "train",
        "plan",
        "--preset",
        "unet3d",
        "--accelerator",
        "a100",
        "--data-dir",
        "x",
    ])
    .expect(0);
    assert!(
        p.stdout.contains("unet3d_a100") && p.stdout.contains("168 npz files"),
        "{}",
        p.stdout
    );
    assert!(p.stdout.contains("0.6360 s per step") && p.stdout.contains("AU threshold    90%"));
    let p = run(&["train", "plan", "--preset", "resnet50", "--data-dir", "x"]).expect(0);
    assert!(
        p.stdout.contains("1024 tfrecord files x 1251 samples") && p.stdout.contains("0.2240 s"),
        "{}",
        p.stdout
    );
    let p = run(&[
        "train",
        "plan",
        "--preset",
        "cosmoflow",
        "--scale",
        "0.001",
        "--data-dir",
        "x",
    ])
    .expect(0);
    assert!(
        p.stdout.contains("524 tfrecord files") && p.stdout.contains("AU threshold    70%"),
        "{}",
        p.stdout
    );
    // Each at a small scale, its samples shrunk and its compute shortened.
    let dir = tempfile::tempdir().unwrap();
    for (preset, scale) in [
        ("unet3d", "0.05"),
        ("resnet50", "0.004"),
        ("cosmoflow", "0.00002"),
    ] {
        let data = dir.path().join(preset);
        let small = [
            "--preset",
            preset,
            "--scale",
            scale,
            "--data-dir",
            path(&data),
            "--record-length",
            "20000",
            "--record-length-stdev",
            "1000",
            "--samples-per-file",
            "8",
            "--batch-size",
            "2",
            "--computation-time",
            "2ms",
            "--epochs",
            "2",
            "--no-store",
        ];
        let mut args = vec!["train", "datagen"];
        args.extend(small);
        run(&args).expect(0);
        let json = dir.path().join(format!("{preset}.json"));
        let mut args = vec!["train", "run", "--json", path(&json)];
        args.extend(small);
        run(&args).expect(0);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(
            v["phases"].as_array().unwrap().len(),
            2,
            "{preset}: two epochs"
        );
        assert!(
            v["phases"][1]["extra"]["au_percent"].as_f64().unwrap() > 0.0,
            "{preset}"
        );
    }
    // The checkpoint presets, each as an 8-rank subset at a millionth of its size.
    for (model, extra) in [
        ("llama3-8b", vec![]),
        ("llama3-70b", vec!["--dp", "8"]),
        ("llama3-405b", vec!["--dp", "2"]),
        ("llama3-1t", vec!["--dp", "2"]),
    ] {
        let mut args = vec![
            "checkpoint",
            "--model",
            model,
            "--ranks",
            "8",
            "--scale",
            "0.000001",
            "--writes",
            "1",
            "--reads",
            "1",
            "--time-between",
            "0",
            "--dir",
            path(dir.path()),
            "--no-store",
        ];
        args.extend(extra);
        let r = run(&args).expect(0);
        assert!(r.stdout.contains("read mean"), "{model}: {}", r.stdout);
    }
}
