//! The flat trajectory JSONL (one message per row): parsing and validation.
//!
//! The rules are those of the reference loader (`AgenticInferenceDataset`) and of
//! its JSON Schema (`agentic_inference_dataset_schema.json`). Every problem is a
//! [`Error::Data`] naming the granted file, the 1-based line and the rule broken.

mod fields;
mod row;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use serde_json::Value;

use agentload_sdk::Error;

/// A validated dataset: its conversations in file order.
#[derive(Debug)]
pub struct Dataset {
    /// Conversations in the order they first appear in the file.
    pub conversations: Vec<Conversation>,
}

/// One recorded conversation.
#[derive(Debug)]
pub struct Conversation {
    /// `conversation_id`, non-empty printable ASCII.
    pub id: String,
    /// Rows sorted by `turn`, which counts 1..N (so `rows[i].turn == i + 1`).
    pub rows: Vec<Row>,
}

/// One row of a conversation.
#[derive(Debug)]
pub struct Row {
    /// 1-based line of the row in the file.
    pub line: u32,
    /// `turn`: the row's position in its conversation, from 1.
    pub turn: u32,
    /// The role-specific payload.
    pub body: Body,
    /// `system`, when the row has a string one.
    pub system: Option<String>,
    /// `name`, forwarded on user and assistant messages.
    pub name: Option<String>,
    /// `tools`, serialised as compact JSON.
    pub tools_json: Option<String>,
    /// `delay_seconds`, a non-negative number.
    pub delay_seconds: Option<f64>,
    /// `max_new_tokens`.
    pub max_new_tokens: Option<u32>,
    /// `max_completion_tokens`.
    pub max_completion_tokens: Option<u32>,
}

/// Who wrote a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A user message (a client turn).
    User,
    /// A recorded model reply: the expected output of the client turn before it.
    Assistant,
    /// Tool results (a client turn).
    Tool,
}

impl Role {
    /// The role as the dataset spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// The role-specific part of a row.
#[derive(Debug)]
pub enum Body {
    /// A user row.
    User {
        /// Non-empty message text.
        content: String,
    },
    /// An assistant row: non-empty `content`, non-empty `tool_calls`, or both.
    Assistant {
        /// `content` when present (possibly empty next to tool calls).
        content: Option<String>,
        /// `reasoning_content` when present.
        reasoning_content: Option<String>,
        /// The tool calls, arguments as JSON text.
        tool_calls: Vec<ToolCall>,
        /// The row's `tool_calls` exactly as in the file (compact JSON), `[]` when absent.
        tool_calls_json: String,
        /// The row's `intent_codes` (the workflow domain's ground truth) as
        /// compact JSON, when present.
        intent_codes_json: Option<String>,
    },
    /// A tool row: one or more results.
    Tool {
        /// The results, each one OpenAI `tool` message.
        results: Vec<ToolResult>,
    },
}

/// One recorded tool call.
#[derive(Debug)]
pub struct ToolCall {
    /// Call id, e.g. `functions.bash:0`.
    pub id: String,
    /// Function name.
    pub name: String,
    /// Arguments as JSON text: verbatim when the file holds a string, compact JSON for an object.
    pub arguments: String,
}

/// One recorded tool result.
#[derive(Debug)]
pub struct ToolResult {
    /// Id of the call this result answers.
    pub tool_call_id: String,
    /// Tool output.
    pub content: String,
}

impl Row {
    /// The row's role.
    pub fn role(&self) -> Role {
        match self.body {
            Body::User { .. } => Role::User,
            Body::Assistant { .. } => Role::Assistant,
            Body::Tool { .. } => Role::Tool,
        }
    }

    /// Whether the row is an assistant row with tool calls.
    fn has_tool_calls(&self) -> bool {
        matches!(&self.body, Body::Assistant { tool_calls, .. } if !tool_calls.is_empty())
    }
}

/// Parses and validates the trajectory file `file_name` (the granted file's base name).
pub fn parse(file_name: &str, bytes: &[u8]) -> Result<Dataset, Error> {
    let error = |line: u32, message: String| Error::data(file_name, line, message);
    let mut groups: Vec<(String, Vec<Row>)> = Vec::new();
    // First line of every conversation seen so far, to report interleaving.
    let mut first_lines: HashMap<String, u32> = HashMap::new();
    for (index, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let Some(fields) = parse_line(raw, index == 0).map_err(|m| error(line, m))? else {
            continue;
        };
        if fields.kind.as_ref().and_then(Value::as_str) == Some("dataset_metadata") {
            continue;
        }
        let (id, row) = row::parse(fields, line).map_err(|m| error(line, m))?;
        match groups.last_mut() {
            Some((last, rows)) if *last == id => rows.push(row),
            _ => {
                if let Some(first) = first_lines.get(&id) {
                    return Err(error(
                        line,
                        format!(
                            "rows of conversation '{id}' must be contiguous, but it started at \
                             line {first} and another conversation came in between"
                        ),
                    ));
                }
                first_lines.insert(id.clone(), line);
                groups.push((id, vec![row]));
            }
        }
    }
    if groups.is_empty() {
        return Err(error(
            0,
            "the dataset holds no conversation rows".to_owned(),
        ));
    }
    let conversations = groups
        .into_iter()
        .map(|(id, rows)| conversation(id, rows).map_err(|(line, m)| error(line, m)))
        .collect::<Result<_, _>>()?;
    Ok(Dataset { conversations })
}

/// Decodes one line: `None` for a blank line, else its JSON object's keys.
fn parse_line(raw: &[u8], first: bool) -> Result<Option<fields::Fields>, String> {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let text = std::str::from_utf8(raw).map_err(|e| format!("line is not valid UTF-8: {e}"))?;
    let text = if first {
        text.strip_prefix('\u{feff}').unwrap_or(text)
    } else {
        text
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    let not_an_object = |e: &serde_json::Error| e.classify() == serde_json::error::Category::Data;
    // A line that is not an object stops the read at its first byte: read it again as any
    // JSON, so that broken JSON is reported as such first.
    let parsed = serde_json::from_str(text).map_err(|e| {
        if not_an_object(&e) {
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .err()
                .unwrap_or(e)
        } else {
            e
        }
    });
    match parsed {
        Ok(fields) => Ok(Some(fields)),
        Err(e) if not_an_object(&e) => Err("each line must be a JSON object".to_owned()),
        Err(e) => {
            // serde_json appends " at line 1 column N": keep only the column.
            let full = e.to_string();
            let reason = full
                .rsplit_once(" at line ")
                .map_or(full.as_str(), |(r, _)| r);
            Err(format!("invalid JSON at column {}: {reason}", e.column()))
        }
    }
}

/// Sorts a conversation's rows by turn and checks the numbering and the role sequence.
fn conversation(id: String, mut rows: Vec<Row>) -> Result<Conversation, (u32, String)> {
    // The reference sorts each conversation by `turn` (stable, so duplicates keep file order).
    rows.sort_by_key(|row| row.turn);
    for (index, row) in rows.iter().enumerate() {
        let expected = u32::try_from(index + 1).unwrap_or(u32::MAX);
        if row.turn < expected {
            return Err((
                row.line,
                format!(
                    "conversation '{id}': turn {} appears more than once (turn numbers must \
                     count 1..N without duplicates)",
                    row.turn
                ),
            ));
        }
        if row.turn > expected {
            return Err((
                row.line,
                format!(
                    "conversation '{id}': turn numbers must count 1..N without gaps; expected \
                     turn {expected}, found turn {}",
                    row.turn
                ),
            ));
        }
    }
    check_roles(&id, &rows)?;
    Ok(Conversation { id, rows })
}

/// Walks the reference's role state machine: start→user, user→assistant,
/// assistant→{tool,user}, tool→{assistant,user}, with the tool-call pairing rules.
fn check_roles(id: &str, rows: &[Row]) -> Result<(), (u32, String)> {
    let mut previous: Option<&Row> = None;
    for row in rows {
        let role = row.role();
        let fail = |message: String| Err((row.line, format!("conversation '{id}': {message}")));
        match (previous.map(Row::role), role) {
            (None, Role::User)
            | (Some(Role::User), Role::Assistant)
            | (Some(Role::Assistant), Role::Tool | Role::User)
            | (Some(Role::Tool), Role::Assistant | Role::User) => {}
            (None, _) => {
                return fail(format!(
                    "must start with a 'user' row, but turn {} is '{}'",
                    row.turn,
                    role.as_str()
                ))
            }
            (Some(before), _) => {
                let allowed = match before {
                    Role::User => "'assistant'",
                    Role::Assistant => "'tool' or 'user'",
                    Role::Tool => "'assistant' or 'user'",
                };
                return fail(format!(
                    "invalid role sequence at turn {}: '{}' cannot follow '{}' (allowed: {allowed})",
                    row.turn,
                    role.as_str(),
                    before.as_str()
                ));
            }
        }
        let after_tool_calls = previous.is_some_and(Row::has_tool_calls);
        if role == Role::Tool && !after_tool_calls {
            return fail(format!(
                "the 'tool' row at turn {} must follow an 'assistant' row with non-empty \
                 'tool_calls'",
                row.turn
            ));
        }
        if role == Role::User && after_tool_calls {
            return fail(format!(
                "the 'user' row at turn {} cannot directly follow an 'assistant' row with \
                 'tool_calls'; a 'tool' row must come first",
                row.turn
            ));
        }
        previous = Some(row);
    }
    Ok(())
}
