//! Reading a result directory back, tolerantly: the one place that knows
//! the result files' shapes, for `report`, `diff` and `export`.
//!
//! Every file is optional (a perf-only run has no `accuracy/`, a sweep no
//! `turns.jsonl`); a file that is there but unreadable is an error naming
//! it (and the line, for JSONL). Shapes that are changing are read in both
//! forms: `accuracy/accuracy_results.json` as one bare report entry or as
//! `{average_accuracy, accuracy_scores: [entry, ...]}`; histogram `buckets`
//! as bucket edges or as `[lo, hi]` pairs; `config.yaml` is not read
//! (`config.toml` holds the same and more). Turn records may carry
//! `scheduled_ns` (when the turn was due) and a send lag.

use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A result file that is there but cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{} holds no agentload results (no run_manifest.json, performance/result_summary.json, accuracy/ or sweep/summary.json)", path.display())]
    NotResults { path: PathBuf },
}

/// How a turn ended (`turns.jsonl` `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    Failed,
    Aborted,
    #[serde(other)]
    Other,
}

impl Status {
    /// The `turns.jsonl` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Aborted => "aborted",
            Status::Other => "other",
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct LocalTokens {
    isl: u64,
    osl: u64,
    #[serde(default)]
    osl_after_first: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Answer {
    #[serde(default)]
    finish_reason: Option<String>,
}

/// The numbers the report reads of a turn's server `usage`, kept as numbers rather than the
/// map (a report reads every turn of a long run). Read tolerantly: a key that is missing or
/// not a non-negative integer is absent, and the line still reads.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
}

impl<'de> Deserialize<'de> for Usage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let count = |v: Option<&Value>| v.and_then(Value::as_u64);
        Ok(Self {
            prompt_tokens: count(v.get("prompt_tokens")),
            completion_tokens: count(v.get("completion_tokens")),
            cached_tokens: count(
                v.get("prompt_tokens_details")
                    .and_then(|d| d.get("cached_tokens")),
            ),
        })
    }
}

/// One turn as the report needs it (the heavy fields are skipped).
#[derive(Debug, Clone, Deserialize)]
pub struct Turn {
    pub session_id: String,
    pub turn: u32,
    #[serde(default)]
    pub item_id: String,
    pub status: Status,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub issued_ns: Option<u64>,
    #[serde(default)]
    pub first_token_ns: Option<u64>,
    #[serde(default)]
    pub last_token_ns: Option<u64>,
    #[serde(default)]
    pub complete_ns: Option<u64>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    local_tokens: Option<LocalTokens>,
    #[serde(default)]
    completion: Option<Answer>,
    /// When the turn was due (previous completion + tool delay).
    #[serde(default)]
    pub scheduled_ns: Option<u64>,
    #[serde(default, alias = "lag_ns")]
    send_lag_ns: Option<u64>,
    /// The simulated agent (sweeps).
    #[serde(default)]
    pub agent: Option<u32>,
}

impl Turn {
    /// Prompt tokens: the server's count, else the local one.
    pub fn isl(&self) -> Option<u64> {
        self.usage
            .prompt_tokens
            .or(self.local_tokens.map(|l| l.isl))
    }

    /// Completion tokens: the server's count, else the local one.
    pub fn osl(&self) -> Option<u64> {
        self.usage
            .completion_tokens
            .or(self.local_tokens.map(|l| l.osl))
    }

    /// Cached prompt tokens, when the server says.
    pub fn cached(&self) -> Option<u64> {
        self.usage.cached_tokens
    }

    pub fn finish_reason(&self) -> Option<&str> {
        self.completion.as_ref()?.finish_reason.as_deref()
    }

    fn span(a: Option<u64>, b: Option<u64>) -> Option<u64> {
        b?.checked_sub(a?)
    }

    pub fn completed(&self) -> bool {
        self.status == Status::Completed
    }

    /// Time to first token, ns (completed turns).
    pub fn ttft_ns(&self) -> Option<u64> {
        Self::span(self.issued_ns, self.first_token_ns).filter(|_| self.completed())
    }

    /// End-to-end latency, ns (completed turns).
    pub fn latency_ns(&self) -> Option<u64> {
        Self::span(self.issued_ns, self.complete_ns).filter(|_| self.completed())
    }

    /// The reference's TPOT: (complete − first token) / tokens after the
    /// first chunk, ns. The tokens come from the run's configured source
    /// first (`local_first`: local counts' `osl_after_first`; else the
    /// server's OSL − 1), else the other one, as `result_summary.json`'s
    /// `tpot` series takes them, so a chart drawn from turns and the
    /// summary's percentiles agree.
    pub fn tpot_ns(&self, local_first: bool) -> Option<f64> {
        let local = self.local_tokens.and_then(|l| l.osl_after_first);
        let server = self.usage.completion_tokens.map(|n| n.saturating_sub(1));
        let after_first = if local_first {
            local.or(server)
        } else {
            server.or(local)
        }?;
        let decode = Self::span(self.first_token_ns, self.complete_ns)?;
        (after_first > 0 && self.completed()).then(|| decode as f64 / after_first as f64)
    }

    /// Output tokens per second after the first token (the sweep's speed).
    pub fn output_speed_tps(&self) -> Option<f64> {
        let n = self.usage.completion_tokens?;
        let span = Self::span(self.first_token_ns, self.last_token_ns)?;
        (n >= 2 && span > 0 && self.completed()).then(|| (n - 1) as f64 / (span as f64 / 1e9))
    }

    /// Issued minus due (coordinated omission), ns: the record's own send
    /// lag, else `issued_ns − scheduled_ns`.
    pub fn send_lag_ns(&self) -> Option<u64> {
        self.send_lag_ns
            .or_else(|| self.issued_ns?.checked_sub(self.scheduled_ns?).or(Some(0)))
    }
}

/// Where one session's time went (a `session_metrics.jsonl` line, read tolerantly: a key
/// that is missing or not a number is 0).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTime {
    pub session_id: String,
    pub model_s: f64,
    pub tool_s: f64,
    pub queue_s: f64,
}

impl<'de> Deserialize<'de> for SessionTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let s = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        Ok(Self {
            session_id: v
                .get("session_id")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned(),
            model_s: s("model_s"),
            tool_s: s("tool_s"),
            queue_s: s("queue_s"),
        })
    }
}

/// One `sessions.json` row.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Session {
    pub id: String,
    #[serde(default)]
    pub expected_turns: u32,
    #[serde(default)]
    pub completed: u32,
    #[serde(default)]
    pub failed: u32,
    #[serde(default)]
    pub aborted: u32,
    #[serde(default)]
    pub error: Option<String>,
}

/// A histogram as `[lo, hi)` buckets and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(f64, f64)>,
    pub counts: Vec<u64>,
}

/// Reads a result-summary `histogram` in either shape: `buckets` as edges
/// (n + 1 numbers) or as n `[lo, hi]` pairs.
pub fn histogram(series: &Value) -> Option<Histogram> {
    let h = series.get("histogram")?;
    let counts: Vec<u64> = h
        .get("counts")?
        .as_array()?
        .iter()
        .map(|c| c.as_u64().unwrap_or(0))
        .collect();
    let raw = h.get("buckets")?.as_array()?;
    let buckets: Vec<(f64, f64)> = if raw.first().is_some_and(Value::is_array) {
        raw.iter()
            .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
            .collect()
    } else {
        let edges: Vec<f64> = raw.iter().filter_map(Value::as_f64).collect();
        edges.windows(2).map(|w| (w[0], w[1])).collect()
    };
    (buckets.len() == counts.len() && !counts.is_empty()).then_some(Histogram { buckets, counts })
}

/// The answered turns of a `result_summary.json`: `agentload.n_samples_succeeded`,
/// else (a run written before agentload kept the reference's counters, whose
/// `n_samples_completed` then meant answered) `n_samples_completed`.
pub fn succeeded(summary: &Value) -> Option<f64> {
    summary["agentload"]["n_samples_succeeded"]
        .as_f64()
        .or_else(|| summary["n_samples_completed"].as_f64())
}

/// The accuracy report entries of `accuracy_results.json` in either shape,
/// with the gate wherever it is (top level or in the entry).
#[derive(Debug, Clone)]
pub struct Accuracy {
    /// The file's path, relative to the run directory.
    pub file: String,
    pub entries: Vec<Value>,
    pub gate: Option<Value>,
}

impl Accuracy {
    fn from_value(file: String, v: Value) -> Self {
        let entries = match v.get("accuracy_scores").and_then(Value::as_array) {
            Some(list) => list.clone(),
            None => vec![v.clone()],
        };
        let gate = v
            .get("gate")
            .cloned()
            .or_else(|| entries.iter().find_map(|e| e.get("gate").cloned()));
        Self {
            file,
            entries,
            gate,
        }
    }

    /// The BFCL single-turn entry (one with `subset_scores`), if any.
    pub fn bfcl(&self) -> Option<&Value> {
        self.entries
            .iter()
            .find(|e| e["breakdown"].get("subset_scores").is_some())
    }

    /// The BFCL multi-turn entry, if any.
    pub fn multi_turn(&self) -> Option<&Value> {
        self.entries.iter().find(|e| {
            e["dataset_name"]
                .as_str()
                .is_some_and(|n| n.contains("multi_turn"))
        })
    }

    /// `gate.passed`.
    pub fn gate_passed(&self) -> Option<bool> {
        self.gate.as_ref()?.get("passed")?.as_bool()
    }
}

/// A sweep's result files.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// `sweep/summary.json`.
    pub summary: Value,
    /// `sweep/pareto.json` (`points`, `frontier`).
    pub pareto: Option<Value>,
    /// Each phase's turn log (as `summary.json` lists them).
    pub phase_turns: Vec<Vec<Turn>>,
}

impl Sweep {
    /// The phases of `summary.json`.
    pub fn phases(&self) -> &[Value] {
        self.summary["phases"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The labels (`c16`, `r2.5`) of the levels on the sweep's own frontier.
    pub fn frontier_levels(&self) -> Vec<String> {
        self.pareto
            .as_ref()
            .and_then(|p| p["frontier"].as_array())
            .into_iter()
            .flatten()
            .map(super::sweep::label)
            .collect()
    }
}

/// One line of a phase's `telemetry.jsonl` (what the report draws).
#[derive(Debug, Clone, Deserialize)]
pub struct TelemetrySample {
    /// ns on the phase's clock (the turns' clock).
    pub t_ns: u64,
    pub source: String,
    #[serde(default)]
    pub fields: std::collections::BTreeMap<String, f64>,
    #[serde(default)]
    pub error: Option<String>,
}

/// A phase's telemetry: its samples and its summary.
#[derive(Debug, Clone)]
pub struct PhaseTelemetry {
    /// `performance`, `accuracy`, or a sweep phase's `c<level>`.
    pub phase: String,
    /// The samples' file, relative to the run directory.
    pub file: String,
    pub samples: Vec<TelemetrySample>,
    /// The phase summary's `telemetry` object.
    pub summary: Option<Value>,
}

/// Reads a `telemetry.jsonl`; none when absent. A bad line is an error
/// naming the file and the line.
fn telemetry_file(
    dir: &Path,
    rel: &str,
    phase: &str,
    summary: Option<Value>,
) -> Result<Option<PhaseTelemetry>, ReadError> {
    let Some(samples) = jsonl(&dir.join(rel))? else {
        return Ok(None);
    };
    Ok(Some(PhaseTelemetry {
        phase: phase.to_owned(),
        file: rel.to_owned(),
        samples,
        summary,
    }))
}

/// The rows of a JSONL file; none when absent. A bad line is an error
/// naming the file and the line.
/// The file is read one line at a time: a long run's log is never in memory whole.
fn jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<Vec<T>>, ReadError> {
    use std::io::BufRead;
    let file = match agentload_fs::read::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path, e)),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let (mut rows, mut line, mut n) = (Vec::new(), String::new(), 0usize);
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(|e| io(path, e))? == 0 {
            return Ok(Some(rows));
        }
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        rows.push(serde_json::from_str(&line).map_err(|e| ReadError::Parse {
            path: path.to_path_buf(),
            message: format!("line {n}: {e}"),
        })?);
    }
}

/// Everything in one result directory that the readers use.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    /// `config.toml`, as a TOML tree.
    pub config: Option<toml::Value>,
    /// `config.toml` as written.
    pub config_text: Option<String>,
    pub manifest: Option<Value>,
    /// `performance/result_summary.json`.
    pub summary: Option<Value>,
    pub report_txt: Option<String>,
    /// The performance phase's `turns.jsonl`.
    pub turns: Vec<Turn>,
    pub sessions: Vec<Session>,
    /// The performance scorer's report (`scores.json`).
    pub scores: Option<Value>,
    /// The accuracy phase's report.
    pub accuracy: Option<Accuracy>,
    pub accuracy_turns: Vec<Turn>,
    pub accuracy_sessions: Vec<Session>,
    pub sweep: Option<Sweep>,
    /// Each phase's telemetry (`telemetry.jsonl`), in phase order.
    pub telemetry: Vec<PhaseTelemetry>,
    /// The performance phase's `session_metrics.jsonl`: where each session's time went.
    pub session_metrics: Vec<SessionTime>,
    /// AA's (agentperf-local's) `aa/summary.json`, for an AA replay or an export.
    pub aa_summary: Option<Value>,
    /// A closed-loop run's `performance/closed_loop.json`.
    pub closed_loop: Option<Value>,
}

fn io(path: &Path, source: std::io::Error) -> ReadError {
    ReadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn text(path: &Path) -> Result<Option<String>, ReadError> {
    match agentload_fs::read::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path, e)),
    }
}

/// Reads a JSON file; none when absent.
pub fn json_file<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, ReadError> {
    let Some(t) = text(path)? else {
        return Ok(None);
    };
    serde_json::from_str(&t)
        .map(Some)
        .map_err(|e| ReadError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Reads a turn log; empty when absent; names file and line on error.
/// A turn log's records as the run counts them: each with its local counts (kept beside the
/// log, in `turns.tokens.jsonl`, by line), less the lines a resume superseded
/// (`turns.superseded.jsonl`).
pub fn turns_file(path: &Path) -> Result<Vec<Turn>, ReadError> {
    let mut turns: Vec<Turn> = jsonl(path)?.unwrap_or_default();
    let side = |kind: &str| {
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        path.with_file_name(format!("{name}.{kind}.jsonl"))
    };
    for counted in jsonl::<CountLine>(&side("tokens"))?.unwrap_or_default() {
        if let Some(t) = counted
            .line
            .checked_sub(1)
            .and_then(|i| turns.get_mut(usize::try_from(i).ok()?))
        {
            t.local_tokens = Some(counted.tokens);
        }
    }
    let gone: std::collections::HashSet<u64> = jsonl::<SupersededLine>(&side("superseded"))?
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.line)
        .collect();
    if !gone.is_empty() {
        let mut line = 0u64;
        turns.retain(|_| {
            line += 1;
            !gone.contains(&line)
        });
    }
    Ok(turns)
}

/// A line of `turns.tokens.jsonl`: a record's local counts, by its line in the log.
#[derive(Deserialize)]
struct CountLine {
    line: u64,
    #[serde(flatten)]
    tokens: LocalTokens,
}

/// A line of `turns.superseded.jsonl`.
#[derive(Deserialize)]
struct SupersededLine {
    line: u64,
}

impl RunDir {
    /// Whether the run's token counts come from the local tokenizer first
    /// (`model.token_counts = "local"`, as its summary records it); the
    /// server's otherwise.
    pub fn local_counts_first(&self) -> bool {
        self.summary
            .as_ref()
            .and_then(|s| s["agentload"]["token_counts"]["configured"].as_str())
            .is_none_or(|c| c == "local")
    }

    /// The TPOT of each completed turn of the performance phase that its metrics count
    /// (issued before the window's stop, `agentload.tracking.stop_ns`), ns, its tokens from
    /// the run's configured source first: what the TPOT chart draws, and what the summary's
    /// TPOT grid (its dots) is the lower percentiles of.
    pub fn tpot_ns(&self) -> Vec<f64> {
        let local_first = self.local_counts_first();
        let stop = self
            .summary
            .as_ref()
            .and_then(|s| s["agentload"]["tracking"]["stop_ns"].as_u64());
        self.turns
            .iter()
            .filter(|t| stop.is_none_or(|s| t.issued_ns.is_some_and(|i| i < s)))
            .filter_map(|t| t.tpot_ns(local_first))
            .collect()
    }

    /// Reads `dir` (see the module docs).
    pub fn read(dir: &Path) -> Result<Self, ReadError> {
        let config_text = text(&dir.join("config.toml"))?;
        let config = match &config_text {
            Some(t) => Some(
                toml::from_str::<toml::Value>(t).map_err(|e| ReadError::Parse {
                    path: dir.join("config.toml"),
                    message: e.to_string(),
                })?,
            ),
            None => None,
        };
        let report_file = |phase: &str, default: &str| {
            config
                .as_ref()
                .and_then(|c| c.get(phase)?.get("report_file")?.as_str())
                .unwrap_or(default)
                .to_owned()
        };
        let scores_file = report_file("performance", "scores.json");
        let accuracy_file = report_file("accuracy", "accuracy/accuracy_results.json");
        let accuracy = json_file::<Value>(&dir.join(&accuracy_file))?
            .map(|v| Accuracy::from_value(accuracy_file.clone(), v));
        let sweep = json_file::<Value>(&dir.join("sweep/summary.json"))?
            .map(|summary| -> Result<Sweep, ReadError> {
                let phase_turns = summary["phases"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        turns_file(
                            &dir.join("sweep")
                                .join(p["turns"].as_str().unwrap_or_default()),
                        )
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Sweep {
                    pareto: json_file(&dir.join("sweep/pareto.json"))?,
                    summary,
                    phase_turns,
                })
            })
            .transpose()?;
        let summary: Option<Value> = json_file(&dir.join("performance/result_summary.json"))?;
        let mut telemetry = Vec::new();
        if let Some(t) = telemetry_file(
            dir,
            "telemetry.jsonl",
            "performance",
            summary
                .as_ref()
                .map(|s| s["agentload"]["telemetry"].clone()),
        )? {
            telemetry.push(t);
        }
        for p in sweep.iter().flat_map(Sweep::phases) {
            let turns = p["turns"].as_str().unwrap_or_default();
            let folder = turns.rsplit_once('/').map_or("", |(f, _)| f);
            let label = super::sweep::label(p);
            if let Some(t) = telemetry_file(
                dir,
                &format!("sweep/{folder}/telemetry.jsonl"),
                &label,
                Some(p["telemetry"].clone()),
            )? {
                telemetry.push(t);
            }
        }
        if let Some(t) = telemetry_file(
            dir,
            "accuracy/telemetry.jsonl",
            "accuracy",
            json_file(&dir.join("accuracy/telemetry_summary.json"))?,
        )? {
            telemetry.push(t);
        }
        let run = Self {
            path: dir.to_path_buf(),
            manifest: json_file(&dir.join("run_manifest.json"))?,
            summary,
            report_txt: text(&dir.join("report.txt"))?,
            turns: turns_file(&dir.join("turns.jsonl"))?,
            sessions: json_file(&dir.join("sessions.json"))?.unwrap_or_default(),
            scores: json_file(&dir.join(&scores_file))?,
            accuracy,
            accuracy_turns: turns_file(&dir.join("accuracy/turns.jsonl"))?,
            accuracy_sessions: json_file(&dir.join("accuracy/sessions.json"))?.unwrap_or_default(),
            sweep,
            telemetry,
            session_metrics: jsonl(&dir.join("session_metrics.jsonl"))?.unwrap_or_default(),
            aa_summary: json_file(&dir.join("aa/summary.json"))?,
            closed_loop: json_file(&dir.join("performance/closed_loop.json"))?,
            config,
            config_text,
        };
        if run.manifest.is_none()
            && run.summary.is_none()
            && run.accuracy.is_none()
            && run.sweep.is_none()
        {
            return Err(ReadError::NotResults {
                path: dir.to_path_buf(),
            });
        }
        Ok(run)
    }

    /// The run's name: the config's `name`, else the directory's.
    pub fn name(&self) -> String {
        self.config
            .as_ref()
            .and_then(|c| c.get("name")?.as_str().map(str::to_owned))
            .or_else(|| {
                self.sweep
                    .as_ref()
                    .and_then(|s| s.summary["run"].as_str().map(str::to_owned))
            })
            .unwrap_or_else(|| {
                self.path.file_name().map_or_else(
                    || self.path.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                )
            })
    }

    /// The config value at a dotted path (`load.concurrency`).
    pub fn config_at(&self, path: &str) -> Option<&toml::Value> {
        path.split('.')
            .try_fold(self.config.as_ref()?, |v, k| v.get(k))
    }

    /// A manifest string field.
    pub fn manifest_str(&self, key: &str) -> Option<&str> {
        self.manifest.as_ref()?.get(key)?.as_str()
    }

    /// `report.txt`'s verdict line: `Some(true)` for `run VALID`.
    pub fn valid(&self) -> Option<bool> {
        let t = self.report_txt.as_ref()?;
        t.lines().rev().find_map(|l| match l.trim() {
            "run VALID" => Some(true),
            "run INVALID" => Some(false),
            _ => None,
        })
    }

    /// Why the run is invalid (or would be): missing turns and samples, a
    /// failed gate. Empty when nothing is wrong.
    pub fn invalid_reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        let missing = |sessions: &[Session], turns: &[Turn]| -> (u64, u64) {
            let expected: u64 = sessions.iter().map(|s| u64::from(s.expected_turns)).sum();
            let completed = turns.iter().filter(|t| t.completed()).count() as u64;
            let not_completed = turns.len() as u64 - completed;
            (
                expected.saturating_sub(completed).max(not_completed),
                expected,
            )
        };
        if !self.sessions.is_empty() {
            let (m, e) = missing(&self.sessions, &self.turns);
            if m > 0 {
                reasons.push(format!("performance: {m} of {e} expected turns missing"));
            }
        }
        if !self.accuracy_sessions.is_empty() {
            let (m, e) = missing(&self.accuracy_sessions, &self.accuracy_turns);
            if m > 0 {
                reasons.push(format!("accuracy: {m} of {e} expected samples missing"));
            }
        }
        if let Some(a) = &self.accuracy {
            if a.gate_passed() == Some(false) {
                reasons.push("accuracy gate FAIL".to_owned());
            }
        }
        if reasons.is_empty() && self.valid() == Some(false) {
            reasons.push("report.txt says INVALID".to_owned());
        }
        reasons
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn histograms_read_in_both_shapes() {
        let edges = json!({"histogram": {"buckets": [1.0, 2.0, 4.0], "counts": [3, 1]}});
        let pairs = json!({"histogram": {"buckets": [[1.0, 2.0], [2.0, 4.0]], "counts": [3, 1]}});
        let a = histogram(&edges).unwrap();
        assert_eq!(a, histogram(&pairs).unwrap());
        assert_eq!(a.buckets, [(1.0, 2.0), (2.0, 4.0)]);
        // Counts that do not match the buckets are not a histogram.
        let bad = json!({"histogram": {"buckets": [1.0, 2.0], "counts": [3, 1]}});
        assert!(histogram(&bad).is_none());
        assert!(histogram(&json!({})).is_none());
    }

    #[test]
    fn accuracy_reads_in_both_shapes() {
        let entry = json!({"dataset_name": "bfcl_v4::function_calling",
            "breakdown": {"overall_accuracy": 90.0, "subset_scores": {"simple": 90.0}},
            "gate": {"passed": true}});
        let bare = Accuracy::from_value("a.json".into(), entry.clone());
        let wrapped = Accuracy::from_value(
            "a.json".into(),
            json!({"average_accuracy": 0.9, "osl_tokenization_s": 1.0, "accuracy_scores": [entry]}),
        );
        for a in [&bare, &wrapped] {
            assert_eq!(a.bfcl().unwrap()["breakdown"]["overall_accuracy"], 90.0);
            assert_eq!(a.gate_passed(), Some(true));
            assert!(a.multi_turn().is_none());
        }
        let top_gate = Accuracy::from_value(
            "a.json".into(),
            json!({"accuracy_scores": [{"breakdown": {}}], "gate": {"passed": false}}),
        );
        assert_eq!(top_gate.gate_passed(), Some(false));
    }

    #[test]
    fn tpot_takes_its_tokens_from_the_runs_configured_source_first() {
        // Local counts say 9 tokens after the first chunk, the server 4 - 1.
        let t: Turn = serde_json::from_value(json!({
            "session_id": "s", "turn": 1, "status": "completed",
            "issued_ns": 0, "first_token_ns": 1_000, "complete_ns": 10_000,
            "usage": {"prompt_tokens": 5, "completion_tokens": 4},
            "local_tokens": {"isl": 5, "osl": 10, "osl_after_first": 9},
            "expected_json": "{}"
        }))
        .unwrap();
        assert_eq!(t.tpot_ns(true), Some(1_000.0));
        assert_eq!(t.tpot_ns(false), Some(3_000.0));
        // Only one source: it is used whichever comes first.
        let server_only: Turn = serde_json::from_value(json!({
            "session_id": "s", "turn": 2, "status": "completed",
            "issued_ns": 0, "first_token_ns": 1_000, "complete_ns": 10_000,
            "usage": {"completion_tokens": 4}, "expected_json": "{}"
        }))
        .unwrap();
        assert_eq!(server_only.tpot_ns(true), Some(3_000.0));
        // The run's source, as its summary records it (local without one).
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run_manifest.json"), "{}").unwrap();
        assert!(RunDir::read(dir.path()).unwrap().local_counts_first());
        std::fs::create_dir(dir.path().join("performance")).unwrap();
        std::fs::write(
            dir.path().join("performance/result_summary.json"),
            r#"{"agentload": {"token_counts": {"configured": "server"}}}"#,
        )
        .unwrap();
        assert!(!RunDir::read(dir.path()).unwrap().local_counts_first());
    }

    #[test]
    fn turns_take_their_local_counts_from_the_side_file_and_tpot_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let turn = |n: u64| {
            json!({"session_id": "s", "turn": n, "status": "completed", "issued_ns": n * 100_000,
                "first_token_ns": n * 100_000 + 1_000, "complete_ns": n * 100_000 + 10_000,
                "usage": {"completion_tokens": 4}})
            .to_string()
        };
        // Four records (a blank line between: lines count the records), the second one
        // superseded by a resume; local counts for the first three.
        std::fs::write(
            d.join("turns.jsonl"),
            format!("{}\n\n{}\n{}\n{}\n", turn(1), turn(2), turn(3), turn(4)),
        )
        .unwrap();
        std::fs::write(
            d.join("turns.tokens.jsonl"),
            (1..=3)
                .map(|l| format!("{{\"line\":{l},\"isl\":5,\"osl\":10,\"osl_after_first\":9,\"osl_count_ns\":7}}\n"))
                .collect::<String>(),
        )
        .unwrap();
        std::fs::write(d.join("turns.superseded.jsonl"), "{\"line\":2}\n").unwrap();
        std::fs::write(d.join("run_manifest.json"), "{}").unwrap();
        let run = RunDir::read(d).unwrap();
        let turns: Vec<u32> = run.turns.iter().map(|t| t.turn).collect();
        assert_eq!(turns, [1, 3, 4]);
        // 9 local tokens after the first: 1,000 ns each; the last turn has the server's 3.
        assert_eq!(run.tpot_ns(), [1_000.0, 1_000.0, 3_000.0]);
        // A window that stopped before the last turn was issued leaves it out.
        std::fs::create_dir(d.join("performance")).unwrap();
        std::fs::write(
            d.join("performance/result_summary.json"),
            r#"{"agentload": {"tracking": {"stop_ns": 400000}}}"#,
        )
        .unwrap();
        assert_eq!(RunDir::read(d).unwrap().tpot_ns(), [1_000.0, 1_000.0]);
    }

    #[test]
    fn turns_derive_their_metrics_and_send_lag() {
        let t: Turn = serde_json::from_value(json!({
            "session_id": "s", "turn": 1, "status": "completed",
            "issued_ns": 1_000, "first_token_ns": 3_000, "last_token_ns": 9_000,
            "complete_ns": 11_000, "usage": {"prompt_tokens": 50, "completion_tokens": 4,
            "prompt_tokens_details": {"cached_tokens": 20}},
            "scheduled_ns": 400, "completion": {"content": "x", "finish_reason": "stop"},
            "expected_json": "{}", "some_new_field": [1, 2]
        }))
        .unwrap();
        assert_eq!(t.ttft_ns(), Some(2_000));
        assert_eq!(t.latency_ns(), Some(10_000));
        assert_eq!(t.tpot_ns(true), Some(8_000.0 / 3.0));
        assert_eq!(
            (t.isl(), t.osl(), t.cached()),
            (Some(50), Some(4), Some(20))
        );
        assert_eq!(t.send_lag_ns(), Some(600));
        assert_eq!(t.finish_reason(), Some("stop"));
        let own: Turn = serde_json::from_value(json!({"session_id": "s", "turn": 2,
            "status": "failed", "issued_ns": 5, "scheduled_ns": 1, "send_lag_ns": 7}))
        .unwrap();
        assert_eq!(own.send_lag_ns(), Some(7));
        assert_eq!(own.ttft_ns(), None);
        let unknown: Turn =
            serde_json::from_value(json!({"session_id": "s", "turn": 3, "status": "skipped"}))
                .unwrap();
        assert_eq!(unknown.status, Status::Other);
        assert_eq!(unknown.send_lag_ns(), None);
        // A server's odd `usage` loses its numbers, not the line.
        for usage in [
            json!(null),
            json!("n/a"),
            json!({"prompt_tokens": 1.5, "completion_tokens": -2, "prompt_tokens_details": null}),
        ] {
            let odd: Turn = serde_json::from_value(json!({"session_id": "s", "turn": 4,
                "status": "completed", "usage": usage}))
            .unwrap();
            assert_eq!((odd.isl(), odd.osl(), odd.cached()), (None, None, None));
        }
    }

    #[test]
    fn a_directory_without_results_is_an_error_and_bad_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = RunDir::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("holds no agentload results"), "{e}");
        std::fs::write(dir.path().join("run_manifest.json"), "{}").unwrap();
        std::fs::write(
            dir.path().join("turns.jsonl"),
            "{\"session_id\":\"s\",\"turn\":1,\"status\":\"aborted\"}\nnot json\n",
        )
        .unwrap();
        let e = RunDir::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("turns.jsonl: line 2"), "{e}");
        // Blank lines are skipped and still counted; the last line needs no newline.
        std::fs::write(
            dir.path().join("turns.jsonl"),
            "{\"session_id\":\"s\",\"turn\":1,\"status\":\"aborted\"}\n\n{\"turn\":2}",
        )
        .unwrap();
        let e = RunDir::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("turns.jsonl: line 3"), "{e}");
        std::fs::write(
            dir.path().join("session_metrics.jsonl"),
            "{\"session_id\":\"s\",\"model_s\":1.5,\"tool_s\":\"?\"}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("turns.jsonl"), "").unwrap();
        let run = RunDir::read(dir.path()).unwrap();
        assert_eq!(
            run.session_metrics,
            [SessionTime {
                session_id: "s".into(),
                model_s: 1.5,
                tool_s: 0.0,
                queue_s: 0.0
            }]
        );
    }
}
