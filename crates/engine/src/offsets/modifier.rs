//! fio's `rw=...:N` modifiers as offset generators: [`Skipping`] (a sequential job that
//! moves N bytes past the end of each I/O, or back, as `rw=read:-8k`) and [`Runs`] (a
//! random job that goes on sequentially for N I/Os from each random offset). Both
//! follow fio 3.33's io_u.c (`get_next_seq_offset`, `get_next_offset`).

use iolab_core::rng::mix;
use iolab_core::spec::RandomKind;

use super::OffsetGen;

/// What fio's `rw=...:N` asks of a worker's sequence, in blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqModifier {
    /// Blocks added after the end of each sequential I/O (negative: backwards).
    pub skip: i64,
    /// A random job: I/Os per random offset, the rest following it in sequence (1: every
    /// I/O random).
    pub run: u32,
}

impl SeqModifier {
    pub fn is_plain(&self) -> bool {
        self.skip == 0 && self.run <= 1
    }
}

/// fio's sequential order with holes: the first I/O at block 0, each next one `skip`
/// blocks after the end of the one before (before its start when negative). Past the
/// end it starts again at 0; before the start (backwards) it goes on from the end.
pub struct Skipping {
    blocks: u64,
    skip: i64,
    /// The end of the last I/O; None before the first.
    last_end: Option<u64>,
    remaining: u64,
    looping: bool,
}

impl Skipping {
    pub fn new(blocks: u64, skip: i64, count: u64, looping: bool) -> Self {
        Skipping {
            blocks,
            skip,
            last_end: None,
            remaining: count,
            looping,
        }
    }
}

impl OffsetGen for Skipping {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.blocks == 0 || (!self.looping && self.remaining == 0) {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        let n = self.blocks as i128;
        let b = match self.last_end {
            None | Some(0) => 0,
            Some(end) => {
                let pos = end as i128 + self.skip as i128;
                if pos >= 0 && pos < n {
                    pos
                } else if self.skip > 0 {
                    0
                } else {
                    (n + self.skip as i128).clamp(0, n - 1)
                }
            }
        } as u64;
        self.last_end = Some(b + 1);
        Some(b)
    }
}

/// fio's `rw=randread:N`: every Nth I/O at a random block of `random`, the ones between
/// in sequence after it (the first N-1 from block 0, as fio's start); a sequence that
/// reaches the end takes a random block instead.
pub struct Runs {
    random: Box<dyn OffsetGen>,
    blocks: u64,
    run: u32,
    left: u32,
    next_seq: u64,
    remaining: u64,
    looping: bool,
}

impl Runs {
    pub fn new(
        random: Box<dyn OffsetGen>,
        blocks: u64,
        run: u32,
        count: u64,
        looping: bool,
    ) -> Self {
        Runs {
            random,
            blocks,
            run: run.max(1),
            left: run.max(1),
            next_seq: 0,
            remaining: count,
            looping,
        }
    }
}

impl OffsetGen for Runs {
    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.blocks == 0 || (!self.looping && self.remaining == 0) {
            return None;
        }
        self.remaining = self.remaining.saturating_sub(1);
        self.left -= 1;
        let b = if self.left == 0 || self.next_seq >= self.blocks {
            if self.left == 0 {
                self.left = self.run;
            }
            self.random.next()?
        } else {
            self.next_seq
        };
        self.next_seq = b + 1;
        Some(b)
    }
}

/// [`generator_over_files`](super::generator_over_files) with fio's `rw=...:N` applied
/// to each file's sequence.
pub fn modified_over_files(
    random: Option<RandomKind>,
    blocks: u64,
    files: u32,
    count: u64,
    looping: bool,
    seed: u64,
    modifier: SeqModifier,
) -> Box<dyn OffsetGen> {
    if modifier.is_plain() {
        return super::generator_over_files(random, blocks, files, count, looping, seed);
    }
    let n = u64::from(files.max(1));
    let one = |blocks: u64, count: u64, seed: u64| -> Box<dyn OffsetGen> {
        match random {
            None => Box::new(Skipping::new(blocks, modifier.skip, count, looping)),
            Some(_) => Box::new(Runs::new(
                super::generator(random, blocks, count, looping, seed),
                blocks,
                modifier.run,
                count,
                looping,
            )),
        }
    };
    if n == 1 {
        return one(blocks, count, seed);
    }
    Box::new(super::RoundRobin {
        gens: (0..n)
            .map(|f| {
                one(
                    blocks / n,
                    count / n + u64::from(f < count % n),
                    mix(&[seed, f]),
                )
            })
            .collect(),
        turn: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offsets::Uniform;

    fn drain(g: &mut dyn OffsetGen) -> Vec<u64> {
        std::iter::from_fn(|| g.next()).take(100).collect()
    }

    #[test]
    fn backwards_reads_as_fios_read_minus_8k() {
        // bs=4k, rw=read:-8k over 6 blocks: 0, then from the end back one block a time
        // (fio: 0, 16k, 12k, 8k, 4k, 0 for a 24k file).
        assert_eq!(
            drain(&mut Skipping::new(6, -2, 6, false)),
            vec![0, 4, 3, 2, 1, 0]
        );
    }

    #[test]
    fn holes_skip_forward_and_wrap_to_the_start() {
        // bs=4k, rw=write:4k over 5 blocks, 5 I/Os: 0, 8k, 16k, then wrap.
        assert_eq!(
            drain(&mut Skipping::new(5, 1, 5, false)),
            vec![0, 2, 4, 0, 2]
        );
    }

    #[test]
    fn random_runs_go_on_in_sequence() {
        let v = drain(&mut Runs::new(
            Box::new(Uniform::new(1000, 100, false, 7)),
            1000,
            4,
            12,
            false,
        ));
        assert_eq!(v.len(), 12);
        // The first three from 0, then a random block and the two after it, ...
        assert_eq!(&v[..3], [0, 1, 2]);
        for k in [3usize, 7] {
            assert_eq!(v[k + 1], v[k] + 1);
            assert_eq!(v[k + 2], v[k] + 2);
        }
    }
}
