//! Tests of [`InProcess`]: exact results of every collective, many collectives in a row,
//! simulated hosts, and failures (panics, early returns, mismatched collectives, abort)
//! that must end the run rather than hang it.

use std::panic::{self, AssertUnwindSafe};

use super::*;
use crate::{CommExt, Topology};

fn one_host(_rank: u32) -> String {
    "node-a".to_string()
}

/// Runs `f` expecting `InProcess::run` to panic, and returns the panic's message.
fn run_expecting_panic<F>(n: u32, f: F) -> String
where
    F: Fn(&dyn Comm) + Sync,
{
    let caught = panic::catch_unwind(AssertUnwindSafe(|| InProcess::run(n, one_host, f)));
    match caught {
        Ok(_) => panic!("InProcess::run returned, but a rank was expected to fail"),
        Err(payload) => panic_message(payload.as_ref()),
    }
}

#[test]
fn results_come_back_indexed_by_rank() {
    let got = InProcess::run(4, one_host, |comm| (comm.rank(), comm.size()));
    assert_eq!(got, vec![(0, 4), (1, 4), (2, 4), (3, 4)]);
}

#[test]
fn a_single_rank_needs_no_peers() {
    let got = InProcess::run(1, one_host, |comm| {
        comm.barrier();
        (
            comm.all_gather_bytes(b"x"),
            comm.broadcast_bytes(0, b"y"),
            comm.all_ok(false),
            comm.all_max(7),
            comm.all_sum(7),
        )
    });
    assert_eq!(got, vec![(vec![b"x".to_vec()], b"y".to_vec(), false, 7, 7)]);
}

#[test]
fn all_gather_orders_by_rank_with_different_lengths() {
    let got = InProcess::run(4, one_host, |comm| {
        // Rank 0 sends nothing, rank r sends r copies of r.
        let mine = vec![comm.rank() as u8; comm.rank() as usize];
        comm.all_gather_bytes(&mine)
    });
    let expected = vec![vec![], vec![1], vec![2, 2], vec![3, 3, 3]];
    for (rank, all) in got.iter().enumerate() {
        assert_eq!(all, &expected, "rank {rank}");
    }
}

#[test]
fn broadcast_from_a_non_zero_root_ignores_the_others_data() {
    let got = InProcess::run(4, one_host, |comm| {
        let mine = format!("from rank {}", comm.rank());
        comm.broadcast_bytes(2, mine.as_bytes())
    });
    assert_eq!(got, vec![b"from rank 2".to_vec(); 4]);
}

#[test]
fn all_ok_is_false_everywhere_when_one_rank_says_false() {
    let got = InProcess::run(4, one_host, |comm| {
        (comm.all_ok(true), comm.all_ok(comm.rank() != 3))
    });
    assert_eq!(got, vec![(true, false); 4]);
}

#[test]
fn all_max_and_all_sum_are_exact() {
    let got = InProcess::run(4, one_host, |comm| {
        let value = u64::from(comm.rank()) * 10 + 3; // 3, 13, 23, 33
        (comm.all_max(value), comm.all_sum(value))
    });
    assert_eq!(got, vec![(33, 72); 4]);
}

#[test]
fn all_sum_wraps_like_mpi() {
    let got = InProcess::run(2, one_host, |comm| comm.all_sum(u64::MAX));
    assert_eq!(got, vec![u64::MAX - 1; 2]);
}

#[test]
fn hundreds_of_consecutive_collectives_never_mix() {
    // Every round's values depend on the round, so a rank reading a neighbour round's
    // result, or contributions from two rounds mixing, changes some answer.
    let rounds: u64 = 300;
    let got = InProcess::run(4, one_host, |comm| {
        let rank = u64::from(comm.rank());
        let mut checked = 0u64;
        for round in 0..rounds {
            comm.barrier();
            let all = comm.all_gather_bytes(&(round * 100 + rank).to_le_bytes());
            let expected: Vec<Vec<u8>> = (0..4u64)
                .map(|r| (round * 100 + r).to_le_bytes().to_vec())
                .collect();
            assert_eq!(all, expected, "round {round}");
            let root = (round % 4) as u32;
            let sent = comm.broadcast_bytes(root, &[round as u8, rank as u8]);
            assert_eq!(sent, vec![round as u8, root as u8], "round {round}");
            assert_eq!(comm.all_max(round + rank), round + 3, "round {round}");
            assert_eq!(comm.all_sum(round + rank), 4 * round + 6, "round {round}");
            assert_eq!(
                comm.all_ok(round % 7 != rank),
                round % 7 > 3,
                "round {round}"
            );
            checked += 1;
        }
        checked
    });
    assert_eq!(got, vec![rounds; 4]);
}

#[test]
fn topology_of_two_simulated_hosts() {
    let hosts = |rank: u32| format!("node-{}", rank / 2);
    let got = InProcess::run(4, hosts, |comm| (comm.host().to_string(), comm.topology()));
    let topology: &Topology = &got[0].1;
    assert!(
        got.iter().all(|(_, t)| t == topology),
        "every rank sees one topology"
    );
    assert_eq!(got[3].0, "node-1");
    assert_eq!(topology.size(), 4);
    assert_eq!(topology.hosts(), vec!["node-0", "node-1"]);
    assert_eq!(topology.ranks_per_host(), 2);
    assert_eq!(topology.host_leader("node-0"), Some(0));
    assert_eq!(topology.host_leader("node-1"), Some(2));
    assert_eq!(topology.host_leader("node-2"), None);
}

#[test]
fn typed_collectives_round_trip() {
    let got = InProcess::run(3, one_host, |comm| {
        let gathered = comm
            .all_gather(&(comm.rank(), format!("r{}", comm.rank())))
            .expect("gather decodes");
        let spec = comm
            .broadcast(1, &vec![comm.rank(); 2])
            .expect("broadcast decodes");
        (gathered, spec)
    });
    let expected = vec![
        (0, "r0".to_string()),
        (1, "r1".to_string()),
        (2, "r2".to_string()),
    ];
    for (gathered, spec) in got {
        assert_eq!(gathered, expected);
        assert_eq!(spec, vec![1, 1]);
    }
}

#[test]
fn a_panicking_rank_does_not_hang_the_others() {
    // Rank 1 panics before the barrier the others wait in; the test finishing at all is
    // the proof that nobody hangs, and the original message comes back.
    let message = run_expecting_panic(4, |comm| {
        if comm.rank() == 1 {
            panic!("disk on fire");
        }
        comm.barrier();
        comm.all_sum(1);
    });
    assert_eq!(message, "disk on fire");
}

#[test]
fn a_panic_late_in_a_run_stops_the_others_in_their_next_collective() {
    let message = run_expecting_panic(3, |comm| {
        for round in 0..50 {
            if comm.rank() == 2 && round == 40 {
                panic!("rank 2 gave up in round {round}");
            }
            comm.all_max(round);
        }
    });
    assert_eq!(message, "rank 2 gave up in round 40");
}

#[test]
fn a_rank_returning_early_does_not_hang_the_others() {
    let message = run_expecting_panic(3, |comm| {
        if comm.rank() != 0 {
            comm.barrier();
        }
    });
    assert!(
        message.contains("rank 0 returned while rank") && message.contains("Barrier"),
        "{message}"
    );
}

#[test]
fn mismatched_collectives_are_named() {
    let message = run_expecting_panic(2, |comm| {
        if comm.rank() == 0 {
            comm.barrier();
        } else {
            comm.all_sum(1);
        }
    });
    assert!(message.contains("while other ranks are in"), "{message}");
}

#[test]
fn broadcasts_from_different_roots_are_mismatched() {
    let message = run_expecting_panic(2, |comm| {
        comm.broadcast_bytes(comm.rank(), b"mine");
    });
    assert!(message.contains("Broadcast"), "{message}");
}

#[test]
fn abort_panics_with_its_code_and_stops_the_others() {
    let message = run_expecting_panic(3, |comm| {
        if comm.rank() == 2 {
            comm.abort(3);
        }
        comm.barrier();
    });
    assert!(message.contains("rank 2 called abort(3)"), "{message}");
}

#[test]
#[should_panic(expected = "at least one rank")]
fn zero_ranks_is_refused() {
    InProcess::run(0, one_host, |_| ());
}

#[test]
fn reduce_sums_and_takes_maxima_element_wise() {
    let got = InProcess::run(3, one_host, |comm| {
        let r = u64::from(comm.rank());
        comm.reduce(&[r, 10, u64::MAX], &[r * 7, 5 - r], None, &|_| {
            unreachable!("no deadline")
        })
    });
    for (sums, maxes) in got {
        // 0+1+2, 3x10, and a sum that wraps as MPI_SUM over uint64 does.
        assert_eq!(sums, vec![3, 30, u64::MAX.wrapping_mul(3)]);
        assert_eq!(maxes, vec![14, 5]);
    }
}

#[test]
fn gather_reaches_the_root_only() {
    let got = InProcess::run(4, one_host, |comm| {
        let mine = vec![comm.rank() as u8; comm.rank() as usize];
        comm.gather_bytes(2, &mine)
    });
    assert_eq!(got[2], vec![vec![], vec![1], vec![2, 2], vec![3, 3, 3]]);
    for rank in [0, 1, 3] {
        assert!(got[rank].is_empty(), "rank {rank} received {:?}", got[rank]);
    }
    let typed = InProcess::run(3, one_host, |comm| comm.gather(0, &comm.rank()).unwrap());
    assert_eq!(typed, vec![vec![0, 1, 2], vec![], vec![]]);
}

#[test]
fn gather_and_reduce_roots_must_agree() {
    let msg = run_expecting_panic(2, |comm| {
        comm.gather_bytes(comm.rank(), b"x");
    });
    assert!(msg.contains("Gather"), "{msg}");
}

/// What the counting meeting says each rank received: all of an all-gather, a gather
/// at its root only, one record of a reduction whatever the number of ranks.
#[test]
fn received_bytes_are_counted_as_mpi_delivers_them() {
    for n in [2u32, 8, 32] {
        let (_, received) = InProcess::run_counted(n, one_host, |comm| {
            comm.reduce(&[1, 2, 3], &[4, 5], None, &|_| unreachable!());
        });
        assert!(received.iter().all(|&r| r == 40), "n={n}: {received:?}");
        let (_, received) = InProcess::run_counted(n, one_host, |comm| {
            comm.gather_bytes(0, &[7u8; 100]);
        });
        assert_eq!(received[0], 100 * u64::from(n));
        assert!(received[1..].iter().all(|&r| r == 0), "{received:?}");
        let (_, received) = InProcess::run_counted(n, one_host, |comm| {
            comm.all_gather_bytes(&[7u8; 100]);
        });
        assert!(received.iter().all(|&r| r == 100 * u64::from(n)));
    }
}

/// Typed collectives travel as CBOR: a latency histogram crosses as its HdrHistogram
/// bytes and arrives whole.
#[test]
fn a_histogram_crosses_to_the_root_whole() {
    use iolab_core::histogram::LatencyHistogram;
    let got = InProcess::run(3, one_host, |comm| {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000 * (u64::from(comm.rank()) + 1));
        }
        let mut seen = Vec::new();
        comm.gather_each(0, &h, |rank, theirs: LatencyHistogram| {
            seen.push((rank, theirs.summary()));
        })
        .unwrap();
        (h.summary(), seen)
    });
    let seen = &got[0].1;
    assert_eq!(seen.len(), 3);
    for (rank, summary) in seen {
        assert_eq!(*summary, got[*rank as usize].0);
    }
    assert!(got[1].1.is_empty() && got[2].1.is_empty());
}

/// Messages arrive at their rank only, in order per sender and tag, from a rank or from
/// any, and a tag never takes another tag's message.
#[test]
fn messages_reach_their_rank_in_order_by_tag() {
    let got = InProcess::run(3, one_host, |comm| {
        let m = comm.messages().expect("InProcess offers messages");
        if comm.rank() != 0 {
            m.send(0, 1, &[comm.rank() as u8, 1]);
            m.send(0, 1, &[comm.rank() as u8, 2]);
            m.send(0, 2, b"other tag");
        }
        comm.barrier();
        if comm.rank() != 0 {
            return Vec::new();
        }
        let mut seen = vec![m.try_receive(Some(2), 1), m.try_receive(Some(2), 1)];
        seen.push(m.try_receive(Some(2), 1));
        while let Some(x) = m.try_receive(None, 1) {
            seen.push(Some(x));
        }
        // From any rank, the two senders' messages come in the order they arrived,
        // which the threads decide: compared in rank order.
        let mut any = vec![m.try_receive(None, 2), m.try_receive(None, 2)];
        any.sort();
        seen.extend(any);
        seen.push(m.try_receive(None, 2));
        seen
    });
    assert_eq!(
        got[0],
        vec![
            Some((2, vec![2, 1])),
            Some((2, vec![2, 2])),
            None,
            Some((1, vec![1, 1])),
            Some((1, vec![1, 2])),
            Some((1, b"other tag".to_vec())),
            Some((2, b"other tag".to_vec())),
            None,
        ]
    );
}
