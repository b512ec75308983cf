//! The SWE-bench accuracy phase (`[accuracy] workload = "swe-bench"`) of
//! `agentload run`: the config mapped onto the reference service's run
//! request and checked before the first measured request (the instance
//! list read, the service's `/health`), then, after the performance phase
//! (spec §1.6: perf, then SWE-bench), the remote run with its progress on
//! the console, the reference's files, and its entry in
//! `accuracy/accuracy_results.json`.

use crate::grants::{grant_files, Grants};
use agentload_config::swe_bench::SweBench;
use agentload_config::RunConfig;
use agentload_engine::Stop;
use agentload_results::DatasetIdentity;
use agentload_swebench::{instances, Error, Outcome, RunOptions, RunRequest, Service, Template};
use anyhow::{Context as _, Result};
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// A SWE-bench phase ready to run.
pub struct Phase {
    service: Service,
    request: RunRequest,
    poll_interval: Duration,
    timeout: Duration,
    /// The instance list, as the manifest records data files.
    pub datasets: Vec<DatasetIdentity>,
}

/// What the phase ended with.
#[derive(Debug)]
pub struct Ended {
    /// Instances evaluated (the score's denominator).
    pub evaluated: usize,
    pub score: Option<f64>,
    /// Why there is no complete score, if there is none.
    pub failed: Option<String>,
}

/// The reference's `ModelParams.max_new_tokens` default, sent when the
/// config sets no output budget.
const DEFAULT_MAX_NEW_TOKENS: u64 = 1024;

/// The run's sampling as the service passes it to the agent: the
/// performance phase's settings and the endpoint's extra body fields, in
/// the reference's key order, only those set.
fn generation_params(config: &RunConfig) -> Map<String, Value> {
    let setting = |key: &str| {
        config
            .performance
            .as_ref()
            .and_then(|p| p.settings.get(key))
            .and_then(|v| serde_json::to_value(v).ok())
    };
    let extra = |key: &str| {
        config
            .endpoint
            .extra_body
            .get(key)
            .and_then(|v| serde_json::to_value(v).ok())
    };
    let mut params = Map::new();
    for key in agentload_swebench::GENERATION_KEYS {
        let value = match key {
            "temperature" | "top_p" | "top_k" => setting(key),
            "seed" => setting("seed").filter(|_| setting("send_seed") != Some(Value::Bool(false))),
            "max_new_tokens" => setting("max_completion_tokens")
                .or_else(|| setting("max_tokens"))
                .or(Some(Value::from(DEFAULT_MAX_NEW_TOKENS))),
            _ => extra(key),
        };
        if let Some(value) = value {
            params.insert(key.to_owned(), value);
        }
    }
    params
}

/// Reads the instance list and builds the run request; nothing is sent.
pub fn prepare(
    config: &RunConfig,
    phase: &agentload_config::PhaseConfig,
    grants: &Grants<'_>,
    quiet: bool,
) -> Result<Phase> {
    let settings = SweBench::from_phase(phase).map_err(|(key, m)| anyhow::anyhow!("{key}: {m}"))?;
    let token = match &settings.auth_token_env {
        None => None,
        Some(var) => Some(
            std::env::var(var)
                .ok()
                .filter(|t| !t.is_empty())
                .with_context(|| {
                    format!(
                "accuracy.settings.swebench_service_auth_token names the environment variable \
                 {var}, which is not set"
            )
                })?,
        ),
    };
    let service = Service::over(
        &settings.service_url,
        token,
        &crate::endpoint::transport_for(&config.endpoint)?,
    )?;
    let (files, datasets) = grant_files(&phase.data, grants)?;
    let (file, dataset) = files
        .first()
        .zip(datasets.first())
        .context("no instance list")?;
    let ids = instances::parse(&dataset.path, &file.bytes)?;
    let wanted = usize::try_from(settings.num_instances).unwrap_or(usize::MAX);
    if wanted > ids.len() && !quiet {
        agentload_console::line(&format!(
            "note: swe-bench: num_instances = {wanted} exceeds the {} instances of {}; \
             evaluating {}",
            ids.len(),
            dataset.path.display(),
            ids.len()
        ));
    }
    let request = RunRequest {
        model_name: config.model.name.clone(),
        endpoint_urls: [config.endpoint.url.clone()],
        endpoint_api_key: crate::endpoint::api_key_from_env(),
        generation_params: generation_params(config),
        subset: settings.subset,
        split: settings.split,
        workers: settings.workers.unwrap_or(config.load.concurrency as u64),
        max_eval_workers: settings.max_eval_workers,
        evaluated_instance_ids: instances::first(ids, wanted),
        template: Template::parse(&settings.template).context("swebench_template")?,
    };
    Ok(Phase {
        service,
        request,
        poll_interval: Duration::from_secs_f64(settings.poll_interval_s),
        timeout: Duration::from_secs(settings.service_timeout_s),
        datasets,
    })
}

impl Phase {
    /// The service's `/health` check, before the first measured request.
    pub async fn preflight(&self) -> Result<()> {
        self.service
            .preflight()
            .await
            .context("the SWE-bench service's preflight (accuracy.settings.swebench_service_url)")
    }

    /// Runs SWE-bench on the service into `out`; the run's stop (Ctrl-C)
    /// cancels the remote run. Returns none when interrupted.
    pub async fn run(
        self,
        out: &Path,
        stop: &Stop,
        quiet: bool,
        text: &mut String,
    ) -> Result<Option<Ended>> {
        let evaluated = self.request.evaluated_instance_ids.len();
        let say = |line: &str| {
            if !quiet {
                agentload_console::line(line);
            }
        };
        say(&format!(
            "swe-bench: {evaluated} instances ({} {}, template {:?}, {} workers) on the \
             SWE-bench service at {}",
            self.request.subset,
            self.request.split,
            self.request.template,
            self.request.workers,
            self.service.url()
        ));
        let mut last = String::new();
        let progress = |p: &agentload_swebench::Progress| {
            let line = format!("swe-bench: {p}");
            if line != last {
                say(&line);
                last = line;
            }
        };
        let options = RunOptions {
            report_dir: out,
            poll_interval: self.poll_interval,
            timeout: self.timeout,
            max_artifact_bytes: agentload_swebench::MAX_ARTIFACT_BYTES,
        };
        let ran = self
            .service
            .run(&self.request, &options, progress, stop.halted())
            .await;
        let ended = match ran {
            Ok(outcome) => self::ended(&outcome, text, &say),
            Err(e) if e.interrupted() => {
                let _ = writeln!(text, "swe_bench: {e}");
                return Ok(None);
            }
            Err(e @ Error::Write { .. }) => return Err(e.into()),
            Err(e) => {
                say(&format!("error: swe-bench: {e}"));
                let _ = writeln!(text, "swe_bench: FAILED: {e}");
                Ended {
                    evaluated,
                    score: None,
                    failed: Some(e.to_string()),
                }
            }
        };
        let entry =
            agentload_results::swe_bench_entry(ended.score, evaluated, ended.failed.is_none());
        agentload_results::write_accuracy_results(&agentload_fs::OutDir::new(out), &[entry])?;
        Ok(Some(ended))
    }
}

/// The report lines and headline of a run the service ended.
fn ended(outcome: &Outcome, text: &mut String, say: &dyn Fn(&str)) -> Ended {
    for warning in &outcome.warnings {
        say(&format!("warning: swe-bench: {warning}"));
        let _ = writeln!(text, "swe_bench: warning: {warning}");
    }
    let scored = &outcome.scored;
    let counts = scored
        .counters
        .map(|c| format!(" ({} resolved, {} submitted)", c.resolved, c.submitted))
        .unwrap_or_default();
    let _ = match scored.score {
        Some(score) => writeln!(
            text,
            "swe_bench score {score:.4} over {} instances{counts}; service run {} {} \
             (swe_bench_results.json, swe_bench_runs/{})",
            outcome.evaluated, outcome.run_id, outcome.status, outcome.run_id
        ),
        None => writeln!(
            text,
            "swe_bench: no score over {} instances{counts}; service run {} {}",
            outcome.evaluated, outcome.run_id, outcome.status
        ),
    };
    if let Some(problem) = &scored.problem {
        say(&format!("error: swe-bench: {problem}"));
        let _ = writeln!(text, "swe_bench: {problem}");
    }
    Ended {
        evaluated: outcome.evaluated,
        score: scored.score,
        failed: (!scored.complete).then(|| {
            scored
                .problem
                .clone()
                .unwrap_or_else(|| "incomplete".to_owned())
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_params_follow_the_reference_order_and_only_set_keys() {
        let text = include_str!("../../../configs/datacenter-qwen3.6-35b-a3b.toml");
        let config = RunConfig::parse(Path::new("q.toml"), text).unwrap();
        assert_eq!(
            serde_json::to_string(&generation_params(&config)).unwrap(),
            r#"{"temperature":1.0,"top_p":0.95,"top_k":20,"repetition_penalty":1.0,"presence_penalty":1.5,"max_new_tokens":8192,"chat_template_kwargs":{"preserve_thinking":true}}"#
        );
        let text = include_str!("../../../configs/datacenter-kimi-k3.toml");
        let config = RunConfig::parse(Path::new("k.toml"), text).unwrap();
        assert_eq!(
            serde_json::to_string(&generation_params(&config)).unwrap(),
            r#"{"temperature":1.0,"top_p":1.0,"max_new_tokens":8192}"#
        );
    }
}
