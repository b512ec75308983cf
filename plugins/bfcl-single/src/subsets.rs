//! The gate's subsets: which category each belongs to, its language, and
//! the reference's sampling rule.

/// A BFCL v4 single-turn subset the gate can issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subset {
    /// BFCL name, e.g. `simple_java`; also the data keys `<name>` and `<name>_answers`.
    pub name: &'static str,
    /// The reference's category: `non_live`, `live` or `hallucination`.
    pub category: &'static str,
    /// `python`, `java` or `javascript`: the checker's language.
    pub language: &'static str,
    /// Whether the subset has a `possible_answer` file (hallucination subsets do not).
    pub has_answers: bool,
}

const fn subset(name: &'static str, category: &'static str, language: &'static str) -> Subset {
    Subset {
        name,
        category,
        language,
        has_answers: !matches!(category.as_bytes(), b"hallucination"),
    }
}

/// Every subset of the reference's three categories, in alphabetical order
/// (the order the reference issues them: `groupby("subset")`).
pub const ALL: [Subset; 12] = [
    subset("irrelevance", "hallucination", "python"),
    subset("live_irrelevance", "hallucination", "python"),
    subset("live_multiple", "live", "python"),
    subset("live_parallel", "live", "python"),
    subset("live_parallel_multiple", "live", "python"),
    subset("live_simple", "live", "python"),
    subset("multiple", "non_live", "python"),
    subset("parallel", "non_live", "python"),
    subset("parallel_multiple", "non_live", "python"),
    subset("simple_java", "non_live", "java"),
    subset("simple_javascript", "non_live", "javascript"),
    subset("simple_python", "non_live", "python"),
];

/// The categories, as the reference names them.
pub const CATEGORIES: [&str; 3] = ["non_live", "live", "hallucination"];

/// The subset called `name`.
pub fn find(name: &str) -> Option<&'static Subset> {
    ALL.iter().find(|s| s.name == name)
}

/// How many of a subset's `total` rows the reference issues: all of them up
/// to `floor`, else `max(1, int(total * pct / 100))`; always the first rows
/// in file order.
pub fn sample_size(total: usize, pct: f64, floor: usize) -> usize {
    if total <= floor {
        total
    } else {
        // Python's int() truncates toward zero; total * pct / 100 is evaluated
        // left to right in floating point as the reference does.
        ((total as f64 * pct / 100.0) as usize).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_sample_sizes() {
        // Totals of bfcl-eval 2026.3.23 and the reference's counts (995 in all).
        let cases = [
            ("simple_python", 400, 62.0, 248),
            ("simple_java", 100, 62.0, 62),
            ("simple_javascript", 50, 62.0, 31),
            ("multiple", 200, 62.0, 124),
            ("parallel", 200, 62.0, 124),
            ("parallel_multiple", 200, 62.0, 124),
            ("live_simple", 258, 10.0, 25),
            ("live_multiple", 1053, 10.0, 105),
            ("live_parallel", 16, 10.0, 16),
            ("live_parallel_multiple", 24, 10.0, 24),
            ("irrelevance", 240, 10.0, 24),
            ("live_irrelevance", 884, 10.0, 88),
        ];
        let mut sum = 0;
        for (name, total, pct, want) in cases {
            assert_eq!(sample_size(total, pct, 25), want, "{name}");
            sum += want;
        }
        assert_eq!(sum, 995);
        assert_eq!(sample_size(30, 1.0, 25), 1);
    }

    #[test]
    fn subsets_are_alphabetical_and_categorised() {
        let names: Vec<&str> = ALL.iter().map(|s| s.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert!(!find("irrelevance").unwrap().has_answers);
        assert!(find("simple_java").unwrap().has_answers);
        assert_eq!(find("simple_javascript").unwrap().language, "javascript");
        assert!(find("live_relevance").is_none());
    }
}
