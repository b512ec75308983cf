//! Power sampling during a phase: a configured shell command (its output's
//! numbers summed, in watts) or file, read at a fixed interval.

use agentload_config::Normalize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Samples taken so far.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct PowerSummary {
    pub samples: usize,
    pub mean_w: Option<f64>,
    pub max_w: Option<f64>,
    /// The last sampling error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A running sampler; `finish` stops it and summarizes.
pub struct Sampler {
    task: Option<tokio::task::JoinHandle<()>>,
    samples: Arc<Mutex<(Vec<f64>, Option<String>)>>,
}

/// Starts sampling when the config names a source.
pub fn start(n: &Normalize) -> Sampler {
    let samples = Arc::new(Mutex::new((Vec::new(), None)));
    let source = match (&n.power_command, &n.power_file) {
        (Some(cmd), _) => Some(Source::Command(cmd.clone())),
        (None, Some(file)) => Some(Source::File(file.clone())),
        (None, None) => None,
    };
    let interval = Duration::from_secs_f64(n.power_interval_s.unwrap_or(1.0).max(0.05));
    let task = source.map(|source| {
        let samples = samples.clone();
        tokio::spawn(async move {
            loop {
                let reading = source.read().await;
                {
                    let mut s = samples.lock().expect("power lock");
                    match reading {
                        Ok(w) => s.0.push(w),
                        Err(e) => s.1 = Some(e),
                    }
                }
                tokio::time::sleep(interval).await;
            }
        })
    });
    Sampler { task, samples }
}

impl Sampler {
    /// Stops sampling; the mean and max of what was read.
    pub fn finish(mut self) -> PowerSummary {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        let (values, error) = self.samples.lock().expect("power lock").clone();
        PowerSummary {
            samples: values.len(),
            mean_w: (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64),
            max_w: values.iter().copied().reduce(f64::max),
            error,
        }
    }
}

enum Source {
    Command(String),
    File(std::path::PathBuf),
}

impl Source {
    async fn read(&self) -> Result<f64, String> {
        let text = match self {
            Source::Command(cmd) => {
                let out = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(cmd)
                    .output()
                    .await
                    .map_err(|e| format!("power_command: {e}"))?;
                if !out.status.success() {
                    return Err(format!("power_command exited with {}", out.status));
                }
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
            Source::File(path) => tokio::fs::read_to_string(path)
                .await
                .map_err(|e| format!("power_file {}: {e}", path.display()))?,
        };
        parse_watts(&text)
    }
}

/// The numbers in `text` (one per line, e.g. one per GPU), summed.
fn parse_watts(text: &str) -> Result<f64, String> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim()
                .trim_end_matches('W')
                .trim()
                .parse::<f64>()
                .map_err(|_| format!("not a power reading in watts: {l:?}"))
        })
        .collect::<Result<_, _>>()?;
    if values.is_empty() {
        return Err("no power reading".into());
    }
    Ok(values.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_are_summed_per_line() {
        assert_eq!(parse_watts("250.5\n249.5\n"), Ok(500.0));
        assert_eq!(parse_watts("300 W"), Ok(300.0));
        assert!(parse_watts("n/a").is_err());
        assert!(parse_watts("").is_err());
    }

    #[tokio::test]
    async fn a_command_is_sampled_until_finished() {
        let sampler = start(&Normalize {
            power_command: Some("echo 100; echo 50".into()),
            power_interval_s: Some(0.05),
            ..Normalize::default()
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let s = sampler.finish();
        assert!(s.samples >= 2, "{s:?}");
        assert_eq!(s.mean_w, Some(150.0));
        assert!(s.error.is_none());
    }
}
