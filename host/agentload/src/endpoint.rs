//! The endpoint as a run talks to it: the client and the request-body
//! options, from the config (shared by `run` and the sweep).

use agentload_client::{ChatClient, ClientOptions, FirstToken};
use agentload_config::{base_url, RunConfig, TtftTrigger};
use agentload_engine::BodyOptions;
use anyhow::Result;
use std::time::Duration;

/// The client (one connection per concurrent session) and the request-body
/// options of a run's endpoint. Refused, before any connection, when the
/// process may not open that many files.
pub fn client_for(config: &RunConfig, concurrency: usize) -> Result<(ChatClient, BodyOptions)> {
    ensure_open_files(concurrency)?;
    let client = ChatClient::new(&ClientOptions {
        endpoint: base_url(&config.endpoint.url).map_err(anyhow::Error::msg)?,
        api_key: api_key_from_env(),
        turn_timeout: Duration::from_secs_f64(config.load.turn_timeout_s),
        max_connections: concurrency,
        max_response_bytes: config.endpoint.max_response_bytes,
        timestamps: config.endpoint.timestamps,
        first_token: match config.endpoint.ttft_trigger {
            TtftTrigger::Reference => FirstToken::Reference,
            TtftTrigger::Rules => FirstToken::Rules,
        },
        reuse_connections: config.endpoint.reuse_connections,
    })?;
    let body = BodyOptions {
        model: config.model.name.clone(),
        stream: config.endpoint.stream,
        include_usage: config.endpoint.include_usage,
        extra: serde_json::to_value(&config.endpoint.extra_body)?
            .as_object()
            .cloned()
            .unwrap_or_default(),
    };
    Ok((client, body))
}

/// The API key, from the environment only (never from a file, never
/// written into the results).
pub(crate) fn api_key_from_env() -> Option<String> {
    ["AGENTLOAD_API_KEY", "OPENAI_API_KEY"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// Files the process keeps open besides its connections: journals, plugin
/// and data files, the runtime's own, stdio.
const OTHER_FILES: u64 = 64;

/// Makes room for `connections` sockets under the open-file limit: raises
/// the soft limit towards the hard one when it is short, and refuses (naming
/// `load.concurrency` and both numbers) when even that is not enough.
pub fn ensure_open_files(connections: usize) -> Result<()> {
    let needed = connections as u64 + OTHER_FILES;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(()); // not known: the connections will say so if they fail
    }
    if limit.rlim_cur >= needed {
        return Ok(());
    }
    if limit.rlim_max >= needed {
        let raised = libc::rlimit {
            rlim_cur: needed,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    anyhow::bail!(
        "load.concurrency: {connections} concurrent sessions need about {needed} open files \
         (a connection each), but this process may open {} (hard limit {}); lower the \
         concurrency or raise the limit (ulimit -n)",
        limit.rlim_cur,
        limit.rlim_max
    )
}
