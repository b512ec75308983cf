//! `measurement.json` (AA's `measurement_binding`, version 3): the run bound to
//! its workload, endpoint and machine before inference, as agentperf-local
//! writes it for an attached endpoint. The producer is agentload (AA's
//! `prepare-submission` accepts only its own client's bindings).

use super::RunFacts;
use agentload_fs::OutDir;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// `sha256:<hex>` of `bytes`, AA's digest spelling.
fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// This machine as AA's hardware snapshot (version 2) describes it: no host
/// names, serials or device ids.
#[derive(Debug, Clone, PartialEq)]
pub struct HardwareSnapshot(pub Value);

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `key: value` lines' first value for `key` (`/proc/cpuinfo`, `/proc/meminfo`).
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

/// NVIDIA GPUs as `nvidia-smi` lists them (none when it is absent or fails).
fn nvidia() -> Vec<Value> {
    let Ok(out) = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,memory.total,driver_version,power.limit,clocks.max.graphics,clocks.max.memory",
            "--format=csv,noheader,nounits",
        ])
        .output()
    else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    let number = |s: &str| s.trim().parse::<f64>().ok();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let name = f.first()?.trim();
            Some(json!({
                "vendor": "NVIDIA",
                "name": name,
                "memory_bytes": f.get(1).and_then(|s| number(s)).map(|mib| (mib * 1_048_576.0) as u64),
                "core_count": null,
                "driver_version": f.get(2).map(|s| s.trim()),
                "api": "CUDA",
                "memory_is_unified": false,
                "power_limit_w": f.get(3).and_then(|s| number(s)),
                "max_graphics_clock_mhz": f.get(4).and_then(|s| number(s)).map(|v| v as u64),
                "max_memory_clock_mhz": f.get(5).and_then(|s| number(s)).map(|v| v as u64),
            }))
        })
        .collect()
}

impl HardwareSnapshot {
    /// This Linux machine.
    pub fn collect() -> Self {
        let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
        let kernel =
            read("/proc/sys/kernel/osrelease").map_or_else(String::new, |s| s.trim().to_owned());
        let version = read("/etc/os-release")
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("VERSION_ID="))
                    .map(|v| v.trim_matches('"').to_owned())
            })
            .unwrap_or_else(|| kernel.clone());
        let memory = read("/proc/meminfo")
            .and_then(|t| field(&t, "MemTotal"))
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024);
        let cpus = cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let base_mhz = read("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency")
            .and_then(|s| s.trim().parse::<u64>().ok())
            .filter(|&khz| khz > 0)
            .map(|khz| khz / 1000);
        let accelerators = nvidia();
        let warnings: Vec<&str> = if accelerators.is_empty() {
            vec!["no_supported_accelerator"]
        } else {
            Vec::new()
        };
        Self(json!({
            "version": 2,
            "kind": "hardware_snapshot",
            "operating_system": "Linux",
            "operating_system_version": version,
            "kernel_version": kernel,
            "architecture": std::env::consts::ARCH,
            "cpu_model": field(&cpuinfo, "model name").unwrap_or_else(|| std::env::consts::ARCH.to_owned()),
            "logical_cpu_count": (cpus > 0).then_some(cpus),
            "cpu_base_frequency_mhz": base_mhz,
            "memory_bytes": memory,
            "accelerators": accelerators,
            "warnings": warnings,
        }))
    }
}

/// The binding of a run with `facts` on `hardware`.
pub fn measurement(facts: &RunFacts, hardware: &HardwareSnapshot) -> Value {
    let model_digest = facts.model.as_deref().map(|m| digest(m.as_bytes()));
    json!({
        "version": 3,
        "kind": "measurement_binding",
        "run_id": facts.run_id,
        "benchmark": {
            "suite_id": "agentperf-local-attached",
            "suite_epoch": "community-local-v1",
            "suite_digest": facts.workload_digest,
            "model_semantics_id": "user-supplied",
            "model_artifact_digest": model_digest,
            "runtime_id": "attached-openai-compatible",
            "context_tokens": super::BENCHMARK_CONTEXT_TOKENS,
        },
        "observed_context_tokens": facts.context.as_ref().and_then(|c| c.observed_tokens),
        "deployment_digest": null,
        "hardware": hardware.0,
        "producer": {
            "client_name": "agentload",
            "client_version": env!("CARGO_PKG_VERSION"),
            "source_revision": null,
            "source_state": "unavailable",
        },
        "private": {
            "manifest_path": facts.manifest_path,
            "manifest_digest": facts.workload_digest,
            "endpoint_model_digest": model_digest,
        },
    })
}

/// Writes `aa/measurement.json` in the run directory `out` for `facts` (AA's
/// runs write it before their first request): a new private file (mode 0600,
/// never one that exists), the `aa` folder made when missing, neither reached
/// through a link.
pub fn write_measurement(out: &OutDir, facts: &RunFacts) -> std::io::Result<PathBuf> {
    let rel = Path::new(super::files::AA_DIR).join("measurement.json");
    let path = out.path(&rel);
    let value = measurement(facts, &HardwareSnapshot::collect());
    let mut file = out.create_new(&rel)?;
    let context =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(context)?;
    file.write_all(&super::files::pretty(value))
        .map_err(context)?;
    file.sync_all().map_err(context)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binds_the_run_to_its_workload_and_model() {
        let facts = RunFacts {
            run_id: Some("0b6f4e2c-4a8e-4c1e-9a55-3f0d2a0e7b11".into()),
            model: Some("m".into()),
            workload_digest: Some("sha256:7d9b".into()),
            manifest_path: Some("/data/manifest-x86_64.json".into()),
            context: Some(super::super::ContextFacts {
                requested_tokens: Some(65_536),
                observed_tokens: Some(65_536),
                observed_reason: Some("reported".into()),
            }),
            ..RunFacts::default()
        };
        let m = measurement(&facts, &HardwareSnapshot::collect());
        assert_eq!(m["version"], 3);
        assert_eq!(m["kind"], "measurement_binding");
        assert_eq!(m["benchmark"]["suite_digest"], "sha256:7d9b");
        assert_eq!(m["private"]["manifest_digest"], "sha256:7d9b");
        // sha256("m")
        assert_eq!(
            m["benchmark"]["model_artifact_digest"],
            "sha256:62c66a7a5dd70c3146618063c344e531e6d4b59e379808443ce962b3abd63c5a"
        );
        assert_eq!(m["observed_context_tokens"], 65_536);
        assert_eq!(m["hardware"]["kind"], "hardware_snapshot");
        assert!(m["hardware"]["logical_cpu_count"].as_u64().unwrap() >= 1);
    }

    #[test]
    fn is_written_once_privately_and_never_through_a_link() {
        let facts = RunFacts::default();
        let tmp = tempfile::tempdir().unwrap();
        let run = OutDir::new(tmp.path().join("run"));
        let path = write_measurement(&run, &facts).unwrap();
        assert_eq!(path, tmp.path().join("run/aa/measurement.json"));
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(written["kind"], "measurement_binding");
        // Never replaced.
        let again = write_measurement(&run, &facts).unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists, "{again}");

        // A run directory whose `aa` is a link elsewhere: refused, nothing written there.
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let linked = tmp.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(&elsewhere, linked.join("aa")).unwrap();
        let err = write_measurement(&OutDir::new(&linked), &facts).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

        // A planted link at the file itself: refused, its target untouched.
        let planted = tmp.path().join("planted");
        std::fs::create_dir_all(planted.join("aa")).unwrap();
        let target = tmp.path().join("target.json");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, planted.join("aa/measurement.json")).unwrap();
        let err = write_measurement(&OutDir::new(&planted), &facts).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
