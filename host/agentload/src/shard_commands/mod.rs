//! Sharded runs' commands: `agentload shard` (one process or pod of a run),
//! `agentload run --shards N` (N local processes through the same
//! coordinator and merge that Kubernetes uses, [`launch`]) and `agentload
//! merge`. What a run itself uses of them is [`crate::shards`]. The design and
//! its clock model: `docs/distributed.md`.

pub mod launch;

use crate::run::{Mode, Overrides, RunResult};
use crate::shards::{merge, sweep, ShardRun};
use agentload_config::RunConfig;
use agentload_engine::{each_record, Interner, TurnFacts};
use agentload_results::exit;
use agentload_shards::{Coordinator, Identity, LatencyHistograms, Link, Setup, ShardHeader, Slice};
use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// `agentload shard`'s options.
#[derive(Debug, Clone)]
pub struct ShardOpts {
    pub config: PathBuf,
    pub shards: u32,
    /// Default: `$JOB_COMPLETION_INDEX` (a Kubernetes Indexed Job's).
    pub index: Option<u32>,
    pub run_id: String,
    /// The coordinator's URL (shard 0 uses its own when not given).
    pub coordinator: Option<String>,
    /// Where shard 0's coordinator listens.
    pub listen: SocketAddr,
    /// Shard 0 writes the address it listens on here (port 0 chosen by the OS).
    pub addr_file: Option<PathBuf>,
    /// The merged run (shard 0; the uploads go to `OUT/shards/<i>/`).
    pub out: PathBuf,
    /// This shard's own run directory (default `OUT/work/<i>`).
    pub work: Option<PathBuf>,
    pub endpoint: Option<String>,
    pub mode: Mode,
    pub submission: bool,
    /// Continue this shard's run in its directory.
    pub resume: bool,
    pub barrier_timeout: Duration,
    pub silence_timeout: Duration,
    /// How long shard 0 serves the merged results after writing them.
    pub linger: Duration,
    /// Bytes the shards' uploads may take together (shard 0).
    pub upload_budget: u64,
    pub require_valid: bool,
}

/// The run's config with the endpoint override applied, and its digest
/// (what every shard must agree on).
fn resolved(opts: &ShardOpts) -> Result<(RunConfig, String)> {
    let mut config = RunConfig::load(&opts.config)?;
    if let Some(url) = &opts.endpoint {
        config.endpoint.url = url.clone();
    }
    let digest = format!(
        "sha256:{}",
        hex::encode(Sha256::digest(toml::to_string(&config)?.as_bytes()))
    );
    Ok((config, digest))
}

/// The pod or machine name.
fn host_name(index: u32) -> String {
    ["POD_NAME", "HOSTNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .map_or_else(
            || format!("shard-{index}"),
            |h| format!("{h}/{}", std::process::id()),
        )
}

/// One shard of a sharded run, start to end; shard 0 also coordinates and
/// merges. Returns the exit code.
pub async fn shard(opts: ShardOpts) -> Result<u8> {
    let index = match opts.index {
        Some(i) => i,
        None => std::env::var("JOB_COMPLETION_INDEX")
            .context("no --index and no JOB_COMPLETION_INDEX (set by an Indexed Job)")?
            .parse()
            .context("JOB_COMPLETION_INDEX is not a number")?,
    };
    let slice = Slice::new(index, opts.shards)?;
    let (config, digest) = resolved(&opts)?;
    // A closed-loop run's slots split over the shards (a sweep's levels and open-loop
    // arrivals are dealt as agents and arrivals `k mod N` instead).
    if config.performance.is_some()
        && opts.mode != Mode::Accuracy
        && config.load.arrivals.is_none()
        && config.sweep.is_none()
    {
        slice.concurrency(config.load.concurrency)?;
    }
    let work = opts
        .work
        .clone()
        .unwrap_or_else(|| opts.out.join("work").join(index.to_string()));
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let coordinator = if index == 0 {
        let c = Coordinator::start(
            opts.listen,
            Setup {
                count: opts.shards,
                run_id: opts.run_id.clone(),
                config_digest: digest.clone(),
                dir: opts.out.clone(),
                barrier_timeout: opts.barrier_timeout,
                silence_timeout: opts.silence_timeout,
                upload_budget: opts.upload_budget,
            },
        )?;
        if let Some(file) = &opts.addr_file {
            agentload_fs::OutDir::of_file(file)
                .and_then(|(dir, name)| dir.write(name, c.addr().to_string()))
                .with_context(|| format!("cannot write {}", file.display()))?;
        }
        Some(Arc::new(c))
    } else {
        None
    };
    let url = match (&opts.coordinator, &coordinator) {
        (Some(url), _) => url.clone(),
        (None, Some(c)) if c.addr().ip().is_unspecified() => {
            format!("http://127.0.0.1:{}", c.addr().port())
        }
        (None, Some(c)) => format!("http://{}", c.addr()),
        (None, None) => anyhow::bail!("shard {index} needs --coordinator URL (shard 0's)"),
    };
    let identity = Identity {
        slice,
        run_id: opts.run_id.clone(),
        config_digest: digest,
        host: host_name(index),
    };
    let link = Link::join(&url, identity, opts.barrier_timeout).await?;
    link.keep_anchors(&work.join("anchors.json"))?;
    let beats = link.heartbeats(Duration::from_secs(1));
    // Shard 0 shows every shard's progress together.
    let shown = coordinator.clone().map(|c| tokio::spawn(show_progress(c)));
    let started_at = agentload_wire::clock::utc_now_rfc3339();
    let ran = run_shard(&opts, &config, slice, &link, &work).await;
    // Whatever the run left on disk goes to the coordinator, also after an
    // error (a refused barrier when another shard was lost): the records
    // measured are kept in the merge.
    let uploaded = match write_header(&link, &config, slice, &work, started_at) {
        Ok(()) => {
            let mut files: Vec<String> = agentload_shards::protocol::UPLOADED
                .iter()
                .map(|f| f.to_string())
                .collect();
            files.extend(sweep::uploads(&work));
            link.upload(&work, &files)
                .await
                .map(|_| ())
                .map_err(anyhow::Error::from)
        }
        Err(e) => Err(e),
    };
    drop(beats);
    if let Some(task) = shown {
        task.abort();
    }
    let own = match ran {
        Ok(code) => code,
        Err(e) => {
            agentload_console::line(&format!("error: shard {index}: {e:#}"));
            exit::FAILURE
        }
    };
    let uploaded = uploaded.with_context(|| format!("shard {index}: the upload failed"));
    match coordinator {
        // Shard 0's own upload failing is one shard lost: the others are
        // still merged, and the run fails closed (exit 5).
        Some(c) => {
            if let Err(e) = uploaded {
                c.give_up(index, format!("{e:#}"));
            }
            merge_and_serve(&opts, config, c).await
        }
        None => uploaded.map(|()| own),
    }
}

/// This shard's part of the run, in its own directory.
async fn run_shard(
    opts: &ShardOpts,
    config: &RunConfig,
    slice: Slice,
    link: &Arc<Link>,
    work: &Path,
) -> Result<u8> {
    let result = crate::run::run(
        config.clone(),
        &Overrides {
            out: Some(work.to_path_buf()),
            mode: opts.mode,
            submission: opts.submission,
            resume: opts.resume,
            force: false,
            handle_signals: true,
            quiet: slice.index != 0,
            shard: Some(ShardRun {
                slice,
                link: link.clone(),
            }),
            ..Overrides::default()
        },
    )
    .await?;
    Ok(result.exit_code(false))
}

/// Every `AGENTLOAD_PROGRESS_INTERVAL_S` (10 s), one line with all the
/// shards' progress: counts summed, TTFT percentiles from their histograms
/// merged bucket for bucket.
async fn show_progress(c: Arc<Coordinator>) {
    let every = std::env::var("AGENTLOAD_PROGRESS_INTERVAL_S")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| !d.is_zero())
        .unwrap_or(Duration::from_secs(10));
    loop {
        tokio::time::sleep(every).await;
        let status = c.status();
        let Some(live) = status.live else { continue };
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
        agentload_console::line(&format!(
            "all shards ({} of {} reporting, {}): {} turns completed, {} failed, {} output tokens; \
             TTFT p50 {} ms p99 {} ms",
            live.shards_reporting,
            status.count,
            live.phase,
            live.completed,
            live.failed,
            live.output_tokens,
            ms(live.ttft_p50_ms),
            ms(live.ttft_p99_ms)
        ));
    }
}

/// `shard.json`: the run, the slice, the clock anchors, the histograms.
fn write_header(
    link: &Link,
    config: &RunConfig,
    slice: Slice,
    work: &Path,
    started_at: String,
) -> Result<()> {
    // The log's facts, read one record at a time.
    let mut turns = Vec::new();
    let log = work.join("turns.jsonl");
    if log.is_file() {
        let mut strings = Interner::default();
        each_record(&log, |r| turns.push(TurnFacts::of(&r, 0, &mut strings)))
            .map_err(anyhow::Error::msg)?;
    }
    let me = link.identity();
    let header = ShardHeader {
        run_id: me.run_id.clone(),
        config_digest: me.config_digest.clone(),
        index: slice.index,
        count: slice.count,
        host: me.host.clone(),
        concurrency: slice.concurrency(config.load.concurrency).unwrap_or(0),
        started_at,
        anchors: link.anchors(),
        histograms: LatencyHistograms::of_turns(&turns),
    };
    agentload_fs::OutDir::new(work)
        .write_json("shard.json", &header)
        .context("cannot write shard.json")
}

/// Shard 0 after its own part: waits for every upload (or the failure),
/// merges, serves the merged files for `agentload k8s fetch`, and returns
/// the run's exit code.
async fn merge_and_serve(opts: &ShardOpts, config: RunConfig, c: Arc<Coordinator>) -> Result<u8> {
    let uploads = c.uploads().await;
    if let Some(why) = &uploads.failed {
        agentload_console::line(&format!("error: the sharded run failed: {why}"));
    }
    if uploads.complete.is_empty() {
        // Every shard lost: failed closed, with nothing to merge.
        agentload_console::line(&format!(
            "error: run INVALID: no shard completed its upload, nothing to merge ({})",
            uploads.failed.as_deref().unwrap_or("no cause recorded")
        ));
        return Ok(exit::SHARD_LOST);
    }
    let dirs: Vec<PathBuf> = uploads
        .complete
        .keys()
        .map(|i| opts.out.join("shards").join(i.to_string()))
        .collect();
    let merged = merge::Merged::read(&dirs, uploads.failed.clone())?;
    let lost = merged.lost.clone();
    let result = merge_into(config, &opts.out, merged, opts.mode, opts.submission).await?;
    c.publish(result_files(&opts.out)?);
    if !opts.linger.is_zero() {
        agentload_console::line(&format!(
            "serving the merged results at http://{}/v1/results for {:.0} s (agentload k8s fetch)",
            c.addr(),
            opts.linger.as_secs_f64()
        ));
        tokio::time::sleep(opts.linger).await;
    }
    if let Some(why) = lost {
        agentload_console::line(&format!("error: run INVALID: {why}"));
        return Ok(exit::SHARD_LOST);
    }
    Ok(result.exit_code(opts.require_valid))
}

/// Writes the merged run into `out`.
pub async fn merge_into(
    config: RunConfig,
    out: &Path,
    merged: merge::Merged,
    mode: Mode,
    submission: bool,
) -> Result<RunResult> {
    crate::run::run(
        config,
        &Overrides {
            out: Some(out.to_path_buf()),
            mode,
            submission,
            merge: Some(Arc::new(merged)),
            ..Overrides::default()
        },
    )
    .await
}

/// The merged run's files (those agentload writes for a run: not the
/// shards' uploads or their work directories), with sizes and digests.
fn result_files(out: &Path) -> Result<Vec<agentload_shards::protocol::Stored>> {
    let mut files = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for entry in std::fs::read_dir(out.join(&rel))? {
            let entry = entry?;
            let inner = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                todo.push(inner);
            } else if let Some(path) = inner
                .to_str()
                .filter(|_| agentload_results::run_dir::owned(&inner))
                .and_then(agentload_shards::coordinator::safe_path)
            {
                let bytes = agentload_fs::read::read(entry.path())?;
                files.push(agentload_shards::protocol::Stored {
                    path: path.to_owned(),
                    bytes: bytes.len() as u64,
                    sha256: hex::encode(Sha256::digest(&bytes)),
                });
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// `agentload merge OUT SHARD_DIR...`: the merged run from shard
/// directories (uploads, or the shards' own directories).
pub async fn merge_dirs(out: &Path, dirs: &[PathBuf]) -> Result<RunResult> {
    let merged = merge::Merged::read(dirs, None)?;
    let first = &merged.shards[0].dir;
    let config = RunConfig::load(&first.join("config.toml"))?;
    let state = crate::run_state::RunState::load(first)?;
    merge_into(config, out, merged, state.run_mode()?, state.submission).await
}
