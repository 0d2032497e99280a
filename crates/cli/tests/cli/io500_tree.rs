//! `iolab io500` leaves the directory tree io500 leaves: the same directories, file names
//! and sizes before the delete phases, compared with a listing recorded from a real io500
//! run (crates/compat/tests/fixtures/io500/tree-isc26-np2).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::path;
use crate::mpi::{mpirun, mpirun_available};

/// `d PATH` and `f SIZE PATH` for everything under `root`, bytewise sorted, leaving out
/// iolab's own bookkeeping (names starting with a dot: sidecars, marker, lock) and the
/// timestamp file find compares with (IO500 keeps it in its result directory).
fn listing(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || (dir == root && name == "io500-timestamp") {
                continue;
            }
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                out.push((rel.clone(), format!("d {rel}")));
                walk(root, &e.path(), out);
            } else {
                out.push((rel.clone(), format!("f {} {rel}", meta.len())));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out.into_iter().map(|(_, line)| line).collect()
}

#[test]
fn iolab_io500_leaves_io500s_tree() {
    if !mpirun_available() {
        return;
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat/tests/fixtures/io500/tree-isc26-np2/listing.txt");
    let expected: Vec<String> = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let pause = dir.path().join("pause");
    std::fs::create_dir(&pause).unwrap();
    let pause_file = pause.join("mdtest-easy-delete");
    std::fs::write(&pause_file, b"").unwrap();
    let stdout = std::fs::File::create(dir.path().join("stdout")).unwrap();
    let mut c = mpirun(2);
    c.env("IOLAB_DB", dir.path().join("db"));
    c.args(["io500", "--dir", path(&data), "--stonewall", "2s"]);
    c.args(["--ior-easy-transfer", "1MiB", "--ior-easy-block", "4MiB"]);
    c.args(["--ior-hard-segments", "20", "--files-per-rank", "20"]);
    c.args(["--pause-dir", path(&pause)]);
    c.args(["--result-dir", path(&dir.path().join("res"))]);
    let mut child = c
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun starts");
    // Read stderr on a thread; the pause line says the tree is ready to look at.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("paused before mdtest-easy-delete") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let paused = rx.recv_timeout(Duration::from_secs(120));
    let tree = listing(&data.join("iolab-work"));
    std::fs::remove_file(&pause_file).unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("iolab io500 did not end after the pause");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = reader.join().unwrap();
    assert!(paused.is_ok(), "never paused:\n{err}");
    // 1: valid run, but not for submission (a 2 s stonewall).
    assert_eq!(status.code(), Some(1), "{err}");
    let missing: Vec<&String> = expected.iter().filter(|l| !tree.contains(l)).collect();
    let extra: Vec<&String> = tree.iter().filter(|l| !expected.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nextra: {extra:#?}"
    );
    assert_eq!(tree, expected);
    // Everything iolab wrote is gone at the end, the directories IOR's names made too.
    assert!(!data.join("iolab-work").exists(), "{:?}", listing(&data));
}
