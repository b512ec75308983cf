//! BFCL's multi-turn checker (`multi_turn_checker.py::multi_turn_checker`
//! and the pre-checks of `eval_runner._evaluate_single_multi_turn_entry`),
//! on already decoded model steps.
//!
//! Per turn: every decoded model step is executed on the model's instances
//! (`{model}_eval`), then the turn's ground truth on its own instances
//! (`{model}_ground_truth_eval`); turns with an empty ground truth are not
//! checked (their calls still change state); otherwise the model must have
//! produced a step, every public attribute of every ground-truth instance must
//! equal the model's (Python `!=`), and every ground-truth result string must
//! be found, as a multiset, among the model's results of all turns so far.

use crate::exec::{Outcome, Session, State};
use crate::py::py_eq;
use crate::sim::Globals;

/// A multi-turn test entry as the checker needs it.
pub struct Entry<'a> {
    /// `id`, e.g. `multi_turn_base_0`.
    pub id: &'a str,
    /// `initial_config`.
    pub initial_config: &'a serde_json::Value,
    /// `involved_classes`.
    pub involved_classes: &'a [String],
}

/// The checker's verdict for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `valid`.
    pub valid: bool,
    /// `error_type` (`multi_turn:…`) when not valid.
    pub error_type: Option<String>,
    /// `error_message` when not valid.
    pub error_message: Option<String>,
    /// For `instance_state_mismatch`: the class and the differing attributes;
    /// for `execution_response_mismatch`: the missing result strings.
    pub details: Vec<String>,
    /// Calls this port could not execute as BFCL would (their results were
    /// replaced by a marker string): the verdict may then differ from BFCL's.
    pub not_ported: Vec<String>,
    /// Every call executed, turn by turn, up to the turn that decided.
    pub trace: Vec<TurnTrace>,
}

/// One executed call and its result string.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Executed {
    pub call: String,
    pub result: String,
}

/// What one turn executed: the model's steps, then the ground truth.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TurnTrace {
    pub model: Vec<Vec<Executed>>,
    pub ground_truth: Vec<Executed>,
}

impl Verdict {
    fn pass(not_ported: Vec<String>) -> Verdict {
        Verdict {
            valid: true,
            error_type: None,
            error_message: None,
            details: Vec::new(),
            not_ported,
            trace: Vec::new(),
        }
    }

    fn fail(kind: &str, message: String, details: Vec<String>, not_ported: Vec<String>) -> Verdict {
        Verdict {
            valid: false,
            error_type: Some(kind.into()),
            error_message: Some(message),
            details,
            not_ported,
            trace: Vec::new(),
        }
    }

    fn with_trace(mut self, trace: Vec<TurnTrace>) -> Verdict {
        self.trace = trace;
        self
    }
}

/// `is_empty_execute_response`.
pub fn is_empty_execute_response(steps: &[Vec<String>]) -> bool {
    steps.is_empty() || (steps.len() == 1 && steps[0].is_empty())
}

/// The force-termination pre-check: the model must have as many turns as
/// the ground truth.
pub fn check_turn_count(model_turns: usize, gt_turns: usize) -> Option<Verdict> {
    (model_turns != gt_turns).then(|| {
        Verdict::fail(
            "multi_turn:force_terminated",
            format!(
                "Model was force-terminated during inference phase. The length of the model result turns ({model_turns}) does not match the length of the ground truth turns ({gt_turns})."
            ),
            Vec::new(),
            Vec::new(),
        )
    })
}

fn results(outcomes: Vec<Outcome>, not_ported: &mut Vec<String>) -> Vec<String> {
    outcomes
        .into_iter()
        .map(|o| match o {
            Outcome::Result(r) => r,
            Outcome::NotPorted(why) => {
                not_ported.push(why.clone());
                format!("<not ported: {why}>")
            }
        })
        .collect()
}

/// `_compare_instances` over every class: the first class whose public
/// attributes differ, with the differing attribute names.
fn state_mismatch(
    model: &[(String, Option<State>)],
    gt: &[(String, Option<State>)],
) -> Option<(String, Vec<String>)> {
    for (class, gt_state) in gt {
        let (Some(gt_state), Some((_, Some(m_state)))) =
            (gt_state, model.iter().find(|(c, _)| c == class))
        else {
            continue;
        };
        let diffs: Vec<String> = gt_state
            .iter()
            .filter(|(k, v)| {
                m_state
                    .iter()
                    .find(|(mk, _)| mk == k)
                    .is_none_or(|(_, mv)| !py_eq(mv, v))
            })
            .map(|(k, _)| k.clone())
            .collect();
        if !diffs.is_empty() {
            return Some((class.clone(), diffs));
        }
    }
    None
}

/// `_is_subsequence_unordered(gt, model)`: the ground-truth items missing
/// from the model's results (multiset, order ignored).
pub fn missing_items(gt: &[String], model: &[String]) -> Vec<String> {
    let mut pool: Vec<&String> = model.iter().collect();
    let mut missing = Vec::new();
    for item in gt {
        match pool.iter().position(|m| *m == item) {
            Some(i) => {
                pool.remove(i);
            }
            None => missing.push(item.clone()),
        }
    }
    missing
}

/// `multi_turn_checker(decoded, ground_truth, entry, category, model_name)`.
/// `decoded[t]` holds turn `t`'s decoded steps (undecodable and empty steps
/// already dropped), each a list of call strings; `g` stands for the Python
/// process (the same one must be used for all entries of a run, in order).
pub fn multi_turn_checker(
    decoded: &[Vec<Vec<String>>],
    ground_truth: &[Vec<String>],
    entry: &Entry,
    model_name: &str,
    g: &mut Globals,
) -> Verdict {
    let category = entry.id.rsplit_once('_').map_or(entry.id, |(c, _)| c);
    let long_context = category.contains("long_context") || category.contains("composite");
    let mut model = Session::new(
        &format!("{model_name}_eval"),
        entry.id,
        entry.initial_config,
        long_context,
    );
    let mut gt = Session::new(
        &format!("{model_name}_ground_truth_eval"),
        entry.id,
        entry.initial_config,
        long_context,
    );
    let mut not_ported = Vec::new();
    let mut all_model_results: Vec<String> = Vec::new();
    let no_steps: Vec<Vec<String>> = Vec::new();
    let mut trace: Vec<TurnTrace> = Vec::new();
    let zip = |calls: &[String], results: &[String]| -> Vec<Executed> {
        calls
            .iter()
            .zip(results)
            .map(|(c, r)| Executed {
                call: c.clone(),
                result: r.clone(),
            })
            .collect()
    };
    for (t, gt_calls) in ground_truth.iter().enumerate() {
        let steps = decoded.get(t).unwrap_or(&no_steps);
        let mut turn = TurnTrace::default();
        for step in steps {
            let out = model.execute(step, entry.involved_classes, g);
            let r = results(out, &mut not_ported);
            turn.model.push(zip(step, &r));
            all_model_results.extend(r);
        }
        let out = gt.execute(gt_calls, entry.involved_classes, g);
        let gt_results = results(out, &mut not_ported);
        turn.ground_truth = zip(gt_calls, &gt_results);
        trace.push(turn);
        let trace = || trace.clone();
        if gt_calls.is_empty() {
            continue;
        }
        if is_empty_execute_response(steps) {
            return Verdict::fail(
                "multi_turn:empty_turn_model_response",
                format!("Model response list is empty for turn {t}"),
                Vec::new(),
                not_ported,
            )
            .with_trace(trace());
        }
        if let Some((class, diffs)) = state_mismatch(&model.states(g), &gt.states(g)) {
            return Verdict::fail(
                "multi_turn:instance_state_mismatch",
                format!(
                    "Model instance for {class} does not match the state with ground truth instance."
                ),
                diffs,
                not_ported,
            )
            .with_trace(trace());
        }
        let missing = missing_items(&gt_results, &all_model_results);
        if !missing.is_empty() {
            return Verdict::fail(
                "multi_turn:execution_response_mismatch",
                format!(
                    "Model response execution results so far does not contain all the ground truth response execution results for turn {t}."
                ),
                missing,
                not_ported,
            )
            .with_trace(trace());
        }
    }
    Verdict::pass(not_ported).with_trace(trace)
}
