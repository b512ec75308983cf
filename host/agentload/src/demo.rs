//! `agentload demo`: the shipped edge config against the simulator's
//! oracle, end to end, with no server of the user's.

use crate::run::{run, Mode as RunMode, Overrides};
use agentload_config::RunConfig;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// The demo's simulated time scale unless `--time-scale` says otherwise.
pub const TIME_SCALE: f64 = 0.001;

/// The demo runs the shipped edge config.
const EDGE_CONFIG: &str = include_str!("../../../configs/edge-full-run.toml");

pub(crate) async fn demo(dir: PathBuf, time_scale: f64) -> Result<u8> {
    let config = RunConfig::parse(
        std::path::Path::new("configs/edge-full-run.toml"),
        EDGE_CONFIG,
    )?;
    let data_dir = agentload_config::data::data_dir(config.data_dir.as_deref());
    let max = agentload_plugin_host::Limits::bytes(config.plugins.limits.granted_file_mib);
    let dataset = agentload_config::data::read(&data_dir, "agentic_coding_2.5h.jsonl", max)?;
    // The accuracy gate runs when the BFCL data is there.
    let bfcl = agentload_config::data::locate(&data_dir, "bfcl_v4/possible_answer");
    let mode = if bfcl.is_some() {
        RunMode::Both
    } else {
        eprintln!(
            "note: BFCL v4 data not found in {} or the cache: performance phase only \
             (scripts/fetch-data.sh fetches it)",
            data_dir.display()
        );
        RunMode::Performance
    };
    // The oracle cuts answers at Qwen3.6 token boundaries, so the edge
    // config's 1024-token cap truncates exactly what a Qwen server would.
    let tokenizer = agentload_engine::tokens::load_qwen(&data_dir)
        .map(Arc::new)
        .map_err(anyhow::Error::msg)
        .context("the demo simulates a Qwen3.6 server")?;
    let sim = agentload_sim::start(
        agentload_sim::SimConfig {
            time_scale,
            responder: agentload_sim::ResponderConfig::Oracle {
                dataset: Some(dataset.path.clone()),
                bfcl: bfcl.as_ref().and_then(|p| p.parent()).map(PathBuf::from),
                error_rate: 0.0,
                seed: 0,
                cap_to_max_tokens: false,
            },
            ..Default::default()
        },
        tokenizer.clone(),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await?;
    eprintln!(
        "simulator (oracle responder, time scale {time_scale}) at {}",
        sim.url()
    );
    let result = run(
        config,
        &Overrides {
            endpoint: Some(sim.url()),
            out: Some(dir),
            mode,
            tokenizer: Some(tokenizer),
            // The demo's directory is its own: each demo replaces the last.
            force: true,
            handle_signals: true,
            ..Overrides::default()
        },
    )
    .await;
    sim.shutdown().await;
    Ok(result?.exit_code(false))
}
