//! `POST /v1/runs`: the reference's payload, its keys in its order.

use serde::Serialize;
use serde_json::{Map, Value};

/// The agent's prompt template on the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Template {
    /// The service's `swebench_template.yaml`.
    Default,
    /// Qwen's tool-calling template (`QwenToolsModel`, with a `finish` tool).
    QwenTools,
}

impl Template {
    /// `default` or `qwen_tools`, as configs write it.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "default" => Some(Self::Default),
            "qwen_tools" => Some(Self::QwenTools),
            _ => None,
        }
    }
}

/// The sampling keys the service passes on to the agent, in the order the
/// reference copies them from `model_params`.
pub const GENERATION_KEYS: [&str; 9] = [
    "temperature",
    "seed",
    "top_p",
    "top_k",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "max_new_tokens",
    "chat_template_kwargs",
];

/// A run request ([`RunRequest::body`] is its payload).
#[derive(Clone)]
pub struct RunRequest {
    /// The served model name (sent to the endpoint as `model`).
    pub model_name: String,
    /// The endpoint under test: exactly one URL.
    pub endpoint_urls: [String; 1],
    /// The endpoint's API key (the service redacts it in its files).
    pub endpoint_api_key: Option<String>,
    /// The set ones of [`GENERATION_KEYS`], in that order.
    pub generation_params: Map<String, Value>,
    /// `verified` or `lite`.
    pub subset: String,
    pub split: String,
    /// Agent workers.
    pub workers: u64,
    /// `swebench.harness.run_evaluation --max_workers`.
    pub max_eval_workers: u64,
    /// The instances, in Hugging Face order.
    pub evaluated_instance_ids: Vec<String>,
    pub template: Template,
}

impl std::fmt::Debug for RunRequest {
    /// As the struct, with the API key left out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRequest")
            .field("model_name", &self.model_name)
            .field("endpoint_urls", &self.endpoint_urls)
            .field(
                "endpoint_api_key",
                &self.endpoint_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("generation_params", &self.generation_params)
            .field("subset", &self.subset)
            .field("split", &self.split)
            .field("workers", &self.workers)
            .field("max_eval_workers", &self.max_eval_workers)
            .field("evaluated_instance_ids", &self.evaluated_instance_ids.len())
            .field("template", &self.template)
            .finish()
    }
}

/// The payload's keys in the reference's order.
#[derive(Serialize)]
struct Payload<'a> {
    model_name: &'a str,
    endpoint_urls: &'a [String; 1],
    endpoint_api_key: Option<&'a str>,
    generation_params: &'a Map<String, Value>,
    subset: &'a str,
    split: &'a str,
    num_instances: usize,
    workers: u64,
    max_eval_workers: u64,
    evaluated_instance_ids: &'a [String],
    template: Template,
}

impl RunRequest {
    /// The request body: byte for byte the reference's
    /// `msgspec.json.encode(payload)` (compact; `num_instances` is the
    /// number of instance ids).
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&Payload {
            model_name: &self.model_name,
            endpoint_urls: &self.endpoint_urls,
            endpoint_api_key: self.endpoint_api_key.as_deref(),
            generation_params: &self.generation_params,
            subset: &self.subset,
            split: &self.split,
            num_instances: self.evaluated_instance_ids.len(),
            workers: self.workers,
            max_eval_workers: self.max_eval_workers,
            evaluated_instance_ids: &self.evaluated_instance_ids,
            template: self.template,
        })
        .expect("a run request encodes")
    }
}
