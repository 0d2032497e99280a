//! [`ObjectPlan`]: an S3 workload resolved for this rank. Keys are
//! `<prefix>iolab-<token>/w<worker>/<n>`: the run's token (made on rank 0, the same on
//! every rank) keeps two runs in one bucket apart, each worker (of every rank) has its
//! own directory to list, and object n's size is drawn from the seed, so every rank
//! knows an object's size from its name. [`Pool`] is the objects a worker has.

use iolab_core::rng::{Rng, mix};
use iolab_core::spec::{ObjectSizes, S3Spec};

/// The marker object rank 0 writes first and removes last: the run's prefix is iolab's.
pub const MARKER: &str = ".iolab-run";

/// Slots of the mixed table: each operation's share of 1000, shuffled once (warp's).
const MIX_SLOTS: u64 = 1000;

#[derive(Clone, Debug)]
pub struct ObjectPlan {
    pub spec: S3Spec,
    pub rank: u32,
    pub ranks: u32,
    /// Workers (connections) per rank and in all.
    pub concurrency: u32,
    pub workers: u32,
    /// `<prefix>iolab-<token>/`.
    pub root: String,
    pub sizes: ObjectSizes,
}

/// One mixed-table slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixOp {
    Get,
    Stat,
    Put,
    Delete,
}

impl ObjectPlan {
    pub fn new(spec: &S3Spec, rank: u32, ranks: u32, token: &str) -> ObjectPlan {
        ObjectPlan {
            spec: spec.clone(),
            rank,
            ranks,
            concurrency: spec.concurrency,
            workers: spec.concurrency * ranks,
            root: format!("{}iolab-{token}/", spec.prefix),
            sizes: spec.sizes(),
        }
    }

    /// The global number of this rank's worker `local`.
    pub fn global(&self, local: u32) -> u32 {
        self.rank * self.concurrency + local
    }

    /// The marker's key.
    pub fn marker(&self) -> String {
        format!("{}{MARKER}", self.root)
    }

    /// Worker `g`'s directory, `<root>w<g>/`.
    pub fn dir_of(&self, g: u32) -> String {
        format!("{}w{g}/", self.root)
    }

    /// Writes object `n` of worker `g`'s key into `out`.
    pub fn key_into(&self, g: u32, n: u64, out: &mut String) {
        use std::fmt::Write;
        out.clear();
        out.push_str(&self.root);
        let _ = write!(out, "w{g}/{n}");
    }

    /// The size of object `n` of worker `g`.
    pub fn size_of(&self, g: u32, n: u64) -> u64 {
        match self.sizes {
            ObjectSizes::Fixed(s) => s,
            sizes => {
                let u =
                    (mix(&[self.spec.seed, u64::from(g), n]) >> 11) as f64 / (1u64 << 53) as f64;
                sizes.draw(u)
            }
        }
    }

    /// The number that seeds object `n`'s data (different for every object).
    pub fn data_of(&self, g: u32, n: u64) -> u64 {
        mix(&[self.spec.seed ^ 0xDA7A, u64::from(g), n])
    }

    /// Worker `g`'s share of --objects.
    pub fn share_of(&self, g: u32) -> u64 {
        let w = u64::from(self.workers.max(1));
        self.spec.objects / w + u64::from(u64::from(g) < self.spec.objects % w)
    }

    /// warp's mixed table: each operation's share of 1000 slots (rounded), shuffled with
    /// a fixed seed.
    pub fn mix_table(&self) -> Vec<MixOp> {
        let s = self.spec.shares();
        let total = s.get + s.stat + s.put + s.delete;
        let mut t = Vec::with_capacity(MIX_SLOTS as usize + 4);
        for (op, share) in [
            (MixOp::Get, s.get),
            (MixOp::Stat, s.stat),
            (MixOp::Put, s.put),
            (MixOp::Delete, s.delete),
        ] {
            let n = (0.5 + share / total * MIX_SLOTS as f64) as usize;
            t.extend(std::iter::repeat_n(op, n));
        }
        let mut rng = Rng::new(0xabad_1dea);
        for i in (1..t.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            t.swap(i, j);
        }
        t
    }
}

/// The objects one worker has: their numbers, and the next number a PUT takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pool {
    pub live: Vec<u64>,
    pub next: u64,
}

impl Pool {
    pub fn add(&mut self) -> u64 {
        let n = self.next;
        self.next += 1;
        self.live.push(n);
        n
    }

    /// Takes object number `i` of the live ones out (order not kept).
    pub fn take(&mut self, i: usize) -> u64 {
        self.live.swap_remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(objects: u64, concurrency: u32, ranks: u32, rank: u32) -> ObjectPlan {
        let spec = S3Spec {
            bucket: "bkt".into(),
            prefix: "bench/".into(),
            objects,
            concurrency,
            ..S3Spec::default()
        };
        ObjectPlan::new(&spec, rank, ranks, "t0k")
    }

    #[test]
    fn shares_add_up_and_keys_are_the_runs() {
        let p = plan(10, 3, 2, 1);
        assert_eq!(p.workers, 6);
        let total: u64 = (0..6).map(|g| p.share_of(g)).sum();
        assert_eq!(total, 10);
        assert_eq!(p.global(2), 5);
        let mut k = String::new();
        p.key_into(5, 17, &mut k);
        assert_eq!(k, "bench/iolab-t0k/w5/17");
        assert_eq!(p.dir_of(5), "bench/iolab-t0k/w5/");
        assert_eq!(p.marker(), "bench/iolab-t0k/.iolab-run");
    }

    #[test]
    fn mix_table_has_warps_shares() {
        let t = plan(10, 1, 1, 0).mix_table();
        let n = |op| t.iter().filter(|o| **o == op).count();
        assert_eq!(
            (
                n(MixOp::Get),
                n(MixOp::Stat),
                n(MixOp::Put),
                n(MixOp::Delete)
            ),
            (450, 300, 150, 100)
        );
        // Shuffled: the first 100 slots are not all one operation.
        assert!(t[..100].iter().any(|o| *o != t[0]));
    }
}
