//! `[sweep]`: the concurrency-sweep load pattern (AA-AgentPerf, MLPerf
//! datacenter agentic). Defaults are the AA-AgentPerf methodology's.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A sweep over the performance phase's workload: one phase per concurrency
/// level (closed loop) or per arrival rate (open loop).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SweepConfig {
    /// Concurrent agents, one phase per level, in this order.
    pub levels: Vec<usize>,
    /// Arrival rates (per second), one phase per rate, in this order, instead of `levels`:
    /// open-loop sessions (or requests) arriving as `[load.arrivals]` says (default: Poisson
    /// arrivals of sessions). `[[sweep.slo]]` then gives each tier's highest rate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<f64>,
    /// A phase ends when at least this many trajectories completed...
    pub min_trajectories: u32,
    /// ...every agent completed at least this many...
    pub min_per_agent: u32,
    /// ...and the steady state lasted at least this long (s).
    pub steady_state_s: f64,
    /// All agents must have been active this long before requests count (s).
    pub warmup_s: f64,
    /// A phase that has not met its end rules after this long stops anyway
    /// and says so (s).
    pub max_phase_s: f64,
    /// `max_completion_tokens` cap of every request.
    pub max_tokens: u32,
    /// Keep a workload's own smaller `max_completion_tokens` (the synthetic
    /// workload's drawn output lengths) instead of replacing it with
    /// `max_tokens`.
    pub keep_workload_max_tokens: bool,
    /// Prepend a per-phase, per-trajectory salt to the first message, so no
    /// prefix cache carries over between phases.
    pub salt: bool,
    /// `recorded` (the dataset's `delay_seconds`), `distribution` (draws from
    /// `tool_delays`), or `none`.
    pub tool_delay: ToolDelayMode,
    /// Per-tool delay distributions (key `default` for any other tool).
    pub tool_delays: BTreeMap<String, DelayDistribution>,
    /// Seed of the salts and the delay draws.
    pub seed: u64,
    /// Trajectories planned per agent (the recycling list is `levels × this`).
    pub max_trajectories_per_agent: u32,
    /// Normalization inputs.
    pub normalize: Normalize,
    /// Service-level tiers for "max agents meeting the SLO".
    pub slo: Vec<SloTier>,
}

impl Default for SweepConfig {
    fn default() -> Self {
        Self {
            levels: vec![1, 2, 4, 8, 16, 32, 64],
            rates: Vec::new(),
            min_trajectories: 30,
            min_per_agent: 3,
            steady_state_s: 600.0,
            warmup_s: 30.0,
            max_phase_s: 7200.0,
            max_tokens: 16384,
            keep_workload_max_tokens: false,
            salt: true,
            tool_delay: ToolDelayMode::Distribution,
            tool_delays: BTreeMap::from([("default".to_owned(), DelayDistribution::default())]),
            seed: 42,
            max_trajectories_per_agent: 200,
            normalize: Normalize::default(),
            slo: Vec::new(),
        }
    }
}

/// Where tool delays come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolDelayMode {
    /// Each tool message's recorded `delay_seconds`.
    Recorded,
    /// A seeded draw from `tool_delays`, per tool.
    Distribution,
    /// No delay: the next request goes out when the answer ends.
    None,
}

/// A log-normal delay, clamped: `median_s` and `p90_s` fix its two
/// parameters (AA-AgentPerf: under 0.1 s to 5 s, median about 1 s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelayDistribution {
    /// The median delay, seconds.
    pub median_s: f64,
    /// The 90th percentile, seconds (at least `median_s`).
    pub p90_s: f64,
    /// No draw is shorter (seconds).
    #[serde(default = "min_delay")]
    pub min_s: f64,
    /// No draw is longer (seconds).
    #[serde(default = "max_delay")]
    pub max_s: f64,
}

fn min_delay() -> f64 {
    0.05
}
fn max_delay() -> f64 {
    5.0
}

impl Default for DelayDistribution {
    fn default() -> Self {
        Self {
            median_s: 1.0,
            p90_s: 3.0,
            min_s: min_delay(),
            max_s: max_delay(),
        }
    }
}

/// Inputs for throughput per accelerator, per MW and per rental dollar.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Normalize {
    /// Accelerators serving the endpoint.
    pub accelerators: Option<u32>,
    /// Rental price of one accelerator-hour, in dollars.
    pub price_per_accelerator_hour: Option<f64>,
    /// A shell command printing the current power draw in watts (one number
    /// per line, summed), e.g. `nvidia-smi --query-gpu=power.draw
    /// --format=csv,noheader,nounits`; sampled during each phase.
    pub power_command: Option<String>,
    /// A file holding the current power draw in watts (e.g. written by an
    /// external meter), read at each sample.
    pub power_file: Option<std::path::PathBuf>,
    /// Seconds between power samples.
    pub power_interval_s: Option<f64>,
}

/// A service level: TTFT p90 at most this, P25 output speed at least that.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SloTier {
    /// The tier's name in the results.
    pub name: String,
    /// TTFT p90 at most this, ms.
    pub ttft_p90_ms: f64,
    /// P25 of the per-request output speed at least this, tokens/s.
    pub speed_p25_tps: f64,
}

impl SweepConfig {
    /// Checks values; the error names the key.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((format!("sweep.{k}"), m.to_owned()));
        if self.levels.is_empty() || self.levels.contains(&0) {
            return bad(
                "levels",
                "must be a non-empty list of positive agent counts",
            );
        }
        if !self.rates.is_empty() && self.levels != Self::default().levels {
            return bad(
                "rates",
                "a sweep is over levels (closed loop) or rates (open loop), not both",
            );
        }
        if let Some(rate) = self.rates.iter().find(|r| !(**r > 0.0 && r.is_finite())) {
            return bad(
                "rates",
                &format!("must be positive numbers of arrivals per second (got {rate})"),
            );
        }
        for (k, v) in [
            ("steady_state_s", self.steady_state_s),
            ("warmup_s", self.warmup_s),
            ("max_phase_s", self.max_phase_s),
        ] {
            // The agents turn it into a `Duration` (found by the config
            // fuzz target: `1e300` loaded, then panicked there).
            if std::time::Duration::try_from_secs_f64(v).is_err() {
                return bad(k, "must be a non-negative, finite number of seconds");
            }
        }
        if let Some(p) = self.normalize.power_interval_s {
            if std::time::Duration::try_from_secs_f64(p.max(0.05)).is_err() {
                return bad(
                    "normalize.power_interval_s",
                    "must be a finite number of seconds",
                );
            }
        }
        if self.max_trajectories_per_agent == 0 {
            return bad("max_trajectories_per_agent", "must be at least 1");
        }
        for (tool, d) in &self.tool_delays {
            if !(d.median_s > 0.0 && d.p90_s >= d.median_s && d.min_s >= 0.0 && d.max_s >= d.min_s)
            {
                return bad(
                    &format!("tool_delays.{tool}"),
                    "needs 0 < median_s <= p90_s and 0 <= min_s <= max_s",
                );
            }
        }
        if self.tool_delay == ToolDelayMode::Distribution
            && !self.tool_delays.contains_key("default")
        {
            return bad("tool_delays", "needs a `default` distribution");
        }
        for (i, tier) in self.slo.iter().enumerate() {
            if tier.name.trim().is_empty() || self.slo[..i].iter().any(|t| t.name == tier.name) {
                return bad(
                    &format!("slo[{i}].name"),
                    "must be a name no other tier has",
                );
            }
            if !(tier.ttft_p90_ms > 0.0 && tier.ttft_p90_ms.is_finite()) {
                return bad(
                    &format!("slo[{i}].ttft_p90_ms"),
                    &format!("must be a positive number of ms (got {})", tier.ttft_p90_ms),
                );
            }
            if !(tier.speed_p25_tps >= 0.0 && tier.speed_p25_tps.is_finite()) {
                return bad(
                    &format!("slo[{i}].speed_p25_tps"),
                    &format!(
                        "must be a non-negative number of tokens/s (got {})",
                        tier.speed_p25_tps
                    ),
                );
            }
        }
        Ok(())
    }
}
