//! Each scorer's decoding of completions: shell-iou's `json.loads` port and
//! command canonicalization, bfcl-ast's three-stage call extraction, and
//! the multi-turn scorer's step decoding (`name(k=repr(v))`, shared with the
//! bfcl-multi workload). Any completion decodes or is skipped as the
//! reference would, never a panic; and what the decoders promise holds.

use crate::{drive, json, Budget, Failure, Report, Target};
use proptest::prelude::*;
use serde_json::{json, Value};

pub const SHELL_IOU: Target = Target {
    name: "shell-iou",
    about: "shell-iou: any bash call canonicalizes; a turn scored against itself is 1",
    run: run_shell_iou,
};

pub const SHELL_IOU_JSON: Target = Target {
    name: "shell-iou-json",
    about: "shell-iou json.loads port agrees with a JSON parser on (almost) any text",
    run: run_shell_iou_json,
};

pub const BFCL_AST: Target = Target {
    name: "bfcl-ast-extract",
    about: "bfcl-ast extraction (tool calls, JSON arrays, call text) on any output",
    run: run_bfcl_ast,
};

pub const BFCL_MULTI_DECODE: Target = Target {
    name: "bfcl-multi-decode",
    about: "multi-turn step decoding: name(k=repr(v)) parses back to the same call",
    run: run_bfcl_multi_decode,
};

/// Shell-like command text: the separators, quotes, assignments and
/// wrappers the canonicalizer splits on.
fn command() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("python3.11".to_string()),
        Just("/usr/bin/GREP".into()),
        Just("sudo".into()),
        Just("env".into()),
        Just("A=1".into()),
        Just("|".into()),
        Just("||".into()),
        Just("&&".into()),
        Just(";".into()),
        Just("\n".into()),
        Just("&".into()),
        Just("'quoted | ;'".into()),
        Just("\"dq \\\" x\"".into()),
        Just("`tick`".into()),
        Just("$(ls)".into()),
        Just("2>&1".into()),
        Just("\u{a0}".into()),
        Just("\u{1c}".into()),
        "[a-z.]{1,8}",
        json::awkward_string(),
    ];
    proptest::collection::vec(token, 0..10).prop_map(|t| t.join(" "))
}

/// A call's arguments text: an object with `command` / `cmd`, or anything.
fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => command().prop_map(|c| json!({"command": c}).to_string()),
        1 => command().prop_map(|c| json!({"cmd": c}).to_string()),
        1 => (command(), json::value()).prop_map(|(c, v)| json!({"command": v, "cmd": c}).to_string()),
        1 => json::text(),
    ]
}

fn run_shell_iou(budget: Budget, seed: u64) -> Result<Report, Failure> {
    use shell_actions::canon::{Arguments, Call};
    let calls = proptest::collection::vec(
        (
            prop_oneof![3 => Just("bash".to_string()), 1 => "[a-z]{1,5}"],
            arguments(),
        ),
        0..4,
    );
    drive(
        SHELL_IOU.name,
        (calls, any::<u64>()),
        |(calls, repeat)| {
            let recorded: Vec<Value> = calls
                .iter()
                .map(|(name, args)| json!({"id": "c", "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            let expected = json!({
                "conversation_id": "django__django-1",
                "repeat": repeat % 3,
                "assistant_turn": 2,
                "tool_calls": recorded,
            })
            .to_string();
            let answer = shell_iou::turn::Answer {
                calls: calls
                    .iter()
                    .map(|(name, args)| Call {
                        name,
                        arguments: Arguments::Text(args),
                    })
                    .collect(),
                reasoning_content: "",
                content: "",
            };
            let turn = shell_iou::turn::Turn::evaluate(&expected, Some(answer))
                .map_err(|e| TestCaseError::fail(format!("a well-formed turn failed: {e}")))?;
            let score = turn.score();
            prop_assert!((0.0..=1.0).contains(&score), "score {}", score);
            if turn.exclusion().is_none() {
                prop_assert_eq!(score, 1.0, "scored against itself: {:?}", turn);
            }
            let shell_iou::turn::Truth::Coding {
                gt_actions,
                model_actions,
            } = &turn.truth
            else {
                return Err(TestCaseError::fail(format!("not a coding turn: {turn:?}")));
            };
            prop_assert_eq!(gt_actions, model_actions);
            let _ = turn.detail();
            let missing =
                shell_iou::turn::Turn::evaluate(&expected, None).map_err(TestCaseError::fail)?;
            prop_assert_eq!(missing.score(), 0.0);
            Ok(())
        },
        budget,
        seed,
    )
}

fn run_shell_iou_json(budget: Budget, seed: u64) -> Result<Report, Failure> {
    use shell_actions::command_args::{command_args, Arg};
    let text = prop_oneof![
        2 => (command(), json::value()).prop_map(|(c, v)| json!({"command": c, "x": v}).to_string()),
        2 => json::text(),
        1 => json::value().prop_map(|v| v.to_string()),
    ];
    drive(
        SHELL_IOU_JSON.name,
        text,
        |text| {
            let ours = command_args(&text);
            let theirs = serde_json::from_str::<Value>(&text);
            match &theirs {
                Ok(Value::Object(m)) => {
                    let Some(args) = ours else {
                        return Err(TestCaseError::fail("a JSON object was not decoded"));
                    };
                    let want = m.get("command").map(|v| match v {
                        Value::String(s) => Arg::Str(s.clone()),
                        other => Arg::NotStr(match other {
                            Value::Null => false,
                            Value::Bool(b) => *b,
                            Value::Number(n) => n.as_f64() != Some(0.0),
                            Value::Array(a) => !a.is_empty(),
                            Value::Object(o) => !o.is_empty(),
                            Value::String(_) => unreachable!(),
                        }),
                    });
                    prop_assert_eq!(args.command, want);
                }
                Ok(_) => prop_assert!(ours.is_none(), "a non-object decoded as arguments"),
                // Python's json.loads also takes NaN/Infinity and numbers
                // past f64 (serde_json does not): only a plain error must
                // agree.
                Err(e) if e.to_string().contains("number out of range") => {}
                Err(_) if text.contains("NaN") || text.contains("Infinity") => {}
                Err(_) => prop_assert!(ours.is_none(), "decoded what JSON refuses"),
            }
            Ok(())
        },
        budget,
        seed,
    )
}

/// Model output text that looks like calls in the ways BFCL's extractor
/// reads them, and text that does not.
fn call_text() -> impl Strategy<Value = String> {
    let arg = prop_oneof![
        Just("1".to_string()),
        Just("'x'".into()),
        Just("[1, 2.5]".into()),
        Just("{'a': None}".into()),
        Just("true".into()),
        Just("f(g(1))".into()),
        json::awkward_string(),
    ];
    let call = (
        "[a-z_][a-z_.]{0,6}",
        proptest::collection::vec(("[a-z]{1,3}", arg), 0..3),
    )
        .prop_map(|(name, args)| {
            let args: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name}({})", args.join(", "))
        });
    prop_oneof![
        3 => proptest::collection::vec(call, 0..3).prop_map(|c| format!("[{}]", c.join(", "))),
        2 => (json::awkward_string(), json::value()).prop_map(|(n, a)| {
            json!([{"name": n, "arguments": a}]).to_string()
        }),
        2 => (json::awkward_string(), json::value()).prop_map(|(n, a)| {
            json!([{"function": {"name": n, "arguments": a.to_string()}, "type": "function", "id": "x"}]).to_string()
        }),
        2 => json::text(),
        1 => json::awkward_string(),
    ]
}

fn run_bfcl_ast(budget: Budget, seed: u64) -> Result<Report, Failure> {
    use bfcl_checker::extract::ModelOutput;
    let tool_calls = proptest::collection::vec((json::awkward_string(), json::text()), 0..3);
    drive(
        BFCL_AST.name,
        (call_text(), call_text(), tool_calls),
        |(content, reasoning, tool_calls)| {
            let output = ModelOutput::new(&content, &reasoning, tool_calls.clone());
            let first = format!("{:?}", output.extract());
            let again = format!("{:?}", output.extract());
            prop_assert_eq!(first, again, "extraction is deterministic");
            let _ = output.has_native_tool_calls();
            if !tool_calls.is_empty() {
                let calls = output
                    .extract()
                    .map_err(|e| TestCaseError::fail(format!("tool calls fail: {e:?}")))?;
                prop_assert_eq!(calls.len(), tool_calls.len());
            }
            Ok(())
        },
        budget,
        seed,
    )
}

/// Argument values whose Python `repr` the call parser must read back.
fn py_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop_oneof![
            Just(1e16),
            Just(1e-7),
            Just(-0.0),
            Just(0.1),
            Just(123456789.125)
        ]
        .prop_map(Value::from),
        json::awkward_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-z]{1,4}", inner), 0..3)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn run_bfcl_multi_decode(budget: Budget, seed: u64) -> Result<Report, Failure> {
    use bfcl_multi_turn::call::{parse, Callee, Parsed};
    use bfcl_multi_turn::decode::decode_step;
    let call = (
        "[a-z_][a-z0-9_]{0,8}",
        proptest::collection::vec(("[a-z_][a-z0-9_]{0,5}", py_value()), 0..4),
    );
    drive(
        BFCL_MULTI_DECODE.name,
        (
            proptest::collection::vec(call, 0..3),
            json::awkward_string(),
            json::text(),
        ),
        |(calls, content, junk)| {
            let args: Vec<(String, String)> = calls
                .iter()
                .map(|(name, kw)| {
                    let object: serde_json::Map<String, Value> = kw.iter().cloned().collect();
                    (name.clone(), Value::Object(object).to_string())
                })
                .collect();
            let decoded = decode_step(args.iter().map(|(n, a)| (n.as_str(), a.as_str())), &content);
            if calls.is_empty() {
                prop_assert_eq!(decoded.is_ok(), content.is_empty());
                return Ok(());
            }
            let strings = decoded.map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
            for ((name, kw), s) in calls.iter().zip(&strings) {
                // A repeated key keeps its first place (the dict's order).
                let object: serde_json::Map<String, Value> = kw.iter().cloned().collect();
                let keys: Vec<&str> = object.keys().map(String::as_str).collect();
                match parse(s) {
                    Parsed::Call(Callee::Name(n), parsed) => {
                        prop_assert_eq!(&n, name, "{}", s);
                        prop_assert!(parsed.pos.is_empty(), "{}", s);
                        let got: Vec<&str> = parsed.kw.iter().map(|(k, _)| k.as_str()).collect();
                        prop_assert_eq!(got, keys, "{}", s);
                    }
                    // Python keywords cannot be argument or function names.
                    Parsed::Error(_)
                        if is_python_keyword(name)
                            || kw.iter().any(|(k, _)| is_python_keyword(k)) => {}
                    Parsed::Error(e) => return Err(TestCaseError::fail(format!("{s}: {e}"))),
                    Parsed::Unsupported(e) => {
                        return Err(TestCaseError::fail(format!("{s}: unsupported {e}")))
                    }
                    Parsed::Call(other, _) => {
                        return Err(TestCaseError::fail(format!("{s}: {other:?}")))
                    }
                }
            }
            // Arguments that are not a JSON object do not decode.
            let bad = decode_step([("f", junk.as_str())], "");
            if !matches!(serde_json::from_str::<Value>(&junk), Ok(Value::Object(_))) {
                prop_assert!(bad.is_err());
            }
            Ok(())
        },
        budget,
        seed,
    )
}

fn is_python_keyword(s: &str) -> bool {
    matches!(
        s,
        "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
            | "None"
            | "True"
            | "False"
    )
}
