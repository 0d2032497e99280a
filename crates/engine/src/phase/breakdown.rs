//! The live breakdown of a running phase, for `--serve`'s host and target rows:
//! [`Breakdown`] has rank 0 receive, with each progress tick, every rank's counts
//! ([`RankProgress`]) and the counts of up to [`UNITS_PER_TICK`] of that rank's units
//! ([`UnitProgress`]; a unit is a storage target of `iolab targets`), by one gather to
//! rank 0 only. A rank sends at most 16 + 20 × 4 = 96 bytes a tick whatever its number of
//! units; one with more sends them in turn, and rank 0 keeps each unit's last counts with
//! the moment they were taken, so that a rate over them stays exact.

use std::sync::atomic::Ordering;

use iolab_comm::Comm;
use iolab_core::units::Nanos;

use crate::control::PhaseControl;

/// Units a rank reports with one tick; more are sent in turn.
pub const UNITS_PER_TICK: usize = 4;

/// Bytes of one unit's slot: its id (u32), operations and bytes (u64 each).
const SLOT: usize = 20;

/// One rank's counts in a progress report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankProgress {
    pub host: String,
    pub ops: u64,
    pub bytes: u64,
}

/// One unit's counts in a progress report, as last heard from its rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnitProgress {
    /// The unit's id, as the workload numbered it (a target's index in the list every
    /// rank shares).
    pub unit: u32,
    pub rank: u32,
    pub ops: u64,
    pub bytes: u64,
    /// When these counts were taken, from the start of the phase.
    pub at: Nanos,
}

/// What a running phase gathers to rank 0 beside the tick, when `--serve` asks for it.
pub(super) struct Breakdown {
    /// Rank 0: each rank's host, learnt once per phase.
    hosts: Vec<String>,
    /// Rank 0: each unit's last counts, ordered by unit.
    units: Vec<UnitProgress>,
    /// This rank's units and the workers of each.
    local: Vec<(u32, Vec<usize>)>,
    /// The first of this rank's units to send with the next tick.
    turn: usize,
}

impl Breakdown {
    /// Starts the breakdown of a phase (collective): rank 0 learns the ranks' hosts.
    /// `units[w]` is the unit of this rank's worker `w`, when the workload has units.
    pub fn start(comm: &dyn Comm, units: Option<&[u32]>) -> Breakdown {
        let hosts = comm
            .gather_bytes(0, comm.host().as_bytes())
            .into_iter()
            .map(|h| String::from_utf8_lossy(&h).into_owned())
            .collect();
        let mut local: Vec<(u32, Vec<usize>)> = Vec::new();
        for (w, &u) in units.unwrap_or_default().iter().enumerate() {
            match local.iter_mut().find(|(id, _)| *id == u) {
                Some((_, workers)) => workers.push(w),
                None => local.push((u, vec![w])),
            }
        }
        Breakdown {
            hosts,
            units: Vec::new(),
            local,
            turn: 0,
        }
    }

    /// One tick (collective): sends this rank's counts `(ops, bytes)` and its next units'
    /// to rank 0, which returns every rank's counts (the others an empty list).
    pub fn tick(
        &mut self,
        comm: &dyn Comm,
        control: &PhaseControl,
        (ops, bytes): (u64, u64),
        at: Nanos,
    ) -> Vec<RankProgress> {
        let mut mine = Vec::with_capacity(16 + SLOT * UNITS_PER_TICK);
        mine.extend_from_slice(&ops.to_le_bytes());
        mine.extend_from_slice(&bytes.to_le_bytes());
        let sent = self.local.len().min(UNITS_PER_TICK);
        for k in 0..sent {
            let (unit, workers) = &self.local[(self.turn + k) % self.local.len()];
            let (ops, bytes) = workers.iter().fold((0u64, 0u64), |(o, b), &w| {
                let p = &control.workers[w];
                (
                    o + p.ops.load(Ordering::Relaxed),
                    b + p.bytes.load(Ordering::Relaxed),
                )
            });
            mine.extend_from_slice(&unit.to_le_bytes());
            mine.extend_from_slice(&ops.to_le_bytes());
            mine.extend_from_slice(&bytes.to_le_bytes());
        }
        if !self.local.is_empty() {
            self.turn = (self.turn + sent) % self.local.len();
        }
        let all = comm.gather_bytes(0, &mine);
        for (rank, b) in all.iter().enumerate() {
            for slot in b.get(16..).unwrap_or_default().chunks_exact(SLOT) {
                self.heard(rank as u32, slot, at);
            }
        }
        all.iter()
            .zip(&self.hosts)
            .map(|(b, host)| RankProgress {
                host: host.clone(),
                ops: u64_at(b, 0),
                bytes: u64_at(b, 8),
            })
            .collect()
    }

    /// Rank 0: a unit's slot from `rank`.
    fn heard(&mut self, rank: u32, slot: &[u8], at: Nanos) {
        let unit = slot
            .get(..4)
            .and_then(|s| s.try_into().ok())
            .map_or(0, u32::from_le_bytes);
        let now = UnitProgress {
            unit,
            rank,
            ops: u64_at(slot, 4),
            bytes: u64_at(slot, 12),
            at,
        };
        match self.units.binary_search_by_key(&unit, |u| u.unit) {
            Ok(i) => self.units[i] = now,
            Err(i) => self.units.insert(i, now),
        }
    }

    /// Rank 0: every unit's last counts, ordered by unit.
    pub fn units(&self) -> &[UnitProgress] {
        &self.units
    }
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    b.get(i..i + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use iolab_comm::InProcess;

    use super::*;

    /// Three ranks: rank 0 with no unit, rank 1 with one unit of two workers, rank 2
    /// with six units of one worker each (more than a tick carries). Rank 0 hears every
    /// rank's counts at each tick and, after two ticks, every unit's.
    #[test]
    fn rank_0_hears_every_units_counts_in_turn_within_a_bounded_message() {
        let got = InProcess::run(
            3,
            |r| format!("h{r}"),
            |comm| {
                let units: Vec<u32> = match comm.rank() {
                    0 => Vec::new(),
                    1 => vec![7, 7],
                    _ => (10..16).collect(),
                };
                let control = PhaseControl::new(units.len());
                for (w, p) in control.workers.iter().enumerate() {
                    p.ops.store(w as u64 + 1, Ordering::Relaxed);
                    p.bytes.store(4096 * (w as u64 + 1), Ordering::Relaxed);
                }
                let mut b = Breakdown::start(comm, Some(&units));
                let counts = (units.len() as u64, 0);
                let first = b.tick(comm, &control, counts, Nanos(100));
                let after_one: Vec<u32> = b.units().iter().map(|u| u.unit).collect();
                let second = b.tick(comm, &control, counts, Nanos(200));
                (first, second, after_one, b.units().to_vec())
            },
        );
        let (first, second, after_one, units) = &got[0];
        let hosts: Vec<(&str, u64)> = first.iter().map(|r| (r.host.as_str(), r.ops)).collect();
        assert_eq!(hosts, [("h0", 0), ("h1", 2), ("h2", 6)]);
        assert_eq!(first, second);
        // The first tick carries rank 2's first four units, the second its last two and
        // (in turn) its first two again.
        assert_eq!(after_one, &[7, 10, 11, 12, 13]);
        let seen: Vec<(u32, u32, u64, u64, Nanos)> = units
            .iter()
            .map(|u| (u.unit, u.rank, u.ops, u.bytes, u.at))
            .collect();
        assert_eq!(
            seen,
            [
                (7, 1, 3, 3 * 4096, Nanos(200)),
                (10, 2, 1, 4096, Nanos(200)),
                (11, 2, 2, 2 * 4096, Nanos(200)),
                (12, 2, 3, 3 * 4096, Nanos(100)),
                (13, 2, 4, 4 * 4096, Nanos(100)),
                (14, 2, 5, 5 * 4096, Nanos(200)),
                (15, 2, 6, 6 * 4096, Nanos(200)),
            ]
        );
        // The other ranks receive nothing.
        assert!(got[1].0.is_empty() && got[1].3.is_empty());
        assert!(got[2].0.is_empty() && got[2].3.is_empty());
    }
}
