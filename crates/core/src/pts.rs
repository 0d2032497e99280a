//! SNIA PTS 2.0's IOPS, throughput and latency tests as data: the matrix of R/W mixes
//! and block sizes a round runs ([`PtsMatrix`] of [`Cell`]s), the tracked cells whose
//! rounds decide steady state, [`PtsRounds`] (each round's tracked figure per cell,
//! judged by [`crate::steady`]'s PTS rule) and what one test found ([`PtsTestResult`]).
//! Pure and tested on recorded rounds; the running is `iolab_suites::pts`'.

use serde::{Deserialize, Serialize};

use crate::steady::{PTS_MAX_ROUNDS, PTS_WINDOW, PtsVerdict, pts_check};
use crate::units::ByteCount;

/// PTS 2.0's IOPS mixes, as the share of reads: 100/0, 95/5, 65/35, 50/50, 35/65, 5/95,
/// 0/100 (R/W).
pub const IOPS_MIXES: [u8; 7] = [100, 95, 65, 50, 35, 5, 0];
/// PTS 2.0's IOPS block sizes, largest first as a round runs them: 1024, 128, 64, 32,
/// 16, 8, 4 and 0.5 KiB.
pub const IOPS_BLOCK_SIZES: [u64; 8] = [
    1024 << 10,
    128 << 10,
    64 << 10,
    32 << 10,
    16 << 10,
    8 << 10,
    4 << 10,
    512,
];
/// The IOPS test's tracked cells (block size, read share): 4 KiB 0/100, 64 KiB 65/35,
/// 1024 KiB 100/0.
pub const IOPS_TRACKED: [(u64, u8); 3] = [(4 << 10, 0), (64 << 10, 65), (1024 << 10, 100)];

/// The throughput test's block sizes: PTS-E runs 1024 KiB and then 128 KiB, each as
/// its own test (purge, preconditioning, rounds); PTS-C runs 1024 KiB only.
pub const THROUGHPUT_BLOCK_SIZES: [u64; 2] = [1024 << 10, 128 << 10];
/// The throughput test's mixes: sequential 100 % reads, then 100 % writes.
pub const THROUGHPUT_MIXES: [u8; 2] = [100, 0];
/// The latency test's block sizes (the inner loop): 8, 4 and 0.5 KiB.
pub const LATENCY_BLOCK_SIZES: [u64; 3] = [8 << 10, 4 << 10, 512];
/// The latency test's mixes (the outer loop): 100/0, 65/35, 0/100.
pub const LATENCY_MIXES: [u8; 3] = [100, 65, 0];

/// Which of PTS's tests, and so what a round's figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PtsTest {
    /// Random, IOPS per cell.
    Iops,
    /// Sequential, MB/s per cell (10^6 bytes per second).
    Throughput,
    /// Random at one outstanding I/O, the mean response time per cell in ms.
    Latency,
}

impl PtsTest {
    /// "IOPS", "throughput", "latency".
    pub fn name(self) -> &'static str {
        match self {
            PtsTest::Iops => "IOPS",
            PtsTest::Throughput => "throughput",
            PtsTest::Latency => "latency",
        }
    }

    /// The tracked figure's unit: "IOPS", "MB/s", "ms".
    pub fn unit(self) -> &'static str {
        match self {
            PtsTest::Iops => "IOPS",
            PtsTest::Throughput => "MB/s",
            PtsTest::Latency => "ms",
        }
    }

    /// The tracked figure in stored keys: `pts_iops`, `pts_mbps`, `pts_latency_ms`.
    pub fn key(self) -> &'static str {
        match self {
            PtsTest::Iops => "iops",
            PtsTest::Throughput => "mbps",
            PtsTest::Latency => "latency_ms",
        }
    }
}

/// One cell of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Cell {
    pub block_size: u64,
    /// Share of reads in percent.
    pub read_percent: u8,
}

impl Cell {
    /// "4KiB 0/100" (PTS writes R/W).
    pub fn name(&self) -> String {
        format!(
            "{} {}/{}",
            ByteCount(self.block_size),
            self.read_percent,
            100 - self.read_percent
        )
    }
}

/// What a round runs and what decides steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtsMatrix {
    /// Block sizes in the order a round runs them, per mix (the inner loop).
    pub block_sizes: Vec<u64>,
    /// Read shares in the order a round runs them (the outer loop).
    pub mixes: Vec<u8>,
    /// Cells whose rounds decide steady state (each must be in the matrix).
    pub tracked: Vec<Cell>,
    pub test: PtsTest,
}

impl PtsMatrix {
    /// PTS 2.0's IOPS test.
    pub fn iops() -> PtsMatrix {
        PtsMatrix {
            block_sizes: IOPS_BLOCK_SIZES.to_vec(),
            mixes: IOPS_MIXES.to_vec(),
            tracked: IOPS_TRACKED
                .iter()
                .map(|&(block_size, read_percent)| Cell {
                    block_size,
                    read_percent,
                })
                .collect(),
            test: PtsTest::Iops,
        }
    }

    /// PTS 2.0's throughput test at one block size: sequential 100/0 then 0/100, the
    /// 0/100 (write) MB/s tracked.
    pub fn throughput(block_size: u64) -> PtsMatrix {
        PtsMatrix {
            block_sizes: vec![block_size],
            mixes: THROUGHPUT_MIXES.to_vec(),
            tracked: vec![Cell {
                block_size,
                read_percent: 0,
            }],
            test: PtsTest::Throughput,
        }
    }

    /// PTS 2.0's latency test: mixes 100/0, 65/35, 0/100 (outer loop) x 8, 4, 0.5 KiB
    /// (inner), random at TC 1 x QD 1, the 4 KiB 0/100 mean response time tracked.
    pub fn latency() -> PtsMatrix {
        PtsMatrix {
            block_sizes: LATENCY_BLOCK_SIZES.to_vec(),
            mixes: LATENCY_MIXES.to_vec(),
            tracked: vec![Cell {
                block_size: 4 << 10,
                read_percent: 0,
            }],
            test: PtsTest::Latency,
        }
    }

    /// The cells of one round, in the order they run: every test of PTS loops over the
    /// R/W mixes outside and the block sizes inside (PTS-E 1.1's IOPS test, 3.2.1 "For
    /// (R/W Mix % = 100/0, 95/5, ...)", 3.2.1.1 "For (Block Size = 1024KiB, ...)").
    pub fn cells(&self) -> Vec<Cell> {
        self.mixes
            .iter()
            .flat_map(|&read_percent| {
                self.block_sizes.iter().map(move |&block_size| Cell {
                    block_size,
                    read_percent,
                })
            })
            .collect()
    }

    /// The matrix limited to `block_sizes` and `mixes` (each a subset, in PTS's order);
    /// the tracked cells it no longer holds are dropped. Err names what is not PTS's or
    /// leaves no tracked cell.
    pub fn limited(
        &self,
        block_sizes: Option<&[u64]>,
        mixes: Option<&[u8]>,
    ) -> Result<PtsMatrix, String> {
        let mut m = self.clone();
        if let Some(b) = block_sizes {
            if let Some(x) = b.iter().find(|x| !self.block_sizes.contains(x)) {
                return Err(format!(
                    "{} is not one of the block sizes of PTS's {} test ({})",
                    ByteCount(*x),
                    self.test.name(),
                    list(self.block_sizes.iter().map(|b| ByteCount(*b)))
                ));
            }
            m.block_sizes.retain(|x| b.contains(x));
        }
        if let Some(w) = mixes {
            if let Some(x) = w.iter().find(|x| !self.mixes.contains(x)) {
                return Err(format!(
                    "{x}/{} is not one of the R/W mixes of PTS's {} test ({})",
                    100 - x.min(&100),
                    self.test.name(),
                    list(self.mixes.iter().map(|m| format!("{m}/{}", 100 - m)))
                ));
            }
            m.mixes.retain(|x| w.contains(x));
        }
        m.tracked
            .retain(|c| m.block_sizes.contains(&c.block_size) && m.mixes.contains(&c.read_percent));
        if m.tracked.is_empty() {
            return Err(format!(
                "the matrix left holds none of the tracked cells ({}): nothing would decide steady state",
                list(self.tracked.iter().map(Cell::name))
            ));
        }
        Ok(m)
    }
}

fn list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    items.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

/// Each round's IOPS per cell, and the verdict over them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PtsRounds {
    /// By round (0-based), the IOPS of each cell of the matrix as `cells()` lists them.
    pub rounds: Vec<Vec<f64>>,
}

/// The verdict of a PTS test over its rounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtsOutcome {
    /// Whether every tracked cell was steady over the same window within 25 rounds.
    pub steady: bool,
    /// The measurement window: the rounds (0-based, inclusive) it spans. The last five
    /// rounds run when not steady.
    pub window: (usize, usize),
    /// Each tracked cell's verdict over that window.
    pub tracked: Vec<(Cell, PtsVerdict)>,
    /// Each cell's IOPS averaged over the window, as `cells()` lists them.
    pub averages: Vec<f64>,
}

impl PtsRounds {
    /// The series of one cell over the rounds so far.
    pub fn series(&self, matrix: &PtsMatrix, cell: Cell) -> Vec<f64> {
        let i = matrix.cells().iter().position(|c| *c == cell);
        self.rounds
            .iter()
            .map(|r| i.and_then(|i| r.get(i).copied()).unwrap_or(0.0))
            .collect()
    }

    /// True when the rounds so far are steady for every tracked cell (the test stops).
    pub fn steady_now(&self, matrix: &PtsMatrix) -> bool {
        self.rounds.len() >= PTS_WINDOW
            && self.rounds.len() <= PTS_MAX_ROUNDS
            && matrix
                .tracked
                .iter()
                .all(|c| pts_check(&self.series(matrix, *c)).is_some_and(|v| v.steady))
    }

    /// The verdict over the rounds run (None before five rounds).
    pub fn outcome(&self, matrix: &PtsMatrix) -> Option<PtsOutcome> {
        let n = self.rounds.len().min(PTS_MAX_ROUNDS);
        if n < PTS_WINDOW {
            return None;
        }
        // The first round at which every tracked cell is steady, else the last.
        let end = (PTS_WINDOW..=n)
            .find(|&k| {
                matrix
                    .tracked
                    .iter()
                    .all(|c| pts_check(&self.series(matrix, *c)[..k]).is_some_and(|v| v.steady))
            })
            .unwrap_or(n);
        let steady = matrix
            .tracked
            .iter()
            .all(|c| pts_check(&self.series(matrix, *c)[..end]).is_some_and(|v| v.steady));
        let tracked = matrix
            .tracked
            .iter()
            .filter_map(|c| Some((*c, pts_check(&self.series(matrix, *c)[..end])?)))
            .collect();
        let window = &self.rounds[end - PTS_WINDOW..end];
        let averages = (0..matrix.cells().len())
            .map(|i| {
                window
                    .iter()
                    .map(|r| r.get(i).copied().unwrap_or(0.0))
                    .sum::<f64>()
                    / PTS_WINDOW as f64
            })
            .collect();
        Some(PtsOutcome {
            steady,
            window: (end - PTS_WINDOW, end - 1),
            tracked,
            averages,
        })
    }
}

/// PTS's two device classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum PtsClass {
    /// PTS-E: active range 100 %, the device's volatile write cache off.
    Enterprise,
    /// PTS-C: active range 75 %, the write cache on.
    Client,
}

/// A table of the report: rows of a block size and its values per mix.
pub type Table = Vec<(String, Vec<f64>)>;

/// What one of a PTS run's tests did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PtsTestResult {
    pub matrix: PtsMatrix,
    /// What the purge and the preconditioning did, in words.
    pub purge: String,
    pub wipc: String,
    pub rounds: PtsRounds,
    pub outcome: Option<PtsOutcome>,
    /// The latency test's other tables (title, decimals, rows of block size and values
    /// per mix).
    pub extra_tables: Vec<(String, usize, Table)>,
}

/// "70/30": a R/W mix as PTS names it.
pub fn mix_name(read: u8) -> String {
    format!("{read}/{}", 100 - read)
}

/// A tracked figure with its unit.
pub fn fmt_value(test: PtsTest, v: f64) -> String {
    match test {
        PtsTest::Iops => format!("{v:.0} IOPS"),
        PtsTest::Throughput => format!("{v:.1} MB/s"),
        PtsTest::Latency => format!("{v:.3} ms"),
    }
}

/// Decimals of a figure of the test in a table.
pub fn decimals(test: PtsTest) -> usize {
    match test {
        PtsTest::Iops => 0,
        PtsTest::Throughput => 1,
        PtsTest::Latency => 3,
    }
}

#[cfg(test)]
#[path = "pts_tests.rs"]
mod tests;
