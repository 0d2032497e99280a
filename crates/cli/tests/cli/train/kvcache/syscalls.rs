//! The KV cache storage tier's system calls as strace sees them, thread by thread.

use crate::common::{iolab, path, peer_on_path, strace_threads};

/// A `.npy` entry opened for writing on one thread, as strace saw it: the
/// fallocate(KEEP_SIZE) before its first write (offset, length) and the bytes written.
#[derive(Debug, Default)]
struct EntryWrite {
    reserved_first: Option<(u64, u64)>,
    written: u64,
    wrote: bool,
}

/// Every `.npy` entry written in `trace` (one thread's `openat,fallocate,pwrite64,close`).
fn entry_writes(trace: &str) -> Vec<EntryWrite> {
    let mut open: std::collections::HashMap<String, EntryWrite> = Default::default();
    let mut done = Vec::new();
    for line in trace.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        let args: Vec<&str> = rest.split(", ").collect();
        let ret = line.rsplit_once(" = ").map(|(_, r)| r.to_string());
        let num = |s: &str| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u64>().unwrap_or(0)
        };
        match call {
            "openat" if line.contains(".npy\"") && line.contains("O_CREAT") => {
                open.insert(ret.unwrap_or_default(), EntryWrite::default());
            }
            "fallocate" => {
                if let Some(e) = open.get_mut(args[0]).filter(|e| !e.wrote) {
                    assert_eq!(args[1], "FALLOC_FL_KEEP_SIZE", "{line}");
                    e.reserved_first = Some((num(args[2]), num(args[3])));
                }
            }
            "pwrite64" => {
                if let Some(e) = open.get_mut(args[0]) {
                    e.wrote = true;
                    e.written += ret.as_deref().map_or(0, num);
                }
            }
            "close" => done.extend(open.remove(rest.split(')').next().unwrap_or_default())),
            _ => {}
        }
    }
    done
}

/// Before it writes an entry of 16 MiB or more, the storage tier reserves the payload
/// past the 128-byte header with fallocate(KEEP_SIZE), as numpy's `tofile` does for
/// kv-cache.py (seen with strace, where installed: scripts/test.sh installs it). Seed
/// 42's two users ask for 820 to 16,245 tokens: every entry is 20 MiB or more. The join
/// window lets the entries being written at the end of the second finish whole.
#[test]
fn kvcache_reserves_each_entry_of_16_mib_or_more_with_fallocate_keep_size() {
    if !peer_on_path("strace", "-V") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("cache");
    std::fs::create_dir(&work).unwrap();
    let mut cmd = iolab();
    cmd.args([
        "kvcache",
        "--model",
        "tiny-1b",
        "--users",
        "2",
        "--duration",
        "1s",
    ])
    .args([
        "--join-window",
        "60s",
        "--generation-mode",
        "none",
        "--seed",
        "42",
        "--no-store",
        "-Q",
    ])
    .args(["--storage-capacity", "2GiB", "--dir", path(&work)]);
    let traces = strace_threads(&cmd, dir.path(), "openat,fallocate,pwrite64,close");
    let entries: Vec<EntryWrite> = traces.iter().flat_map(|t| entry_writes(t)).collect();
    let mut whole = 0;
    for e in entries.iter().filter(|e| e.wrote) {
        let Some((offset, len)) = e.reserved_first else {
            panic!("an entry written without fallocate(KEEP_SIZE) first: {e:?}");
        };
        assert_eq!(offset, 128, "{e:?}");
        assert!(len >= 16 << 20 && len % 24_576 == 0, "{e:?}");
        // Its header and at most the payload reserved (less when the run's end cut it).
        assert!(e.written <= 128 + len, "{e:?}");
        whole += u32::from(e.written == 128 + len);
    }
    assert!(whole > 0, "no whole entry written: {entries:?}");
}
