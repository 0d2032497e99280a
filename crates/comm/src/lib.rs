//! iolab-comm: coordination between the processes of one run. [`Comm`] is the only
//! view the engine has of its peers (rank, size, barrier, gather, broadcast, agreement);
//! [`SingleProcess`] is the one-rank case, [`InProcess`] runs N ranks as threads for
//! tests, and `Mpi` (cargo feature `mpi`) speaks MPI through rsmpi. [`launched_by_mpi`]
//! tells which to use. [`Messages`] are the point-to-point exception for a worker that
//! trades work with its peers while it runs. No other crate knows MPI exists.

#![forbid(unsafe_code)]

mod error;
mod in_process;
mod launch;
#[cfg(feature = "mpi")]
mod mpi_comm;
mod poll;
mod single;

pub use error::CommError;
pub use in_process::InProcess;
pub use launch::{Launch, LauncherKind, detect_launch, launched_by_mpi};
#[cfg(feature = "mpi")]
pub use mpi_comm::Mpi;
pub use single::SingleProcess;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Where a rank runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    pub host: String,
}

/// Ranks that stopped answering in a collective with a deadline (see [`Comm::reduce`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Silence {
    /// The silent ranks, known on rank 0 (elsewhere empty, or rank 0 when it is the one
    /// that went silent).
    pub ranks: Vec<RankInfo>,
    /// How long this rank waited.
    pub waited: std::time::Duration,
}

/// How ranks are spread over hosts, as every rank sees it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Topology {
    /// Indexed by rank.
    pub ranks: Vec<RankInfo>,
}

impl Topology {
    pub fn size(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Distinct hosts in order of their lowest rank.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        for r in &self.ranks {
            if !hosts.contains(&r.host) {
                hosts.push(r.host.clone());
            }
        }
        hosts
    }

    /// The number of ranks on the host with the most ranks.
    pub fn ranks_per_host(&self) -> u32 {
        self.hosts()
            .iter()
            .map(|h| self.ranks.iter().filter(|r| &r.host == h).count() as u32)
            .max()
            .unwrap_or(1)
    }

    /// The number of ranks on rank 0's host (IOR's and mdtest's numTasksOnNode0).
    pub fn ranks_on_first_host(&self) -> u32 {
        let Some(first) = self.ranks.first() else {
            return 1;
        };
        self.ranks.iter().filter(|r| r.host == first.host).count() as u32
    }

    /// The lowest rank on `host`.
    pub fn host_leader(&self, host: &str) -> Option<u32> {
        self.ranks.iter().find(|r| r.host == host).map(|r| r.rank)
    }
}

/// Collective operations over all ranks of a run. Every rank must call the same
/// collectives in the same order; a call blocks until all ranks have made it.
///
/// Rule: never enter a collective after a step that may fail on some ranks without first
/// agreeing through [`Comm::all_ok`] (or gathering each rank's outcome), so one failing
/// rank stops all ranks instead of leaving them waiting.
pub trait Comm: Send + Sync {
    fn rank(&self) -> u32;
    fn size(&self) -> u32;
    /// This rank's host name.
    fn host(&self) -> &str;
    /// Blocks until every rank has reached it.
    fn barrier(&self);
    /// Every rank receives every rank's bytes, indexed by rank.
    fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// Every rank receives `root`'s bytes (`data` is ignored on the other ranks).
    fn broadcast_bytes(&self, root: u32, data: &[u8]) -> Vec<u8>;
    /// `root` receives every rank's bytes, indexed by rank; the other ranks receive
    /// nothing (an empty list). What only `root` prints or stores travels this way, so the
    /// other ranks' traffic does not grow with the job (MPI_Gatherv).
    fn gather_bytes(&self, root: u32, mine: &[u8]) -> Vec<Vec<u8>>;
    /// True on every rank if `ok` was true on every rank.
    fn all_ok(&self, ok: bool) -> bool;
    /// The maximum of `value` over all ranks, on every rank.
    fn all_max(&self, value: u64) -> u64;
    /// The sum of `value` over all ranks, on every rank.
    fn all_sum(&self, value: u64) -> u64;
    /// Element-wise sums and maxima of fixed-size records over all ranks, on every rank:
    /// what a running phase needs to know of the others, in constant bytes per rank
    /// whatever the job size (MPI_Allreduce; every rank passes slices of equal lengths).
    ///
    /// With `deadline`, a rank that has not joined within it is taken as stalled (a
    /// stopped process, a node gone): `on_silence` runs on every rank still alive (on
    /// rank 0 with the silent ranks named, after a roll call), then the job is aborted
    /// with exit code 1 and this call never returns. The default implementation, used by
    /// [`SingleProcess`] and [`InProcess`], gathers and has no deadline.
    fn reduce(
        &self,
        sums: &[u64],
        maxes: &[u64],
        deadline: Option<std::time::Duration>,
        on_silence: &dyn Fn(&Silence),
    ) -> (Vec<u64>, Vec<u64>) {
        let _ = (deadline, on_silence);
        let mine = crate::record(sums, maxes);
        combine(&self.all_gather_bytes(&mine), sums.len(), maxes.len())
    }
    /// The last meeting of a rank that ends with an error: waits until every rank has
    /// arrived (they ended with an error too, all alike); if they have not within
    /// `deadline` (they went on without this rank, or wait for it in another
    /// collective), ends the whole job with `code` rather than leave them waiting.
    fn end_within(&self, deadline: std::time::Duration, code: i32) {
        let _ = (deadline, code);
        self.barrier();
    }
    /// Ends the whole job at once (every rank of every host) after an unrecoverable
    /// error; used only where agreement is impossible. Does not return.
    fn abort(&self, code: i32) -> !;
    /// Point-to-point messages between ranks, where this run can send them from a worker
    /// thread (under MPI: when the library gives MPI_THREAD_MULTIPLE); None otherwise.
    fn messages(&self) -> Option<&dyn Messages> {
        None
    }
}

/// Tagged point-to-point messages between ranks, for a worker that trades work with its
/// peers while it runs (pfind's work stealing). Unlike the collectives they may be used
/// from any thread, and no rank waits for the others: `try_receive` returns at once,
/// `send` once the message is on its way (under MPI a large one waits until the
/// receiver takes it, as MPI_Send does: the receiver must be polling). Messages from one
/// rank with one tag arrive in the order they were sent. Tags are the caller's; they
/// never meet the collectives.
pub trait Messages: Send + Sync {
    fn send(&self, to: u32, tag: u16, data: &[u8]);
    /// A message with `tag` from `from` (from any rank with None) that has arrived, with
    /// its sender, oldest first.
    fn try_receive(&self, from: Option<u32>, tag: u16) -> Option<(u32, Vec<u8>)>;
}

/// Typed collectives on top of the byte-level ones, in CBOR (RFC 8949) on the wire: a
/// compact binary form that keeps every serde attribute of the types (latency histograms
/// travel as their HdrHistogram V2 bytes).
pub trait CommExt: Comm {
    fn all_gather<T: Serialize + DeserializeOwned>(&self, mine: &T) -> Result<Vec<T>, CommError> {
        let bytes = encode(mine)?;
        self.all_gather_bytes(&bytes)
            .iter()
            .enumerate()
            .map(|(rank, b)| decode(rank as u32, b))
            .collect()
    }

    /// Every rank's value at `root` (indexed by rank); an empty list on the other ranks.
    fn gather<T: Serialize + DeserializeOwned>(
        &self,
        root: u32,
        mine: &T,
    ) -> Result<Vec<T>, CommError> {
        let bytes = encode(mine)?;
        self.gather_bytes(root, &bytes)
            .iter()
            .enumerate()
            .map(|(rank, b)| decode(rank as u32, b))
            .collect()
    }

    /// Every rank's value at `root`, handed to `each` one at a time in rank order and
    /// decoded only then, so that `root` need not hold every rank's decoded value at once
    /// (a rank's outcome decodes to far more than its bytes: histograms). `each` is not
    /// called on the other ranks.
    fn gather_each<T: Serialize + DeserializeOwned>(
        &self,
        root: u32,
        mine: &T,
        mut each: impl FnMut(u32, T),
    ) -> Result<(), CommError> {
        let bytes = encode(mine)?;
        for (rank, b) in self.gather_bytes(root, &bytes).into_iter().enumerate() {
            let value = decode(rank as u32, &b)?;
            each(rank as u32, value);
        }
        Ok(())
    }

    fn broadcast<T: Serialize + DeserializeOwned>(
        &self,
        root: u32,
        value: &T,
    ) -> Result<T, CommError> {
        let bytes = if self.rank() == root {
            encode(value)?
        } else {
            Vec::new()
        };
        let got = self.broadcast_bytes(root, &bytes);
        decode(root, &got)
    }

    fn topology(&self) -> Topology {
        let hosts = self.all_gather_bytes(self.host().as_bytes());
        Topology {
            ranks: hosts
                .into_iter()
                .enumerate()
                .map(|(rank, h)| RankInfo {
                    rank: rank as u32,
                    host: String::from_utf8_lossy(&h).into_owned(),
                })
                .collect(),
        }
    }
}

impl<C: Comm + ?Sized> CommExt for C {}

/// A value as CBOR bytes.
fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CommError> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes).map_err(CommError::encode)?;
    Ok(bytes)
}

/// A value from `rank`'s CBOR bytes.
fn decode<T: DeserializeOwned>(rank: u32, bytes: &[u8]) -> Result<T, CommError> {
    ciborium::from_reader(bytes).map_err(|e| CommError::decode(rank, e))
}

/// One rank's record for a reduction: `sums` then `maxes` as little-endian u64s.
fn record(sums: &[u64], maxes: &[u64]) -> Vec<u8> {
    sums.iter()
        .chain(maxes)
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

/// Every rank's record of `sums` then `maxes` (little-endian u64s) combined: element-wise
/// wrapping sums and maxima, as MPI_SUM and MPI_MAX give them.
fn combine(records: &[Vec<u8>], sums: usize, maxes: usize) -> (Vec<u64>, Vec<u64>) {
    let mut total = (vec![0u64; sums], vec![0u64; maxes]);
    for bytes in records {
        let values = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        for (i, v) in values.enumerate() {
            if i < sums {
                total.0[i] = total.0[i].wrapping_add(v);
            } else if let Some(m) = total.1.get_mut(i - sums) {
                *m = (*m).max(v);
            }
        }
    }
    total
}

/// This machine's host name ("unknown" if it cannot be read).
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}
