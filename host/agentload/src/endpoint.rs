//! The endpoint as a run talks to it: the client and the request-body
//! options, from the config (shared by `run` and the sweep).

use agentload_client::{
    ChatClient, ClientOptions, ClientStyle, FirstToken, ProxyOptions, Roots, TlsOptions, Transport,
};
use agentload_config::{
    base_url, ClientKind, EndpointConfig, ProxySetting, RunConfig, TlsRoots, TtftTrigger,
};
use agentload_engine::{BodyOptions, Layout};
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
        transport: transport_for(&config.endpoint)?,
        headers: config
            .endpoint
            .headers
            .resolve(|k| std::env::var(k).ok())
            .map_err(anyhow::Error::msg)?,
        session_header: config.endpoint.session_header.clone(),
        style: match config.endpoint.client {
            ClientKind::Reference => ClientStyle::Reference,
            ClientKind::AgentperfLocal => ClientStyle::AgentperfLocal,
        },
    })?;
    let body = BodyOptions {
        model: config.model.name.clone(),
        stream: config.endpoint.stream,
        include_usage: config.endpoint.include_usage,
        extra: serde_json::to_value(&config.endpoint.extra_body)?
            .as_object()
            .cloned()
            .unwrap_or_default(),
        layout: match config.endpoint.client {
            ClientKind::Reference => Layout::Reference,
            ClientKind::AgentperfLocal => Layout::AgentperfLocal,
        },
    };
    Ok((client, body))
}

/// The endpoint's transport: its TLS settings and proxy, built once per call (every HTTP
/// client of a run takes it from here). The first call of a process says on the console what
/// a user must not miss: certificates that go unverified, and proxy variables set but ignored.
///
/// # Errors
/// A TLS file that cannot be used, a proxy that cannot be parsed (each naming its key).
pub fn transport_for(endpoint: &EndpointConfig) -> Result<Transport> {
    let tls = &endpoint.tls;
    let transport = Transport::new(
        &TlsOptions {
            roots: match tls.roots {
                TlsRoots::Webpki => Roots::Webpki,
                TlsRoots::System => Roots::System,
            },
            ca_file: tls.ca_file.clone(),
            client_cert: tls.client_cert.clone(),
            client_key: tls.client_key.clone(),
            server_name: tls.server_name.clone(),
            insecure: tls.insecure,
            resumption: tls.resumption,
            keylog: tls.keylog,
        },
        &match &endpoint.proxy {
            ProxySetting::None => ProxyOptions::None,
            ProxySetting::Env => ProxyOptions::Env,
            ProxySetting::Url(url) => ProxyOptions::Url(url.clone()),
        },
    )?;
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        if tls.insecure && endpoint.url.trim_start().starts_with("https") {
            agentload_console::line(
                "WARNING: endpoint.tls.insecure: the server's certificate is NOT verified; \
                 anyone on the path can read and change the traffic (recorded in the results; \
                 refused in a submission run)",
            );
        }
        let ignored = transport.proxy.ignored_env();
        if !ignored.is_empty() {
            agentload_console::line(&format!(
                "note: {} set but not used: agentload connects directly (endpoint.proxy = \
                 \"none\", as the reference); set endpoint.proxy = \"env\" to go through it",
                ignored.join(", ")
            ));
        }
    });
    Ok(transport)
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
