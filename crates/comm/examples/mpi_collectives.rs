//! Runs every collective of `iolab_comm::Mpi` and checks the exact results; under
//! `mpirun -np N` this is the end-to-end check of iolab's MPI layer (tests/mpi.rs runs it
//! with N = 4). `--panic-rank R` and `--abort-rank R` make rank R fail midway instead, to
//! show that the whole job then ends rather than hangs.
//! Exit codes: 0 every result right, 1 a result wrong, 2 bad arguments or MPI did not start.

use std::process::ExitCode;

use iolab_comm::{Comm, CommExt, Mpi, detect_launch, launched_by_mpi};

/// What this run does.
enum Mode {
    Check,
    /// The rank panics between two barriers.
    PanicRank(u32),
    /// The rank calls `Comm::abort(3)` between two barriers.
    AbortRank(u32),
}

fn parse_mode(args: &[String]) -> Result<Mode, String> {
    let rank = |value: Option<&String>| -> Result<u32, String> {
        value
            .ok_or("a rank number must follow")?
            .parse::<u32>()
            .map_err(|e| format!("not a rank number: {e}"))
    };
    match args.first().map(String::as_str) {
        None => Ok(Mode::Check),
        Some("--panic-rank") => Ok(Mode::PanicRank(rank(args.get(1))?)),
        Some("--abort-rank") => Ok(Mode::AbortRank(rank(args.get(1))?)),
        Some(other) => Err(format!(
            "unknown argument {other:?}; use no argument, --panic-rank R or --abort-rank R"
        )),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match parse_mode(&args) {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("mpi_collectives: {e}");
            return ExitCode::from(2);
        }
    };
    let comm = match Mpi::init() {
        Ok(comm) => comm,
        Err(e) => {
            eprintln!("mpi_collectives: {e}");
            return ExitCode::from(2);
        }
    };

    match mode {
        Mode::Check => {}
        Mode::PanicRank(failing) => {
            comm.barrier();
            if comm.rank() == failing {
                panic!("rank {failing} panics on purpose (--panic-rank)");
            }
            comm.barrier(); // the others wait here for a rank that never comes
            eprintln!(
                "mpi_collectives: rank {} passed a barrier that rank {failing} never reached",
                comm.rank()
            );
            return ExitCode::from(1);
        }
        Mode::AbortRank(failing) => {
            comm.barrier();
            if comm.rank() == failing {
                eprintln!("mpi_collectives: rank {failing} aborts on purpose (--abort-rank)");
                comm.abort(3);
            }
            comm.barrier();
            eprintln!(
                "mpi_collectives: rank {} passed a barrier that rank {failing} never reached",
                comm.rank()
            );
            return ExitCode::from(1);
        }
    }

    let mut check = Check::new(comm.rank());
    check_identity(&comm, &mut check);
    check_gather(&comm, &mut check);
    check_broadcast(&comm, &mut check);
    check_reductions(&comm, &mut check);
    check_typed(&comm, &mut check);
    check_many_rounds(&comm, &mut check);
    check_messages(&comm, &mut check);

    // Agree on the outcome so every rank exits alike, as the engine does before a gather.
    let all_right = comm.all_ok(check.failures == 0);
    let hosts = comm.topology().hosts().len(); // a collective: every rank calls it
    if all_right && comm.rank() == 0 {
        println!(
            "mpi_collectives: every collective right on {} ranks over {hosts} host(s)",
            comm.size()
        );
    }
    if all_right {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Counts and reports wrong results (every rank checks its own view).
struct Check {
    rank: u32,
    failures: u32,
}

impl Check {
    fn new(rank: u32) -> Self {
        Check { rank, failures: 0 }
    }

    fn equal<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        if got != want {
            self.failures += 1;
            let text = |v: &T| {
                let mut s = format!("{v:?}");
                s.truncate(200);
                s
            };
            eprintln!(
                "mpi_collectives: rank {}: {what}: got {}, want {}",
                self.rank,
                text(&got),
                text(&want)
            );
        }
    }
}

fn check_identity(comm: &dyn Comm, check: &mut Check) {
    check.equal("rank < size", comm.rank() < comm.size(), true);
    if comm.size() > 1 {
        check.equal(
            "launched_by_mpi() with several ranks",
            launched_by_mpi(),
            true,
        );
    }
    if let Some(size) = detect_launch().and_then(|launch| launch.size) {
        check.equal("launcher's size", size, comm.size());
    }
    for _ in 0..3 {
        comm.barrier();
    }
}

/// Rank r's gather contribution: `len` bytes that depend on the rank and the position.
fn pattern(rank: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (rank as usize * 7 + i) as u8).collect()
}

fn check_gather(comm: &dyn Comm, check: &mut Check) {
    let size = comm.size();
    // Different lengths per rank, rank 0 sending nothing.
    let all = comm.all_gather_bytes(&pattern(comm.rank(), comm.rank() as usize * 3));
    let want: Vec<Vec<u8>> = (0..size).map(|r| pattern(r, r as usize * 3)).collect();
    check.equal("all_gather_bytes of different lengths", all, want);

    // Around a MiB each, to go beyond MPI's eager limits.
    let big = |r: u32| (1 << 20) + r as usize * 4099;
    let all = comm.all_gather_bytes(&pattern(comm.rank(), big(comm.rank())));
    let want: Vec<Vec<u8>> = (0..size).map(|r| pattern(r, big(r))).collect();
    check.equal("all_gather_bytes of about 1 MiB each", all == want, true);
}

fn check_broadcast(comm: &dyn Comm, check: &mut Check) {
    let last = comm.size() - 1;
    // The others pass data of their own, which must be ignored.
    let data = if comm.rank() == last {
        pattern(last, 1000 + last as usize)
    } else {
        pattern(comm.rank(), 5)
    };
    let got = comm.broadcast_bytes(last, &data);
    check.equal(
        "broadcast_bytes from the last rank",
        got,
        pattern(last, 1000 + last as usize),
    );

    let got = comm.broadcast_bytes(0, if comm.rank() == 0 { b"" } else { b"not me" });
    check.equal("broadcast_bytes of nothing from rank 0", got, Vec::new());
}

fn check_reductions(comm: &dyn Comm, check: &mut Check) {
    let rank = u64::from(comm.rank());
    let size = u64::from(comm.size());
    check.equal("all_ok(true)", comm.all_ok(true), true);
    check.equal(
        "all_ok(false on the last rank)",
        comm.all_ok(rank + 1 != size),
        false,
    );
    check.equal("all_max", comm.all_max(rank * 10 + 3), (size - 1) * 10 + 3);
    check.equal(
        "all_max near u64::MAX",
        comm.all_max(u64::MAX - rank),
        u64::MAX,
    );
    check.equal(
        "all_sum",
        comm.all_sum(rank * 10 + 3),
        5 * size * (size - 1) + 3 * size,
    );
    check.equal("all_sum beyond 32 bits", comm.all_sum(1 << 40), size << 40);
}

fn check_typed(comm: &dyn Comm, check: &mut Check) {
    match comm.all_gather(&(comm.rank(), comm.host().to_string())) {
        Ok(all) => {
            let ranks: Vec<u32> = all.iter().map(|(r, _)| *r).collect();
            check.equal("all_gather order", ranks, (0..comm.size()).collect());
        }
        Err(e) => check.equal("all_gather decodes", e.to_string(), String::new()),
    }
    let root = comm.size() / 2;
    match comm.broadcast(root, &vec![format!("spec of rank {}", comm.rank())]) {
        Ok(got) => check.equal("broadcast", got, vec![format!("spec of rank {root}")]),
        Err(e) => check.equal("broadcast decodes", e.to_string(), String::new()),
    }
    let topology = comm.topology();
    check.equal("topology size", topology.size(), comm.size());
    let leader = topology
        .hosts()
        .first()
        .and_then(|h| topology.host_leader(h));
    check.equal("first host's leader", leader, Some(0));
}

/// Many small collectives in a row, with values that change every round, so results of
/// neighbouring rounds cannot be confused.
fn check_many_rounds(comm: &dyn Comm, check: &mut Check) {
    let rank = u64::from(comm.rank());
    let size = u64::from(comm.size());
    for round in 0..200u64 {
        comm.barrier();
        let root = (round % size) as u32;
        let got = comm.broadcast_bytes(root, &(round * 1000 + rank).to_le_bytes());
        check.equal(
            "round broadcast",
            got,
            (round * 1000 + u64::from(root)).to_le_bytes().to_vec(),
        );
        check.equal(
            "round all_max",
            comm.all_max(round + rank),
            round + size - 1,
        );
        check.equal("round all_sum", comm.all_sum(round), round * size);
        let all = comm.all_gather_bytes(&[round as u8, rank as u8]);
        let want: Vec<Vec<u8>> = (0..size).map(|r| vec![round as u8, r as u8]).collect();
        check.equal("round all_gather", all, want);
    }
}

/// Point-to-point messages from a worker thread while the main thread makes collectives,
/// as pfind's walk uses them: every rank sends a small and a 1 MiB message to the next
/// rank and takes the previous rank's, polling; in order, whole, from the right rank.
/// Even ranks send first while odd ranks take, then the other way round: a large MPI_Send
/// returns only once its receiver takes it, so a ring of ranks all sending first would
/// wait for each other (pfind sends large messages only to a rank that asked and polls).
fn check_messages(comm: &dyn Comm, check: &mut Check) {
    let Some(messages) = comm.messages() else {
        check.equal("messages offered (MPI_THREAD_MULTIPLE)", false, true);
        return;
    };
    let (rank, size) = (comm.rank(), comm.size());
    let next = (rank + 1) % size;
    let previous = (rank + size - 1) % size;
    let pattern = |from: u32| -> Vec<u8> {
        (0..1u32 << 20)
            .map(|i| (i % 251) as u8 ^ from as u8)
            .collect()
    };
    let send = || {
        messages.send(next, 7, &[rank as u8]);
        messages.send(next, 7, &pattern(rank));
    };
    let take = || {
        let mut got = Vec::new();
        while got.len() < 2 {
            match messages.try_receive(None, 7) {
                Some(m) => got.push(m),
                None => std::thread::yield_now(),
            }
        }
        got
    };
    let received = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            if rank % 2 == 0 {
                send();
                take()
            } else {
                let got = take();
                send();
                got
            }
        });
        // Collectives go on beside the worker's messages.
        for _ in 0..20 {
            comm.barrier();
        }
        worker.join().unwrap_or_default()
    });
    check.equal(
        "messages from the previous rank, in order",
        received,
        vec![
            (previous, vec![previous as u8]),
            (previous, pattern(previous)),
        ],
    );
    check.equal("no message left over", messages.try_receive(None, 7), None);
}
