//! Scoring the bfcl-multi workload's recorded steps with BFCL's multi-turn
//! evaluation (`eval_runner._evaluate_single_multi_turn_entry` and
//! `multi_turn_checker`), entry by entry, in the order the entries were run
//! (the simulators share module-level state across entries, as the Python
//! process does).

use agentload_sdk::{Config, Error};
use bfcl_multi_turn::checker::{self, Entry};
use bfcl_multi_turn::data::{self, Dataset};
use bfcl_multi_turn::decode::decode_step;
use bfcl_multi_turn::sim::Globals;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};

/// A recorded completion: tool calls as `(id, name, arguments)`, and the content.
pub type Answer = (Vec<(String, String, String)>, String);

/// One recorded step.
pub struct Step {
    pub item_id: String,
    pub session_id: String,
    pub expected: Value,
    /// `None` when the request failed or was never sent.
    pub completion: Option<Answer>,
}

/// A verdict, per step.
pub struct StepVerdict {
    pub item_id: String,
    pub score: f64,
    pub excluded: Option<String>,
    /// The detail as JSON text, written straight from the verdict (no JSON tree between).
    pub detail: String,
}

/// What one step decoded to: its calls, the decoding error, or nothing (no completion).
type StepCalls = Option<Result<Vec<String>, String>>;

/// One step's row in an entry's detail: `{"turn", "step", "calls"}`.
struct StepRow {
    turn: usize,
    step: u64,
    calls: StepCalls,
}

impl serde::Serialize for StepRow {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        #[derive(serde::Serialize)]
        struct DecodeError<'a> {
            decode_error: &'a str,
        }
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("turn", &self.turn)?;
        m.serialize_entry("step", &self.step)?;
        match &self.calls {
            Some(Ok(c)) => m.serialize_entry("calls", c)?,
            Some(Err(e)) => m.serialize_entry("calls", &DecodeError { decode_error: e })?,
            None => m.serialize_entry("calls", &())?,
        }
        m.end()
    }
}

/// The detail of a step that is not its entry's last: its row, then whose step it is.
#[derive(serde::Serialize)]
struct StepDetail<'a> {
    #[serde(flatten)]
    row: &'a StepRow,
    id: &'a str,
    category: &'a str,
    excluded: &'a str,
}

/// The detail of an entry's last step: the entry's verdict.
#[derive(serde::Serialize)]
struct EntryDetail<'a> {
    id: &'a str,
    category: &'a str,
    valid: bool,
    error_type: &'a Option<String>,
    error_message: &'a Option<String>,
    details: &'a [String],
    not_ported: &'a [String],
    force_quit_turn: Option<usize>,
    requests: usize,
    missing_requests: usize,
    steps: &'a [StepRow],
    trace: &'a [checker::TurnTrace],
}

fn to_text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("a verdict detail serializes")
}

/// The scorer's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model name of the instance names (`{model}_eval`,
    /// `{model}_ground_truth_eval`).
    pub model_name: String,
    /// When set, the entries the run should have issued (as the workload
    /// selects them): those never seen count as failed.
    pub expected: Option<(Vec<String>, BTreeMap<String, f64>)>,
}

impl Settings {
    /// The settings table: `model_name` (default `agentload`), and
    /// `categories` / `sample_pct` as the workload reads them, when the
    /// selection should be checked. Unknown keys are errors naming them.
    pub fn from_config(config: &Config) -> Result<Settings, Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            #[serde(default = "default_model_name")]
            model_name: String,
            categories: Option<Value>,
            sample_pct: Option<Value>,
        }
        fn default_model_name() -> String {
            "agentload".into()
        }
        let t: Table = config.settings()?;
        let expected = if t.categories.is_some() || t.sample_pct.is_some() {
            Some((
                data::parse_categories(t.categories.as_ref()).map_err(Error::config)?,
                data::parse_pct(t.sample_pct.as_ref()).map_err(Error::config)?,
            ))
        } else {
            None
        };
        Ok(Settings {
            model_name: t.model_name,
            expected,
        })
    }
}

/// The entry-level verdict.
struct EntryVerdict {
    valid: bool,
    error_type: Option<String>,
    error_message: Option<String>,
    details: Vec<String>,
    not_ported: Vec<String>,
    trace: Vec<checker::TurnTrace>,
}

fn fail(kind: &str, message: String) -> EntryVerdict {
    EntryVerdict {
        valid: false,
        error_type: Some(kind.into()),
        error_message: Some(message),
        details: Vec::new(),
        not_ported: Vec::new(),
        trace: Vec::new(),
    }
}

fn num(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// Scores every step; one verdict per step, in order. The entry's verdict
/// is on its last step; its other steps are excluded (`step of <id>`).
pub fn score(settings: &Settings, d: &Dataset, steps: &[Step]) -> Result<Vec<StepVerdict>, String> {
    // Sessions in order of first appearance; steps in request order.
    let mut order: Vec<&str> = Vec::new();
    let mut by_session: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        let list = by_session.entry(s.session_id.as_str()).or_default();
        if list.is_empty() {
            order.push(s.session_id.as_str());
        }
        list.push(i);
    }
    let mut out: Vec<Option<StepVerdict>> = steps.iter().map(|_| None).collect();
    let mut globals = Globals::new(d.long_context.clone().unwrap_or_default());
    for sid in order {
        let mut idx = by_session[sid].clone();
        idx.sort_by_key(|&i| num(&steps[i].expected, "request"));
        let first = &steps[idx[0]].expected;
        let id = first["id"]
            .as_str()
            .ok_or_else(|| format!("item {}: expected-json has no id", steps[idx[0]].item_id))?;
        let q = d
            .find(id)
            .ok_or_else(|| format!("entry {id} is not in the granted data"))?;
        let gt = q.ground_truth.as_ref().ok_or_else(|| {
            format!(
                "no ground truth granted for {id} (multi_turn_{}_answers)",
                q.category
            )
        })?;
        // Per step: its BFCL turn, its decoded calls.
        let mut decoded: Vec<Vec<Vec<String>>> = Vec::new();
        let mut missing = 0usize;
        let mut force_quit = None;
        let mut step_rows = Vec::new();
        for &i in &idx {
            let s = &steps[i];
            let turn = num(&s.expected, "turn") as usize;
            let step = num(&s.expected, "step");
            let max_steps = s.expected["max_steps"].as_u64().unwrap_or(20);
            while decoded.len() <= turn {
                decoded.push(Vec::new());
            }
            let calls = match &s.completion {
                None => {
                    missing += 1;
                    None
                }
                Some((tcs, content)) => {
                    match decode_step(
                        tcs.iter().map(|(_, n, a)| (n.as_str(), a.as_str())),
                        content,
                    ) {
                        Ok(calls) if !calls.is_empty() => {
                            decoded[turn].push(calls.clone());
                            if step >= max_steps {
                                force_quit = Some(turn);
                            }
                            Some(Ok(calls))
                        }
                        Ok(_) => Some(Ok(Vec::new())),
                        Err(e) => Some(Err(e)),
                    }
                }
            };
            step_rows.push(StepRow { turn, step, calls });
        }
        let verdict = if missing > 0 {
            fail(
                "multi_turn:inference_error",
                format!(
                    "Error during inference phase: {missing} request(s) of this entry failed or were not sent."
                ),
            )
        } else if decoded.len() != gt.len() {
            // The workload ends an entry only at its last turn or on a
            // force-quit.
            checker::check_turn_count(decoded.len(), gt.len())
                .map(|v| EntryVerdict {
                    valid: false,
                    error_type: v.error_type,
                    error_message: v.error_message,
                    details: Vec::new(),
                    not_ported: Vec::new(),
                    trace: Vec::new(),
                })
                .unwrap_or_else(|| fail("multi_turn:force_terminated", String::new()))
        } else {
            let v = checker::multi_turn_checker(
                &decoded,
                gt,
                &Entry {
                    id: &q.id,
                    initial_config: &q.initial_config,
                    involved_classes: &q.involved_classes,
                },
                &settings.model_name,
                &mut globals,
            );
            EntryVerdict {
                valid: v.valid,
                error_type: v.error_type,
                error_message: v.error_message,
                details: v.details,
                not_ported: v.not_ported,
                trace: v.trace,
            }
        };
        let (last, rest) = idx.split_last().expect("a session has steps");
        let excluded = format!("step of {}", q.id);
        for (k, &i) in rest.iter().enumerate() {
            out[i] = Some(StepVerdict {
                item_id: steps[i].item_id.clone(),
                score: 0.0,
                detail: to_text(&StepDetail {
                    row: &step_rows[k],
                    id: &q.id,
                    category: &q.category,
                    excluded: &excluded,
                }),
                excluded: Some(excluded.clone()),
            });
        }
        out[*last] = Some(StepVerdict {
            item_id: steps[*last].item_id.clone(),
            score: if verdict.valid { 1.0 } else { 0.0 },
            excluded: None,
            detail: to_text(&EntryDetail {
                id: &q.id,
                category: &q.category,
                valid: verdict.valid,
                error_type: &verdict.error_type,
                error_message: &verdict.error_message,
                details: &verdict.details,
                not_ported: &verdict.not_ported,
                force_quit_turn: force_quit,
                requests: idx.len(),
                missing_requests: missing,
                steps: &step_rows,
                trace: &verdict.trace,
            }),
        });
    }
    Ok(out
        .into_iter()
        .map(|v| v.expect("every step judged"))
        .collect())
}

fn pct(correct: usize, total: usize) -> f64 {
    if total == 0 {
        return 0.0;
    }
    (correct as f64 / total as f64 * 10000.0).round() / 100.0
}

/// What the report reads of an entry's verdict detail.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
pub struct EntrySummary {
    pub id: String,
    pub category: String,
    pub error_type: Option<String>,
}

/// The report: per category and overall accuracy over the scored entries,
/// given as (score, summary) per entry verdict (and, when the settings name
/// the expected selection, entries never issued count as failed). Not a gate.
pub fn aggregate(settings: &Settings, d: &Dataset, entries: &[(f64, EntrySummary)]) -> Value {
    // category -> (correct, total)
    let mut cats: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (score, v) in entries {
        let e = cats.entry(v.category.clone()).or_default();
        e.1 += 1;
        if *score >= 1.0 {
            e.0 += 1;
        } else if let Some(t) = &v.error_type {
            *errors.entry(t.clone()).or_default() += 1;
        }
        seen.insert(&v.id);
    }
    let mut never_issued = 0usize;
    if let Some((categories, pcts)) = &settings.expected {
        if let Ok(selected) = data::select(d, categories, pcts) {
            for q in selected {
                if !seen.contains(q.id.as_str()) {
                    never_issued += 1;
                    cats.entry(q.category.clone()).or_default().1 += 1;
                    *errors.entry("multi_turn:not_issued".into()).or_default() += 1;
                }
            }
        }
    }
    let mut category_scores = serde_json::Map::new();
    let mut acc = Vec::new();
    let (mut correct, mut total) = (0, 0);
    for c in data::CATEGORIES {
        if let Some(&(ok, n)) = cats.get(c) {
            acc.push(ok as f64 / n.max(1) as f64);
            correct += ok;
            total += n;
            category_scores.insert(
                format!("multi_turn_{c}"),
                json!({"accuracy": pct(ok, n), "correct_count": ok, "total_count": n}),
            );
        }
    }
    let mean = if acc.is_empty() {
        0.0
    } else {
        acc.iter().sum::<f64>() / acc.len() as f64
    };
    json!({
        "dataset_name": "bfcl_v4::multi_turn",
        "dataset_type": "accuracy",
        "gated": false,
        "score": mean,
        "breakdown": {
            // BFCL's leaderboard: the unweighted mean of the categories.
            "multi_turn_accuracy": (mean * 10000.0).round() / 100.0,
            "overall_accuracy": pct(correct, total),
            "category_scores": category_scores,
            "correct_count": correct,
            "total_count": total,
            "never_issued": never_issued,
            "error_types": errors,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn bfcl_dir() -> Option<PathBuf> {
        bfcl_test_data::bfcl_dir("BFCL_v4_multi_turn_base.json")
    }

    fn step(id: &str, request: u64, turn: usize, s: u64, answer: Option<Answer>) -> Step {
        Step {
            item_id: format!("{id}#{request}"),
            session_id: id.into(),
            expected: json!({"id": id, "category": "base", "turn": turn, "step": s,
                "max_steps": 20, "request": request}),
            completion: answer,
        }
    }

    fn call(name: &str, args: &str) -> Answer {
        (vec![("c0".into(), name.into(), args.into())], String::new())
    }

    fn text() -> Answer {
        (Vec::new(), "Done.".into())
    }

    #[test]
    fn judges_entries_as_bfcl() {
        let Some(dir) = bfcl_dir() else { return };
        let q = std::fs::read(dir.join("BFCL_v4_multi_turn_base.json")).unwrap();
        let a = std::fs::read(dir.join("possible_answer/BFCL_v4_multi_turn_base.json")).unwrap();
        let d = Dataset::parse([
            ("multi_turn_base", q.as_slice()),
            ("multi_turn_base_answers", a.as_slice()),
        ])
        .unwrap();
        let parse = |json: &str| Settings::from_config(&Config::with_settings(json)).unwrap();
        let settings = parse(r#"{"categories": ["base"]}"#);
        // multi_turn_base_3: [[find(path='.',name='test')], [cd, cd, cp, cp]].
        let id = "multi_turn_base_3";
        let gt = &d.find(id).unwrap().ground_truth.as_ref().unwrap()[1];
        assert_eq!(gt.len(), 4);
        let mut steps = vec![
            step(
                id,
                1,
                0,
                0,
                Some(call("find", r#"{"path": ".", "name": "test"}"#)),
            ),
            step(id, 2, 0, 1, Some(text())),
        ];
        let mut r = 3;
        for c in [
            ("cd", r#"{"folder": "projects"}"#),
            ("cd", r#"{"folder": "photography"}"#),
            (
                "cp",
                r#"{"source": "test_image1.jpg", "destination": "backup_tests"}"#,
            ),
            (
                "cp",
                r#"{"source": "test_document.txt", "destination": "backup_tests"}"#,
            ),
        ] {
            steps.push(step(id, r, 1, r - 3, Some(call(c.0, c.1))));
            r += 1;
        }
        steps.push(step(id, r, 1, 4, Some(text())));
        // multi_turn_base_0: a text answer in its first turn.
        let id0 = "multi_turn_base_0";
        steps.insert(0, step(id0, 1, 0, 0, Some(text())));
        for t in 1..4 {
            steps.insert(t, step(id0, t as u64 + 1, t, 0, Some(text())));
        }
        // multi_turn_base_1: its second request failed.
        let id1 = "multi_turn_base_1";
        steps.push(step(id1, 1, 0, 0, Some(call("ls", r#"{"a": true}"#))));
        steps.push(step(id1, 2, 0, 1, None));
        let v = score(&settings, &d, &steps).unwrap();
        assert_eq!(v.len(), steps.len());
        let details: Vec<Value> = v
            .iter()
            .map(|x| serde_json::from_str(&x.detail).unwrap())
            .collect();
        let by_id = |id: &str| {
            let i = (0..v.len())
                .find(|&i| v[i].excluded.is_none() && details[i]["id"] == id)
                .unwrap();
            (&v[i], &details[i])
        };
        assert_eq!(by_id(id).0.score, 1.0, "{}", by_id(id).1);
        assert_eq!(
            by_id(id).1["trace"][1]["model"].as_array().unwrap().len(),
            4
        );
        assert_eq!(
            by_id(id0).1["error_type"],
            "multi_turn:empty_turn_model_response"
        );
        assert_eq!(by_id(id1).1["error_type"], "multi_turn:inference_error");
        // A step that is not its entry's last names the entry; a failed request has no calls.
        let step = (0..v.len())
            .find(|&i| v[i].excluded.is_some() && details[i]["id"] == id1)
            .unwrap();
        assert_eq!(
            details[step],
            json!({"turn": 0, "step": 0, "calls": ["ls(a=True)"], "id": id1,
                   "category": "base", "excluded": format!("step of {id1}")})
        );
        assert_eq!(by_id(id1).1["steps"][1]["calls"], Value::Null);
        assert_eq!(
            v.iter().filter(|x| x.excluded.is_some()).count(),
            steps.len() - 3
        );
        // Over the entries seen: one of three passes.
        let entries: Vec<(f64, EntrySummary)> = v
            .iter()
            .filter(|x| x.excluded.is_none())
            .map(|x| (x.score, serde_json::from_str(&x.detail).unwrap()))
            .collect();
        let report = aggregate(&parse("{}"), &d, &entries);
        assert_eq!(
            report["breakdown"]["category_scores"]["multi_turn_base"],
            json!({"accuracy": 33.33, "correct_count": 1, "total_count": 3})
        );
        // With the selection named (2 %: the first 4 entries), the entry
        // never issued (multi_turn_base_2) counts as failed.
        let settings = parse(r#"{"categories": ["base"], "sample_pct": 2}"#);
        let report = aggregate(&settings, &d, &entries);
        assert_eq!(report["breakdown"]["never_issued"], 1);
        assert_eq!(report["breakdown"]["total_count"], 4);
        assert_eq!(report["gated"], false);
        let e = Settings::from_config(&Config::with_settings(r#"{"model": "x"}"#)).unwrap_err();
        assert!(e.to_string().contains("unknown field `model`"), "{e}");
    }
}
