//! NFS in user space: NFS-Ganesha from scripts/nfs.sh (VFS FSAL, NFSv3 and v4 on
//! 127.0.0.1), reached through libnfs with `--backend nfs --nfs-url`. Data written and
//! verified over NFSv3 at QD 1 and 16, read over NFSv4, the bytes checked in the exported
//! directory; `iolab meta`'s files created, read and removed over NFSv3; the work
//! directory made and removed over NFS; bad input (no libnfs, no
//! server, no such export, a read-only export, a write over v4) one line, exit 2, nothing
//! written; `failover` restarts the server after the gap it was given; `down` leaves no
//! process or file.

use std::path::Path;

use super::Cluster;
use crate::common::{Ran, iolab, peer_on_path};

/// ganesha.nfsd and rpcinfo; fails under IOLAB_TEST_SUITE=1 when missing, as every peer.
pub(super) fn tools() -> bool {
    peer_on_path("ganesha.nfsd", "-v") && peer_on_path("rpcinfo", "-p")
}

fn nfs(args: &[&str]) -> Ran {
    Ran::from(iolab().args(args).output().expect("iolab runs"))
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    n.sort();
    n
}

pub(super) fn ports(c: &Cluster) -> Vec<u16> {
    ["NFS_PORT", "NFS_MOUNT_PORT"]
        .iter()
        .map(|k| c.var(k).parse().unwrap())
        .collect()
}

/// Written over NFSv3 with --verify (64 x 64 KiB), kept: the file in the exported
/// directory holds the 4 MiB; read over NFSv4 (64 I/Os) and at QD 16 over v3 with every
/// block checked (1,024 I/Os of 4 KiB, libnfs's asynchronous calls); the last run removes
/// the work directory over NFS, leaving the export as it found it.
#[test]
fn data_over_nfs_v3_and_v4_lands_in_the_export_and_goes_again() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let (v3, v4) = (
        c.var("NFS_URL").to_string(),
        c.var("NFS_URL_V4").to_string(),
    );
    let export = Path::new(c.var("NFS_EXPORT")).to_path_buf();
    let common = ["--backend", "nfs", "--size", "4MiB", "--keep"];
    let w = nfs(&[
        &[
            "run",
            "--nfs-url",
            &v3,
            "--rw",
            "write",
            "--block-size",
            "64KiB",
            "--verify",
        ][..],
        &common,
    ]
    .concat())
    .expect(0);
    assert!(w.stdout.contains("4.00 MiB in 64 I/Os"), "{}", w.stdout);
    let file = export.join("iolab-work/data.r0.t0");
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 4 << 20);
    assert_eq!(
        names(&export.join("iolab-work")),
        [".data.r0.t0.iolab", ".iolab-workdir", "data.r0.t0"],
        "the lock goes with the run"
    );
    let r = nfs(&[
        &[
            "run",
            "--nfs-url",
            &v4,
            "--rw",
            "read",
            "--block-size",
            "64KiB",
        ][..],
        &common,
    ]
    .concat())
    .expect(0);
    assert!(r.stdout.contains("4.00 MiB in 64 I/Os"), "{}", r.stdout);
    assert!(r.stdout.contains("QD1, nfs"), "{}", r.stdout);
    let q = nfs(&[
        "run",
        "--backend",
        "nfs",
        "--nfs-url",
        &v3,
        "--rw",
        "randread",
        "--size",
        "4MiB",
        "--block-size",
        "4KiB",
        "--queue-depth",
        "16",
        "--verify",
    ])
    .expect(0);
    assert!(q.stdout.contains("4.00 MiB in 1024 I/Os"), "{}", q.stdout);
    assert!(q.stdout.contains("QD16, nfs"), "{}", q.stdout);
    assert!(
        names(&export).is_empty(),
        "left in the export: {:?}",
        names(&export)
    );
    let p = ports(&c);
    c.down_and_check(&p);
}

/// Each refusal is one line naming the URL (or the library), exit 2, and writes nothing:
/// no libnfs; no server at the port; an export the server does not have; a write phase
/// on the read-only export; a write over NFSv4 (libnfs 4.0 cannot); --backend nfs without
/// a URL and a URL with another backend.
#[test]
fn bad_nfs_input_is_one_line_and_writes_nothing() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let export = Path::new(c.var("NFS_EXPORT")).to_path_buf();
    let ro = Path::new(c.var("NFS_EXPORT_RO")).to_path_buf();
    let v3 = c.var("NFS_URL").to_string();
    let write = |url: &str| {
        vec![
            "run".to_string(),
            "--backend".into(),
            "nfs".into(),
            "--nfs-url".into(),
            url.into(),
            "--rw".into(),
            "write".into(),
            "--size".into(),
            "1MiB".into(),
        ]
    };
    let closed = crate::real::cluster::free_block(1);
    let no_server = format!(
        "nfs://127.0.0.1{}?nfsport={closed}&mountport={closed}",
        export.display()
    );
    let missing = v3.replace("/export?", "/no-such-export?");
    let cases: Vec<(Vec<String>, Option<&str>, String)> = vec![
        (
            write(&no_server),
            None,
            format!("cannot mount {no_server}: "),
        ),
        (write(&missing), None, format!("cannot mount {missing}: ")),
        (
            write(c.var("NFS_URL_RO")),
            None,
            format!(
                "cannot create nfs://127.0.0.1{}/iolab-work: Read-only file system",
                ro.display()
            ),
        ),
        (
            write(c.var("NFS_URL_V4")),
            None,
            format!(
                "--nfs-url {}: libnfs 4.0 cannot write over NFSv4",
                c.var("NFS_URL_V4")
            ),
        ),
        (
            write(&v3),
            Some("libnfs-not-here.so.13"),
            "libnfs-not-here.so.13 not found: apt-get install libnfs13".into(),
        ),
    ];
    for (args, lib, want) in cases {
        let mut cmd = iolab();
        if let Some(l) = lib {
            cmd.env("IOLAB_LIBNFS", l);
        }
        let r = Ran::from(cmd.args(&args).output().unwrap()).expect(2);
        let line = r.error_line();
        assert!(
            line.starts_with(&format!("iolab: error: {want}")),
            "{args:?}: {line}"
        );
    }
    let r = nfs(&["run", "--backend", "nfs", "--rw", "write", "--size", "1MiB"]).expect(2);
    assert!(
        r.error_line()
            .contains("--nfs-url: --backend nfs works on an NFS export"),
        "{}",
        r.stderr
    );
    let r = nfs(&[
        "run",
        "--backend",
        "psync",
        "--nfs-url",
        &v3,
        "--rw",
        "write",
        "--size",
        "1MiB",
    ])
    .expect(2);
    assert!(
        r.error_line()
            .contains("--backend psync cannot reach an NFS export"),
        "{}",
        r.stderr
    );
    assert!(names(&export).is_empty(), "written: {:?}", names(&export));
    assert!(names(&ro).is_empty(), "written: {:?}", names(&ro));
    let p = ports(&c);
    c.down_and_check(&p);
}

/// `scripts/nfs.sh failover --gap GAP` on `c`: the gap it measured, in seconds.
pub(super) fn failover(c: &Cluster, gap: &str) -> f64 {
    let out = std::process::Command::new(super::cluster::script_path("nfs"))
        .args(["failover", "--gap", gap, "--state"])
        .arg(c.state())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find_map(|l| l.strip_prefix("gap "))
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("no gap line: {text}"))
}

/// `failover --gap 1` kills the server and starts another on the same export and ports
/// about a second later (the gap it prints: 1 to 3 s), which serves: a read over NFSv3
/// afterwards works.
#[test]
fn failover_restarts_the_server_after_the_gap() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let before = c.pids();
    let gap = failover(&c, "1");
    assert!((1.0..3.0).contains(&gap), "gap {gap}");
    assert_ne!(c.pids(), before, "a new ganesha.nfsd");
    nfs(&[
        "run",
        "--backend",
        "nfs",
        "--nfs-url",
        c.var("NFS_URL"),
        "--rw",
        "read",
        "--size",
        "1MiB",
    ])
    .expect(0);
    let p = ports(&c);
    c.down_and_check(&p);
}

/// Files of 4 KiB written with iolab meta over NFSv3 by 2 threads are on the export
/// (kept: 100 per thread, each 4,096 bytes); over NFSv4, a second run stats, reads and
/// checks them with --keep (the tree's record is not rewritten: libnfs 4.0 cannot write
/// over v4) and a third removes them, then the tree and the work directory go: the
/// export is empty again. Each thread's connection is its own NFSv4 client (with
/// libnfs's default name the second took the first one's state away). A create over
/// NFSv4 is refused in one line naming the URL, before anything is made.
#[test]
fn metadata_over_nfs_creates_reads_and_removes_on_the_export() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let (v3, v4) = (c.var("NFS_URL"), c.var("NFS_URL_V4"));
    let export = Path::new(c.var("NFS_EXPORT")).to_path_buf();
    let meta_over = |url: &str, threads: &str, ops: &str, keep: bool| {
        let mut a = vec![
            "meta",
            "--backend",
            "nfs",
            "--nfs-url",
            url,
            "-n",
            "100",
            "-t",
            threads,
            "--file-size",
            "4KiB",
            "--ops",
            ops,
        ];
        if keep {
            a.push("--keep");
        }
        nfs(&a)
    };
    let refused = meta_over(v4, "1", "create", false).expect(2);
    assert!(
        refused.error_line().starts_with(&format!(
            "iolab: error: --nfs-url {v4}: libnfs 4.0 cannot write over NFSv4"
        )),
        "{}",
        refused.stderr
    );
    assert!(names(&export).is_empty(), "written: {:?}", names(&export));
    let m = meta_over(v3, "2", "create", true).expect(0);
    assert!(m.stdout.contains("200 ops, 800 KiB"), "{}", m.stdout);
    let mut files = Vec::new();
    let mut dirs = vec![export.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().into_string().unwrap();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if name.starts_with("file.mdtest.") {
                files.push(e.metadata().unwrap().len());
            }
        }
    }
    assert_eq!(files.len(), 200);
    assert!(files.iter().all(|&l| l == 4096), "sizes {files:?}");
    let ops_of = |m: &Ran, ops: &[&str], n: &str| {
        for want in ops {
            let line = m
                .stdout
                .lines()
                .find(|l| l.trim_start().starts_with(want) && l.contains(" ops"))
                .unwrap_or_else(|| panic!("no {want} line: {}", m.stdout));
            assert!(line.contains(n), "{want}: {}", m.stdout);
        }
    };
    let m = meta_over(v4, "2", "stat,read", true).expect(0);
    ops_of(&m, &["stat", "read"], "200 ops");
    // libnfs keeps no cache on the client: no page-cache warning for its reads.
    assert!(!m.stdout.contains("page cache"), "{}", m.stdout);
    let m = meta_over(v4, "2", "remove", false).expect(0);
    ops_of(&m, &["remove"], "200 ops");
    assert!(
        names(&export).is_empty(),
        "left in the export: {:?}",
        names(&export)
    );
    let p = ports(&c);
    c.down_and_check(&p);
}

/// The NFS study's preset (S1: sequential and random sweeps, the mdtest table) runs over
/// the export at --scale 0.00005, every data phase on the nfs backend and the metadata
/// phases on NFS calls (`--set backend=nfs` sets both), and leaves the export empty.
#[test]
fn the_nfs_study_runs_over_nfs() {
    if !tools() {
        return;
    }
    let c = Cluster::up("nfs", &[]);
    let export = Path::new(c.var("NFS_EXPORT")).to_path_buf();
    let r = nfs(&[
        "study",
        "run",
        "nfs",
        "--scale",
        "0.00005",
        "--nfs-url",
        c.var("NFS_URL"),
        "--set",
        "backend=nfs",
    ])
    .expect(0);
    let phases: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next().is_some_and(|n| n.parse::<u32>().is_ok())
                && w.next().is_some_and(|p| {
                    p.starts_with("seq-") || p.starts_with("rand-") || p.starts_with("md-")
                })
        })
        .collect();
    assert_eq!(phases.len(), 46, "{}", r.stdout);
    let data: Vec<&&str> = phases.iter().filter(|l| !l.contains(" md-")).collect();
    assert_eq!(data.len(), 28, "{}", r.stdout);
    assert!(data.iter().all(|l| l.contains("QD1, nfs,")), "{}", r.stdout);
    assert!(
        names(&export).is_empty(),
        "left in the export: {:?}",
        names(&export)
    );
    let p = ports(&c);
    c.down_and_check(&p);
}
