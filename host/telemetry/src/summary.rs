//! A phase's telemetry, summarized from its samples: per source the
//! counters' increase and the gauges' mean and maximum; the accelerators'
//! power (mean, maximum, over the steady-state window) and energy (the
//! energy counter's difference, or power integrated over time where no
//! counter exists), per GPU and in total.

use crate::known::{self, Kind};
use crate::sample::Sample;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The telemetry of one phase (`telemetry` in the run and sweep summaries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// Seconds between samples of a source.
    pub interval_s: f64,
    pub sources: Vec<SourceSummary>,
    /// Accelerator power and energy, from the best source configured
    /// (NVML, then a DCGM exporter, then a power command or file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<PowerSummary>,
    /// Energy over the phase per output token of the phase (J).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_per_output_token_j: Option<f64>,
    /// The server's own token counters over the phase beside the sum of
    /// the turns' `usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_check: Option<UsageCheck>,
    /// The raw samples, relative to the results folder.
    pub file: String,
    /// Samples that could not be written to the file (the summary still
    /// holds them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_error: Option<String>,
}

/// The server's token counters against the turns' `usage`: equal when the
/// server served nothing but this phase and every turn reported its usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageCheck {
    /// The source whose counters are compared.
    pub source: String,
    /// Turns with a `usage`, summed.
    pub turns: u64,
    pub usage_prompt_tokens: u64,
    pub usage_completion_tokens: u64,
    /// The counters' increase over the phase (llama.cpp's prompt count is
    /// its processed plus its cached tokens).
    pub server_prompt_tokens: Option<f64>,
    pub server_completion_tokens: Option<f64>,
}

/// The phase's turns, as the telemetry summary uses them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PhaseTokens {
    /// Turns with a `usage`.
    pub turns: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl TelemetrySummary {
    /// One console line: each source's samples and failures, the power, the
    /// server's token counts against the turns'.
    pub fn line(&self) -> String {
        let mut parts: Vec<String> = self
            .sources
            .iter()
            .map(|s| {
                let failed = if s.failed > 0 {
                    format!(
                        ", {} failed: {}",
                        s.failed,
                        s.last_error.as_ref().map_or("", |e| &e.error)
                    )
                } else {
                    String::new()
                };
                let mut flags = String::new();
                if let Some(n) = &s.first_note {
                    flags.push_str(&format!(
                        ", {} noted (first at {:.1} s: {})",
                        s.noted, n.t_s, n.error
                    ));
                }
                for (field, c) in &s.counters {
                    if let Some(flag) = &c.flag {
                        flags.push_str(&format!(", {field} {flag}"));
                    }
                }
                format!("{} {} samples{failed}{flags}", s.name, s.samples)
            })
            .collect();
        if let Some(p) = &self.power {
            let mut text = format!("power ({}) mean {}", p.source, watts(p.mean_w));
            if let (Some(j), Some(m)) = (p.energy_j, &p.energy_method) {
                text.push_str(&format!(", energy {:.1} kJ ({m})", j / 1e3));
            }
            if let Some(e) = self.energy_per_output_token_j {
                text.push_str(&format!(", {e:.3} J per output token"));
            }
            parts.push(text);
        }
        if let Some(u) = &self.usage_check {
            let count = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.0}"));
            parts.push(format!(
                "{} counted {} prompt / {} generated tokens, the turns' usage {} / {}",
                u.source,
                count(u.server_prompt_tokens),
                count(u.server_completion_tokens),
                u.usage_prompt_tokens,
                u.usage_completion_tokens
            ));
        }
        format!("telemetry ({}): {}", self.file, parts.join("; "))
    }

    /// Adds what needs the phase's turns: energy per output token, and
    /// the first server source's token counters against their `usage`.
    pub fn account(&mut self, tokens: PhaseTokens) {
        self.energy_per_output_token_j = self
            .power
            .as_ref()
            .and_then(|p| p.energy_j)
            .filter(|_| tokens.completion_tokens > 0)
            .map(|j| j / tokens.completion_tokens as f64);
        self.usage_check = self.sources.iter().find_map(|s| {
            // A flagged counter's increase means nothing: it is not compared.
            let increase = |k: &str| {
                s.counters
                    .get(k)
                    .filter(|c| c.flag.is_none())
                    .map(|c| c.increase)
            };
            let prompt = increase("prompt_tokens_total").or_else(|| {
                Some(
                    increase("prompt_tokens_processed_total")?
                        + increase("prompt_tokens_cached_total").unwrap_or(0.0),
                )
            });
            let completion = increase("generation_tokens_total");
            (prompt.is_some() || completion.is_some()).then(|| UsageCheck {
                source: s.name.clone(),
                turns: tokens.turns,
                usage_prompt_tokens: tokens.prompt_tokens,
                usage_completion_tokens: tokens.completion_tokens,
                server_prompt_tokens: prompt,
                server_completion_tokens: completion,
            })
        });
    }
}

/// One source over the phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceSummary {
    pub name: String,
    /// `prometheus`, `nvml`, `power_command` or `power_file`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The projects whose metrics the pages held (`llama.cpp`, `vllm`,
    /// `sglang`, `dcgm`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<String>,
    pub samples: usize,
    /// Readings that failed (refused, timed out, not a metrics page).
    pub failed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<ErrorAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<ErrorAt>,
    /// Readings whose page had notes (see [`Sample::notes`]), and the first.
    #[serde(default, skip_serializing_if = "is_zero_usize")]
    pub noted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_note: Option<ErrorAt>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, CounterSummary>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gauges: BTreeMap<String, GaugeSummary>,
}

/// A failed reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorAt {
    /// Seconds since the phase's origin.
    pub t_s: f64,
    pub error: String,
}

/// A counter over the phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    pub first: f64,
    pub last: f64,
    /// How much it grew between the first and the last sample; a drop (the
    /// server restarted) counts as a reset to zero, as Prometheus' `increase`.
    pub increase: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resets: u32,
    /// Why its increase means nothing: it fell more than once (a restarted
    /// server's counter falls once), so it is no counter; left out of
    /// [`UsageCheck`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// A gauge over the phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaugeSummary {
    pub mean: f64,
    pub max: f64,
    pub last: f64,
}

/// Accelerator power over the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PowerSummary {
    /// The source's name: `nvml`, a scrape target's name, `power`.
    pub source: String,
    pub samples: usize,
    pub mean_w: Option<f64>,
    pub max_w: Option<f64>,
    /// Mean over the samples inside the steady-state window (the
    /// throughput's window), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_mean_w: Option<f64>,
    /// Energy over the phase (J).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// `counter` (the GPUs' energy counters' difference) or `integrated`
    /// (power samples integrated over time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_method: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuPower>,
    /// The last reading error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One GPU's power over the phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuPower {
    pub index: u32,
    pub mean_w: Option<f64>,
    pub max_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

fn watts(w: Option<f64>) -> String {
    w.map_or("-".to_owned(), |w| format!("{w:.0} W"))
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_usize(n: &usize) -> bool {
    *n == 0
}

/// What a source is, for its summary.
#[derive(Debug, Clone)]
pub struct SourceInfo {
    pub name: String,
    pub kind: String,
    pub url: Option<String>,
    /// Gives accelerator power: 0 NVML, 1 a scrape (DCGM), 2 a command.
    pub power_rank: u8,
}

/// Summarizes one source's samples (in time order).
pub fn source(info: &SourceInfo, samples: &[&Sample], families: Vec<String>) -> SourceSummary {
    let failed: Vec<&&Sample> = samples.iter().filter(|s| !s.ok()).collect();
    let error_at = |s: &&&Sample| ErrorAt {
        t_s: s.t_ns as f64 / 1e9,
        error: s.error.clone().unwrap_or_default(),
    };
    let ok: Vec<&Sample> = samples.iter().copied().filter(|s| s.ok()).collect();
    let noted: Vec<&&Sample> = samples.iter().filter(|s| !s.notes.is_empty()).collect();
    let mut series: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for s in &ok {
        for (k, v) in &s.fields {
            series.entry(k.as_str()).or_default().push(*v);
        }
    }
    let mut counters = BTreeMap::new();
    let mut gauges = BTreeMap::new();
    for (field, values) in series {
        if known::field_kind(field) == Some(Kind::Counter) {
            counters.insert(field.to_owned(), counter(&values));
        } else {
            gauges.insert(field.to_owned(), gauge(&values));
        }
    }
    SourceSummary {
        name: info.name.clone(),
        kind: info.kind.clone(),
        url: info.url.clone(),
        families,
        samples: samples.len(),
        failed: failed.len(),
        first_error: failed.first().map(error_at),
        last_error: failed.last().map(error_at),
        noted: noted.len(),
        first_note: noted.first().map(|s| ErrorAt {
            t_s: s.t_ns as f64 / 1e9,
            error: s.notes.join("; "),
        }),
        counters,
        gauges,
    }
}

fn counter(values: &[f64]) -> CounterSummary {
    let mut increase = 0.0;
    let mut resets = 0;
    for pair in values.windows(2) {
        if pair[1] >= pair[0] {
            increase += pair[1] - pair[0];
        } else {
            resets += 1;
            increase += pair[1];
        }
    }
    CounterSummary {
        first: values[0],
        last: values[values.len() - 1],
        increase,
        resets,
        flag: (resets > 1).then(|| {
            format!(
                "fell at {resets} of {} scrapes: not a counter (a restarted server's falls \
                 once); its increase is not used",
                values.len() - 1
            )
        }),
    }
}

fn gauge(values: &[f64]) -> GaugeSummary {
    GaugeSummary {
        mean: values.iter().sum::<f64>() / values.len() as f64,
        max: values.iter().copied().fold(f64::MIN, f64::max),
        last: values[values.len() - 1],
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max(v: &[f64]) -> Option<f64> {
    v.iter().copied().reduce(f64::max)
}

/// The accelerator power of one source's samples (in time order);
/// `window` is the steady-state window (ns on the samples' clock).
pub fn power(name: &str, samples: &[&Sample], window: Option<(u64, u64)>) -> Option<PowerSummary> {
    let readings: Vec<(u64, f64)> = samples
        .iter()
        .filter(|s| s.ok())
        .filter_map(|s| Some((s.t_ns, s.power_w()?)))
        .collect();
    let error = samples.iter().rev().find_map(|s| s.error.clone());
    if readings.is_empty() && error.is_none() {
        return None;
    }
    let watts: Vec<f64> = readings.iter().map(|r| r.1).collect();
    let in_window: Vec<f64> = window
        .map(|(a, b)| {
            readings
                .iter()
                .filter(|(t, _)| (a..=b).contains(t))
                .map(|r| r.1)
                .collect()
        })
        .unwrap_or_default();
    let mut indices: Vec<u32> = samples
        .iter()
        .flat_map(|s| s.gpus.iter().map(|g| g.index))
        .collect();
    indices.sort_unstable();
    indices.dedup();
    let gpus: Vec<GpuPower> = indices
        .iter()
        .map(|&index| {
            let of = |f: fn(&crate::sample::GpuSample) -> Option<f64>| -> Vec<f64> {
                samples
                    .iter()
                    .filter(|s| s.ok())
                    .flat_map(|s| s.gpus.iter().filter(|g| g.index == index).filter_map(f))
                    .collect()
            };
            let w = of(|g| g.power_w);
            let energy = of(|g| g.energy_j);
            GpuPower {
                index,
                mean_w: mean(&w),
                max_w: max(&w),
                energy_j: (energy.len() >= 2).then(|| counter(&energy).increase),
            }
        })
        .collect();
    let counted = !gpus.is_empty() && gpus.iter().all(|g| g.energy_j.is_some());
    let (energy_j, energy_method) = if counted {
        (
            Some(gpus.iter().filter_map(|g| g.energy_j).sum()),
            Some("counter"),
        )
    } else if readings.len() >= 2 {
        let joules = readings
            .windows(2)
            .map(|p| (p[0].1 + p[1].1) / 2.0 * (p[1].0 - p[0].0) as f64 / 1e9)
            .sum();
        (Some(joules), Some("integrated"))
    } else {
        (None, None)
    };
    Some(PowerSummary {
        source: name.to_owned(),
        samples: readings.len(),
        mean_w: mean(&watts),
        max_w: max(&watts),
        window_mean_w: mean(&in_window),
        energy_j,
        energy_method: energy_method.map(str::to_owned),
        gpus,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::GpuSample;

    fn at(t_s: u64, fields: &[(&str, f64)]) -> Sample {
        Sample {
            t_ns: t_s * 1_000_000_000,
            source: "s".into(),
            fields: fields.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..Sample::default()
        }
    }

    fn gpu(index: u32, power_w: f64, energy_j: Option<f64>) -> GpuSample {
        GpuSample {
            power_w: Some(power_w),
            energy_j,
            ..GpuSample::new(index)
        }
    }

    #[test]
    fn counters_increase_across_a_reset_and_gauges_average() {
        let failed = Sample {
            error: Some("connection refused".into()),
            ..at(2, &[])
        };
        let samples = [
            at(
                0,
                &[
                    ("generation_tokens_total", 100.0),
                    ("requests_running", 2.0),
                ],
            ),
            at(
                1,
                &[
                    ("generation_tokens_total", 150.0),
                    ("requests_running", 4.0),
                ],
            ),
            failed,
            at(
                3,
                &[("generation_tokens_total", 30.0), ("requests_running", 0.0)],
            ),
        ];
        let refs: Vec<&Sample> = samples.iter().collect();
        let info = SourceInfo {
            name: "server".into(),
            kind: "prometheus".into(),
            url: None,
            power_rank: 1,
        };
        let s = source(&info, &refs, vec!["llama.cpp".into()]);
        assert_eq!((s.samples, s.failed), (4, 1));
        assert_eq!(s.first_error.as_ref().unwrap().t_s, 2.0);
        let c = &s.counters["generation_tokens_total"];
        assert_eq!(
            (c.first, c.last, c.increase, c.resets),
            (100.0, 30.0, 80.0, 1)
        );
        let g = &s.gauges["requests_running"];
        assert_eq!((g.mean, g.max, g.last), (2.0, 4.0, 0.0));
    }

    #[test]
    fn energy_is_the_counters_difference_per_gpu() {
        let mut a = at(0, &[]);
        a.gpus = vec![gpu(0, 300.0, Some(1000.0)), gpu(1, 100.0, Some(5000.0))];
        let mut b = at(10, &[]);
        b.gpus = vec![gpu(0, 500.0, Some(5000.0)), gpu(1, 300.0, Some(7000.0))];
        let p = power("dcgm", &[&a, &b], Some((5_000_000_000, 20_000_000_000))).unwrap();
        assert_eq!(p.energy_method.as_deref(), Some("counter"));
        assert_eq!(p.energy_j, Some(4000.0 + 2000.0));
        assert_eq!((p.mean_w, p.max_w), (Some(600.0), Some(800.0)));
        assert_eq!(p.window_mean_w, Some(800.0));
        assert_eq!(p.gpus[1].mean_w, Some(200.0));
        assert_eq!(p.gpus[0].energy_j, Some(4000.0));
    }

    #[test]
    fn without_a_counter_power_is_integrated_over_time() {
        let samples = [at(0, &[("power_w", 100.0)]), at(2, &[("power_w", 300.0)])];
        let refs: Vec<&Sample> = samples.iter().collect();
        let p = power("power", &refs, None).unwrap();
        assert_eq!(p.energy_method.as_deref(), Some("integrated"));
        assert_eq!(p.energy_j, Some(400.0));
        assert_eq!(p.window_mean_w, None);
        // One GPU without an energy counter: the whole figure is integrated.
        let mut a = at(0, &[]);
        a.gpus = vec![gpu(0, 100.0, Some(0.0)), gpu(1, 100.0, None)];
        let mut b = at(1, &[]);
        b.gpus = vec![gpu(0, 100.0, Some(100.0)), gpu(1, 100.0, None)];
        let p = power("nvml", &[&a, &b], None).unwrap();
        assert_eq!(p.energy_method.as_deref(), Some("integrated"));
        assert_eq!(p.energy_j, Some(200.0));
    }

    #[test]
    fn a_source_that_never_answered_reports_its_error_not_a_zero() {
        let failed = Sample {
            error: Some("NVML: GPU is lost".into()),
            ..at(1, &[])
        };
        let p = power("nvml", &[&failed], None).unwrap();
        assert_eq!((p.samples, p.mean_w, p.energy_j), (0, None, None));
        assert_eq!(p.error.as_deref(), Some("NVML: GPU is lost"));
        assert!(power("server", &[&at(0, &[("requests_running", 1.0)])], None).is_none());
    }
}
