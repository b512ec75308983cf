//! Goodness of fit of a delivered arrival stream: the one-sample Kolmogorov–Smirnov test of
//! inter-arrival times against the configured process's law, with the functions it needs
//! (the Kolmogorov distribution, the regularized incomplete gamma function).
//!
//! - `D = sup |F_n(x) − F(x)|` over the sorted sample (both one-sided gaps at each point).
//! - The p-value is the Kolmogorov distribution's survival function at
//!   `(√n + 0.12 + 0.11/√n)·D` (Stephens' correction, as Numerical Recipes uses it): within a
//!   few per cent of the exact finite-`n` value where it matters (p near 0.01, n ≥ 35; the
//!   tests compare it with SciPy's exact `kstwo`).
//! - `Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}` for λ ≥ 1.18, else
//!   `1 − √(2π)/λ Σ_{k≥1} e^{−(2k−1)²π²/(8λ²)}`: each series converges in a few terms on its
//!   side, to double precision.
//! - Gamma's CDF is `P(k, x/θ)`, the regularized lower incomplete gamma function: its series
//!   below `x < k + 1`, Lentz's continued fraction for `Q = 1 − P` above (as Numerical
//!   Recipes' `gammp`), with Lanczos' `ln Γ` (g = 7, nine coefficients, about 15 digits).

use serde::{Deserialize, Serialize};

/// The law of a process's inter-arrival times (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "law", rename_all = "snake_case")]
pub enum Law {
    /// Every gap is `mean` (a constant rate): no spread to test.
    Constant { mean: f64 },
    /// Exponential gaps of this mean (a Poisson process).
    Exponential { mean: f64 },
    /// Gamma gaps of this shape and scale (mean `shape·scale`, CV `1/√shape`).
    Gamma { shape: f64, scale: f64 },
}

impl Law {
    /// The law of gaps with `mean` and coefficient of variation `cv` (gamma; `cv = 1` is
    /// exponential, `0` constant).
    pub fn gamma_with(mean: f64, cv: f64) -> Self {
        let shape = 1.0 / (cv * cv);
        Self::Gamma {
            shape,
            scale: mean / shape,
        }
    }

    /// The mean gap.
    pub fn mean(&self) -> f64 {
        match *self {
            Self::Constant { mean } | Self::Exponential { mean } => mean,
            Self::Gamma { shape, scale } => shape * scale,
        }
    }

    /// The coefficient of variation (standard deviation over mean).
    pub fn cv(&self) -> f64 {
        match *self {
            Self::Constant { .. } => 0.0,
            Self::Exponential { .. } => 1.0,
            Self::Gamma { shape, .. } => 1.0 / shape.sqrt(),
        }
    }

    /// `P(gap ≤ x)`.
    pub fn cdf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        match *self {
            Self::Constant { mean } => f64::from(u8::from(x >= mean)),
            Self::Exponential { mean } => -(-x / mean).exp_m1(),
            Self::Gamma { shape, scale } => gamma_p(shape, x / scale),
        }
    }

    /// Whether the test means anything against it (a constant law has no spread).
    pub fn testable(&self) -> bool {
        !matches!(self, Self::Constant { .. })
    }
}

/// A Kolmogorov–Smirnov test's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ks {
    /// Sample size.
    pub n: usize,
    /// The statistic `D`.
    pub d: f64,
    /// `P(D ≥ d)` under the law.
    pub p_value: f64,
}

impl Ks {
    /// Whether the sample is consistent with the law at level `alpha` (`p ≥ α`).
    pub fn passes(&self, alpha: f64) -> bool {
        self.p_value >= alpha
    }
}

/// The one-sample test of `sample` against `cdf` (NaNs are refused: `None`, as for an empty
/// sample).
pub fn ks(sample: &[f64], cdf: impl Fn(f64) -> f64) -> Option<Ks> {
    ks_above(sample, cdf, f64::NEG_INFINITY)
}

/// The test with the supremum taken over `x ≥ floor` only: values below `floor` count
/// (in `F_n`) without their place among themselves being compared. For a measurement that
/// cannot resolve differences below `floor` (arrivals closer than the sender's resolution).
/// The p-value of the whole-line statistic is then conservative: a sup over part of the
/// line is at most the whole one.
pub fn ks_above(sample: &[f64], cdf: impl Fn(f64) -> f64, floor: f64) -> Option<Ks> {
    if sample.is_empty() || sample.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut sorted = sample.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let nf = n as f64;
    let below = sorted.partition_point(|&x| x <= floor);
    let mut d: f64 = 0.0;
    if floor.is_finite() {
        d = (below as f64 / nf - cdf(floor)).abs();
    }
    for (i, &x) in sorted.iter().enumerate().skip(below) {
        let f = cdf(x);
        d = d.max(f - i as f64 / nf).max((i + 1) as f64 / nf - f);
    }
    let root = nf.sqrt();
    Some(Ks {
        n,
        d,
        p_value: kolmogorov_sf((root + 0.12 + 0.11 / root) * d),
    })
}

/// The Kolmogorov distribution's survival function `Q(λ) = P(K > λ)`.
pub fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda.is_nan() {
        return f64::NAN;
    }
    if lambda <= 0.0 {
        return 1.0;
    }
    if lambda < 1.18 {
        // 1 − K(λ), K from the theta-function series (fast for small λ).
        let c = -std::f64::consts::PI * std::f64::consts::PI / (8.0 * lambda * lambda);
        let mut sum = 0.0;
        for k in 1..=20 {
            let j = f64::from(2 * k - 1);
            let term = (c * j * j).exp();
            sum += term;
            if term < 1e-17 * sum {
                break;
            }
        }
        let cdf = (2.0 * std::f64::consts::PI).sqrt() / lambda * sum;
        return (1.0 - cdf).clamp(0.0, 1.0);
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let kf = f64::from(k);
        let term = (-2.0 * kf * kf * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-17 * sum.abs() || term == 0.0 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, n = 9).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized lower incomplete gamma function `P(a, x)` (`a > 0`, `x ≥ 0`).
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x.is_infinite() {
        return 1.0;
    }
    let log_prefix = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P = e^{−x} x^a / Γ(a+1) · Σ x^n / ((a+1)…(a+n)).
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        (sum * log_prefix.exp()).clamp(0.0, 1.0)
    } else {
        // Q by the continued fraction (modified Lentz), P = 1 − Q.
        const TINY: f64 = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / TINY;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -f64::from(i) * (f64::from(i) - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < TINY {
                d = TINY;
            }
            c = b + an / c;
            if c.abs() < TINY {
                c = TINY;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (1.0 - log_prefix.exp() * h).clamp(0.0, 1.0)
    }
}

/// Mean and coefficient of variation of `xs` (sample standard deviation, n − 1).
pub fn mean_cv(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    Some((mean, var.sqrt() / mean))
}

#[cfg(test)]
mod tests;
