//! `agentload sim`: the embedded simulator as a server of its own.

use super::args::{ResponderKind, SimArgs, SimServeAs, SimTokenizer};
use anyhow::{Context, Result};
use std::sync::Arc;

fn sim_config(args: &SimArgs) -> Result<agentload_sim::SimConfig> {
    use agentload_sim::ResponderConfig;
    let responder = match args.responder {
        ResponderKind::Echo => ResponderConfig::Echo,
        ResponderKind::Fill => ResponderConfig::Fill {
            default_tokens: 256,
        },
        ResponderKind::Oracle => ResponderConfig::Oracle {
            dataset: args.dataset.clone(),
            bfcl: args.bfcl.clone(),
            error_rate: args.error_rate,
            seed: args.seed,
            cap_to_max_tokens: args.oracle_cap,
        },
        ResponderKind::Script => ResponderConfig::Script {
            path: args
                .script
                .clone()
                .context("--responder script needs --script FILE")?,
        },
    };
    Ok(agentload_sim::SimConfig {
        prefill_tokens_per_s: args.prefill_tps,
        decode_tokens_per_s: args.decode_tps,
        ctx_size: args.ctx_size,
        time_scale: args.time_scale,
        slots: args.slots,
        decode_batch_slowdown: args.decode_batch_slowdown,
        prefill_chunk_tokens: args.prefill_chunk_tokens,
        cache_tokens: args.cache_tokens,
        responder,
        faults: args.faults.clone(),
        request_log: args.log_requests.clone(),
        request_stamps: args.request_stamps.clone(),
        tls: sim_tls(args)?,
        serve_as: match args.serve_as {
            SimServeAs::LlamaCpp => agentload_sim::ServeAs::LlamaCpp,
            SimServeAs::Vllm => agentload_sim::ServeAs::Vllm,
        },
        ..Default::default()
    })
}

/// The simulator's TLS: the given certificate and key, or a throwaway CA's (whose files are
/// written, and named on the console).
fn sim_tls(args: &SimArgs) -> Result<Option<agentload_sim::SimTls>> {
    if let Some(dir) = &args.tls_self_signed {
        let pki = agentload_sim::pki::Pki::new(dir)?;
        let server = pki.server()?;
        let client = pki.client()?;
        let mut tls = pki.sim_tls(&server, false);
        tls.client_ca = args.tls_client_ca.clone();
        eprintln!(
            "TLS: trust {} (--ca-file); a client certificate for mTLS: {} with {}",
            pki.ca_file().display(),
            client.cert.display(),
            client.key.display()
        );
        return Ok(Some(tls));
    }
    Ok(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(agentload_sim::SimTls {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: args.tls_client_ca.clone(),
        }),
        _ if args.tls_client_ca.is_some() => {
            anyhow::bail!("--tls-client-ca needs --tls-cert and --tls-key, or --tls-self-signed")
        }
        _ => None,
    })
}

pub(super) async fn serve_sim(args: SimArgs) -> Result<()> {
    let config = sim_config(&args)?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
    let counter: Arc<dyn agentload_sim::TokenCounter> = match args.tokenizer {
        SimTokenizer::Approx => Arc::new(agentload_sim::ApproxTokenCounter),
        SimTokenizer::Qwen => {
            let data_dir = agentload_config::data::data_dir(None);
            Arc::new(agentload_engine::tokens::load_qwen(&data_dir).map_err(anyhow::Error::msg)?)
        }
    };
    let sim = agentload_sim::start(config, counter, addr).await?;
    agentload_console::out(&format!("{}\n", sim.url()));
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    eprintln!(
        "connections accepted: {}, TLS handshakes failed: {}, chat requests received: {}",
        sim.connections_accepted(),
        sim.tls_failures(),
        sim.chat_requests_received()
    );
    sim.shutdown().await;
    Ok(())
}
