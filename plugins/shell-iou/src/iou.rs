//! Multiset intersection-over-union and Python's `round(x, 4)`.

use std::collections::BTreeMap;

/// `|GT ∩ M| / |GT ∪ M|` over multisets (per-action minimum and maximum
/// counts, as `Counter & Counter` and `Counter | Counter`).
///
/// An empty model list against a non-empty ground truth gives 0.0. Two empty
/// lists are identical multisets and give 1.0; scoring never meets that case,
/// since a turn with empty ground truth is excluded before scoring.
pub fn iou(ground_truth: &[String], model: &[String]) -> f64 {
    let mut counts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for action in ground_truth {
        counts.entry(action).or_default().0 += 1;
    }
    for action in model {
        counts.entry(action).or_default().1 += 1;
    }
    let (intersection, union) = counts
        .values()
        .fold((0, 0), |(i, u), &(g, m)| (i + g.min(m), u + g.max(m)));
    if union == 0 {
        return 1.0;
    }
    // Both counts are far below 2^53: the division is Python's true division.
    intersection as f64 / union as f64
}

/// Python's `round(x, 4)` on a float: the exact binary value of `x` rounded
/// to 4 decimals, ties to even, then read back as the nearest float.
pub fn round4(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    if exponent >= 0 {
        // |x| >= 2^52 is an integer: nothing to round.
        return x;
    }
    // |x| * 10^4 = scaled / 2^shift exactly; scaled < 2^67.
    let scaled = u128::from(mantissa) * 10_000;
    let shift = exponent.unsigned_abs();
    let units = if shift >= 128 {
        0
    } else {
        let quotient = scaled >> shift;
        let remainder = scaled - (quotient << shift);
        let half = 1u128 << (shift - 1);
        if remainder > half || (remainder == half && quotient & 1 == 1) {
            quotient + 1
        } else {
            quotient
        }
    };
    // Parsing is correctly rounded, as CPython's strtod of the digits is.
    let magnitude: f64 = format!("{units}e-4").parse().unwrap_or(f64::NAN);
    if x < 0.0 {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(actions: &[&str]) -> Vec<String> {
        actions.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn multiset_iou() {
        let gt = list(&["python", "python", "grep"]);
        assert_eq!(iou(&gt, &list(&["python", "grep", "grep"])), 0.5);
        assert_eq!(iou(&gt, &list(&["grep", "python", "python"])), 1.0);
        assert_eq!(iou(&gt, &list(&["python"])), 1.0 / 3.0);
        assert_eq!(iou(&gt, &list(&["cat"])), 0.0);
        assert_eq!(iou(&gt, &[]), 0.0);
        assert_eq!(iou(&[], &[]), 1.0);
        assert_eq!(iou(&list(&["ls"]), &list(&["ls", "ls", "ls", "cat"])), 0.25);
    }

    #[test]
    fn round4_matches_python() {
        // (x, python3 round(x, 4)) pairs computed with CPython 3.11.
        for (x, expected) in [
            (0.12345, 0.1235),
            (0.00005, 0.0001),
            (0.03125, 0.0312),
            (0.09375, 0.0938),
            (0.28125, 0.2812),
            (0.15625, 0.1562),
            (0.46875, 0.4688),
            (0.71875, 0.7188),
            (0.00015, 0.0001),
            (0.00025, 0.0003),
            (0.6335, 0.6335),
            (2.0 / 3.0, 0.6667),
            (1.0 / 3.0, 0.3333),
            (0.99995, 1.0),
            (0.999949999, 0.9999),
            (0.00004999, 0.0),
            (1e-300, 0.0),
            (5e-324, 0.0),
            (1.0, 1.0),
            (0.5, 0.5),
            (-0.03125, -0.0312),
            (1234.56785, 1234.5678),
            (4503599627370497.0, 4503599627370497.0),
        ] {
            assert_eq!(round4(x).to_bits(), f64::to_bits(expected), "round({x}, 4)");
        }
    }
}
