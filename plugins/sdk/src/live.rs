//! Live-reply replay: a replay whose next request carries the model's own
//! reply instead of the recorded one. What every replay workload needs to
//! offer it the same way:
//!
//! - [`classify`]: one [`Divergence`] class per reply, against the recorded
//!   assistant message;
//! - [`LiveSettings`]: what to do with each class ([`Policy`]), the
//!   placeholder result for a live call the recording never answered, and
//!   whether reasoning is carried;
//! - [`live_message`] and [`answer_calls`]: the live assistant message as
//!   the next request carries it, and the recorded tool results paired with
//!   its calls (`tool_call_id`s rewritten), so no call goes unanswered and
//!   no result answers a call that was never made;
//! - [`Review`]: what the workload returns with the next turn
//!   ([`Workload::review`](crate::Workload::review)); the host records it
//!   with the turn;
//! - [`carry`]: all of it for one reply: its review, its policy's action,
//!   and the messages the next request adds.

use crate::{Completion, Message, Outcome, ToolCall};
use serde::Deserialize;
use serde_json::Value;

/// How a reply departed from the recorded one: the first class that
/// applies, in the order of the variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Divergence {
    /// The turn failed.
    Error,
    /// The answer ended on the token limit.
    Truncated,
    /// No content and no tool call.
    Empty,
    /// A tool call's arguments are not a JSON object.
    MalformedArgs,
    /// Text where the recording has tool calls.
    TextForCall,
    /// Tool calls where the recording has text.
    CallForText,
    /// Fewer tool calls than recorded.
    MissingCalls,
    /// More tool calls than recorded.
    ExtraCalls,
    /// As many calls as recorded, other functions.
    NameDiff,
    /// The recorded functions with other arguments (as JSON values).
    ArgsDiff,
    /// The recorded functions and arguments, or text where the recording has text.
    Match,
}

/// What the workload did with a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveAction {
    /// Carried into the next request.
    Kept,
    /// Replaced by the recorded message.
    Substituted,
    /// The session ended after it.
    Ended,
    /// The turn counts as failed.
    Failed,
}

/// A reply's review, recorded by the host with its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub divergence: Divergence,
    pub action: LiveAction,
    /// Recorded tool results answered to a live call.
    pub paired_results: u32,
    /// Recorded tool results dropped for want of a live call.
    pub dropped_results: u32,
    /// Live calls answered with the placeholder.
    pub placeholder_results: u32,
    /// What differed, for humans.
    pub detail: String,
}

/// What a replay's requests carry as the model's earlier replies
/// (`history`): the recording (the default, and the only official mode) or
/// the model's own replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryMode {
    #[default]
    Recorded,
    Live,
}

/// What to do with a reply of some class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Carry the live reply on.
    Continue,
    /// Carry the recorded message instead (counted as a substitution).
    Fallback,
    /// End the session after this turn.
    End,
    /// Count the turn as failed (the session ends, as after any failure).
    Fail,
}

/// The policy per class (`[...settings.live.policy]`); `match` always continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policies {
    pub args_diff: Policy,
    pub name_diff: Policy,
    pub extra_calls: Policy,
    pub missing_calls: Policy,
    pub call_for_text: Policy,
    pub text_for_call: Policy,
    pub malformed_args: Policy,
    pub truncated: Policy,
    pub empty: Policy,
}

impl Default for Policies {
    /// Carry on where the next request stays well formed; fall back where
    /// the live reply would break it (a text reply cannot take the recorded
    /// tool results; malformed or cut arguments make servers answer 400/500).
    fn default() -> Self {
        Self {
            args_diff: Policy::Continue,
            name_diff: Policy::Continue,
            extra_calls: Policy::Continue,
            missing_calls: Policy::Continue,
            call_for_text: Policy::Continue,
            text_for_call: Policy::Fallback,
            malformed_args: Policy::Fallback,
            truncated: Policy::Fallback,
            empty: Policy::Fallback,
        }
    }
}

impl Policies {
    /// The policy for `class` (`error` turns have failed already: `Fail`).
    pub fn of(&self, class: Divergence) -> Policy {
        match class {
            Divergence::Match => Policy::Continue,
            Divergence::Error => Policy::Fail,
            Divergence::ArgsDiff => self.args_diff,
            Divergence::NameDiff => self.name_diff,
            Divergence::ExtraCalls => self.extra_calls,
            Divergence::MissingCalls => self.missing_calls,
            Divergence::CallForText => self.call_for_text,
            Divergence::TextForCall => self.text_for_call,
            Divergence::MalformedArgs => self.malformed_args,
            Divergence::Truncated => self.truncated,
            Divergence::Empty => self.empty,
        }
    }
}

/// Live-reply settings (`[...settings.live]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LiveSettings {
    pub policy: Policies,
    /// The result given to a live call the recording has no result for.
    pub placeholder: String,
    /// Carry the live reply's `reasoning_content` (for templates that keep
    /// earlier turns' thinking; the recorded history carries the recorded
    /// reasoning).
    pub reasoning: bool,
}

impl LiveSettings {
    /// Refuses a policy that would send a malformed request: a text reply
    /// cannot take the recorded tool results (`text_for_call = "continue"`).
    pub fn check(&self) -> Result<(), crate::Error> {
        if self.policy.text_for_call == Policy::Continue {
            return Err(crate::Error::config(
                "settings: `live.policy.text_for_call` cannot be \"continue\": a text reply \
                 leaves the recorded tool results without calls to answer (use fallback, end or fail)",
            ));
        }
        Ok(())
    }
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            policy: Policies::default(),
            placeholder: "(no recorded result for this call)".into(),
            reasoning: true,
        }
    }
}

/// The class of `live`, the reply to a turn whose recorded answer is
/// `recorded` (none: the recording has no answer row, so any text matches),
/// and what differed.
pub fn classify(recorded: Option<&Message>, live: &Completion) -> (Divergence, String) {
    let no_calls: &[ToolCall] = &[];
    let want = recorded.map_or(no_calls, |m| m.tool_calls.as_slice());
    let got = &live.tool_calls;
    if live.finish_reason.as_deref() == Some("length") {
        return (Divergence::Truncated, "finish_reason length".into());
    }
    if live.content.trim().is_empty() && got.is_empty() {
        return (Divergence::Empty, String::new());
    }
    if let Some(bad) = got.iter().find(|c| !is_object(&c.arguments)) {
        return (
            Divergence::MalformedArgs,
            format!("{}: arguments are not a JSON object", bad.name),
        );
    }
    let names = |calls: &[ToolCall]| calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    match (want.is_empty(), got.is_empty()) {
        (false, true) => {
            return (
                Divergence::TextForCall,
                format!("recorded {:?}", names(want)),
            )
        }
        (true, false) => return (Divergence::CallForText, format!("live {:?}", names(got))),
        (true, true) => return (Divergence::Match, String::new()),
        (false, false) => {}
    }
    let counts = format!("recorded {:?}, live {:?}", names(want), names(got));
    if got.len() < want.len() {
        return (Divergence::MissingCalls, counts);
    }
    if got.len() > want.len() {
        return (Divergence::ExtraCalls, counts);
    }
    let (mut a, mut b) = (names(want), names(got));
    a.sort();
    b.sort();
    if a != b {
        return (Divergence::NameDiff, counts);
    }
    // Same functions: each recorded call against the live call it pairs with.
    let mut used = vec![false; got.len()];
    for (i, call) in want.iter().enumerate() {
        let j = pick(got, &used, &call.name, i).expect("the same names pair one to one");
        used[j] = true;
        if json(&call.arguments) != json(&got[j].arguments) {
            return (
                Divergence::ArgsDiff,
                format!("{}: arguments differ", call.name),
            );
        }
    }
    (Divergence::Match, String::new())
}

/// The assistant message a live reply amounts to in the next request:
/// content as sent (no `content` key for calls without text), reasoning when
/// `reasoning`, the calls merged as the host assembled them. A call the
/// server sent without an id gets `live-<turn>-<n>`, so its result can name it.
pub fn live_message(live: &Completion, reasoning: bool, turn: u32) -> Message {
    let calls = live
        .tool_calls
        .iter()
        .enumerate()
        .map(|(n, c)| {
            let id = if c.id.is_empty() {
                format!("live-{turn}-{n}")
            } else {
                c.id.clone()
            };
            ToolCall::new(id, &c.name, &c.arguments)
        })
        .collect();
    let content =
        (!live.content.is_empty() || live.tool_calls.is_empty()).then(|| live.content.clone());
    let mut message = Message::assistant_calls(content, calls);
    if reasoning && !live.reasoning_content.is_empty() {
        message.reasoning_content = Some(live.reasoning_content.clone());
    }
    message
}

/// The tool results that answer `live`'s calls, in its calls' order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answers {
    pub messages: Vec<Message>,
    pub paired: u32,
    pub dropped: u32,
    pub placeholders: u32,
}

/// Pairs the recorded tool `results` (answers to `recorded`'s calls) with
/// the calls of `live` (an assistant message, its ids final): first each
/// result with the first unused live call of its call's function; then each
/// result left with the live call at its call's position, when that one is
/// unused; a result left after both is dropped. Each live call left over
/// gets `placeholder`.
pub fn answer_calls(
    live: &Message,
    recorded: Option<&Message>,
    results: &[Message],
    placeholder: &str,
) -> Answers {
    let calls = &live.tool_calls;
    let recorded_calls = recorded.map_or(&[][..], |m| m.tool_calls.as_slice());
    // Each result's recorded call: its function and position.
    let sources: Vec<(Option<&str>, usize)> = results
        .iter()
        .enumerate()
        .map(|(n, result)| {
            let source = recorded_calls
                .iter()
                .position(|c| Some(&c.id) == result.tool_call_id.as_ref());
            (
                source.map(|i| recorded_calls[i].name.as_str()),
                source.unwrap_or(n),
            )
        })
        .collect();
    let mut answer: Vec<Option<&Message>> = vec![None; calls.len()];
    let mut paired = vec![false; results.len()];
    for (n, (name, _)) in sources.iter().enumerate() {
        let Some(name) = name else { continue };
        if let Some(j) = (0..calls.len()).find(|&j| answer[j].is_none() && calls[j].name == *name) {
            answer[j] = Some(&results[n]);
            paired[n] = true;
        }
    }
    let mut dropped = 0;
    for (n, (_, position)) in sources.iter().enumerate() {
        if paired[n] {
            continue;
        }
        match answer.get_mut(*position) {
            Some(slot @ None) => *slot = Some(&results[n]),
            _ => dropped += 1,
        }
    }
    let mut answers = Answers {
        messages: Vec::with_capacity(calls.len()),
        paired: 0,
        dropped,
        placeholders: 0,
    };
    for (call, result) in calls.iter().zip(answer) {
        let content = match result {
            Some(r) => {
                answers.paired += 1;
                r.content.clone().unwrap_or_default()
            }
            None => {
                answers.placeholders += 1;
                placeholder.to_owned()
            }
        };
        let mut message = Message::tool(call.id.clone(), content);
        message.name = result.and_then(|r| r.name.clone());
        answers.messages.push(message);
    }
    answers
}

/// The recording around one reviewed reply: its recorded answer, the tool
/// results that answered it, the rows after those, whether another request
/// follows, and the turn the reply answered (for its calls' ids).
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a> {
    pub answer: Option<&'a Message>,
    pub results: &'a [Message],
    pub rest: &'a [Message],
    pub has_next: bool,
    pub turn: u32,
}

/// One reviewed reply: its review, the action taken, and what the next
/// request adds.
#[derive(Debug, Clone, PartialEq)]
pub struct Carry {
    pub review: Review,
    /// What the next request adds; `None` when the session is over (the
    /// last turn, or the policy ended it).
    pub messages: Option<Vec<Message>>,
}

/// Reviews `outcome` against the recording and applies `settings`' policy
/// for its class: `continue` carries the live reply and its calls'
/// answers (falling back, and saying so, where nothing would answer it);
/// `fallback` carries the recorded answer and rows; `end` ends the
/// session; `fail` fails the turn. A failed turn is `failed` whatever the
/// policy; a last turn's reply is `kept` (nothing carries it).
pub fn carry(settings: &LiveSettings, outcome: &Outcome, recorded: Recorded<'_>) -> Carry {
    let (divergence, detail) = match outcome {
        Outcome::Completed(c) => classify(recorded.answer, c),
        Outcome::Failed(cause) => (Divergence::Error, cause.clone()),
        // Not sent: nothing to review; what follows is never sent either.
        Outcome::Aborted => (Divergence::Error, String::new()),
    };
    let mut review = Review {
        divergence,
        action: LiveAction::Kept,
        paired_results: 0,
        dropped_results: 0,
        placeholder_results: 0,
        detail,
    };
    let policy = settings.policy.of(divergence);
    let mut live = None;
    if let (Outcome::Completed(c), Policy::Continue, true) = (outcome, policy, recorded.has_next) {
        let message = live_message(c, settings.reasoning, recorded.turn);
        let answers = answer_calls(
            &message,
            recorded.answer,
            recorded.results,
            &settings.placeholder,
        );
        if answers.messages.is_empty() && recorded.rest.is_empty() {
            // Nothing would answer the reply: a request cannot end on it.
            if !review.detail.is_empty() {
                review.detail.push_str("; ");
            }
            review
                .detail
                .push_str("no call of the reply answers the recorded tool results");
        } else {
            review.paired_results = answers.paired;
            review.dropped_results = answers.dropped;
            review.placeholder_results = answers.placeholders;
            let mut new = Vec::with_capacity(1 + answers.messages.len() + recorded.rest.len());
            new.push(message);
            new.extend(answers.messages);
            new.extend_from_slice(recorded.rest);
            live = Some(new);
        }
    }
    review.action = match (outcome, policy, &live) {
        (Outcome::Failed(_), _, _) | (_, Policy::Fail, _) => LiveAction::Failed,
        (_, Policy::End, _) => LiveAction::Ended,
        (_, _, Some(_)) => LiveAction::Kept,
        // Nothing follows the last turn: nothing is substituted.
        (_, _, None) if !recorded.has_next => LiveAction::Kept,
        (_, _, None) => LiveAction::Substituted,
    };
    let messages = (recorded.has_next && review.action != LiveAction::Ended).then(|| {
        live.unwrap_or_else(|| {
            recorded
                .answer
                .into_iter()
                .chain(recorded.results)
                .chain(recorded.rest)
                .cloned()
                .collect()
        })
    });
    Carry { review, messages }
}

fn pick(calls: &[ToolCall], used: &[bool], name: &str, position: usize) -> Option<usize> {
    calls
        .iter()
        .enumerate()
        .position(|(j, c)| !used[j] && c.name == name)
        .or_else(|| (position < calls.len() && !used[position]).then_some(position))
}

fn json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

fn is_object(text: &str) -> bool {
    matches!(json(text), Some(Value::Object(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall::new(id, name, args)
    }

    fn recorded(calls: Vec<ToolCall>) -> Message {
        Message::assistant_calls(None, calls)
    }

    fn reply(content: &str, calls: Vec<ToolCall>, finish: &str) -> Completion {
        Completion {
            content: content.into(),
            reasoning_content: String::new(),
            tool_calls: calls,
            finish_reason: Some(finish.into()),
            usage: None,
        }
    }

    #[test]
    fn every_class_is_told_apart() {
        let rec = recorded(vec![
            call("r1", "bash", r#"{"command":"ls"}"#),
            call("r2", "read", r#"{"path":"a"}"#),
        ]);
        let class = |c: &Completion| classify(Some(&rec), c).0;
        let ls = || call("l1", "bash", r#"{ "command" : "ls" }"#);
        let read = || call("l2", "read", r#"{"path":"a"}"#);
        use Divergence::*;
        assert_eq!(class(&reply("", vec![read(), ls()], "tool_calls")), Match);
        assert_eq!(
            class(&reply(
                "",
                vec![ls(), call("l2", "read", r#"{"path":"b"}"#)],
                "tool_calls"
            )),
            ArgsDiff
        );
        assert_eq!(
            class(&reply(
                "",
                vec![ls(), call("l2", "write", "{}")],
                "tool_calls"
            )),
            NameDiff
        );
        assert_eq!(class(&reply("", vec![ls()], "tool_calls")), MissingCalls);
        assert_eq!(
            class(&reply("", vec![ls(), read(), ls()], "tool_calls")),
            ExtraCalls
        );
        assert_eq!(class(&reply("done", vec![], "stop")), TextForCall);
        assert_eq!(
            class(&reply(
                "",
                vec![ls(), call("l2", "read", r#"{"path":"#)],
                "tool_calls"
            )),
            MalformedArgs
        );
        assert_eq!(
            class(&reply("", vec![call("l", "bash", "[1]")], "stop")),
            MalformedArgs
        );
        assert_eq!(class(&reply(" \n", vec![], "stop")), Empty);
        assert_eq!(
            class(&reply("long", vec![ls(), read()], "length")),
            Truncated
        );
        let text = Message::assistant("Done.");
        assert_eq!(classify(Some(&text), &reply("ok", vec![], "stop")).0, Match);
        assert_eq!(
            classify(Some(&text), &reply("", vec![ls()], "tool_calls")).0,
            CallForText
        );
        assert_eq!(classify(None, &reply("ok", vec![], "stop")).0, Match);
    }

    #[test]
    fn results_pair_by_name_then_position_and_every_call_is_answered() {
        let rec = recorded(vec![
            call("r1", "bash", "{}"),
            call("r2", "read", "{}"),
            call("r3", "grep", "{}"),
        ]);
        let results = vec![
            Message::tool("r1", "bash out"),
            Message::tool("r2", "read out"),
            Message::tool("r3", "grep out"),
        ];
        // Live: read first, then bash, then an unrecorded call; no grep.
        let live = Message::assistant_calls(
            None,
            vec![
                call("a", "read", "{}"),
                call("b", "bash", "{}"),
                call("c", "write", "{}"),
                call("d", "find", "{}"),
            ],
        );
        let a = answer_calls(&live, Some(&rec), &results, "none");
        let pairs: Vec<(&str, &str)> = a
            .messages
            .iter()
            .map(|m| {
                (
                    m.tool_call_id.as_deref().unwrap(),
                    m.content.as_deref().unwrap(),
                )
            })
            .collect();
        // grep's result has no grep call: it goes to position 2 (write).
        assert_eq!(
            pairs,
            [
                ("a", "read out"),
                ("b", "bash out"),
                ("c", "grep out"),
                ("d", "none")
            ]
        );
        assert_eq!((a.paired, a.dropped, a.placeholders), (3, 0, 1));
        // One live call only: two results have nowhere to go.
        let one = Message::assistant_calls(None, vec![call("x", "grep", "{}")]);
        let a = answer_calls(&one, Some(&rec), &results, "none");
        assert_eq!(a.messages.len(), 1);
        assert_eq!(a.messages[0].content.as_deref(), Some("grep out"));
        assert_eq!((a.paired, a.dropped, a.placeholders), (1, 2, 0));
        // Text instead of calls: every result dropped, nothing to answer.
        let a = answer_calls(&Message::assistant("hi"), Some(&rec), &results, "none");
        assert_eq!((a.messages.len(), a.dropped), (0, 3));
    }

    #[test]
    fn the_live_message_is_the_reply_as_sent() {
        let c = Completion {
            content: String::new(),
            reasoning_content: "think".into(),
            tool_calls: vec![
                call("", "bash", r#"{"command":"ls"}"#),
                call("id2", "read", "{}"),
            ],
            finish_reason: Some("tool_calls".into()),
            usage: None,
        };
        let m = live_message(&c, true, 3);
        assert_eq!(m.content, None);
        assert_eq!(m.reasoning_content.as_deref(), Some("think"));
        assert_eq!(m.tool_calls[0].id, "live-3-0");
        assert_eq!(m.tool_calls[1].id, "id2");
        assert_eq!(m.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(live_message(&c, false, 3).reasoning_content, None);
        assert_eq!(
            live_message(&Completion::text(""), true, 1)
                .content
                .as_deref(),
            Some("")
        );
    }

    #[test]
    fn settings_read_policies_by_class() {
        let s: LiveSettings = serde_json::from_value(serde_json::json!({
            "policy": {"args_diff": "end", "text_for_call": "fail"},
            "placeholder": "n/a"
        }))
        .unwrap();
        assert_eq!(s.policy.of(Divergence::ArgsDiff), Policy::End);
        assert_eq!(s.policy.of(Divergence::TextForCall), Policy::Fail);
        assert_eq!(s.policy.of(Divergence::Truncated), Policy::Fallback);
        assert_eq!(s.policy.of(Divergence::Match), Policy::Continue);
        assert_eq!(s.placeholder, "n/a");
        assert!(s.reasoning);
        assert!(serde_json::from_value::<LiveSettings>(
            serde_json::json!({"policy": {"nope": "end"}})
        )
        .is_err());
    }

    #[test]
    fn carry_applies_each_policy_and_answers_every_carried_call() {
        let rec = recorded(vec![call("r1", "bash", r#"{"command":"ls"}"#)]);
        let results = vec![Message::tool("r1", "out")];
        let rest = vec![Message::user("next")];
        let at = |has_next| Recorded {
            answer: Some(&rec),
            results: &results,
            rest: &rest,
            has_next,
            turn: 2,
        };
        let settings = LiveSettings::default();
        let ls = |args: &str| reply("", vec![call("l1", "bash", args)], "tool_calls");
        let outcome = |c| Outcome::Completed(c);
        // continue: the live reply, its call answered with the recorded result, the rest.
        let kept = carry(&settings, &outcome(ls(r#"{"command":"pwd"}"#)), at(true));
        assert_eq!(
            (kept.review.divergence, kept.review.action),
            (Divergence::ArgsDiff, LiveAction::Kept)
        );
        let messages = kept.messages.unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0].tool_calls[0].arguments, r#"{"command":"pwd"}"#);
        assert_eq!(
            messages[1].tool_call_id,
            Some(messages[0].tool_calls[0].id.clone())
        );
        assert_eq!(
            (messages[1].content.as_deref(), &messages[2]),
            (Some("out"), &rest[0])
        );
        assert_eq!(kept.review.paired_results, 1);
        // fallback (text_for_call's default): the recorded answer, results and rest.
        let text = carry(&settings, &outcome(reply("done", vec![], "stop")), at(true));
        assert_eq!(text.review.action, LiveAction::Substituted);
        let recorded_rows: Vec<Message> = std::iter::once(rec.clone())
            .chain(results.clone())
            .chain(rest.clone())
            .collect();
        assert_eq!(text.messages.as_ref(), Some(&recorded_rows));
        // end and fail, as configured.
        let mut strict = LiveSettings::default();
        strict.policy.args_diff = Policy::End;
        strict.policy.name_diff = Policy::Fail;
        let ended = carry(&strict, &outcome(ls("{}")), at(true));
        assert_eq!(
            (ended.review.action, ended.messages),
            (LiveAction::Ended, None)
        );
        let wrong = reply("", vec![call("l1", "grep", "{}")], "tool_calls");
        let failed = carry(&strict, &outcome(wrong), at(true));
        assert_eq!(failed.review.action, LiveAction::Failed);
        // A failed turn is failed whatever the policy; a last reply is kept.
        let error = carry(&settings, &Outcome::Failed("HTTP 500".into()), at(true));
        assert_eq!(
            (
                error.review.divergence,
                error.review.action,
                error.review.detail.as_str()
            ),
            (Divergence::Error, LiveAction::Failed, "HTTP 500")
        );
        let last = carry(&settings, &outcome(ls("{}")), at(false));
        assert_eq!(
            (last.review.action, last.messages),
            (LiveAction::Kept, None)
        );
        // A reply nothing would answer falls back, saying so.
        let bare = Recorded {
            rest: &[],
            results: &[],
            ..at(true)
        };
        let none = carry(
            &settings,
            &outcome(reply("ok", vec![], "stop")),
            Recorded {
                answer: Some(&Message::assistant("x")),
                ..bare
            },
        );
        assert_eq!(none.review.action, LiveAction::Substituted);
        assert!(
            none.review.detail.contains("no call of the reply answers"),
            "{:?}",
            none.review
        );
    }
}
