//! Tests of `iolab net`: who streams to whom, and exact byte counts over loopback with
//! one process and with several ranks.

use std::sync::atomic::AtomicBool;

use iolab_comm::{Comm, InProcess, SingleProcess};
use iolab_core::result::{OpKind, PhaseKind};
use iolab_core::spec::{NetPattern, NetSpec};
use iolab_core::units::ByteCount;

use super::*;
use iolab_engine::MonotonicClock;

fn run(comm: &dyn Comm, spec: &NetSpec) -> Vec<NetPhase> {
    let stop = AtomicBool::new(false);
    let env = Env::new(comm, &stop);
    run_net(&env, &MonotonicClock, spec).unwrap()
}

fn pairs_of(l: &[Link]) -> Vec<(u32, u32)> {
    l.iter().map(|l| (l.sender, l.receiver)).collect()
}

#[test]
fn pairs_and_rings() {
    let p = links(4, NetPattern::Pairs);
    assert_eq!(p[0].0, "forward");
    assert_eq!(pairs_of(&p[0].1), vec![(0, 2), (1, 3)]);
    assert_eq!(pairs_of(&p[1].1), vec![(2, 0), (3, 1)]);
    assert_eq!(
        pairs_of(&links(5, NetPattern::Pairs)[0].1),
        vec![(0, 2), (1, 3)]
    );
    let r = links(3, NetPattern::Ring);
    assert_eq!(pairs_of(&r[0].1), vec![(0, 1), (1, 2), (2, 0)]);
    assert_eq!(pairs_of(&r[1].1), vec![(0, 2), (1, 0), (2, 1)]);
    assert_eq!(links(2, NetPattern::Ring).len(), 1);
    assert_eq!(pairs_of(&links(1, NetPattern::Ring)[0].1), vec![(0, 0)]);
}

#[test]
fn loopback_counts_every_byte() {
    let spec = NetSpec {
        size: ByteCount(100_000),
        block_size: ByteCount::kib(64),
        streams: 3,
        ..NetSpec::default()
    };
    let phases = run(&SingleProcess::new(), &spec);
    assert_eq!(phases.len(), 1);
    let p = &phases[0];
    assert_eq!(p.direction, "loopback");
    assert_eq!(p.pairs.len(), 1);
    let pair = &p.pairs[0];
    assert_eq!(pair.name, "net 0->0");
    assert_eq!(pair.kind, PhaseKind::Net);
    let t = pair.op(OpKind::Transfer).unwrap();
    assert_eq!(t.bytes, ByteCount(300_000));
    // Per stream one full block of 64 KiB and the 34464 bytes left.
    assert_eq!(t.ops, 6);
    assert_eq!(pair.error_count, 0);
    assert_eq!(pair.workers, 3);
    assert!(p.summary.ops.is_empty());
    assert!(p.summary.warnings[0].contains("loopback"));
    assert_eq!(
        p.summary.extra["aggregate_bytes_per_sec"],
        t.bandwidth.get()
    );
}

#[test]
fn ranks_stream_to_their_partners_both_ways() {
    let spec = NetSpec {
        size: ByteCount::kib(256),
        block_size: ByteCount::kib(16),
        streams: 2,
        address: "127.0.0.1".into(),
        ..NetSpec::default()
    };
    let hosts = |r: u32| format!("h{}", r % 2);
    for pattern in [NetPattern::Pairs, NetPattern::Ring] {
        let spec = NetSpec {
            pattern,
            ..spec.clone()
        };
        let results = InProcess::run(4, hosts, |comm| run(comm, &spec));
        // Rank 0 holds every link's row (it prints and stores them).
        for phases in &results[..1] {
            assert_eq!(phases.len(), 2);
            for p in phases {
                let expected = if pattern == NetPattern::Pairs { 2 } else { 4 };
                assert_eq!(p.pairs.len(), expected, "{}", p.direction);
                for pair in &p.pairs {
                    let t = pair.op(OpKind::Transfer).unwrap();
                    assert_eq!(t.bytes, ByteCount::kib(512), "{}", pair.name);
                    assert_eq!(t.ops, 32);
                }
                assert_eq!(p.summary.ranks, 4);
            }
        }
        if pattern == NetPattern::Pairs {
            let p = &results[0][1];
            assert_eq!(p.pairs[0].name, "net 2->0");
            assert_eq!(p.pairs[0].params["sender_host"], "h0");
            assert_eq!(p.pairs[0].params["receiver_host"], "h0");
        }
    }
}
