//! `agentic-synth`: synthetic agentic-coding sessions with AA-AgentPerf's
//! shape, drawn from a seed, so a sweep to thousands of agents needs no
//! private data set.
//!
//! Each session is a coding agent's trajectory: a shared system prompt and
//! tool list, a first user message holding the task and the files it shows
//! (its length drawn log-normally), then turns that call a tool (short
//! outputs, or long reasoning first) whose results grow the context, and a
//! last turn that answers at length. Defaults give AA-AgentPerf's shape: a
//! mean prompt of about 27K tokens within 5K-131K, tool delays of median
//! about 1 s and at most 5 s (see `settings.rs`, and the test that checks
//! the shape). Each turn's drawn output length is sent as its
//! `max_completion_tokens`; the simulator's `fill` responder answers exactly
//! that many tokens.
//!
//! Every request carries the whole history, recorded (the answers are the
//! drawn ones, not the server's): the same request bytes for every run of a
//! seed, as a replay. The per-session state is the drawn plan and a turn
//! counter; text is cut from one shared corpus when a request is built.

#![forbid(unsafe_code)]

pub mod draw;
pub mod plan;
pub mod settings;
pub mod text;

#[cfg(test)]
mod tests;

use agentload_sdk::{
    export_workload, Config, Error, Message, Outcome, Sampling, Session, ToolCall, Turn, Workload,
};
use plan::{Plan, TOOLS};
use settings::Settings;
use std::collections::HashMap;
use text::{Corpus, TOOLS_JSON};

/// The start of the system prompt (the rest is corpus text).
const SYSTEM: &str = "You are a coding agent working in a repository. \
                      Use the tools to inspect and change it until the task is done.";

/// Session ids: this prefix and the session's index.
const PREFIX: &str = "synth-";

/// The workload: the run set up by `configure`.
#[derive(Debug, Default)]
pub struct AgenticSynth {
    run: Option<Run>,
}

/// What `configure` set up.
#[derive(Debug)]
struct Run {
    settings: Settings,
    corpus: Corpus,
    plans: Vec<Plan>,
    /// Running sessions: index and the next turn (1-based).
    running: HashMap<String, (u32, u32)>,
}

impl Run {
    fn configure(config: &Config) -> Result<Self, Error> {
        let settings = Settings::from_config(config)?;
        let corpus = Corpus::new(settings.seed, 2 * settings.max_context);
        let plans = (0..settings.sessions())
            .map(|i| Plan::draw(&settings, i, corpus.words()))
            .collect();
        Ok(Self {
            settings,
            corpus,
            plans,
            running: HashMap::new(),
        })
    }

    fn sessions(&self) -> Vec<Session> {
        (0..)
            .zip(&self.plans)
            .map(|(i, p)| Session::new(format!("{PREFIX}{i}"), p.steps.len() as u32))
            .collect()
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        let index = session
            .strip_prefix(PREFIX)
            .and_then(|i| i.parse::<u32>().ok())
            .filter(|&i| (i as usize) < self.plans.len())
            .ok_or_else(|| Error::input(format!("unknown session `{session}`")))?;
        if self
            .running
            .insert(session.to_owned(), (index, 1))
            .is_some()
        {
            return Err(Error::input(format!("session `{session}` started twice")));
        }
        Ok(self.turn(index, 1))
    }

    fn next(&mut self, session: &str) -> Result<Option<Turn>, Error> {
        let (index, turn) = self
            .running
            .get_mut(session)
            .ok_or_else(|| Error::input(format!("session `{session}` is not running")))?;
        let (index, next) = (*index, *turn + 1);
        if next as usize > self.plans[index as usize].steps.len() {
            self.running.remove(session);
            return Ok(None);
        }
        *turn = next;
        Ok(Some(self.turn(index, next)))
    }

    /// Request `turn` (1-based) of session `index`: the first is the system
    /// prompt and the task; each later one keeps the previous request and
    /// adds the previous step's answer (a tool call) and the tool's result.
    fn turn(&self, index: u32, turn: u32) -> Turn {
        let s = &self.settings;
        let plan = &self.plans[index as usize];
        let (keep, messages, delay_ms) = if turn == 1 {
            let mut system = String::from(SYSTEM);
            system.push_str(&self.corpus.cut(0, s.system_words));
            let task = format!("Task:{}", self.corpus.cut(plan.offset, plan.context));
            (0, vec![Message::system(system), Message::user(task)], 0)
        } else {
            let j = turn - 1;
            let done = &plan.steps[..j as usize - 1];
            let at = plan.offset
                + plan.context
                + done
                    .iter()
                    .map(|d| d.osl + d.tool.map_or(0, |t| t.output))
                    .sum::<u32>();
            let step = &plan.steps[j as usize - 1];
            let tool = step.tool.expect("only a session's last turn calls no tool");
            let id = format!("call_{j}");
            let call = ToolCall {
                id: id.clone(),
                name: TOOLS[tool.tool as usize].to_owned(),
                arguments: format!(r#"{{"path":"src/module_{j}.rs"}}"#),
            };
            let answer = self.corpus.cut(at, step.osl);
            let result = self.corpus.cut(at + step.osl, tool.output);
            let messages = vec![
                Message::assistant_calls(Some(answer), vec![call]),
                Message::tool(id, result),
            ];
            (2 * j, messages, u64::from(tool.delay_ms))
        };
        let step = &plan.steps[turn as usize - 1];
        let sampling = Sampling {
            temperature: s.temperature,
            max_completion_tokens: Some(step.osl),
            ..Sampling::default()
        };
        Turn::after(turn, keep, messages)
            .with_tools_json(Some(TOOLS_JSON.to_owned()))
            .with_sampling(sampling)
            .with_delay_ms(if s.inject_tool_delay { delay_ms } else { 0 })
    }
}

impl AgenticSynth {
    fn run(&mut self) -> Result<&mut Run, Error> {
        self.run
            .as_mut()
            .ok_or_else(|| Error::input("configure has not been called"))
    }
}

impl Workload for AgenticSynth {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let run = Run::configure(&config)?;
        let sessions = run.sessions();
        self.run = Some(run);
        Ok(sessions)
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        self.run()?.start(session)
    }

    fn next(&mut self, session: &str, _outcome: Outcome) -> Result<Option<Turn>, Error> {
        // The recorded history goes on whatever the server answered; after a
        // failed turn the host records the rest as aborted.
        self.run()?.next(session)
    }
}

export_workload!(AgenticSynth);
