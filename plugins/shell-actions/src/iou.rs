//! Multiset intersection-over-union.

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
}
