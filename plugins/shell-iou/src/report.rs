//! The reference's `scores.json`, built from every turn of a run.
//!
//! Layout, order and arithmetic follow `AgenticInferenceInlineScorer.score`:
//! scored rows sorted by (conversation, repeat, turn), the mean summed in
//! that order, `repeat` numbered as the reference numbers it (1 for the first
//! pass, which has no `__repeat_<k>` suffix, else `k`), excluded turns listed
//! once per dataset turn, and the text laid out as `json.dumps(result,
//! indent=2)` writes it.
//!
//! The `turns` counts follow the reference: `issued` counts every item an
//! assistant row follows (the reference pairs no other), while `expected`,
//! `observed` and `missing` count scorable turns only (a turn without
//! ground truth is neither expected nor missing).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use pysem::json::{dumps_with, Format};

use crate::turn::{Truth, Turn, NO_GROUND_TRUTH};

/// The domains, in the order the reference reports them.
const DOMAINS: [&str; 2] = ["coding", "workflow"];

/// The aggregate of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// Mean IoU of the scored turns, rounded as `round(x, 4)`; 0.0 when none.
    pub score: f64,
    /// The `scores.json` text.
    pub json: String,
}

/// Aggregates the turns of a run (any order). Fails when two turns share a
/// conversation, repeat and assistant turn.
pub fn scores(turns: &[Turn]) -> Result<Scores, String> {
    // Turns no assistant row follows are in no count (the reference never
    // pairs them with ground truth).
    let turns: Vec<&Turn> = turns.iter().filter(|t| t.answer_row).collect();
    let mut keys = BTreeSet::new();
    for turn in &turns {
        if !keys.insert((&turn.conversation_id, turn.repeat, turn.assistant_turn)) {
            return Err(format!(
                "turn {} of {:?} (repeat {}) was given twice",
                turn.assistant_turn, turn.conversation_id, turn.repeat
            ));
        }
    }

    let mut scored: Vec<&Turn> = turns
        .iter()
        .copied()
        .filter(|t| t.exclusion().is_none())
        .collect();
    scored.sort_by(|a, b| {
        (&a.conversation_id, a.repeat, a.assistant_turn).cmp(&(
            &b.conversation_id,
            b.repeat,
            b.assistant_turn,
        ))
    });
    let total: f64 = scored.iter().map(|t| t.score()).sum();
    let mean = (!scored.is_empty()).then(|| round4(total / scored.len() as f64));
    let missing = scored.iter().filter(|t| t.missing).count();

    // Each domain's mean, summed in the same order as the whole.
    let mut domains = Map::new();
    for domain in DOMAINS {
        let of: Vec<f64> = scored
            .iter()
            .filter(|t| t.domain() == domain)
            .map(|t| t.score())
            .collect();
        if !of.is_empty() {
            let mean = round4(of.iter().sum::<f64>() / of.len() as f64);
            domains.insert(domain.into(), json!({"score": mean, "scored": of.len()}));
        }
    }
    let mut result = Map::new();
    result.insert("score".into(), json!(mean));
    result.insert(
        "turns".into(),
        json!({
            "issued": turns.len(),
            "expected": scored.len(),
            "observed": scored.len() - missing,
            "missing": missing,
            "scored": scored.len(),
        }),
    );
    result.insert("domains".into(), Value::Object(domains));
    result.insert(
        "per_turn".into(),
        scored.iter().map(|t| per_turn_row(t)).collect(),
    );
    let excluded = excluded_turns(&turns);
    if !excluded.is_empty() {
        result.insert("excluded_turns".into(), Value::Array(excluded));
    }

    Ok(Scores {
        score: mean.unwrap_or(0.0),
        json: dumps_with(&Value::Object(result), &Format::indented(2)),
    })
}

fn per_turn_row(turn: &Turn) -> Value {
    let mut row = Map::new();
    row.insert("conversation_id".into(), json!(turn.conversation_id));
    row.insert("repeat".into(), json!(turn.repeat.max(1)));
    row.insert("turn".into(), json!(turn.assistant_turn));
    row.insert("domain".into(), json!(turn.domain()));
    if turn.missing {
        row.insert("missing".into(), json!(true));
    }
    match &turn.truth {
        Truth::Coding {
            gt_actions,
            model_actions,
        } => {
            row.insert("gt_actions".into(), json!(gt_actions));
            row.insert("model_actions".into(), json!(model_actions));
        }
        Truth::Workflow {
            gt_intents,
            model_intent,
        } => {
            row.insert("gt_intents".into(), json!(gt_intents));
            row.insert("model_intent".into(), json!(model_intent));
        }
    }
    row.insert("score".into(), json!(round4(turn.score())));
    Value::Object(row)
}

/// Excluded dataset turns, once each whatever the repeat, sorted by
/// (conversation, turn), in the reference's shape.
fn excluded_turns(turns: &[&Turn]) -> Vec<Value> {
    let excluded: BTreeSet<(&str, u64, &str)> = turns
        .iter()
        .filter(|t| t.exclusion().is_some())
        .map(|t| (t.conversation_id.as_str(), t.assistant_turn, t.domain()))
        .collect();
    excluded
        .into_iter()
        .map(|(conversation_id, turn, domain)| {
            json!({
                "conversation_id": conversation_id,
                "turn": turn,
                "domain": domain,
                "exclude_reason": NO_GROUND_TRUTH,
            })
        })
        .collect()
}

/// Python's `round(x, 4)`.
fn round4(x: f64) -> f64 {
    pysem::num::round(x, 4).unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| (*a).to_owned()).collect()
    }

    fn turn(id: &str, repeat: u64, at: u64, gt: &[&str], model: Option<&[&str]>) -> Turn {
        Turn {
            conversation_id: id.into(),
            repeat,
            assistant_turn: at,
            truth: Truth::Coding {
                gt_actions: owned(gt),
                model_actions: model.map(owned).unwrap_or_default(),
            },
            missing: model.is_none(),
            answer_row: true,
        }
    }

    /// A workflow turn; `model` is `None` when missing, `Some(None)` when
    /// the answer named no intent.
    fn intent(id: &str, repeat: u64, at: u64, gt: &[&str], model: Option<Option<&str>>) -> Turn {
        Turn {
            conversation_id: id.into(),
            repeat,
            assistant_turn: at,
            truth: Truth::Workflow {
                gt_intents: owned(gt),
                model_intent: model.flatten().map(str::to_owned),
            },
            missing: model.is_none(),
            answer_row: true,
        }
    }

    #[test]
    fn full_report() {
        let turns = [
            turn("b", 0, 2, &["ls"], Some(&["ls"])),
            turn(
                "a",
                0,
                4,
                &["python", "python", "grep"],
                Some(&["python", "grep", "grep"]),
            ),
            turn("a", 0, 2, &["cat"], None),
            turn("a", 0, 6, &[], Some(&["ls"])),
            turn("a", 2, 6, &[], None),
            turn("a", 2, 2, &["git"], Some(&["python", "git", "ls"])),
        ];
        let scores = scores(&turns).unwrap();
        // (0 + 0.5 + 1/3 + 1) / 4, summed in sorted order.
        assert_eq!(scores.score, 0.4583);
        let expected = r#"{
  "score": 0.4583,
  "turns": {
    "issued": 6,
    "expected": 4,
    "observed": 3,
    "missing": 1,
    "scored": 4
  },
  "domains": {
    "coding": {
      "score": 0.4583,
      "scored": 4
    }
  },
  "per_turn": [
    {
      "conversation_id": "a",
      "repeat": 1,
      "turn": 2,
      "domain": "coding",
      "missing": true,
      "gt_actions": [
        "cat"
      ],
      "model_actions": [],
      "score": 0.0
    },
    {
      "conversation_id": "a",
      "repeat": 1,
      "turn": 4,
      "domain": "coding",
      "gt_actions": [
        "python",
        "python",
        "grep"
      ],
      "model_actions": [
        "python",
        "grep",
        "grep"
      ],
      "score": 0.5
    },
    {
      "conversation_id": "a",
      "repeat": 2,
      "turn": 2,
      "domain": "coding",
      "gt_actions": [
        "git"
      ],
      "model_actions": [
        "python",
        "git",
        "ls"
      ],
      "score": 0.3333
    },
    {
      "conversation_id": "b",
      "repeat": 1,
      "turn": 2,
      "domain": "coding",
      "gt_actions": [
        "ls"
      ],
      "model_actions": [
        "ls"
      ],
      "score": 1.0
    }
  ],
  "excluded_turns": [
    {
      "conversation_id": "a",
      "turn": 6,
      "domain": "coding",
      "exclude_reason": "no ground truth"
    }
  ]
}"#;
        assert_eq!(scores.json, expected);
    }

    #[test]
    fn nothing_scored() {
        let scores = scores(&[turn("a", 0, 2, &[], None)]).unwrap();
        assert_eq!(scores.score, 0.0);
        let value: Value = serde_json::from_str(&scores.json).unwrap();
        assert_eq!(value["score"], Value::Null);
        assert_eq!(value["domains"], json!({}));
        assert_eq!(value["per_turn"], json!([]));
        assert_eq!(
            value["turns"],
            json!({"issued": 1, "expected": 0, "observed": 0, "missing": 0, "scored": 0})
        );

        let empty = super::scores(&[]).unwrap();
        assert_eq!(
            empty.json,
            "{\n  \"score\": null,\n  \"turns\": {\n    \"issued\": 0,\n    \"expected\": 0,\n    \
             \"observed\": 0,\n    \"missing\": 0,\n    \"scored\": 0\n  },\n  \"domains\": {},\n  \
             \"per_turn\": []\n}"
        );
    }

    #[test]
    fn mean_is_rounded_like_python() {
        // 1/32 is an exact tie at the 5th decimal: round half to even.
        let mut turns = vec![turn("a", 0, 2, &["ls"], Some(&["ls"]))];
        turns.extend((1..32).map(|i| turn("a", 0, 2 * i + 2, &["ls"], None)));
        assert_eq!(scores(&turns).unwrap().score, 0.0312);
    }

    #[test]
    fn duplicates_are_rejected() {
        let turns = [
            turn("a", 0, 2, &["ls"], None),
            turn("a", 0, 2, &["ls"], None),
        ];
        assert!(scores(&turns).is_err());
    }

    #[test]
    fn non_ascii_is_escaped_like_json_dumps() {
        let t = turn("conv-é", 0, 2, &["ls"], Some(&["ls"]));
        let json = scores(&[t]).unwrap().json;
        assert!(
            json.contains(r#""conversation_id": "conv-\u00e9""#),
            "{json}"
        );
        assert!(json.is_ascii());
    }

    /// Coding and workflow turns together: one mean over both, each
    /// domain's own mean (coding first), workflow rows with `gt_intents`
    /// and `model_intent`, excluded turns with their domain.
    #[test]
    fn mixed_domains() {
        let turns = [
            turn("django__1", 0, 2, &["ls"], Some(&["ls", "cat"])),
            intent("sim_1", 0, 2, &["I001", "I002"], Some(Some("I002"))),
            intent("sim_1", 2, 2, &["I001", "I002"], Some(None)),
            intent("sim_1", 0, 4, &[], Some(Some("I003"))),
            intent("sim_2", 0, 2, &["I009"], None),
        ];
        let scores = scores(&turns).unwrap();
        // (0.5 + 1 + 0 + 0) / 4.
        assert_eq!(scores.score, 0.375);
        let v: Value = serde_json::from_str(&scores.json).unwrap();
        assert_eq!(
            v["domains"],
            json!({"coding": {"score": 0.5, "scored": 1},
                   "workflow": {"score": 0.3333, "scored": 3}})
        );
        let keys: Vec<&str> = v["domains"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["coding", "workflow"]);
        assert_eq!(
            v["turns"],
            json!({"issued": 5, "expected": 4, "observed": 3, "missing": 1, "scored": 4})
        );
        let hit = &v["per_turn"][1];
        let keys: Vec<&str> = hit
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "conversation_id",
                "repeat",
                "turn",
                "domain",
                "gt_intents",
                "model_intent",
                "score"
            ]
        );
        assert_eq!(hit["model_intent"], "I002");
        assert_eq!(hit["score"], 1.0);
        assert_eq!(v["per_turn"][2]["repeat"], 2);
        assert!(v["per_turn"][2]["model_intent"].is_null());
        assert_eq!(v["per_turn"][3]["missing"], true);
        assert_eq!(
            v["excluded_turns"],
            json!([{"conversation_id": "sim_1", "turn": 4, "domain": "workflow",
                    "exclude_reason": "no ground truth"}])
        );
    }

    /// A client row no assistant row follows is in no count: not issued,
    /// not excluded (the reference never pairs it).
    #[test]
    fn turns_without_an_answer_row_count_nowhere() {
        let mut last = turn("a", 0, 4, &[], None);
        last.answer_row = false;
        let turns = [turn("a", 0, 2, &["ls"], Some(&["ls"])), last];
        let v: Value = serde_json::from_str(&scores(&turns).unwrap().json).unwrap();
        assert_eq!(
            v["turns"],
            json!({"issued": 1, "expected": 1, "observed": 1, "missing": 0, "scored": 1})
        );
        assert!(v.get("excluded_turns").is_none(), "{v}");
    }
}
