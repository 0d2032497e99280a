//! `iolab ior`: IOR command lines run on iolab's engine, printed in IOR's layout, stored.

use std::fs;
use std::path::Path;

use crate::common::{Ran, error_line, iolab, path};

fn ior(db: &Path, args: &[&str]) -> Ran {
    Ran::from(
        iolab()
            .env("IOLAB_DB", db)
            .arg("ior")
            .args(args)
            .output()
            .unwrap(),
    )
}

/// The "Summary of all tests:" row of `access`, split on whitespace.
fn summary_row<'a>(out: &'a str, access: &str) -> Vec<&'a str> {
    let start = out.find("Summary of all tests:").expect("a summary");
    out[start..]
        .lines()
        .find(|l| l.starts_with(access))
        .unwrap_or_else(|| panic!("no {access} row in\n{out}"))
        .split_whitespace()
        .collect()
}

/// A file-per-process IOR line with fsync, two repetitions: four result rows in IOR's
/// columns, the summary's header exactly IOR's, every byte counted (4 segments of 1 MiB),
/// the files removed after each repetition (no -k), the run stored with its 4 phases.
#[test]
fn an_ior_line_runs_prints_iors_tables_and_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("f");
    let r = ior(
        &db,
        &[
            "-a",
            "POSIX",
            "-b",
            "1m",
            "-t",
            "256k",
            "-s",
            "4",
            "-F",
            "-w",
            "-r",
            "-e",
            "-i",
            "2",
            "-o",
            path(&file),
        ],
    )
    .expect(0);
    assert!(r.stdout.starts_with("IOR-iolab-"), "{}", r.stdout);
    assert!(
        r.stdout.contains("\nblocksize           : 1 MiB\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("\naggregate filesize  : 4 MiB\n"),
        "{}",
        r.stdout
    );
    let rows: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("write ") || l.starts_with("read "))
        .take(4)
        .collect();
    assert_eq!(rows.len(), 4, "{}", r.stdout);
    for (i, row) in rows.iter().enumerate() {
        let f: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(f.len(), 11, "{row}");
        assert_eq!((f[4], f[5]), ("1024.00", "256.00"), "{row}");
        assert_eq!(f[10], (i / 2).to_string(), "{row}");
    }
    assert!(r.stdout.contains(
        "\nOperation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum\n"
    ));
    for access in ["write", "read"] {
        let f = summary_row(&r.stdout, access);
        assert_eq!(f.len(), 27, "{f:?}");
        // #Tasks 1, reps 2, fPP 1, segcnt 4, blksiz, xsize, aggs(MiB) 4.0, API.
        assert_eq!(
            (f[13], f[15], f[16], f[22], f[23], f[24], f[25]),
            ("1", "2", "1", "1048576", "262144", "4.0", "POSIX")
        );
        assert_eq!(f[21], "4");
        // Max >= Mean >= Min.
        let n = |i: usize| f[i].parse::<f64>().unwrap();
        assert!(n(1) >= n(3) && n(3) >= n(2), "{f:?}");
    }
    assert!(
        r.stdout
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("Finished            : ")
    );
    // No -k: nothing of the data left behind.
    let left = fs::read_dir(dir.path().join("iolab-work"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name() == "file")
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0);
    let shown = Ran::from(
        iolab()
            .env("IOLAB_DB", &db)
            .args(["results", "show", "r1", "--format", "json"])
            .output()
            .unwrap(),
    )
    .expect(0);
    let j: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(j["kind"], "ior");
    let phases = j["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4);
    for p in phases {
        assert_eq!(p["ops"][0]["bytes"], 4 << 20, "{p}");
    }
    // The original command line, word for word, in the provenance.
    let argv: Vec<&str> = j["provenance"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(&argv[1..5], ["ior", "-a", "POSIX", "-b"]);
}

/// IO500's ior-hard write line (at a small scale) runs unchanged: a shared file of
/// 47008-byte transfers, strided, stonewalled with wear-out, its status file written with
/// the transfers each task reached, its files kept (-k).
#[test]
fn io500s_ior_hard_write_line_runs_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    fs::create_dir(dir.path().join("ior-hard")).unwrap();
    let status = dir.path().join("ior-hard.stonewall");
    let file = dir.path().join("ior-hard/file");
    let status_opt = format!("stoneWallingStatusFile={}", path(&status));
    let csv = dir.path().join("ior-hard-write.csv");
    let csv_opt = format!("saveRankPerformanceDetailsCSV={}", path(&csv));
    let r = ior(
        &db,
        &[
            "-O",
            &csv_opt,
            "-C",
            "-Q",
            "1",
            "-g",
            "-G",
            "27",
            "-k",
            "-e",
            "-o",
            path(&file),
            "-O",
            &status_opt,
            "-t",
            "47008",
            "-b",
            "47008",
            "-s",
            "20",
            "-w",
            "-D",
            "30",
            "-O",
            "stoneWallingWearOut=1",
            "-a",
            "POSIX",
            "--dataPacketType=timestamp",
        ],
    )
    .expect(0);
    let f = summary_row(&r.stdout, "write");
    // Stonewall columns are figures with wear-out; segcnt 20, blksiz = xsize = 47008.
    assert_ne!(f[10], "NA", "{f:?}");
    assert_eq!((f[21], f[22], f[23]), ("20", "47008", "47008"));
    assert_eq!(fs::read_to_string(&status).unwrap(), "20");
    let kept: u64 = fs::read_dir(dir.path().join("ior-hard/iolab-work"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name() == "file")
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(kept, 20 * 47008, "-k keeps the shared file");
    // IOR's per-rank line: access, rank, two times, two rates of the rank's mean bytes.
    let line = fs::read_to_string(&csv).unwrap();
    let f: Vec<&str> = line.trim_end().split(',').collect();
    assert_eq!((f.len(), f[0], f[1]), (6, "write", "0"), "{line}");
    let (t, rate): (f64, f64) = (f[2].parse().unwrap(), f[4].parse().unwrap());
    assert!((rate * t - 20.0 * 47008.0).abs() < 1.0, "{line}");
}

#[test]
fn what_ior_options_iolab_does_not_run_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (args, want) in [
        (vec!["-w", "-J", "4"], "iolab: error: ior -J: "),
        (
            vec!["-a", "MPIIO", "-w"],
            "iolab: error: ior -a: 'MPIIO': only the POSIX API runs on iolab",
        ),
        (
            vec!["-w", "-b", "4m", "-t", "1m", "-s", "2", "-o", "f"],
            "iolab: error: ior -s: 2 segments of -b 4194304 with -t 1048576",
        ),
    ] {
        let r = ior(&db, &args).expect(2);
        assert!(error_line(&r).starts_with(want), "{args:?}: {}", r.stderr);
    }
    assert!(!db.exists(), "nothing ran, nothing stored");
}

/// IOR's data and names: -F files are `<o>.%08d` (in iolab's work directory) holding
/// IOR's timestamp words for -G; a later `-r -R` checks every word and a changed byte
/// fails it, naming the offset.
#[test]
fn iors_timestamp_data_is_written_named_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let o = dir.path().join("f");
    let base = [
        "-a", "POSIX", "-b", "1m", "-t", "256k", "-F", "-k", "-G", "27",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|s| s.to_string())
            .chain(["-o".to_string(), path(&o).to_string()])
            .collect()
    };
    let args = with(&["-w"]);
    ior(&db, &args.iter().map(String::as_str).collect::<Vec<_>>()).expect(0);
    let file = dir.path().join("iolab-work").join("f.00000000");
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes.len(), 1 << 20);
    let word = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap());
    // Rank 0: word i of every transfer is 27 + i; every transfer holds the same words.
    assert_eq!((word(0), word(8), word(256 << 10)), (27, 28, 27));
    assert_eq!(word((256 << 10) - 8), 27 + (256 << 10) / 8 - 1);

    let args = with(&["-r", "-R"]);
    let read: Vec<&str> = args.iter().map(String::as_str).collect();
    ior(&db, &read).expect(0);
    let mut changed = bytes.clone();
    changed[300_000] ^= 0x40;
    std::fs::write(&file, &changed).unwrap();
    let r = ior(&db, &read);
    assert_ne!(r.code, 0, "{}", r.stdout);
    let all = format!("{}{}", r.stdout, r.stderr);
    // 300,000 is byte 37,856 of the transfer at 262,144.
    assert!(
        all.contains("offset 262144")
            && all
                .contains("byte 37856 differs from IOR's timestamp data of rank 0 (signature 27)"),
        "{all}"
    );
}

/// Under mpirun, one IOR task per rank: one table printed (by rank 0), #Tasks 2 and the
/// aggregate of both ranks' files.
#[cfg(feature = "mpi")]
#[test]
fn two_ranks_are_two_ior_tasks() {
    use crate::mpi::{mpirun, mpirun_available, run_limited};
    if !mpirun_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = mpirun(2);
    c.env("IOLAB_DB", dir.path().join("db"));
    c.args([
        "ior", "-a", "POSIX", "-b", "1m", "-t", "256k", "-s", "2", "-F", "-w", "-r", "-C",
    ]);
    c.args(["-o", path(&dir.path().join("f"))]);
    let r = run_limited(c, std::time::Duration::from_secs(120));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.matches("Summary of all tests:").count(), 1);
    let f = summary_row(&r.stdout, "read");
    assert_eq!(
        (f[13], f[14], f[17], f[24]),
        ("2", "2", "1", "4.0"),
        "{f:?}"
    );
}

/// IO500's ior-rnd4K-easy-read line after a stonewalled ior-easy write: `-z -z` draws
/// its 4 KiB transfers over the files as they are (IOR stats them), `-s 10000000` of
/// them or until the stonewall, and writes nothing: the files keep their size. Without
/// the write first, the read is refused, naming the file.
#[test]
fn a_random_read_draws_over_the_files_an_earlier_call_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let easy = dir.path().join("ior-easy");
    fs::create_dir(&easy).unwrap();
    let o = easy.join("ior_file_easy");
    let rnd = |db: &Path| {
        ior(
            db,
            &[
                "--dataPacketType=timestamp",
                "-g",
                "-G",
                "1837302913",
                "-k",
                "-e",
                "-o",
                path(&o),
                "-F",
                "-r",
                "-D",
                "1",
                "-z",
                "-z",
                "-a",
                "POSIX",
                "-t=4096",
                "-b=4096",
                "-s=10000000",
                "-O",
                "stoneWallingWearOut=1",
                "-C",
                "-Q",
                "2",
            ],
        )
    };
    let e = error_line(&rnd(&db).expect(2));
    assert!(
        e.contains("ior_file_easy.00000000 holds no data an earlier iolab ior -w wrote"),
        "{e}"
    );
    ior(
        &db,
        &[
            "--dataPacketType=timestamp",
            "-g",
            "-G",
            "1837302913",
            "-k",
            "-e",
            "-o",
            path(&o),
            "-t",
            "1m",
            "-b",
            "8m",
            "-F",
            "-w",
            "-a",
            "POSIX",
        ],
    )
    .expect(0);
    let written = easy.join("iolab-work/ior_file_easy.00000000");
    assert_eq!(fs::metadata(&written).unwrap().len(), 8 << 20);
    let r = rnd(&db).expect(0);
    let row = summary_row(&r.stdout, "read");
    assert!(row[1].parse::<f64>().unwrap() > 0.0, "{}", r.stdout);
    // The 4 KiB draws stayed inside the 8 MiB file: nothing was laid out.
    assert_eq!(fs::metadata(&written).unwrap().len(), 8 << 20);
}
