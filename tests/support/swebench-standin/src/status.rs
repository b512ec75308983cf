//! The run's state and its status as the service sends it: `RunStatus`'s
//! keys in its order (`swebench_service/schemas.py`), written as aiohttp's
//! `json_response` writes (Python's `json.dumps`: `", "` and `": "`).

use crate::script::{Ending, Script};
use serde_json::{json, Value};

/// The service's run states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Running => "running",
            State::Succeeded => "succeeded",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }

    pub(crate) fn terminal(self) -> bool {
        matches!(self, State::Succeeded | State::Failed | State::Cancelled)
    }
}

/// The one run a stand-in holds.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) state: State,
    /// Instances the request named.
    pub(crate) total: u64,
    /// Status polls answered so far.
    pub(crate) polls: u32,
}

/// Fixed times: the files a test compares do not depend on the clock.
const CREATED_AT: f64 = 1_767_225_600.25;

impl Run {
    /// Advances the run by one status poll, as the script says.
    pub(crate) fn poll(&mut self, script: &Script) {
        if self.state.terminal() {
            return;
        }
        self.polls += 1;
        self.state = match (&script.ending, self.polls > script.polls) {
            (Ending::Never, _) | (_, false) => State::Running,
            (Ending::Succeed { .. }, true) => State::Succeeded,
            (Ending::Fail { .. }, true) => State::Failed,
        };
    }

    /// The status as `GET /v1/runs/{id}` answers it.
    pub(crate) fn status(&self, script: &Script) -> Value {
        let (phase, agent_done, eval_total, eval_done) = match self.state {
            State::Queued => ("queued", 0, 0, 0),
            State::Running if self.polls * 2 <= script.polls => {
                ("agent", u64::from(self.polls).min(self.total), 0, 0)
            }
            State::Running => {
                let into_eval = u64::from(self.polls - script.polls / 2);
                ("eval", self.total, self.total, into_eval.min(self.total))
            }
            State::Succeeded => ("succeeded", self.total, self.total, self.total),
            State::Failed => ("failed", self.total, 0, 0),
            State::Cancelled => ("cancelled", u64::from(self.polls).min(self.total), 0, 0),
        };
        let finished = self.state.terminal();
        let (error, result, artifacts) = match (&script.ending, self.state) {
            (Ending::Succeed { result }, State::Succeeded) => {
                let listed: Vec<Value> = script
                    .artifacts
                    .iter()
                    .map(|(name, _)| {
                        json!({"name": name, "url": format!("/v1/runs/{}/artifacts/{name}", script.run_id)})
                    })
                    .collect();
                let result = if script.result_inline {
                    result.clone()
                } else {
                    Value::Null
                };
                (Value::Null, result, listed)
            }
            (Ending::Fail { error }, State::Failed) => (json!(error), Value::Null, Vec::new()),
            _ => (Value::Null, Value::Null, Vec::new()),
        };
        json!({
            "run_id": script.run_id,
            "status": self.state.name(),
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT + f64::from(self.polls),
            "finished_at": if finished { json!(CREATED_AT + f64::from(self.polls)) } else { Value::Null },
            "phase": phase,
            "agent_total": self.total,
            "agent_completed": agent_done,
            "eval_total": eval_total,
            "eval_completed": eval_done,
            "message": phase,
            "error": error,
            "result": result,
            "artifacts": artifacts,
        })
    }
}

/// `value` as Python's `json.dumps` writes it (ASCII text assumed).
pub(crate) fn python_json(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonSeparators);
    serde::Serialize::serialize(value, &mut ser).expect("JSON to memory");
    out
}

/// `", "` between items, `": "` after keys.
struct PythonSeparators;

impl serde_json::ser::Formatter for PythonSeparators {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}
