//! MLPerf Storage v3.0's workloads: the presets on b200/mi355 (closed) and the whatif
//! ones, retinanet's ".jpeg" files as DLIO writes them, and v3.0's bad input refused in
//! one line with exit 2, nothing written.

use crate::common::{error_line, path, run};

fn plan(args: &[&str]) -> String {
    let mut a = vec!["train", "plan", "--data-dir", "x"];
    a.extend(args);
    run(&a).expect(0).stdout
}

#[test]
fn v3_presets_resolve_to_their_configs_with_their_category() {
    let p = plan(&["--preset", "retinanet", "--accelerator", "b200"]);
    assert!(
        p.contains("retinanet_b200") && p.contains("v3.0 closed"),
        "{p}"
    );
    assert!(
        p.contains("1170301 jpeg files x 1 samples of 322957 bytes"),
        "{p}"
    );
    assert!(p.contains("batch 24, 8 reader threads") && p.contains("0.0476 s per step"));
    assert!(
        p.contains("8 epochs") && p.contains("AU threshold    85%"),
        "{p}"
    );
    let p = plan(&["--preset", "retinanet", "--accelerator", "mi355"]);
    assert!(
        p.contains("batch 32") && p.contains("0.0634 s per step"),
        "{p}"
    );
    let p = plan(&["--preset", "unet3d", "--accelerator", "b200"]);
    assert!(
        p.contains("7200 npz files") && p.contains("0.1620 s"),
        "{p}"
    );
    // h100 is whatif at v3.0, and says so.
    let p = plan(&["--preset", "unet3d"]);
    assert!(
        p.contains("unet3d_h100") && p.contains("v3.0 whatif"),
        "{p}"
    );
    let p = plan(&["--preset", "dlrm", "--accelerator", "b200"]);
    assert!(
        p.contains("dlrm_b200")
            && p.contains("v3.0 whatif")
            && p.contains("1024 parquet files x 4718592 samples of 761 bytes"),
        "{p}"
    );
    assert!(
        p.contains("200 columns, 761 bytes a row, row groups of 6144 rows")
            && p.contains("every row group whole, on every rank"),
        "{p}"
    );
    assert!(
        p.contains("batch 16384") && p.contains("AU threshold    70%"),
        "{p}"
    );
    let p = plan(&[
        "--preset",
        "dlrm",
        "--accelerator",
        "mi355",
        "--columns",
        "config",
    ]);
    assert!(
        p.contains("0.0006 s") && p.contains("reads 40 columns"),
        "{p}"
    );
    let p = plan(&["--preset", "flux", "--accelerator", "mi355"]);
    assert!(
        p.contains("4296 parquet files x 288 samples of 2164832 bytes")
            && p.contains("5 columns")
            && p.contains("row groups of 1024 rows")
            && p.contains("batch 72")
            && p.contains("2.0250 s"),
        "{p}"
    );
}

/// Runs `args`, wants exit 2 and one line naming `want`, and nothing under `dir`.
fn refused(dir: &std::path::Path, args: &[&str], want: &str) {
    let data = dir.join("data");
    let mut a = vec!["train", "datagen", "--data-dir", path(&data), "--no-store"];
    a.extend(args);
    let r = run(&a).expect(2);
    let line = error_line(&r);
    assert!(line.contains(want), "{line}");
    assert!(!data.exists(), "{line}: nothing written");
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
}

#[test]
fn v3_bad_input_is_one_line_exit_2_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    refused(
        dir.path(),
        &[
            "--preset",
            "retinanet",
            "--accelerator",
            "h100",
            "--mode",
            "closed",
        ],
        "--accelerator: h100 is a v2.0 accelerator: MLPerf Storage v3.0 runs it only as whatif; a closed run takes b200 or mi355",
    );
    refused(
        dir.path(),
        &[
            "--preset",
            "dlrm",
            "--accelerator",
            "b200",
            "--mode",
            "open",
        ],
        "--mode: open: MLPerf Storage v3.0 runs dlrm only as whatif",
    );
    refused(
        dir.path(),
        &[
            "--preset",
            "dlrm",
            "--accelerator",
            "b200",
            "--columns",
            "feature_011,feature_300",
        ],
        "--columns: feature_300 is not a column of the workload's 200 (feature_000 .. feature_199)",
    );
    refused(
        dir.path(),
        &["--preset", "unet3d", "--accelerator", "mi355"],
        "--accelerator: MLPerf Storage has no unet3d_mi355 workload file (it has b200, h100, a100)",
    );
    refused(
        dir.path(),
        &["--files", "2", "--mode", "whatif"],
        "--mode: needs --preset",
    );
    refused(
        dir.path(),
        &["--files", "2", "--columns", "a"],
        "--columns: is parquet's; this workload reads npz",
    );
}

#[test]
fn retinanet_files_are_raw_bytes_of_dim_squared_as_dlio_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("r");
    let args = [
        "--preset",
        "retinanet",
        "--accelerator",
        "b200",
        "--files",
        "12",
        "--data-dir",
        path(&data),
        "--batch-size",
        "2",
        "--computation-time",
        "1ms",
        "--epochs",
        "1",
        "--no-store",
    ];
    let mut a = vec!["train", "datagen"];
    a.extend(args);
    run(&a).expect(0);
    // int(sqrt(322957)) = 568; stdev 0: every file 568 x 568 bytes, DLIO's names.
    let first = std::fs::read(data.join("train/img_00_of_12.jpeg")).unwrap();
    assert_eq!(first.len(), 322_624);
    let other = std::fs::read(data.join("train/img_11_of_12.jpeg")).unwrap();
    assert_eq!(other.len(), 322_624);
    assert_ne!(first, other);
    assert_ne!(&first[..2], &[0xff, 0xd8], "no JPEG bitstream, as DLIO's");
    // Random bytes: every byte value about as frequent (a 2x margin).
    let mut count = [0u32; 256];
    for b in &first {
        count[*b as usize] += 1;
    }
    let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
    assert!(*lo > 600 && *hi < 1900, "{lo} {hi}");
    let json = dir.path().join("run.json");
    let summary = dir.path().join("summary.json");
    let mut a = vec![
        "train",
        "run",
        "--json",
        path(&json),
        "--summary-json",
        path(&summary),
    ];
    a.extend(args);
    let r = run(&a).expect(0);
    // v3.0's provenance block, in summary.json and in the stored run's annotations.
    let s = super::json_of(&summary);
    let p = &s["provenance"];
    assert_eq!(p["rules_edition"], "3.0");
    assert_eq!(p["mode"], "closed");
    assert_eq!(p["tool"]["name"], "iolab");
    assert_eq!(p["config"]["hash"].as_str().unwrap().len(), 16);
    assert!(p["system"]["hosts_memory_bytes"].as_u64().unwrap() > 0);
    assert!(
        r.stdout.contains("retinanet_b200 · v3.0 closed"),
        "{}",
        r.stdout
    );
    let v = super::json_of(&json);
    // An epoch reads every file whole once.
    assert_eq!(v["phases"][0]["ops"][0]["bytes"], 12 * 322_624);
}

#[test]
fn parquet_files_have_the_config_s_row_groups_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("dlrm");
    let mut a = vec!["train", "datagen", "--data-dir", path(&data), "--no-store"];
    a.extend([
        "--preset",
        "dlrm",
        "--accelerator",
        "b200",
        "--files",
        "2",
        "--samples-per-file",
        "7000",
    ]);
    run(&a).expect(0);
    let f = std::fs::read(data.join("train/img_0_of_2.parquet")).unwrap();
    assert_eq!((&f[..4], &f[f.len() - 4..]), (&b"PAR1"[..], &b"PAR1"[..]));
    // Paged as pyarrow 23 pages DLIO's generator's random columns (a dictionary page,
    // then the indices): pyarrow wrote 7,136,604 and 7,137,056 bytes of row groups for
    // these 7,000 rows in two tries (its float16 dictionaries are random in size).
    let footer = u32::from_le_bytes(f[f.len() - 8..f.len() - 4].try_into().unwrap()) as usize;
    let data_bytes = f.len() - 8 - footer - 4;
    assert!((7_134_000..7_140_000).contains(&data_bytes), "{data_bytes}");
    // The footer names every column; two row groups (6144 + 856 rows).
    let meta = &f[f.len() - 8 - footer..f.len() - 8];
    let text = String::from_utf8_lossy(meta);
    assert!(text.contains("feature_000") && text.contains("feature_199"));
    assert_eq!(
        text.matches("feature_011").count(),
        1 + 2,
        "schema + 2 row groups"
    );
}

/// Reads and bytes of `train run`'s one epoch on `data` with `extra` options, one reader
/// thread a rank (--exact-read-threads).
fn parquet_epoch(dir: &std::path::Path, data: &std::path::Path, extra: &[&str]) -> (u64, u64) {
    let json = dir.join("run.json");
    let mut a = vec![
        "train",
        "run",
        "--data-dir",
        path(data),
        "--preset",
        "dlrm",
        "--accelerator",
        "b200",
        "--files",
        "2",
        "--samples-per-file",
        "7000",
        "--batch-size",
        "1000",
        "--read-threads",
        "1",
        "--exact-read-threads",
        "--computation-time",
        "1ms",
        "--epochs",
        "1",
        "--json",
        path(&json),
        "--no-store",
    ];
    a.extend(extra);
    let r = run(&a).expect(0);
    assert!(
        r.stdout
            .contains("parquet: every accelerator reads every file"),
        "{}",
        r.stdout
    );
    let v = super::json_of(&json);
    let op = &v["phases"][0]["ops"][0];
    (op["ops"].as_u64().unwrap(), op["bytes"].as_u64().unwrap())
}

#[test]
fn parquet_trains_footer_first_then_whole_row_groups_on_every_accelerator() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("dlrm");
    let mut a = vec!["train", "datagen", "--data-dir", path(&data), "--no-store"];
    a.extend([
        "--preset",
        "dlrm",
        "--accelerator",
        "b200",
        "--files",
        "2",
        "--samples-per-file",
        "7000",
    ]);
    run(&a).expect(0);
    // Each file: its footer read in its last 64 KiB, then its 2 row groups (6144 + 856
    // rows) each in one read from the first chunk to the last (DLIO v3.0's reader).
    let f = std::fs::read(data.join("train/img_0_of_2.parquet")).unwrap();
    let footer = u32::from_le_bytes(f[f.len() - 8..f.len() - 4].try_into().unwrap()) as u64;
    let groups = f.len() as u64 - 8 - footer - 4;
    let whole = 2 * (65_536 + groups);
    assert_eq!(parquet_epoch(dir.path(), &data, &[]), (2 + 4, whole));
    // The null backend reads nothing but plans and counts the same reads.
    assert_eq!(
        parquet_epoch(dir.path(), &data, &["--backend", "null"]),
        (6, whole)
    );
    // --columns: each chosen column chunk on its own, 2 per row group.
    let (reads, bytes) =
        parquet_epoch(dir.path(), &data, &["--columns", "feature_000,feature_001"]);
    assert_eq!(reads, 2 + 2 * 2 * 2);
    assert!(
        bytes > 2 * 65_536 && bytes < 2 * 65_536 + groups / 10,
        "{bytes}"
    );
    // Two accelerators: each reads every file (v3.0 DLIO does not split parquet files
    // across ranks): 7 steps of 1000 rows each take all of the first file.
    let (_, bytes) = parquet_epoch(dir.path(), &data, &["--accelerators", "2"]);
    let first = 2 * 65_536 + groups;
    assert!((2 * first..=2 * whole).contains(&bytes), "{bytes} {first}");
}

#[test]
fn parquet_opens_a_file_for_its_footer_and_once_per_row_group_as_dlio() {
    // v3.0 DLIO's reader opens a file once for its footer (pyarrow: the 64 KiB tail and
    // the longer metadata on one open) and once per row-group read (`_fetch_rg_file`):
    // 2 files of 4 row groups, one reader thread (--exact-read-threads: v3.0 DLIO sizes
    // a 1 to the host's CPUs), one epoch: 10 opens. An EIO on the 11th open of a parquet
    // file never fires; one on the 10th does.
    for (after, rc) in [(10, 0), (9, 1)] {
        let fault = format!("open:eio:after={after}:match=.parquet");
        let Some(fs) = crate::common::FaultFs::mount(&[&fault]) else {
            return;
        };
        let data = format!("{}/d", fs.dir());
        let shape = [
            "--preset",
            "dlrm",
            "--accelerator",
            "b200",
            "--files",
            "2",
            "--samples-per-file",
            "20000",
        ];
        let mut a = vec!["train", "datagen", "--data-dir", &data, "--no-store"];
        a.extend(shape);
        run(&a).expect(0);
        let mut a = vec!["train", "run", "--data-dir", &data, "--no-store"];
        a.extend(shape);
        a.extend(["--read-threads", "1", "--exact-read-threads"]);
        a.extend(["--batch-size", "1024"]);
        a.extend(["--computation-time", "1ms", "--epochs", "1"]);
        let r = run(&a).expect(rc);
        if rc == 1 {
            assert!(r.stderr.contains("Input/output error"), "{}", r.stderr);
        }
    }
}
