//! AA's run-level files from the turns: `tasks.json`, `tools.json`,
//! `failures.json` and `summary.json`, with AA's totals, headline and
//! distributions.

use super::turn::{ToolReplay, TurnReport};
use super::{percentile, RunFacts, BENCHMARK_CONTEXT_TOKENS, TRANSPORT_POLICY_ID};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A finished run's turns, in replay order, and its settings.
#[derive(Debug, Clone)]
pub struct Report {
    pub facts: RunFacts,
    pub turns: Vec<TurnReport>,
    /// The replay's measured time (first send to last end, with the tool pauses), ms.
    pub measured_duration_ms: Option<f64>,
}

/// AA's headline numbers (`report.txt`, `report.html`, and `summary.json`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Headline {
    /// Pooled decode rate, tokens/s.
    pub output_tokens_per_second: Option<f64>,
    /// Σ output tokens / Σ e2e, tokens/s.
    pub end_to_end_output_tokens_per_second: Option<f64>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p95_ms: Option<f64>,
    pub turns: usize,
    pub failed_turns: usize,
}

impl Headline {
    /// One line for `report.txt` and the console.
    pub fn line(&self) -> String {
        let v = |x: Option<f64>, unit: &str| {
            x.map_or_else(|| "n/a".into(), |x| format!("{x:.2} {unit}"))
        };
        format!(
            "AA (agentperf-local) headline: output {} (pooled decode), end-to-end {}; TTFT p50 {} \
             p95 {}; e2e p50 {} p95 {}; {} turns, {} failed (aa/summary.json)",
            v(self.output_tokens_per_second, "tok/s"),
            v(self.end_to_end_output_tokens_per_second, "tok/s"),
            v(self.ttft_p50_ms, "ms"),
            v(self.ttft_p95_ms, "ms"),
            v(self.e2e_p50_ms, "ms"),
            v(self.e2e_p95_ms, "ms"),
            self.turns,
            self.failed_turns
        )
    }
}

/// Python's `statistics.fmean`: `math.fsum` / n.
fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| fsum(values.iter().copied()) / values.len() as f64)
}

/// Python 3.12's `sum()` of floats: Neumaier's compensated summation, the
/// compensation added at the end (what AA's totals are summed with; a plain
/// sum differs in the last bits over the default replay's 168 turns).
pub(crate) fn py_sum(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut c) = (0.0f64, 0.0f64);
    for x in values {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            c += (sum - t) + x;
        } else {
            c += (x - t) + sum;
        }
        sum = t;
    }
    if c != 0.0 && c.is_finite() {
        sum += c;
    }
    sum
}

/// Python's `math.fsum`: the correctly rounded sum (Shewchuk's partials, with
/// CPython's half-even correction), for finite values.
fn fsum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    for mut x in values {
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        if x != 0.0 {
            partials.push(x);
        }
    }
    let Some(mut hi) = partials.pop() else {
        return 0.0;
    };
    let mut lo = 0.0;
    while let Some(y) = partials.pop() {
        let x = hi;
        hi = x + y;
        lo = y - (hi - x);
        if lo != 0.0 {
            break;
        }
    }
    if let Some(&next) = partials.last() {
        if (lo < 0.0 && next < 0.0) || (lo > 0.0 && next > 0.0) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
    }
    hi
}

fn distribution(values: &[f64]) -> Value {
    json!({
        "count": values.len(),
        "mean": mean(values),
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
    })
}

/// Counts summed where present.
fn total(values: impl Iterator<Item = Option<u64>>) -> u64 {
    values.flatten().sum()
}

/// Counts summed only when every turn has one (null otherwise, or without turns).
fn complete_total(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let mut any = false;
    let mut sum = 0;
    for v in values {
        sum += v?;
        any = true;
    }
    any.then_some(sum)
}

/// AA's `totals` of some turns.
fn totals(turns: &[&TurnReport]) -> Value {
    let ok: Vec<&&TurnReport> = turns.iter().filter(|t| t.success).collect();
    let inference = py_sum(ok.iter().map(|t| t.e2e_ms.unwrap_or(0.0)));
    let replayed_ok = py_sum(ok.iter().map(|t| t.replayed_tool_delay_ms));
    json!({
        "turns": turns.len(),
        "successful_turns": ok.len(),
        "failed_turns": turns.len() - ok.len(),
        "short_output_warnings": turns.iter().filter(|t| t.normalization.warning.is_some()).count(),
        "tool_calls": turns.iter().map(|t| t.tool_calls.len()).sum::<usize>(),
        "total_inference_latency_ms": inference,
        "total_recorded_tool_delay_ms": py_sum(turns.iter().map(|t| t.info.recorded_tool_delay_ms)),
        "total_replayed_tool_delay_ms": py_sum(turns.iter().map(|t| t.replayed_tool_delay_ms)),
        "total_agentic_replay_ms": inference + replayed_ok,
        "total_normalized_generation_ms":
            py_sum(ok.iter().map(|t| t.normalization.normalized_generation_ms.unwrap_or(0.0))),
        "total_normalized_inference_latency_ms":
            py_sum(ok.iter().map(|t| t.normalization.normalized_e2e_latency_ms.unwrap_or(0.0))),
        "total_normalized_agentic_replay_ms": py_sum(ok
            .iter()
            .filter_map(|t| Some(t.normalization.normalized_e2e_latency_ms? + t.replayed_tool_delay_ms))),
        "total_server_prompt_tokens": total(ok.iter().map(|t| t.server_prompt_tokens)),
        "total_server_output_tokens": total(ok.iter().map(|t| t.server_output_tokens)),
        "total_local_output_tokens": total(ok.iter().map(|t| t.local_output_tokens)),
        "total_recorded_prompt_tokens": total(turns.iter().map(|t| t.info.recorded_prompt_tokens)),
        "total_recorded_completion_tokens":
            total(turns.iter().map(|t| t.info.recorded_completion_tokens)),
        "total_server_cached_prompt_tokens":
            complete_total(ok.iter().map(|t| t.server_cached_prompt_tokens)),
        "total_server_uncached_prompt_tokens":
            complete_total(ok.iter().map(|t| t.server_uncached_prompt_tokens())),
    })
}

/// One group of tool calls in `tools.json`.
#[derive(Default)]
struct ToolGroup {
    calls: u64,
    recorded_ms: f64,
    replayed_ms: f64,
}

impl ToolGroup {
    fn add(&mut self, tool: &ToolReplay) {
        self.calls += 1;
        self.recorded_ms += tool.call.duration_ms;
        self.replayed_ms += tool.replayed_duration_ms;
    }

    /// Live replays (return codes, failures) are not run: those counts are 0.
    fn to_json(&self, key: &str) -> Value {
        json!({
            "key": key,
            "calls": self.calls,
            "recorded_duration_ms": self.recorded_ms,
            "replayed_duration_ms": self.replayed_ms,
            "returncode_comparisons": 0,
            "returncode_matches": 0,
            "returncode_mismatches": 0,
            "failures": 0,
        })
    }
}

fn groups<'a>(tools: &[&'a ToolReplay], key: impl Fn(&'a ToolReplay) -> String) -> Value {
    let mut by: BTreeMap<String, ToolGroup> = BTreeMap::new();
    for tool in tools {
        by.entry(key(tool)).or_default().add(tool);
    }
    by.iter().map(|(k, g)| g.to_json(k)).collect()
}

impl Report {
    /// The successful turns.
    fn successful(&self) -> impl Iterator<Item = &TurnReport> {
        self.turns.iter().filter(|t| t.success)
    }

    /// AA's headline over the successful turns.
    pub fn headline(&self) -> Headline {
        let (mut decode_tokens, mut generation_s) = (0u64, 0.0);
        let (mut tokens, mut e2e_s) = (0u64, 0.0);
        for t in self.successful().filter(|t| t.measured) {
            let n = t.reported_output_tokens().unwrap_or(0);
            tokens += n;
            e2e_s += t.e2e_ms.unwrap_or(0.0) / 1e3;
            if t.response_tool_calls > 0 || n < 2 {
                continue;
            }
            if let Some(g) = t.generation_ms.filter(|&g| g > 0.0) {
                decode_tokens += n - 1;
                generation_s += g / 1e3;
            }
        }
        let (ttft, e2e) = (self.values(|t| t.ttft_ms), self.values(|t| t.e2e_ms));
        Headline {
            output_tokens_per_second: (generation_s != 0.0)
                .then(|| decode_tokens as f64 / generation_s),
            end_to_end_output_tokens_per_second: (e2e_s > 0.0).then(|| tokens as f64 / e2e_s),
            ttft_p50_ms: percentile(&ttft, 0.5),
            ttft_p95_ms: percentile(&ttft, 0.95),
            e2e_p50_ms: percentile(&e2e, 0.5),
            e2e_p95_ms: percentile(&e2e, 0.95),
            turns: self.turns.len(),
            failed_turns: self.turns.iter().filter(|t| !t.success).count(),
        }
    }

    /// A value of every successful turn that has it.
    fn values(&self, of: impl Fn(&TurnReport) -> Option<f64>) -> Vec<f64> {
        self.successful().filter_map(of).collect()
    }

    /// The tasks in order of their first turn, with their turns.
    fn tasks(&self) -> Vec<(&str, Vec<&TurnReport>)> {
        let mut tasks: Vec<(&str, Vec<&TurnReport>)> = Vec::new();
        for t in &self.turns {
            match tasks.iter_mut().find(|(id, _)| *id == t.info.task_id) {
                Some((_, turns)) => turns.push(t),
                None => tasks.push((&t.info.task_id, vec![t])),
            }
        }
        tasks
    }

    /// `tasks.json`.
    pub fn tasks_json(&self) -> Value {
        let tasks: Vec<Value> = self
            .tasks()
            .into_iter()
            .map(|(id, turns)| {
                json!({
                    "task_id": id,
                    "totals": totals(&turns),
                    "failed_turn_ids": turns.iter().filter(|t| !t.success)
                        .map(|t| t.info.turn_id.as_str()).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({"version": 1, "kind": "task_summaries", "tasks": tasks})
    }

    /// `tools.json`.
    pub fn tools_json(&self) -> Value {
        let tools: Vec<&ToolReplay> = self.turns.iter().flat_map(|t| &t.tool_calls).collect();
        let mut overall = ToolGroup::default();
        tools.iter().for_each(|t| overall.add(t));
        json!({
            "version": 1,
            "kind": "tool_summary",
            "overall": overall.to_json("all"),
            "by_delay_source": groups(&tools, |t| t.delay_source.to_owned()),
            "by_tool": groups(&tools, |t| t.call.tool_name.clone().unwrap_or_else(|| "unknown".into())),
            "by_command": groups(&tools, |t| t.command.clone().unwrap_or_else(|| "unknown".into())),
        })
    }

    /// `failures.json`.
    pub fn failures_json(&self) -> Value {
        let failures: Vec<Value> = self
            .turns
            .iter()
            .filter(|t| !t.success)
            .map(|t| {
                json!({
                    "task_id": t.info.task_id,
                    "turn_id": t.info.turn_id,
                    "request_error": t.error,
                    "tool_errors": [],
                })
            })
            .collect();
        json!({"version": 1, "kind": "failures", "failures": failures})
    }

    /// `summary.json`.
    pub fn summary_json(&self) -> Value {
        let f = &self.facts;
        let headline = self.headline();
        let all: Vec<&TurnReport> = self.turns.iter().collect();
        let ids = |keep: &dyn Fn(&TurnReport) -> bool| -> Vec<&str> {
            self.turns
                .iter()
                .filter(|t| keep(t))
                .map(|t| t.info.turn_id.as_str())
                .collect()
        };
        let context = f.context.clone().unwrap_or_default();
        let namespace = f.cache_namespace.as_deref();
        json!({
            "version": 1,
            "kind": "run_summary",
            "run_id": f.run_id,
            "manifest": f.manifest,
            "started_at": f.started_at,
            "ended_at": f.ended_at,
            "wall_duration_ms": self.measured_duration_ms,
            "measured_duration_ms": self.measured_duration_ms,
            "observer": {"enabled": false, "duration_ms": 0.0, "ranked_eligible": false},
            "success": self.turns.iter().all(|t| t.success),
            "output_tokens_per_second": headline.output_tokens_per_second,
            "end_to_end_output_tokens_per_second": headline.end_to_end_output_tokens_per_second,
            "config": {
                "base_url": f.base_url,
                "model": f.model,
                "client_backend": "agentload",
                "transport_policy_id": TRANSPORT_POLICY_ID,
                "context": {
                    "requested_tokens": context.requested_tokens,
                    "observed_tokens": context.observed_tokens,
                    "observed_reason": context.observed_reason,
                    "full_benchmark_tokens": BENCHMARK_CONTEXT_TOKENS,
                    "reduced": context.reduced(),
                },
                "request_timeout_seconds": f.request_timeout_seconds,
                "output_tokens": {"policy": f.policy, "fallback": f.fallback, "margin": f.margin},
                "sampling": f.sampling,
                "reasoning_effort": f.reasoning_effort,
                "cache_isolation": {
                    "enabled": namespace.is_some(),
                    "mode": if namespace.is_some() { "run_namespace_prefix" } else { "none" },
                    "namespace": namespace,
                    "namespace_digits": if namespace.is_some() { 32 } else { 0 },
                },
                "tool_replay": {
                    "mode": f.tool_mode,
                    "profile": null,
                    "profile_statistic": null,
                    "live_image_override": null,
                    "live_network_override": null,
                },
            },
            "totals": totals(&all),
            "latency_distributions_ms": {
                "e2e": distribution(&self.values(|t| t.e2e_ms)),
                "time_to_first_token": distribution(&self.values(|t| t.ttft_ms)),
                "normalized_e2e": distribution(&self.values(|t| t.normalization.normalized_e2e_latency_ms)),
            },
            "short_output_warning_turn_ids": ids(&|t| t.normalization.warning.is_some()),
            "length_finished_turn_ids": ids(&|t| t.finish_reason.as_deref() == Some("length")),
            "failed_turn_ids": ids(&|t| !t.success),
            "artifacts": {
                "turns": "turns.jsonl",
                "tasks": "tasks.json",
                "tools": "tools.json",
                "failures": "failures.json",
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{fsum, py_sum};

    /// Python 3.12: `sum([0.1] * 10)`, `sum([1e16, 1.0, -1e16])`, `math.fsum([0.1] * 10)`,
    /// `math.fsum([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50])`.
    #[test]
    fn sums_as_python_sums() {
        assert_eq!(py_sum([0.1; 10]), 1.0);
        assert_eq!([0.1f64; 10].iter().sum::<f64>(), 0.9999999999999999);
        assert_eq!(py_sum([1e16, 1.0, -1e16]), 1.0);
        assert_eq!(fsum([0.1; 10]), 1.0);
        assert_eq!(
            fsum([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]),
            1e-100
        );
        assert_eq!(fsum([]), 0.0);
        assert_eq!(py_sum([]), 0.0);
    }
}
