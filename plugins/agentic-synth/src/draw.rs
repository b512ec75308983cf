//! Deterministic draws: SplitMix64 and the distributions built on it. The
//! same seed gives the same trajectories on every host (the arithmetic is
//! the guest's, compiled to WebAssembly).

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and every seed is good.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed`, split by `stream` (a session index, say).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % u64::from(hi - lo + 1)) as u32
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A draw from `dist`, rounded and clamped to its bounds.
    pub fn draw(&mut self, dist: &LogNormal) -> u32 {
        let x = dist.median * (dist.sigma * self.normal()).exp();
        x.round().clamp(f64::from(dist.min), f64::from(dist.max)) as u32
    }
}

/// A log-normal distribution by its median and shape, clamped to `[min, max]`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogNormal {
    pub median: f64,
    /// Standard deviation of the logarithm.
    pub sigma: f64,
    pub min: u32,
    pub max: u32,
}

impl LogNormal {
    /// Why it cannot be drawn from, if it cannot.
    pub fn invalid(&self) -> Option<&'static str> {
        if !(self.median.is_finite() && self.median > 0.0) {
            Some("`median` must be a positive number")
        } else if !(self.sigma.is_finite() && self.sigma >= 0.0) {
            Some("`sigma` must be a non-negative number")
        } else if self.min > self.max {
            Some("`min` must not exceed `max`")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::new(7, 1).next_u64(), Rng::new(7, 2).next_u64());
        assert_ne!(Rng::new(7, 1).next_u64(), Rng::new(8, 1).next_u64());
    }

    #[test]
    fn lognormal_draws_have_their_median_and_bounds() {
        let dist = LogNormal {
            median: 1000.0,
            sigma: 0.9,
            min: 50,
            max: 5000,
        };
        let mut rng = Rng::new(1, 0);
        let mut xs: Vec<u32> = (0..20_001).map(|_| rng.draw(&dist)).collect();
        xs.sort_unstable();
        let median = xs[xs.len() / 2];
        assert!((900..1100).contains(&median), "median {median}");
        assert_eq!((xs[0], xs[xs.len() - 1]), (50, 5000));
    }
}
