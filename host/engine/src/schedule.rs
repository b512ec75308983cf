//! Open-loop schedules: the due time of every arrival of a phase, drawn from one seed before
//! the phase starts, on one host or split over shards (arrival `k` belongs to shard
//! `k mod N`, so every due time is issued by exactly one of them).
//!
//! Gaps are drawn in *operational time* (a process of rate 1: constant 1, exponential of
//! mean 1, or gamma of mean 1 and the configured CV) and mapped to the phase's clock by the
//! inverse of the cumulative rate `Λ(t) = ∫₀ᵗ λ(u) du`: `t = s / λ` without a ramp; a linear
//! or exponential rate ramp from `r₀` to `λ` over `T` inverts in closed form. A phase of a
//! fixed number of arrivals `N` scales its drawn operational times so that the N-th is
//! exactly `N` (as vLLM does): its arrivals take exactly the time their rate says, and the
//! delivered mean rate is the configured one rather than a random draw about it (the gaps'
//! shape is unchanged; the scale factor is `1 ± CV/√N`). A sweep level's stream is endless
//! (its end rules stop it) and unscaled.

use agentload_config::RampShape;

/// The law of the gaps, at rate 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gaps {
    Constant,
    Exponential,
    /// Gamma with this coefficient of variation.
    Gamma {
        cv: f64,
    },
}

/// A rate ramp: from `from` arrivals per second to the schedule's rate over `seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRamp {
    pub shape: RampShape,
    pub from: f64,
    pub seconds: f64,
}

/// What a schedule is drawn from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    pub gaps: Gaps,
    /// Arrivals per second (after the ramp).
    pub rate: f64,
    pub seed: u64,
    pub ramp: Option<RateRamp>,
}

impl Spec {
    /// The seed of a sweep's `level`-th phase (each level draws its own stream).
    pub fn for_level(mut self, level: usize) -> Self {
        self.seed ^= (level as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self
    }

    /// The phase time (s) at operational time `s` (arrivals expected by then).
    pub fn time_at(&self, s: f64) -> f64 {
        let rate = self.rate;
        let Some(ramp) = self.ramp else {
            return s / rate;
        };
        let (r0, t) = (ramp.from, ramp.seconds);
        match ramp.shape {
            RampShape::Linear => {
                let in_ramp = (r0 + rate) * t / 2.0;
                if s >= in_ramp {
                    return t + (s - in_ramp) / rate;
                }
                // r0·x + a·x² = s with a = (λ − r0)/(2T); the stable root.
                let a = (rate - r0) / (2.0 * t);
                let disc = (r0 * r0 + 4.0 * a * s).max(0.0);
                2.0 * s / (r0 + disc.sqrt())
            }
            RampShape::Exponential => {
                let k = (rate / r0).ln() / t;
                if k.abs() < 1e-12 {
                    return s / rate;
                }
                let in_ramp = (rate - r0) / k;
                if s >= in_ramp {
                    return t + (s - in_ramp) / rate;
                }
                (1.0 + k * s / r0).ln() / k
            }
        }
    }

    /// When the ramp ends (s), 0 without one.
    pub fn ramp_end_s(&self) -> f64 {
        self.ramp.map_or(0.0, |r| r.seconds)
    }
}

/// The due times (ns after the phase's origin) of `count` arrivals, the last one's
/// operational time scaled to exactly `count`.
pub fn fixed(spec: &Spec, count: u64) -> Vec<u64> {
    let mut draw = Draw::new(spec);
    let mut s = Vec::with_capacity(count as usize);
    let mut at = 0.0;
    for _ in 0..count {
        at += draw.gap();
        s.push(at);
    }
    let scale = if at > 0.0 { count as f64 / at } else { 1.0 };
    s.into_iter()
        .map(|x| seconds_to_ns(spec.time_at(x * scale)))
        .collect()
}

/// An endless stream of due times (ns after the phase's origin), unscaled.
pub struct Endless {
    spec: Spec,
    draw: Draw,
    at: f64,
}

impl Endless {
    pub fn new(spec: &Spec) -> Self {
        Self {
            spec: *spec,
            draw: Draw::new(spec),
            at: 0.0,
        }
    }
}

impl Iterator for Endless {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.at += self.draw.gap();
        Some(seconds_to_ns(self.spec.time_at(self.at)))
    }
}

/// A trace's times (ms, in order) as due times: from its first line, multiplied by `scale`.
pub fn from_trace(times_ms: &[f64], scale: f64) -> Vec<u64> {
    let first = times_ms.first().copied().unwrap_or(0.0);
    times_ms
        .iter()
        .map(|t| seconds_to_ns((t - first) / 1e3 * scale))
        .collect()
}

/// A concurrency ramp's start of each of `to` workers (or agents), from `from` at once to
/// `to` after `seconds`: worker `w` starts when the ramp's concurrency reaches `w + 1`
/// (linear, or the same factor every equal step of time).
pub fn ramp_starts(
    shape: RampShape,
    from: f64,
    to: usize,
    seconds: f64,
) -> Vec<std::time::Duration> {
    let to_f = to as f64;
    (0..to)
        .map(|w| {
            let need = (w + 1) as f64;
            let t = if need <= from || to_f <= from {
                0.0
            } else {
                match shape {
                    RampShape::Linear => (need - from) / (to_f - from) * seconds,
                    RampShape::Exponential => (need / from).ln() / (to_f / from).ln() * seconds,
                }
            };
            std::time::Duration::from_secs_f64(t.clamp(0.0, seconds))
        })
        .collect()
}

fn seconds_to_ns(s: f64) -> u64 {
    (s * 1e9).round().max(0.0) as u64
}

/// Gap draws at rate 1.
struct Draw {
    gaps: Gaps,
    rng: SplitMix64,
    /// Gamma's shape (1/cv²).
    shape: f64,
}

impl Draw {
    fn new(spec: &Spec) -> Self {
        let shape = match spec.gaps {
            Gaps::Gamma { cv } => 1.0 / (cv * cv),
            _ => 1.0,
        };
        Self {
            gaps: spec.gaps,
            rng: SplitMix64(spec.seed),
            shape,
        }
    }

    fn gap(&mut self) -> f64 {
        match self.gaps {
            Gaps::Constant => 1.0,
            Gaps::Exponential => -self.rng.open01().ln(),
            Gaps::Gamma { .. } => gamma(&mut self.rng, self.shape) / self.shape,
        }
    }
}

/// A gamma draw of `shape` and scale 1 (Marsaglia and Tsang, 2000; below shape 1 by
/// `Γ(a) = Γ(a + 1)·U^{1/a}`).
fn gamma(rng: &mut SplitMix64, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = rng.open01();
        return gamma(rng, shape + 1.0) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = rng.normal();
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.open01();
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || u.ln() < 0.5 * x2 + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood): 64 bits of state, every seed a good stream.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1), never 0 or 1.
    fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller; one of the pair).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.open01(), self.open01());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_results::fit::{ks, mean_cv, Law};

    fn spec(gaps: Gaps, rate: f64) -> Spec {
        Spec {
            gaps,
            rate,
            seed: 3,
            ramp: None,
        }
    }

    fn gaps_s(due: &[u64]) -> Vec<f64> {
        let mut prev = 0;
        due.iter()
            .map(|&d| {
                let g = (d - prev) as f64 / 1e9;
                prev = d;
                g
            })
            .collect()
    }

    #[test]
    fn drawn_gaps_follow_their_law_and_a_wrong_law_is_rejected() {
        for (gaps, law, wrong) in [
            (
                Gaps::Exponential,
                Law::Exponential { mean: 0.01 },
                Law::gamma_with(0.01, 1.1),
            ),
            (
                Gaps::Gamma { cv: 2.0 },
                Law::gamma_with(0.01, 2.0),
                Law::gamma_with(0.01, 1.8),
            ),
            (
                Gaps::Gamma { cv: 0.5 },
                Law::gamma_with(0.01, 0.5),
                Law::gamma_with(0.01, 0.55),
            ),
        ] {
            let due = fixed(&spec(gaps, 100.0), 10_000);
            assert_eq!(due.len(), 10_000);
            // The last arrival is due at exactly count / rate.
            assert_eq!(*due.last().unwrap(), 100_000_000_000);
            let g = gaps_s(&due);
            let right = ks(&g, |x| law.cdf(x)).unwrap();
            assert!(right.passes(0.01), "{gaps:?}: {right:?}");
            let bad = ks(&g, |x| wrong.cdf(x)).unwrap();
            assert!(!bad.passes(0.01), "{gaps:?} against {wrong:?}: {bad:?}");
            let (mean, cv) = mean_cv(&g).unwrap();
            assert!((mean - 0.01).abs() < 1e-4, "{mean}");
            assert!((cv / law.cv() - 1.0).abs() < 0.05, "{gaps:?}: cv {cv}");
        }
    }

    #[test]
    fn a_seed_gives_one_schedule_and_constant_gaps_are_exact() {
        let s = spec(Gaps::Gamma { cv: 2.0 }, 50.0);
        assert_eq!(fixed(&s, 100), fixed(&s, 100));
        let other = Spec { seed: 4, ..s };
        assert_ne!(fixed(&s, 100), fixed(&other, 100));
        assert_ne!(fixed(&s.for_level(0), 100), fixed(&s.for_level(1), 100));
        let c = fixed(&spec(Gaps::Constant, 4.0), 3);
        assert_eq!(c, [250_000_000, 500_000_000, 750_000_000]);
        let endless: Vec<u64> = Endless::new(&spec(Gaps::Constant, 4.0)).take(3).collect();
        assert_eq!(endless, c);
    }

    #[test]
    fn a_ramp_inverts_its_cumulative_rate() {
        for shape in [RampShape::Linear, RampShape::Exponential] {
            let s = Spec {
                ramp: Some(RateRamp {
                    shape,
                    from: 1.0,
                    seconds: 10.0,
                }),
                ..spec(Gaps::Constant, 100.0)
            };
            // Λ(t) by numeric integration of the rate, against the inverse.
            let rate = |t: f64| match shape {
                RampShape::Linear => 1.0 + 99.0 * t / 10.0,
                RampShape::Exponential => 100f64.powf(t / 10.0),
            };
            let mut cumulative = 0.0;
            let dt = 1e-5;
            let mut t = 0.0;
            for target in [0.5, 10.0, 200.0, 400.0] {
                while cumulative < target && t < 10.0 {
                    cumulative += rate(t + dt / 2.0) * dt;
                    t += dt;
                }
                if t < 10.0 {
                    assert!((s.time_at(target) - t).abs() < 1e-3, "{shape:?} {target}");
                }
            }
            // After the ramp: the full rate.
            let end = s.time_at(1e6);
            let later = s.time_at(1e6 + 100.0);
            assert!((later - end - 1.0).abs() < 1e-9);
            assert!(s.time_at(1e6) > 10.0);
            // A linear ramp from 0 starts slowly but starts.
            let zero = Spec {
                ramp: Some(RateRamp {
                    shape: RampShape::Linear,
                    from: 0.0,
                    seconds: 2.0,
                }),
                ..spec(Gaps::Constant, 10.0)
            };
            // Λ(t) = 2.5 t² in the ramp: the first arrival at √(1/2.5).
            assert!((zero.time_at(1.0) - (0.4f64).sqrt()).abs() < 1e-12);
        }
    }

    #[test]
    fn a_concurrency_ramp_starts_workers_as_it_climbs() {
        let ms = |v: Vec<std::time::Duration>| -> Vec<u128> {
            v.into_iter().map(|d| d.as_millis()).collect()
        };
        assert_eq!(
            ms(ramp_starts(RampShape::Linear, 1.0, 5, 4.0)),
            [0, 1000, 2000, 3000, 4000]
        );
        assert_eq!(
            ms(ramp_starts(RampShape::Exponential, 1.0, 8, 3.0)),
            [0, 1000, 1584, 2000, 2321, 2584, 2807, 3000]
        );
        assert_eq!(
            ms(ramp_starts(RampShape::Linear, 3.0, 4, 1.0)),
            [0, 0, 0, 1000]
        );
    }

    #[test]
    fn a_trace_keeps_its_times_from_its_first_line() {
        assert_eq!(
            from_trace(&[1000.0, 1000.5, 3000.0], 0.5),
            [0, 250_000, 1_000_000_000]
        );
    }
}
