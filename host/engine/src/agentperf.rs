//! agentperf-local 0.3.4's check of each answer (`replay/runner.py`
//! `_verify_turn`, `replay/fidelity.py`, `metrics/request.py`), for
//! `endpoint.client = "agentperf-local"`: a turn it would fail is recorded
//! failed, with its message, word for word.
//!
//! - A request that asked for `ignore_eos` (the `exact` policy) must end on
//!   `length`, and the server's `usage.completion_tokens`, when it reports
//!   one, must be at least the request's `max_tokens`.
//! - Any other must pass the "F0 transport" check: without tool calls the
//!   answer ends on `stop` or `length`; with them, on `tool_calls`, their
//!   indices count 0, 1, 2..., their names are short printable ASCII without
//!   spaces and their arguments parse as a JSON object; a call the
//!   request's own cap cut short (`length`, output at the cap) is excused.
//! - The server's `usage` must be well formed (agentperf-local's reading of
//!   it fails the turn otherwise).
//!
//! A request that failed (an HTTP error, a broken stream) keeps agentload's
//! words in the record; AA's files word it as AA does (`agentload_results::aa`).

use agentload_client::Assembled;
use agentload_plugin_host::TurnRequest;
use serde_json::Value;

/// The longest tool name agentperf-local accepts.
const MAX_TOOL_NAME_CHARACTERS: usize = 128;

/// Why agentperf-local would fail this answer to `req`, if it would.
/// `local_output_tokens` stands in for the server's count where it sends
/// none (agentperf-local counts with o200k_base); `None` when not counted.
pub fn judge(
    req: &TurnRequest,
    answer: &Assembled,
    local_output_tokens: Option<u64>,
) -> Option<String> {
    let usage = match usage(answer) {
        Ok(usage) => usage,
        Err(why) => return Some(format!("ValueError: {why}")),
    };
    let s = &req.sampling;
    let max_tokens = u64::from(s.max_tokens.or(s.max_completion_tokens).unwrap_or(16_384));
    let finish = answer.finish_reason.as_deref();
    if s.ignore_eos == Some(true) {
        if whole_budget(finish, usage.completion_tokens, max_tokens) {
            return None;
        }
        return Some(if finish != Some("length") {
            format!(
                "exact output policy: server finished with {} instead of generating the full length",
                finish.map_or_else(|| "None".to_owned(), pysem::value::str_repr)
            )
        } else {
            format!(
                "exact output policy: server reported {} output tokens for a {max_tokens}-token request",
                usage.completion_tokens.map_or_else(|| "None".to_owned(), |n| n.to_string())
            )
        });
    }
    let observed = usage.completion_tokens.or(local_output_tokens);
    let capped = observed.is_some_and(|n| n >= max_tokens);
    (!transport_valid(answer, capped)).then(|| "response failed F0 transport validity".to_owned())
}

/// The request was answered with its whole output budget: a `length`
/// finish, and no usage count under it.
fn whole_budget(finish: Option<&str>, completion_tokens: Option<u64>, max_tokens: u64) -> bool {
    finish == Some("length") && completion_tokens.is_none_or(|n| n >= max_tokens)
}

/// The F0 transport check (`evaluate_tool_fidelity` with no expected calls).
fn transport_valid(answer: &Assembled, capped: bool) -> bool {
    let calls = &answer.tool_calls;
    let finish = answer.finish_reason.as_deref();
    let truncated = capped && !calls.is_empty() && finish == Some("length");
    let finish_ok = truncated
        || if calls.is_empty() {
            matches!(finish, Some("stop" | "length"))
        } else {
            finish == Some("tool_calls")
        };
    let contiguous = !answer.tool_call_index_missing
        && answer
            .tool_call_indices
            .iter()
            .enumerate()
            .all(|(i, &index)| index == i as u64);
    let names_ok = calls.iter().all(|c| valid_tool_name(&c.name));
    let arguments_ok = truncated
        || calls
            .iter()
            .all(|c| serde_json::from_str::<Value>(&c.arguments).is_ok_and(|v| v.is_object()));
    finish_ok && contiguous && names_ok && arguments_ok
}

/// Short printable ASCII without whitespace.
fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_TOOL_NAME_CHARACTERS
        && name.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// The counts of the server's last non-null `usage`, as agentperf-local reads them.
#[derive(Debug, Default)]
struct Usage {
    completion_tokens: Option<u64>,
}

/// agentperf-local's reading of `usage` (`metrics/request.py` `_usage`):
/// counts are non-negative integers (a whole float is its integer) or null.
fn usage(answer: &Assembled) -> Result<Usage, String> {
    let Some(raw) = &answer.usage else {
        return Ok(Usage::default());
    };
    let Ok(Value::Object(usage)) = serde_json::from_str::<Value>(raw.get()) else {
        return Err("server usage must be an object or null".into());
    };
    let count = |v: Option<&Value>, field: &str| -> Result<Option<u64>, String> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .or_else(|| {
                    v.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .map(Some)
                .ok_or_else(|| {
                    format!("server usage {field} must be a non-negative integer or null")
                }),
        }
    };
    let prompt = count(usage.get("prompt_tokens"), "prompt_tokens")?;
    let cached = match usage.get("prompt_tokens_details") {
        None | Some(Value::Null) => None,
        Some(Value::Object(details)) => count(
            details.get("cached_tokens"),
            "prompt_tokens_details.cached_tokens",
        )?,
        Some(_) => {
            return Err("server usage prompt_tokens_details must be an object or null".into())
        }
    };
    if let (Some(p), Some(c)) = (prompt, cached) {
        if c > p {
            return Err("server usage cached prompt tokens must not exceed prompt tokens".into());
        }
    }
    Ok(Usage {
        completion_tokens: count(usage.get("completion_tokens"), "completion_tokens")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_client::ToolCallRecord;
    use agentload_plugin_host::types::Sampling;
    use serde_json::value::RawValue;

    fn request(ignore_eos: bool, max_tokens: u32) -> TurnRequest {
        let mut r = TurnRequest::new("s", 0, Vec::new());
        r.sampling = Sampling {
            max_tokens: Some(max_tokens),
            ignore_eos: ignore_eos.then_some(true),
            ..r.sampling
        };
        r
    }

    fn answer(finish: Option<&str>, usage: Option<&str>) -> Assembled {
        Assembled {
            finish_reason: finish.map(str::to_owned),
            usage: usage.map(|u| RawValue::from_string(u.to_owned()).unwrap()),
            ..Assembled::default()
        }
    }

    fn call(index: u64, name: &str, arguments: &str) -> (u64, ToolCallRecord) {
        (
            index,
            ToolCallRecord {
                id: "c".into(),
                name: name.into(),
                arguments: arguments.into(),
            },
        )
    }

    fn with_calls(mut a: Assembled, calls: &[(u64, ToolCallRecord)]) -> Assembled {
        a.tool_call_indices = calls.iter().map(|(i, _)| *i).collect();
        a.tool_calls = calls.iter().map(|(_, c)| c.clone()).collect();
        a
    }

    #[test]
    fn exact_needs_the_whole_budget_in_agentperf_locals_words() {
        let exact = request(true, 256);
        assert_eq!(
            judge(
                &exact,
                &answer(Some("length"), Some(r#"{"completion_tokens":256}"#)),
                None
            ),
            None
        );
        // No usage: the `length` finish alone passes; a whole float counts as its integer.
        assert_eq!(judge(&exact, &answer(Some("length"), None), None), None);
        assert_eq!(
            judge(
                &exact,
                &answer(Some("length"), Some(r#"{"completion_tokens":256.0}"#)),
                None
            ),
            None
        );
        assert_eq!(
            judge(&exact, &answer(Some("stop"), Some(r#"{"completion_tokens":12}"#)), None).unwrap(),
            "exact output policy: server finished with 'stop' instead of generating the full length"
        );
        assert_eq!(
            judge(&exact, &answer(None, None), None).unwrap(),
            "exact output policy: server finished with None instead of generating the full length"
        );
        assert_eq!(
            judge(
                &exact,
                &answer(Some("length"), Some(r#"{"completion_tokens":200}"#)),
                None
            )
            .unwrap(),
            "exact output policy: server reported 200 output tokens for a 256-token request"
        );
        // Tool calls are not looked at under exact.
        let calls = with_calls(answer(Some("length"), None), &[call(3, "bad name", "{")]);
        assert_eq!(judge(&exact, &calls, None), None);
    }

    #[test]
    fn other_policies_get_the_transport_check() {
        let recorded = request(false, 100);
        let f0 = Some("response failed F0 transport validity".to_owned());
        assert_eq!(judge(&recorded, &answer(Some("stop"), None), None), None);
        assert_eq!(judge(&recorded, &answer(Some("length"), None), None), None);
        assert_eq!(
            judge(&recorded, &answer(Some("tool_calls"), None), None),
            f0
        );
        assert_eq!(judge(&recorded, &answer(None, None), None), f0);
        let good = [
            call(0, "bash", r#"{"command":"ls"}"#),
            call(1, "read_file", "{}"),
        ];
        assert_eq!(
            judge(
                &recorded,
                &with_calls(answer(Some("tool_calls"), None), &good),
                None
            ),
            None
        );
        assert_eq!(
            judge(
                &recorded,
                &with_calls(answer(Some("stop"), None), &good),
                None
            ),
            f0
        );
        for bad in [
            [call(0, "bash", "{}"), call(2, "x", "{}")],
            [call(0, "has space", "{}"), call(1, "x", "{}")],
            [call(0, "bash", "[1]"), call(1, "x", "{}")],
            [call(0, "bash", "{"), call(1, "x", "{}")],
            [call(0, "ünïcode", "{}"), call(1, "x", "{}")],
        ] {
            assert_eq!(
                judge(
                    &recorded,
                    &with_calls(answer(Some("tool_calls"), None), &bad),
                    None
                ),
                f0,
                "{bad:?}"
            );
        }
        let mut missing = with_calls(answer(Some("tool_calls"), None), &good);
        missing.tool_call_index_missing = true;
        assert_eq!(judge(&recorded, &missing, None), f0);
        // A call the request's own cap cut: excused, its broken arguments too.
        let cut = with_calls(
            answer(Some("length"), Some(r#"{"completion_tokens":100}"#)),
            &[call(0, "bash", r#"{"comm"#)],
        );
        assert_eq!(judge(&recorded, &cut, None), None);
        // Without usage, the local count decides; not counted, not excused.
        let uncounted = with_calls(
            answer(Some("length"), None),
            &[call(0, "bash", r#"{"comm"#)],
        );
        assert_eq!(judge(&recorded, &uncounted, Some(100)), None);
        assert_eq!(judge(&recorded, &uncounted, None), f0);
    }

    #[test]
    fn malformed_usage_fails_the_turn_as_agentperf_local_reads_it() {
        let exact = request(true, 4);
        for (usage, says) in [
            ("[1]", "ValueError: server usage must be an object or null"),
            (
                r#"{"completion_tokens":-1}"#,
                "ValueError: server usage completion_tokens must be a non-negative integer or null",
            ),
            (r#"{"completion_tokens":1.5}"#, "completion_tokens must be"),
            (
                r#"{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}"#,
                "must not exceed prompt tokens",
            ),
            (
                r#"{"prompt_tokens_details":7}"#,
                "prompt_tokens_details must be an object or null",
            ),
        ] {
            let got = judge(&exact, &answer(Some("length"), Some(usage)), None).unwrap();
            assert!(got.contains(says), "{usage}: {got}");
        }
    }
}
