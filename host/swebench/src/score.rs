//! The score from the service's result, as the reference checks it:
//! `resolved_instances / len(evaluated_instance_ids)`, none when a counter
//! is not a non-negative integer (an int or a string of ASCII digits), when
//! resolved > submitted, submitted > evaluated, or submitted = 0; kept but
//! marked incomplete when submitted < evaluated.

use serde_json::{Map, Value};

/// The two counters the score reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    pub resolved: u64,
    pub submitted: u64,
}

/// A result's score.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// `resolved / evaluated`; none when the result cannot be trusted.
    pub score: Option<f64>,
    /// False when there is no score, or when not every evaluated instance
    /// was submitted.
    pub complete: bool,
    /// The counters, when both are valid.
    pub counters: Option<Counters>,
    /// Why there is no score, or why it is incomplete.
    pub problem: Option<String>,
}

impl Scored {
    /// No score, for `why`.
    pub(crate) fn none(why: String) -> Self {
        Self {
            score: None,
            complete: false,
            counters: None,
            problem: Some(why),
        }
    }
}

/// A required non-negative counter of `result`.
fn counter(result: &Map<String, Value>, key: &str) -> Result<u64, String> {
    let value = result.get(key);
    let parsed = match value {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    };
    parsed.ok_or_else(|| {
        format!(
            "{key} must be a nonnegative integer (got {})",
            value.map_or_else(|| "nothing".to_owned(), Value::to_string)
        )
    })
}

/// Scores `result` over `evaluated` instances (at least one).
pub fn score(result: &Map<String, Value>, evaluated: usize) -> Scored {
    let counters = counter(result, "submitted_instances").and_then(|submitted| {
        counter(result, "resolved_instances").map(|resolved| Counters {
            resolved,
            submitted,
        })
    });
    let c = match counters {
        Ok(c) => c,
        Err(why) => return Scored::none(format!("invalid service result: {why}")),
    };
    let denominator = evaluated as u64;
    if c.resolved > c.submitted || c.submitted > denominator {
        return Scored {
            counters: Some(c),
            ..Scored::none(format!(
                "inconsistent service counters: resolved={}, submitted={}, expected={denominator}",
                c.resolved, c.submitted
            ))
        };
    }
    if c.submitted == 0 {
        return Scored {
            counters: Some(c),
            ..Scored::none("submitted_instances=0".to_owned())
        };
    }
    let complete = c.submitted == denominator;
    Scored {
        score: Some(c.resolved as f64 / denominator as f64),
        complete,
        counters: Some(c),
        problem: (!complete).then(|| {
            format!(
                "the service submitted {} of {denominator} evaluated instances; score marked incomplete",
                c.submitted
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Scored {
        score(v.as_object().unwrap(), 3)
    }

    #[test]
    fn valid_counters_score_over_the_evaluated_count() {
        let s = of(json!({"resolved_instances": 2, "submitted_instances": 3}));
        assert_eq!(
            (s.score, s.complete, s.problem),
            (Some(2.0 / 3.0), true, None)
        );
        let s = of(json!({"resolved_instances": "2", "submitted_instances": "3"}));
        assert_eq!((s.score, s.complete), (Some(2.0 / 3.0), true));
        // Fewer submitted than evaluated: the score stays over all evaluated.
        let s = of(json!({"resolved_instances": 1, "submitted_instances": 2}));
        assert_eq!((s.score, s.complete), (Some(1.0 / 3.0), false));
        assert!(s.problem.unwrap().contains("submitted 2 of 3"));
    }

    /// The reference's `test_invalid_result_counters_mark_score_incomplete` cases.
    #[test]
    fn invalid_counters_give_no_score() {
        for (result, why) in [
            (
                json!({"resolved_instances": true, "submitted_instances": 3}),
                "resolved_instances must be",
            ),
            (
                json!({"resolved_instances": 1, "submitted_instances": false}),
                "submitted_instances must be",
            ),
            (
                json!({"resolved_instances": -1, "submitted_instances": 3}),
                "resolved_instances must be",
            ),
            (
                json!({"resolved_instances": 1, "submitted_instances": -3}),
                "submitted_instances must be",
            ),
            (
                json!({"resolved_instances": " 1", "submitted_instances": 3}),
                "resolved_instances must be",
            ),
            (
                json!({"resolved_instances": "1.0", "submitted_instances": 3}),
                "resolved_instances must be",
            ),
            (
                json!({"resolved_instances": 1.0, "submitted_instances": 3}),
                "resolved_instances must be",
            ),
            (json!({"submitted_instances": 3}), "got nothing"),
            (
                json!({"resolved_instances": 1}),
                "submitted_instances must be",
            ),
            (
                json!({"resolved_instances": 3, "submitted_instances": 2}),
                "resolved=3, submitted=2",
            ),
            (
                json!({"resolved_instances": 1, "submitted_instances": 4}),
                "submitted=4, expected=3",
            ),
            (
                json!({"resolved_instances": 0, "submitted_instances": 0}),
                "submitted_instances=0",
            ),
        ] {
            let s = of(result.clone());
            assert_eq!((s.score, s.complete), (None, false), "{result}");
            let problem = s.problem.unwrap();
            assert!(problem.contains(why), "{result}: {problem}");
        }
    }
}
