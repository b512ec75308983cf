//! The test is tested: every function against SciPy 1.16.3's values (`scipy.special.
//! kolmogorov`, `gammainc`, `gammaln`, `scipy.stats.kstwo.sf`, the exact finite-n law; the
//! command is in `docs/load-shapes.md`), and the whole test's false-rejection rate under the
//! null and its power against a wrong law, on samples drawn here.

use super::*;

fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs().max(1e-300),
        "got {got}, want {want} (relative tolerance {rel})"
    );
}

#[test]
fn the_kolmogorov_law_is_scipys() {
    for (lambda, want) in [
        (0.3, 0.9999906941986655),
        (0.5, 0.9639452436648751),
        (0.8, 0.5441424115741981),
        (1.0, 0.26999967167735456),
        (1.18, 0.1234538094297657),
        (1.2, 0.11224966667072497),
        (1.36, 0.049485876755377876),
        (1.628, 0.009975522431181053),
        (2.0, 0.0006709252557796953),
        (3.0, 3.045995948942526e-08),
    ] {
        close(kolmogorov_sf(lambda), want, 1e-12);
    }
    assert_eq!(kolmogorov_sf(0.0), 1.0);
    assert_eq!(kolmogorov_sf(-1.0), 1.0);
    assert!(kolmogorov_sf(40.0) == 0.0);
    // Both series agree where they meet.
    let below = 1.0 - kolmogorov_sf(1.18 - 1e-9);
    let above = 1.0 - kolmogorov_sf(1.18 + 1e-9);
    close(below, above, 1e-7);
}

#[test]
fn the_incomplete_gamma_function_is_scipys() {
    for (a, x, want) in [
        (0.25, 0.001, 0.1961516983827266),
        (0.25, 0.1, 0.608338845728966),
        (0.25, 1.0, 0.9320788679898908),
        (0.25, 5.0, 0.9995079748755537),
        (1.0, 0.5, 0.3934693402873665),
        (4.0, 1.0, 0.01898815687615381),
        (4.0, 4.0, 0.566529879633291),
        (4.0, 10.0, 0.9896639493240743),
        (100.0, 90.0, 0.15822098918643007),
        (0.5, 30.0, 0.9999999999999906),
    ] {
        close(gamma_p(a, x), want, 1e-12);
    }
    for (x, want) in [
        (0.5, 0.5723649429247),
        (1.5, -0.12078223763524526),
        (3.7, 1.428072326665388),
        (10.0, 12.801827480081469),
        (0.1, 2.252712651734206),
        (171.5, 709.1431630309283),
    ] {
        close(ln_gamma(x), want, 1e-13);
    }
    // Shape 1 is the exponential law.
    let exp = Law::Exponential { mean: 2.0 };
    let gamma = Law::gamma_with(2.0, 1.0);
    for x in [0.01, 0.5, 2.0, 9.0] {
        close(gamma.cdf(x), exp.cdf(x), 1e-13);
    }
}

#[test]
fn p_values_are_within_a_few_per_cent_of_the_exact_law() {
    // (n, D, scipy.stats.kstwo.sf(D, n)): around α = 0.01 and above.
    for (n, d, exact) in [
        (100usize, 0.16, 0.010543506724453174),
        (100, 0.13, 0.06209234069876253),
        (1000, 0.0515, 0.009583989157047923),
        (10000, 0.0163, 0.009738034669724812),
        (10000, 0.012, 0.11135257403749388),
        (50, 0.2, 0.03143877776953241),
    ] {
        let root = (n as f64).sqrt();
        let p = kolmogorov_sf((root + 0.12 + 0.11 / root) * d);
        close(p, exact, 0.03);
    }
}

/// SplitMix64: uniform draws in (0, 1) for the tests.
struct Uniform(u64);

impl Uniform {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.next().ln()
    }
}

#[test]
fn under_the_null_the_test_rejects_about_alpha_of_the_time() {
    let mut u = Uniform(7);
    let law = Law::Exponential { mean: 0.5 };
    let trials = 2000;
    let rejected = (0..trials)
        .filter(|_| {
            let sample: Vec<f64> = (0..200).map(|_| u.exponential(0.5)).collect();
            !ks(&sample, |x| law.cdf(x)).unwrap().passes(0.01)
        })
        .count();
    // Binomial(2000, 0.01): mean 20, sd 4.4; the bounds are 4 sd either side.
    assert!(
        (3..=38).contains(&rejected),
        "{rejected} of {trials} rejected"
    );
}

#[test]
fn the_test_rejects_a_wrong_law() {
    let mut u = Uniform(11);
    // Gamma with shape 4 (CV 0.5): a sum of four exponentials of mean 1/4.
    let sample: Vec<f64> = (0..10_000)
        .map(|_| (0..4).map(|_| u.exponential(0.25)).sum())
        .collect();
    let right = Law::gamma_with(1.0, 0.5);
    let ks_right = ks(&sample, |x| right.cdf(x)).unwrap();
    assert!(ks_right.passes(0.01), "{ks_right:?}");
    for wrong in [
        Law::Exponential { mean: 1.0 },
        Law::gamma_with(1.0, 0.45),
        Law::gamma_with(1.04, 0.5),
    ] {
        let k = ks(&sample, |x| wrong.cdf(x)).unwrap();
        assert!(!k.passes(0.01), "{wrong:?} passed: {k:?}");
    }
    let (mean, cv) = mean_cv(&sample).unwrap();
    close(mean, 1.0, 0.02);
    close(cv, 0.5, 0.03);
}

#[test]
fn the_statistic_is_the_largest_gap_either_side() {
    // One point at the median of U(0,1): D = 0.5 on both sides.
    let k = ks(&[0.5], |x| x.clamp(0.0, 1.0)).unwrap();
    assert_eq!((k.n, k.d), (1, 0.5));
    // Points at 0.1 and 0.2: F_n jumps to 1 at 0.2, where F is 0.2: D = 0.8.
    let k = ks(&[0.2, 0.1], |x| x.clamp(0.0, 1.0)).unwrap();
    assert!((k.d - 0.8).abs() < 1e-15);
    assert!(ks(&[], |x| x).is_none());
    assert!(ks(&[f64::NAN], |x| x).is_none());
}

#[test]
fn above_a_floor_only_the_mass_below_it_is_compared() {
    // Half the points at 0.01 (unresolved), half spread as U(0.5, 1): against U(0, 1) with
    // a floor of 0.5 the mass below (0.5) is right and the rest fits.
    let mut sample: Vec<f64> = vec![0.01; 500];
    sample.extend((0..500).map(|i| 0.5 + (i as f64 + 0.5) / 1000.0));
    let uniform = |x: f64| x.clamp(0.0, 1.0);
    assert!(!ks(&sample, uniform).unwrap().passes(0.01));
    let above = ks_above(&sample, uniform, 0.5).unwrap();
    assert!(above.d < 1e-3 && above.passes(0.01), "{above:?}");
    // Too little mass below the floor still fails.
    let short: Vec<f64> = sample
        .iter()
        .map(|&x| if x < 0.5 { 0.7 } else { x })
        .collect();
    assert!(!ks_above(&short, uniform, 0.5).unwrap().passes(0.01));
}
