//! `[telemetry]`: what agentload samples from the server and its
//! accelerators during every phase: Prometheus `/metrics` pages (the
//! serving engine's own, NVIDIA's DCGM exporter) and, on a machine with
//! NVIDIA GPUs, NVML.

use serde::{Deserialize, Serialize};

/// Telemetry sampled during every phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Seconds between two samples of a source.
    pub interval_s: f64,
    /// Seconds one scrape may take before it counts as failed.
    pub timeout_s: f64,
    /// Prometheus pages to scrape.
    pub scrape: Vec<ScrapeTarget>,
    /// Read the GPUs' power, energy, utilisation and memory through NVML.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvml: Option<NvmlConfig>,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            interval_s: 1.0,
            timeout_s: 2.0,
            scrape: Vec::new(),
            nvml: None,
        }
    }
}

/// One Prometheus page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScrapeTarget {
    /// The page, e.g. `http://gpu-node:9400/metrics`; a path alone
    /// (`/metrics`) is on the endpoint's host and port.
    pub url: String,
    /// The source's name in the results (default: `scrape<i>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metric names kept as they are (every series), beside the known ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capture: Vec<String>,
}

/// NVML sampling.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NvmlConfig {
    /// GPU indices to read (default: every GPU NVML sees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<u32>>,
}

impl TelemetryConfig {
    /// The URL of scrape target `i`: a path alone is on `endpoint` (the
    /// endpoint's base URL).
    pub fn scrape_url(&self, i: usize, endpoint: &str) -> String {
        let url = self.scrape[i].url.trim();
        match url.strip_prefix('/') {
            Some(path) => match url::Url::parse(endpoint) {
                Ok(base) => format!("{}/{path}", base.origin().ascii_serialization()),
                Err(_) => url.to_owned(),
            },
            None => url.to_owned(),
        }
    }

    /// The name of scrape target `i`.
    pub fn scrape_name(&self, i: usize) -> String {
        self.scrape[i]
            .name
            .clone()
            .unwrap_or_else(|| format!("scrape{i}"))
    }

    /// Checks values; the error names the key.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |k: &str, m: &str| Err((format!("telemetry.{k}"), m.to_owned()));
        for (key, v) in [
            ("interval_s", self.interval_s),
            ("timeout_s", self.timeout_s),
        ] {
            if !(v >= 0.01 && std::time::Duration::try_from_secs_f64(v).is_ok()) {
                return bad(key, "must be a finite number of seconds, at least 0.01");
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, target) in self.scrape.iter().enumerate() {
            if target.url.starts_with('/') {
                if target.url.starts_with("//") || target.url.contains(char::is_whitespace) {
                    return bad(
                        &format!("scrape[{i}].url"),
                        &format!("`{}` is not a path on the endpoint", target.url),
                    );
                }
            } else {
                let url = url::Url::parse(target.url.trim()).map_err(|e| {
                    (
                        format!("telemetry.scrape[{i}].url"),
                        format!(
                            "`{}` is not a URL ({e}), nor a path on the endpoint (`/metrics`)",
                            target.url
                        ),
                    )
                })?;
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return bad(
                        &format!("scrape[{i}].url"),
                        &format!("`{}` must be an http or https URL with a host", target.url),
                    );
                }
            }
            let name = self.scrape_name(i);
            let sendable = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !sendable || name == "nvml" || name == "power" {
                return bad(
                    &format!("scrape[{i}].name"),
                    &format!(
                        "`{name}` must be letters, digits, `-`, `_` or `.`, and not `nvml` or `power`"
                    ),
                );
            }
            if !names.insert(name.clone()) {
                return bad(
                    &format!("scrape[{i}].name"),
                    &format!("`{name}` names two scrape targets"),
                );
            }
            if let Some(empty) = target.capture.iter().position(|c| c.trim().is_empty()) {
                return bad(
                    &format!("scrape[{i}].capture[{empty}]"),
                    "must be a metric name",
                );
            }
        }
        if let Some(devices) = self.nvml.as_ref().and_then(|n| n.devices.as_ref()) {
            if devices.is_empty() {
                return bad(
                    "nvml.devices",
                    "must name at least one GPU index when given",
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> TelemetryConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_full_table_parses_and_checks() {
        let t = parse(
            r#"
            interval_s = 0.5
            [[scrape]]
            url = "http://127.0.0.1:8080/metrics"
            [[scrape]]
            url = "http://gpu-node:9400/metrics"
            name = "dcgm"
            capture = ["DCGM_FI_DEV_GPU_TEMP"]
            [nvml]
            devices = [0, 1]
            "#,
        );
        assert_eq!(t.check(), Ok(()));
        assert_eq!(t.scrape_name(0), "scrape0");
        assert_eq!(t.scrape_name(1), "dcgm");
        assert_eq!(t.timeout_s, 2.0);
        assert_eq!(
            t.scrape_url(1, "http://x:1"),
            "http://gpu-node:9400/metrics"
        );
    }

    #[test]
    fn a_path_alone_is_on_the_endpoint() {
        let t = parse("[[scrape]]\nurl = \"/metrics\"");
        assert_eq!(t.check(), Ok(()));
        assert_eq!(
            t.scrape_url(0, "http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/metrics"
        );
        assert_eq!(
            t.scrape_url(0, "https://api.example:443"),
            "https://api.example/metrics"
        );
        let bad = parse("[[scrape]]\nurl = \"//host/metrics\"");
        assert_eq!(bad.check().unwrap_err().0, "telemetry.scrape[0].url");
    }

    #[test]
    fn bad_values_name_their_key() {
        let key = |text: &str| parse(text).check().unwrap_err().0;
        assert_eq!(key("interval_s = 0.0"), "telemetry.interval_s");
        assert_eq!(key("timeout_s = 1e300"), "telemetry.timeout_s");
        assert_eq!(
            key("[[scrape]]\nurl = \"127.0.0.1:8080/metrics\""),
            "telemetry.scrape[0].url"
        );
        assert_eq!(
            key("[[scrape]]\nurl = \"ftp://x/metrics\""),
            "telemetry.scrape[0].url"
        );
        assert_eq!(
            key("[[scrape]]\nurl = \"http://a/metrics\"\nname = \"x\"\n[[scrape]]\nurl = \"http://b/metrics\"\nname = \"x\""),
            "telemetry.scrape[1].name"
        );
        assert_eq!(
            key("[[scrape]]\nurl = \"http://a/metrics\"\nname = \"a b\""),
            "telemetry.scrape[0].name"
        );
        assert_eq!(
            key("[[scrape]]\nurl = \"http://a/metrics\"\ncapture = [\"\"]"),
            "telemetry.scrape[0].capture[0]"
        );
        assert_eq!(key("[nvml]\ndevices = []"), "telemetry.nvml.devices");
        assert!(toml::from_str::<TelemetryConfig>("intervall_s = 1").is_err());
    }
}
