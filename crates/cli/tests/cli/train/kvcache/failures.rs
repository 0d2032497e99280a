//! `iolab kvcache` failing as it should: bad input refused in one line, writing
//! nothing; an entry's write failing part way ends the run, leaving no partial entry.

use crate::common::{path, run};

#[test]
fn kvcache_refuses_bad_input_in_one_line_writing_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = path(dir.path());
    let cases: [(&[&str], &str); 7] = [
        (&["--model", "gpt-5"], "gpt-5"),
        (&["--backend", "nbd"], "--backend"),
        (&["--cpu-memory", "100TiB"], "--cpu-memory"),
        (&["--storage-capacity", "1MiB"], "--dir"),
        (&["--option", "4"], "--option"),
        (&["--autoscale", "qos", "--trials", "2"], "--trials"),
        (
            &["--autoscale", "capacity", "--target-saturation", "1.5"],
            "--target-saturation",
        ),
    ];
    for (extra, names) in cases {
        let mut args = vec!["kvcache", "--dir", d, "--duration", "1s", "--no-store"];
        args.extend_from_slice(extra);
        let r = run(&args).expect(2);
        assert!(r.stderr.contains(names), "{extra:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.trim().lines().count(),
            1,
            "{extra:?}: {}",
            r.stderr
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{extra:?}"
        );
    }
}

/// An entry's write failing part way (EIO from iolab-faultfs on its 4th piece) ends the
/// run as failed, naming the file and offset, and leaves no partial `.npy` behind.
#[test]
fn kvcache_a_write_failing_part_way_leaves_no_partial_file() {
    let Some(fs) = crate::common::FaultFs::mount(&["write:eio:after=3:times=1:match=.npy"]) else {
        return;
    };
    let r = run(&[
        "kvcache",
        "--model",
        "tiny-1b",
        "--users",
        "1",
        "--duration",
        "5s",
        "--generation-mode",
        "none",
        "--transfer-size",
        "64KiB",
        "--storage-capacity",
        "2GiB",
        "--dir",
        fs.dir(),
        "--no-store",
    ])
    .expect(1);
    assert!(
        r.stderr
            .contains("write of 65536 bytes at offset 196608 in ")
            && r.stderr.contains(".npy failed: Input/output error (EIO)"),
        "{}",
        r.stderr
    );
    let mut left = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(fs.dir())];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                left.push(p);
            }
        }
    }
    assert!(
        left.iter()
            .all(|p| p.extension().is_none_or(|x| x != "npy")),
        "{left:?}"
    );
}
