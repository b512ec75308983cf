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

#![forbid(unsafe_code)]

use agentload_sdk::{
    export_workload, Config, Error, Message, Outcome, Role, Sampling, Session, Turn, Workload,
};
use bfcl_multi_turn::data::{self, Dataset, Question};
use bfcl_multi_turn::decode::decode_step;
use bfcl_multi_turn::exec::{self, Session as Instances};
use bfcl_multi_turn::sim::Globals;
use serde_json::{json, Value};
use std::collections::HashMap;

/// BFCL's `DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`.
pub const HOLDOUT_PROMPT: &str =
    "I have updated some more functions you can choose from. What about now?";
/// BFCL's Python hint, appended to every tool description but the held-out ones.
const PYTHON_HINT: &str = "python";

/// The workload's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub categories: Vec<String>,
    pub sample_pct: std::collections::BTreeMap<String, f64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<i64>,
    pub max_completion_tokens: Option<u32>,
    /// `tool_choice` as JSON text.
    pub tool_choice: Option<String>,
    /// BFCL's `MAXIMUM_STEP_LIMIT`.
    pub max_steps_per_turn: u32,
    /// The model name in the instance names (BFCL's
    /// `model_name_underline_replaced`); it shows in call results when a call
    /// text names a method inside a string literal.
    pub model_name: String,
}

impl Settings {
    /// The settings table (every key optional); unknown keys and wrong types
    /// are errors naming the key.
    pub fn from_config(config: &Config) -> Result<Settings, Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            categories: Option<Value>,
            sample_pct: Option<Value>,
            /// BFCL's default `--temperature`.
            #[serde(default = "default_temperature")]
            temperature: f64,
            top_p: Option<f64>,
            seed: Option<i64>,
            max_completion_tokens: Option<u32>,
            tool_choice: Option<Value>,
            #[serde(default = "default_max_steps")]
            max_steps_per_turn: u32,
            #[serde(default = "default_model_name")]
            model_name: String,
        }
        fn default_temperature() -> f64 {
            0.001
        }
        fn default_max_steps() -> u32 {
            20
        }
        fn default_model_name() -> String {
            "agentload".into()
        }
        let t: Table = config.settings()?;
        Ok(Settings {
            categories: data::parse_categories(t.categories.as_ref()).map_err(Error::config)?,
            sample_pct: data::parse_pct(t.sample_pct.as_ref()).map_err(Error::config)?,
            temperature: Some(t.temperature),
            top_p: t.top_p,
            seed: t.seed,
            max_completion_tokens: t.max_completion_tokens,
            tool_choice: t.tool_choice.map(|x| x.to_string()),
            max_steps_per_turn: t.max_steps_per_turn,
            model_name: t.model_name,
        })
    }
}

/// One entry in flight.
struct Running {
    q: Question,
    exec: Instances,
    messages: Vec<Message>,
    functions: Vec<Value>,
    tools_json: Option<String>,
    /// The BFCL turn.
    turn: usize,
    /// Steps executed in this turn (BFCL's `count`).
    executed: u32,
    /// Requests issued so far in this session.
    requests: u32,
    /// How many of `messages` the previous request carried (the next keeps them).
    sent: usize,
}

/// The workload: the settings, the granted data, the simulators' shared
/// state and the entries in flight.
#[derive(Default)]
pub struct BfclMulti {
    settings: Option<Settings>,
    data: Dataset,
    globals: Globals,
    running: HashMap<String, Running>,
}

fn role(r: &str) -> Role {
    match r {
        "system" => Role::System,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        _ => Role::User,
    }
}

/// The OpenAI tools of BFCL function docs, as JSON text (none without docs).
fn tools(functions: &[Value]) -> Result<Option<String>, Error> {
    if functions.is_empty() {
        return Ok(None);
    }
    let tools = bfcl_tools::tools::convert(functions).map_err(Error::internal)?;
    Ok(Some(Value::Array(tools).to_string()))
}

impl BfclMulti {
    fn settings(&self) -> Result<&Settings, Error> {
        self.settings
            .as_ref()
            .ok_or_else(|| Error::input("called before configure"))
    }

    /// Appends turn `r.turn`'s user messages (the holdout prompt and the
    /// held-out docs on a holdout turn).
    fn begin_turn(&self, r: &mut Running) -> Result<(), Error> {
        r.executed = 0;
        let t = r.turn;
        if r.q.missed_function.contains_key(&t) {
            let docs = self.data.docs_for(&r.q).map_err(Error::internal)?;
            for n in &r.q.missed_function[&t] {
                if let Some(d) = docs.iter().find(|f| f["name"] == n.as_str()) {
                    r.functions.push(d.clone());
                }
            }
            r.tools_json = tools(&r.functions)?;
            r.messages.push(Message::user(HOLDOUT_PROMPT));
        } else {
            for m in &r.q.turns[t] {
                r.messages
                    .push(Message::new(role(&m.role), m.content.clone()));
            }
        }
        Ok(())
    }

    fn request(&self, r: &mut Running) -> Result<Turn, Error> {
        r.requests += 1;
        let s = self.settings()?;
        let keep = std::mem::replace(&mut r.sent, r.messages.len());
        Ok(
            Turn::after(r.requests, keep as u32, r.messages[keep..].to_vec())
                .with_item_id(format!("{}#{}", r.q.id, r.requests))
                .with_tools_json(r.tools_json.clone())
                .with_sampling(Sampling {
                    temperature: s.temperature,
                    top_p: s.top_p,
                    seed: s.seed,
                    max_completion_tokens: s.max_completion_tokens,
                    tool_choice_json: s.tool_choice.clone(),
                    ..Sampling::default()
                })
                .with_expected(json!({
                    "id": r.q.id,
                    "category": r.q.category,
                    "turn": r.turn,
                    "step": r.executed,
                    "turns": r.q.turns.len(),
                    "max_steps": s.max_steps_per_turn,
                    "request": r.requests,
                })),
        )
    }
}

impl Workload for BfclMulti {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let settings = Settings::from_config(&config)?;
        let data = Dataset::parse(
            config
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        )
        .map_err(|e| Error::data(e.file, e.line, e.message))?;
        let selected = data::select(&data, &settings.categories, &settings.sample_pct)
            .map_err(Error::config)?;
        let mut sessions = Vec::new();
        for q in &selected {
            data.docs_for(q).map_err(Error::config)?;
            if q.long_context() && data.long_context.is_none() {
                return Err(Error::config(
                    "long_context entries need the long_context_constants file",
                ));
            }
            // At least one request per BFCL turn.
            sessions.push(Session::new(q.id.clone(), q.turns.len() as u32));
        }
        self.globals = Globals::new(data.long_context.clone().unwrap_or_default());
        self.data = data;
        self.settings = Some(settings);
        Ok(sessions)
    }

    fn start(&mut self, id: &str) -> Result<Turn, Error> {
        let q = self
            .data
            .find(id)
            .cloned()
            .ok_or_else(|| Error::input(format!("unknown session {id}")))?;
        // populate_test_cases_with_predefined_functions: the classes' docs,
        // the held-out ones removed; then the Python hint on what is left.
        let mut functions = self.data.docs_for(&q).map_err(Error::internal)?;
        for names in q.missed_function.values() {
            for n in names {
                if let Some(i) = functions.iter().position(|f| f["name"] == n.as_str()) {
                    functions.remove(i);
                }
            }
        }
        bfcl_tools::tools::add_language_hints(&mut functions, PYTHON_HINT)
            .map_err(Error::internal)?;
        let tools_json = tools(&functions)?;
        let mut exec = Instances::new(
            &self.settings()?.model_name,
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
            sent: 0,
            functions,
            tools_json,
            turn: 0,
            executed: 0,
            requests: 0,
        };
        self.begin_turn(&mut r)?;
        let turn = self.request(&mut r)?;
        self.running.insert(id.to_string(), r);
        Ok(turn)
    }

    fn next(&mut self, id: &str, outcome: Outcome) -> Result<Option<Turn>, Error> {
        let Some(mut r) = self.running.remove(id) else {
            return Err(Error::input(format!("session {id} is not running")));
        };
        let c = match outcome {
            Outcome::Completed(c) => c,
            // The rest of the entry is missing: one placeholder per
            // remaining BFCL turn, never sent.
            Outcome::Failed(_) | Outcome::Aborted => return self.next_bfcl_turn(id, r),
        };
        let decoded = decode_step(
            c.tool_calls
                .iter()
                .map(|t| (t.name.as_str(), t.arguments.as_str())),
            &c.content,
        );
        // The assistant message goes back as the server sent it (no reasoning).
        let content = (c.tool_calls.is_empty() || !c.content.is_empty()).then(|| c.content.clone());
        r.messages
            .push(Message::assistant_calls(content, c.tool_calls.clone()));
        let max_steps = self.settings()?.max_steps_per_turn;
        match decoded {
            Ok(calls) if !calls.is_empty() => {
                let out = r
                    .exec
                    .execute(&calls, &r.q.involved_classes, &mut self.globals);
                for (o, t) in out.into_iter().zip(&c.tool_calls) {
                    let content = match o {
                        exec::Outcome::Result(s) => s,
                        exec::Outcome::NotPorted(why) => format!("<not ported: {why}>"),
                    };
                    r.messages.push(Message::tool(t.id.clone(), content));
                }
                r.executed += 1;
                if r.executed > max_steps {
                    // Force-quit: the entry ends here.
                    return Ok(None);
                }
            }
            // Empty or undecodable: the BFCL turn is over.
            _ => return self.next_bfcl_turn(id, r),
        }
        self.issue(id, r)
    }
}

impl BfclMulti {
    /// The first request of the entry's next BFCL turn; none after its last.
    fn next_bfcl_turn(&mut self, id: &str, mut r: Running) -> Result<Option<Turn>, Error> {
        r.turn += 1;
        if r.turn >= r.q.turns.len() {
            return Ok(None);
        }
        self.begin_turn(&mut r)?;
        self.issue(id, r)
    }

    /// The entry's next request; the entry stays in flight.
    fn issue(&mut self, id: &str, mut r: Running) -> Result<Option<Turn>, Error> {
        let turn = self.request(&mut r)?;
        self.running.insert(id.to_string(), r);
        Ok(Some(turn))
    }
}

export_workload!(BfclMulti);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_sdk::{Completion, ToolCall};
    use std::path::PathBuf;

    fn bfcl_dir() -> Option<PathBuf> {
        bfcl_test_data::bfcl_dir("BFCL_v4_multi_turn_miss_func.json")
    }

    fn grant(config: Config, name: &str, path: PathBuf) -> Config {
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        config.grant(name, file_name, std::fs::read(&path).unwrap())
    }

    fn calls(list: &[(&str, &str)]) -> Outcome {
        Outcome::Completed(Completion {
            tool_calls: list
                .iter()
                .enumerate()
                .map(|(i, (n, a))| ToolCall::new(format!("call_{i}"), *n, *a))
                .collect(),
            finish_reason: Some("tool_calls".into()),
            ..Completion::text("")
        })
    }

    fn text() -> Outcome {
        Outcome::Completed(Completion::text("Done."))
    }

    fn tool_names(turn: &Turn) -> Vec<(String, String)> {
        let tools: Value = serde_json::from_str(turn.tools_json.as_deref().unwrap()).unwrap();
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
        let mut config = grant(
            Config::with_settings(
                r#"{"categories": ["miss_func"], "sample_pct": 0.5, "max_steps_per_turn": 3}"#,
            ),
            "multi_turn_miss_func",
            dir.join("BFCL_v4_multi_turn_miss_func.json"),
        );
        for stem in ["gorilla_file_system", "posting_api"] {
            config = grant(
                config,
                &format!("func_doc_{stem}"),
                dir.join(format!("multi_turn_func_doc/{stem}.json")),
            );
        }
        let mut w = BfclMulti::default();
        let plans = w.configure(config).unwrap();
        assert_eq!(plans.len(), 1);
        assert_eq!(plans[0].id, "multi_turn_miss_func_0");
        assert_eq!(plans[0].expected_turns, 5);
        let id = || "multi_turn_miss_func_0".to_string();
        let first = w.start(&id()).unwrap();
        assert_eq!(first.item_id.as_deref(), Some("multi_turn_miss_func_0#1"));
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
        let req = w
            .next(
                &id(),
                calls(&[("cd", r#"{"folder": "document"}"#), ("ls", r#"{"b": 1}"#)]),
            )
            .unwrap()
            .unwrap();
        // The first request (one user message) kept, the step's messages added.
        assert_eq!((req.keep, req.messages.len()), (1, 3));
        assert!(matches!(req.messages[0].role, Role::Assistant));
        assert_eq!(req.messages[0].content, None);
        assert_eq!(req.messages[1].tool_call_id.as_deref(), Some("call_0"));
        assert_eq!(
            req.messages[1].content.as_deref(),
            Some(r#"{"current_working_directory": "document"}"#)
        );
        assert_eq!(
            req.messages[2].content.as_deref(),
            Some("Error during execution: GorillaFileSystem.ls() got an unexpected keyword argument 'b'")
        );
        let e: Value = serde_json::from_str(&req.expected_json).unwrap();
        assert_eq!(e["turn"], 0);
        assert_eq!(e["step"], 1);
        // Text ends turn 0; turns 1 and 2 end at once.
        let req = w.next(&id(), text()).unwrap().unwrap();
        assert_eq!(req.messages.last().unwrap().content.as_deref(), Some("Perform a detailed search using grep to identify sections in the file pertaining to 'budget analysis'."));
        w.next(&id(), text()).unwrap().unwrap();
        // Turn 3 is the holdout turn: BFCL's prompt, `sort` added without the hint.
        let req = w.next(&id(), text()).unwrap().unwrap();
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
            assert!(w.next(&id(), calls(&[("pwd", "{}")])).unwrap().is_some());
        }
        assert!(w.next(&id(), calls(&[("pwd", "{}")])).unwrap().is_none());
        assert!(w.next(&id(), text()).is_err(), "session over");

        // A failed request: the remaining turns come back once each (aborted).
        let _ = w.start(&id()).unwrap();
        let mut aborted = 0;
        let mut next = w.next(&id(), Outcome::Failed("HTTP 500".into())).unwrap();
        while next.is_some() {
            aborted += 1;
            next = w.next(&id(), Outcome::Aborted).unwrap();
        }
        assert_eq!(aborted, 4);
    }
}
