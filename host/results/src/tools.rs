//! The tool sandbox's answers as records: how each tool call was
//! answered, what it printed (its size, never its text) and what it cost
//! in sandbox fuel.

use serde::{Deserialize, Serialize};

/// How a tool call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// Run in the sandbox.
    Executed,
    /// Answered by a fixed, documented stub (a command the sandbox cannot
    /// run, a tool it does not offer).
    Stubbed,
    /// Not answered by the tool: the sandbox's safety net stopped it.
    Error,
}

impl ToolStatus {
    /// Every status, in this order.
    pub const ALL: [ToolStatus; 3] = [ToolStatus::Executed, ToolStatus::Stubbed, ToolStatus::Error];

    /// Its name in the result files.
    pub fn name(self) -> &'static str {
        match self {
            ToolStatus::Executed => "executed",
            ToolStatus::Stubbed => "stubbed",
            ToolStatus::Error => "error",
        }
    }
}

/// One tool call of a turn's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutedCall {
    /// The call's id as the reply gave it.
    pub id: String,
    /// The function called.
    pub name: String,
    pub status: ToolStatus,
    /// The exit status, for tools that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The call's kind (`view`, `search`, `edit`, `git`, `stub`, `other`,
    /// `error`).
    pub class: String,
    /// Bytes the tool printed (what the next request carries).
    pub output_bytes: u64,
    /// Sandbox fuel the call spent (executed instructions).
    pub fuel: u64,
    /// One line: stubbed commands, the budget or safety net that stopped it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}
