//! What a run sees of the server while it measures: the serving engine's
//! and the accelerators' Prometheus pages (llama.cpp, vLLM, SGLang, NVIDIA
//! DCGM), NVML, or a power command, sampled during every phase off the
//! request path. Samples are timestamped on the phase's clock (the turns'
//! clock), written to `telemetry.jsonl`, and summarized per phase.

#![forbid(unsafe_code)]

pub mod gpus;
pub mod known;
pub mod page;
pub mod power;
pub mod sample;
mod sampler;
pub mod summary;

pub use gpus::{Gpus, Nvml};
pub use power::PowerSource;
pub use sample::{GpuSample, Sample};
pub use sampler::{Probe, Running, Telemetry};
pub use summary::{PhaseTokens, PowerSummary, TelemetrySummary, UsageCheck};

/// Telemetry that cannot start (before any request).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry: {0}")]
    Nvml(String),
    #[error("telemetry: cannot write {}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("telemetry: cannot build the scrape client: {0}")]
    Client(String),
}
