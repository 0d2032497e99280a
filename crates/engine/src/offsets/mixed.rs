//! fio's `percentage_random`: a random job whose I/Os are each random or sequential, as
//! fio 3.33's io_u.c decides (`should_do_random`, `get_next_block`): per direction, a
//! draw from 1 to 100 of fio's own generator (a 32-bit Tausworthe, lib/rand.c, seeded
//! as fio seeds `seq_rand_state`) at most the direction's percentage is random. A
//! random I/O comes from the job's random order; a sequential one starts where the
//! direction's last I/O in that file ended (from the file's start before the first),
//! and when that is at the end it is drawn at random instead, or (time-based, one file)
//! starts again at 0. Sequential I/Os leave the random order (fio's map) untouched.
//! With fio's `rw=randread:N` the choice is made every Nth I/O, the others sequential.

use super::OffsetGen;
use crate::fio_rand::Taus88;
use crate::sizes::SizeDraw;

pub use iolab_core::spec::RandomShare;

/// Random or sequential per I/O over `files` files taking turns (fio's round robin),
/// each with its own random order.
pub struct Mixed {
    random: Vec<Box<dyn OffsetGen>>,
    units: u64,
    percent: [u8; 2],
    choice: [Taus88; 2],
    /// Each file's end of its last read and write (its next sequential place).
    last_end: Vec<[u64; 2]>,
    turn: usize,
    wrap: bool,
    /// [`RandomShare::ends_in_file`] (one file, not time-based).
    ends: bool,
    /// fio's `rw=randread:N`: choose every `run`th I/O (1: each one).
    run: u32,
    left: u32,
}

impl Mixed {
    /// Over `random.len()` files of `units` each; `run` as [`super::Runs`].
    pub fn new(random: Vec<Box<dyn OffsetGen>>, units: u64, share: RandomShare, run: u32) -> Self {
        let n = random.len();
        let choice = Taus88::new(share.seed as u32);
        Mixed {
            random,
            units,
            percent: share.percent,
            // fio seeds each direction's state alike.
            choice: [choice, choice],
            last_end: vec![[0; 2]; n],
            turn: 0,
            wrap: share.looping && n == 1,
            ends: share.ends_in_file && !share.looping && n == 1,
            run: run.max(1),
            left: run.max(1),
        }
    }

    fn one(&mut self, f: usize, sizes: &mut SizeDraw, hit: bool) -> Option<(u64, u64)> {
        let d = sizes.dir() & 1;
        let random = hit
            && (self.percent[d] == 100 || self.choice[d].percent() <= u32::from(self.percent[d]));
        let mut sequential = None;
        if !random {
            let mut at = self.last_end[f][d];
            if at >= self.units && self.wrap {
                at = 0;
            }
            if at >= self.units && self.ends {
                return None;
            }
            sequential = sizes
                .draw(self.units.saturating_sub(at))
                .map(|len| (at, len));
        }
        let (at, len) = match sequential {
            Some(io) => io,
            None => self.random[f].next(sizes)?,
        };
        self.last_end[f][d] = at + len;
        Some((at, len))
    }
}

impl OffsetGen for Mixed {
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        self.left -= 1;
        let hit = self.left == 0;
        if hit {
            self.left = self.run;
        }
        let n = self.random.len();
        for _ in 0..n {
            let f = self.turn;
            self.turn = if f + 1 == n { 0 } else { f + 1 };
            if let Some((at, len)) = self.one(f, sizes, hit) {
                return Some((at * n as u64 + f as u64, len));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::Uniform;

    /// fio 3.33's seed for clone `thread` (from 1) with the default randseed, 0x89:
    /// init.c's `setup_random_seeds`, `rand_seeds[FIO_RAND_SEQ_RAND_READ_OFF]`.
    fn fio_seed(thread: u64) -> u64 {
        let k = 0x9e37_0001u64;
        let mut s = 0x89u64;
        for _ in 0..14 {
            s = s.wrapping_mul(k);
        }
        s.wrapping_mul(thread).wrapping_add(10)
    }

    fn pattern(g: &mut Mixed, sizes: &mut SizeDraw, n: usize) -> String {
        let mut end = 0;
        (0..n)
            .map(|_| {
                let (at, len) = g.next(sizes).unwrap();
                let c = if at == end { 's' } else { 'r' };
                end = at + len;
                c
            })
            .collect()
    }

    fn share(percent: [u8; 2], thread: u64) -> RandomShare {
        RandomShare {
            percent,
            seed: fio_seed(thread),
            seed_step: 0,
            looping: false,
            ends_in_file: false,
        }
    }

    #[test]
    fn choices_are_fios_sequence() {
        // fio 3.33 --rw=randread --percentage_random=50 --size=64m --io_size=320k (one
        // job), its reads under strace: random (r) or after the last one (s).
        let fio =
            "rssrsrsrrrrssrssrrssrrsrssrrssssssrrrsrrrrsssssrssssrssrsrsssrrrsrsrrssssrsrssrr";
        let units = 16384;
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            share([50, 50], 1),
            1,
        );
        let mut one = SizeDraw::fixed(1, 0);
        assert_eq!(pattern(&mut g, &mut one, fio.len()), fio);
        // The second clone of a job after a one-clone job (thread 3), writes at 70 %.
        let fio = "rrrsssssrrrssrsrsrrrsrrrrsrrrrrrrrrrrrrsrrrrrrsssrssrrssrssrrrsrrrrssrr";
        let base = share([30, 70], 2);
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            RandomShare {
                seed_step: fio_seed(1) - 10,
                ..base
            }
            .for_worker(1, false),
            1,
        );
        let mut writes = SizeDraw::fixed(1, 1);
        assert_eq!(pattern(&mut g, &mut writes, fio.len()), fio);
    }

    #[test]
    fn sequential_goes_on_per_direction_and_falls_back_at_the_end() {
        let units = 8;
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            share([0, 0], 1),
            1,
        );
        let (mut r, mut w) = (SizeDraw::fixed(1, 0), SizeDraw::fixed(1, 1));
        let got: Vec<u64> = (0..6)
            .map(|i| g.next(if i % 2 == 0 { &mut r } else { &mut w }).unwrap().0)
            .collect();
        assert_eq!(got, [0, 0, 1, 1, 2, 2]);
        // At the end: a random place (size-based), or 0 again (time-based, one file).
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            share([0, 0], 1),
            1,
        );
        let v: Vec<u64> = (0..8).map(|_| g.next(&mut r).unwrap().0).collect();
        assert_eq!(v, (0..8).collect::<Vec<_>>());
        let _ = g.next(&mut r).unwrap();
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            RandomShare {
                looping: true,
                ..share([0, 0], 1)
            },
            1,
        );
        let v: Vec<u64> = (0..10).map(|_| g.next(&mut r).unwrap().0).collect();
        assert_eq!(v, [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]);
        // A file longer than the share: the work ends there (fio's file is done).
        let mut g = Mixed::new(
            vec![Box::new(Uniform::new(units, 5))],
            units,
            RandomShare {
                ends_in_file: true,
                ..share([0, 0], 1)
            },
            1,
        );
        let v: Vec<u64> = (0..8).map(|_| g.next(&mut r).unwrap().0).collect();
        assert_eq!(v, (0..8).collect::<Vec<_>>());
        assert_eq!(g.next(&mut r), None);
    }

    #[test]
    fn files_take_turns_each_with_its_own_sequence() {
        let units = 100;
        let gens: Vec<Box<dyn OffsetGen>> = (0..2)
            .map(|f| Box::new(Uniform::new(units, f)) as Box<dyn OffsetGen>)
            .collect();
        let mut g = Mixed::new(gens, units, share([0, 0], 1), 1);
        let mut r = SizeDraw::fixed(1, 0);
        let v: Vec<u64> = (0..4).map(|_| g.next(&mut r).unwrap().0).collect();
        // unit * files + file: file 0 at 0, file 1 at 0, file 0 at 1, file 1 at 1.
        assert_eq!(v, [0, 1, 2, 3]);
    }
}
