//! The nbd backend on a real nbdkit (its memory plugin, started here on a Unix socket):
//! 16 commands in flight written and read back byte for byte, the export's size, and the
//! device guard's probe finding a real ext4 (mkfs.ext4) written onto the export. Without
//! nbdkit the tests skip loudly, and fail under scripts/test.sh (IOLAB_TEST_SUITE), which
//! installs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use iolab_backend::device::inspect_device;
use iolab_backend::nbd::Export;
use iolab_backend::{BackendOptions, Completion, DataFile, IoDir, IoRequest, OpenSpec};
use iolab_backend::{capabilities_of, open_backend};
use iolab_core::spec::BackendKind;

/// nbdkit serving `size` bytes of memory on a socket in a directory of its own; stopped
/// (by its PID) on drop.
struct Server {
    dir: tempfile::TempDir,
}

impl Server {
    fn start(size: &str) -> Option<Server> {
        let found = Command::new("nbdkit").arg("--version").output().is_ok();
        if !found {
            assert!(
                std::env::var_os("IOLAB_TEST_SUITE").is_none(),
                "nbdkit is not on PATH, though scripts/test.sh installs it"
            );
            eprintln!("SKIPPED: nbdkit is not installed (scripts/test.sh installs it)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("iolab-nbd-")
            .tempdir_in("/tmp")
            .unwrap();
        let s = Server { dir };
        let ok = Command::new("nbdkit")
            .arg("-U")
            .arg(s.socket())
            .arg("-P")
            .arg(s.pid_file())
            .args(["memory", &format!("size={size}")])
            .status()
            .unwrap()
            .success();
        assert!(ok, "nbdkit did not start");
        Some(s)
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("s")
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.path().join("pid")
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket().display())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.pid_file()) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
    }
}

fn req(dir: IoDir, offset: u64, slot: u32) -> IoRequest {
    IoRequest {
        file: 0,
        dir,
        offset,
        len: 4096,
        slot,
        buf_offset: 0,
        ioprio: 0,
    }
}

/// Runs `count` 4 KiB I/Os of `dir` over the first blocks, `depth` in flight; slot `s`
/// holds byte `s + 1` for writes. Returns the completions in order of arrival.
fn run(files: &[DataFile], dir: IoDir, count: u32, depth: u32) -> Vec<Completion> {
    let opts = BackendOptions {
        queue_depth: depth,
        block_size: 4096,
        alignment: 4096,
        submit_batch: 1,
        write_window: 0,
    };
    let mut b = open_backend(BackendKind::Nbd, files, opts).unwrap();
    assert_eq!(b.capabilities().max_queue_depth, depth);
    let mut free: Vec<u32> = (0..depth).collect();
    let mut next = 0u32;
    let mut done = Vec::new();
    let mut out = Vec::new();
    while (done.len() as u32) < count {
        while next < count
            && let Some(slot) = free.pop()
        {
            if dir == IoDir::Write {
                b.buffers().get_mut(slot).fill(next as u8 + 1);
            }
            b.push(req(dir, u64::from(next) * 4096, slot)).unwrap();
            next += 1;
        }
        b.submit(1).unwrap();
        out.clear();
        b.reap(&mut out);
        for c in &out {
            assert_eq!(c.result, 4096, "{c:?}");
            if dir == IoDir::Read {
                let got = b.buffers().get(c.slot)[0];
                done.push(Completion {
                    slot: c.slot,
                    result: i32::from(got),
                });
            } else {
                done.push(*c);
            }
            free.push(c.slot);
        }
    }
    assert_eq!(b.in_flight(), 0);
    done
}

#[test]
fn sixteen_in_flight_are_written_and_read_back() {
    let Some(server) = Server::start("8M") else {
        return;
    };
    let uri = server.uri();
    let files = [DataFile::open(
        Path::new(&uri),
        OpenSpec {
            write: true,
            ..OpenSpec::default()
        },
    )
    .unwrap()];
    assert!(files[0].is_block_device());
    assert_eq!(files[0].len().unwrap(), 8 << 20);
    assert!(capabilities_of(BackendKind::Nbd, 16).reaches_export);
    let written = run(&files, IoDir::Write, 200, 16);
    assert_eq!(written.len(), 200);
    // Read back through another connection: block k holds byte k + 1.
    let export = Export::connect(&uri).unwrap();
    for k in 0..200u64 {
        let mut block = vec![0u8; 4096];
        export.pread(&mut block, k * 4096).unwrap();
        assert!(block.iter().all(|b| *b == k as u8 + 1), "block {k}");
    }
    // And through the backend, 16 in flight: every block's first byte.
    let read = run(&files, IoDir::Read, 200, 16);
    let mut firsts: Vec<i32> = read.iter().map(|c| c.result).collect();
    firsts.sort();
    let mut want: Vec<i32> = (0..200).map(|k| (k as u8 + 1).into()).collect();
    want.sort();
    assert_eq!(firsts, want);
}

#[test]
fn the_guard_finds_a_real_ext4_on_an_export() {
    let Some(server) = Server::start("16M") else {
        return;
    };
    let uri = server.uri();
    let clean = inspect_device(Path::new(&uri)).unwrap();
    assert_eq!(clean.size, 16 << 20);
    assert_eq!((clean.signatures.len(), clean.data_at), (0, None));
    assert_eq!(clean.holds(), None);
    // A real ext4, made by mkfs.ext4 in a file and copied onto the export.
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("fs.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let made = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        assert!(
            std::env::var_os("IOLAB_TEST_SUITE").is_none(),
            "mkfs.ext4 failed"
        );
        eprintln!("SKIPPED: no mkfs.ext4 here");
        return;
    }
    let export = Export::connect(&uri).unwrap();
    export.pwrite(&std::fs::read(&img).unwrap(), 0).unwrap();
    let check = inspect_device(Path::new(&uri)).unwrap();
    assert!(
        check
            .signatures
            .iter()
            .any(|s| s.kind == "ext4" && s.offset == 0x438),
        "{:?}",
        check.signatures
    );
    let holds = check.holds().unwrap();
    assert!(
        holds.starts_with("a ext4 signature at byte 1080 (")
            && holds.contains("data (a non-zero byte"),
        "{holds}"
    );
    // No probe file is left in the temporary directory.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("iolab-nbd-probe.{}.", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
