//! A shard's side of the coordinator: join, meet at each phase's start,
//! keep the coordinator informed, and hand over the records.

use crate::clock::{Offset, Sample};
use crate::protocol::*;
use crate::slice::Slice;
use crate::ShardError;
use agentload_wire::clock::clock_monotonic_ns;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Pings taken on joining and at each barrier.
const PINGS: usize = 16;
/// How long before a phase's start a shard stops sleeping and watches the clock.
const SPIN: Duration = Duration::from_millis(3);

/// Who this shard is.
#[derive(Debug, Clone)]
pub struct Identity {
    pub slice: Slice,
    pub run_id: String,
    pub config_digest: String,
    /// The pod or machine name (in the coordinator's status and the merge).
    pub host: String,
}

/// A phase as this shard ran it: the time anchors that map its records
/// onto the coordinator's clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseAnchor {
    /// `performance` or `accuracy`.
    pub phase: String,
    /// The process that ran it (0, or the n-th resume).
    pub segment: u32,
    /// The phase's time origin (its records' 0), on this shard's monotonic clock.
    pub origin_mono_ns: u64,
    /// The start the barrier set, on the coordinator's clock.
    pub start_coordinator_ns: u64,
    /// When the shard actually woke for it, on its own clock (the start
    /// skew is the spread of these, mapped).
    pub woke_mono_ns: u64,
    /// The offset at the barrier (what the start was computed with).
    pub offset_at_start: Offset,
    /// The offset refreshed through the phase (its best sample): what the
    /// merge maps the records with.
    pub offset: Offset,
}

/// The link to the coordinator.
pub struct Link {
    client: reqwest::Client,
    base: String,
    me: Identity,
    samples: Mutex<Vec<Sample>>,
    anchors: Mutex<Vec<PhaseAnchor>>,
    /// The current phase's progress, read at each heartbeat.
    live: Mutex<Option<LiveSource>>,
    /// Where the anchors are kept as they change (a killed shard's journals
    /// stay mappable, and a resume adds to them).
    anchors_file: Mutex<Option<std::path::PathBuf>>,
    phase: Mutex<String>,
    /// The registration's token, sent with every later call.
    token: Mutex<String>,
}

impl Link {
    /// Joins the run at `base` (`http://host:port`), retrying until
    /// `deadline` while the coordinator is not up yet (pods start in any
    /// order).
    pub async fn join(
        base: &str,
        me: Identity,
        deadline: Duration,
    ) -> Result<Arc<Link>, ShardError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| ShardError::Coordinator(e.to_string()))?;
        let link = Arc::new(Link {
            client,
            base: base.trim_end_matches('/').to_owned(),
            me,
            samples: Mutex::new(Vec::new()),
            anchors: Mutex::new(Vec::new()),
            anchors_file: Mutex::new(None),
            live: Mutex::new(None),
            phase: Mutex::new(String::from("joining")),
            token: Mutex::new(String::new()),
        });
        let until = Instant::now() + deadline;
        loop {
            match link.ping().await {
                Ok(_) => break,
                Err(e) if Instant::now() >= until => {
                    return Err(ShardError::Coordinator(format!(
                        "no coordinator at {} within {:.0} s: {e}",
                        link.base,
                        deadline.as_secs_f64()
                    )))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        link.pings().await?;
        let samples = link.samples.lock().expect("samples lock").clone();
        let me = &link.me;
        let registered: Registered = link
            .post(
                "register",
                &Register {
                    index: me.slice.index,
                    count: me.slice.count,
                    run_id: me.run_id.clone(),
                    config_digest: me.config_digest.clone(),
                    host: me.host.clone(),
                    samples,
                },
            )
            .await?;
        *link.token.lock().expect("token lock") = registered.token;
        Ok(link)
    }

    /// Keeps the anchors in `path` from now on, after those already there
    /// (an earlier process of this shard).
    pub fn keep_anchors(&self, path: &Path) -> Result<(), ShardError> {
        let earlier: Vec<PhaseAnchor> = match agentload_fs::read::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| ShardError::Io(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(ShardError::Io(format!("{}: {e}", path.display()))),
        };
        let mut anchors = self.anchors.lock().expect("anchors lock");
        let mut all = earlier;
        all.append(&mut anchors);
        *anchors = all;
        *self.anchors_file.lock().expect("anchors lock") = Some(path.to_path_buf());
        // Written at the first barrier when there are none yet: the run
        // directory stays empty until the run itself starts writing.
        match anchors.is_empty() {
            true => Ok(()),
            false => save_anchors(path, &anchors),
        }
    }

    fn save(&self, anchors: &[PhaseAnchor]) -> Result<(), ShardError> {
        match &*self.anchors_file.lock().expect("anchors lock") {
            Some(path) => save_anchors(path, anchors),
            None => Ok(()),
        }
    }

    /// This shard.
    pub fn identity(&self) -> &Identity {
        &self.me
    }

    /// One ping, kept among the samples.
    async fn ping(&self) -> Result<Sample, ShardError> {
        self.ping_on(&self.client).await
    }

    /// One ping on `client`'s connections.
    async fn ping_on(&self, client: &reqwest::Client) -> Result<Sample, ShardError> {
        let sent_ns = clock_monotonic_ns();
        let reading: ClockReading =
            answer(client.get(format!("{}/v1/clock", self.base)).send().await).await?;
        let sample = Sample {
            sent_ns,
            coordinator_ns: reading.mono_ns,
            received_ns: clock_monotonic_ns(),
        };
        self.samples.lock().expect("samples lock").push(sample);
        Ok(sample)
    }

    /// A burst of pings; the estimate over every sample of the phase so far.
    async fn pings(&self) -> Result<Offset, ShardError> {
        for _ in 0..PINGS {
            self.ping().await?;
        }
        Ok(self.offset())
    }

    /// The current estimate (the best sample since the last barrier).
    pub fn offset(&self) -> Offset {
        Offset::estimate(&self.samples.lock().expect("samples lock"))
            .expect("a link has pinged before it exists")
    }

    /// Waits at `phase`'s start barrier (one per phase and coordinator
    /// process), then until the start it sets; returns that start on this
    /// process's clock (the phase's time origin).
    /// `segment` is this shard's process number (0, or its n-th resume).
    /// The samples start over: the phase's offset is estimated from its own.
    pub async fn barrier(&self, phase: &str, segment: u32) -> Result<Instant, ShardError> {
        self.samples.lock().expect("samples lock").clear();
        let offset = self.pings().await?;
        let key = phase.to_owned();
        *self.phase.lock().expect("phase lock") = key.clone();
        let start: Start = self
            .post(
                "barrier",
                &Arrive {
                    index: self.me.slice.index,
                    phase: key,
                    offset,
                },
            )
            .await?;
        let at_shard = offset.to_shard(start.start_ns);
        let now_mono = clock_monotonic_ns();
        let now = Instant::now();
        let start_at = now + Duration::from_nanos(at_shard.saturating_sub(now_mono));
        // The timer wheel's millisecond (and a loaded machine's lateness)
        // would be start skew: sleep to just before the start, then wait out
        // the rest on the clock.
        tokio::time::sleep_until((start_at - SPIN.min(start_at - now)).into()).await;
        while Instant::now() < start_at {
            std::hint::spin_loop();
        }
        let woke_mono_ns = clock_monotonic_ns();
        let mut anchors = self.anchors.lock().expect("anchors lock");
        anchors.push(PhaseAnchor {
            phase: phase.to_owned(),
            segment,
            origin_mono_ns: agentload_wire::clock::mono_ns(start_at),
            start_coordinator_ns: start.start_ns,
            woke_mono_ns,
            offset_at_start: offset,
            offset,
        });
        self.save(&anchors)?;
        Ok(start_at)
    }

    /// The end of `phase` (a sweep level): arrives at its phase-end barrier and returns, on
    /// this process's clock, when every shard stops (a lead after the last one arrived).
    /// Arriving again is arriving once.
    pub async fn phase_end(&self, phase: &str) -> Result<Instant, ShardError> {
        let end: End = self
            .post(
                "phase-end",
                &Arrive {
                    index: self.me.slice.index,
                    phase: phase.to_owned(),
                    offset: self.offset(),
                },
            )
            .await?;
        let at_shard = self.offset().to_shard(end.end_ns);
        let (now_mono, now) = (clock_monotonic_ns(), Instant::now());
        Ok(now + Duration::from_nanos(at_shard.saturating_sub(now_mono)))
    }

    /// Reports `source` with each heartbeat from now on (the current
    /// phase's progress).
    pub fn watch(&self, source: LiveSource) {
        *self.live.lock().expect("live lock") = Some(source);
    }

    /// Records the phase's final offset estimate (call when it ends).
    pub fn end_phase(&self) -> Result<(), ShardError> {
        let offset = self.offset();
        let mut anchors = self.anchors.lock().expect("anchors lock");
        if let Some(a) = anchors.last_mut() {
            a.offset = offset;
        }
        self.save(&anchors)
    }

    /// The phases so far.
    pub fn anchors(&self) -> Vec<PhaseAnchor> {
        self.anchors.lock().expect("anchors lock").clone()
    }

    /// Sends a heartbeat (with a fresh ping) every `every` until the
    /// returned guard is dropped, on a thread and runtime of its own: a
    /// process busy compiling plugins or driving thousands of streams still
    /// answers on time. An answer that says the run failed is printed once.
    pub fn heartbeats(self: &Arc<Self>, every: Duration) -> Heartbeats {
        let link = Arc::clone(self);
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("agentload-heartbeat".into())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async move {
                    // Its own connections, on this runtime.
                    let Ok(client) = reqwest::Client::builder()
                        .timeout(every * 4)
                        .tcp_nodelay(true)
                        .build()
                    else {
                        return;
                    };
                    let mut told = false;
                    loop {
                        tokio::select! {
                            _ = tokio::time::sleep(every) => {}
                            _ = stopped.changed() => return,
                        }
                        let _ = link.ping_on(&client).await;
                        let beat = Heartbeat {
                            index: link.me.slice.index,
                            phase: link.phase.lock().expect("phase lock").clone(),
                            offset: link.offset(),
                            live: link.live.lock().expect("live lock").as_ref().map(|f| f()),
                        };
                        let sent = client
                            .post(format!("{}/v1/heartbeat", link.base))
                            .header(TOKEN_HEADER, link.token())
                            .json(&beat)
                            .send()
                            .await;
                        if let Ok(Ack { failed: Some(why) }) = answer::<Ack>(sent).await {
                            if !told {
                                agentload_console::line(&format!(
                                    "coordinator: the run has failed: {why}"
                                ));
                                told = true;
                            }
                        }
                    }
                });
            })
            .ok();
        Heartbeats { stop, thread }
    }

    /// Uploads `files` (paths relative to `dir`; missing ones are skipped),
    /// each acknowledged with its size and digest, then says it is done.
    pub async fn upload(&self, dir: &Path, files: &[String]) -> Result<Vec<Stored>, ShardError> {
        let mut sent = Vec::new();
        for path in files {
            let bytes = match tokio::fs::read(dir.join(path)).await {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(ShardError::Io(format!("{path}: {e}"))),
            };
            let want = Stored {
                path: path.clone(),
                bytes: bytes.len() as u64,
                sha256: hex::encode(Sha256::digest(&bytes)),
            };
            let url = format!("{}/v1/upload/{}/{path}", self.base, self.me.slice.index);
            let put = self.client.put(&url).header(TOKEN_HEADER, self.token());
            let got: Stored = answer(put.body(bytes).send().await).await?;
            if got != want {
                return Err(ShardError::Coordinator(format!(
                    "the coordinator stored {path} as {} bytes (sha256 {}), this shard sent {} (sha256 {})",
                    got.bytes, got.sha256, want.bytes, want.sha256
                )));
            }
            sent.push(want);
        }
        self.post::<_, Ack>(
            "done",
            &Done {
                index: self.me.slice.index,
                files: sent.clone(),
            },
        )
        .await?;
        Ok(sent)
    }

    async fn post<B: Serialize, R: serde::de::DeserializeOwned>(
        &self,
        call: &str,
        body: &B,
    ) -> Result<R, ShardError> {
        answer(
            self.client
                .post(format!("{}/v1/{call}", self.base))
                .header(TOKEN_HEADER, self.token())
                .json(body)
                .send()
                .await,
        )
        .await
    }

    /// The registration's token ("" before it registered).
    fn token(&self) -> String {
        self.token.lock().expect("token lock").clone()
    }
}

/// A phase's progress as the heartbeat reads it.
pub type LiveSource = Box<dyn Fn() -> Live + Send + Sync>;

/// The heartbeat thread; dropping it stops the heartbeats.
pub struct Heartbeats {
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Writes the anchors to `path` (a temporary file renamed over it, never through a link).
fn save_anchors(path: &Path, anchors: &[PhaseAnchor]) -> Result<(), ShardError> {
    let fail = |e: agentload_fs::OutError| ShardError::Io(e.to_string());
    let (dir, name) = agentload_fs::OutDir::of_file(path).map_err(fail)?;
    dir.write(
        name,
        serde_json::to_vec_pretty(anchors).expect("plain data"),
    )
    .map_err(fail)
}

/// A JSON answer, or the coordinator's error message.
async fn answer<R: serde::de::DeserializeOwned>(
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<R, ShardError> {
    let response = sent.map_err(|e| ShardError::Coordinator(chain(&e)))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| ShardError::Coordinator(chain(&e)))?;
    if !status.is_success() {
        let why = serde_json::from_slice::<ErrorBody>(&body)
            .map(|e| e.error)
            .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned());
        return Err(ShardError::Refused(why));
    }
    serde_json::from_slice(&body)
        .map_err(|e| ShardError::Coordinator(format!("unreadable answer: {e}")))
}

/// An error with its causes (reqwest's own message names only the top).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
