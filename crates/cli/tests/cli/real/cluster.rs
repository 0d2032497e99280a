//! `Cluster`: one run of `scripts/<system>.sh up` in a temporary state directory, its env
//! file parsed, and `down` on drop (or explicitly, with the leftovers checked).
//!
//! Sized for a small, busy CI machine: a test first checks that /var/tmp and memory hold
//! what its cluster needs and fails with one line naming the shortfall if not; Ceph's OSD
//! image is 2 GiB (the tests write well under 1 GiB); and one Ceph cluster runs at a time
//! in this process (a lock held from `up` to `down`: two would double 1.5 GiB of daemons
//! and the images, and slow each other's waits), while SeaweedFS (about 100 MiB) runs beside
//! anything.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// Where the clusters' state (and Ceph's OSD images) live.
const STATE_DIR: &str = "/var/tmp";
/// Ceph's OSD image for tests: bluestore stops accepting writes at its full ratio (95 %),
/// and the tests store at most a few hundred MiB, so 2 GiB leaves room without asking a
/// small disk for the script's default 8 GiB.
const CEPH_OSD_SIZE: &str = "2G";

/// One Ceph at a time (see the module's head).
static CEPH: Mutex<()> = Mutex::new(());
/// One NFS-Ganesha at a time: one NFSv3 server per rpcbind, so per machine
/// (scripts/nfs.sh refuses a second).
static NFS: Mutex<()> = Mutex::new(());
/// One zfs-fuse at a time: one per machine (scripts/zfs.sh refuses a second, and waits
/// for the first with --wait when another process's test holds it).
static ZFS: Mutex<()> = Mutex::new(());

/// What `system`'s test cluster needs: bytes free in STATE_DIR, bytes of memory available.
fn needs(system: &str) -> (u64, u64) {
    const MIB: u64 = 1 << 20;
    match system {
        // The OSD image can fill to its size; the mon's store and the logs beside it.
        "ceph" => (2048 * MIB + 512 * MIB, 2048 * MIB),
        // What scripts/seaweedfs.sh asks for; the tests store a few tens of MiB.
        _ => (256 * MIB, 512 * MIB),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// (total bytes, bytes free to an unprivileged writer) of the file system `p` is on
/// (statvfs: f_blocks and f_bavail times f_frsize).
pub fn space(p: &Path) -> (u64, u64) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a zeroed statvfs the call fills.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    assert_eq!(
        rc,
        0,
        "statvfs {}: {}",
        p.display(),
        std::io::Error::last_os_error()
    );
    (
        st.f_blocks as u64 * st.f_frsize as u64,
        st.f_bavail as u64 * st.f_frsize as u64,
    )
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib << 10)
        .expect("MemAvailable in /proc/meminfo")
}

/// Panics with one line when the machine has less disk (in `dir`) or memory than `system`
/// needs.
fn check_room(system: &str, dir: &str) {
    let (disk, mem) = needs(system);
    let free = space(Path::new(dir)).1;
    assert!(
        free >= disk,
        "{system} test cluster needs {} free in {dir}, has {}",
        gib(disk),
        gib(free)
    );
    let avail = mem_available();
    assert!(
        avail >= mem,
        "{system} test cluster needs {} of available memory, has {}",
        gib(mem),
        gib(avail)
    );
}

/// `count` consecutive ports nobody on this machine listens on, below the kernel's
/// ephemeral range (where no outgoing connection takes one meanwhile).
pub fn free_block(count: u16) -> u16 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        ^ std::process::id();
    (0..200u32)
        .map(|i| 20000 + ((seed.wrapping_mul(2_654_435_761).wrapping_add(i * 7919)) % 10000) as u16)
        .find(|&b| (b..b + count).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok()))
        .expect("a block of free ports in 20000-30000")
}

pub struct Cluster {
    script: PathBuf,
    state: PathBuf,
    pub env: BTreeMap<String, String>,
    down: bool,
    _dir: tempfile::TempDir,
    // Dropped after `drop` has taken the cluster down (fields drop after Drop::drop).
    _one_at_a_time: Option<MutexGuard<'static, ()>>,
}

pub fn script_path(system: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(format!("{system}.sh"))
}

/// `KEY=value` lines (values optionally in double or single quotes), comments skipped.
fn parse_env(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let quoted = v.strip_prefix('\'').and_then(|q| q.strip_suffix('\''));
            let v = quoted.unwrap_or_else(|| v.trim_matches('"'));
            (k.to_string(), v.to_string())
        })
        .collect()
}

impl Cluster {
    /// Brings `system` up with `args` added to `up --state DIR --ports auto` (and for
    /// Ceph `--osd-size 2G`). Panics with the script's output when it fails: on CI the
    /// script installs what it needs. Waits for another Ceph of this process to go down
    /// first, then checks the machine has room for it.
    pub fn up(system: &str, args: &[&str]) -> Cluster {
        Cluster::up_in(system, Path::new(STATE_DIR), args)
    }

    /// `up` with the state directory made under `parent` instead of /var/tmp.
    pub fn up_in(system: &str, parent: &Path, args: &[&str]) -> Cluster {
        Cluster::race(system, parent, 1, &[], args)
            .pop()
            .unwrap()
            .unwrap_or_else(|(out, _)| panic!("{system}.sh up failed\n{out}"))
    }

    /// `count` runs of `up` started at the same moment, each with its own state directory
    /// under `parent` and the variables `envs`: a cluster for each that came up, or its
    /// output (stdout and stderr) and what its state directory held when `up` failed (its
    /// names, the marker left out; that state is taken down at once). Under the one-Ceph-at-a-time
    /// lock for Ceph, which these tests expect to start one cluster at most (and the one-zfs-fuse lock for zfs).
    pub fn race(
        system: &str,
        parent: &Path,
        count: usize,
        envs: &[(&str, &Path)],
        args: &[&str],
    ) -> Vec<Result<Cluster, (String, Vec<String>)>> {
        // A test that panicked while holding the lock still took its cluster down (Drop).
        let lock = match system {
            "ceph" => Some(&CEPH),
            "zfs" => Some(&ZFS),
            "nfs" => Some(&NFS),
            _ => None,
        };
        let guard = lock.map(|l| l.lock().unwrap_or_else(|e| e.into_inner()));
        check_room(system, parent.to_str().unwrap());
        let script = script_path(system);
        let started: Vec<(tempfile::TempDir, PathBuf, std::process::Child)> = (0..count)
            .map(|_| {
                let dir = tempfile::Builder::new()
                    .prefix("iolab-real-")
                    .tempdir_in(parent)
                    .unwrap();
                let state = dir.path().join(system);
                let mut cmd = Command::new(&script);
                cmd.arg("up")
                    .arg("--state")
                    .arg(&state)
                    .args(["--ports", "auto"]);
                if system == "ceph" {
                    cmd.args(["--osd-size", CEPH_OSD_SIZE]);
                }
                if system == "nfs" {
                    // One per machine: tests in other processes take turns.
                    cmd.args(["--wait", "300"]);
                }
                let child = cmd
                    .args(args)
                    .envs(envs.iter().copied())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("the script runs");
                (dir, state, child)
            })
            .collect();
        let mut guard = guard;
        started
            .into_iter()
            .map(|(dir, state, child)| {
                let out = child.wait_with_output().expect("the script runs");
                let mut cluster = Cluster {
                    script: script.clone(),
                    state,
                    env: BTreeMap::new(),
                    down: false,
                    _dir: dir,
                    _one_at_a_time: None,
                };
                if out.status.success() {
                    cluster.env = parse_env(&String::from_utf8_lossy(&out.stdout));
                    // The first cluster up holds the lock until it goes down.
                    cluster._one_at_a_time = guard.take();
                    Ok(cluster)
                } else {
                    let mut held: Vec<String> = std::fs::read_dir(&cluster.state)
                        .map(|d| {
                            d.flatten()
                                .filter_map(|e| e.file_name().into_string().ok())
                                .filter(|n| !n.starts_with(".iolab-"))
                                .collect()
                        })
                        .unwrap_or_default();
                    held.sort();
                    drop(cluster);
                    Err((
                        format!(
                            "--- stdout\n{}\n--- stderr\n{}",
                            String::from_utf8_lossy(&out.stdout),
                            String::from_utf8_lossy(&out.stderr)
                        ),
                        held,
                    ))
                }
            })
            .collect()
    }

    /// Two `up`s on the same `--ports BASE` at once (`race` with `args`), their port lock
    /// `lock`: asserts that one came up and the other failed in one line naming the port,
    /// having started nothing, and that the lock is gone; returns the one that came up.
    pub fn race_for_ports(system: &str, lock: &Path, base: u16, args: &[&str]) -> Cluster {
        let base = base.to_string();
        let args: Vec<&str> = args.iter().copied().chain(["--ports", &base]).collect();
        let (mut up, failed): (Vec<_>, Vec<_>) = Cluster::race(
            system,
            Path::new(STATE_DIR),
            2,
            &[("IOLAB_PORTS_LOCK", lock)],
            &args,
        )
        .into_iter()
        .partition(Result::is_ok);
        let failed: Vec<(String, Vec<String>)> =
            failed.into_iter().map(|r| r.err().unwrap()).collect();
        assert_eq!(
            up.len(),
            1,
            "one of two clusters on the same ports came up: {failed:?}"
        );
        let (out, held) = &failed[0];
        assert!(
            out.contains(&format!(
                "{system}.sh: port {base} of --ports {base} (the block {base}-"
            )) && out.contains("is in use on this machine; pass --ports auto or another base"),
            "{out}"
        );
        assert!(
            held.is_empty(),
            "the loser started something: {held:?}\n{out}"
        );
        assert!(!lock.exists(), "the lock is left after up");
        up.pop().unwrap().ok().unwrap()
    }

    pub fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .unwrap_or_else(|| panic!("{key} not in the env file: {:?}", self.env))
    }

    pub fn state(&self) -> &Path {
        &self.state
    }

    /// PIDs the script recorded (every `*.pid` file in the state directory or its `run`).
    pub fn pids(&self) -> Vec<i32> {
        [self.state.clone(), self.state.join("run")]
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|d| d.flatten())
            .filter(|e| e.path().extension().is_some_and(|x| x == "pid"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    }

    fn run_down(&mut self) -> std::process::Output {
        self.down = true;
        Command::new(&self.script)
            .arg("down")
            .arg("--state")
            .arg(&self.state)
            .output()
            .expect("the script runs")
    }

    /// Takes the cluster down and asserts that none of its processes, mounts, ports or
    /// files is left.
    pub fn down_and_check(self, ports: &[u16]) {
        assert!(
            !self.pids().is_empty(),
            "no PID files in {}",
            self.state.display()
        );
        self.down_and_check_all(ports);
    }

    /// `down_and_check` for a system without daemons (btrfs on a loop device).
    pub fn down_and_check_all(mut self, ports: &[u16]) {
        let pids = self.pids();
        let out = self.run_down();
        assert!(
            out.status.success(),
            "down failed\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for pid in pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // A zombie waits for its reaper only; it holds nothing.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            assert!(
                stat.is_empty() || state.starts_with('Z'),
                "pid {pid} still runs after down: {stat}"
            );
        }
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let prefix = self.state.to_str().unwrap();
        assert!(
            !mounts.lines().any(|l| l.contains(prefix)),
            "a mount under {prefix} is left:\n{mounts}"
        );
        for &port in ports {
            assert!(
                TcpStream::connect(("127.0.0.1", port)).is_err(),
                "port {port} still listens after down"
            );
        }
        assert!(!self.state.exists(), "{} is left", self.state.display());
        // SeaweedFS's gRPC unix sockets, which weed puts in /tmp (one per gRPC port).
        let left: Vec<String> = std::fs::read_dir("/tmp")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| {
                n.starts_with("seaweedfs-")
                    && ports
                        .iter()
                        .any(|p| n.ends_with(&format!("-grpc-{p}.sock")))
            })
            .collect();
        assert!(left.is_empty(), "sockets left in /tmp after down: {left:?}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.down {
            let out = self.run_down();
            if !out.status.success() {
                eprintln!("down failed: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
}

#[test]
fn env_lines_parse_with_and_without_quotes() {
    let e = parse_env("# c\nA=1\nB=\"2 3\"\nC=\nD='a?b&c'\n");
    assert_eq!(e["A"], "1");
    assert_eq!(e["B"], "2 3");
    assert_eq!(e["C"], "");
    assert_eq!(e["D"], "a?b&c");
    assert_eq!(e.len(), 4);
}

/// A daemon started with `cmd &` is, for a moment, a copy of the script that has not exec'd
/// it yet (its command line the script's): `alive` with the daemon's name must not call it
/// dead then (a CI run's `ceph.sh up` failed so, "ceph-fuse exited" with ceph-fuse about to
/// start). Here the exec comes 0.3 s late: a PID recorded as `$!` is not yet alive by
/// name, one recorded by `spawned` is; and `spawned` returns at once for a process that
/// is gone.
#[test]
fn a_daemon_is_recorded_once_it_has_execd() {
    let dir = tempfile::tempdir().unwrap();
    let lib = script_path("ceph").parent().unwrap().join("lib/cluster.sh");
    let sh = dir.path().join("t.sh");
    std::fs::write(
        &sh,
        format!(
            r#"me=t; state={d}; . {lib}
( sleep 0.3; exec sleep 30 ) & echo $! > {d}/plain.pid
alive {d}/plain.pid 'sleep 30' && echo plain-alive || echo plain-not-yet
( sleep 0.3; exec sleep 30 ) & spawned $! {d}/spawned.pid 'sleep 30'
alive {d}/spawned.pid 'sleep 30' && echo spawned-alive || echo spawned-not-yet
( exit 0 ) & s=$SECONDS; spawned $! {d}/gone.pid 'sleep 30'
[ $((SECONDS - s)) -lt 5 ] && echo gone-at-once
kill $(cat {d}/plain.pid) $(cat {d}/spawned.pid)
"#,
            d = dir.path().display(),
            lib = lib.display()
        ),
    )
    .unwrap();
    let out = Command::new("bash").arg(&sh).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        ["plain-not-yet", "spawned-alive", "gone-at-once"],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
