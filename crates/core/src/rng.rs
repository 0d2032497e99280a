//! Seeded, reproducible randomness: [`Rng`] (xoshiro256++ seeded by SplitMix64) for
//! offsets, op mixes and data, [`Permutation`], a keyed bijection on `0..n` that
//! visits every block exactly once without storing the order, and [`GlibcRand`], glibc's
//! `rand()` draw for draw, where iolab repeats a reference tool's random choices, and
//! [`PyRandom`], CPython's `random` the same way.

mod python;
pub use python::PyRandom;

/// SplitMix64 step: turns any seed (even 0) into well-mixed 64-bit values.
#[inline]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mixes several words into one seed (used to derive per-worker and per-block streams).
pub fn mix(words: &[u64]) -> u64 {
    let mut state = 0x1234_5678_9ABC_DEF0u64;
    let mut out = 0;
    for w in words {
        state ^= *w;
        out ^= splitmix64(&mut state);
    }
    out
}

/// xoshiro256++: fast, small, statistically strong; not for cryptography.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-64 * n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// True with probability `percent`/100.
    #[inline]
    pub fn percent(&mut self, percent: u8) -> bool {
        self.below(100) < percent as u64
    }

    /// Fills `buf` with pseudo-random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let v = self.next_u64().to_le_bytes();
            let n = rest.len();
            rest.copy_from_slice(&v[..n]);
        }
    }
}

/// A keyed permutation of `0..n`: `get(i)` for i in `0..n` returns every value of `0..n`
/// exactly once. Built from bijective mixing rounds on the smallest power of two >= n,
/// with cycle walking for values that fall outside `0..n` (under 2 steps on average).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    bits: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = if n <= 1 {
            1
        } else {
            64 - (n - 1).leading_zeros()
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut sm = seed ^ 0xA076_1D64_78BD_642F;
        let keys = [
            splitmix64(&mut sm) | 1,
            splitmix64(&mut sm),
            splitmix64(&mut sm) | 1,
            splitmix64(&mut sm),
        ];
        Permutation {
            n,
            bits,
            mask,
            keys,
        }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// One bijective scramble of `bits`-bit values.
    #[inline]
    fn round(&self, mut x: u64) -> u64 {
        let half = self.bits.div_ceil(2).max(1);
        // Each step is a bijection on [0, 2^bits): multiply by an odd number, add a
        // constant, and xor with a right shift of itself (all modulo 2^bits).
        x = x.wrapping_mul(self.keys[0]) & self.mask;
        x = x.wrapping_add(self.keys[1]) & self.mask;
        x ^= x >> half;
        x = x.wrapping_mul(self.keys[2]) & self.mask;
        x = x.wrapping_add(self.keys[3]) & self.mask;
        x ^= x >> half;
        x = x.wrapping_mul(self.keys[0]) & self.mask;
        x ^= x >> half;
        x
    }

    /// The `i`-th element of the permutation; `i` must be below `len()`.
    #[inline]
    pub fn get(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        if self.n <= 1 {
            return 0;
        }
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

/// glibc's `rand()` (its default additive feedback generator, `TYPE_3`: degree 31,
/// separation 3), the same sequence for the same `srand` seed; an unseeded `rand()` is
/// seed 1. pfind draws the rank it steals work from with an unseeded `rand()`, so iolab's
/// pfind walk makes the same choices in the same order.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    r: [u32; 34],
    i: usize,
}

impl GlibcRand {
    pub fn new(seed: u32) -> Self {
        let mut r = [0u32; 34];
        r[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // glibc's srandom_r: 16807 * r mod (2^31 - 1), by Schrage's method on i32.
            let prev = r[i - 1] as i32 as i64;
            let (hi, lo) = (prev / 127_773, prev % 127_773);
            let mut word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            r[i] = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = GlibcRand { r, i: 0 };
        // srandom_r discards the first 310 outputs.
        for _ in 34..344 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        // The last 34 words, as a ring: r[k] = r[k-31] + r[k-3].
        let k = self.i;
        let v = self.r[(k + 34 - 31) % 34].wrapping_add(self.r[(k + 34 - 3) % 34]);
        self.r[k] = v;
        self.i = (k + 1) % 34;
        v
    }

    /// The next `rand()`: 0 ..= 2^31 - 1.
    pub fn rand(&mut self) -> u32 {
        self.step() >> 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert, proptest};

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let va: Vec<u64> = (0..10).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..10).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..10).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn below_stays_in_range_and_spreads() {
        let mut r = Rng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = r.below(10);
            seen[v as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn percent_zero_and_hundred_are_absolute() {
        let mut r = Rng::new(3);
        assert!((0..1000).all(|_| !r.percent(0)));
        assert!((0..1000).all(|_| r.percent(100)));
    }

    #[test]
    fn filled_bytes_do_not_compress() {
        let mut buf = vec![0u8; 1 << 16];
        Rng::new(5).fill(&mut buf);
        let mut counts = [0u32; 256];
        for b in &buf {
            counts[*b as usize] += 1;
        }
        // Every byte value about equally frequent: entropy close to 8 bits per byte.
        let n = buf.len() as f64;
        let entropy: f64 = counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| {
                let p = c as f64 / n;
                -p * p.log2()
            })
            .sum();
        assert!(entropy > 7.99, "{entropy}");
    }

    #[test]
    fn permutation_is_not_the_identity() {
        let p = Permutation::new(1000, 42);
        let moved = (0..1000).filter(|&i| p.get(i) != i).count();
        assert!(moved > 900, "{moved}");
    }

    proptest! {
        #[test]
        fn permutation_hits_every_block_once(n in 1u64..5000, seed in any::<u64>()) {
            let p = Permutation::new(n, seed);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let v = p.get(i);
                prop_assert!(v < n);
                prop_assert!(!seen[v as usize], "{} visited twice", v);
                seen[v as usize] = true;
            }
        }
    }

    #[test]
    fn glibc_rand_repeats_glibcs_sequence() {
        // rand() of an unseeded glibc 2.36, one call per line; then after srand(7).
        let mut g = GlibcRand::new(1);
        let first: Vec<u32> = (0..6).map(|_| g.rand()).collect();
        assert_eq!(
            first,
            [
                1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335
            ]
        );
        let mut g = GlibcRand::new(7);
        assert_eq!((g.rand(), g.rand()), (1045618677, 1863967299));
    }
}
