//! `iolab net`: the network alone, as BeeGFS's NetBench measures it. Every rank opens one
//! TCP listener and shares its address through the communicator; [`links`] decides who
//! streams to whom (pairs i and i+size/2, or a ring), each direction in its own phase;
//! senders stream blocks over `--streams` connections and receivers count what arrives.
//! A pair's throughput is the bytes its receiver got over the time of its slowest
//! stream. One process alone pairs two of its own threads over loopback, so the
//! command still runs, but then it measures the loopback interface, not a network.

mod results;
mod socket;

use std::net::TcpListener;
use std::time::Duration;

use iolab_comm::{Comm, CommExt};
use iolab_core::result::{ErrorRecord, OpKind, PhaseResult};
use iolab_core::spec::{NetPattern, NetSpec};
use serde::{Deserialize, Serialize};

use super::analysis::TargetAnalysis;
use iolab_engine::{Clock, EngineError, Env, agree, check_ranks_agree};
use iolab_engine::{UnitMember, UnitPhaseSpec, UnitWorker, run_unit_phase};
use results::{finish, link_meta, meta};
use socket::{Hello, Stream};

/// One stream direction: `sender` sends to `receiver`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub sender: u32,
    pub receiver: u32,
}

/// The phases of a run: a name ("forward", "reverse", "loopback") and its links.
pub fn links(size: u32, pattern: NetPattern) -> Vec<(&'static str, Vec<Link>)> {
    let link = |sender, receiver| Link { sender, receiver };
    if size <= 1 {
        return vec![("loopback", vec![link(0, 0)])];
    }
    let (forward, reverse): (Vec<Link>, Vec<Link>) = match pattern {
        NetPattern::Pairs => {
            let half = size / 2;
            (0..half)
                .map(|i| (link(i, i + half), link(i + half, i)))
                .unzip()
        }
        NetPattern::Ring => (0..size)
            .map(|i| (link(i, (i + 1) % size), link(i, (i + size - 1) % size)))
            .unzip(),
    };
    if pattern == NetPattern::Ring && size == 2 {
        // A ring of two already streams both ways at once.
        return vec![("forward", forward)];
    }
    vec![("forward", forward), ("reverse", reverse)]
}

/// How other ranks reach a rank.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Endpoint {
    host: String,
    address: String,
    port: u16,
}

/// One direction of a run.
#[derive(Debug)]
pub struct NetPhase {
    pub direction: String,
    /// The direction as a whole; statistics in `extra`, operations in the pairs' phases.
    pub summary: PhaseResult,
    /// One phase per link ("net 0->2").
    pub pairs: Vec<PhaseResult>,
    pub analysis: Option<TargetAnalysis>,
}

/// Runs every direction of the network benchmark. Collective.
pub fn run_net<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    spec: &NetSpec,
) -> Result<Vec<NetPhase>, EngineError> {
    let comm = env.comm;
    spec.validate()?;
    check_ranks_agree(comm, "the net spec", spec)?;
    let (listener, endpoints) = open_endpoint(comm, spec)?;
    let mut phases = Vec::new();
    for (p, (direction, links)) in links(comm.size(), spec.pattern).into_iter().enumerate() {
        let ctx = Direction {
            spec,
            listener: &listener,
            endpoints: &endpoints,
            phase: p as u32,
            direction,
            links: &links,
        };
        let phase = run_direction(env, clock, &ctx)?;
        let interrupted = phase.summary.interrupted;
        phases.push(phase);
        if !comm.all_ok(!interrupted) {
            break;
        }
    }
    Ok(phases)
}

/// Opens this rank's listener and learns every rank's endpoint. Collective.
fn open_endpoint(
    comm: &dyn Comm,
    spec: &NetSpec,
) -> Result<(TcpListener, Vec<Endpoint>), EngineError> {
    let topo = comm.topology();
    // Ranks sharing a host and a fixed --port take the ports after it.
    let on_host = topo
        .ranks
        .iter()
        .take(comm.rank() as usize)
        .filter(|r| r.host == comm.host())
        .count() as u16;
    let port = if spec.port == 0 {
        0
    } else {
        spec.port.saturating_add(on_host)
    };
    let listener = agree(
        comm,
        socket::listen(port).map_err(|e| {
            EngineError::Setup(format!(
                "rank {} on {} cannot listen on TCP port {port}: {e}; choose another --port",
                comm.rank(),
                comm.host()
            ))
        }),
    )?;
    let mine = Endpoint {
        host: comm.host().to_string(),
        address: spec
            .address
            .replace("{host}", comm.host())
            .replace("{rank}", &comm.rank().to_string()),
        port: listener.local_addr().map(|a| a.port()).unwrap_or(port),
    };
    let endpoints = comm
        .all_gather(&mine)
        .map_err(|e| EngineError::Setup(e.to_string()))?;
    Ok((listener, endpoints))
}

/// Everything one direction's workers share.
struct Direction<'a> {
    spec: &'a NetSpec,
    listener: &'a TcpListener,
    endpoints: &'a [Endpoint],
    phase: u32,
    direction: &'static str,
    links: &'a [Link],
}

#[derive(Clone, Copy)]
enum Role {
    Send(usize),
    Receive(usize),
}

fn run_direction<C: Clock>(
    env: &Env<'_>,
    clock: &C,
    d: &Direction<'_>,
) -> Result<NetPhase, EngineError> {
    let comm = env.comm;
    let me = comm.rank();
    let mut roles = Vec::new();
    for (l, link) in d.links.iter().enumerate() {
        for _ in 0..d.spec.streams {
            if link.receiver == me {
                roles.push(Role::Receive(l));
            }
            if link.sender == me {
                roles.push(Role::Send(l));
            }
        }
    }
    // A link is its receiving streams' unit; its sending streams add their errors.
    let members: Vec<UnitMember> = roles
        .iter()
        .map(|r| match *r {
            Role::Receive(l) => UnitMember {
                unit: l as u32,
                timed: true,
            },
            Role::Send(l) => UnitMember {
                unit: l as u32,
                timed: false,
            },
        })
        .collect();
    let unit_meta = |unit: u32| link_meta(d, d.links[unit as usize]);
    let spec = UnitPhaseSpec {
        meta: meta(format!("net-{}", d.direction), d),
        unit_meta: &unit_meta,
        members: &members,
    };
    let phase = run_unit_phase(env, clock, &spec, |worker| {
        stream_worker(comm, clock, d, roles[worker.index()], worker)
    })?;
    Ok(finish(comm, d, phase))
}

/// Connects (sender) or accepts (receiver) the stream of one worker.
fn open_stream(
    comm: &dyn Comm,
    d: &Direction<'_>,
    link: Link,
    sending: bool,
) -> Result<std::net::TcpStream, String> {
    let me = comm.rank();
    let timeout = Duration::from_nanos(d.spec.timeout.nanos().0);
    let hello = Hello {
        sender: link.sender,
        phase: d.phase,
    };
    if sending {
        let peer = &d.endpoints[link.receiver as usize];
        socket::peer_addresses(peer.host == comm.host(), &peer.address, peer.port)
            .and_then(|addrs| socket::connect(&addrs, hello, timeout))
            .map_err(|e| {
                format!(
                    "rank {me} cannot connect to rank {} at {}:{}: {e}; set --address to a name or IP both hosts reach",
                    link.receiver, peer.address, peer.port
                )
            })
    } else {
        let mine = &d.endpoints[me as usize];
        socket::accept(d.listener, hello, timeout).map_err(|e| {
            format!(
                "rank {me} got no connection from rank {} within {}: {e}; check that {}:{} is reachable (firewall?) or set --address",
                link.sender, d.spec.timeout, mine.address, mine.port
            )
        })
    }
}

fn stream_worker<C: Clock>(
    comm: &dyn Comm,
    clock: &C,
    d: &Direction<'_>,
    role: Role,
    worker: &mut UnitWorker<'_>,
) -> Result<u64, String> {
    let (l, sending) = match role {
        Role::Send(l) => (l, true),
        Role::Receive(l) => (l, false),
    };
    let link = d.links[l];
    let stream = match open_stream(comm, d, link, sending) {
        Ok(s) => s,
        Err(e) => {
            worker.wait_for_start(false);
            return Err(e);
        }
    };
    let s = Stream {
        stream,
        clock,
        block_size: d.spec.block_size.get() as usize,
        size: d.spec.runtime.is_none().then_some(d.spec.size.get()),
        runtime: d.spec.runtime.map(|r| r.nanos()),
        error: ErrorRecord {
            rank: comm.rank(),
            host: comm.host().to_string(),
            op: OpKind::Transfer,
            path: format!("rank {} -> rank {}", link.sender, link.receiver),
            offset: None,
            errno: None,
            message: format!(
                "{} stream from rank {} to rank {}",
                if sending { "sending" } else { "receiving" },
                link.sender,
                link.receiver
            ),
        },
    };
    Ok(if sending {
        socket::send(s, worker)
    } else {
        socket::receive(s, worker)
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
