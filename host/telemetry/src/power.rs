//! Power from outside: a shell command whose printed numbers (watts, one
//! per line, e.g. one per accelerator) are summed, or a file an external
//! meter writes. For accelerators NVML and DCGM do not cover.

use std::path::PathBuf;

/// A command or file giving the current power draw.
#[derive(Debug, Clone, PartialEq)]
pub enum PowerSource {
    Command(String),
    File(PathBuf),
}

impl PowerSource {
    /// `power_command` or `power_file`, the config key it came from.
    pub fn kind(&self) -> &'static str {
        match self {
            PowerSource::Command(_) => "power_command",
            PowerSource::File(_) => "power_file",
        }
    }

    /// The current draw in watts.
    pub async fn read(&self) -> Result<f64, String> {
        let text = match self {
            PowerSource::Command(cmd) => {
                let out = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(cmd)
                    .kill_on_drop(true)
                    .output()
                    .await
                    .map_err(|e| format!("power_command: {e}"))?;
                if !out.status.success() {
                    return Err(format!("power_command exited with {}", out.status));
                }
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
            PowerSource::File(path) => tokio::fs::read_to_string(path)
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
                .ok()
                .filter(|w| w.is_finite())
                .ok_or_else(|| format!("not a power reading in watts: {l:?}"))
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
        assert!(parse_watts("inf").is_err());
        assert!(parse_watts("").is_err());
    }

    #[tokio::test]
    async fn a_command_and_a_file_are_read() {
        let cmd = PowerSource::Command("echo 100; echo 50".into());
        assert_eq!(cmd.read().await, Ok(150.0));
        let failing = PowerSource::Command("exit 3".into());
        assert!(failing.read().await.unwrap_err().contains("exited"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("watts");
        std::fs::write(&file, "42.5\n").unwrap();
        assert_eq!(PowerSource::File(file.clone()).read().await, Ok(42.5));
        std::fs::remove_file(&file).unwrap();
        assert!(PowerSource::File(file)
            .read()
            .await
            .unwrap_err()
            .contains("power_file"));
    }
}
