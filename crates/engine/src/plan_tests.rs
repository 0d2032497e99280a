use super::*;
use iolab_core::spec::{Placement, RwKind};
use proptest::prelude::{prop_assert, prop_assert_eq, proptest};

fn spec(threads: u32) -> DataSpec {
    DataSpec {
        threads,
        block_size: ByteCount::kib(4),
        size: Some(ByteCount::kib(64)),
        ..DataSpec::default()
    }
}

fn ctx(rank: u32, ranks: u32) -> PlanContext {
    PlanContext {
        rank,
        ranks,
        ..PlanContext::default()
    }
}

#[test]
fn file_per_thread_gives_each_worker_its_file() {
    let p = plan_data(&spec(2), &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
    assert_eq!(p.total_workers, 4);
    assert_eq!(p.files.len(), 2);
    assert_eq!(p.files[0].path, PathBuf::from("/w/data.r1.t0"));
    assert_eq!(p.files[1].size, 65536);
    assert_eq!(p.workers[1].global, 3);
    assert_eq!(
        (p.workers[1].base, p.workers[1].stride, p.workers[1].blocks),
        (0, 4096, 16)
    );
    assert_eq!(p.total_bytes, 4 * 65536);
    assert_eq!(p.owned_files, p.files);
}

#[test]
fn shared_segmented_and_strided_placement() {
    let mut s = spec(2);
    s.layout = Layout::Shared;
    let seg = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
    assert_eq!(seg.files.len(), 1);
    assert_eq!(seg.files[0].size, 4 * 65536);
    assert_eq!(seg.workers[0].base, 2 * 65536);
    assert_eq!(seg.workers[1].base, 3 * 65536);
    s.placement = Placement::Strided;
    let st = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2)).unwrap();
    assert_eq!(
        (st.workers[0].base, st.workers[0].stride),
        (2 * 4096, 4 * 4096)
    );
    assert!(
        plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(1, 2))
            .unwrap()
            .owned_files
            .is_empty()
    );
}

#[test]
fn reads_can_be_shifted_to_another_ranks_data() {
    let mut s = spec(1);
    s.rw = RwKind::Read;
    let c = PlanContext {
        rank: 0,
        ranks: 4,
        read_shift: 2,
        ..PlanContext::default()
    };
    let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(p.workers[0].owner, 2);
    assert_eq!(p.files[0].path, PathBuf::from("/w/data.r2.t0"));
    assert_eq!(p.owned_files[0].path, PathBuf::from("/w/data.r0.t0"));
    s.rw = RwKind::Write;
    assert_eq!(
        plan_data(&s, &DataTarget::Dir("/w".into()), &c)
            .unwrap()
            .workers[0]
            .owner,
        0
    );
}

#[test]
fn ior_names_and_whose_data_each_block_is() {
    // IOR -F -o ior-easy/ior_file_easy: BASE.%08d by rank; rank 1 reads rank 2's.
    let mut s = spec(1);
    s.rw = RwKind::Read;
    let c = PlanContext {
        rank: 1,
        ranks: 3,
        read_shift: 1,
        names: FileNames::Ior("ior-easy/ior_file_easy".into()),
        ..PlanContext::default()
    };
    let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(
        p.files[0].path,
        PathBuf::from("/w/ior-easy/ior_file_easy.00000002")
    );
    assert_eq!(p.files[0].owner_at(3 * 4096, 4096), 2);
    assert_eq!(
        p.owned_files[0].path,
        PathBuf::from("/w/ior-easy/ior_file_easy.00000001")
    );
    // One shared file named BASE: strided blocks go round the 3 workers, segmented
    // regions follow the shares.
    s.layout = Layout::Shared;
    s.placement = Placement::Strided;
    let c = PlanContext {
        names: FileNames::Ior("ior-hard/file".into()),
        ..c
    };
    let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
    let f = &p.files[0];
    assert_eq!(f.path, PathBuf::from("/w/ior-hard/file"));
    let owners: Vec<u64> = (0..7).map(|b| f.owner_at(b * 4096, 4096)).collect();
    assert_eq!(owners, [0, 1, 2, 0, 1, 2, 0]);
    s.placement = Placement::Segmented;
    let c = PlanContext {
        written_blocks: Some(vec![2, 3, 1]),
        ..c
    };
    let f = plan_data(&s, &DataTarget::Dir("/w".into()), &c)
        .unwrap()
        .files[0]
        .clone();
    let owners: Vec<u64> = (0..6).map(|b| f.owner_at(b * 4096, 4096)).collect();
    assert_eq!(owners, [0, 0, 1, 1, 1, 2]);
}

#[test]
fn written_blocks_limit_a_following_read() {
    let c = PlanContext {
        rank: 0,
        ranks: 1,
        read_shift: 0,
        written_blocks: Some(vec![5, 9]),
        ..PlanContext::default()
    };
    let p = plan_data(&spec(2), &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(p.workers[0].blocks, 5);
    assert_eq!(p.workers[1].blocks, 9);
    assert_eq!(p.total_bytes, 14 * 4096);
}

#[test]
fn device_too_small_is_refused() {
    let t = DataTarget::Device {
        path: "/dev/x".into(),
        size: 65536,
    };
    let err = plan_data(&spec(2), &t, &ctx(0, 1)).unwrap_err();
    assert_eq!(err.option, "--size");
    let mut s = spec(2);
    s.size = None;
    let p = plan_data(&s, &t, &ctx(0, 1)).unwrap();
    assert_eq!(p.total_bytes, 65536);
    assert_eq!(p.workers[1].base, 32768);
}

#[test]
fn too_small_a_total_is_named() {
    let mut s = spec(4);
    s.size = None;
    s.total_size = Some(ByteCount::kib(8));
    let err = plan_data(&s, &DataTarget::Dir("/w".into()), &ctx(0, 1)).unwrap_err();
    assert_eq!(err.option, "--total-size");
}

proptest! {
    #[test]
    fn plan_shares_add_up_to_the_total(total_kib in 64u64..100_000, threads in 1u32..16, ranks in 1u32..5) {
        let s = DataSpec {
            threads,
            block_size: ByteCount::kib(4),
            total_size: Some(ByteCount::kib(total_kib)),
            ..DataSpec::default()
        };
        let target = DataTarget::Dir("/w".into());
        let Ok(sh) = shares(&s, &target, threads * ranks) else { return Ok(()) };
        prop_assert_eq!(sh.iter().sum::<u64>(), total_kib / 4);
        prop_assert!(sh.iter().max().unwrap() - sh.iter().min().unwrap() <= 1);
        // Segmented regions of a shared file tile it without gaps or overlap.
        let mut shared = s.clone();
        shared.layout = Layout::Shared;
        let mut regions = Vec::new();
        for rank in 0..ranks {
            let p = plan_data(&shared, &target, &ctx(rank, ranks)).unwrap();
            for w in &p.workers { regions.push((w.base, w.blocks * 4096)); }
        }
        regions.sort();
        let mut end = 0;
        for (base, len) in regions { prop_assert_eq!(base, end); end = base + len; }
        prop_assert_eq!(end, total_kib / 4 * 4096);
    }
}

#[test]
fn several_files_per_worker_after_an_offset() {
    // 64 KiB per worker in 3 files: 5 blocks each (the 16th block does not fit).
    let c = PlanContext {
        rank: 0,
        ranks: 1,
        files_per_worker: 3,
        start_offset: 8192,
        names: FileNames::Template("j.{worker}.{file}".into()),
        ..PlanContext::default()
    };
    let p = plan_data(&spec(2), &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(p.files.len(), 6);
    assert_eq!(p.files[4].path, PathBuf::from("/w/j.1.1"));
    assert_eq!(p.files[4].size, 8192 + 5 * 4096);
    assert_eq!(p.files[4].owner_at(8192, 4096), 1);
    let w = &p.workers[1];
    assert_eq!((w.file, w.files, w.blocks, w.base), (3, 3, 15, 8192));
    assert_eq!(p.owned_files, p.files);
    assert_eq!(p.total_bytes, 2 * 15 * 4096);
    // An offset that is not whole blocks, or several files in a shared file, is refused.
    let bad = PlanContext {
        start_offset: 1000,
        ..c.clone()
    };
    assert_eq!(
        plan_data(&spec(2), &DataTarget::Dir("/w".into()), &bad)
            .unwrap_err()
            .option,
        "start_offset"
    );
    let mut shared = spec(2);
    shared.layout = Layout::Shared;
    assert_eq!(
        plan_data(&shared, &DataTarget::Dir("/w".into()), &c)
            .unwrap_err()
            .option,
        "files_per_worker"
    );
}

#[test]
fn an_offset_on_a_device_must_leave_room_for_the_work() {
    let t = DataTarget::Device {
        path: "/dev/x".into(),
        size: 3 * 65536,
    };
    let c = PlanContext {
        start_offset: 65536,
        ..ctx(0, 1)
    };
    let p = plan_data(&spec(2), &t, &c).unwrap();
    assert_eq!((p.workers[0].base, p.workers[1].base), (65536, 2 * 65536));
    assert_eq!(p.files[0].size, 3 * 65536);
    let c = PlanContext {
        start_offset: 2 * 65536,
        ..c
    };
    let err = plan_data(&spec(2), &t, &c).unwrap_err();
    assert!(err.reason.contains("after an offset of"), "{}", err.reason);
}

#[test]
fn a_rank_reads_the_rank_it_is_told_to_read_instead_of_a_shift() {
    let mut s = spec(1);
    s.rw = RwKind::Read;
    let c = PlanContext {
        rank: 0,
        ranks: 4,
        read_shift: 1,
        read_from: Some(2),
        names: FileNames::Ior("f".into()),
        ..PlanContext::default()
    };
    let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(p.files[0].path, PathBuf::from("/w/f.00000002"));
    // A write writes its own, whatever it is told to read.
    s.rw = RwKind::Write;
    let p = plan_data(&s, &DataTarget::Dir("/w".into()), &c).unwrap();
    assert_eq!(p.files[0].path, PathBuf::from("/w/f.00000000"));
}

#[test]
fn offset_increment_starts_each_workers_region_further_on() {
    // fio's offset_increment: worker w's region at offset + w * increment.
    let c = PlanContext {
        start_offset: 8192,
        offset_increment: 3 * 65536,
        names: FileNames::Template("j.{worker}.{file}".into()),
        ..ctx(0, 1)
    };
    let p = plan_data(&spec(3), &DataTarget::Dir("/w".into()), &c).unwrap();
    let bases: Vec<u64> = p.workers.iter().map(|w| w.base).collect();
    assert_eq!(bases, [8192, 8192 + 3 * 65536, 8192 + 6 * 65536]);
    let sizes: Vec<u64> = p.files.iter().map(|f| f.size).collect();
    assert_eq!(sizes, [8192 + 65536, 8192 + 4 * 65536, 8192 + 7 * 65536]);
    // A shared file holds every region, gaps between them.
    let mut shared = spec(3);
    shared.layout = Layout::Shared;
    let p = plan_data(&shared, &DataTarget::Dir("/w".into()), &c).unwrap();
    let bases: Vec<u64> = p.workers.iter().map(|w| w.base).collect();
    assert_eq!(bases, [8192, 8192 + 3 * 65536, 8192 + 6 * 65536]);
    assert_eq!(p.files[0].size, 8192 + 7 * 65536);
    assert_eq!(p.files[0].owner_at(3 * 65536, 4096), 1);
    // Regions that would overlap, or an increment that is not whole blocks, are refused.
    for inc in [65536 - 4096, 1000] {
        let bad = PlanContext {
            offset_increment: inc,
            ..c.clone()
        };
        let err = plan_data(&shared, &DataTarget::Dir("/w".into()), &bad).unwrap_err();
        assert_eq!(err.option, "offset_increment", "{}", err.reason);
    }
    // On a device the last region must fit.
    let t = DataTarget::Device {
        path: "/dev/x".into(),
        size: 8192 + 7 * 65536 - 4096,
    };
    let err = plan_data(&spec(3), &t, &c).unwrap_err();
    assert!(err.reason.contains("holds"), "{}", err.reason);
}

fn two_hosts(rank: u32) -> String {
    format!("node{}", rank / 2)
}

#[test]
fn reads_are_shifted_to_a_rank_on_the_next_host() {
    let spec = DataSpec {
        rw: RwKind::Read,
        size: Some(ByteCount::kib(64)),
        ..DataSpec::default()
    };
    let owners = iolab_comm::InProcess::run(4, two_hosts, |comm: &dyn iolab_comm::Comm| {
        let ctx = PlanContext {
            rank: comm.rank(),
            ranks: comm.size(),
            read_shift: crate::data::resolve_read_shift(&spec, comm, true),
            ..PlanContext::default()
        };
        let plan = plan_data(&spec, &DataTarget::Dir("/w".into()), &ctx).unwrap();
        (plan.workers[0].owner, plan.files[0].path.clone())
    });
    assert_eq!(
        owners.iter().map(|o| o.0).collect::<Vec<_>>(),
        vec![2, 3, 0, 1]
    );
    assert_eq!(owners[0].1, std::path::PathBuf::from("/w/data.r2.t0"));
    // On one host there is no other node's cache to avoid: each rank reads its own.
    let own = iolab_comm::InProcess::run(
        2,
        |_| "one".to_string(),
        |comm: &dyn iolab_comm::Comm| crate::data::resolve_read_shift(&spec, comm, true),
    );
    assert_eq!(own, vec![0, 0]);
    // A directory per host ({host} in --dir): another host's files are not there.
    let apart = iolab_comm::InProcess::run(4, two_hosts, |comm: &dyn iolab_comm::Comm| {
        crate::data::resolve_read_shift(&spec, comm, false)
    });
    assert_eq!(apart, vec![0, 0, 0, 0]);
}
