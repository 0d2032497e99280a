//! fio 3.33's read-or-write choice of a mixed job (io_u.c `get_rw_ddir`,
//! `get_rand_ddir`, `set_rwmix_bytes`), for `iolab fio`: [`RwMix`] is what a plan asks
//! (fio's seed), [`FioRwMix`] a worker's draws. A draw comes from fio's own generator
//! (`rwmix_state`) only once the current direction has issued its quota, so a run of one
//! direction is kept until the other's count has caught up with its share; each loop of a
//! size-based job starts again as fio's `clear_io_state` does.

use iolab_backend::IoDir;

use crate::fio_rand::Taus88;

pub use iolab_core::spec::RwMix;

/// Where a worker's passes over its files end, for [`FioRwMix`]: fio starts each loop
/// afresh (and reseeds under randrepeat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MixPasses {
    /// I/Os of one pass.
    pub ios: u64,
    /// Draws spent at a pass's end, their I/Os never issued: fio's psync loop ends
    /// once it has found each of the worker's files done, a draw each; its io_uring
    /// and libaio end on the bytes queued, with none ([`RwMix::ends_on_bytes`]).
    pub spent: u32,
    /// Reseed at each pass (fio's randrepeat).
    pub repeat: bool,
}

/// One worker's reads and writes in fio's order.
pub(crate) struct FioRwMix {
    read_percent: u32,
    seed: u32,
    state: Taus88,
    /// fio's `rwmix_ddir` (Read or Write).
    dir: IoDir,
    /// I/Os issued per direction (fio's `io_issues`, never reset by a loop).
    issues: [u64; 2],
    /// fio's `rwmix_issues`: the current direction's count at which it draws again.
    quota: u64,
    passes: Option<MixPasses>,
    /// The issue count at which the next pass starts (never without passes).
    next_pass: u64,
}

impl FioRwMix {
    pub(crate) fn new(read_percent: u8, mix: RwMix, passes: Option<MixPasses>) -> Self {
        let seed = mix.seed as u32;
        FioRwMix {
            read_percent: u32::from(read_percent),
            seed,
            state: Taus88::new(seed),
            dir: IoDir::Read,
            issues: [0; 2],
            quota: 0,
            passes,
            next_pass: passes.map_or(u64::MAX, |p| p.ios.max(1)),
        }
    }

    /// The direction of the next I/O, which the caller issues.
    #[inline]
    pub(crate) fn draw(&mut self) -> IoDir {
        if self.issues[0] + self.issues[1] == self.next_pass {
            self.new_pass();
        }
        let dir = self.choose();
        self.issues[dir as usize] += 1;
        dir
    }

    /// fio's `get_rw_ddir` for a mixed job.
    fn choose(&mut self) -> IoDir {
        if self.issues[self.dir as usize] >= self.quota {
            let dir = if self.state.percent() <= self.read_percent {
                IoDir::Read
            } else {
                IoDir::Write
            };
            if dir != self.dir {
                // set_rwmix_bytes: the old direction's count times the new one's share.
                let share = match dir {
                    IoDir::Read => self.read_percent,
                    _ => 100 - self.read_percent,
                };
                self.quota = self.issues[self.dir as usize] * u64::from(share) / 100;
            }
            self.dir = dir;
        }
        self.dir
    }

    /// A pass is done: fio's psync loop drew once more for each file it then found
    /// done (those I/Os are never issued), and its next loop starts with the quota
    /// cleared (`reset_io_counters`) and, under randrepeat, the generator reseeded.
    #[cold]
    fn new_pass(&mut self) {
        let Some(p) = self.passes else {
            return;
        };
        for _ in 0..p.spent {
            self.choose();
        }
        self.quota = 0;
        if p.repeat {
            self.state = Taus88::new(self.seed);
        }
        self.next_pass += p.ios.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs(m: &mut FioRwMix, n: usize) -> String {
        (0..n)
            .map(|_| match m.draw() {
                IoDir::Read => 'R',
                _ => 'W',
            })
            .collect()
    }

    /// fio 3.33's seed of thread n's rwmix_state with its default randseed (0x89).
    fn fio_seed(n: u64) -> u64 {
        let step = (0..8).fold(0x89u64, |s, _| s.wrapping_mul(0x9e37_0001));
        step.wrapping_mul(n).wrapping_add(4)
    }

    #[test]
    fn reads_and_writes_come_in_fios_order() {
        // fio 3.33 under strace: --rw=randrw --bs=4k --size=256k --rwmixread=70
        // --loops=2 (psync): both passes.
        let pass = "RRRWRRWRRRWRWRRRRRRRWWRWRRRWWWRRRWRWWRRWRRWRRWRRWWRRRRRWRRWRRRWR";
        let passes = MixPasses {
            ios: 64,
            spent: 1,
            repeat: true,
        };
        let mix = RwMix {
            seed: fio_seed(1),
            seed_step: 0,
            ends_on_bytes: false,
        };
        let mut m = FioRwMix::new(70, mix, Some(passes));
        assert_eq!(dirs(&mut m, 128), format!("{pass}{pass}"));
        // rwmixread=10, numjobs=2, size=64k: fio keeps a write run until the reads'
        // count catches up; the second clone draws from its own seed.
        let job = RwMix {
            seed: fio_seed(1),
            seed_step: fio_seed(2) - fio_seed(1),
            ends_on_bytes: false,
        };
        let passes = MixPasses { ios: 16, ..passes };
        let mut first = FioRwMix::new(10, job.for_worker(0), Some(passes));
        assert_eq!(dirs(&mut first, 32), "WRWWWRWWWRWWWRWW".repeat(2));
        let mut second = FioRwMix::new(10, job.for_worker(1), Some(passes));
        assert_eq!(dirs(&mut second, 32), "W".repeat(32));
    }

    #[test]
    fn without_randrepeat_the_passes_draw_on() {
        // fio 3.33: --rw=randrw --size=64k --loops=3 --rwmixread=50 --randseed=7; the
        // draw spent at each pass's end (its I/O finds the file done) counts.
        let step = (0..8).fold(7u64, |s, _| s.wrapping_mul(0x9e37_0001));
        let mix = RwMix {
            seed: step.wrapping_add(4),
            seed_step: 0,
            ends_on_bytes: false,
        };
        let passes = MixPasses {
            ios: 16,
            spent: 1,
            repeat: false,
        };
        let mut m = FioRwMix::new(50, mix, Some(passes));
        assert_eq!(
            dirs(&mut m, 48),
            "WWRRRWWWRWRWRRRWWWRWRWWWRRWRWRWWRWRWRRWWWRRWWRRW"
        );
        // fio's io_uring (write_iolog): its loops end on the bytes queued, no draw spent.
        let passes = MixPasses { spent: 0, ..passes };
        let mut m = FioRwMix::new(50, mix, Some(passes));
        assert_eq!(
            dirs(&mut m, 48),
            "WWRRRWWWRWRWRRRWRWWRWRWWWRRWRWRWWRRWRWRRWWWRRWWR"
        );
    }
}
