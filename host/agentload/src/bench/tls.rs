//! HTTPS beside plain HTTP, in one run: two `agentload sim` children, one serving TLS from a
//! throwaway CA, the same requests to each.
//!
//! - **c=1**: a plain and a TLS client alternate request by request (the order swapped every
//!   other pair), so that a burst of the machine's noise lands on both; each's timing error
//!   against its simulator's own stamps, total and by direction (the request path carries
//!   the request's encryption, the response path the first record's decryption), and TLS
//!   minus plain at p50 and p99.
//! - **CPU per request at N streams** (1,000 by default): plain and TLS levels as the streams
//!   section runs them ([`super::streams::level`]), alternated over rounds (plain first in
//!   the first round, TLS first in the next, ...), so that the machine's drift lands on both;
//!   each's median over the rounds, their ratio, and the range of the rounds' ratios.
//! - **Handshakes**: N connections opened one after another with resumption off (full
//!   handshakes), then N with it on (the first full, the rest resumed): the time per handshake
//!   as the client recorded it, the client's CPU per connection (the process's CPU while each
//!   opened: nothing else runs in it then), and the TLS simulator's over the same spans.

use super::floor::Sample;
use super::streams::{level, start_sim, Errors};
use super::Row;
use agentload_client::{
    ChatClient, ClientOptions, ProxyOptions, RequestBody, TlsOptions, Transport,
};
use anyhow::{Context as _, Result};
use std::time::Duration;

/// What the TLS section runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Requests of each client at c=1.
    pub samples: usize,
    /// Streams of the CPU comparison.
    pub streams: usize,
    /// Requests each of those streams sends.
    pub requests_per_stream: usize,
    /// Connections opened for the handshake measure, each way.
    pub handshakes: usize,
    /// Rounds of the CPU comparison, each a plain and a TLS level.
    pub rounds: usize,
    /// Tokens in each streamed answer.
    pub answer_tokens: usize,
}

/// The section's numbers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TlsBench {
    pub plain_c1: Errors,
    pub tls_c1: Errors,
    pub streams: usize,
    /// Each round's harness CPU per request, ms: plain, then TLS.
    pub cpu_rounds: Vec<[f64; 2]>,
    /// The rounds' median, ms per request.
    pub plain_cpu_ms_per_request: f64,
    pub tls_cpu_ms_per_request: f64,
    pub plain_failed: usize,
    pub tls_failed: usize,
    pub full: Handshakes,
    pub resumed: Handshakes,
}

/// N connections opened one after another.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Handshakes {
    pub connections: usize,
    /// Of them, resumed.
    pub resumed: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The client's CPU per connection (TCP connect and TLS handshake), µs.
    pub client_cpu_us: f64,
    /// The TLS simulator's CPU per connection, µs.
    pub server_cpu_us: f64,
}

/// Runs the section; the throwaway CA's files go to `dir` (the caller removes it).
pub async fn run(opts: &Options, dir: &std::path::Path) -> Result<(TlsBench, Vec<Row>)> {
    let slots = opts.streams.max(1);
    let (mut plain_sim, plain_url) = start_sim(slots, None, None).await?;
    let (mut tls_sim, tls_url) = start_sim(slots, None, Some(dir)).await?;
    let trusting = |resumption: bool| {
        Transport::new(
            &TlsOptions {
                ca_file: Some(dir.join("ca.pem")),
                resumption,
                ..Default::default()
            },
            &ProxyOptions::None,
        )
    };
    let tls = trusting(true)?;
    let prompt = "word ".repeat(opts.answer_tokens.max(1));
    let body = RequestBody::from(serde_json::to_vec(&serde_json::json!({
        "model": "bench",
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
        "stream_options": {"include_usage": true},
    }))?);

    let (plain_c1, tls_c1) =
        alternated(&plain_url, &tls_url, &tls, &body, opts.samples.max(2)).await?;

    let n = opts.streams.max(1);
    let per_stream = opts.requests_per_stream.max(1);
    let plain_transport = Transport::default();
    let mut cpu_rounds = Vec::new();
    let (mut plain_failed, mut tls_failed) = (0, 0);
    for round in 0..opts.rounds.max(1) {
        let mut cpu = [0.0; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let (url, transport, sim, what) = if which == 0 {
                (&plain_url, &plain_transport, plain_sim.id(), "plain")
            } else {
                (&tls_url, &tls, tls_sim.id(), "TLS")
            };
            let (l, _) = level(url, transport, sim, n, per_stream, &body, None)
                .await
                .with_context(|| format!("the {what} level of round {}", round + 1))?;
            cpu[which] = l.harness_cpu_ms_per_request;
            *[&mut plain_failed, &mut tls_failed][which] += l.failed;
        }
        cpu_rounds.push(cpu);
    }
    let median = |which: usize| {
        let mut v: Vec<f64> = cpu_rounds.iter().map(|r| r[which]).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };

    let full = handshakes(&tls_url, &trusting(false)?, tls_sim.id(), opts.handshakes).await?;
    let resumed = handshakes(&tls_url, &trusting(true)?, tls_sim.id(), opts.handshakes).await?;
    plain_sim.kill().await.ok();
    tls_sim.kill().await.ok();
    let out = TlsBench {
        plain_c1,
        tls_c1,
        streams: n,
        plain_cpu_ms_per_request: median(0),
        tls_cpu_ms_per_request: median(1),
        cpu_rounds,
        plain_failed,
        tls_failed,
        full,
        resumed,
    };
    let rows = rows(&out);
    Ok((out, rows))
}

/// The c=1 clients, alternating request by request; each's errors over its requests after
/// the first.
async fn alternated(
    plain_url: &str,
    tls_url: &str,
    tls: &Transport,
    body: &RequestBody,
    samples: usize,
) -> Result<(Errors, Errors)> {
    let client = |url: &str, transport: &Transport| {
        ChatClient::new(&ClientOptions {
            endpoint: url.to_owned(),
            turn_timeout: Duration::from_secs(60),
            max_response_bytes: 0,
            transport: transport.clone(),
            ..Default::default()
        })
    };
    let plain = client(plain_url, &Transport::default())?;
    let secure = client(tls_url, tls)?;
    plain.warm_up(1).await.context("plain c=1")?;
    secure.warm_up(1).await.context("TLS c=1")?;
    let (mut p, mut t) = (Vec::new(), Vec::new());
    for i in 0..=samples {
        let order = if i % 2 == 0 {
            [(&plain, 0), (&secure, 1)]
        } else {
            [(&secure, 1), (&plain, 0)]
        };
        for (c, which) in order {
            let ex = c.send_json(body.clone(), true, "bench-tls").await;
            let sample = ex.result.as_ref().ok().and_then(|a| {
                Sample::of(
                    ex.timeline.issued,
                    ex.timeline.first_token?,
                    a.server_timestamps.as_ref()?.get(),
                )
            });
            // The first request of each client is its connection's first: left out.
            if let (Some(s), true) = (sample, i > 0) {
                [&mut p, &mut t][which].push(s);
            }
        }
    }
    anyhow::ensure!(
        !p.is_empty() && !t.is_empty(),
        "no c=1 request carried the simulator's stamps"
    );
    Ok((Errors::of(&p), Errors::of(&t)))
}

/// `n` connections opened one after another on `transport`, each by a client of its own (the
/// transport's session cache is shared): their handshake times and CPU. After each opens, a
/// `GET /v1/models` on it (outside the measure) reads the session tickets the server sent at
/// the handshake's end, so that with resumption on every connection after the first finds a
/// ticket, as the first of a run's connections finds the endpoint check's.
async fn handshakes(
    url: &str,
    transport: &Transport,
    sim: Option<u32>,
    n: usize,
) -> Result<Handshakes> {
    let n = n.max(1);
    let sim_cpu = || sim.and_then(super::process_cpu_seconds);
    let (mut cpu, mut server, mut resumed) = (0.0, 0.0, 0);
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let client = ChatClient::new(&ClientOptions {
            endpoint: url.to_owned(),
            max_connections: 1,
            transport: transport.clone(),
            ..Default::default()
        })?;
        let (cpu0, sim0) = (crate::sweep::cpu_times(), sim_cpu());
        let setup = client
            .warm_up(1)
            .await
            .with_context(|| format!("handshake {}", i + 1))?;
        cpu += crate::sweep::cpu_times()
            .zip(cpu0)
            .map_or(f64::NAN, |(b, a)| b.user + b.system - a.user - a.system);
        server += sim_cpu().zip(sim0).map_or(f64::NAN, |(b, a)| b - a);
        let tls = setup.tls.context("the connection carried no TLS")?;
        resumed += tls.resumed;
        times.push(tls.handshake_us.max);
        let models = client
            .get("/v1/models", Duration::from_secs(10))
            .await
            .with_context(|| format!("GET /v1/models after handshake {}", i + 1))?;
        anyhow::ensure!(
            models.status == 200,
            "GET /v1/models answered {}",
            models.status
        );
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times[(p * (times.len() - 1) as f64) as usize];
    Ok(Handshakes {
        connections: n,
        resumed,
        p50_us: at(0.5),
        p99_us: at(0.99),
        client_cpu_us: cpu * 1e6 / n as f64,
        server_cpu_us: server * 1e6 / n as f64,
    })
}

fn rows(b: &TlsBench) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut row = |what: String, value: f64, unit: &'static str| {
        rows.push(Row::new("tls", what, value, unit));
    };
    let us = |ms: f64| ms * 1e3;
    for (name, plain, tls) in [
        ("TTFT error", b.plain_c1.total, b.tls_c1.total),
        (
            "request path",
            b.plain_c1.request_path,
            b.tls_c1.request_path,
        ),
        (
            "response path",
            b.plain_c1.response_path,
            b.tls_c1.response_path,
        ),
    ] {
        for (p, a, t) in [
            ("p50", plain.p50_ms, tls.p50_ms),
            ("p99", plain.p99_ms, tls.p99_ms),
        ] {
            let n = b.tls_c1.requests;
            row(format!("c=1 {name} {p}, plain ({n} req)"), us(a), "us");
            row(format!("c=1 {name} {p}, TLS"), us(t), "us");
            row(format!("c=1 {name} {p}, TLS minus plain"), us(t - a), "us");
        }
    }
    let c = b.streams;
    let rounds = b.cpu_rounds.len();
    row(
        format!("c={c} harness CPU, plain (median of {rounds} rounds)"),
        b.plain_cpu_ms_per_request,
        "ms/req",
    );
    row(
        format!("c={c} harness CPU, TLS (median of {rounds} rounds)"),
        b.tls_cpu_ms_per_request,
        "ms/req",
    );
    row(
        format!("c={c} harness CPU, TLS / plain (medians)"),
        b.tls_cpu_ms_per_request / b.plain_cpu_ms_per_request,
        "x",
    );
    let ratios = b.cpu_rounds.iter().map(|[p, t]| t / p);
    let (lo, hi) = ratios.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
        (lo.min(r), hi.max(r))
    });
    row(
        format!("c={c} harness CPU, TLS / plain, lowest round"),
        lo,
        "x",
    );
    row(
        format!("c={c} harness CPU, TLS / plain, highest round"),
        hi,
        "x",
    );
    for (what, failed) in [("plain", b.plain_failed), ("TLS", b.tls_failed)] {
        if failed > 0 {
            row(
                format!("c={c} failed requests, {what}"),
                failed as f64,
                "req",
            );
        }
    }
    for (kind, h) in [("full", &b.full), ("resumed", &b.resumed)] {
        let n = h.connections;
        row(
            format!("handshake ({kind}, {n} conns, {} resumed) p50", h.resumed),
            h.p50_us,
            "us",
        );
        row(format!("handshake ({kind}) p99"), h.p99_us, "us");
        row(
            format!("handshake ({kind}) client CPU per connection"),
            h.client_cpu_us,
            "us",
        );
        row(
            format!("handshake ({kind}) server CPU per connection"),
            h.server_cpu_us,
            "us",
        );
    }
    rows
}
