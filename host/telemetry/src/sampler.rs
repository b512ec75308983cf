//! Sampling during a phase: one task per source, on its own interval and
//! (for scrapes) its own HTTP client, off the request path. Every reading,
//! failed ones included, is written to `telemetry.jsonl` by a writer thread
//! as it arrives; the summary is made from them when the phase ends.
//!
//! A phase's first reading of every source is taken before its first
//! request and the last one after its last response, so a counter's
//! increase covers the whole phase.

use crate::gpus::Gpus;
use crate::known::Family;
use crate::page;
use crate::power::PowerSource;
use crate::sample::{GpuSample, Sample};
use crate::summary::{self, SourceInfo, TelemetrySummary};
use crate::TelemetryError;
use agentload_client::Transport;
use agentload_config::TelemetryConfig;
use agentload_fs::OutDir;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// A page larger than this is not a metrics page.
const MAX_PAGE_BYTES: usize = 16 << 20;

/// What a run samples, opened once (NVML loaded, the scrape client built)
/// and started for each phase.
pub struct Telemetry {
    interval: Duration,
    timeout: Duration,
    sources: Arc<Vec<Source>>,
    client: reqwest::Client,
}

enum Source {
    Scrape {
        name: String,
        url: String,
        capture: Vec<String>,
    },
    Gpus(Arc<dyn Gpus>),
    Power {
        source: PowerSource,
        interval: Duration,
    },
}

impl Telemetry {
    /// The run's telemetry: `config`'s sources (NVML loaded now, so a
    /// machine without it fails before any request; a scrape path alone on
    /// `endpoint`) and the power command or file; `None` when nothing is
    /// configured.
    pub fn open(
        config: Option<&TelemetryConfig>,
        endpoint: &str,
        power: Option<(PowerSource, Duration)>,
        transport: &Transport,
    ) -> Result<Option<Self>, TelemetryError> {
        let gpus = match config.and_then(|c| c.nvml.as_ref()) {
            Some(nvml) => {
                Some(Arc::new(crate::gpus::Nvml::open(nvml.devices.as_deref())?) as Arc<dyn Gpus>)
            }
            None => None,
        };
        Self::over(config, endpoint, gpus, power, transport)
    }

    /// As [`Telemetry::open`], with the GPUs given (a test double), over the default
    /// transport (Mozilla's roots, no proxy).
    pub fn with_sources(
        config: Option<&TelemetryConfig>,
        endpoint: &str,
        gpus: Option<Arc<dyn Gpus>>,
        power: Option<(PowerSource, Duration)>,
    ) -> Result<Option<Self>, TelemetryError> {
        Self::over(config, endpoint, gpus, power, &Transport::default())
    }

    /// The sources, scraped over `transport` (the run's TLS settings and proxy choice).
    fn over(
        config: Option<&TelemetryConfig>,
        endpoint: &str,
        gpus: Option<Arc<dyn Gpus>>,
        power: Option<(PowerSource, Duration)>,
        transport: &Transport,
    ) -> Result<Option<Self>, TelemetryError> {
        let defaults = TelemetryConfig::default();
        let config = config.unwrap_or(&defaults);
        let mut sources: Vec<Source> = config
            .scrape
            .iter()
            .enumerate()
            .map(|(i, t)| Source::Scrape {
                name: config.scrape_name(i),
                url: config.scrape_url(i, endpoint),
                capture: t.capture.clone(),
            })
            .collect();
        sources.extend(gpus.map(Source::Gpus));
        sources.extend(power.map(|(source, interval)| Source::Power { source, interval }));
        if sources.is_empty() {
            return Ok(None);
        }
        let client = transport
            .reqwest()
            .user_agent(concat!("agentload-telemetry/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(1)
            .build()
            .map_err(|e| TelemetryError::Client(e.to_string()))?;
        Ok(Some(Self {
            interval: Duration::from_secs_f64(config.interval_s),
            timeout: Duration::from_secs_f64(config.timeout_s),
            sources: Arc::new(sources),
            client,
        }))
    }

    /// Starts sampling a phase whose clock starts at `origin`: takes every
    /// source's first reading (before the phase's first request), then
    /// samples until [`Running::finish`]. Samples go to `file` in the results
    /// directory `out` (appended to when `segment` > 0, a resumed run);
    /// `shown` is its name in the summary.
    pub async fn start(
        &self,
        origin: Instant,
        out: &OutDir,
        file: &Path,
        shown: &str,
        segment: u32,
    ) -> Result<Running, TelemetryError> {
        let writer = Writer::open(out, file, segment > 0)?;
        let shared = Arc::new(Shared {
            origin,
            segment,
            state: Mutex::new(State {
                samples: Vec::new(),
                families: vec![BTreeSet::new(); self.sources.len()],
                failing: vec![false; self.sources.len()],
                noted: vec![false; self.sources.len()],
            }),
            lines: Mutex::new(Some(writer.lines)),
        });
        let reader = Reader {
            sources: self.sources.clone(),
            client: self.client.clone(),
            timeout: self.timeout,
            shared: shared.clone(),
        };
        reader.read_all().await;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let loops = (0..self.sources.len())
            .map(|i| {
                let reader = reader.clone();
                let mut stopped = stopped.clone();
                let every = match &self.sources[i] {
                    Source::Power { interval, .. } => *interval,
                    _ => self.interval,
                };
                tokio::spawn(async move {
                    let mut tick =
                        tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tokio::select! {
                            _ = tick.tick() => {}
                            _ = stopped.changed() => break,
                        }
                        // A reading under way finishes (and is kept) before
                        // the loop looks at the stop again.
                        reader.read(i).await;
                    }
                })
            })
            .collect();
        Ok(Running {
            reader,
            stop,
            loops,
            thread: Some(writer.thread),
            interval_s: self.interval.as_secs_f64(),
            shown: shown.to_owned(),
            path: out.path(file),
        })
    }
}

/// One source read once ([`Telemetry::probe`]).
#[derive(Debug, Clone)]
pub struct Probe {
    pub name: String,
    /// `prometheus`, `nvml`, `power_command` or `power_file`.
    pub kind: String,
    pub url: Option<String>,
    /// The projects whose metrics the page held.
    pub families: Vec<String>,
    pub sample: Sample,
}

impl Telemetry {
    /// Reads every source once, side by side, and writes nothing: what an
    /// operator checks before a long run (`agentload telemetry`).
    pub async fn probe(&self) -> Vec<Probe> {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..self.sources.len() {
            let (sources, client, timeout) =
                (self.sources.clone(), self.client.clone(), self.timeout);
            set.spawn(async move {
                let started = Instant::now();
                let (mut sample, families) = sources[i].read(&client, timeout).await;
                sample.took_ms = started.elapsed().as_secs_f64() * 1e3;
                let info = sources[i].info();
                (
                    i,
                    Probe {
                        name: info.name,
                        kind: info.kind,
                        url: info.url,
                        families: families.iter().map(|f| f.name().to_owned()).collect(),
                        sample,
                    },
                )
            });
        }
        let mut probes: Vec<(usize, Probe)> = set.join_all().await;
        probes.sort_by_key(|(i, _)| *i);
        probes.into_iter().map(|(_, p)| p).collect()
    }
}

/// A phase being sampled.
pub struct Running {
    reader: Reader,
    /// Ends the loops, each after the reading it is taking.
    stop: tokio::sync::watch::Sender<bool>,
    loops: Vec<tokio::task::JoinHandle<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
    interval_s: f64,
    shown: String,
    path: PathBuf,
}

impl Running {
    /// Stops sampling, takes every source's last reading (after the
    /// phase's last response) and summarizes; `window` is the phase's
    /// steady-state window (ns on its clock), for the power over it.
    pub async fn finish(mut self, window: Option<(u64, u64)>) -> TelemetrySummary {
        let _ = self.stop.send(true);
        for l in self.loops.drain(..) {
            let _ = l.await;
        }
        self.reader.read_all().await;
        drop(
            self.reader
                .shared
                .lines
                .lock()
                .expect("telemetry lines")
                .take(),
        );
        let thread = self.thread.take().expect("finished once");
        let written = tokio::task::spawn_blocking(move || thread.join())
            .await
            .map_err(|e| e.to_string())
            .and_then(|joined| joined.map_err(|_| "the telemetry writer panicked".to_owned()))
            .and_then(|r| r);
        let file_error = written
            .err()
            .map(|e| format!("cannot write {}: {e}", self.path.display()));
        if let Some(e) = &file_error {
            agentload_console::line(&format!(
                "warning: telemetry: {e}; the summary keeps every sample"
            ));
        }
        let state = self.reader.shared.state.lock().expect("telemetry state");
        let mut sources = Vec::new();
        let mut power: Option<(u8, summary::PowerSummary)> = None;
        for (i, source) in self.reader.sources.iter().enumerate() {
            let info = source.info();
            let samples: Vec<&Sample> = state
                .samples
                .iter()
                .filter(|s| s.source == info.name)
                .collect();
            let families = state.families[i]
                .iter()
                .map(|f| f.name().to_owned())
                .collect();
            sources.push(summary::source(&info, &samples, families));
            if power
                .as_ref()
                .is_some_and(|(rank, _)| *rank <= info.power_rank)
            {
                continue;
            }
            if let Some(p) = summary::power(&info.name, &samples, window) {
                if p.samples > 0 || power.is_none() {
                    power = Some((info.power_rank, p));
                }
            }
        }
        TelemetrySummary {
            interval_s: self.interval_s,
            sources,
            power: power.map(|(_, p)| p),
            energy_per_output_token_j: None,
            usage_check: None,
            file: self.shown.clone(),
            file_error,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for l in &self.loops {
            l.abort();
        }
    }
}

struct Shared {
    origin: Instant,
    segment: u32,
    state: Mutex<State>,
    lines: Mutex<Option<mpsc::Sender<String>>>,
}

struct State {
    /// Every reading, without its captured metrics (those are in the file).
    samples: Vec<Sample>,
    families: Vec<BTreeSet<Family>>,
    failing: Vec<bool>,
    /// Whether the source's notes were shown (once per source).
    noted: Vec<bool>,
}

#[derive(Clone)]
struct Reader {
    sources: Arc<Vec<Source>>,
    client: reqwest::Client,
    timeout: Duration,
    shared: Arc<Shared>,
}

impl Reader {
    async fn read_all(&self) {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..self.sources.len() {
            let reader = self.clone();
            set.spawn(async move { reader.read(i).await });
        }
        while set.join_next().await.is_some() {}
    }

    async fn read(&self, i: usize) {
        let sent = self.shared.origin.elapsed();
        let (mut sample, families) = self.sources[i].read(&self.client, self.timeout).await;
        let received = self.shared.origin.elapsed();
        sample.t_ns = ((sent + received) / 2).as_nanos() as u64;
        sample.took_ms = (received - sent).as_secs_f64() * 1e3;
        sample.segment = self.shared.segment;
        self.record(i, sample, families);
    }

    fn record(&self, i: usize, sample: Sample, families: BTreeSet<Family>) {
        if let Some(lines) = self.shared.lines.lock().expect("telemetry lines").as_ref() {
            let line = serde_json::to_string(&sample).expect("a sample serialises");
            let _ = lines.send(line);
        }
        let mut state = self.shared.state.lock().expect("telemetry state");
        let name = &sample.source;
        let failing = !sample.ok() && sample.fields.is_empty() && sample.gpus.is_empty();
        if failing != state.failing[i] {
            state.failing[i] = failing;
            let at = sample.t_ns as f64 / 1e9;
            agentload_console::line(&match &sample.error {
                Some(e) if failing => format!(
                    "warning: telemetry source {name} failed at {at:.1} s: {e} (recorded; the run goes on)"
                ),
                _ => format!("telemetry source {name} answers again at {at:.1} s"),
            });
        }
        if !sample.notes.is_empty() && !state.noted[i] {
            state.noted[i] = true;
            agentload_console::line(&format!(
                "warning: telemetry source {name} at {:.1} s: {} (in telemetry.jsonl; the rest of \
                 the page is used, the run goes on)",
                sample.t_ns as f64 / 1e9,
                sample.notes.join("; ")
            ));
        }
        state.families[i].extend(families);
        state.samples.push(Sample {
            captured: Default::default(),
            ..sample
        });
    }
}

impl Source {
    fn info(&self) -> SourceInfo {
        match self {
            Source::Scrape { name, url, .. } => SourceInfo {
                name: name.clone(),
                kind: "prometheus".into(),
                url: Some(url.clone()),
                power_rank: 1,
            },
            Source::Gpus(g) => SourceInfo {
                name: g.name().to_owned(),
                kind: "nvml".into(),
                url: None,
                power_rank: 0,
            },
            Source::Power { source, .. } => SourceInfo {
                name: "power".into(),
                kind: source.kind().into(),
                url: None,
                power_rank: 2,
            },
        }
    }

    /// One reading (its time is set by the caller).
    async fn read(
        &self,
        client: &reqwest::Client,
        timeout: Duration,
    ) -> (Sample, BTreeSet<Family>) {
        let mut sample = Sample {
            source: self.info().name,
            ..Sample::default()
        };
        let mut families = BTreeSet::new();
        match self {
            Source::Scrape { url, capture, .. } => match scrape(client, url, timeout).await {
                Ok(text) => {
                    let mapped = page::map(&text, capture);
                    sample.fields = mapped.fields;
                    sample.gpus = mapped.gpus;
                    sample.captured = mapped.captured;
                    sample.error = mapped.error;
                    sample.notes = mapped.notes;
                    families = mapped.families;
                }
                Err(e) => sample.error = Some(e),
            },
            Source::Gpus(gpus) => {
                let gpus = gpus.clone();
                let read = tokio::task::spawn_blocking(move || {
                    gpus.indices()
                        .iter()
                        .map(|&i| gpus.read(i))
                        .collect::<Vec<_>>()
                });
                match tokio::time::timeout(timeout, read).await {
                    Ok(Ok(readings)) => {
                        let (ok, errors): (Vec<_>, Vec<_>) =
                            readings.into_iter().partition(Result::is_ok);
                        sample.gpus = ok.into_iter().map(Result::unwrap).collect();
                        let errors: Vec<String> =
                            errors.into_iter().filter_map(Result::err).collect();
                        sample.error = (!errors.is_empty()).then(|| errors.join("; "));
                        gpu_fields(&mut sample);
                    }
                    Ok(Err(e)) => sample.error = Some(format!("the GPU read panicked: {e}")),
                    Err(_) => {
                        sample.error =
                            Some(format!("timed out after {:.1} s", timeout.as_secs_f64()))
                    }
                }
            }
            Source::Power { source, .. } => {
                match tokio::time::timeout(timeout.max(Duration::from_secs(5)), source.read()).await
                {
                    Ok(Ok(w)) => {
                        sample.fields.insert("power_w".into(), w);
                    }
                    Ok(Err(e)) => sample.error = Some(e),
                    Err(_) => sample.error = Some(format!("{} timed out", source.kind())),
                }
            }
        }
        (sample, families)
    }
}

/// The GPUs' totals as fields: power and memory summed, utilisation averaged.
fn gpu_fields(sample: &mut Sample) {
    let each = |f: fn(&GpuSample) -> Option<f64>| -> Vec<f64> {
        sample.gpus.iter().filter_map(f).collect()
    };
    let power = each(|g| g.power_w);
    let util = each(|g| g.util_pct);
    let memory = each(|g| g.memory_used_mib);
    let mut fields = std::collections::BTreeMap::new();
    if !power.is_empty() {
        fields.insert("power_w".to_owned(), power.iter().sum());
    }
    if !util.is_empty() {
        fields.insert(
            "gpu_util_pct".to_owned(),
            util.iter().sum::<f64>() / util.len() as f64,
        );
    }
    if !memory.is_empty() {
        fields.insert("gpu_memory_used_mib".to_owned(), memory.iter().sum());
    }
    sample.fields = fields;
}

/// GETs a metrics page: a refusal, a timeout, an HTTP error or an oversized
/// page is an error naming its cause.
async fn scrape(client: &reqwest::Client, url: &str, timeout: Duration) -> Result<String, String> {
    let timed_out = || format!("timed out after {:.1} s", timeout.as_secs_f64());
    let cause = |e: reqwest::Error| {
        if e.is_timeout() {
            timed_out()
        } else {
            chain(&e)
        }
    };
    let mut response = client
        .get(url)
        .timeout(timeout)
        .send()
        .await
        .map_err(cause)?;
    let status = response.status();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(cause)? {
        if body.len() + chunk.len() > MAX_PAGE_BYTES {
            return Err(format!(
                "the page is larger than {} MiB",
                MAX_PAGE_BYTES >> 20
            ));
        }
        body.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(format!(
            "HTTP {}: {}",
            status.as_u16(),
            agentload_console::quote(&body, 160)
        ));
    }
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// An error and its causes, `a: b: c` (reqwest's own message names only
/// the URL; the cause, e.g. "Connection refused", is in its sources).
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Opens `file` in `out` to append to (made when missing): a process killed
/// while writing can leave a partial last line, and a resumed run appends
/// after the last whole one.
fn open_after_last_line(out: &OutDir, file: &Path) -> std::io::Result<std::fs::File> {
    use std::io::{Read as _, Seek as _};
    let mut f = out.open_rw(file, true)?;
    let mut text = Vec::new();
    f.read_to_end(&mut text)?;
    let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if whole < text.len() {
        f.set_len(whole as u64)?;
    }
    f.seek(std::io::SeekFrom::End(0))?;
    Ok(f)
}

/// The writer thread and the channel it reads lines from.
struct Writer {
    lines: mpsc::Sender<String>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl Writer {
    fn open(out: &OutDir, file: &Path, append: bool) -> Result<Self, TelemetryError> {
        let path = out.path(file);
        let failed = |source| TelemetryError::File {
            path: path.clone(),
            source,
        };
        let file = if append {
            open_after_last_line(out, file)
        } else {
            out.open_rw(file, true)
                .map_err(std::io::Error::from)
                .and_then(|f| f.set_len(0).map(|()| f))
        }
        .map_err(failed)?;
        let (lines, rx) = mpsc::channel::<String>();
        let thread = std::thread::Builder::new()
            .name("agentload-telemetry".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(file);
                for line in rx {
                    // A line at a time, so a killed run keeps what it sampled.
                    writeln!(out, "{line}")
                        .and_then(|()| out.flush())
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            })
            .map_err(|source| TelemetryError::File {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self { lines, thread })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_config::ScrapeTarget;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// `t` sampling into `dir/telemetry.jsonl` from `origin`, as segment `segment`.
    async fn start_in(t: &Telemetry, dir: &Path, origin: Instant, segment: u32) -> Running {
        t.start(
            origin,
            &OutDir::new(dir),
            Path::new("telemetry.jsonl"),
            "telemetry.jsonl",
            segment,
        )
        .await
        .unwrap()
    }

    /// A one-route HTTP server: `answer(n)` is the status and body of the
    /// n-th request.
    async fn serve(answer: impl Fn(u64) -> (u16, String) + Send + Sync + 'static) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let answer = Arc::new(answer);
        let count = Arc::new(AtomicU64::new(0));
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let (answer, count) = (answer.clone(), count.clone());
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let (status, body) = answer(count.fetch_add(1, Ordering::SeqCst));
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: text/plain; version=0.0.4\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = socket.write_all(head.as_bytes()).await;
                    let _ = socket.write_all(body.as_bytes()).await;
                });
            }
        });
        url
    }

    /// A server that accepts and never answers.
    async fn silent() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                held.push(listener.accept().await.unwrap());
            }
        });
        url
    }

    fn refused() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/metrics", listener.local_addr().unwrap())
    }

    fn config(urls: &[&str]) -> TelemetryConfig {
        TelemetryConfig {
            interval_s: 0.05,
            timeout_s: 0.3,
            scrape: urls
                .iter()
                .enumerate()
                .map(|(i, u)| ScrapeTarget {
                    url: u.to_string(),
                    name: Some(["server", "refused", "silent", "plain"][i].into()),
                    capture: vec![],
                })
                .collect(),
            nvml: None,
        }
    }

    /// Waits until `path` holds `n` lines that `want` takes: a loaded machine samples
    /// late, so up to a minute.
    async fn until_lines(path: &Path, n: usize, want: impl Fn(&Sample) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let got = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Sample>(l).ok())
                .filter(|l| want(l))
                .count();
            if got >= n {
                return;
            }
            assert!(Instant::now() < deadline, "{got} of {n} lines in a minute");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn lines(path: &Path) -> Vec<Sample> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_phase_is_sampled_from_before_its_first_request_to_after_its_last() {
        let url = serve(|n| {
            (
                200,
                format!(
                    "llamacpp:tokens_predicted_total {}\nllamacpp:requests_processing 1\n",
                    10 * n
                ),
            )
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telemetry.jsonl");
        let t = Telemetry::with_sources(Some(&config(&[&url])), "http://127.0.0.1:9", None, None)
            .unwrap()
            .unwrap();
        let origin = Instant::now();
        let running = start_in(&t, dir.path(), origin, 0).await;
        let started = origin.elapsed().as_nanos() as u64;
        until_lines(&file, 3, |_| true).await;
        let before_finish = origin.elapsed().as_nanos() as u64;
        let s = running.finish(None).await;
        let written = lines(&file);
        // The first reading was taken before start returned (before any
        // request), the last one after finish was called (after the last
        // response).
        assert!(written[0].t_ns < started);
        assert!(written.last().unwrap().t_ns > before_finish);
        let server = &s.sources[0];
        assert_eq!(server.samples, written.len());
        assert!(server.samples >= 4, "{server:?}");
        assert_eq!(server.failed, 0);
        assert_eq!(server.families, ["llama.cpp"]);
        let c = &server.counters["generation_tokens_total"];
        assert_eq!(c.first, 0.0);
        assert_eq!(c.increase, 10.0 * (server.samples as f64 - 1.0));
        assert_eq!(server.gauges["requests_running"].mean, 1.0);
        assert!(written.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
        assert!(written
            .iter()
            .all(|w| w.took_ms >= 0.0 && w.source == "server"));
        assert_eq!(s.file, "telemetry.jsonl");
        assert_eq!(s.file_error, None);
        assert_eq!(s.power, None);
    }

    #[tokio::test]
    async fn refused_silent_and_wrong_pages_are_recorded_with_their_cause_and_sampling_goes_on() {
        let good = serve(|_| (200, "vllm:num_requests_running{engine=\"0\"} 2\n".into())).await;
        let silent = silent().await;
        let plain = serve(|_| {
            (
                501,
                "{\"error\":{\"message\":\"This server does not support metrics endpoint.\"}}"
                    .into(),
            )
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telemetry.jsonl");
        let urls = [good.as_str(), &refused(), &silent, &plain];
        let t = Telemetry::with_sources(Some(&config(&urls)), "http://127.0.0.1:9", None, None)
            .unwrap()
            .unwrap();
        let running = start_in(&t, dir.path(), Instant::now(), 0).await;
        until_lines(&file, 3, |l| l.source == "server").await;
        for name in ["refused", "silent", "plain"] {
            until_lines(&file, 2, |l| l.source == name).await;
        }
        let s = running.finish(None).await;
        let by = |name: &str| s.sources.iter().find(|x| x.name == name).unwrap();
        assert_eq!(by("server").failed, 0);
        assert!(
            by("server").samples >= 3,
            "the good source kept its pace: {:?}",
            by("server")
        );
        for (name, cause) in [
            ("refused", "refused"),
            ("silent", "timed out after 0.3 s"),
            ("plain", "http 501: `{\"error\""),
        ] {
            let x = by(name);
            assert!(x.samples >= 2 && x.failed == x.samples, "{x:?}");
            let e = &x.first_error.as_ref().unwrap().error;
            assert!(e.to_lowercase().contains(cause), "{name}: {e}");
            assert!(x.gauges.is_empty() && x.counters.is_empty());
        }
        let failed_lines = lines(&file).iter().filter(|l| !l.ok()).count();
        assert_eq!(
            failed_lines,
            by("refused").failed + by("silent").failed + by("plain").failed
        );
    }

    /// GPUs whose energy counters advance 100 J per reading; GPU 1 fails
    /// its reads from the `fail_from`-th on.
    struct FakeGpus {
        reads: AtomicU64,
        fail_from: u64,
    }

    impl Gpus for FakeGpus {
        fn name(&self) -> &str {
            "nvml"
        }
        fn indices(&self) -> &[u32] {
            &[0, 1]
        }
        fn read(&self, index: u32) -> Result<GpuSample, String> {
            let n = self.reads.fetch_add(1, Ordering::SeqCst) / 2;
            if index == 1 && n >= self.fail_from {
                return Err("GPU 1 power: GPU is lost".into());
            }
            Ok(GpuSample {
                power_w: Some(if index == 0 { 400.0 } else { 200.0 }),
                energy_j: Some(1e6 * f64::from(index + 1) + 100.0 * n as f64),
                util_pct: Some(50.0),
                memory_used_mib: Some(1000.0),
                ..GpuSample::new(index)
            })
        }
    }

    #[tokio::test]
    async fn gpu_energy_is_the_counters_difference_and_nvml_is_preferred() {
        let dcgm = serve(|_| (200, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 999\n".into())).await;
        let gpus = Arc::new(FakeGpus {
            reads: AtomicU64::new(0),
            fail_from: u64::MAX,
        });
        let dir = tempfile::tempdir().unwrap();
        let power = Some((
            PowerSource::Command("echo 5".into()),
            Duration::from_millis(50),
        ));
        let t = Telemetry::with_sources(
            Some(&config(&[&dcgm])),
            "http://127.0.0.1:9",
            Some(gpus),
            power,
        )
        .unwrap()
        .unwrap();
        let running = start_in(&t, dir.path(), Instant::now(), 0).await;
        until_lines(&dir.path().join("telemetry.jsonl"), 2, |l| {
            l.source == "power"
        })
        .await;
        let s = running.finish(Some((0, u64::MAX))).await;
        let p = s.power.unwrap();
        assert_eq!(p.source, "nvml");
        let nvml = s.sources.iter().find(|x| x.name == "nvml").unwrap();
        let readings = nvml.samples as f64;
        assert_eq!(p.energy_method.as_deref(), Some("counter"));
        assert_eq!(p.energy_j, Some(2.0 * 100.0 * (readings - 1.0)));
        assert_eq!(
            (p.mean_w, p.max_w, p.window_mean_w),
            (Some(600.0), Some(600.0), Some(600.0))
        );
        assert_eq!(p.gpus.len(), 2);
        assert_eq!(nvml.gauges["gpu_memory_used_mib"].mean, 2000.0);
        // The other power sources were sampled too, and kept apart.
        assert!(s
            .sources
            .iter()
            .any(|x| x.name == "power" && x.kind == "power_command" && x.samples >= 2));
        assert_eq!(s.sources[0].families, ["dcgm"]);
    }

    #[tokio::test]
    async fn a_gpu_that_fails_mid_phase_is_recorded_not_zeroed() {
        let gpus = Arc::new(FakeGpus {
            reads: AtomicU64::new(0),
            fail_from: 2,
        });
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telemetry.jsonl");
        let t = Telemetry::with_sources(Some(&config(&[])), "http://127.0.0.1:9", Some(gpus), None)
            .unwrap()
            .unwrap();
        let running = start_in(&t, dir.path(), Instant::now(), 0).await;
        // Two complete readings, then one of GPU 0 alone.
        until_lines(&file, 3, |_| true).await;
        let s = running.finish(None).await;
        let nvml = &s.sources[0];
        assert_eq!(nvml.failed, nvml.samples - 2, "{nvml:?}");
        assert!(nvml
            .last_error
            .as_ref()
            .unwrap()
            .error
            .contains("GPU is lost"));
        let p = s.power.unwrap();
        // GPU 1 has two readings, GPU 0 all of them: both energies are counted.
        assert_eq!(p.gpus[1].energy_j, Some(100.0));
        assert_eq!(p.samples, 2, "only complete readings give a total");
        assert!(p.error.unwrap().contains("GPU is lost"));
        let written = lines(&file);
        assert!(written.iter().skip(2).all(|l| l.gpus.len() == 1 && !l.ok()));
    }

    /// A source slower than the interval is almost always mid-reading when
    /// the phase ends: that reading completes and is kept, so every page
    /// the server answered is a sample (none dropped by the stop).
    #[tokio::test]
    async fn finishing_mid_reading_loses_no_reading() {
        let answered = Arc::new(AtomicU64::new(0));
        let counter = answered.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let counter = counter.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let _ = socket.read(&mut buf).await;
                    tokio::time::sleep(Duration::from_millis(120)).await;
                    let body = "llamacpp:requests_processing 1\n";
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    counter.fetch_add(1, Ordering::SeqCst);
                    let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telemetry.jsonl");
        let t = Telemetry::with_sources(Some(&config(&[&url])), "http://127.0.0.1:9", None, None)
            .unwrap()
            .unwrap();
        let running = start_in(&t, dir.path(), Instant::now(), 0).await;
        until_lines(&file, 3, |_| true).await;
        let s = running.finish(None).await;
        let server = &s.sources[0];
        assert_eq!(server.failed, 0, "{server:?}");
        assert!(server.samples >= 3, "{server:?}");
        assert_eq!(server.samples as u64, answered.load(Ordering::SeqCst));
        assert_eq!(lines(&file).len(), server.samples);
    }

    #[tokio::test]
    async fn a_file_that_cannot_be_created_fails_before_the_phase() {
        let t = Telemetry::with_sources(
            Some(&config(&[&refused()])),
            "http://127.0.0.1:9",
            None,
            None,
        )
        .unwrap()
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "").unwrap();
        let e = t
            .start(
                Instant::now(),
                &OutDir::new(&not_a_dir),
                Path::new("telemetry.jsonl"),
                "x",
                0,
            )
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains(&*not_a_dir.to_string_lossy()), "{e}");
        // Nor through a link: the samples are not written where it leads.
        std::os::unix::fs::symlink(&not_a_dir, dir.path().join("telemetry.jsonl")).unwrap();
        let e = t
            .start(
                Instant::now(),
                &OutDir::new(dir.path()),
                Path::new("telemetry.jsonl"),
                "x",
                0,
            )
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
    }

    #[tokio::test]
    async fn a_resumed_phase_appends_after_the_last_whole_line() {
        let url = serve(|_| (200, "llamacpp:requests_processing 1\n".into())).await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("telemetry.jsonl");
        // The first process was killed in the middle of a line.
        std::fs::write(
            &file,
            "{\"t_ns\":1,\"source\":\"server\",\"took_ms\":0.1}\n{\"t_ns\":2,\"sou",
        )
        .unwrap();
        let t = Telemetry::with_sources(Some(&config(&[&url])), "http://127.0.0.1:9", None, None)
            .unwrap()
            .unwrap();
        let running = start_in(&t, dir.path(), Instant::now(), 1).await;
        let s = running.finish(None).await;
        let written = lines(&file);
        assert_eq!(written.len(), 1 + s.sources[0].samples);
        assert_eq!(written[0].segment, 0);
        assert!(written[1..].iter().all(|l| l.segment == 1));
    }

    #[test]
    fn nothing_configured_is_no_telemetry() {
        assert!(
            Telemetry::with_sources(None, "http://127.0.0.1:9", None, None)
                .unwrap()
                .is_none()
        );
    }
}
