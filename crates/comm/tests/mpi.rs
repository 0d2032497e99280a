//! End-to-end tests of `Mpi` under `mpirun --oversubscribe -np 4`: the `mpi_collectives`
//! example checks every collective's exact results, and with `--panic-rank` or
//! `--abort-rank` shows that one failing rank ends the whole job instead of hanging it;
//! run alone under a foreign launcher's variables, it must refuse to start. The mpirun
//! tests skip loudly when mpirun is not on PATH.
//!
//! Cargo gives integration tests the paths of `[[bin]]` targets only, not examples, so
//! `example_binary` asks cargo itself: `cargo build --example mpi_collectives
//! --message-format=json` with this test's cargo, profile and target directory, and
//! reads the executable's path from cargo's report. That path is always exact and the
//! binary always fresh (a stale file in target/*/examples could pass for a broken one);
//! when `cargo test` has already built the example, this costs a fraction of a second.
#![cfg(feature = "mpi")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

const RANKS: u32 = 4;
/// Far beyond the second or so these jobs take, yet bounds a hang.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The full path of `mpirun` on PATH, or None.
fn mpirun() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("mpirun"))
        .find(|candidate| candidate.is_file())
}

/// Builds the example once per test binary and returns its path.
fn example_binary() -> &'static Path {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BINARY.get_or_init(build_example) {
        Ok(path) => path,
        Err(why) => panic!("could not build the mpi_collectives example: {why}"),
    }
}

fn build_example() -> Result<PathBuf, String> {
    // This test runs as <target-dir>/<profile-dir>/deps/mpi-<hash>.
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} is not in <target>/<profile>/deps", exe.display()))?;
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("{} has no target directory", profile_dir.display()))?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(name) => name,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");

    let output = Command::new(&cargo)
        .args(["build", "--example", "mpi_collectives", "--features", "mpi"])
        .args([
            "--profile",
            profile,
            "--message-format",
            "json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {}: {e}", Path::new(&cargo).display()))?;
    if !output.status.success() {
        return Err(format!("cargo build failed ({})", output.status));
    }
    // One JSON message per line; the example's artifact names its executable.
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == "mpi_collectives")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo reported no executable for mpi_collectives".to_string())
}

/// What an mpirun job did.
struct Job {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// One MPI program at a time: the tests run in parallel threads, 3 x 4 ranks on a small
/// machine would only make each job slower, and Open MPI 4 programs starting at once race
/// to make their session directory (`/tmp/ompi.HOST.UID`): a singleton lost that race
/// once ("mkdir ... File exists", MPI_Init aborted with exit 1).
fn one_job() -> std::sync::MutexGuard<'static, ()> {
    static ONE_JOB: Mutex<()> = Mutex::new(());
    ONE_JOB
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs the example under `mpirun -np RANKS` with `args`; None (after saying why) when
/// mpirun is missing. Panics if the job outlives TIMEOUT, which is the hang these tests
/// exist to rule out.
fn run_job(args: &[&str]) -> Option<Job> {
    let Some(mpirun) = mpirun() else {
        eprintln!(
            "SKIPPED: mpirun is not on PATH, so the MPI end-to-end test cannot run; install it with `apt-get install -y openmpi-bin libopenmpi-dev`"
        );
        return None;
    };
    let _turn = one_job();

    let binary = example_binary();
    let started = Instant::now();
    let mut child = Command::new(&mpirun)
        // Harmless for other users; needed because CI runs as root.
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            &RANKS.to_string(),
        ])
        .arg(binary)
        .args(args)
        // Short failure output: the backtrace of an intended panic is noise.
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {}: {e}", mpirun.display()));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_or_kill(&mut child);
    let job = Job {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        took: started.elapsed(),
    };
    eprintln!(
        "mpirun -np {RANKS} mpi_collectives {}: {} after {:.1?}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        job.status,
        job.took,
        job.stdout,
        job.stderr
    );
    Some(job)
}

/// Reads a child's pipe to the end on its own thread, so a full pipe never blocks it.
fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// Waits for the job; past TIMEOUT asks mpirun to end it (SIGTERM, which mpirun passes on
/// to the ranks), then kills it, then fails the test.
fn wait_or_kill(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(50)),
            Ok(None) => break,
            Err(e) => panic!("waiting for mpirun: {e}"),
        }
    }
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    thread::sleep(Duration::from_secs(5));
    let _ = child.kill();
    let _ = child.wait();
    panic!("the MPI job was still running after {TIMEOUT:?}: a rank hangs");
}

#[test]
fn every_collective_is_right_on_four_ranks() {
    let Some(job) = run_job(&[]) else { return };
    assert!(job.status.success(), "the job failed: {}", job.stderr);
    assert!(
        job.stdout
            .contains(&format!("every collective right on {RANKS} ranks")),
        "rank 0 did not report success: {}",
        job.stdout
    );
}

#[test]
fn a_panicking_rank_ends_the_job_instead_of_hanging_it() {
    let Some(job) = run_job(&["--panic-rank", "2"]) else {
        return;
    };
    // Mpi's drop aborts the job with Rust's panic exit code; mpirun passes it on.
    assert_eq!(job.status.code(), Some(101), "{}", job.stderr);
    assert!(
        job.stderr.contains("rank 2 panics on purpose"),
        "{}",
        job.stderr
    );
    assert!(
        job.stderr.contains("aborting the MPI job"),
        "{}",
        job.stderr
    );
    assert!(!job.stderr.contains("passed a barrier"), "{}", job.stderr);
}

#[test]
fn abort_ends_every_rank_with_its_code() {
    let Some(job) = run_job(&["--abort-rank", "1"]) else {
        return;
    };
    assert_eq!(job.status.code(), Some(3), "{}", job.stderr);
    assert!(
        job.stderr.contains("rank 1 aborts on purpose"),
        "{}",
        job.stderr
    );
    assert!(!job.stderr.contains("passed a barrier"), "{}", job.stderr);
}

#[test]
fn a_rank_that_cannot_reach_its_launcher_refuses_to_run_alone() {
    // As if MPICH's mpiexec had started 4 copies of an Open MPI program: each comes up as
    // a singleton, and must say so rather than run as one of 4 independent "rank 0"s.
    let binary = example_binary();
    let _turn = one_job();
    let output = Command::new(binary)
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env("PMI_SIZE", "4")
        .env("PMI_RANK", "1")
        .output()
        .expect("the example starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("(PMI_SIZE=4), but MPI sees a world of 1"),
        "{stderr}"
    );
}
