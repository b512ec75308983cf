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
//! With `history = "live"` (never official) each request
//! carries the model's own earlier replies instead, reviewed against the
//! drawn ones as `coding-replay` reviews its recording
//! (`agentload_sdk::live`).

#![forbid(unsafe_code)]

pub mod draw;
pub mod plan;
pub mod settings;
pub mod text;

#[cfg(test)]
mod tests;

use agentload_sdk::live::{carry, Carry, HistoryMode, Recorded, Review};
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
    /// Running sessions by id.
    running: HashMap<String, Running>,
}

/// A running session.
#[derive(Debug)]
struct Running {
    index: u32,
    /// The last turn handed out (1-based).
    turn: u32,
    /// Messages in the last request (live-reply replay keeps them all).
    sent: u32,
    /// The review of the last reply, until the host takes it.
    review: Option<Review>,
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
        let first = self.turn(index, 1);
        let running = Running {
            index,
            turn: 1,
            sent: first.messages.len() as u32,
            review: None,
        };
        if self.running.insert(session.to_owned(), running).is_some() {
            return Err(Error::input(format!("session `{session}` started twice")));
        }
        Ok(first)
    }

    fn next(&mut self, session: &str, outcome: &Outcome) -> Result<Option<Turn>, Error> {
        let running = self
            .running
            .get(session)
            .ok_or_else(|| Error::input(format!("session `{session}` is not running")))?;
        let (index, next) = (running.index, running.turn + 1);
        let steps = self.plans[index as usize].steps.len() as u32;
        if self.settings.history == HistoryMode::Live {
            return self.next_live(session, outcome);
        }
        if next > steps {
            self.running.remove(session);
            return Ok(None);
        }
        let turn = self.turn(index, next);
        let running = self.running.get_mut(session).expect("looked up above");
        running.turn = next;
        Ok(Some(turn))
    }

    /// Live-reply replay: the reply to the last request reviewed against
    /// the drawn answer, then carried on (or the drawn answer instead, or
    /// the session ended) as the policy for its class says.
    fn next_live(&mut self, session: &str, outcome: &Outcome) -> Result<Option<Turn>, Error> {
        let live = &self.settings.live;
        let running = &self.running[session];
        let (index, answered) = (running.index, running.turn);
        let steps = self.plans[index as usize].steps.len() as u32;
        let has_next = answered < steps;
        // The drawn answer to `answered` and the tool result after it; the
        // last turn's drawn answer is text (its words do not matter here).
        let (drawn, delay_ms) = if has_next {
            self.step_messages(index, answered + 1)
        } else {
            (vec![Message::assistant("")], 0)
        };
        let recorded = Recorded {
            answer: Some(&drawn[0]),
            results: &drawn[1..],
            rest: &[],
            has_next,
            turn: answered,
        };
        let Carry { review, messages } = carry(live, outcome, recorded);
        let running = self.running.get_mut(session).expect("looked up above");
        if !matches!(outcome, Outcome::Aborted) {
            running.review = Some(review);
        }
        let Some(messages) = messages else {
            running.turn = steps + 1;
            return Ok(None);
        };
        let keep = running.sent;
        running.sent += messages.len() as u32;
        running.turn = answered + 1;
        Ok(Some(self.request(
            index,
            answered + 1,
            keep,
            messages,
            delay_ms,
        )))
    }

    /// The review of a session's last reply, once.
    fn take_review(&mut self, session: &str) -> Option<Review> {
        self.running.get_mut(session)?.review.take()
    }

    /// What request `turn` (after the first) of session `index` adds: the
    /// previous step's drawn answer (a tool call) and the tool's result;
    /// and the tool's delay.
    fn step_messages(&self, index: u32, turn: u32) -> (Vec<Message>, u64) {
        let plan = &self.plans[index as usize];
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
        (messages, u64::from(tool.delay_ms))
    }

    /// Request `turn` (1-based) of session `index`: the first is the system
    /// prompt and the task; each later one keeps the previous request and
    /// adds the previous step's answer (a tool call) and the tool's result.
    fn turn(&self, index: u32, turn: u32) -> Turn {
        let s = &self.settings;
        let plan = &self.plans[index as usize];
        if turn == 1 {
            let mut system = String::from(SYSTEM);
            system.push_str(&self.corpus.cut(0, s.system_words));
            let task = format!("Task:{}", self.corpus.cut(plan.offset, plan.context));
            let messages = vec![Message::system(system), Message::user(task)];
            return self.request(index, 1, 0, messages, 0);
        }
        let (messages, delay_ms) = self.step_messages(index, turn);
        self.request(index, turn, 2 * (turn - 1), messages, delay_ms)
    }

    /// Request `turn` of session `index`: `keep` messages of the previous
    /// request, then `messages`, after `delay_ms`.
    fn request(
        &self,
        index: u32,
        turn: u32,
        keep: u32,
        messages: Vec<Message>,
        delay_ms: u64,
    ) -> Turn {
        let s = &self.settings;
        let plan = &self.plans[index as usize];
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

    fn next(&mut self, session: &str, outcome: Outcome) -> Result<Option<Turn>, Error> {
        // Recorded: the drawn history goes on whatever the server answered;
        // after a failed turn the host records the rest as aborted.
        self.run()?.next(session, &outcome)
    }

    fn review(&mut self, session: &str) -> Option<Review> {
        self.run.as_mut()?.take_review(session)
    }
}

export_workload!(AgenticSynth);
