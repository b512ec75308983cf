//! agentperf-local 0.3.4's preflight of a server
//! (`deployment/endpoint_probes.py`), for `endpoint.client =
//! "agentperf-local"`: the context the server serves the model at, whether
//! it is Ollama, and whether it honours `ignore_eos`. Each is read as
//! agentperf-local reads it; none of them fails on its own (the run
//! decides what a verdict means).

use super::stream::TurnError;
use super::ChatClient;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// How long the context probe and the Ollama check may take, each.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long each `ignore_eos` probe request may take.
pub const IGNORE_EOS_TIMEOUT: Duration = Duration::from_secs(180);
/// The probe's output budget (agentperf-local's `IGNORE_EOS_PROBE_OUTPUT_TOKENS`).
pub const IGNORE_EOS_BUDGET: u64 = 512;
/// The full benchmark context: a run whose server does not prove it is `reduced`.
pub const FULL_CONTEXT_TOKENS: u64 = 65_536;

/// The served context, as agentperf-local observed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Context {
    /// Tokens, when the server reported a positive value.
    pub observed_tokens: Option<u64>,
    /// `reported`, `endpoint-unreachable`, `http-error`, `malformed-response`,
    /// `model-not-listed`, `context-not-reported` or `non-positive-context`.
    pub observed_reason: &'static str,
}

impl Context {
    /// Whether the run is reduced: no context of at least [`FULL_CONTEXT_TOKENS`] proven.
    pub fn reduced(&self) -> bool {
        self.observed_tokens.is_none_or(|t| t < FULL_CONTEXT_TOKENS)
    }
}

/// `GET /v1/models`: the listed entry of `model`; its `meta.n_ctx`
/// (llama.cpp), else its `max_model_len` (vLLM, SGLang), else, when it is
/// owned by `splash`, `GET /status`'s `maximum_context_tokens`.
pub async fn served_context(client: &ChatClient, model: &str) -> Context {
    let unobserved = |reason| Context {
        observed_tokens: None,
        observed_reason: reason,
    };
    let answer = match client.get("/v1/models", PROBE_TIMEOUT).await {
        Ok(answer) => answer,
        Err(_) => return unobserved("endpoint-unreachable"),
    };
    if !(200..300).contains(&answer.status) {
        return unobserved("http-error");
    }
    let Ok(Value::Object(list)) = serde_json::from_slice::<Value>(&answer.body) else {
        return unobserved("malformed-response");
    };
    let Some(Value::Array(models)) = list.get("data") else {
        return unobserved("malformed-response");
    };
    let Some(entry) = models
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
    else {
        return unobserved("model-not-listed");
    };
    let mut tokens = int(entry.get("meta").and_then(|m| m.get("n_ctx")))
        .or_else(|| int(entry.get("max_model_len")));
    if tokens.is_none() && entry.get("owned_by").and_then(Value::as_str) == Some("splash") {
        tokens = splash_context(client).await;
    }
    match tokens {
        None => unobserved("context-not-reported"),
        Some(t) if t <= 0 => unobserved("non-positive-context"),
        Some(t) => Context {
            observed_tokens: Some(t as u64),
            observed_reason: "reported",
        },
    }
}

/// A JSON integer (not a float, not a boolean), as Python's `int` check reads it.
fn int(v: Option<&Value>) -> Option<i64> {
    v.filter(|v| v.is_i64() || v.is_u64()).and_then(|v| {
        v.as_i64()
            .or_else(|| v.as_u64().map(|u| u.min(i64::MAX as u64) as i64))
    })
}

/// Splash's `GET /status` `maximum_context_tokens`.
async fn splash_context(client: &ChatClient) -> Option<i64> {
    let answer = client.get("/status", PROBE_TIMEOUT).await.ok()?;
    if !(200..300).contains(&answer.status) {
        return None;
    }
    let value: Value = serde_json::from_slice(&answer.body).ok()?;
    int(value.get("maximum_context_tokens"))
}

/// Whether the server is Ollama: `GET /api/version` answers a JSON object
/// with a string `version`, then `GET /api/tags` one with a list `models`,
/// both within [`PROBE_TIMEOUT`] together.
pub async fn is_ollama(client: &ChatClient) -> bool {
    let check = async {
        let object = |body: &[u8]| match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        };
        let version = client.get("/api/version", PROBE_TIMEOUT).await.ok()?;
        let ok = (200..300).contains(&version.status)
            && object(&version.body)
                .is_some_and(|o| o.get("version").is_some_and(Value::is_string));
        if !ok {
            return Some(false);
        }
        let tags = client.get("/api/tags", PROBE_TIMEOUT).await.ok()?;
        Some(
            (200..300).contains(&tags.status)
                && object(&tags.body).is_some_and(|o| o.get("models").is_some_and(Value::is_array)),
        )
    };
    tokio::time::timeout(PROBE_TIMEOUT, check)
        .await
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// The probe's body: one user message, streamed, 512 tokens, reasoning
/// effort low, greedy; with `ignore_eos` or without (agentperf-local's
/// `ignore_eos_probe_request`, in its key order).
pub fn ignore_eos_body(model: &str, ignore_eos: bool) -> Vec<u8> {
    let model = serde_json::to_string(model).expect("a string serialises");
    format!(
        "{{\"model\":{model},\"messages\":[{{\"role\":\"user\",\"content\":\"Reply with exactly the word: hi\"}}],\
         \"stream\":true,\"stream_options\":{{\"include_usage\":true}},\"max_tokens\":{IGNORE_EOS_BUDGET},\
         \"reasoning_effort\":\"low\",\"temperature\":0.0,\"top_p\":1.0{}}}",
        if ignore_eos { ",\"ignore_eos\":true" } else { "" }
    )
    .into_bytes()
}

/// What one probe request came back with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ProbeAnswer {
    /// An answer: its finish reason and the server's completion count.
    Answered {
        finish_reason: Option<String>,
        completion_tokens: Option<u64>,
    },
    /// `refused` (an error status, an empty stream) or `unreachable` (no answer).
    Failed(&'static str),
}

impl ProbeAnswer {
    fn spent_whole_budget(&self) -> bool {
        match self {
            Self::Answered {
                finish_reason,
                completion_tokens,
            } => {
                finish_reason.as_deref() == Some("length")
                    && completion_tokens.is_none_or(|n| n >= IGNORE_EOS_BUDGET)
            }
            Self::Failed(_) => false,
        }
    }
}

/// The probe's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IgnoreEos {
    /// `honoured`, `ignored` or `undetermined`.
    pub verdict: &'static str,
    /// The answer to the request with `ignore_eos`.
    pub asked: ProbeAnswer,
    /// The answer to the control without it, when it was sent.
    pub control: Option<ProbeAnswer>,
}

impl IgnoreEos {
    /// The observation in one sentence (agentperf-local's `summary`).
    pub fn summary(&self) -> String {
        let budget = format!("{IGNORE_EOS_BUDGET}-token probe");
        match (self.verdict, &self.asked) {
            ("honoured", _) => {
                format!("the server honours ignore_eos: the {budget} generated its whole budget")
            }
            ("undetermined", _) => {
                "could not determine whether the server honours ignore_eos".into()
            }
            (
                _,
                ProbeAnswer::Answered {
                    finish_reason,
                    completion_tokens,
                },
            ) => format!(
                "the server ignores ignore_eos: a {budget} finished with {}{}",
                finish_reason
                    .as_deref()
                    .map_or_else(|| "None".to_owned(), |r| format!("'{r}'")),
                completion_tokens.map_or_else(String::new, |n| format!(" after {n} tokens"))
            ),
            _ => format!("the server ignores ignore_eos: it refused a {budget}"),
        }
    }
}

/// Two streamed requests on `client`: with `ignore_eos`, then (when that
/// one spent its whole budget, or was refused) a control without it. A
/// short first answer shows the field dropped; a full one and a short
/// control show it honoured; a refusal and an answered control show it
/// refused; anything else is undetermined. The probes are the run's only
/// warm-up, as agentperf-local's.
pub async fn probe_ignore_eos(client: &ChatClient, model: &str) -> IgnoreEos {
    let asked = ask(client, model, true).await;
    let needs_control = match &asked {
        ProbeAnswer::Failed("unreachable") => false,
        ProbeAnswer::Failed(_) => true,
        answered => answered.spent_whole_budget(),
    };
    let control = if needs_control {
        Some(ask(client, model, false).await)
    } else {
        None
    };
    let verdict = match (&asked, &control) {
        (ProbeAnswer::Failed("unreachable"), _) => "undetermined",
        (ProbeAnswer::Failed(_), Some(ProbeAnswer::Answered { .. })) => "ignored",
        (ProbeAnswer::Failed(_), _) => "undetermined",
        (a, _) if !a.spent_whole_budget() => "ignored",
        (_, Some(c @ ProbeAnswer::Answered { .. })) if !c.spent_whole_budget() => "honoured",
        _ => "undetermined",
    };
    IgnoreEos {
        verdict,
        asked,
        control,
    }
}

/// One probe request.
async fn ask(client: &ChatClient, model: &str, ignore_eos: bool) -> ProbeAnswer {
    let body = ignore_eos_body(model, ignore_eos);
    let exchange = tokio::time::timeout(
        IGNORE_EOS_TIMEOUT,
        client.send_json(body.into(), true, "agentperf-local-probe"),
    )
    .await;
    let Ok(exchange) = exchange else {
        return ProbeAnswer::Failed("unreachable");
    };
    match exchange.result {
        Err(TurnError::Http { .. }) => ProbeAnswer::Failed("refused"),
        Err(
            TurnError::Stream { .. }
            | TurnError::ContentType { .. }
            | TurnError::TooLarge { .. }
            | TurnError::Encoded { .. },
        ) => ProbeAnswer::Failed("refused"),
        Err(
            TurnError::Transport { .. } | TurnError::Timeout { .. } | TurnError::OutOfStep { .. },
        ) => ProbeAnswer::Failed("unreachable"),
        Ok(answer) => {
            let empty = answer.finish_reason.is_none()
                && answer.usage.is_none()
                && answer.content.is_empty()
                && answer.reasoning_content.is_empty()
                && answer.tool_calls.is_empty();
            if empty {
                return ProbeAnswer::Failed("refused");
            }
            let completion_tokens = answer
                .usage
                .as_ref()
                .and_then(|u| serde_json::from_str::<Value>(u.get()).ok())
                .and_then(|u| int(u.get("completion_tokens")))
                .and_then(|n| u64::try_from(n).ok());
            ProbeAnswer::Answered {
                finish_reason: answer.finish_reason,
                completion_tokens,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_body_is_agentperf_locals_byte_for_byte() {
        // As tests/fixtures/aa/bodies-*-exact.tsv pins it (agentperf-local's own builder).
        let asked = ignore_eos_body("m", true);
        assert_eq!(asked.len(), 230);
        assert_eq!(
            String::from_utf8(asked).unwrap(),
            concat!(
                r#"{"model":"m","messages":[{"role":"user","content":"Reply with exactly the word: hi"}],"#,
                r#""stream":true,"stream_options":{"include_usage":true},"max_tokens":512,"#,
                r#""reasoning_effort":"low","temperature":0.0,"top_p":1.0,"ignore_eos":true}"#
            )
        );
        assert_eq!(ignore_eos_body("m", false).len(), 212);
    }

    #[test]
    fn a_context_below_the_full_one_is_reduced() {
        let c = |t| Context {
            observed_tokens: t,
            observed_reason: "reported",
        };
        assert!(!c(Some(65_536)).reduced());
        assert!(!c(Some(131_072)).reduced());
        assert!(c(Some(65_535)).reduced());
        assert!(c(None).reduced());
    }
}
