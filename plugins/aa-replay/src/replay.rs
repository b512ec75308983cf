//! A manifest replayed as agentperf-local replays it (`replay/runner.py`):
//! its tasks in manifest order (one session each), each task's turns in
//! file order, each request built as agentperf-local builds it.

use crate::isolation;
use crate::manifest::{self, Manifest, Task};
use crate::settings::{Policy, Sampling, Settings, ToolMode};
use crate::trace::{self, Row};
use agentload_sdk::{Config, Error, GrantedFile, Message, Session, Turn};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::rc::Rc;

/// The prepared replay: every request of every task, its messages written
/// once (a message equal in several turns is one text).
#[derive(Debug)]
pub struct Replay {
    pub settings: Settings,
    pub sampling: Sampling,
    pub manifest: Manifest,
    /// The manifest as granted (its grant path is the host's to say).
    pub digest: String,
    /// The namespace in front of every first message (none: isolation off).
    pub namespace: Option<String>,
    pub tasks: Vec<TaskReplay>,
    /// Per session: the turn sent last, its messages, the pause asked after it.
    state: HashMap<String, Progress>,
}

/// One task's requests.
#[derive(Debug)]
pub struct TaskReplay {
    pub task_id: String,
    pub turns: Vec<Request>,
}

/// One request, as sent.
#[derive(Debug)]
pub struct Request {
    /// Each message's JSON text (the first one prefixed).
    pub messages: Vec<Rc<str>>,
    pub tools_json: Option<Rc<str>>,
    pub max_tokens: u32,
    pub item_id: String,
    pub expected_json: String,
    /// The recorded tool time after the turn, ms.
    pub tool_time_ms: f64,
}

#[derive(Debug, Default)]
struct Progress {
    turn: usize,
    sent: Vec<Rc<str>>,
    pause_ms: u64,
}

impl Replay {
    /// Reads the granted manifest and traces and prepares every request.
    ///
    /// # Errors
    /// A refusal naming the setting, or the file, line and key of the data.
    pub fn configure(config: &Config) -> Result<Self, Error> {
        let settings = Settings::from_config(config)?;
        let manifest_file = config.file(&settings.manifest)?;
        let folder = format!("{}/", settings.replay);
        let in_folder = |rel: &str| -> Option<&GrantedFile> {
            config
                .files
                .iter()
                .find(|f| f.name == format!("{folder}{rel}"))
        };
        if !config.files.iter().any(|f| f.name.starts_with(&folder)) {
            return Err(Error::config(format!(
                "no folder is granted as `{}`: grant the manifest's folder (a path ending with \
                 `/`), e.g. replay = \"aa_replays/agentperf-default-v1/\"",
                settings.replay
            )));
        }
        let file_name = manifest_file.file_name.as_str();
        match in_folder(file_name) {
            Some(same) if same.bytes == manifest_file.bytes => {}
            _ => {
                return Err(Error::config(format!(
                    "the manifest `{file_name}` is not the one in the folder granted as `{}`: \
                     grant the manifest's own folder (its trace paths are relative to it)",
                    settings.replay
                )))
            }
        }
        let manifest = manifest::parse(file_name, &manifest_file.bytes)?;
        let mut members: Vec<(String, &[u8])> = vec![(file_name.to_owned(), &manifest_file.bytes)];
        let mut loaded = Vec::with_capacity(manifest.tasks.len());
        for (i, task) in manifest.tasks.iter().enumerate() {
            let Some(file) = in_folder(&task.trace) else {
                return Err(Error::data(
                    file_name,
                    task.lines.trace,
                    format!(
                        "`tasks[{i}].trace`: {} is not in the folder granted as `{}`",
                        task.trace, settings.replay
                    ),
                ));
            };
            let rows = trace::parse(&task.trace, &file.bytes)?;
            check_task(&manifest, i, task, &rows, &settings)?;
            if !members.iter().any(|(rel, _)| *rel == task.trace) {
                members.push((task.trace.clone(), &file.bytes));
            }
            loaded.push(rows);
        }
        let digest = workload_digest(&mut members);
        let namespace = match (&settings.cache_namespace, settings.cache_isolation) {
            (_, false) => None,
            (Some(given), true) => {
                isolation::check(given)?;
                Some(given.clone())
            }
            (None, true) if config.nonce.is_empty() => {
                return Err(Error::config(
                    "cache isolation needs a namespace: this host passed no nonce; set \
                     `cache_namespace` (or `cache_isolation = false`)",
                ))
            }
            (None, true) => Some(config.nonce.clone()),
        };
        let sampling = settings.sampling_values();
        let mut texts = Texts::default();
        let mut tasks = Vec::with_capacity(loaded.len());
        for (task, rows) in manifest.tasks.iter().zip(&loaded) {
            let turns = rows
                .iter()
                .map(|row| {
                    request(
                        row,
                        &settings,
                        namespace.as_deref(),
                        &mut texts,
                        &task.trace,
                    )
                })
                .collect::<Result<Vec<_>, Error>>()?;
            tasks.push(TaskReplay {
                task_id: task.task_id.clone(),
                turns,
            });
        }
        Ok(Self {
            settings,
            sampling,
            manifest,
            digest,
            namespace,
            tasks,
            state: HashMap::new(),
        })
    }

    /// One session per task, in manifest order; with
    /// `num_trajectories_to_issue`, that many, the tasks again from the first
    /// when they run out (the `k`-th pass's sessions are `<task_id>#<k>`).
    pub fn sessions(&self) -> Vec<Session> {
        let n = self
            .settings
            .num_trajectories_to_issue
            .map_or(self.tasks.len(), |n| n as usize);
        (0..n)
            .map(|i| {
                let t = &self.tasks[i % self.tasks.len()];
                let pass = i / self.tasks.len();
                let id = if pass == 0 {
                    t.task_id.clone()
                } else {
                    format!("{}#{pass}", t.task_id)
                };
                Session::new(id, t.turns.len() as u32)
            })
            .collect()
    }

    /// What `configure` read, for the log: the manifest's tasks and turns,
    /// and the sessions planned when they are not one per task (a sweep's
    /// passes over the tasks).
    pub fn summary_line(&self, sessions: &[Session]) -> String {
        let turns: usize = self.tasks.iter().map(|t| t.turns.len()).sum();
        let mut line = format!(
            "{} ({}): {} tasks, {turns} turns, workload digest {}",
            self.manifest.name,
            self.manifest.file,
            self.tasks.len(),
            self.digest
        );
        if sessions.len() != self.tasks.len() {
            let planned: u32 = sessions.iter().map(|s| s.expected_turns).sum();
            line.push_str(&format!(
                "; {} sessions planned ({planned} turns)",
                sessions.len()
            ));
        }
        line
    }

    /// The task a session replays (`<task_id>` or `<task_id>#<pass>`).
    fn task(&self, session: &str) -> Result<&TaskReplay, Error> {
        let find = |id: &str| self.tasks.iter().find(|t| t.task_id == id);
        find(session)
            .or_else(|| {
                let (id, pass) = session.rsplit_once('#')?;
                pass.parse::<u32>().ok().and_then(|_| find(id))
            })
            .ok_or_else(|| Error::input(format!("unknown session {session:?}")))
    }

    /// The first turn of `session`.
    pub fn start(&mut self, session: &str) -> Result<Turn, Error> {
        let turn = self.turn(session, 0, &[])?;
        Ok(turn)
    }

    /// The turn after the one `session` sent last, or none after its last;
    /// the pause after the turn just answered is kept for [`Replay::pause_ms`].
    pub fn next(&mut self, session: &str, answered: bool) -> Result<Option<Turn>, Error> {
        let progress = self
            .state
            .remove(session)
            .ok_or_else(|| Error::input(format!("session {session:?} was not started")))?;
        let task = self.task(session)?;
        let done = &task.turns[progress.turn];
        // agentperf-local sleeps the recorded tool time after a turn that
        // succeeded, in `fixed_delay` mode; never after a failed one.
        let pause_ms = match (self.settings.tool_mode, answered) {
            (ToolMode::FixedDelay, true) => done.tool_time_ms.round() as u64,
            _ => 0,
        };
        let next = progress.turn + 1;
        if next >= task.turns.len() {
            self.state.insert(
                session.to_owned(),
                Progress {
                    turn: progress.turn,
                    sent: Vec::new(),
                    pause_ms,
                },
            );
            return Ok(None);
        }
        let turn = self.turn(session, next, &progress.sent)?;
        if let Some(p) = self.state.get_mut(session) {
            p.pause_ms = pause_ms;
        }
        Ok(Some(turn))
    }

    /// The pause asked after the turn `next` was last given for.
    pub fn pause_ms(&self, session: &str) -> u64 {
        self.state.get(session).map_or(0, |p| p.pause_ms)
    }

    /// Turn `index` of `session`, keeping what it shares with `sent`.
    fn turn(&mut self, session: &str, index: usize, sent: &[Rc<str>]) -> Result<Turn, Error> {
        let task = self.task(session)?;
        let req = task
            .turns
            .get(index)
            .ok_or_else(|| Error::input(format!("session {session:?} has no turn {index}")))?;
        let keep = sent
            .iter()
            .zip(&req.messages)
            .take_while(|(a, b)| Rc::ptr_eq(a, b) || a == b)
            .count();
        let messages = req.messages[keep..]
            .iter()
            .map(|m| Message::verbatim(m.to_string()))
            .collect::<Result<Vec<_>, Error>>()?;
        let s = &self.sampling;
        let sampling = agentload_sdk::Sampling {
            temperature: s.temperature,
            top_p: s.top_p,
            top_k: s.top_k,
            min_p: s.min_p,
            max_tokens: Some(req.max_tokens),
            ignore_eos: (self.settings.policy == Policy::Exact).then_some(true),
            reasoning_effort: self.settings.reasoning_effort.clone(),
            tool_choice_json: self
                .settings
                .tool_choice
                .as_ref()
                .map(|c| Value::String(c.clone()).to_string()),
            ..agentload_sdk::Sampling::default()
        };
        let turn = Turn::after(index as u32, keep as u32, messages)
            .with_item_id(req.item_id.clone())
            .with_tools_json(req.tools_json.as_deref().map(str::to_owned))
            .with_sampling(sampling)
            .with_expected_json(req.expected_json.clone());
        let sent = req.messages.clone();
        self.state.insert(
            session.to_owned(),
            Progress {
                turn: index,
                sent,
                pause_ms: 0,
            },
        );
        Ok(turn)
    }

    /// What the workload reports about the run (`run_manifest.json`).
    pub fn facts(&self) -> Value {
        let s = &self.settings;
        let sampling = &self.sampling;
        let mut extra = serde_json::Map::new();
        if let Some(k) = sampling.top_k {
            extra.insert("top_k".into(), k.into());
        }
        if let Some(p) = sampling.min_p {
            extra.insert("min_p".into(), p.into());
        }
        if let Some(c) = &s.tool_choice {
            extra.insert("tool_choice".into(), c.clone().into());
        }
        json!({
            "manifest": self.manifest.file,
            "manifest_name": self.manifest.name,
            "workload_digest": self.digest,
            "tasks": self.tasks.len(),
            "turns": self.tasks.iter().map(|t| t.turns.len()).sum::<usize>(),
            "required_context_tokens": self.manifest.tasks.iter().filter_map(|t| t.required_context_tokens).max(),
            "policy": s.policy.name(),
            "fallback": s.max_output_tokens,
            "margin": s.output_token_margin,
            "sampling": {
                "preset": s.preset_name(),
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "extra_body": extra,
            },
            "reasoning_effort": s.reasoning_effort,
            "cache_isolation": {
                "enabled": self.namespace.is_some(),
                "mode": if self.namespace.is_some() { "run_namespace_prefix" } else { "none" },
                "namespace": self.namespace,
                "namespace_digits": if self.namespace.is_some() { isolation::NAMESPACE_DIGITS } else { 0 },
            },
            "tool_mode": s.tool_mode.name(),
        })
    }
}

/// agentperf-local's checks of a task against its trace (`_prepare_tasks`),
/// in its order.
fn check_task(
    manifest: &Manifest,
    i: usize,
    task: &Task,
    rows: &[Row],
    settings: &Settings,
) -> Result<(), Error> {
    let file = manifest.file.as_str();
    if rows.len() as u64 != task.model_calls {
        return Err(Error::data(
            file,
            task.lines.model_calls,
            format!(
                "`tasks[{i}].model_calls`: the manifest records {} model calls but {} has {} rows",
                task.model_calls,
                task.trace,
                rows.len()
            ),
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.task_id != task.task_id) {
        return Err(Error::data(
            &task.trace,
            r.line,
            format!(
                "`task_id`: {:?} is not the manifest's task {:?} ({file} line {})",
                r.task_id, task.task_id, task.lines.task
            ),
        ));
    }
    if let Some(r) = rows.iter().find(|r| r.messages.is_empty()) {
        return Err(Error::data(
            &task.trace,
            r.line,
            "`messages`: a turn with no messages",
        ));
    }
    if settings.policy == Policy::Exact {
        if let Some(r) = rows.iter().find(|r| r.target().is_none()) {
            return Err(Error::data(
                &task.trace,
                r.line,
                "`target_output_tokens`: a turn with no recorded output length (nor \
                 `recorded_completion_tokens`): policy \"exact\" needs one for every turn \
                 (policy = \"recorded\" or \"fixed\" runs it)",
            ));
        }
    }
    let calls: u64 = rows.iter().map(|r| r.tool_calls_after.len() as u64).sum();
    if calls != task.tool_calls {
        return Err(Error::data(
            file,
            task.lines.tool_calls,
            format!(
                "`tasks[{i}].tool_calls`: the manifest records {} tool calls but {} has {calls} \
                 (recorded_tool_calls_after)",
                task.tool_calls, task.trace
            ),
        ));
    }
    Ok(())
}

/// agentperf-local's `max_tokens` (`_max_output_tokens`): the row's cap
/// (within the run's); else, under `fixed`, the run's cap; else the
/// recorded length plus the margin, between 1 and the run's cap.
pub fn max_tokens(row: &Row, settings: &Settings) -> u32 {
    let cap = u64::from(settings.max_output_tokens);
    let tokens = if let Some(row_cap) = row.max_output_tokens {
        cap.min(row_cap)
    } else if settings.policy == Policy::Fixed {
        cap
    } else {
        match row.target() {
            None => cap,
            Some(target) => (target + u64::from(settings.output_token_margin))
                .min(cap)
                .max(1),
        }
    };
    tokens as u32
}

/// The text of each message, one copy per distinct text.
#[derive(Default)]
struct Texts(HashMap<String, Rc<str>>);

impl Texts {
    fn get(&mut self, text: String) -> Rc<str> {
        if let Some(t) = self.0.get(&text) {
            return t.clone();
        }
        let shared: Rc<str> = Rc::from(text.as_str());
        self.0.insert(text, shared.clone());
        shared
    }
}

/// The request of one row.
fn request(
    row: &Row,
    settings: &Settings,
    namespace: Option<&str>,
    texts: &mut Texts,
    file: &str,
) -> Result<Request, Error> {
    let mut messages = Vec::with_capacity(row.messages.len());
    for (i, m) in row.messages.iter().enumerate() {
        let text = match (i, namespace) {
            (0, Some(ns)) => {
                let first = isolation::isolate(m, ns).map_err(|why| {
                    Error::data(file, row.line, format!("`messages[0].content`: {why}"))
                })?;
                serde_json::to_string(&first)
            }
            _ => serde_json::to_string(m),
        }
        .map_err(|e| Error::internal(format!("a message does not serialise: {e}")))?;
        messages.push(texts.get(text));
    }
    let tools_json = (!row.tools.is_empty())
        .then(|| serde_json::to_string(&row.tools))
        .transpose()
        .map_err(|e| Error::internal(format!("tools do not serialise: {e}")))?
        .map(|t| texts.get(t));
    let max_tokens = max_tokens(row, settings);
    let calls: Vec<Value> = row
        .tool_calls_after
        .iter()
        .map(|c| {
            json!({
                "tool_name": c.tool_name,
                "tool_call_id": c.tool_call_id,
                "command": c.command,
                "step": c.step,
                "action_index": c.action_index,
                "duration_ms": c.duration_ms,
                "recorded_returncode": c.recorded_returncode,
            })
        })
        .collect();
    let expected = json!({"aa": {
        "turn_id": row.turn_id,
        "task_id": row.task_id,
        "conversation_idx": row.conversation_idx,
        "max_tokens": max_tokens,
        "recorded_prompt_tokens": row.recorded_prompt_tokens,
        "recorded_completion_tokens": row.recorded_completion_tokens,
        "target_output_tokens": row.target_output_tokens,
        "recorded_tool_delay_ms": row.simulated_tool_delay_ms_after,
        "tool_calls": calls,
        "policy": settings.policy.name(),
        "tool_mode": settings.tool_mode.name(),
    }});
    Ok(Request {
        messages,
        tools_json,
        max_tokens,
        item_id: row.turn_id.clone(),
        expected_json: expected.to_string(),
        tool_time_ms: row.tool_time_ms(),
    })
}

/// agentperf-local's workload digest (`provenance/benchmark.py`): the
/// SHA-256 of the compact JSON list of `[path, "sha256:<hex>"]` of the
/// manifest and each trace (relative to the manifest's folder, POSIX),
/// sorted by path.
pub fn workload_digest(members: &mut [(String, &[u8])]) -> String {
    members.sort_by(|a, b| a.0.cmp(&b.0));
    let list: Vec<Value> = members
        .iter()
        .map(|(path, bytes)| {
            json!([
                path,
                format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
            ])
        })
        .collect();
    let canonical = serde_json::to_vec(&list).expect("strings serialise");
    format!("sha256:{}", hex::encode(Sha256::digest(&canonical)))
}
