//! `run_state.json`: which processes worked on a run (its segments, each
//! with its endpoint), which phases are complete, and the phases a run
//! selected ([`Mode`]). The only file agentload ever replaces.

use agentload_results::RunManifest;
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Which phases of a config to run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The performance phase only.
    Performance,
    /// The accuracy phase only, at concurrency 1 (the reference's `--accuracy-only`).
    Accuracy,
    /// Every phase the config has: performance, then accuracy, against the same server.
    #[default]
    Both,
}

/// Where a phase stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseState {
    Incomplete,
    Complete,
}

/// One process that worked on the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Segment {
    pub started_at: String,
    pub endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// Why it stopped early (a signal), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

/// `run_state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    /// When the run (its first segment) started.
    pub started_at: String,
    /// `performance`, `accuracy` or `both`.
    pub mode: String,
    pub submission: bool,
    /// The phases that ran to their end.
    pub phases: BTreeMap<String, PhaseState>,
    pub segments: Vec<Segment>,
    /// Every selected phase is complete.
    pub complete: bool,
    /// The run's nonce, handed to its workloads (`plugin-config.nonce`):
    /// drawn when the run starts, the same on every resume.
    #[serde(default)]
    pub nonce: String,
}

const FILE: &str = "run_state.json";

/// Digits in a nonce.
const NONCE_DIGITS: usize = 32;

/// A fresh nonce: [`NONCE_DIGITS`] decimal digits, each uniform (bytes of the
/// OS's randomness below 250, taken modulo 10), separated by single spaces.
pub fn draw_nonce() -> String {
    let mut digits = Vec::with_capacity(NONCE_DIGITS);
    while digits.len() < NONCE_DIGITS {
        let mut bytes = [0u8; 64];
        getrandom::fill(&mut bytes).expect("the OS has randomness to give");
        digits.extend(
            bytes
                .iter()
                .filter(|&&b| b < 250)
                .map(|b| (b'0' + b % 10) as char),
        );
    }
    digits.truncate(NONCE_DIGITS);
    digits
        .iter()
        .map(char::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

impl RunState {
    /// The state of a new run.
    pub fn new(mode: Mode, submission: bool) -> Self {
        Self {
            started_at: agentload_wire::clock::utc_now_rfc3339(),
            mode: match mode {
                Mode::Performance => "performance",
                Mode::Accuracy => "accuracy",
                Mode::Both => "both",
            }
            .into(),
            submission,
            phases: BTreeMap::new(),
            segments: Vec::new(),
            complete: false,
            nonce: draw_nonce(),
        }
    }

    /// Reads `DIR/run_state.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(FILE);
        let text = agentload_fs::read::read_to_string(&path).with_context(|| {
            format!(
                "{} is not an agentload run that can be resumed (no {FILE})",
                dir.display()
            )
        })?;
        let mut state: Self = serde_json::from_str(&text)
            .with_context(|| format!("{} is damaged", path.display()))?;
        if state.nonce.is_empty() {
            // A run started before nonces: its workloads never saw one.
            state.nonce = draw_nonce();
        }
        Ok(state)
    }

    /// Writes it through a temporary file renamed over it (never through a link).
    pub fn save(&self, dir: &Path) -> Result<()> {
        agentload_fs::OutDir::new(dir)
            .write_json(FILE, self)
            .with_context(|| format!("cannot write {}", dir.join(FILE).display()))
    }

    /// Starts this process's segment; returns its number.
    pub fn begin_segment(&mut self, endpoint: &str) -> u32 {
        self.segments.push(Segment {
            started_at: agentload_wire::clock::utc_now_rfc3339(),
            endpoint: endpoint.to_string(),
            ended_at: None,
            interrupted: None,
        });
        self.segments.len() as u32 - 1
    }

    /// Ends this process's segment.
    pub fn end_segment(&mut self, interrupted: Option<String>) {
        self.complete = interrupted.is_none();
        if let Some(s) = self.segments.last_mut() {
            s.ended_at = Some(agentload_wire::clock::utc_now_rfc3339());
            s.interrupted = interrupted;
        }
    }

    /// How long each earlier process (all segments but this one, the last)
    /// can have lasted, in ns: from its start to its end, or to now where it
    /// was killed, with 2 s for the stamps' whole seconds. `None` where a
    /// stamp does not read. A record's times are inside its segment's window.
    pub fn earlier_windows_ns(&self) -> Vec<Option<u64>> {
        let now =
            agentload_wire::clock::unix_from_rfc3339(&agentload_wire::clock::utc_now_rfc3339());
        let earlier = self.segments.len().saturating_sub(1);
        self.segments[..earlier]
            .iter()
            .map(|s| {
                let start = agentload_wire::clock::unix_from_rfc3339(&s.started_at)?;
                let end = match &s.ended_at {
                    Some(end) => agentload_wire::clock::unix_from_rfc3339(end)?,
                    None => now?,
                };
                Some(((end - start).max(0) as u64 + 2) * 1_000_000_000)
            })
            .collect()
    }

    /// The endpoints the run's processes sent to, in order, when they were
    /// not all the same one (empty otherwise).
    pub fn endpoints(&self) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        for s in &self.segments {
            if all.last() != Some(&s.endpoint) {
                all.push(s.endpoint.clone());
            }
        }
        if all.iter().all(|e| *e == all[0]) {
            return Vec::new();
        }
        all
    }

    /// Where `phase` stands.
    pub fn phase(&self, phase: &str) -> PhaseState {
        self.phases
            .get(phase)
            .copied()
            .unwrap_or(PhaseState::Incomplete)
    }

    /// Records where `phase` stands.
    pub fn set_phase(&mut self, phase: &str, state: PhaseState) {
        self.phases.insert(phase.to_string(), state);
    }

    /// The run's mode.
    pub fn run_mode(&self) -> Result<Mode> {
        Ok(match self.mode.as_str() {
            "performance" => Mode::Performance,
            "accuracy" => Mode::Accuracy,
            "both" => Mode::Both,
            other => anyhow::bail!("{FILE}: unknown mode `{other}`"),
        })
    }

    /// Refuses a resume whose plugins or data files are not the run's own,
    /// byte for byte (by digest; a moved `--grant` file may have another
    /// path).
    pub fn check_same_inputs(&self, dir: &Path, now: &RunManifest) -> Result<()> {
        let path = dir.join("run_manifest.json");
        let text = agentload_fs::read::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let then: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is damaged", path.display()))?;
        let recorded = |key: &str| -> Vec<(String, String)> {
            let mut v: Vec<(String, String)> = then[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or_default().to_string(),
                        p["digest"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let sorted = |mut v: Vec<(String, String)>| {
            v.sort();
            v
        };
        let plugins = sorted(
            now.plugins
                .iter()
                .map(|p| (p.name.clone(), p.digest.clone()))
                .collect(),
        );
        let datasets = sorted(
            now.datasets
                .iter()
                .map(|d| (d.name.clone(), d.digest.clone()))
                .collect(),
        );
        for (what, before, after) in [
            ("plugins", recorded("plugins"), plugins),
            ("data files", recorded("datasets"), datasets),
        ] {
            if before != after {
                anyhow::bail!(
                    "cannot resume {}: its {what} were {before:?}, now they are {after:?}; \
                     a run is finished with the plugins and data it started with",
                    dir.display()
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_32_digits_apart_and_fresh_each_time() {
        let a = draw_nonce();
        assert_eq!(a.len(), 2 * NONCE_DIGITS - 1, "{a}");
        assert!(
            a.split(' ')
                .all(|d| d.len() == 1 && d.as_bytes()[0].is_ascii_digit()),
            "{a}"
        );
        assert_ne!(a, draw_nonce());
        assert_eq!(RunState::new(Mode::Both, false).nonce.len(), a.len());
    }
}
