//! Many concurrent streams against `agentload sim` in a child process, so the harness's own
//! numbers (CPU, RSS) are not mixed with the server's; and in the same run the machine's floor
//! ([`super::floor`]) against the same simulator, so agentload's error reads as a ratio to it.
//! The floor's requests alternate one by one with agentload's c=1 level: on a noisy machine a
//! burst of noise then lands on both clients alike, not on whichever ran at that moment. Above
//! c=1, a floor at the same concurrency ([`StreamFloor`]: the same stamped socket reads, no
//! parsing) runs right after each level, for its CPU per request and first-token read lag.
//!
//! Each level warms one connection per stream first (the set-up, reported apart, like a run's
//! `connection_setup`), then each stream sends its requests one after another. The timing
//! error of a request is its TTFT minus the simulator's first-token time, split by direction
//! (request path: send to the arrival of the request's first packet at the simulator; response
//! path: the simulator's first-token write to the client's first-token stamp); the first
//! request of each stream is reported apart from the rest, and so is the client's read lag
//! (how long first tokens waited in the kernel for its read).

use super::floor::{self, FloorClient, Sample, StreamFloor};
use super::{percentile, rss_kib, Row};
use crate::sweep::CpuTimes;
use agentload_client::{ChatClient, ClientOptions, RequestBody, Timestamps, Transport};
use anyhow::{Context as _, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tokens per second the simulator decodes per stream.
pub(super) const SIM_DECODE_TPS: usize = 100;

/// What the streams section runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Concurrent streams per level.
    pub levels: Vec<usize>,
    /// Requests each stream sends at least.
    pub requests_per_stream: usize,
    /// Requests per level at least (more per stream at low concurrency, for a stable p99).
    pub samples: usize,
    /// Tokens in each streamed answer.
    pub answer_tokens: usize,
    /// Pin the simulator to these CPUs and the client to the others.
    pub sim_cpus: Option<Vec<usize>>,
}

impl Options {
    /// Requests each stream of a level of `n` sends.
    pub fn per_stream(&self, n: usize) -> usize {
        self.requests_per_stream
            .max(self.samples.div_ceil(n.max(1)))
            .max(1)
    }
}

/// p50 and p99 of a timing error, ms.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Spread {
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl Spread {
    fn of(ns: impl Iterator<Item = i64>) -> Self {
        let mut v: Vec<f64> = ns.map(|n| n as f64 / 1e6).collect();
        Self {
            p50_ms: percentile(&mut v, 50.0),
            p99_ms: percentile(&mut v, 99.0),
        }
    }
}

/// The timing error of some requests, total and by direction.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Errors {
    pub requests: usize,
    pub total: Spread,
    pub request_path: Spread,
    pub response_path: Spread,
}

impl Errors {
    pub(super) fn of(samples: &[Sample]) -> Self {
        Self {
            requests: samples.len(),
            total: Spread::of(samples.iter().map(|s| s.total_ns)),
            request_path: Spread::of(samples.iter().map(|s| s.request_ns)),
            response_path: Spread::of(samples.iter().map(|s| s.response_ns)),
        }
    }
}

/// One concurrency level's numbers.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Level {
    pub streams: usize,
    pub requests: usize,
    pub failed: usize,
    /// Opening one connection per stream before the first request, ms.
    pub setup_ms: f64,
    /// The first request of each stream.
    pub first: Errors,
    /// The other requests.
    pub after_first: Errors,
    /// Of the other requests, how long the first token's bytes waited in the kernel before
    /// agentload read them (its read's return minus their arrival): the harness's own backlog,
    /// which kernel stamps keep out of its timings. `None` without kernel stamps.
    pub read_lag: Option<Spread>,
    /// `after_first` p50 / p99 over the floor client's.
    pub ratio_to_floor_p50: f64,
    pub ratio_to_floor_p99: f64,
    /// Token-bearing chunks received per second, all streams together.
    pub ingest_tps: f64,
    /// What the simulator would send if nothing waited: streams x its decode rate.
    pub demand_tps: f64,
    pub harness_cpu_ms_per_request: f64,
    /// Of `harness_cpu_ms_per_request`, the part in agentload's own code (not the kernel's);
    /// NaN at c=1, where the alternated floor's share of it is not split.
    pub harness_user_cpu_ms_per_request: f64,
    /// The floor client's CPU per request at the same concurrency: at c=1 the alternated
    /// blocking client's thread, above it [`StreamFloor`] connections run right after the
    /// level, in this process, against the same simulator.
    pub floor_cpu_ms_per_request: f64,
    /// Of `floor_cpu_ms_per_request`, the part in the floor's own code (above c=1; NaN at c=1).
    pub floor_user_cpu_ms_per_request: f64,
    /// The floor's first-token read lag at the same concurrency (above c=1), as `read_lag`.
    pub floor_read_lag: Option<Spread>,
    /// CPU the harness and the simulator used while the level ran, in % of
    /// one core: near 100 x their cores, one of them is saturated and the
    /// errors measure its backlog, not the harness's timestamps.
    pub harness_cpu_pct: f64,
    pub sim_cpu_pct: f64,
    /// Largest resident set while the level ran (MiB): the kernel's peak,
    /// reset before the level (where it cannot be reset, the resident set
    /// at the level's end).
    pub rss_mib: f64,
}

/// The floor client's numbers (one stream).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Floor {
    pub first: Errors,
    pub after_first: Errors,
    /// Whether its requests alternated with agentload's c=1 level (one floor request after
    /// each of agentload's); false: it ran alone before the levels.
    pub alternated: bool,
}

/// The streaming section's results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Streams {
    pub floor: Floor,
    pub levels: Vec<Level>,
    /// The CPUs the simulator and the client were pinned to, when they were.
    pub sim_cpus: Option<Vec<usize>>,
    pub client_cpus: Option<Vec<usize>>,
}

/// An `agentload sim` child for the streams' requests (echo, `max` slots, no batch slowdown:
/// an ideal server, so that the client is what is measured), on `sim_cpus` when given, over
/// TLS with a throwaway CA in `tls` when given; the child and its URL.
pub(super) async fn start_sim(
    max: usize,
    sim_cpus: Option<&[usize]>,
    tls: Option<&std::path::Path>,
) -> Result<(tokio::process::Child, String)> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let mut args: Vec<std::ffi::OsString> = [
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
        &SIM_DECODE_TPS.to_string(),
        "--decode-batch-slowdown",
        "0",
    ]
    .map(Into::into)
    .into();
    if let Some(cpus) = sim_cpus {
        let list: Vec<String> = cpus.iter().map(ToString::to_string).collect();
        args.extend(["--cpus".into(), list.join(",").into()]);
    }
    if let Some(dir) = tls {
        args.extend(["--tls-self-signed".into(), dir.as_os_str().to_owned()]);
    }
    let mut child = tokio::process::Command::new(exe)
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start agentload sim")?;
    let url = super::first_line(&mut child)
        .await
        .context("agentload sim did not print its URL")?;
    Ok((child, url))
}

/// Runs every level, and the floor beside c=1 (or first, without a c=1 level), against one
/// simulator child.
pub async fn run(opts: &Options) -> Result<(Streams, Vec<Row>)> {
    let max = opts.levels.iter().copied().max().unwrap_or(1);
    // `agentload bench --sim-cpus` pinned the process before its runtime started; a caller
    // that did not (the library's) is pinned here.
    let client_cpus = match &opts.sim_cpus {
        Some(sim) => {
            let client = super::affinity::others(sim).context("--sim-cpus")?;
            super::affinity::pin_process(&client)?;
            Some(client)
        }
        None => None,
    };
    let (mut child, url) = start_sim(max, opts.sim_cpus.as_deref(), None).await?;
    // About 4 bytes per token (the simulator's approximate tokenizer).
    let prompt = "word ".repeat(opts.answer_tokens.max(1));
    let body = serde_json::json!({
        "model": "bench",
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let mut floor_samples = Vec::new();
    let addr: std::net::SocketAddr = url
        .trim_start_matches("http://")
        .parse()
        .with_context(|| format!("agentload sim printed `{url}`, not http://ADDR"))?;
    let bytes = serde_json::to_vec(&body)?;
    // Written once and sent as shared slices, as a run's body builder sends them.
    let body = RequestBody::from(bytes.clone());
    let request: Arc<[u8]> = floor::request(&addr.to_string(), &bytes).into();
    let per_stream = opts.per_stream(1);
    // The floor alternates request by request with agentload's c=1 level, so that both see
    // the same moments of the machine's noise; without a c=1 level it runs alone, first.
    let alternated = opts.levels.contains(&1);
    let mut floor_client = None;
    if alternated {
        let connected = tokio::task::spawn_blocking(move || FloorClient::connect(addr, &bytes));
        floor_client = Some(connected.await.context("the floor client panicked")??);
    } else {
        let alone = tokio::task::spawn_blocking(move || floor::run(addr, &bytes, per_stream));
        floor_samples = alone.await.context("the floor client panicked")??;
    }
    let mut levels = Vec::new();
    for &n in &opts.levels {
        let alongside = if n == 1 { floor_client.take() } else { None };
        let (mut l, floor) = level(
            &url,
            &Transport::default(),
            child.id(),
            n,
            opts.per_stream(n),
            &body,
            alongside,
        )
        .await?;
        if let Some(samples) = floor {
            floor_samples = samples;
        }
        if n > 1 {
            let floor = stream_floor(addr, n, opts.per_stream(n), &request).await?;
            l.floor_cpu_ms_per_request = floor.cpu_ms_per_request;
            l.floor_user_cpu_ms_per_request = floor.user_cpu_ms_per_request;
            l.floor_read_lag = floor.read_lag;
        }
        levels.push(l);
    }
    let floor = Floor {
        first: Errors::of(&floor_samples[..1.min(floor_samples.len())]),
        after_first: Errors::of(&floor_samples[1.min(floor_samples.len())..]),
        alternated,
    };
    for l in &mut levels {
        l.ratio_to_floor_p50 = ratio(l.after_first.total.p50_ms, floor.after_first.total.p50_ms);
        l.ratio_to_floor_p99 = ratio(l.after_first.total.p99_ms, floor.after_first.total.p99_ms);
    }
    child.kill().await.ok();
    let out = Streams {
        floor,
        levels,
        sim_cpus: opts.sim_cpus.clone(),
        client_cpus,
    };
    let rows = rows(&out);
    Ok((out, rows))
}

fn rows(s: &Streams) -> Vec<Row> {
    let mut rows = Vec::new();
    let errors = |rows: &mut Vec<Row>, what: &str, e: &Errors| {
        for (name, spread) in [
            ("TTFT error", e.total),
            ("request path", e.request_path),
            ("response path", e.response_path),
        ] {
            spread_rows(rows, &format!("{what} {name}"), spread);
        }
    };
    let n = s.floor.after_first.requests;
    let how = if s.floor.alternated {
        ", alternated"
    } else {
        ""
    };
    errors(
        &mut rows,
        &format!("floor c=1 ({n} req{how})"),
        &s.floor.after_first,
    );
    for l in &s.levels {
        let c = format!("c={}", l.streams);
        errors(
            &mut rows,
            &format!("{c} ({} req)", l.after_first.requests),
            &l.after_first,
        );
        for (what, value, unit) in [
            ("p50 error / floor p50", l.ratio_to_floor_p50, "x"),
            ("p99 error / floor p99", l.ratio_to_floor_p99, "x"),
            ("first request TTFT error p99", l.first.total.p99_ms, "ms"),
            ("connection set-up", l.setup_ms, "ms"),
            ("client ingest", l.ingest_tps, "tok/s"),
            ("ingest / demand", l.ingest_tps / l.demand_tps, "x"),
            ("harness CPU", l.harness_cpu_ms_per_request, "ms/req"),
            ("floor CPU", l.floor_cpu_ms_per_request, "ms/req"),
            (
                "harness CPU / floor",
                ratio(l.harness_cpu_ms_per_request, l.floor_cpu_ms_per_request),
                "x",
            ),
            ("harness CPU busy", l.harness_cpu_pct, "% core"),
            ("simulator CPU busy", l.sim_cpu_pct, "% core"),
            ("harness RSS", l.rss_mib, "MiB"),
        ] {
            rows.push(Row::new("streams", format!("{c} {what}"), value, unit));
        }
        if l.streams > 1 {
            for (what, value, unit) in [
                (
                    "harness CPU in user space",
                    l.harness_user_cpu_ms_per_request,
                    "ms/req",
                ),
                (
                    "floor CPU in user space",
                    l.floor_user_cpu_ms_per_request,
                    "ms/req",
                ),
                (
                    "harness CPU in the kernel / floor's",
                    ratio(
                        l.harness_cpu_ms_per_request - l.harness_user_cpu_ms_per_request,
                        l.floor_cpu_ms_per_request - l.floor_user_cpu_ms_per_request,
                    ),
                    "x",
                ),
            ] {
                rows.push(Row::new("streams", format!("{c} {what}"), value, unit));
            }
        }
        if let Some(lag) = l.read_lag {
            spread_rows(&mut rows, &format!("{c} first-token read lag"), lag);
        }
        if let Some(lag) = l.floor_read_lag {
            spread_rows(&mut rows, &format!("{c} floor first-token read lag"), lag);
        }
        if l.failed > 0 {
            rows.push(Row::new(
                "streams",
                format!("{c} failed requests"),
                l.failed as f64,
                "req",
            ));
        }
    }
    if let Some(best) = s
        .levels
        .iter()
        .filter(|l| l.after_first.total.p99_ms < 1.0 && l.failed == 0)
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
    rows
}

/// The p50 and p99 rows of `what`.
fn spread_rows(rows: &mut Vec<Row>, what: &str, spread: Spread) {
    for (p, ms) in [("p50", spread.p50_ms), ("p99", spread.p99_ms)] {
        rows.push(Row::new("streams", format!("{what} {p}"), ms, "ms"));
    }
}

/// What the floor client did while it alternated with a level: its samples, and the wall and
/// CPU time it took (left out of the level's rates).
struct Alongside {
    samples: Vec<Sample>,
    wall: Duration,
    cpu_s: f64,
}

/// Sends one floor request on a blocking thread; the client comes back with its sample, the
/// wall time and the CPU time of the thread.
async fn floor_request(mut c: FloorClient) -> Result<(FloorClient, Sample, Duration, f64)> {
    tokio::task::spawn_blocking(move || {
        let (t0, cpu0) = (Instant::now(), thread_cpu_seconds());
        let sample = c.send()?;
        let cpu = thread_cpu_seconds() - cpu0;
        Ok((c, sample, t0.elapsed(), cpu))
    })
    .await
    .context("the floor client panicked")?
}

/// CPU seconds the calling thread has used.
fn thread_cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to fill; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// One level of `n` streams; with `floor` (at c=1), a floor request after each of the
/// stream's requests, whose samples come back beside the level.
pub(super) async fn level(
    url: &str,
    transport: &Transport,
    sim: Option<u32>,
    n: usize,
    per_stream: usize,
    body: &RequestBody,
    floor: Option<FloorClient>,
) -> Result<(Level, Option<Vec<Sample>>)> {
    let client = Arc::new(ChatClient::new(&ClientOptions {
        endpoint: url.to_owned(),
        api_key: None,
        turn_timeout: Duration::from_secs(120),
        max_connections: n,
        max_response_bytes: 0,
        timestamps: Timestamps::default(),
        first_token: Default::default(),
        reuse_connections: true,
        transport: transport.clone(),
        ..Default::default()
    })?);
    // The level's peak resident set, without a sampler on the runtime being
    // measured: the kernel's high-water mark, reset before the level.
    let peak_reset = super::reset_peak_rss();
    let setup = client
        .warm_up(n)
        .await
        .with_context(|| format!("c={n}: cannot open the connections"))?;
    let sim_cpu = || sim.and_then(super::process_cpu_seconds);
    let (cpu0, sim_cpu0) = (crate::sweep::cpu_times(), sim_cpu());
    let started = Instant::now();
    let mut floor = floor;
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = client.clone();
            let body = body.clone();
            let mut floor = floor.take();
            tokio::spawn(async move {
                let mut samples = Vec::with_capacity(per_stream);
                let mut alongside = floor.as_ref().map(|_| Alongside {
                    samples: Vec::with_capacity(per_stream),
                    wall: Duration::ZERO,
                    cpu_s: 0.0,
                });
                for r in 0..per_stream {
                    let ex = client
                        .send_json(body.clone(), true, &format!("bench-{i}-{r}"))
                        .await;
                    let t = &ex.timeline;
                    let sample = ex.result.as_ref().ok().and_then(|a| {
                        Sample::of(
                            t.issued,
                            t.first_token?,
                            a.server_timestamps.as_ref()?.get(),
                        )
                    });
                    let lag = t
                        .first_token_read
                        .zip(t.first_token)
                        .map(|(read, arrived)| read.duration_since(arrived).as_nanos() as i64);
                    samples.push(sample.map(|s| (s, t.token_chunks_ns.len(), lag)));
                    if let (Some(c), Some(a)) = (floor.take(), alongside.as_mut()) {
                        let (c, sample, wall, cpu) = floor_request(c).await?;
                        a.samples.push(sample);
                        a.wall += wall;
                        a.cpu_s += cpu;
                        floor = Some(c);
                    }
                }
                anyhow::Ok((samples, alongside))
            })
        })
        .collect();
    let (mut first, mut rest, mut lags) = (Vec::new(), Vec::new(), Vec::new());
    let mut chunks = 0usize;
    let mut failed = 0usize;
    let mut floor_done: Option<Alongside> = None;
    for t in tasks {
        let (samples, alongside) = t.await.context("stream task panicked")??;
        floor_done = floor_done.or(alongside);
        for (r, s) in samples.into_iter().enumerate() {
            match s {
                Some((sample, c, lag)) => {
                    if r == 0 {
                        first.push(sample);
                    } else {
                        rest.push(sample);
                        lags.extend(lag);
                    }
                    chunks += c;
                }
                None => failed += 1,
            }
        }
    }
    let (floor_wall, floor_cpu) = floor_done
        .as_ref()
        .map_or((0.0, 0.0), |a| (a.wall.as_secs_f64(), a.cpu_s));
    let floor_requests = floor_done.as_ref().map_or(0, |a| a.samples.len());
    let wall = started.elapsed().as_secs_f64() - floor_wall;
    let used = cpu_used(cpu0);
    let cpu = used.user + used.system - floor_cpu;
    let sim_cpu = sim_cpu0.zip(sim_cpu()).map_or(f64::NAN, |(a, b)| b - a);
    let rss_kib = rss_kib().map_or(0, |(peak, now)| if peak_reset { peak } else { now });
    let requests = n * per_stream;
    // With one request per stream there is no "after the first": all of them are it.
    let after_first = if rest.is_empty() {
        Errors::of(&first)
    } else {
        Errors::of(&rest)
    };
    let level = Level {
        streams: n,
        requests,
        failed,
        setup_ms: setup.ms,
        first: Errors::of(&first),
        ratio_to_floor_p50: f64::NAN,
        ratio_to_floor_p99: f64::NAN,
        after_first,
        read_lag: (!lags.is_empty()).then(|| Spread::of(lags.into_iter())),
        ingest_tps: chunks as f64 / wall,
        demand_tps: (n * SIM_DECODE_TPS) as f64,
        harness_cpu_ms_per_request: cpu * 1e3 / requests as f64,
        harness_user_cpu_ms_per_request: if floor_requests > 0 {
            f64::NAN
        } else {
            used.user * 1e3 / requests as f64
        },
        floor_user_cpu_ms_per_request: f64::NAN,
        floor_read_lag: None,
        floor_cpu_ms_per_request: if floor_requests > 0 {
            floor_cpu * 1e3 / floor_requests as f64
        } else {
            f64::NAN
        },
        harness_cpu_pct: cpu / wall * 100.0,
        // While the floor alternated, the simulator also served its requests.
        sim_cpu_pct: sim_cpu / (wall + floor_wall) * 100.0,
        rss_mib: rss_kib as f64 / 1024.0,
    };
    Ok((level, floor_done.map(|a| a.samples)))
}

/// The floor at `n` streams: `n` connections (opened before the measure), each sending
/// `per_stream` requests one after another; its CPU per request, ms, in all and in user space
/// (this process's CPU while it ran: nothing else runs in it meanwhile), and the first-token
/// read lag of the requests after each stream's first.
async fn stream_floor(
    addr: std::net::SocketAddr,
    n: usize,
    per_stream: usize,
    request: &Arc<[u8]>,
) -> Result<FloorLevel> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(
            StreamFloor::connect(addr)
                .await
                .with_context(|| format!("floor c={n}: cannot open the connections"))?,
        );
    }
    let cpu0 = crate::sweep::cpu_times();
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let request = request.clone();
            tokio::spawn(async move {
                let mut lags = Vec::with_capacity(per_stream);
                for r in 0..per_stream {
                    let seen = conn.exchange(&request).await?;
                    if r > 0 {
                        lags.extend(seen.read_lag_ns);
                    }
                }
                std::io::Result::Ok(lags)
            })
        })
        .collect();
    let mut lags = Vec::new();
    for t in tasks {
        lags.extend(
            t.await
                .context("a floor stream panicked")?
                .with_context(|| format!("floor c={n}"))?,
        );
    }
    let cpu = cpu_used(cpu0);
    let lag = (!lags.is_empty()).then(|| Spread::of(lags.into_iter()));
    let per_request = |s: f64| s * 1e3 / (n * per_stream) as f64;
    Ok(FloorLevel {
        cpu_ms_per_request: per_request(cpu.user + cpu.system),
        user_cpu_ms_per_request: per_request(cpu.user),
        read_lag: lag,
    })
}

/// What the floor measured at one level above c=1.
struct FloorLevel {
    cpu_ms_per_request: f64,
    user_cpu_ms_per_request: f64,
    read_lag: Option<Spread>,
}

/// This process's CPU time since `before` (NaN where it cannot be read).
fn cpu_used(before: Option<CpuTimes>) -> CpuTimes {
    before.zip(crate::sweep::cpu_times()).map_or(
        CpuTimes {
            user: f64::NAN,
            system: f64::NAN,
        },
        |(a, b)| CpuTimes {
            user: b.user - a.user,
            system: b.system - a.system,
        },
    )
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_concurrency_gets_more_requests_per_stream() {
        let o = Options {
            levels: vec![1, 4, 1000],
            requests_per_stream: 5,
            samples: 600,
            answer_tokens: 8,
            sim_cpus: None,
        };
        assert_eq!(o.per_stream(1), 600);
        assert_eq!(o.per_stream(4), 150);
        assert_eq!(o.per_stream(1000), 5);
    }
}
