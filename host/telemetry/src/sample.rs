//! One line of `telemetry.jsonl`: what one source read at one moment.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A source's reading, timestamped on the phase's clock (the turns' clock).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When it was read, ns since the phase's origin (the midpoint of the
    /// scrape's round trip).
    pub t_ns: u64,
    /// The source's name (a scrape target's, `nvml`, or `power`).
    pub source: String,
    /// The run segment (a resumed run's samples follow the first process's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub segment: u32,
    /// Known metrics by field name, series combined.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, f64>,
    /// Per-GPU readings (NVML, DCGM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuSample>,
    /// Metrics captured by name, one key per series (`name{labels}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub captured: BTreeMap<String, f64>,
    /// Why the reading failed (nothing of it could be used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What was odd about a page that was read, or cut from it (a line that
    /// could not be read, a series given twice, series over the bound, a
    /// value outside its range); the rest of the page was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How long the reading took, ms.
    pub took_ms: f64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Sample {
    /// Whether the reading succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Total accelerator power (W): the `power_w` field, else the GPUs' sum.
    pub fn power_w(&self) -> Option<f64> {
        self.fields.get("power_w").copied().or_else(|| {
            let each: Vec<f64> = self.gpus.iter().filter_map(|g| g.power_w).collect();
            (!each.is_empty()).then(|| each.iter().sum())
        })
    }
}

/// One GPU's reading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSample {
    pub index: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<f64>,
    /// The energy counter (J since the driver loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib: Option<f64>,
}

impl GpuSample {
    /// A GPU with nothing read yet.
    pub fn new(index: u32) -> Self {
        Self {
            index,
            power_w: None,
            energy_j: None,
            util_pct: None,
            memory_used_mib: None,
        }
    }
}
