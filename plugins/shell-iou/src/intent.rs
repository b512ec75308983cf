//! The workflow domain (`sim_N` conversations): the intent code the model
//! chose against the recorded assistant row's `intent_codes`, as the
//! reference's `AgenticInferenceInlineScorer` reads both.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use pysem::re::{chars, Regex};
use serde_json::Value;

/// `re.compile(r"\bintent:\s*(I\d{3})\b", re.IGNORECASE)`. Python's
/// case-insensitive `str` matching lets `i` and `I` also match U+0130 (İ)
/// and U+0131 (ı); no other letter here has another case partner.
static INTENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[iIİı][nN][tT][eE][nN][tT]:\s*([iIİı]\d{3})\b", false));

/// `re.compile(r"\bI(\d{3})\b")`, case-sensitive.
static BARE_INTENT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\bI(\d{3})\b", false));

/// The ground truth: the upper-cased non-empty string entries of
/// `intent_codes` when it is a list (anything else gives none), sorted.
pub fn ground_truth(intent_codes: Option<&Value>) -> Vec<String> {
    let Some(Value::Array(codes)) = intent_codes else {
        return Vec::new();
    };
    codes
        .iter()
        .filter_map(Value::as_str)
        .filter(|code| !code.is_empty())
        .map(str::to_uppercase)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The model's intent: the first `intent: I123` (any case) in the
/// reasoning, else in the content, upper-cased; else the last bare `I123`
/// in the reasoning, else in the content.
pub fn model_intent(reasoning_content: &str, content: &str) -> Option<String> {
    let fields = [chars(reasoning_content), chars(content)];
    fields
        .iter()
        .find_map(|text| {
            let found = INTENT.search(text, 0)?;
            Some(found.group(text, 1)?.to_uppercase())
        })
        .or_else(|| {
            fields.iter().find_map(|text| {
                let last = BARE_INTENT.finditer(text).pop()?;
                Some(format!("I{}", last.group(text, 1)?))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each expectation is what the reference's `_model_intent` returns
    /// (CPython's `re`, the two patterns as written there).
    #[test]
    fn the_references_patterns() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("", "final intent: I042", Some("I042")),
            ("", "Intent:I007 then intent: I008", Some("I007")),
            // Reasoning is searched first, for both patterns.
            ("intent: I001", "intent: I002", Some("I001")),
            ("I003 and I004", "intent: I005", Some("I005")),
            ("I003 and I004", "I006", Some("I004")),
            ("", "I003 and I004", Some("I004")),
            // Python's IGNORECASE: ı and İ match i; upper() keeps İ.
            ("", "ıntent: ı042", Some("I042")),
            ("", "İNTENT:İ042", Some("İ042")),
            // Unicode \s and \d.
            (
                "",
                "intent:\u{1c} i\u{662}\u{664}\u{662}",
                Some("I\u{662}\u{664}\u{662}"),
            ),
            // Word boundaries: no match inside a word or a longer number;
            // the bare form then may still match.
            ("", "intent: I0423", None),
            ("", "xintent: I042", Some("I042")),
            ("", "_intent: I042", Some("I042")),
            ("", "intent : I042", Some("I042")),
            ("", "xintent: i042", None),
            ("", "_intent: i042", None),
            ("", "intent: I0423 intent: i999", Some("I999")),
            // The bare form is case-sensitive, its digits Unicode.
            ("", "i005", None),
            ("", "I001 xI002 I003_ I004. i005", Some("I004")),
            (
                "",
                "I001 I\u{660}\u{660}\u{666}",
                Some("I\u{660}\u{660}\u{666}"),
            ),
            ("", "no code here", None),
        ];
        for (reasoning, content, want) in cases {
            assert_eq!(
                model_intent(reasoning, content).as_deref(),
                *want,
                "{reasoning:?} / {content:?}"
            );
        }
    }

    #[test]
    fn ground_truth_keeps_upper_cased_strings_of_a_list() {
        assert_eq!(
            ground_truth(Some(&json!(["i001", "I002", null, 3, "", "i001"]))),
            ["I001", "I002"]
        );
        assert!(ground_truth(Some(&json!("I001"))).is_empty());
        assert!(ground_truth(Some(&json!({"a": "I001"}))).is_empty());
        assert!(ground_truth(None).is_empty());
    }
}
