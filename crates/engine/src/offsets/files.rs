//! fio's `file_service_type` over a worker's files, as fio 3.33's io_u.c chooses the
//! file of each I/O (`__get_next_file`, `get_next_file_rr`, `get_next_file_rand`):
//! round robin N I/Os a file, the same file until it is done (`sequential`), or a file
//! drawn by fio's own generator, kept for N I/Os (`random`). A file is done once its
//! share of the pass is moved, found when it is next chosen (fio's `fill_io_u` failing,
//! which costs fio a draw too); when all are, a new pass starts (fio's next loop, with
//! its choices reseeded under randrepeat). Only workers whose
//! job asks for it use [`FileTurns`]; fio's default (one I/O a file) is [`super::RoundRobin`].

use super::OffsetGen;
use crate::fio_rand::Taus88;
use crate::sizes::SizeDraw;

pub use iolab_core::spec::{FileChoice, FileService};

/// A worker's files, each with its own generator, chosen per I/O as its
/// [`FileService`] says: yields `unit * files + file`, as [`super::RoundRobin`].
pub struct FileTurns {
    gens: Vec<Box<dyn OffsetGen>>,
    service: FileService,
    rand: Option<Taus88>,
    /// Units per file in a pass; units each file has moved in this one.
    per_file: u64,
    moved: Vec<u64>,
    done: Vec<bool>,
    /// The file in use and the I/Os left on it (None: choose one).
    current: Option<usize>,
    left: u32,
    /// fio's `next_file`: where round robin goes on.
    next: usize,
}

impl FileTurns {
    /// Over `gens.len()` files of `per_file` units each.
    pub fn new(gens: Vec<Box<dyn OffsetGen>>, per_file: u64, service: FileService) -> Self {
        let n = gens.len();
        FileTurns {
            gens,
            service,
            rand: Self::seeded(service),
            per_file,
            moved: vec![0; n],
            done: vec![false; n],
            current: None,
            left: 0,
            next: 0,
        }
    }

    fn seeded(service: FileService) -> Option<Taus88> {
        match service.choice {
            // fio's init_rand_seed(&next_file_state, seed, false): its low 32 bits.
            FileChoice::Random { seed, .. } => Some(Taus88::new(seed as u32)),
            _ => None,
        }
    }

    /// fio's choice of a new file among those not done (at least one is not).
    fn choose(&mut self) -> usize {
        let n = self.gens.len();
        match &mut self.rand {
            Some(r) => loop {
                let f = r.below(n as u32) as usize;
                if !self.done[f] {
                    return f;
                }
            },
            None => loop {
                let f = self.next;
                self.next = if f + 1 == n { 0 } else { f + 1 };
                if !self.done[f] {
                    return f;
                }
            },
        }
    }
}

impl FileTurns {
    /// A new pass (fio's next loop): every file again, its files closed, the choice
    /// reseeded with randrepeat.
    fn new_pass(&mut self) {
        self.moved.fill(0);
        self.done.fill(false);
        self.current = None;
        if self.service.repeat {
            self.rand = Self::seeded(self.service);
        }
    }
}

impl OffsetGen for FileTurns {
    fn next(&mut self, sizes: &mut SizeDraw) -> Option<(u64, u64)> {
        let n = self.gens.len();
        let smallest = sizes.smallest().max(1);
        let per_file = self.per_file;
        let full = |moved: u64| per_file.saturating_sub(moved) < smallest;
        // Each turn that moves nothing marks one more file done; a pass ends when every
        // file is found done (as a psync fio job's loop ends before its last: its
        // choices go on until get_next_file finds none), and the next starts at once.
        for _ in 0..=2 * n + 1 {
            let f = match self.current {
                Some(f) if self.service.choice == FileChoice::Sequential => f,
                Some(f) if self.left > 0 => {
                    self.left -= 1;
                    f
                }
                _ => {
                    let f = self.choose();
                    self.current = Some(f);
                    self.left = self.service.per_turn.max(1) - 1;
                    f
                }
            };
            if self.service.ends && full(self.moved[f]) {
                // Done: found as fio finds it, when chosen.
                self.done[f] = true;
                self.current = None;
                if self.done.iter().all(|&d| d) {
                    self.new_pass();
                }
                continue;
            }
            let (at, len) = self.gens[f].next(sizes)?;
            self.moved[f] += len;
            return Some((at * n as u64 + f as u64, len));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::Sequential;

    /// fio 3.33's seed of its file choice for thread number `thread` with the default
    /// randseed 0x89 (init.c `setup_random_seeds`, `rand_seeds[FIO_RAND_FILE_OFF]`).
    fn fio_seed(thread: u64) -> u64 {
        let step = (0..9).fold(0x89u64, |s, _| s.wrapping_mul(0x9e37_0001));
        step.wrapping_mul(thread).wrapping_add(5)
    }

    fn files(service: FileService, n: u64, per_file: u64, ios: usize) -> String {
        let gens = (0..n)
            .map(|_| Box::new(Sequential::new(per_file)) as Box<dyn OffsetGen>)
            .collect();
        let mut g = FileTurns::new(gens, per_file, service);
        let mut one = SizeDraw::fixed(1, 0);
        (0..ios)
            .map(|_| {
                let (at, _) = g.next(&mut one).unwrap();
                char::from(b'0' + (at % n) as u8)
            })
            .collect()
    }

    #[test]
    fn random_files_are_fios_sequence() {
        // fio 3.33 --rw=read --bs=4k --size=48k --nrfiles=3 --file_service_type=random,
        // its reads' files under strace; then the same again (randrepeat reseeds).
        let random = FileService {
            choice: FileChoice::Random {
                seed: fio_seed(1),
                seed_step: 0,
            },
            ..FileService::default()
        };
        assert_eq!(files(random, 3, 4, 24), "220020211011".repeat(2));
        // Without randrepeat the second pass goes on drawing.
        let on = files(
            FileService {
                repeat: false,
                ..random
            },
            3,
            4,
            24,
        );
        assert_eq!(on[..12], *"220020211011");
        assert_ne!(on[12..], *"220020211011");
    }

    #[test]
    fn round_robin_and_sequential_keep_a_file_as_fio() {
        let rr = |per_turn| FileService {
            per_turn,
            ..FileService::default()
        };
        // fio: roundrobin:3 over 3 files of 4 blocks, twice.
        assert_eq!(files(rr(3), 3, 4, 24), "000111222012".repeat(2));
        let seq = FileService {
            choice: FileChoice::Sequential,
            ..FileService::default()
        };
        assert_eq!(files(seq, 3, 4, 12), "000011112222");
        // Files that never end (no random map): sequential stays on the first.
        let never = FileService { ends: false, ..seq };
        assert_eq!(files(never, 3, 4, 12), "000000000000");
    }
}
