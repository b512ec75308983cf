//! The tool sandbox's answers as records: how each tool call was
//! answered, what it printed (its size, never its text) and what it cost
//! in sandbox fuel.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// Why a closed-loop session ended after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedEnd {
    /// The reply called no tool: the agent is done.
    NoToolCall,
    /// The session reached `tools.max_turns`; the reply's calls were not run.
    TurnCap,
    /// The next request would not fit the context window (`model.context_window`,
    /// else the server's): it was never sent (the turn is recorded failed,
    /// `not sent: ...`), or the server refused it as over its context (the
    /// turn failed with the server's cause).
    ContextWindow,
    /// The turn failed (the server's error): there is no reply to go on from.
    Failed,
}

impl ClosedEnd {
    /// Every end, in this order.
    pub const ALL: [ClosedEnd; 4] = [
        ClosedEnd::NoToolCall,
        ClosedEnd::TurnCap,
        ClosedEnd::ContextWindow,
        ClosedEnd::Failed,
    ];

    /// Its name in the result files.
    pub fn name(self) -> &'static str {
        match self {
            ClosedEnd::NoToolCall => "no_tool_call",
            ClosedEnd::TurnCap => "turn_cap",
            ClosedEnd::ContextWindow => "context_window",
            ClosedEnd::Failed => "failed",
        }
    }
}

/// A closed-loop turn (`history = "closed"`): how the tool calls of its
/// reply were answered (their results make the session's next request),
/// and how the turn compares with the recording at the same place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedTurn {
    /// The request's place in its session (1: the recording's first request).
    pub index: u32,
    /// Each tool call of the reply, as the sandbox answered it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<ExecutedCall>,
    /// Whether the reply's calls (names and arguments, in order) are the
    /// recorded reply's at the same place; none past the recording's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows_recording: Option<bool>,
    /// Bytes of the request body (as sent, or as it would have been).
    pub request_bytes: u64,
    /// The request body's sha256 (hex), as sent or as it would have been:
    /// a resume checks the request it makes again against it. None in
    /// records written before it was kept (a resume then compares sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sha256: Option<String>,
    /// Bytes of the recording's request at the same place; none past its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_request_bytes: Option<u64>,
    /// Wall time the calls took in the sandbox here, µs (machine-dependent:
    /// cost tables only; never in a schedule).
    #[serde(default)]
    pub sandbox_us: u64,
    /// Why the session ended after this turn; none when it went on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<ClosedEnd>,
    /// On a session's first turn: the workspace it works in, as the config
    /// names it (`tools.workspace`, `tools.workspaces.<task>`), or `empty`
    /// (its task has none granted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// On the turn that ends the session: bytes its copy-on-write overlay
    /// holds (its own changes; the workspace itself is shared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay_bytes: Option<u64>,
}

/// One closed-loop session's numbers (`closed_loop.json`'s `sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedSessionStats {
    pub session_id: String,
    /// The workspace it worked in: `tools.workspace`,
    /// `tools.workspaces.<task>`, or `empty` (its task has none granted).
    #[serde(default)]
    pub workspace: String,
    /// Bytes its copy-on-write overlay held when it ended (its own changes;
    /// none when it stopped otherwise).
    #[serde(default)]
    pub overlay_bytes: Option<u64>,
    /// Requests sent or refused before sending (the closed turns).
    pub turns: u32,
    /// Why it ended (`no_tool_call`, `turn_cap`, `context_window`, `failed`);
    /// none when it stopped otherwise (the run's stop, an interrupt).
    pub end: Option<ClosedEnd>,
    /// Calls by tool, then by status.
    pub calls: BTreeMap<String, BTreeMap<ToolStatus, u32>>,
    /// Bytes the tools printed (what the tool messages carry, before the
    /// harness's own words).
    pub output_bytes: u64,
    /// Sandbox fuel its calls spent (executed instructions: the same on
    /// every machine and under any load; with several sessions to an
    /// instance, within about 1 % of it from run to run, as what else ran
    /// there first moves it).
    pub fuel: u64,
    /// Wall time its calls took in the sandbox here, ms (machine-dependent).
    pub sandbox_ms: f64,
    /// How many turns, from the first, the model's calls were the recorded
    /// ones (the common prefix of the two action sequences).
    pub actions_followed: u32,
    /// Bytes of its first and last request.
    pub first_request_bytes: u64,
    pub last_request_bytes: u64,
}

/// The closed-loop sessions' request size at one place, beside the
/// recording's at the same place (sessions that have both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextGrowth {
    /// The request's place in its session (1: the first request).
    pub index: u32,
    pub sessions: u64,
    /// Mean request bytes, closed-loop and recorded.
    pub closed_bytes: f64,
    pub recorded_bytes: f64,
    /// closed / recorded.
    pub ratio: f64,
}

/// A closed-loop run's numbers (`closed_loop.json` in the phase's folder).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedLoopSummary {
    pub history: String,
    /// Always false: requests carry the model's own tool calls' results.
    pub official: bool,
    pub sessions: Vec<ClosedSessionStats>,
    pub turns: u64,
    /// Calls by status (`executed`, `stubbed`, `error`).
    pub calls: BTreeMap<ToolStatus, u64>,
    /// Calls by class (`view`, `search`, `edit`, `git`, `stub`, `other`, `error`).
    pub classes: BTreeMap<String, u64>,
    pub output_bytes: u64,
    pub fuel: u64,
    pub sandbox_ms: f64,
    /// Sessions by how they ended.
    pub ends: BTreeMap<String, u64>,
    /// Sessions by the common prefix of their actions with the recording's
    /// (turns followed -> sessions).
    pub actions_followed: BTreeMap<u32, u64>,
    /// Mean of `actions_followed` over the sessions.
    pub actions_followed_mean: f64,
    /// Request size against the recording's, by place.
    pub context_growth: Vec<ContextGrowth>,
    /// Sessions by the workspace they worked in (`tools.workspace`,
    /// `tools.workspaces.<task>`, `empty`: a task with none granted).
    #[serde(default)]
    pub workspaces: BTreeMap<String, u64>,
    /// The copy-on-write overlays of the sessions that ended by a rule
    /// (their own changes; the workspaces are shared), bytes.
    #[serde(default)]
    pub overlay_bytes: OverlayBytes,
}

/// Overlay sizes over sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverlayBytes {
    /// Sessions measured.
    pub sessions: u64,
    pub mean: f64,
    pub max: u64,
    pub total: u64,
}

impl ClosedLoopSummary {
    /// The summary of a closed-loop phase's records (`(session, block)` in
    /// any order); `order` lists the sessions as planned.
    pub fn of<'a>(
        turns: impl IntoIterator<Item = (&'a str, &'a ClosedTurn)>,
        order: &[String],
    ) -> Self {
        let mut by: BTreeMap<&str, Vec<&ClosedTurn>> = BTreeMap::new();
        for (session, turn) in turns {
            by.entry(session).or_default().push(turn);
        }
        let mut growth: BTreeMap<u32, (u64, u64, u64)> = BTreeMap::new();
        let mut out = Self {
            history: "closed".into(),
            official: false,
            sessions: Vec::new(),
            turns: 0,
            calls: BTreeMap::new(),
            classes: BTreeMap::new(),
            output_bytes: 0,
            fuel: 0,
            sandbox_ms: 0.0,
            ends: BTreeMap::new(),
            actions_followed: BTreeMap::new(),
            actions_followed_mean: 0.0,
            context_growth: Vec::new(),
            workspaces: BTreeMap::new(),
            overlay_bytes: OverlayBytes::default(),
        };
        let ordered = order
            .iter()
            .filter_map(|id| by.get_key_value(id.as_str()))
            .chain(by.iter().filter(|(id, _)| !order.iter().any(|o| o == *id)));
        for (id, turns) in ordered {
            let mut turns = turns.clone();
            turns.sort_by_key(|t| t.index);
            let mut s = ClosedSessionStats {
                session_id: (*id).to_owned(),
                workspace: turns
                    .iter()
                    .find_map(|t| t.workspace.clone())
                    .unwrap_or_default(),
                overlay_bytes: turns.iter().find_map(|t| t.overlay_bytes),
                turns: turns.len() as u32,
                end: turns.iter().find_map(|t| t.end),
                calls: BTreeMap::new(),
                output_bytes: 0,
                fuel: 0,
                sandbox_ms: 0.0,
                actions_followed: turns
                    .iter()
                    .take_while(|t| t.follows_recording == Some(true))
                    .count() as u32,
                first_request_bytes: turns.first().map_or(0, |t| t.request_bytes),
                last_request_bytes: turns.last().map_or(0, |t| t.request_bytes),
            };
            for t in &turns {
                s.sandbox_ms += t.sandbox_us as f64 / 1e3;
                for c in &t.calls {
                    *s.calls
                        .entry(c.name.clone())
                        .or_default()
                        .entry(c.status)
                        .or_insert(0) += 1;
                    *out.calls.entry(c.status).or_insert(0) += 1;
                    *out.classes.entry(c.class.clone()).or_insert(0) += 1;
                    s.output_bytes += c.output_bytes;
                    s.fuel += c.fuel;
                }
                if let Some(recorded) = t.recorded_request_bytes {
                    let g = growth.entry(t.index).or_insert((0, 0, 0));
                    *g = (g.0 + 1, g.1 + t.request_bytes, g.2 + recorded);
                }
            }
            out.turns += u64::from(s.turns);
            out.output_bytes += s.output_bytes;
            out.fuel += s.fuel;
            out.sandbox_ms += s.sandbox_ms;
            let end = s.end.map_or("stopped", ClosedEnd::name);
            *out.ends.entry(end.to_owned()).or_insert(0) += 1;
            *out.actions_followed.entry(s.actions_followed).or_insert(0) += 1;
            if !s.workspace.is_empty() {
                *out.workspaces.entry(s.workspace.clone()).or_insert(0) += 1;
            }
            if let Some(bytes) = s.overlay_bytes {
                let o = &mut out.overlay_bytes;
                (o.sessions, o.total, o.max) = (o.sessions + 1, o.total + bytes, o.max.max(bytes));
            }
            out.sessions.push(s);
        }
        if out.overlay_bytes.sessions > 0 {
            out.overlay_bytes.mean =
                out.overlay_bytes.total as f64 / out.overlay_bytes.sessions as f64;
        }
        if !out.sessions.is_empty() {
            out.actions_followed_mean = out
                .sessions
                .iter()
                .map(|s| f64::from(s.actions_followed))
                .sum::<f64>()
                / out.sessions.len() as f64;
        }
        out.context_growth = growth
            .into_iter()
            .map(|(index, (n, closed, recorded))| ContextGrowth {
                index,
                sessions: n,
                closed_bytes: closed as f64 / n as f64,
                recorded_bytes: recorded as f64 / n as f64,
                ratio: if recorded == 0 {
                    0.0
                } else {
                    closed as f64 / recorded as f64
                },
            })
            .collect();
        out
    }

    /// `report.txt`'s lines.
    pub fn report_lines(&self) -> String {
        let count = |s: ToolStatus| self.calls.get(&s).copied().unwrap_or(0);
        let mut text = format!(
            "NON-OFFICIAL: closed-loop replay (history = \"closed\"): after the recording's first \
             request, requests carry the model's own replies and its tool calls' results from \
             the sandbox\nclosed loop: {} sessions, {} turns; tool calls {} executed, {} stubbed, \
             {} errors; {} bytes of tool output; {:.1} G fuel ({:.0} ms in the sandbox here)\n",
            self.sessions.len(),
            self.turns,
            count(ToolStatus::Executed),
            count(ToolStatus::Stubbed),
            count(ToolStatus::Error),
            self.output_bytes,
            self.fuel as f64 / 1e9,
            self.sandbox_ms,
        );
        let ends: Vec<String> = self.ends.iter().map(|(e, n)| format!("{e} {n}")).collect();
        text.push_str(&format!(
            "closed loop: sessions ended: {}; the model followed the recorded actions for {:.1} \
             turns on average\n",
            ends.join(", "),
            self.actions_followed_mean
        ));
        if !self.workspaces.is_empty() {
            let by: Vec<String> = self
                .workspaces
                .iter()
                .map(|(w, n)| format!("{w} {n}"))
                .collect();
            let empty = match self.workspaces.get("empty") {
                Some(n) => format!(
                    " ({n} of a task with no workspace granted worked in an empty workspace)"
                ),
                None => String::new(),
            };
            text.push_str(&format!(
                "closed loop: sessions by workspace: {}{empty}\n",
                by.join(", ")
            ));
        }
        if self.overlay_bytes.sessions > 0 {
            let o = &self.overlay_bytes;
            text.push_str(&format!(
                "closed loop: copy-on-write overlay per session at its end: mean {:.1} KiB, max \
                 {:.1} KiB ({} sessions)\n",
                o.mean / 1024.0,
                o.max as f64 / 1024.0,
                o.sessions
            ));
        }
        if let Some(last) = self.context_growth.last() {
            text.push_str(&format!(
                "closed loop: request {} (the recording's last place) is {:.2}x the recorded \
                 size ({:.0} vs {:.0} bytes, {} sessions)\n",
                last.index, last.ratio, last.closed_bytes, last.recorded_bytes, last.sessions
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, status: ToolStatus, bytes: u64, fuel: u64) -> ExecutedCall {
        ExecutedCall {
            id: "c".into(),
            name: name.into(),
            status,
            exit_code: Some(0),
            class: "view".into(),
            output_bytes: bytes,
            fuel,
            detail: String::new(),
        }
    }

    fn turn(index: u32, follows: Option<bool>, bytes: (u64, Option<u64>)) -> ClosedTurn {
        ClosedTurn {
            index,
            calls: Vec::new(),
            follows_recording: follows,
            request_bytes: bytes.0,
            request_sha256: None,
            recorded_request_bytes: bytes.1,
            sandbox_us: 1500,
            end: None,
            workspace: (index == 1).then(|| "tools.workspace".to_owned()),
            overlay_bytes: None,
        }
    }

    #[test]
    fn sessions_sum_their_calls_and_follow_the_recording_up_to_the_first_departure() {
        let mut a1 = turn(1, Some(true), (100, Some(100)));
        a1.calls = vec![
            call("bash", ToolStatus::Executed, 10, 1000),
            call("bash", ToolStatus::Stubbed, 5, 10),
        ];
        let a2 = turn(2, Some(false), (300, Some(200)));
        // Back on the recording after a departure: not in the prefix.
        let mut a3 = turn(3, Some(true), (400, None));
        a3.end = Some(ClosedEnd::TurnCap);
        a3.overlay_bytes = Some(3072);
        let mut b1 = turn(1, Some(false), (100, Some(100)));
        b1.end = Some(ClosedEnd::NoToolCall);
        b1.workspace = Some("empty".into());
        b1.overlay_bytes = Some(1024);
        let blocks = [("a", &a3), ("b", &b1), ("a", &a1), ("a", &a2)];
        let order = ["b".to_owned(), "a".to_owned()];
        let s = ClosedLoopSummary::of(blocks, &order);
        assert!(!s.official);
        assert_eq!(s.sessions[0].session_id, "b");
        let a = &s.sessions[1];
        assert_eq!(
            (a.turns, a.actions_followed, a.end),
            (3, 1, Some(ClosedEnd::TurnCap))
        );
        assert_eq!((a.output_bytes, a.fuel), (15, 1010));
        assert_eq!(a.calls["bash"][&ToolStatus::Executed], 1);
        assert_eq!((a.first_request_bytes, a.last_request_bytes), (100, 400));
        assert_eq!(s.sessions[0].actions_followed, 0);
        assert_eq!(s.actions_followed_mean, 0.5);
        assert_eq!(s.ends["turn_cap"], 1);
        assert_eq!(s.ends["no_tool_call"], 1);
        // Growth where both have the place: 1 (two sessions), 2 (one).
        assert_eq!(s.context_growth.len(), 2);
        assert_eq!(s.context_growth[0].sessions, 2);
        assert_eq!(s.context_growth[1].ratio, 1.5);
        let text = s.report_lines();
        assert!(
            text.starts_with("NON-OFFICIAL: closed-loop replay"),
            "{text}"
        );
        assert!(text.contains("1 executed, 1 stubbed, 0 errors"), "{text}");
        // Each session's workspace and overlay, and the run's.
        assert_eq!(
            (
                s.sessions[0].workspace.as_str(),
                s.sessions[1].workspace.as_str()
            ),
            ("empty", "tools.workspace")
        );
        assert_eq!(s.sessions[1].overlay_bytes, Some(3072));
        assert_eq!(
            (s.workspaces["empty"], s.workspaces["tools.workspace"]),
            (1, 1)
        );
        assert_eq!((s.overlay_bytes.mean, s.overlay_bytes.max), (2048.0, 3072));
        assert!(
            text.contains("1 of a task with no workspace granted worked in an empty workspace"),
            "{text}"
        );
        assert!(
            text.contains("mean 2.0 KiB, max 3.0 KiB (2 sessions)"),
            "{text}"
        );
        // The file round-trips (statuses as map keys).
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.contains(r#""calls":{"executed":1,"stubbed":1}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ClosedLoopSummary>(&json).unwrap(), s);
    }
}
