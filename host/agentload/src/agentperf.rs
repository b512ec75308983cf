//! agentperf-local's preflight, run before the first measured request of a
//! run with `endpoint.client = "agentperf-local"` (`cli/replay.py`
//! `run_command`): when the workload's `policy` is not set, the Ollama check
//! (Ollama cannot honour `ignore_eos`: the run uses `recorded`); the served
//! context (below 65,536 tokens, or not reported, the run is `reduced`);
//! under `exact`, the two-request `ignore_eos` probe, whose verdict
//! `ignored` refuses the run before anything is written.

use agentload_client::agentperf::{self, Context, IgnoreEos};
use agentload_client::ChatClient;
use serde::Serialize;

/// What the preflight found; written to `run_manifest.json` (`aa_preflight`).
#[derive(Debug, Clone, Serialize)]
pub struct Preflight {
    /// AA's run id: a UUIDv4, minted before the first replay request.
    pub run_id: String,
    /// Wall clock when the preflight ended and the replay began, Unix seconds.
    pub started_at: f64,
    pub context: ContextFacts,
    /// Whether the server is Ollama; null when not checked (the policy was set).
    pub ollama: Option<bool>,
    /// The output policy the run uses.
    pub policy: String,
    /// The `ignore_eos` probe; null when not run (a policy other than `exact`).
    pub ignore_eos_probe: Option<IgnoreEos>,
}

/// The context facts, as agentperf-local's summary writes them.
#[derive(Debug, Clone, Serialize)]
pub struct ContextFacts {
    pub requested_tokens: u64,
    pub observed_tokens: Option<u64>,
    pub observed_reason: &'static str,
    pub full_benchmark_tokens: u64,
    pub reduced: bool,
}

/// The preflight against `client`'s server for `model`; `policy` is the
/// workload's `policy` setting (`None` when not set); `phase` names the
/// config table a refusal points at. Returns what it found (its `policy`
/// is the one to run with: `recorded` on Ollama when none was set).
///
/// # Errors
/// The server drops `ignore_eos` under `exact`.
pub async fn preflight(
    client: &ChatClient,
    model: &str,
    policy: Option<&str>,
    phase: &'static str,
    quiet: bool,
) -> anyhow::Result<Preflight> {
    let say = |line: &str| {
        if !quiet {
            agentload_console::line(line);
        }
    };
    let ollama = match policy {
        Some(_) => None,
        None => Some(agentperf::is_ollama(client).await),
    };
    let policy = match (policy, ollama) {
        (Some(p), _) => p.to_owned(),
        (None, Some(true)) => {
            agentload_console::line(
                "warning: this server is Ollama, which cannot honor ignore_eos, so the run uses the \
                 recorded output policy; end-to-end latency is reported as a normalized estimate \
                 and is not directly comparable with exact-policy runs",
            );
            "recorded".to_owned()
        }
        (None, _) => "exact".to_owned(),
    };
    let context: Context = agentperf::served_context(client, model).await;
    let context = ContextFacts {
        requested_tokens: agentperf::FULL_CONTEXT_TOKENS,
        observed_tokens: context.observed_tokens,
        observed_reason: context.observed_reason,
        full_benchmark_tokens: agentperf::FULL_CONTEXT_TOKENS,
        reduced: context.reduced(),
    };
    match context.observed_tokens {
        Some(t) if !context.reduced => say(&format!("agentperf-local preflight: served context {t} tokens")),
        Some(t) => agentload_console::line(&format!(
            "warning: the server serves {model} at {t} tokens of context, below {}: the run is reduced \
             (not comparable)",
            agentperf::FULL_CONTEXT_TOKENS
        )),
        None => agentload_console::line(&format!(
            "warning: the served context of {model} is not known ({}): the run is reduced (not \
             comparable)",
            context.observed_reason
        )),
    }
    let probe = if policy == "exact" {
        let probe = agentperf::probe_ignore_eos(client, model).await;
        match probe.verdict {
            "ignored" => anyhow::bail!(
                "{}; set policy = \"recorded\" in [{phase}.settings] to run against this server \
                 (its results are normalized, not exact, and are not comparable)",
                probe.summary()
            ),
            "undetermined" => agentload_console::line(&format!(
                "warning: {}; the run keeps the exact policy",
                probe.summary()
            )),
            _ => say(&format!("agentperf-local preflight: {}", probe.summary())),
        }
        Some(probe)
    } else {
        None
    };
    Ok(Preflight {
        run_id: uuid_v4(),
        started_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        context,
        ollama,
        policy,
        ignore_eos_probe: probe,
    })
}

/// A random (version 4) UUID, as `uuid.uuid4()` writes it.
fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("the OS has randomness to give");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_ids_are_version_4_uuids() {
        let id = super::uuid_v4();
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12],
            "{id}"
        );
        assert!(parts[2].starts_with('4'), "{id}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{id}");
        assert_ne!(id, super::uuid_v4());
    }
}
