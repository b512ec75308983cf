//! The `bfcl-multi` workload component: BFCL v4 multi-turn entries run
//! against the simulated APIs as BFCL's FC inference loop runs them
//! (`base_handler.inference_multi_turn_FC` with `OpenAICompletionsHandler`).
//!
//! One session per entry (`X-Session-ID` = the entry id), one request per
//! model step. A step's tool calls are decoded (`name(k=repr(v))`), executed
//! on the entry's own instances, and their results go back as one `tool`
//! message per call; a step without a decodable call ends the BFCL turn and
//! the next user turn follows. More than `max_steps_per_turn` (20) executed
//! steps in a turn force-quit the entry. On a miss_func holdout turn the
//! held-out docs are added to the tools and the user message is BFCL's
//! "I have updated some more functions you can choose from. What about
//! now?". After a failed request the remaining BFCL turns are returned as
//! aborted (recorded as missing, never sent).
//!
//! Each request's `expected-json` is `{id, category, turn, step, turns,
//! max_steps, request}`: the scorer re-decodes the completions and
//! re-executes them itself.

wit_bindgen::generate!({ path: "../../wit/agentload-plugin@0.1.0", world: "workload-plugin" });

use crate::data::{self, DataErr, Dataset, Question};
use crate::decode::decode_step;
use crate::exec::{Outcome, Session};
use crate::sim::Globals;
use agentload::plugin::types::{
    ChatMessage, DataError, PluginConfig, PluginError, PluginInfo, PluginKind, Role, Sampling,
    ToolCall, TurnOutcome, TurnRequest,
};
use exports::agentload::plugin::workload::{Guest, SessionPlan};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::HashMap;

/// BFCL's `DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`.
pub const HOLDOUT_PROMPT: &str =
    "I have updated some more functions you can choose from. What about now?";
/// BFCL's Python hint, appended to every tool description but the held-out ones.
const PYTHON_HINT: &str = "python";

/// The workload's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    pub categories: Vec<String>,
    pub sample_pct: std::collections::BTreeMap<String, f64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    pub max_completion_tokens: Option<u32>,
    pub tool_choice: Option<String>,
    /// BFCL's `MAXIMUM_STEP_LIMIT`.
    pub max_steps_per_turn: u32,
    /// The model name in the instance names (BFCL's
    /// `model_name_underline_replaced`); it shows in call results when a call
    /// text names a method inside a string literal.
    pub model_name: String,
}

impl Settings {
    pub fn parse(json: &str) -> Result<Settings, String> {
        let v: Value = if json.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(json).map_err(|e| format!("settings are not JSON: {e}"))?
        };
        let m = v.as_object().ok_or("settings are not an object")?;
        const KNOWN: [&str; 9] = [
            "categories",
            "sample_pct",
            "temperature",
            "top_p",
            "seed",
            "max_completion_tokens",
            "tool_choice",
            "max_steps_per_turn",
            "model_name",
        ];
        if let Some(k) = m.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(format!(
                "unknown setting '{k}' (known: {})",
                KNOWN.join(", ")
            ));
        }
        let num = |k: &str| -> Result<Option<f64>, String> {
            match m.get(k) {
                None => Ok(None),
                Some(x) => x
                    .as_f64()
                    .map(Some)
                    .ok_or_else(|| format!("{k} must be a number")),
            }
        };
        let int = |k: &str| -> Result<Option<i64>, String> {
            match m.get(k) {
                None => Ok(None),
                Some(x) => x
                    .as_i64()
                    .map(Some)
                    .ok_or_else(|| format!("{k} must be an integer")),
            }
        };
        Ok(Settings {
            categories: data::parse_categories(m.get("categories"))?,
            sample_pct: data::parse_pct(m.get("sample_pct"))?,
            // BFCL's default `--temperature`.
            temperature: Some(num("temperature")?.unwrap_or(0.001)),
            top_p: num("top_p")?,
            seed: int("seed")?,
            max_completion_tokens: int("max_completion_tokens")?.map(|n| n as u32),
            tool_choice: m.get("tool_choice").map(|x| x.to_string()),
            max_steps_per_turn: int("max_steps_per_turn")?.unwrap_or(20) as u32,
            model_name: match m.get("model_name") {
                None => "agentload".into(),
                Some(x) => x.as_str().ok_or("model_name must be a string")?.into(),
            },
        })
    }
}

/// One entry in flight.
struct Running {
    q: Question,
    exec: Session,
    messages: Vec<ChatMessage>,
    functions: Vec<Value>,
    tools_json: Option<String>,
    /// The BFCL turn.
    turn: usize,
    /// Steps executed in this turn (BFCL's `count`).
    executed: u32,
    /// Requests issued so far in this session.
    requests: u32,
}

struct State {
    settings: Settings,
    data: Dataset,
    globals: Globals,
    running: HashMap<String, Running>,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn invalid_data(e: DataErr) -> PluginError {
    PluginError::InvalidData(DataError {
        file: e.file,
        line: e.line,
        message: e.message,
    })
}

fn role(r: &str) -> Role {
    match r {
        "system" => Role::System,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => Role::User,
    }
}

fn message(role: Role, content: Option<String>) -> ChatMessage {
    ChatMessage {
        role,
        content,
        reasoning_content: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
    }
}

impl State {
    fn tools(functions: &[Value]) -> Result<Option<String>, PluginError> {
        if functions.is_empty() {
            return Ok(None);
        }
        let tools = bfcl_tools::tools::convert(functions).map_err(PluginError::Internal)?;
        Ok(Some(Value::Array(tools).to_string()))
    }

    fn start(&mut self, id: &str) -> Result<TurnRequest, PluginError> {
        let q = self
            .data
            .find(id)
            .cloned()
            .ok_or_else(|| PluginError::InvalidInput(format!("unknown session {id}")))?;
        // populate_test_cases_with_predefined_functions: the classes' docs,
        // the held-out ones removed; then the Python hint on what is left.
        let mut functions = self.data.docs_for(&q).map_err(PluginError::Internal)?;
        for names in q.missed_function.values() {
            for n in names {
                if let Some(i) = functions.iter().position(|f| f["name"] == n.as_str()) {
                    functions.remove(i);
                }
            }
        }
        bfcl_tools::tools::add_language_hints(&mut functions, PYTHON_HINT)
            .map_err(PluginError::Internal)?;
        let tools_json = Self::tools(&functions)?;
        let mut exec = Session::new(
            &self.settings.model_name,
            &q.id,
            &q.initial_config,
            q.long_context(),
        );
        // The handler's first `execute_multi_turn_func_call([])` creates every instance.
        exec.execute(&[], &q.involved_classes, &mut self.globals);
        let mut r = Running {
            q,
            exec,
            messages: Vec::new(),
            functions,
            tools_json,
            turn: 0,
            executed: 0,
            requests: 0,
        };
        self.begin_turn(&mut r)?;
        let req = self.request(&mut r);
        self.running.insert(id.to_string(), r);
        Ok(req)
    }

    /// Appends turn `r.turn`'s user messages (the holdout prompt and the
    /// held-out docs on a holdout turn).
    fn begin_turn(&self, r: &mut Running) -> Result<(), PluginError> {
        r.executed = 0;
        let t = r.turn;
        if r.q.missed_function.contains_key(&t) {
            let docs = self.data.docs_for(&r.q).map_err(PluginError::Internal)?;
            for n in &r.q.missed_function[&t] {
                if let Some(d) = docs.iter().find(|f| f["name"] == n.as_str()) {
                    r.functions.push(d.clone());
                }
            }
            r.tools_json = Self::tools(&r.functions)?;
            r.messages
                .push(message(Role::User, Some(HOLDOUT_PROMPT.to_string())));
        } else {
            for m in &r.q.turns[t] {
                r.messages
                    .push(message(role(&m.role), Some(m.content.clone())));
            }
        }
        Ok(())
    }

    fn request(&self, r: &mut Running) -> TurnRequest {
        r.requests += 1;
        let s = &self.settings;
        TurnRequest {
            session_id: r.q.id.clone(),
            turn: r.requests,
            item_id: format!("{}#{}", r.q.id, r.requests),
            messages: r.messages.clone(),
            tools_json: r.tools_json.clone(),
            sampling: Sampling {
                temperature: s.temperature,
                top_p: s.top_p,
                top_k: None,
                seed: s.seed,
                max_completion_tokens: s.max_completion_tokens,
                tool_choice_json: s.tool_choice.clone(),
            },
            delay_ms: 0,
            expected_json: json!({
                "id": r.q.id,
                "category": r.q.category,
                "turn": r.turn,
                "step": r.executed,
                "turns": r.q.turns.len(),
                "max_steps": s.max_steps_per_turn,
                "request": r.requests,
            })
            .to_string(),
        }
    }

    fn next(&mut self, id: &str, outcome: TurnOutcome) -> Result<Option<TurnRequest>, PluginError> {
        let Some(mut r) = self.running.remove(id) else {
            return Err(PluginError::InvalidInput(format!(
                "session {id} is not running"
            )));
        };
        let c = match outcome {
            TurnOutcome::Completed(c) => c,
            TurnOutcome::Failed(_) | TurnOutcome::Aborted => {
                // The rest of the entry is missing: one placeholder per
                // remaining BFCL turn, never sent.
                r.turn += 1;
                if r.turn >= r.q.turns.len() {
                    return Ok(None);
                }
                self.begin_turn(&mut r)?;
                let req = self.request(&mut r);
                self.running.insert(id.to_string(), r);
                return Ok(Some(req));
            }
        };
        let decoded = decode_step(
            c.tool_calls
                .iter()
                .map(|t| (t.name.as_str(), t.arguments.as_str())),
            &c.content,
        );
        // The assistant message goes back as the server sent it.
        r.messages.push(ChatMessage {
            role: Role::Assistant,
            content: if c.tool_calls.is_empty() || !c.content.is_empty() {
                Some(c.content.clone())
            } else {
                None
            },
            reasoning_content: None,
            tool_calls: c
                .tool_calls
                .iter()
                .map(|t| ToolCall {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    arguments: t.arguments.clone(),
                })
                .collect(),
            tool_call_id: None,
            name: None,
        });
        match decoded {
            Ok(calls) if !calls.is_empty() => {
                let out = r
                    .exec
                    .execute(&calls, &r.q.involved_classes, &mut self.globals);
                for (o, t) in out.into_iter().zip(&c.tool_calls) {
                    let content = match o {
                        Outcome::Result(s) => s,
                        Outcome::NotPorted(why) => format!("<not ported: {why}>"),
                    };
                    r.messages.push(ChatMessage {
                        tool_call_id: Some(t.id.clone()),
                        ..message(Role::Tool, Some(content))
                    });
                }
                r.executed += 1;
                if r.executed > self.settings.max_steps_per_turn {
                    // Force-quit: the entry ends here.
                    return Ok(None);
                }
            }
            _ => {
                // Empty or undecodable: the BFCL turn is over.
                r.turn += 1;
                if r.turn >= r.q.turns.len() {
                    return Ok(None);
                }
                self.begin_turn(&mut r)?;
            }
        }
        let req = self.request(&mut r);
        self.running.insert(id.to_string(), r);
        Ok(Some(req))
    }
}

/// The exported workload (exported on wasm32; native builds are for tests).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct BfclMulti;

impl Guest for BfclMulti {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "bfcl-multi".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            kind: PluginKind::Workload,
            description: "BFCL v4 multi-turn (base, miss_func, miss_param, long_context): \
                          BFCL's FC inference loop against simulated APIs"
                .to_owned(),
        }
    }

    fn configure(config: PluginConfig) -> Result<Vec<SessionPlan>, PluginError> {
        let settings =
            Settings::parse(&config.settings_json).map_err(PluginError::InvalidConfig)?;
        let data = Dataset::parse(
            config
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        )
        .map_err(invalid_data)?;
        let selected = data::select(&data, &settings.categories, &settings.sample_pct)
            .map_err(PluginError::InvalidConfig)?;
        let mut plans = Vec::new();
        for q in &selected {
            data.docs_for(q).map_err(PluginError::InvalidConfig)?;
            if q.long_context() && data.long_context.is_none() {
                return Err(PluginError::InvalidConfig(
                    "long_context entries need the long_context_constants file".into(),
                ));
            }
            plans.push(SessionPlan {
                id: q.id.clone(),
                // At least one request per BFCL turn.
                expected_turns: q.turns.len() as u32,
            });
        }
        let globals = Globals::new(data.long_context.clone().unwrap_or_default());
        STATE.with_borrow_mut(|s| {
            *s = Some(State {
                settings,
                data,
                globals,
                running: HashMap::new(),
            })
        });
        Ok(plans)
    }

    fn start_session(session_id: String) -> Result<TurnRequest, PluginError> {
        STATE.with_borrow_mut(|s| match s {
            Some(s) => s.start(&session_id),
            None => Err(PluginError::InvalidInput(
                "configure has not been called".into(),
            )),
        })
    }

    fn next_turn(
        session_id: String,
        outcome: TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginError> {
        STATE.with_borrow_mut(|s| match s {
            Some(s) => s.next(&session_id, outcome),
            None => Err(PluginError::InvalidInput(
                "configure has not been called".into(),
            )),
        })
    }
}

#[cfg(target_arch = "wasm32")]
export!(BfclMulti);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload::plugin::types::{Completion, GrantedFile};
    use std::path::PathBuf;

    /// `$AGENTLOAD_BFCL_DIR`, else `~/.cache/agentload/data/bfcl_v4`.
    fn bfcl_dir() -> Option<PathBuf> {
        let dir = std::env::var_os("AGENTLOAD_BFCL_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".cache/agentload/data/bfcl_v4"))
            })?;
        if dir.join("BFCL_v4_multi_turn_miss_func.json").is_file() {
            return Some(dir);
        }
        assert!(
            std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_none(),
            "BFCL data missing at {}: run scripts/fetch-bfcl.sh DIR",
            dir.display()
        );
        println!("note: BFCL data not found; test skipped");
        None
    }

    fn grant(name: &str, path: PathBuf) -> GrantedFile {
        GrantedFile {
            name: name.into(),
            file_name: path.file_name().unwrap().to_string_lossy().into(),
            bytes: std::fs::read(&path).unwrap(),
        }
    }

    fn calls(list: &[(&str, &str)]) -> TurnOutcome {
        TurnOutcome::Completed(Completion {
            content: String::new(),
            reasoning_content: String::new(),
            tool_calls: list
                .iter()
                .enumerate()
                .map(|(i, (n, a))| ToolCall {
                    id: format!("call_{i}"),
                    name: n.to_string(),
                    arguments: a.to_string(),
                })
                .collect(),
            finish_reason: Some("tool_calls".into()),
            usage: None,
        })
    }

    fn text() -> TurnOutcome {
        TurnOutcome::Completed(Completion {
            content: "Done.".into(),
            reasoning_content: String::new(),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: None,
        })
    }

    fn tool_names(req: &TurnRequest) -> Vec<(String, String)> {
        let tools: Value = serde_json::from_str(req.tools_json.as_deref().unwrap()).unwrap();
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["function"]["name"].as_str().unwrap().to_string(),
                    t["function"]["description"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn runs_bfcl_fc_inference_loop() {
        let Some(dir) = bfcl_dir() else { return };
        let mut files = vec![grant(
            "multi_turn_miss_func",
            dir.join("BFCL_v4_multi_turn_miss_func.json"),
        )];
        for stem in ["gorilla_file_system", "posting_api"] {
            files.push(grant(
                &format!("func_doc_{stem}"),
                dir.join(format!("multi_turn_func_doc/{stem}.json")),
            ));
        }
        let plans = BfclMulti::configure(PluginConfig {
            settings_json:
                r#"{"categories": ["miss_func"], "sample_pct": 0.5, "max_steps_per_turn": 3}"#
                    .into(),
            files,
        })
        .unwrap();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].id, "multi_turn_miss_func_0");
        assert_eq!(plans[0].expected_turns, 5);
        let id = || "multi_turn_miss_func_0".to_string();
        let first = BfclMulti::start_session(id()).unwrap();
        assert_eq!(first.session_id, "multi_turn_miss_func_0");
        assert_eq!(first.messages.len(), 1);
        assert_eq!(first.sampling.temperature, Some(0.001));
        assert_eq!(first.sampling.tool_choice_json, None);
        // `sort` is held out until turn 3; every other doc has the hint.
        let tools = tool_names(&first);
        assert!(tools.iter().all(|(n, _)| n != "sort"));
        assert!(tools
            .iter()
            .all(|(_, d)| d.ends_with(" Note that the provided function is in Python 3 syntax.")));
        assert_eq!(tools.len(), 18 - 1 + 14);

        // A step with two calls (one with a bad argument): one tool message
        // per call, with the call's id and BFCL's error string.
        let req = BfclMulti::next_turn(
            id(),
            calls(&[("cd", r#"{"folder": "document"}"#), ("ls", r#"{"b": 1}"#)]),
        )
        .unwrap()
        .unwrap();
        let n = req.messages.len();
        assert_eq!(n, 4);
        assert!(matches!(req.messages[1].role, Role::Assistant));
        assert_eq!(req.messages[1].content, None);
        assert_eq!(req.messages[2].tool_call_id.as_deref(), Some("call_0"));
        assert_eq!(
            req.messages[2].content.as_deref(),
            Some(r#"{"current_working_directory": "document"}"#)
        );
        assert_eq!(
            req.messages[3].content.as_deref(),
            Some("Error during execution: GorillaFileSystem.ls() got an unexpected keyword argument 'b'")
        );
        let e: Value = serde_json::from_str(&req.expected_json).unwrap();
        assert_eq!(e["turn"], 0);
        assert_eq!(e["step"], 1);
        // Text ends turn 0; turns 1 and 2 end at once.
        let req = BfclMulti::next_turn(id(), text()).unwrap().unwrap();
        assert_eq!(req.messages.last().unwrap().content.as_deref(), Some("Perform a detailed search using grep to identify sections in the file pertaining to 'budget analysis'."));
        BfclMulti::next_turn(id(), text()).unwrap().unwrap();
        // Turn 3 is the holdout turn: BFCL's prompt, `sort` added without the hint.
        let req = BfclMulti::next_turn(id(), text()).unwrap().unwrap();
        assert_eq!(
            req.messages.last().unwrap().content.as_deref(),
            Some(HOLDOUT_PROMPT)
        );
        let tools = tool_names(&req);
        let sort = tools.last().unwrap();
        assert_eq!(sort.0, "sort");
        assert!(!sort.1.contains("Python 3 syntax"));
        let e: Value = serde_json::from_str(&req.expected_json).unwrap();
        assert_eq!((e["turn"].as_u64(), e["step"].as_u64()), (Some(3), Some(0)));
        // More than max_steps (3) executed steps: force-quit, the entry ends.
        for _ in 0..3 {
            assert!(BfclMulti::next_turn(id(), calls(&[("pwd", "{}")]))
                .unwrap()
                .is_some());
        }
        assert!(BfclMulti::next_turn(id(), calls(&[("pwd", "{}")]))
            .unwrap()
            .is_none());
        assert!(BfclMulti::next_turn(id(), text()).is_err(), "session over");

        // A failed request: the remaining turns come back once each (aborted).
        let _ = BfclMulti::start_session(id()).unwrap();
        let mut aborted = 0;
        let mut next = BfclMulti::next_turn(id(), TurnOutcome::Failed("HTTP 500".into())).unwrap();
        while next.is_some() {
            aborted += 1;
            next = BfclMulti::next_turn(id(), TurnOutcome::Aborted).unwrap();
        }
        assert_eq!(aborted, 4);
    }
}
