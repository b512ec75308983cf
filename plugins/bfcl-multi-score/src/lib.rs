//! `bfcl-multi-score`: BFCL v4's multi-turn evaluation on the `bfcl-multi`
//! workload's recorded steps, as an agentload scorer component.
//!
//! The items of one session are one BFCL entry's steps. Each completion is
//! decoded again (BFCL's FC decoding), the decoded steps are re-executed on
//! fresh model instances (`{model}_eval`) next to the ground truth
//! (`{model}_ground_truth_eval`), and BFCL's checker decides: the entry's
//! verdict (`valid`, `error_type` such as `multi_turn:force_terminated`,
//! `multi_turn:empty_turn_model_response`,
//! `multi_turn:instance_state_mismatch`,
//! `multi_turn:execution_response_mismatch`, `multi_turn:inference_error`
//! for a failed or unsent request, and the executed call trace) is given on
//! its last item; its other items are excluded as `step of <id>`. The
//! aggregate is per-category and overall accuracy, not a gate.
//!
//! The report is written as the reference writes its results
//! (`json.dumps(x, indent=2)`).
//!
//! Granted files (`[phase.scorer_data]`): `multi_turn_<category>` and
//! `multi_turn_<category>_answers` for each category run, and
//! `long_context_constants`.

#![forbid(unsafe_code)]

pub mod score;

use agentload_sdk::{export_scorer, Config, Detail, Error, Item, Report, Scorer, Verdict};
use bfcl_multi_turn::data::Dataset;
use pysem::json::{dumps_with, Format};

/// The scorer: its settings and the granted entries and answers.
#[derive(Debug, Default)]
pub struct BfclMultiScore {
    settings: Option<score::Settings>,
    data: Dataset,
}

impl BfclMultiScore {
    fn settings(&self) -> Result<&score::Settings, Error> {
        self.settings
            .as_ref()
            .ok_or_else(|| Error::input("called before configure"))
    }
}

fn steps(items: &[Item]) -> Result<Vec<score::Step>, Error> {
    items
        .iter()
        .map(|it| {
            Ok(score::Step {
                item_id: it.item_id.clone(),
                session_id: it.session_id.clone(),
                expected: it.expected()?,
                completion: it.completion.as_ref().map(|c| {
                    (
                        c.tool_calls
                            .iter()
                            .map(|t| (t.id.clone(), t.name.clone(), t.arguments.clone()))
                            .collect(),
                        c.content.clone(),
                    )
                }),
            })
        })
        .collect()
}

impl Scorer for BfclMultiScore {
    fn configure(&mut self, config: Config) -> Result<(), Error> {
        self.settings = Some(score::Settings::from_config(&config)?);
        self.data = Dataset::parse(
            config
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        )
        .map_err(|e| Error::data(e.file, e.line, e.message))?;
        Ok(())
    }

    /// One item scored as a run of its own (an entry of one step).
    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        let mut verdicts = self.score_all(std::slice::from_ref(item))?;
        verdicts
            .pop()
            .ok_or_else(|| Error::internal("no verdict for the item"))
    }

    /// The items of one session are one BFCL entry's steps: an entry is
    /// judged on all of them, its verdict given on the last.
    fn score_all(&mut self, items: &[Item]) -> Result<Vec<Verdict>, Error> {
        let steps = steps(items)?;
        let verdicts = score::score(self.settings()?, &self.data, &steps).map_err(Error::input)?;
        Ok(verdicts
            .into_iter()
            .map(|v| Verdict {
                item_id: v.item_id,
                score: v.score,
                excluded: v.excluded,
                detail: Detail::from_json(v.detail),
            })
            .collect())
    }

    /// From the entry verdicts' details: the steps' items are not read.
    fn aggregate(&mut self, _items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
        let entries = verdicts
            .iter()
            .filter(|v| v.excluded.is_none())
            .map(|v| {
                let summary: score::EntrySummary = v.detail.parse().map_err(|e| {
                    Error::input(format!("item {}: not an entry verdict: {e}", v.item_id))
                })?;
                Ok((v.score, summary))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let report = score::aggregate(self.settings()?, &self.data, &entries);
        Ok(Report::from_json(
            report["score"].as_f64().unwrap_or(0.0),
            dumps_with(&report, &Format::indented(2)),
        ))
    }
}

export_scorer!(BfclMultiScore);
