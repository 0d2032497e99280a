//! Mixed workloads as fio runs them: reads and writes in sizes of their own (fio's
//! bs=READ,WRITE), each direction with its own sequence.

use iolab_core::result::OpKind;
use iolab_core::spec::{DataSpec, RwKind};
use iolab_core::units::ByteCount;

use super::{dir_target, files_in, null_spec, run_fake, run_real};

/// Each direction of a mixed workload in its own size (fio's bs=READ,WRITE): every I/O
/// moves its direction's size, and a size-based share ends once its bytes are moved.
#[test]
fn a_mixed_workload_moves_reads_and_writes_in_their_own_sizes() {
    for (rw, read, write) in [
        (RwKind::Randrw, 4, 64),
        (RwKind::Randrw, 64, 4),
        (RwKind::Rw, 4, 64),
    ] {
        let spec = DataSpec {
            rw,
            block_size: ByteCount::kib(read),
            write_block_size: Some(ByteCount::kib(write)),
            size: Some(ByteCount::mib(4)),
            ..null_spec()
        };
        let p = &run_fake(&spec, 10)[0];
        let (r, w) = (p.op(OpKind::Read).unwrap(), p.op(OpKind::Write).unwrap());
        assert_eq!(r.bytes.get(), r.ops * read * 1024, "{rw:?}");
        assert_eq!(w.bytes.get(), w.ops * write * 1024, "{rw:?}");
        let moved = r.bytes.get() + w.bytes.get();
        let big = read.max(write) * 1024;
        assert!(
            (4 << 20..(4 << 20) + big).contains(&moved),
            "{rw:?}: {moved} bytes for a 4 MiB share"
        );
        // The mix is by count, as fio's is.
        assert!((r.ops as f64 / (r.ops + w.ops) as f64 - 0.5).abs() < 0.1);
    }
}

/// On real files every I/O of either size lands inside the file: no short read, and no
/// write past its end (which would grow it).
#[test]
fn mixed_sizes_stay_inside_their_files() {
    for (rw, read, write) in [
        (RwKind::Randrw, 4, 64),
        (RwKind::Randrw, 64, 4),
        (RwKind::Rw, 64, 4),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let spec = DataSpec {
            rw,
            threads: 2,
            block_size: ByteCount::kib(read),
            write_block_size: Some(ByteCount::kib(write)),
            // Not a whole number of 64 KiB blocks: the share is cut to whole ones.
            size: Some(ByteCount::kib(1000)),
            ..DataSpec::default()
        };
        let p = &run_real(&spec, &dir_target(dir.path(), true))[0];
        assert!(p.errors.is_empty(), "{rw:?}: {:?}", p.errors);
        assert_eq!(
            files_in(dir.path()),
            vec![
                ("data.r0.t0".into(), 960 * 1024),
                ("data.r0.t1".into(), 960 * 1024)
            ],
            "{rw:?}"
        );
        let moved =
            p.op(OpKind::Read).unwrap().bytes.get() + p.op(OpKind::Write).unwrap().bytes.get();
        assert!(
            (2 * 960 * 1024..2 * 1024 * 1024).contains(&moved),
            "{moved}"
        );
    }
}

/// fio's sequential mix: reads and writes each go on from where their own direction
/// left off, so the writes (of 4 KiB or 64 KiB) cover one prefix of the file, whatever
/// the reads of 4 KiB in between did.
#[test]
fn a_sequential_mix_keeps_a_position_per_direction() {
    for write_kib in [4, 64] {
        sequential_mix_writes_a_prefix(write_kib);
    }
}

fn sequential_mix_writes_a_prefix(write_kib: u64) {
    let run = |rw: RwKind| {
        let dir = tempfile::tempdir().unwrap();
        let spec = DataSpec {
            rw,
            block_size: ByteCount::kib(4),
            write_block_size: rw.is_mixed().then_some(ByteCount::kib(write_kib)),
            size: Some(ByteCount::mib(1)),
            ..DataSpec::default()
        };
        let p = run_real(&spec, &dir_target(dir.path(), true))[0].clone();
        let data = std::fs::read(dir.path().join("iolab-work/data.r0.t0")).unwrap();
        (p, data)
    };
    // The same seed lays the file out the same way: what differs is what was written.
    let (_, laid_out) = run(RwKind::Read);
    let (p, after) = run(RwKind::Rw);
    let writes = p.op(OpKind::Write).unwrap().ops as usize;
    assert!(writes > 5, "{writes}");
    let changed: Vec<bool> = laid_out
        .chunks(4096)
        .zip(after.chunks(4096))
        .map(|(a, b)| a != b)
        .collect();
    let prefix = writes * write_kib as usize / 4;
    assert!(changed[..prefix].iter().all(|c| *c), "the writes' prefix");
    assert!(!changed[prefix..].iter().any(|c| *c), "nothing after it");
}
