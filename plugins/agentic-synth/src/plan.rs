//! A session's trajectory, drawn from the seed: how long its first context
//! is, and per turn its output length and the tool it calls. Nothing else
//! is kept per session; messages are cut from the shared corpus when a
//! request is built.

use crate::draw::Rng;
use crate::settings::Settings;

/// The tools a turn may call (their definitions are in `text.rs`).
pub const TOOLS: [&str; 5] = ["bash", "read_file", "write_file", "search", "edit"];

/// One request of a session and the answer it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Output length (sent as `max_completion_tokens`).
    pub osl: u32,
    /// The tool the answer calls, with its result's length and execution
    /// time; none on the session's last turn.
    pub tool: Option<ToolUse>,
}

/// A tool call and what it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolUse {
    /// Index into [`TOOLS`].
    pub tool: u8,
    /// Words of its result.
    pub output: u32,
    /// Its execution time, waited before the next request.
    pub delay_ms: u32,
}

/// A session's trajectory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Words of the first user message.
    pub context: u32,
    /// Where the session's text starts in the corpus (sessions differ
    /// after the shared system prompt).
    pub offset: u32,
    pub steps: Vec<Step>,
}

impl Plan {
    /// Session `index`'s trajectory; `corpus_words` bounds its offset.
    pub fn draw(settings: &Settings, index: u32, corpus_words: u32) -> Self {
        let mut rng = Rng::new(settings.seed, u64::from(index));
        let turns = rng.range(settings.turns_min, settings.turns_max);
        let context = rng.draw(&settings.context);
        let offset = rng.range(0, corpus_words - settings.max_context);
        let mut prompt = settings.system_words + context;
        let mut steps = Vec::with_capacity(turns as usize);
        for turn in 1..=turns {
            let last = turn == turns;
            let long = last || rng.unit() < settings.reasoning_share;
            let osl = rng.draw(if long {
                &settings.reasoning_osl
            } else {
                &settings.tool_call_osl
            });
            let tool = ToolUse {
                tool: rng.range(0, TOOLS.len() as u32 - 1) as u8,
                output: rng.draw(&settings.tool_output),
                delay_ms: rng.draw(&settings.tool_delay_ms),
            };
            // The next request would not fit: this turn answers and ends it.
            let next = prompt + osl + tool.output + settings.reasoning_osl.max;
            if last || next > settings.max_context {
                steps.push(Step { osl, tool: None });
                break;
            }
            steps.push(Step {
                osl,
                tool: Some(tool),
            });
            prompt += osl + tool.output;
        }
        Self {
            context,
            offset,
            steps,
        }
    }

    /// Words of turn `turn`'s prompt (1-based): the system prompt, the
    /// first context and every earlier answer and tool result.
    pub fn prompt_words(&self, settings: &Settings, turn: u32) -> u32 {
        let earlier: u32 = self.steps[..turn as usize - 1]
            .iter()
            .map(|s| s.osl + s.tool.map_or(0, |t| t.output))
            .sum();
        settings.system_words + self.context + earlier
    }
}
