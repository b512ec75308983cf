//! Open-loop phases from the config: the schedule `[load.arrivals]` and `[load.ramp]` ask
//! for (a drawn process, or a trace's own times), which plan each arrival starts, and how
//! the phase's summary states what was configured. See `docs/load-shapes.md`.

use agentload_config::{ArrivalUnit, Arrivals, Process, Ramp, RampOf, RunConfig};
use agentload_engine::arrivals::{OpenLoop, Planned};
use agentload_engine::schedule::{self, Gaps, RateRamp, Spec};
use agentload_plugin_host::types::GrantedFile;
use agentload_plugin_host::SessionPlan;
use agentload_results::arrivals::Configured;
use anyhow::{Context as _, Result};

/// The data file a trace schedule reads its times from (the one granted to the workload).
pub const TRACE: &str = "trace";

/// A phase's open-loop schedule: every arrival's due time, on the phase's clock.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Arrival `k` starts plan `k`, due `due_ns[k]` ns after the phase's origin.
    pub due_ns: Vec<u64>,
    pub configured: Configured,
    pub open: OpenLoop,
}

/// The draw of `arrivals` at `rate` (a sweep level's, or its own), with the config's ramp.
pub fn spec(arrivals: &Arrivals, rate: f64, ramp: Option<&Ramp>) -> Spec {
    let gaps = match arrivals.process {
        Process::Constant => Gaps::Constant,
        Process::Gamma => Gaps::Gamma {
            cv: arrivals.cv.unwrap_or(1.0),
        },
        Process::Poisson | Process::Trace => Gaps::Exponential,
    };
    Spec {
        gaps,
        rate,
        seed: arrivals.seed,
        ramp: ramp.filter(|r| r.of == RampOf::Rate).map(|r| RateRamp {
            shape: r.shape,
            from: r.from,
            seconds: r.duration_s,
        }),
    }
}

/// `sessions` or `requests`.
pub fn unit_name(unit: ArrivalUnit) -> &'static str {
    match unit {
        ArrivalUnit::Sessions => "sessions",
        ArrivalUnit::Requests => "requests",
    }
}

/// What `arrivals` configures, at `rate`, over `planned` arrivals (none: endless).
pub fn configured(arrivals: &Arrivals, rate: f64, planned: Option<u64>, ramp_s: f64) -> Configured {
    Configured {
        of: unit_name(arrivals.of).to_owned(),
        process: arrivals.process.name().to_owned(),
        rate,
        cv: match arrivals.process {
            Process::Gamma => arrivals.cv,
            Process::Poisson => Some(1.0),
            Process::Constant => Some(0.0),
            Process::Trace => None,
        },
        seed: arrivals.seed,
        planned,
        max_in_flight: arrivals.cap(),
        ramp_s,
    }
}

/// The performance phase's schedule: `arrivals.count` (default: one per plan) arrivals.
pub fn fixed(
    config: &RunConfig,
    arrivals: &Arrivals,
    plans: usize,
    trace: Option<&[f64]>,
) -> Result<Schedule> {
    let count = match arrivals.count {
        Some(n) => n as u64,
        None => plans as u64,
    };
    anyhow::ensure!(
        count <= plans as u64,
        "load.arrivals.count: {count} arrivals, but the workload planned {plans} sessions \
         (each arrival starts its own; plan more, e.g. with the workload's \
         num_trajectories_to_issue setting)"
    );
    let open = OpenLoop {
        cap: arrivals.cap(),
        one_turn: arrivals.of == ArrivalUnit::Requests,
        finished: None,
    };
    if arrivals.process == Process::Trace {
        let times = trace.context("load.arrivals: process = \"trace\" needs the trace's times")?;
        let times = &times[..(count as usize).min(times.len())];
        let due_ns = schedule::from_trace(times, arrivals.time_scale);
        let span_s = due_ns.last().copied().unwrap_or(0) as f64 / 1e9;
        let rate = if span_s > 0.0 {
            (due_ns.len() - 1) as f64 / span_s
        } else {
            0.0
        };
        return Ok(Schedule {
            configured: configured(arrivals, rate, Some(due_ns.len() as u64), 0.0),
            due_ns,
            open,
        });
    }
    let rate = arrivals
        .rate
        .context("load.arrivals.rate: needed outside a rate sweep")?;
    let spec = spec(arrivals, rate, config.load.ramp.as_ref());
    Ok(Schedule {
        due_ns: schedule::fixed(&spec, count),
        configured: configured(arrivals, rate, Some(count), spec.ramp_end_s()),
        open,
    })
}

impl Schedule {
    /// The arrivals of `plans` this process sends: all of them, or a shard's slice (arrival
    /// `k` belongs to shard `k mod N`). `of = "requests"` plans one turn per session.
    pub fn planned(&self, plans: &[SessionPlan], owns: impl Fn(usize) -> bool) -> Vec<Planned> {
        self.due_ns
            .iter()
            .zip(plans)
            .enumerate()
            .filter(|(k, _)| owns(*k))
            .map(|(k, (&due_ns, plan))| {
                let mut plan = plan.clone();
                if self.open.one_turn {
                    plan.expected_turns = plan.expected_turns.min(1);
                }
                Planned {
                    index: k as u64,
                    due_ns,
                    plan,
                }
            })
            .collect()
    }
}

/// The times (ms) of the trace granted to the workload as `trace`, checked: every line has
/// a numeric `timestamp`, in order. A bad line is refused naming the key, the file and the
/// line, before any request is sent.
pub fn trace_times(files: &[GrantedFile]) -> Result<Vec<f64>> {
    let file = files.iter().find(|f| f.name == TRACE).context(
        "load.arrivals: process = \"trace\" reads its times from the workload's data file \
         `trace` ([performance.data] trace = \"FILE\")",
    )?;
    let name = &file.file_name;
    let text = std::str::from_utf8(&file.bytes)
        .with_context(|| format!("load.arrivals: trace {name} is not UTF-8"))?;
    let mut times = Vec::new();
    let mut previous = f64::NEG_INFINITY;
    for (n, line) in (1..).zip(text.lines()) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| anyhow::anyhow!("load.arrivals: trace {name} line {n}: {why}");
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        let t = match value.get("timestamp") {
            None => return Err(bad("missing field `timestamp`".into())),
            Some(t) => t
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| bad(format!("`timestamp` {t} is not a time in ms")))?,
        };
        for key in ["input_length", "output_length", "hash_ids"] {
            if value.get(key).is_none() {
                return Err(bad(format!("missing field `{key}`")));
            }
        }
        if t < previous {
            return Err(bad(format!(
                "`timestamp` {t} is before the previous line's {previous}: a trace must be in \
                 time order"
            )));
        }
        previous = t;
        times.push(t);
    }
    anyhow::ensure!(
        !times.is_empty(),
        "load.arrivals: trace {name} has no lines"
    );
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(text: &str) -> Vec<GrantedFile> {
        vec![GrantedFile {
            name: TRACE.into(),
            file_name: "t.jsonl".into(),
            bytes: text.as_bytes().to_vec(),
        }]
    }

    #[test]
    fn a_bad_trace_is_refused_naming_key_file_and_line() {
        let line = |t: &str| {
            format!("{{\"timestamp\": {t}, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}}\n")
        };
        let ok = format!("{}\n{}{}", line("0"), line("2.5"), line("2.5"));
        assert_eq!(trace_times(&granted(&ok)).unwrap(), [0.0, 2.5, 2.5]);
        for (text, want) in [
            (
                format!("{}{}", line("5"), line("4")),
                "t.jsonl line 2: `timestamp` 4",
            ),
            (
                format!(
                    "{}{{\"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}}",
                    line("1")
                ),
                "line 2: missing field `timestamp`",
            ),
            (
                "{\"timestamp\": 1, \"input_length\": 1, \"hash_ids\": []}".into(),
                "line 1: missing field `output_length`",
            ),
            (line("-1"), "line 1: `timestamp` -1"),
            ("\n".into(), "no lines"),
        ] {
            let e = trace_times(&granted(&text)).unwrap_err().to_string();
            assert!(e.contains(want) && e.starts_with("load.arrivals"), "{e}");
        }
        assert!(trace_times(&[]).is_err());
    }
}
