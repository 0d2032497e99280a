//! fio's own 32-bit generator, a taus88 Tausworthe (fio 3.33's lib/rand.c: `__rand32`,
//! seeded by `__init_rand32`), for the choices iolab makes in fio's exact sequence:
//! `percentage_random`'s random-or-sequential draw and `file_service_type=random`'s file.

/// fio's taus88 state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Taus88 {
    s: [u32; 3],
}

impl Taus88 {
    /// As fio's `init_rand_seed(state, seed, false)`: the seed's low 32 bits.
    pub(crate) fn new(seed: u32) -> Self {
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let floor = |x: u32, m: u32| if x < m { x + m } else { x };
        // fio writes the start as (2^31) + (2^17) + (2^7): C's xor, 53.
        let s1 = floor(lcg(53), 1);
        let s2 = floor(lcg(s1), 7);
        let s3 = floor(lcg(s2), 15);
        let mut t = Taus88 { s: [s1, s2, s3] };
        for _ in 0..6 {
            t.next();
        }
        t
    }

    pub(crate) fn next(&mut self) -> u32 {
        let step = |s: u32, a: u32, b: u32, c: u32, d: u32| ((s & c) << d) ^ (((s << a) ^ s) >> b);
        self.s[0] = step(self.s[0], 13, 19, 4294967294, 12);
        self.s[1] = step(self.s[1], 2, 25, 4294967288, 4);
        self.s[2] = step(self.s[2], 3, 11, 4294967280, 17);
        self.s[0] ^ self.s[1] ^ self.s[2]
    }

    /// fio's `rand_between(state, 1, 100)`.
    pub(crate) fn percent(&mut self) -> u32 {
        let r = self.next();
        1 + (100.0 * (f64::from(r) / 4294967296.0)) as u32
    }

    /// One of `n`, as fio 3.33's `__get_next_fileno_rand` scales a draw:
    /// `(double) n * (r / (FRAND32_MAX + 1.0))`.
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        let r = self.next();
        (f64::from(n) * (f64::from(r) / 4294967296.0)) as u32
    }
}
