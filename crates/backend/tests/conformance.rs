//! The conformance suite every storage backend passes: write a pattern and read it back,
//! keep many requests in flight, report short reads at end of file, reject unaligned
//! direct I/O with EINVAL, and surface errors as -errno. Backends the kernel lacks are
//! skipped loudly.

use std::path::Path;

use iolab_backend::{
    BackendOptions, Completion, DataFile, IoBackend, IoDir, IoRequest, OpenSpec, open_backend,
    uring_available,
};
use iolab_core::spec::BackendKind;

const STORAGE_BACKENDS: [BackendKind; 3] =
    [BackendKind::Psync, BackendKind::Sync, BackendKind::Uring];

fn usable(kind: BackendKind) -> bool {
    if kind == BackendKind::Uring
        && let Err(why) = uring_available()
    {
        eprintln!("SKIPPED for io_uring: {why}");
        return false;
    }
    true
}

fn opts(depth: u32, block: u64) -> BackendOptions {
    BackendOptions {
        queue_depth: depth,
        block_size: block,
        alignment: 4096,
        submit_batch: 1,
        write_window: 0,
    }
}

fn rw_file(path: &Path, direct: bool) -> DataFile {
    DataFile::open(
        path,
        OpenSpec {
            write: true,
            create: true,
            direct,
            ..OpenSpec::default()
        },
    )
    .unwrap()
}

/// Pushes one request and waits for its completion.
fn one(b: &mut dyn IoBackend, req: IoRequest) -> Completion {
    b.push(req).unwrap();
    b.submit(1).unwrap();
    let mut out = Vec::new();
    while out.is_empty() {
        b.reap(&mut out);
        if out.is_empty() {
            b.submit(1).unwrap();
        }
    }
    assert_eq!(out.len(), 1);
    out[0]
}

fn req(dir: IoDir, offset: u64, len: u32, slot: u32) -> IoRequest {
    IoRequest {
        file: 0,
        dir,
        offset,
        len,
        slot,
        buf_offset: 0,
        ioprio: 0,
    }
}

#[test]
fn writes_a_pattern_and_reads_it_back() {
    for kind in STORAGE_BACKENDS.into_iter().filter(|k| usable(*k)) {
        let dir = tempfile::tempdir().unwrap();
        let files = [rw_file(&dir.path().join("f"), false)];
        let mut b = open_backend(kind, &files, opts(1, 4096)).unwrap();
        for block in 0..4u8 {
            b.buffers().get_mut(0).fill(block + 1);
            let c = one(b.as_mut(), req(IoDir::Write, block as u64 * 4096, 4096, 0));
            assert_eq!(
                c,
                Completion {
                    slot: 0,
                    result: 4096
                },
                "{kind:?}"
            );
        }
        for block in (0..4u8).rev() {
            let c = one(b.as_mut(), req(IoDir::Read, block as u64 * 4096, 4096, 0));
            assert_eq!(c.result, 4096, "{kind:?}");
            assert!(
                b.buffers().get(0).iter().all(|x| *x == block + 1),
                "{kind:?} block {block}"
            );
        }
        let on_disk = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(on_disk.len(), 16384);
        assert_eq!(on_disk[8192], 3);
    }
}

#[test]
fn a_write_takes_its_data_from_its_place_in_the_write_window() {
    for kind in STORAGE_BACKENDS.into_iter().filter(|k| usable(*k)) {
        let dir = tempfile::tempdir().unwrap();
        let files = [rw_file(&dir.path().join("f"), false)];
        let o = BackendOptions {
            write_window: 8192,
            ..opts(1, 4096)
        };
        let mut b = open_backend(kind, &files, o).unwrap();
        assert_eq!(b.buffers().slot_size(), 3 * 4096, "{kind:?}");
        for (i, byte) in [7u8, 8, 9].into_iter().enumerate() {
            b.buffers().get_mut(0)[i * 4096..(i + 1) * 4096].fill(byte);
        }
        for (block, place) in [(0u64, 2u32), (1, 0), (2, 1)] {
            let w = IoRequest {
                buf_offset: place * 4096,
                ..req(IoDir::Write, block * 4096, 4096, 0)
            };
            assert_eq!(one(b.as_mut(), w).result, 4096, "{kind:?}");
        }
        let on_disk = std::fs::read(dir.path().join("f")).unwrap();
        assert_eq!(on_disk.len(), 3 * 4096);
        assert!(on_disk[..4096].iter().all(|x| *x == 9), "{kind:?}");
        assert!(on_disk[4096..8192].iter().all(|x| *x == 7), "{kind:?}");
        assert!(on_disk[8192..].iter().all(|x| *x == 8), "{kind:?}");
    }
}

#[test]
fn short_read_at_end_of_file() {
    for kind in STORAGE_BACKENDS.into_iter().filter(|k| usable(*k)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![9u8; 5000]).unwrap();
        let files = [rw_file(&dir.path().join("f"), false)];
        let mut b = open_backend(kind, &files, opts(1, 4096)).unwrap();
        assert_eq!(
            one(b.as_mut(), req(IoDir::Read, 4096, 4096, 0)).result,
            904,
            "{kind:?}"
        );
        assert_eq!(
            one(b.as_mut(), req(IoDir::Read, 8192, 4096, 0)).result,
            0,
            "{kind:?}"
        );
    }
}

#[test]
fn unaligned_direct_io_is_rejected_with_einval() {
    for kind in STORAGE_BACKENDS.into_iter().filter(|k| usable(*k)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 65536]).unwrap();
        let files = match DataFile::open(
            &path,
            OpenSpec {
                write: true,
                direct: true,
                ..OpenSpec::default()
            },
        ) {
            Ok(f) => [f],
            Err(e) => {
                eprintln!("SKIPPED for {kind:?}: this file system refuses O_DIRECT: {e}");
                return;
            }
        };
        if iolab_backend::files::fs_type(dir.path()).unwrap() == "tmpfs" {
            eprintln!("SKIPPED for {kind:?}: tmpfs accepts unaligned O_DIRECT");
            return;
        }
        let mut b = open_backend(kind, &files, opts(1, 4096)).unwrap();
        assert_eq!(
            one(b.as_mut(), req(IoDir::Read, 0, 4096, 0)).result,
            4096,
            "{kind:?}"
        );
        assert_eq!(
            one(b.as_mut(), req(IoDir::Read, 100, 4096, 0)).result,
            -libc::EINVAL,
            "{kind:?}"
        );
        assert_eq!(
            one(b.as_mut(), req(IoDir::Write, 0, 1000, 0)).result,
            -libc::EINVAL,
            "{kind:?}"
        );
    }
}

#[test]
fn errors_come_back_as_negative_errno() {
    for kind in STORAGE_BACKENDS.into_iter().filter(|k| usable(*k)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let files = [DataFile::open(&path, OpenSpec::default()).unwrap()]; // read-only
        let mut b = open_backend(kind, &files, opts(1, 512)).unwrap();
        assert_eq!(
            one(b.as_mut(), req(IoDir::Write, 0, 512, 0)).result,
            -libc::EBADF,
            "{kind:?}"
        );
    }
}

#[test]
fn uring_keeps_the_queue_full() {
    if !usable(BackendKind::Uring) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![0u8; 64 * 4096]).unwrap();
    let files = [rw_file(&dir.path().join("f"), false)];
    let mut b = open_backend(BackendKind::Uring, &files, opts(8, 4096)).unwrap();
    for slot in 0..8 {
        b.buffers().get_mut(slot).fill(slot as u8);
        b.push(req(IoDir::Write, slot as u64 * 4096, 4096, slot))
            .unwrap();
    }
    assert_eq!(b.in_flight(), 8);
    assert!(
        b.push(req(IoDir::Write, 0, 4096, 0)).is_err(),
        "a ninth request must not fit"
    );
    let mut out = Vec::new();
    while out.len() < 8 {
        b.submit(1).unwrap();
        b.reap(&mut out);
    }
    assert_eq!(b.in_flight(), 0);
    let mut slots: Vec<u32> = out.iter().map(|c| c.slot).collect();
    slots.sort();
    assert_eq!(slots, (0..8).collect::<Vec<_>>());
    assert!(out.iter().all(|c| c.result == 4096));
    let data = std::fs::read(dir.path().join("f")).unwrap();
    for slot in 0..8usize {
        assert!(
            data[slot * 4096..(slot + 1) * 4096]
                .iter()
                .all(|x| *x == slot as u8)
        );
    }
}

#[test]
fn null_backend_completes_everything_without_files() {
    let mut b = open_backend(BackendKind::Null, &[], opts(4, 4096)).unwrap();
    assert!(!b.capabilities().touches_storage);
    for slot in 0..4 {
        b.push(req(IoDir::Read, 0, 4096, slot)).unwrap();
    }
    assert!(b.push(req(IoDir::Read, 0, 4096, 0)).is_err());
    b.submit(4).unwrap();
    let mut out = Vec::new();
    b.reap(&mut out);
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|c| c.result == 4096));
}

#[test]
fn psync_has_a_queue_of_one() {
    let dir = tempfile::tempdir().unwrap();
    let files = [rw_file(&dir.path().join("f"), false)];
    let mut b = open_backend(BackendKind::Psync, &files, opts(16, 4096)).unwrap();
    assert_eq!(b.capabilities().max_queue_depth, 1);
    b.push(req(IoDir::Write, 0, 4096, 0)).unwrap();
    assert!(b.push(req(IoDir::Write, 4096, 4096, 0)).is_err());
}

#[test]
fn uring_gathers_a_submit_batch_before_entering_the_kernel() {
    if !usable(BackendKind::Uring) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![5u8; 8 * 4096]).unwrap();
    let files = [rw_file(&dir.path().join("f"), false)];
    let mut o = opts(8, 4096);
    o.submit_batch = 4;
    let mut b = open_backend(BackendKind::Uring, &files, o).unwrap();
    assert!(b.capabilities().submits_on_push);
    for slot in 0..6 {
        b.push(req(IoDir::Read, slot as u64 * 4096, 4096, slot))
            .unwrap();
    }
    // The first four went to the kernel with the fourth push; submit hands over the rest.
    let mut out = Vec::new();
    while out.len() < 6 {
        b.submit(1).unwrap();
        b.reap(&mut out);
    }
    assert!(out.iter().all(|c| c.result == 4096));
    assert_eq!(b.in_flight(), 0);
}

/// Every slot's submission entry is written in place for each of its I/Os: many I/Os
/// through few slots, over two files, with the queue kept full and batches of one and
/// three, each read delivering its own file's block and each write landing in its own.
#[test]
fn uring_reuses_each_slots_entry_across_files() {
    if !usable(BackendKind::Uring) {
        return;
    }
    const BLOCKS: u64 = 16;
    let byte = |file: u32, block: u64| (file as u64 * BLOCKS + block + 1) as u8;
    for batch in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        for f in 0..2u32 {
            let data: Vec<u8> = (0..BLOCKS * 4096).map(|i| byte(f, i / 4096)).collect();
            std::fs::write(dir.path().join(format!("f{f}")), data).unwrap();
        }
        let files = [0, 1].map(|f| rw_file(&dir.path().join(format!("f{f}")), false));
        // Five slots in a ring of eight entries.
        let mut o = opts(5, 4096);
        o.submit_batch = batch;
        let mut b = open_backend(BackendKind::Uring, &files, o).unwrap();
        let mut free: Vec<u32> = (0..5).collect();
        let mut at = [(0u32, 0u64); 5];
        let (mut issued, mut checked, mut out) = (0u64, 0, Vec::new());
        while checked < 200 {
            while issued < 200 && !free.is_empty() {
                let slot = free.pop().unwrap();
                let (file, block) = ((issued % 2) as u32, issued * 7 % BLOCKS);
                at[slot as usize] = (file, block);
                b.push(IoRequest {
                    file,
                    ..req(IoDir::Read, block * 4096, 4096, slot)
                })
                .unwrap();
                issued += 1;
            }
            b.submit(1).unwrap();
            b.reap(&mut out);
            for c in out.drain(..) {
                assert_eq!(c.result, 4096, "batch {batch}");
                let (file, block) = at[c.slot as usize];
                let got = b.buffers().get(c.slot)[..4096].to_vec();
                assert!(
                    got.iter().all(|x| *x == byte(file, block)),
                    "batch {batch}: slot {} read block {block} of file {file}, got {}",
                    c.slot,
                    got[0]
                );
                free.push(c.slot);
                checked += 1;
            }
        }
        // Writes through the same entries: block 3 of each file gets the other's byte.
        for (slot, file) in [(0u32, 0u32), (4, 1)] {
            b.buffers().get_mut(slot).fill(byte(1 - file, 3));
            b.push(IoRequest {
                file,
                ..req(IoDir::Write, 3 * 4096, 4096, slot)
            })
            .unwrap();
        }
        while out.len() < 2 {
            b.submit(1).unwrap();
            b.reap(&mut out);
        }
        assert!(out.iter().all(|c| c.result == 4096));
        assert_eq!(b.in_flight(), 0);
        drop(b);
        for f in 0..2u32 {
            let data = std::fs::read(dir.path().join(format!("f{f}"))).unwrap();
            assert!(
                data[3 * 4096..4 * 4096]
                    .iter()
                    .all(|x| *x == byte(1 - f, 3))
            );
            assert!(data[2 * 4096..3 * 4096].iter().all(|x| *x == byte(f, 2)));
        }
    }
}
