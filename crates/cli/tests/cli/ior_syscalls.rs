//! The system calls `iolab ior` makes on IOR's files, against IOR's POSIX backend's,
//! counted with strace on a small run (where strace is installed; scripts/test.sh
//! installs it). IOR 5fcf0ba (the one IO500 builds), `-a POSIX -F -w -r -R -e`, per
//! transfer: lseek to its offset, then write (or read) of the transfer; one fsync per
//! file at the end of the write (-e). When ior is on PATH the test runs it too and
//! compares. Opens are not compared: iolab creates the file before the phase and
//! reopens it in the worker, untimed; IOR opens it once inside its timing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{iolab, on_path, path, strace_threads};

/// Transfers per task: -b 1m -t 256k -s 2.
const TRANSFERS: u64 = 8;

/// Counts lseek, write, read and fsync on the descriptor of the file `<o>.00000000`,
/// per traced thread.
fn traced(cmd: &mut Command, work: &Path) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    for text in strace_threads(cmd, work, "openat,lseek,read,write,fsync,close") {
        let mut fd: Option<String> = None;
        for line in text.lines() {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some((call, args)) = line.split_once('(') else {
                continue;
            };
            if call == "openat" {
                fd = line
                    .contains("/f.00000000\"")
                    .then(|| line.rsplit_once(" = ").map(|(_, f)| f.to_string()))
                    .flatten();
                continue;
            }
            let on_fd = fd
                .as_deref()
                .is_some_and(|f| args.starts_with(&format!("{f},")) || args == format!("{f}) = 0"));
            let kind = match call {
                "lseek" if on_fd && line.contains("SEEK_SET) = ") => "lseek to a transfer",
                "write" if on_fd && line.ends_with("262144) = 262144") => "write 256 KiB",
                "read" if on_fd && line.ends_with("= 262144") => "read 256 KiB",
                "fsync" if on_fd => "fsync",
                "close" if on_fd => {
                    fd = None;
                    continue;
                }
                _ => continue,
            };
            *counts.entry(kind).or_insert(0) += 1;
        }
    }
    counts
}

const LINE: [&str; 13] = [
    "-a", "POSIX", "-b", "1m", "-t", "256k", "-s", "2", "-F", "-w", "-r", "-R", "-e",
];

#[test]
fn ior_makes_iors_posix_calls() {
    if !on_path("strace", "-V") {
        eprintln!("strace not on PATH: the system-call comparison is skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut c = iolab();
    c.env("IOLAB_DB", dir.path().join("db"))
        .arg("ior")
        .args(LINE)
        .args(["-o", path(&dir.path().join("f"))]);
    let got = traced(&mut c, dir.path());
    let ior: BTreeMap<&str, u64> = [
        ("lseek to a transfer", 2 * TRANSFERS),
        ("write 256 KiB", TRANSFERS),
        ("read 256 KiB", TRANSFERS),
        ("fsync", 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, ior);

    if !on_path("ior", "-h") {
        eprintln!("ior not on PATH: compared with its recorded calls only");
        return;
    }
    let mut run = Command::new("ior");
    run.args(LINE)
        .args(["-o", path(&dir.path().join("peer").join("f"))]);
    std::fs::create_dir(dir.path().join("peer")).unwrap();
    let peer = traced(&mut run, dir.path());
    assert_eq!(got, peer, "iolab ior against IOR");
}
