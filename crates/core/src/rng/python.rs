//! [`PyRandom`]: CPython's `random` module draw for draw (its MT19937, seeded as
//! `random.seed(n)` seeds it from a non-negative integer), where iolab repeats a Python
//! reference tool's random choices (kv-cache.py's users).

const N: usize = 624;
const M: usize = 397;

/// CPython's `random.Random`, for the draws iolab repeats.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    i: usize,
}

impl std::fmt::Debug for PyRandom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PyRandom {{ i: {} }}", self.i)
    }
}

impl PyRandom {
    /// As `random.seed(seed)`: the integer's 32-bit words, least significant first,
    /// through MT19937's `init_by_array`.
    pub fn new(seed: u64) -> Self {
        let key: Vec<u32> = if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        let mut mt = [0u32; N];
        mt[0] = 19_650_218;
        for i in 1..N {
            let p = mt[i - 1];
            mt[i] = 1_812_433_253u32
                .wrapping_mul(p ^ (p >> 30))
                .wrapping_add(i as u32);
        }
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let p = mt[i - 1];
            mt[i] = (mt[i] ^ (p ^ (p >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let p = mt[i - 1];
            mt[i] = (mt[i] ^ (p ^ (p >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        PyRandom { mt, i: N }
    }

    /// MT19937's next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.i >= N {
            for k in 0..N {
                let y = (self.mt[k] & 0x8000_0000) | (self.mt[(k + 1) % N] & 0x7fff_ffff);
                let odd = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ odd;
            }
            self.i = 0;
        }
        let mut y = self.mt[self.i];
        self.i += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random.random()`: a float in [0, 1) of 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// `random._randbelow(n)` for 0 < n <= 2^32: `getrandbits(n.bit_length())` until
    /// below `n` (what `choice` and `randint` draw).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0 && n <= 1 << 32, "PyRandom::below({n})");
        let k = 64 - n.leading_zeros();
        loop {
            let r = u64::from(self.next_u32() >> (32 - k.min(32)));
            if r < n {
                return r;
            }
        }
    }

    /// `random.randint(lo, hi)`: uniform in [lo, hi], both included.
    pub fn randint(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// `random.uniform(lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.random()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPython 3.11: `random.seed(42); [random.random() for _ in range(3)]`, then
    /// `random.randint(1, 6)` x 5 and `random.choice(range(3))` x 5 after `seed(7)`.
    #[test]
    fn its_draws_are_cpythons() {
        let mut r = PyRandom::new(42);
        let got: Vec<f64> = (0..3).map(|_| r.random()).collect();
        assert_eq!(
            got,
            [
                0.6394267984578837,
                0.025010755222666936,
                0.27502931836911926
            ]
        );
        let mut r = PyRandom::new(7);
        let dice: Vec<u64> = (0..5).map(|_| r.randint(1, 6)).collect();
        let picks: Vec<u64> = (0..5).map(|_| r.below(3)).collect();
        assert_eq!((dice, picks), (DICE.to_vec(), PICKS.to_vec()));
    }

    const DICE: [u64; 5] = [3, 2, 4, 6, 1];
    const PICKS: [u64; 5] = [0, 2, 0, 1, 2];

    #[test]
    fn a_seed_above_32_bits_takes_two_words() {
        let mut r = PyRandom::new(1 << 40);
        assert_eq!(r.random(), BIG_SEED_FIRST);
    }

    const BIG_SEED_FIRST: f64 = 0.1036394562812375;
}
