//! Bad input refused in one line with exit 2, and the presets resolving to DLIO's
//! workloads and running small.

use crate::common::{error_line, path, run};

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
    // Prefetched batches a loader could not hold on this host (100 M batches of two
    // 1000-byte samples: 200 GB), refused with the figure before anything is read.
    let json = dir.path().join("never.json");
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
        "2",
        "--prefetch",
        "100000000",
        "--json",
        path(&json),
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("--prefetch")
            && line.contains("1 accelerators x prefetch 100000000 x batch 2")
            && line.contains("a loader holds 186 GiB on this host"),
        "{line}"
    );
    assert!(!json.exists(), "nothing ran, nothing was stored");
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
        "png",
        "--no-store",
    ])
    .expect(2);
    assert!(error_line(&r).contains("png"));
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
    // A dataset larger than the free space (100,000 files of 1 GB: 93,132 GiB), refused
    // before anything is written.
    let big = dir.path().join("big");
    let r = run(&[
        "train",
        "datagen",
        "--data-dir",
        path(&big),
        "--files",
        "100000",
        "--record-length",
        "1000000000",
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("--files: 100000 files need 931") && line.contains("GiB free in"),
        "{line}"
    );
    assert!(!big.exists(), "nothing was written");
    // More checkpoints read back than written (DLIO refuses it too).
    let r = run(&[
        "checkpoint",
        "--model",
        "llama3-8b",
        "--scale",
        "0.000001",
        "--writes",
        "2",
        "--reads",
        "3",
        "--dir",
        path(dir.path()),
        "--no-store",
    ])
    .expect(2);
    let line = error_line(&r);
    assert!(
        line.contains("--reads: 3 checkpoints cannot be read back when --writes writes 2"),
        "{line}"
    );
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
            v["phases"][1]["figures"]["au_percent"].as_f64().unwrap() > 0.0,
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

/// A sample length beyond what a u64 file size holds (`1e30`, 2^64) panicked with an
/// overflow in the loader's memory figure (plan, run) and the npz layout (datagen).
#[test]
fn a_sample_or_file_too_large_for_64_bits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    for sub in ["plan", "datagen", "run"] {
        for (args, expected) in [
            (
                vec!["--record-length", "1e30"],
                "iolab: error: --record-length: must be at least 1 byte and at most 1TiB",
            ),
            (
                vec!["--record-length", "18446744073709551616"],
                "iolab: error: --record-length: must be at least 1 byte and at most 1TiB",
            ),
            (
                vec!["--record-length", "1TiB", "--samples-per-file", "4096"],
                "iolab: error: --samples-per-file: 4096 samples of 1099511627776 bytes make a file larger than 1PiB",
            ),
        ] {
            let mut all = vec!["train", sub, "--data-dir", path(&data)];
            all.extend(&args);
            let r = run(&all).expect(2);
            assert_eq!(error_line(&r), expected, "{all:?}");
        }
    }
    assert!(!data.exists());
}

/// `train datagen --files 18446744073709551615` sized the dataset file by file, for
/// hours, ignoring Ctrl-C.
#[test]
fn a_dataset_of_more_files_than_iolab_lays_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    for sub in ["plan", "datagen"] {
        let r = run(&[
            "train",
            sub,
            "--data-dir",
            path(&data),
            "--files",
            "18446744073709551615",
        ])
        .expect(2);
        assert_eq!(
            error_line(&r),
            "iolab: error: --files: 18446744073709551615 files are more than the 33554432 iolab lays out (DLIO's largest preset has 524288; lower --files or --scale)"
        );
    }
    assert!(!data.exists());
}
