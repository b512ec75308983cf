//! One test per validation rule: each asserts the line and the message.

use serde_json::{json, Value};

use super::{parse, Body, Role};
use crate::fixtures::{call, jsonl, reply, result, two_conversations, user, with, without};
use agentload_sdk::Error;

/// A data error's (file, line, message).
fn parts(error: Error) -> (String, u32, String) {
    match error {
        Error::Data {
            file,
            line,
            message,
        } => (file, line, message),
        other => panic!("not a data error: {other:?}"),
    }
}

/// The error for `text`, as (line, message); checks the file name on the way.
fn error(text: &str) -> (u32, String) {
    let (file, line, message) =
        parts(parse("t.jsonl", text.as_bytes()).expect_err("the fixture must be rejected"));
    assert_eq!(file, "t.jsonl");
    (line, message)
}

fn rows_error(rows: &[Value]) -> (u32, String) {
    error(&jsonl(rows))
}

fn at(line: u32, message: &str) -> (u32, String) {
    (line, message.to_owned())
}

#[test]
fn valid_fixture_parses_skipping_metadata() {
    let dataset = parse("t.jsonl", two_conversations().as_bytes()).unwrap();
    let ids: Vec<&str> = dataset
        .conversations
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let a = &dataset.conversations[0];
    let roles: Vec<Role> = a.rows.iter().map(|r| r.role()).collect();
    use Role::*;
    assert_eq!(roles, [User, Assistant, Tool, Assistant, User, Assistant]);
    assert_eq!(a.rows[0].line, 2, "line 1 is the metadata row");
    assert_eq!(a.rows[2].delay_seconds, Some(0.0625));
    let b = &dataset.conversations[1];
    let Body::Assistant {
        tool_calls,
        tool_calls_json,
        ..
    } = &b.rows[3].body
    else {
        panic!("turn 4 of b is an assistant row");
    };
    assert_eq!(
        tool_calls[0].arguments,
        r#"{"command":"cat a.py","timeout":5}"#
    );
    assert_eq!(
        tool_calls_json,
        r#"[{"id":"call_9","type":"function","function":{"name":"bash","arguments":{"command":"cat a.py","timeout":5}}}]"#
    );
}

#[test]
fn blank_lines_crlf_and_bom_are_accepted_and_counted() {
    let text = format!(
        "\u{feff}{}\r\n\r\n   \n{}\r\n",
        user("a", 1),
        without(result("a", 2), "conversation_id")
    );
    assert_eq!(
        error(&text),
        at(4, "missing required key 'conversation_id'")
    );
}

#[test]
fn rows_out_of_turn_order_are_sorted() {
    let dataset = parse("t.jsonl", jsonl(&[reply("a", 2), user("a", 1)]).as_bytes()).unwrap();
    let turns: Vec<u32> = dataset.conversations[0]
        .rows
        .iter()
        .map(|r| r.turn)
        .collect();
    assert_eq!(turns, [1, 2]);
}

#[test]
fn unknown_keys_and_nulls_are_allowed() {
    let rows = [
        with(
            with(user("a", 1), "extra", json!({"x": 1})),
            "system",
            Value::Null,
        ),
        with(call("a", 2), "content", Value::Null),
        with(result("a", 3), "delay_seconds", Value::Null),
        reply("a", 4),
    ];
    let dataset = parse("t.jsonl", jsonl(&rows).as_bytes()).unwrap();
    let row = &dataset.conversations[0].rows[1];
    assert!(matches!(&row.body, Body::Assistant { content: None, .. }));
}

#[test]
fn json_syntax_error_names_the_line() {
    let text = format!("{}\n{{\"conversation_id\": \"a\",\n", user("a", 1));
    assert_eq!(
        error(&text),
        at(2, "invalid JSON at column 24: EOF while parsing a value")
    );
}

#[test]
fn line_must_be_an_object() {
    assert_eq!(error("[1, 2]\n"), at(1, "each line must be a JSON object"));
    assert_eq!(
        error("[1, 2,]\n"),
        at(1, "invalid JSON at column 7: expected value")
    );
}

#[test]
fn line_must_be_utf8() {
    let mut bytes = jsonl(&[user("a", 1)]).into_bytes();
    bytes.extend_from_slice(b"\"\xff\"\n");
    let (_, line, message) = parts(parse("t.jsonl", &bytes).unwrap_err());
    assert_eq!(line, 2);
    assert!(message.starts_with("line is not valid UTF-8"), "{message}");
}

#[test]
fn empty_dataset_is_rejected() {
    let text = jsonl(&[json!({"_type": "dataset_metadata"})]);
    assert_eq!(
        error(&text),
        at(0, "the dataset holds no conversation rows")
    );
}

#[test]
fn conversation_id_must_be_non_empty_printable_ascii() {
    let rule = |id: Value| rows_error(&[reply("a", 2), with(user("a", 1), "conversation_id", id)]);
    assert_eq!(rule(json!(7)), at(2, "'conversation_id' must be a string"));
    assert_eq!(
        rule(json!("")),
        at(2, "'conversation_id' must be a non-empty string")
    );
    assert_eq!(
        rule(json!("tab\there")),
        at(
            2,
            "'conversation_id' must contain only printable ASCII characters"
        )
    );
    assert_eq!(
        rule(json!("café")),
        at(
            2,
            "'conversation_id' must contain only printable ASCII characters"
        )
    );
}

#[test]
fn conversation_rows_must_be_contiguous() {
    let rows = [
        user("a", 1),
        reply("a", 2),
        user("b", 1),
        reply("b", 2),
        user("a", 3),
    ];
    assert_eq!(
        rows_error(&rows),
        at(
            5,
            "rows of conversation 'a' must be contiguous, but it started at line 1 and another \
             conversation came in between"
        )
    );
}

#[test]
fn turn_must_be_a_positive_integer() {
    let message = "'turn' must be an integer >= 1";
    for bad in [json!(0), json!(-1), json!("1"), json!(1.5)] {
        assert_eq!(
            rows_error(&[with(user("a", 1), "turn", bad)]),
            at(1, message)
        );
    }
    assert_eq!(
        rows_error(&[without(user("a", 1), "turn")]),
        at(1, "missing required key 'turn'")
    );
    // JSON Schema draft-07 integers include 1.0.
    assert!(parse(
        "t.jsonl",
        jsonl(&[with(user("a", 1), "turn", json!(1.0)), reply("a", 2)]).as_bytes()
    )
    .is_ok());
}

#[test]
fn turns_must_count_without_gaps() {
    assert_eq!(
        rows_error(&[user("a", 1), reply("a", 2), user("a", 4)]),
        at(
            3,
            "conversation 'a': turn numbers must count 1..N without gaps; expected turn 3, found \
             turn 4"
        )
    );
    assert_eq!(
        rows_error(&[user("a", 2), reply("a", 3)]),
        at(
            1,
            "conversation 'a': turn numbers must count 1..N without gaps; expected turn 1, found \
             turn 2"
        )
    );
}

#[test]
fn turns_must_not_repeat() {
    assert_eq!(
        rows_error(&[user("a", 1), reply("a", 2), reply("a", 2)]),
        at(
            3,
            "conversation 'a': turn 2 appears more than once (turn numbers must count 1..N \
             without duplicates)"
        )
    );
}

#[test]
fn role_must_be_known() {
    let message = "'role' must be one of \"user\", \"assistant\", \"tool\"";
    assert_eq!(
        rows_error(&[with(user("a", 1), "role", json!("system"))]),
        at(1, message)
    );
    assert_eq!(
        rows_error(&[without(user("a", 1), "role")]),
        at(1, "missing required key 'role'")
    );
}

#[test]
fn conversation_must_start_with_user() {
    assert_eq!(
        rows_error(&[reply("a", 1)]),
        at(
            1,
            "conversation 'a': must start with a 'user' row, but turn 1 is 'assistant'"
        )
    );
}

#[test]
fn transitions_follow_the_state_machine() {
    assert_eq!(
        rows_error(&[user("a", 1), user("a", 2)]),
        at(
            2,
            "conversation 'a': invalid role sequence at turn 2: 'user' cannot follow 'user' \
             (allowed: 'assistant')"
        )
    );
    assert_eq!(
        rows_error(&[user("a", 1), result("a", 2)]),
        at(
            2,
            "conversation 'a': invalid role sequence at turn 2: 'tool' cannot follow 'user' \
             (allowed: 'assistant')"
        )
    );
    assert_eq!(
        rows_error(&[user("a", 1), reply("a", 2), reply("a", 3)]),
        at(
            3,
            "conversation 'a': invalid role sequence at turn 3: 'assistant' cannot follow \
             'assistant' (allowed: 'tool' or 'user')"
        )
    );
    assert_eq!(
        rows_error(&[user("a", 1), call("a", 2), result("a", 3), result("a", 4)]),
        at(
            4,
            "conversation 'a': invalid role sequence at turn 4: 'tool' cannot follow 'tool' \
             (allowed: 'assistant' or 'user')"
        )
    );
    // tool → user is allowed.
    let rows = [
        user("a", 1),
        call("a", 2),
        result("a", 3),
        user("a", 4),
        reply("a", 5),
    ];
    assert!(parse("t.jsonl", jsonl(&rows).as_bytes()).is_ok());
}

#[test]
fn tool_row_must_follow_tool_calls() {
    assert_eq!(
        rows_error(&[user("a", 1), reply("a", 2), result("a", 3)]),
        at(
            3,
            "conversation 'a': the 'tool' row at turn 3 must follow an 'assistant' row with \
             non-empty 'tool_calls'"
        )
    );
}

#[test]
fn user_row_cannot_follow_tool_calls() {
    assert_eq!(
        rows_error(&[user("a", 1), call("a", 2), user("a", 3)]),
        at(
            3,
            "conversation 'a': the 'user' row at turn 3 cannot directly follow an 'assistant' \
             row with 'tool_calls'; a 'tool' row must come first"
        )
    );
}

#[test]
fn user_rows_need_content() {
    let message = "user rows need a non-empty string 'content'";
    assert_eq!(
        rows_error(&[without(user("a", 1), "content")]),
        at(1, message)
    );
    assert_eq!(
        rows_error(&[with(user("a", 1), "content", json!(""))]),
        at(1, message)
    );
    assert_eq!(
        rows_error(&[with(user("a", 1), "content", json!(["x"]))]),
        at(1, message)
    );
}

#[test]
fn assistant_rows_need_content_or_tool_calls() {
    let message = "assistant rows need a non-empty 'content' or a non-empty 'tool_calls' list";
    assert_eq!(
        rows_error(&[user("a", 1), without(reply("a", 2), "content")]),
        at(2, message)
    );
    assert_eq!(
        rows_error(&[user("a", 1), with(reply("a", 2), "content", json!(""))]),
        at(2, message)
    );
    assert_eq!(
        rows_error(&[user("a", 1), with(reply("a", 2), "content", json!(3))]),
        at(2, "'content' must be a string")
    );
    assert_eq!(
        rows_error(&[
            user("a", 1),
            with(reply("a", 2), "reasoning_content", json!(3))
        ]),
        at(2, "'reasoning_content' must be a string")
    );
}

#[test]
fn tool_calls_must_be_a_non_empty_list() {
    let message = "'tool_calls' must be a non-empty list when present";
    assert_eq!(
        rows_error(&[user("a", 1), with(reply("a", 2), "tool_calls", json!([]))]),
        at(2, message)
    );
    assert_eq!(
        rows_error(&[user("a", 1), with(reply("a", 2), "tool_calls", json!({}))]),
        at(2, message)
    );
}

#[test]
fn tool_call_entries_are_checked() {
    let with_call = |call_value: Value| {
        rows_error(&[
            user("a", 1),
            with(call("a", 2), "tool_calls", json!([call_value])),
        ])
    };
    let function = json!({"name": "bash", "arguments": "{}"});
    assert_eq!(
        with_call(json!("x")),
        at(2, "tool_calls[0] must be an object")
    );
    assert_eq!(
        with_call(json!({"type": "function", "function": function})),
        at(2, "tool_calls[0].id must be a non-empty string")
    );
    assert_eq!(
        with_call(json!({"id": 1, "type": "function", "function": function})),
        at(2, "tool_calls[0].id must be a non-empty string")
    );
    assert_eq!(
        with_call(json!({"id": "c", "type": "tool", "function": function})),
        at(2, "tool_calls[0].type must be \"function\"")
    );
    assert_eq!(
        with_call(json!({"id": "c", "type": "function"})),
        at(2, "tool_calls[0].function must be an object")
    );
    assert_eq!(
        with_call(json!({"id": "c", "type": "function", "function": {"arguments": "{}"}})),
        at(2, "tool_calls[0].function.name must be a non-empty string")
    );
    assert_eq!(
        with_call(
            json!({"id": "c", "type": "function", "function": {"name": "bash", "arguments": 1}})
        ),
        at(
            2,
            "tool_calls[0].function.arguments must be a JSON string or an object"
        )
    );
    assert_eq!(
        with_call(json!({"id": "c", "type": "function", "function": {"name": "bash"}})),
        at(
            2,
            "tool_calls[0].function.arguments must be a JSON string or an object"
        )
    );
}

#[test]
fn tool_rows_need_results() {
    let prefix = [user("a", 1), call("a", 2)];
    let rule = |row: Value| {
        let mut rows = prefix.to_vec();
        rows.push(row);
        rows_error(&rows)
    };
    let message = "tool rows need a non-empty 'tool_results' list";
    assert_eq!(
        rule(without(result("a", 3), "tool_results")),
        at(3, message)
    );
    assert_eq!(
        rule(with(result("a", 3), "tool_results", json!([]))),
        at(3, message)
    );
    assert_eq!(
        rule(with(result("a", 3), "tool_results", json!(["a.py"]))),
        at(3, "tool_results[0] must be an object")
    );
    assert_eq!(
        rule(with(
            result("a", 3),
            "tool_results",
            json!([{"content": "a.py"}])
        )),
        at(3, "tool_results[0].tool_call_id must be a non-empty string")
    );
    assert_eq!(
        rule(with(
            result("a", 3),
            "tool_results",
            json!([{"tool_call_id": "c", "content": "x"}, {"tool_call_id": "d", "content": 5}])
        )),
        at(3, "tool_results[1].content must be a string")
    );
}

#[test]
fn delay_seconds_must_be_a_non_negative_number() {
    let message = "'delay_seconds' must be a number >= 0";
    for bad in [json!(-0.5), json!("1")] {
        let rows = [
            user("a", 1),
            call("a", 2),
            with(result("a", 3), "delay_seconds", bad),
        ];
        assert_eq!(rows_error(&rows), at(3, message));
    }
}

#[test]
fn schema_generation_parameters_are_typed() {
    let rule = |key: &str, value: Value| rows_error(&[with(user("a", 1), key, value)]);
    assert_eq!(
        rule("max_new_tokens", json!(0)),
        at(
            1,
            "'max_new_tokens' must be an integer from 1 to 4294967295"
        )
    );
    assert_eq!(
        rule("max_completion_tokens", json!("64")),
        at(
            1,
            "'max_completion_tokens' must be an integer from 1 to 4294967295"
        )
    );
    assert_eq!(
        rule("temperature", json!(2.5)),
        at(1, "'temperature' must be a number from 0 to 2")
    );
    assert_eq!(
        rule("top_p", json!(1.5)),
        at(1, "'top_p' must be a number from 0 to 1")
    );
    assert_eq!(rule("seed", json!(0.5)), at(1, "'seed' must be an integer"));
    assert_eq!(rule("n", json!(0)), at(1, "'n' must be an integer >= 1"));
    assert_eq!(
        rule("stream", json!("yes")),
        at(1, "'stream' must be a boolean")
    );
    assert_eq!(rule("model", json!(1)), at(1, "'model' must be a string"));
    assert_eq!(
        rule("stop", json!(["a", 1])),
        at(1, "'stop' must be a string or a list of strings")
    );
    assert_eq!(
        rule("logit_bias", json!([])),
        at(1, "'logit_bias' must be an object")
    );
    assert_eq!(
        rule("tools", json!({"type": "function"})),
        at(1, "'tools' must be a list of objects")
    );
    assert_eq!(
        rule("system", json!(["x"])),
        at(1, "'system' must be a string")
    );
    assert_eq!(rule("name", json!(1)), at(1, "'name' must be a string"));
}
