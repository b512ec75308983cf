//! The remote run's progress as its statuses report it, for the console.

use serde_json::{Map, Value};

/// One status's progress fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    /// `queued`, `agent`, `eval`, or the final status.
    pub phase: Option<String>,
    pub agent_completed: Option<u64>,
    pub agent_total: Option<u64>,
    pub eval_completed: Option<u64>,
    pub eval_total: Option<u64>,
}

/// A non-negative count (an integer or a string of digits), else none, as
/// the reference's `_progress_int` ignores what it cannot read.
fn count(status: &Map<String, Value>, key: &str) -> Option<u64> {
    match status.get(key)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

impl Progress {
    /// The progress `status` reports.
    pub(crate) fn of(status: &Map<String, Value>) -> Self {
        let text = |key: &str| {
            status
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Self {
            status: text("status").unwrap_or_default(),
            phase: text("phase"),
            agent_completed: count(status, "agent_completed"),
            agent_total: count(status, "agent_total"),
            eval_completed: count(status, "eval_completed"),
            eval_total: count(status, "eval_total"),
        }
    }
}

impl std::fmt::Display for Progress {
    /// `running (agent): agent 3/5, eval 0/0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let status = if self.status.is_empty() {
            "(no status)"
        } else {
            &self.status
        };
        write!(f, "{status}")?;
        if let Some(phase) = self.phase.as_deref().filter(|p| *p != status) {
            write!(f, " ({phase})")?;
        }
        let part = |done: Option<u64>, total: Option<u64>| match (done, total) {
            (None, None) => None,
            (d, t) => Some(format!(
                "{}/{}",
                d.map_or_else(|| "?".to_owned(), |d| d.to_string()),
                t.map_or_else(|| "?".to_owned(), |t| t.to_string())
            )),
        };
        let mut sep = ": ";
        for (name, done, total) in [
            ("agent", self.agent_completed, self.agent_total),
            ("eval", self.eval_completed, self.eval_total),
        ] {
            if let Some(p) = part(done, total) {
                write!(f, "{sep}{name} {p}")?;
                sep = ", ";
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_reads_counts_leniently_and_prints_briefly() {
        let status = json!({"status": "running", "phase": "eval", "agent_completed": 3,
            "agent_total": "3", "eval_completed": -1, "eval_total": 3});
        let p = Progress::of(status.as_object().unwrap());
        assert_eq!(p.eval_completed, None);
        assert_eq!(p.to_string(), "running (eval): agent 3/3, eval ?/3");
        let bare = Progress::of(json!({"status": "queued"}).as_object().unwrap());
        assert_eq!(bare.to_string(), "queued");
    }
}
