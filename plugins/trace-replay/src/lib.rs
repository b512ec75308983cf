//! `trace-replay`: a Mooncake-format trace replayed request by request. Each JSONL line
//! (`{"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [..]}`) is one
//! session of one request: a user message of `input_length` words, answered with at most
//! `output_length` tokens (`max_completion_tokens`). The host owns the times: with
//! `[load.arrivals] process = "trace"` it sends line `k` (session `trace-k`) at the line's
//! `timestamp`, read from the same granted file.
//!
//! The prompt is built block by block so that requests sharing hash blocks share their
//! prefixes, as the trace's `hash_ids` say: block `j` holds words `j·B` to `(j+1)·B − 1`
//! (`B = block_tokens`, Mooncake's 512), and its words are a function of its hash id alone.
//! Two requests whose first `k` ids agree therefore agree on their first `k·B` words (a
//! shorter last block on as many words as both have); where their ids part, their texts
//! part at once: a block's first word is `WORDS[id mod 1024]`, so blocks whose ids differ
//! modulo 1024 differ in their first word (ids equal modulo 1024 share that one word). Words
//! past the last hash block are the request's own. Words are 1,024 four-letter words, each
//! one token with its leading space in Qwen3's vocabulary and one piece of the simulator's
//! approximate counter: `input_length` words are about `input_length` tokens, plus the chat
//! template's.

#![forbid(unsafe_code)]

pub mod prompt;
pub mod trace;

#[cfg(test)]
mod tests;

use agentload_sdk::{
    export_workload, Config, Error, Message, Outcome, Sampling, Session, Turn, Workload,
};
use serde::Deserialize;
use trace::Line;

/// Session ids: this prefix and the line's place in the trace (0-based).
const PREFIX: &str = "trace-";

/// The data file's name in the run config (`[performance.data] trace = "FILE"`).
pub const TRACE: &str = "trace";

/// The settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Tokens per hash block (Mooncake's traces: 512).
    pub block_tokens: u32,
    /// Sent as `temperature` when set.
    pub temperature: Option<f64>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            block_tokens: 512,
            temperature: None,
        }
    }
}

/// The workload.
#[derive(Debug, Default)]
pub struct TraceReplay {
    run: Option<Run>,
}

#[derive(Debug)]
struct Run {
    settings: Settings,
    lines: Vec<Line>,
}

impl Run {
    fn configure(config: &Config) -> Result<Self, Error> {
        let settings: Settings = config.settings()?;
        if settings.block_tokens == 0 {
            return Err(Error::config("settings: `block_tokens` must be at least 1"));
        }
        if settings.temperature.is_some_and(|t| t.is_nan() || t < 0.0) {
            return Err(Error::config(
                "settings: `temperature` must be a non-negative number",
            ));
        }
        let lines = trace::read(config)?;
        Ok(Self { settings, lines })
    }

    fn index(&self, session: &str) -> Result<usize, Error> {
        session
            .strip_prefix(PREFIX)
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|&i| i < self.lines.len())
            .ok_or_else(|| Error::input(format!("unknown session `{session}`")))
    }

    fn start(&self, session: &str) -> Result<Turn, Error> {
        let index = self.index(session)?;
        let line = &self.lines[index];
        let text = prompt::text(line, index as u64, self.settings.block_tokens);
        let sampling = Sampling {
            temperature: self.settings.temperature,
            max_completion_tokens: Some(line.output_length),
            ..Sampling::default()
        };
        Ok(Turn::new(1, vec![Message::user(text)]).with_sampling(sampling))
    }
}

impl TraceReplay {
    fn run(&self) -> Result<&Run, Error> {
        self.run
            .as_ref()
            .ok_or_else(|| Error::input("configure has not been called"))
    }
}

impl Workload for TraceReplay {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let run = Run::configure(&config)?;
        let sessions = (0..run.lines.len())
            .map(|k| Session::new(format!("{PREFIX}{k}"), 1))
            .collect();
        self.run = Some(run);
        Ok(sessions)
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        self.run()?.start(session)
    }

    fn next(&mut self, session: &str, _outcome: Outcome) -> Result<Option<Turn>, Error> {
        self.run()?.index(session)?;
        Ok(None)
    }
}

export_workload!(TraceReplay);
