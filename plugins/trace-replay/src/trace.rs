//! The trace file: Mooncake's JSONL, one request per line, in time order.

use agentload_sdk::{Config, Error};
use serde::Deserialize;

/// One line (other fields a trace may carry are ignored).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Line {
    /// When it is sent, ms from the trace's start (the host reads it; checked here too).
    pub timestamp: f64,
    /// Prompt tokens.
    pub input_length: u32,
    /// Answer tokens at most.
    pub output_length: u32,
    /// The prompt's blocks, each an id: equal leading ids, equal prefixes.
    pub hash_ids: Vec<u64>,
}

/// The granted trace's lines, checked: every field there, lengths at least 1, times not
/// going back. A bad line is refused naming the file and the line.
pub fn read(config: &Config) -> Result<Vec<Line>, Error> {
    let mut lines = Vec::new();
    let mut previous = f64::NEG_INFINITY;
    for at in config
        .lines(super::TRACE)?
        .filter(|l| !l.text.trim().is_empty())
    {
        let line: Line = at.json()?;
        if !(line.timestamp.is_finite() && line.timestamp >= 0.0) {
            return Err(at.error(format!("`timestamp` {} is not a time (ms)", line.timestamp)));
        }
        if line.timestamp < previous {
            return Err(at.error(format!(
                "`timestamp` {} is before the previous line's {previous}: a trace must be in \
                 time order",
                line.timestamp
            )));
        }
        previous = line.timestamp;
        if line.input_length == 0 {
            return Err(at.error("`input_length` must be at least 1"));
        }
        if line.output_length == 0 {
            return Err(at.error("`output_length` must be at least 1"));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        let file = config.file(super::TRACE)?;
        return Err(Error::data(&file.file_name, 0, "the trace has no lines"));
    }
    Ok(lines)
}
