//! `agentload k8s manifest` and `agentload k8s fetch`.

use agentload_shards::k8s::{check_name, Manifest};
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `agentload k8s manifest`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct ManifestOpts {
    /// The run config (TOML), put in the ConfigMap.
    pub config: PathBuf,
    /// Shards (pods).
    #[arg(long)]
    pub shards: u32,
    /// The container image (deploy/Containerfile builds one).
    #[arg(long)]
    pub image: String,
    /// Name of the objects and id of the run.
    #[arg(long, default_value = "agentload")]
    pub name: String,
    #[arg(long)]
    pub namespace: Option<String>,
    /// The Job's activeDeadlineSeconds (default: load.max_duration_ms, or a sweep's levels
    /// at their max_phase_s and ramp, + 1 h + linger).
    #[arg(long)]
    pub deadline_s: Option<u64>,
    /// Seconds shard 0 serves the merged results for `k8s fetch`.
    #[arg(long, default_value_t = 1800)]
    pub linger_s: u64,
    /// A PersistentVolumeClaim holding the data directory (mounted read-only at /data).
    #[arg(long)]
    pub data_claim: Option<String>,
    /// CPU each shard requests (and is limited to), e.g. 8.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Memory each shard requests (and is limited to), e.g. 16Gi.
    #[arg(long)]
    pub memory: Option<String>,
}

/// The objects as YAML. The config is checked first (it must load, and a
/// closed-loop run's concurrency must split over the shards); the Job's
/// deadline defaults to the run's `load.max_duration_ms` (a sweep's: every
/// level at its `max_phase_s` after its ramp) plus an hour for start-up,
/// merge and fetch.
pub fn manifest(o: &ManifestOpts) -> Result<String> {
    check_name(&o.name).map_err(anyhow::Error::msg)?;
    let config = agentload_config::RunConfig::load(&o.config)?;
    let slice = agentload_shards::Slice::new(0, o.shards)?;
    if config.performance.is_some() && config.sweep.is_none() && config.load.arrivals.is_none() {
        slice.concurrency(config.load.concurrency)?;
    }
    // The config's text goes into a ConfigMap as it is: a secret in it would be readable by
    // anyone who can read the namespace's ConfigMaps.
    if let Some((name, _)) = config
        .endpoint
        .headers
        .redacted()
        .into_iter()
        .find(|(_, v)| v == agentload_config::REDACTED)
    {
        anyhow::bail!(
            "endpoint.headers.{name} holds a secret literally, and the config goes into a \
             ConfigMap: give it as \"${{VAR}}\" and set VAR in the pods from a Secret"
        );
    }
    let config_toml = std::fs::read_to_string(&o.config)
        .with_context(|| format!("cannot read {}", o.config.display()))?;
    let deadline_s = o.deadline_s.unwrap_or_else(|| {
        let run = match (&config.sweep, config.load.max_duration_ms) {
            (Some(sweep), _) => {
                let levels = crate::sweep::Level::all(sweep).len() as f64;
                let ramp = config.load.ramp.map_or(0.0, |r| r.duration_s);
                (levels * (sweep.max_phase_s + ramp)).ceil() as u64
            }
            (None, 0) => 24 * 3600,
            (None, ms) => ms.div_ceil(1000),
        };
        run + 3600 + o.linger_s
    });
    let m = Manifest {
        name: o.name.clone(),
        namespace: o.namespace.clone(),
        shards: o.shards,
        image: o.image.clone(),
        config_toml,
        deadline_s,
        linger_s: o.linger_s,
        data_claim: o.data_claim.clone(),
        cpu: o.cpu.clone(),
        memory: o.memory.clone(),
    };
    Ok(m.yaml()?)
}

/// `agentload k8s fetch URL OUT`: the merged run's files, each checked
/// against its listed size and digest before any goes into `out`.
/// `transport`: the TLS settings (`--ca-file`, `--insecure`) for an `https://` coordinator.
pub async fn fetch(
    url: &str,
    out: &Path,
    timeout_s: f64,
    force: bool,
    transport: &agentload_client::Transport,
) -> Result<usize> {
    let timeout = Duration::try_from_secs_f64(timeout_s)
        .ok()
        .filter(|t| !t.is_zero())
        .context("--timeout-s must be a positive number of seconds")?;
    let options = agentload_shards::FetchOptions { timeout, force };
    let files = agentload_shards::fetch_results(url, out, options, transport).await?;
    Ok(files.len())
}
