//! Many concurrent streams against `agentload sim` in a child process, so
//! the harness's own numbers (CPU, RSS) are not mixed with the server's.

use super::{percentile, rss_kib, Row};
use crate::client::{ChatClient, ClientOptions};
use anyhow::{Context as _, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

/// One concurrency level's numbers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Level {
    pub streams: usize,
    pub requests: usize,
    pub failed: usize,
    /// Harness TTFT minus the server's first-token time, ms.
    pub error_p50_ms: f64,
    pub error_p99_ms: f64,
    /// Token-bearing chunks received per second, all streams together.
    pub ingest_tps: f64,
    pub harness_cpu_ms_per_request: f64,
    /// Largest resident set seen while the level ran (MiB).
    pub rss_mib: f64,
}

/// The streaming section: each level runs `streams` clients sending
/// `requests_per_stream` requests one after another.
pub async fn run(
    levels: &[usize],
    requests_per_stream: usize,
    answer_tokens: usize,
) -> Result<(Vec<Level>, Vec<Row>)> {
    let max = levels.iter().copied().max().unwrap_or(1);
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let mut child = tokio::process::Command::new(exe)
        .args([
            "sim",
            "--port",
            "0",
            "--responder",
            "echo",
            "--tokenizer",
            "approx",
            "--slots",
            &max.to_string(),
            "--prefill-tps",
            "1000000",
            "--decode-tps",
            "100",
            // An ideal server: no batch slowdown, so the client is what is measured.
            "--decode-batch-slowdown",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start agentload sim")?;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("piped")).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .context("agentload sim did not print its URL")??
        .context("agentload sim exited")?;
    // About 4 bytes per token (the simulator's approximate tokenizer).
    let prompt = "word ".repeat(answer_tokens.max(1));
    let mut out = Vec::new();
    for &n in levels {
        out.push(level(&url, n, requests_per_stream, &prompt).await?);
    }
    child.kill().await.ok();
    let mut rows = Vec::new();
    for l in &out {
        let c = format!("c={}", l.streams);
        rows.push(Row::new(
            "streams",
            format!("{c} TTFT error p50"),
            l.error_p50_ms,
            "ms",
        ));
        rows.push(Row::new(
            "streams",
            format!("{c} TTFT error p99"),
            l.error_p99_ms,
            "ms",
        ));
        rows.push(Row::new(
            "streams",
            format!("{c} client ingest"),
            l.ingest_tps,
            "tok/s",
        ));
        rows.push(Row::new(
            "streams",
            format!("{c} harness CPU"),
            l.harness_cpu_ms_per_request,
            "ms/req",
        ));
        rows.push(Row::new(
            "streams",
            format!("{c} harness RSS"),
            l.rss_mib,
            "MiB",
        ));
        if l.failed > 0 {
            rows.push(Row::new(
                "streams",
                format!("{c} failed requests"),
                l.failed as f64,
                "req",
            ));
        }
    }
    if let Some(best) = out
        .iter()
        .filter(|l| l.error_p99_ms < 1.0 && l.failed == 0)
        .map(|l| l.streams)
        .max()
    {
        rows.push(Row::new(
            "streams",
            "largest c with p99 error < 1 ms",
            best as f64,
            "streams",
        ));
    }
    Ok((out, rows))
}

async fn level(url: &str, n: usize, per_stream: usize, prompt: &str) -> Result<Level> {
    let client = Arc::new(ChatClient::new(&ClientOptions {
        endpoint: url.to_owned(),
        api_key: None,
        turn_timeout: Duration::from_secs(120),
        max_connections: n,
        max_response_bytes: 0,
    })?);
    let body = serde_json::json!({
        "model": "bench",
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                if let Some((_, now)) = rss_kib() {
                    peak.fetch_max(now, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
    };
    let cpu0 = crate::sweep::cpu_seconds();
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = client.clone();
            let body = body.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                for r in 0..per_stream {
                    let ex = client.send(&body, &format!("bench-{i}-{r}")).await;
                    let t = &ex.timeline;
                    let server = ex.result.as_ref().ok().and_then(|a| {
                        a.server_timestamps
                            .as_ref()?
                            .get("first_token_ns")?
                            .as_u64()
                    });
                    match (t.first_token, server) {
                        (Some(first), Some(s)) => {
                            let harness = first.duration_since(t.issued).as_nanos() as f64;
                            samples
                                .push(Some(((harness - s as f64) / 1e6, t.token_chunks_ns.len())));
                        }
                        _ => samples.push(None),
                    }
                }
                samples
            })
        })
        .collect();
    let mut errors = Vec::new();
    let mut chunks = 0usize;
    let mut failed = 0usize;
    for t in tasks {
        for s in t.await.context("stream task panicked")? {
            match s {
                Some((e, c)) => {
                    errors.push(e);
                    chunks += c;
                }
                None => failed += 1,
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu0
        .zip(crate::sweep::cpu_seconds())
        .map_or(f64::NAN, |(a, b)| b - a);
    sampler.abort();
    let requests = n * per_stream;
    Ok(Level {
        streams: n,
        requests,
        failed,
        error_p50_ms: percentile(&mut errors, 50.0),
        error_p99_ms: percentile(&mut errors, 99.0),
        ingest_tps: chunks as f64 / wall,
        harness_cpu_ms_per_request: cpu * 1e3 / requests as f64,
        rss_mib: peak.load(Ordering::Relaxed) as f64 / 1024.0,
    })
}
