//! CPython's `random.Random` (MT19937) for int seeds: `init_by_array`
//! seeding, `random()`, `getrandbits(k)`, `_randbelow` (rejection sampling on
//! `getrandbits(n.bit_length())`), `randint` and `uniform`, bit for bit.

const N: usize = 624;
const M: usize = 397;

/// `random.Random(seed)`.
#[derive(Clone)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    /// `random.Random(seed)` for an int seed (CPython uses `abs(seed)`).
    pub fn new(seed: i128) -> PyRandom {
        let mut n = seed.unsigned_abs();
        let mut key = Vec::new();
        while n > 0 {
            key.push(n as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        let mut r = PyRandom {
            mt: [0; N],
            index: N,
        };
        r.init_by_array(&key);
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1812433253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19650218);
        let (mut i, mut j) = (1usize, 0usize);
        let mut k = N.max(key.len());
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1664525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
            k -= 1;
        }
        k = N - 1;
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1566083941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            k -= 1;
        }
        self.mt[0] = 0x8000_0000;
    }

    fn genrand_u32(&mut self) -> u32 {
        if self.index >= N {
            for kk in 0..N {
                let y = (self.mt[kk] & 0x8000_0000) | (self.mt[(kk + 1) % N] & 0x7fff_ffff);
                let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
                self.mt[kk] = self.mt[(kk + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// `random()`: a float in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = (self.genrand_u32() >> 5) as f64;
        let b = (self.genrand_u32() >> 6) as f64;
        (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
    }

    /// `getrandbits(k)` for `k <= 128`.
    pub fn getrandbits(&mut self, k: u32) -> u128 {
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return (self.genrand_u32() >> (32 - k)) as u128;
        }
        let mut out: u128 = 0;
        let mut left = k;
        let mut shift = 0;
        while left > 0 {
            let mut r = self.genrand_u32();
            if left < 32 {
                r >>= 32 - left;
            }
            out |= (r as u128) << shift;
            shift += 32;
            left = left.saturating_sub(32);
        }
        out
    }

    fn randbelow(&mut self, n: u128) -> u128 {
        let k = 128 - n.leading_zeros();
        let mut r = self.getrandbits(k);
        while r >= n {
            r = self.getrandbits(k);
        }
        r
    }

    /// `randint(a, b)`: `a + _randbelow(b - a + 1)`.
    pub fn randint(&mut self, a: i64, b: i64) -> i64 {
        let width = (b as i128 - a as i128 + 1) as u128;
        (a as i128 + self.randbelow(width) as i128) as i64
    }

    /// `uniform(a, b)`: `a + (b - a) * random()`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from CPython 3.11 (`random.Random(seed)`).
    #[test]
    fn matches_cpython() {
        let mut r = PyRandom::new(200191);
        let v: Vec<i64> = (0..3).map(|_| r.randint(10000, 99999)).collect();
        assert_eq!(v, [67410, 41772, 24547]);

        let mut r = PyRandom::new(141053);
        assert_eq!(r.uniform(-10.0, 40.0), 36.63485703790535);
        assert_eq!(r.uniform(-10.0, 40.0), 31.29968928699752);
        assert_eq!(r.random(), 0.37092346839795565);

        let mut r = PyRandom::new(1053520);
        assert_eq!(r.randint(100000000000, 999999999999), 158096061786);
        assert_eq!(r.randint(100000000000, 999999999999), 909576826245);
        assert_eq!(r.getrandbits(70), 870753702004247338888);

        let mut r = PyRandom::new(0);
        assert_eq!(r.randint(1, 6), 4);
        assert_eq!(r.random(), f64::from_bits(0x3fe84129978f9c1a));

        let mut r = PyRandom::new((1i128 << 40) + 5);
        assert_eq!(r.getrandbits(32), 2166296868);
    }
}
