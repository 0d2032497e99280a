//! SNIA PTS 2.0's IOPS, throughput and latency tests as data: the matrix of R/W mixes
//! and block sizes a round runs, the tracked cells whose rounds decide steady state, and
//! [`PtsRounds`], which keeps each round's tracked figure per cell (IOPS, MB/s or mean
//! response time) and judges them with `iolab_core::steady`'s PTS rule (every tracked
//! cell steady over the same 5-round window; at most 25 rounds). The running is
//! [`run_pts`]'s (purge, preconditioning, rounds); the figures of a phase and the
//! window's marks are [`figures`]'. The rest is pure and tested on recorded rounds.

use iolab_core::steady::{PTS_MAX_ROUNDS, PTS_WINDOW, PtsVerdict, pts_check};

pub mod figures;
mod run;

pub use run::{PtsHooks, PtsPlan, PtsResult, PtsStopped, PtsTestResult, cell_spec, run_pts};

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
            iolab_core::units::ByteCount(self.block_size),
            self.read_percent,
            100 - self.read_percent
        )
    }
}

/// What a round runs and what decides steady state.
#[derive(Clone, Debug, PartialEq)]
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
                    iolab_core::units::ByteCount(*x),
                    self.test.name(),
                    list(
                        self.block_sizes
                            .iter()
                            .map(|b| iolab_core::units::ByteCount(*b))
                    )
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
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PtsRounds {
    /// By round (0-based), the IOPS of each cell of the matrix as `cells()` lists them.
    pub rounds: Vec<Vec<f64>>,
}

/// The verdict of a PTS test over its rounds.
#[derive(Clone, Debug, PartialEq)]
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

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> PtsMatrix {
        PtsMatrix::iops()
            .limited(Some(&[1 << 20, 64 << 10, 4 << 10]), Some(&[100, 65, 0]))
            .unwrap()
    }

    #[test]
    fn the_iops_matrix_is_ptss_and_limits_keep_its_order() {
        let m = PtsMatrix::iops();
        assert_eq!(m.cells().len(), 56);
        assert_eq!(m.cells()[0].name(), "1MiB 100/0");
        assert_eq!(m.cells()[55].name(), "512B 0/100");
        let s = small();
        assert_eq!(
            s.cells().iter().map(Cell::name).collect::<Vec<_>>(),
            [
                "1MiB 100/0",
                "64KiB 100/0",
                "4KiB 100/0",
                "1MiB 65/35",
                "64KiB 65/35",
                "4KiB 65/35",
                "1MiB 0/100",
                "64KiB 0/100",
                "4KiB 0/100"
            ]
        );
        assert_eq!(s.tracked.len(), 3);
        let only4k = m.limited(Some(&[4 << 10]), None).unwrap();
        assert_eq!(
            only4k.tracked,
            [Cell {
                block_size: 4096,
                read_percent: 0
            }]
        );
        assert!(
            m.limited(Some(&[3 << 10]), None)
                .unwrap_err()
                .contains("3KiB")
        );
        assert!(m.limited(None, Some(&[70])).unwrap_err().contains("70/30"));
        assert!(
            m.limited(Some(&[8 << 10]), None)
                .unwrap_err()
                .contains("tracked")
        );
    }

    #[test]
    fn the_throughput_and_latency_matrices_run_in_ptss_order() {
        let t = PtsMatrix::throughput(128 << 10);
        assert_eq!(
            t.cells().iter().map(Cell::name).collect::<Vec<_>>(),
            ["128KiB 100/0", "128KiB 0/100"]
        );
        assert_eq!(t.tracked[0].name(), "128KiB 0/100");
        let l = PtsMatrix::latency();
        let names: Vec<String> = l.cells().iter().map(Cell::name).collect();
        assert_eq!(names.len(), 9);
        assert_eq!(
            &names[..4],
            ["8KiB 100/0", "4KiB 100/0", "512B 100/0", "8KiB 65/35"]
        );
        assert_eq!(names[8], "512B 0/100");
        assert_eq!(l.tracked[0].name(), "4KiB 0/100");
        let e = l.limited(Some(&[64 << 10]), None).unwrap_err();
        assert!(e.contains("latency test (8KiB, 4KiB, 512B)"), "{e}");
        let e = l.limited(None, Some(&[100])).unwrap_err();
        assert!(e.contains("4KiB 0/100"), "{e}");
        // The series of the tracked cell where a mix-major round holds it.
        let r = PtsRounds {
            rounds: vec![(0..9).map(f64::from).collect()],
        };
        assert_eq!(r.series(&l, l.tracked[0]), [7.0]);
    }

    /// A round of the small matrix with the tracked cells at `w4k` (4 KiB writes),
    /// `m64k` and `r1m`, the others at 1.
    fn round(r1m: f64, m64k: f64, w4k: f64) -> Vec<f64> {
        vec![r1m, 1.0, 1.0, 1.0, m64k, 1.0, 1.0, 1.0, w4k]
    }

    #[test]
    fn steady_when_every_tracked_cell_is_over_the_same_window() {
        let m = small();
        // 4 KiB writes fall for five rounds then hold; the others hold from the start.
        let w4k = [
            90_000.0, 60_000.0, 40_000.0, 30_000.0, 25_000.0, 20_000.0, 20_100.0, 19_900.0,
            20_000.0, 20_050.0, 19_950.0,
        ];
        let mut r = PtsRounds::default();
        let mut stopped = None;
        for (k, w) in w4k.iter().enumerate() {
            r.rounds.push(round(3000.0, 9000.0, *w));
            if r.steady_now(&m) {
                stopped = Some(k);
                break;
            }
        }
        // The window of rounds 5-9 (20000 ... 20050) is the first within the rule.
        assert_eq!(stopped, Some(9));
        let o = r.outcome(&m).unwrap();
        assert!(o.steady);
        assert_eq!(o.window, (5, 9));
        assert!((o.averages[8] - 20_010.0).abs() < 1e-9, "{:?}", o.averages);
        assert_eq!(o.averages[0], 3000.0);
        let (cell, v) = &o.tracked[0];
        assert_eq!(cell.name(), "4KiB 0/100");
        assert!((v.range - 200.0).abs() < 1e-9 && v.steady);
    }

    #[test]
    fn never_steady_reports_the_last_five_of_at_most_25_rounds() {
        let m = small();
        let mut r = PtsRounds::default();
        for k in 0..30 {
            // 4 KiB writes swing by 50 %: never steady.
            let w = if k % 2 == 0 { 10_000.0 } else { 15_000.0 };
            r.rounds.push(round(3000.0, 9000.0, w));
            assert!(!r.steady_now(&m));
        }
        let o = r.outcome(&m).unwrap();
        assert!(!o.steady);
        assert_eq!(o.window, (20, 24), "rounds past the 25th do not count");
        assert!(!o.tracked[0].1.steady && o.tracked[2].1.steady);
        assert_eq!(
            PtsRounds {
                rounds: vec![round(1.0, 1.0, 1.0); 4]
            }
            .outcome(&m),
            None
        );
    }
}
