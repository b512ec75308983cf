//! One sample's verdict, as the reference's `BFCLv4Scorer` reaches it:
//! hallucination subsets pass when the output is not native tool-call JSON;
//! every other subset goes through the extractor and BFCL's `ast_checker`
//! (an empty ground truth passes only when no call was extracted). Missing
//! samples score 0.
//!
//! Two settings, off by default, fix documented BFCL defects: ints inside
//! float arrays (`fix_int_in_float_arrays`, see [`crate::checker`]) and
//! malformed call attempts credited as abstentions
//! (`fix_malformed_abstention`, see [`call_attempt`]).

use crate::checker::{ast_checker, Call, Language, Options};
use crate::extract::{function_array, only_calls, text_calls, tool_calls_json, ModelOutput};
use crate::settings::Settings;
use pysem::chars::strip;
use pysem::json::loads;
use pysem::value::{json_string, PyErr, Value};

/// Subsets scored by the hallucination rule (the reference's
/// `CATEGORY_MAP["hallucination"]`).
pub const HALLUCINATION_SUBSETS: [&str; 2] = ["irrelevance", "live_irrelevance"];

/// The workload's `expected-json` for one sample.
#[derive(Debug, Clone)]
pub struct Expected {
    pub id: String,
    pub subset: String,
    pub category: String,
    pub language: String,
    /// The entry's `function` array, parsed with int/float kept apart.
    pub functions: Value,
    /// The answer's `ground_truth` array, or null.
    pub ground_truth: Value,
}

impl Expected {
    /// Parses the expected JSON, moving the docs and the ground truth out
    /// of the parsed document (no tree is copied).
    pub fn parse(json: &str) -> Result<Expected, String> {
        let Some(Value::Dict(mut fields)) = loads(json) else {
            return Err(if loads(json).is_some() {
                "expected-json must be an object"
            } else {
                "expected-json is not valid JSON"
            }
            .into());
        };
        // The first occurrence of a key, as `Value::get` (and Python's dict
        // of the parsed JSON) sees it.
        let mut take = |key: &str| {
            fields
                .iter_mut()
                .find(|(k, _)| k == key)
                .map(|(_, v)| std::mem::replace(v, Value::None))
        };
        let mut text = |key: &str| -> Result<String, String> {
            match take(key) {
                Some(Value::Str(s)) => Ok(s),
                _ => Err(format!("expected-json needs a string `{key}`")),
            }
        };
        let (id, subset, category, language) = (
            text("id")?,
            text("subset")?,
            text("category")?,
            text("language")?,
        );
        let functions = take("functions").ok_or("expected-json needs `functions`")?;
        Ok(Expected {
            id,
            subset,
            category,
            language,
            functions,
            ground_truth: take("ground_truth").unwrap_or(Value::None),
        })
    }

    pub fn is_hallucination(&self) -> bool {
        HALLUCINATION_SUBSETS.contains(&self.subset.as_str())
    }
}

/// The outcome for one sample.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub valid: bool,
    /// BFCL's error type; `None` when valid.
    pub error_type: Option<String>,
    pub error: Vec<Value>,
    /// The calls handed to the checker, as `[{name: args}]`.
    pub decoded: Option<Value>,
}

impl Judgement {
    fn fail(error_type: &str, message: impl Into<String>, decoded: Option<Value>) -> Judgement {
        Judgement {
            valid: false,
            error_type: Some(error_type.into()),
            error: vec![Value::Str(message.into())],
            decoded,
        }
    }

    fn pass(decoded: Option<Value>) -> Judgement {
        Judgement {
            valid: true,
            error_type: None,
            error: Vec::new(),
            decoded,
        }
    }

    fn raised(e: PyErr, stage: &str, decoded: Option<Value>) -> Judgement {
        Judgement::fail(
            &format!("{stage}_exception:{}", e.kind),
            format!("{}: {}", e.kind, e.message),
            decoded,
        )
    }

    pub fn score(&self) -> f64 {
        if self.valid {
            1.0
        } else {
            0.0
        }
    }
}

const CALLED_WHEN_NONE_EXPECTED: &str = "Valid syntax. Successfully decode AST when it should not.";

/// The error type of a malformed call attempt on a hallucination subset
/// (not BFCL's: only with `fix_malformed_abstention`).
pub const MALFORMED_CALL_ATTEMPT: &str = "irrelevance_error:malformed_call_attempt";

/// The tag Hermes-style chat templates (Qwen among them) wrap a call in.
const TOOL_CALL_TAG: &str = "<tool_call>";

/// Whether a text output (one without native tool calls) is a malformed
/// call attempt, and by which rule. The fix for BFCL issues #1362/#443,
/// applied on hallucination subsets with `fix_malformed_abstention`.
/// The output is an attempt when, in this order:
///
/// 1. `tag`: the reasoning or the content contains the literal
///    `<tool_call>` (a call the server did not parse into `tool_calls`);
/// 2. `json`: the content alone, stripped, is JSON that the extractor's
///    stage 1 (OpenAI `tool_calls`) or stage 2 (`[{"name", "arguments"}]`)
///    decodes to a call, or a single JSON object with a string `name` and an
///    `arguments` or `parameters` member;
/// 3. `text`: the content alone, stripped, is nothing but calls in BFCL's
///    prompting format (`f(a=1)`, `[f(a=1), m.g()]`: names right before
///    their balanced parentheses, comma-separated, whatever the names); or
///    the extractor's stage 3 run on the content finds, amid other text, a
///    call `f(...)` whose name is one of the entry's functions (as written,
///    with `.` as `_`, or its last dotted part, since stage 3 keeps only
///    that) and whose arguments, as stage 3 reads them, are not empty (a
///    keyword argument, or unparseable text kept as `_raw`). A stage-3
///    exception does not count.
///
/// Rules 2 and 3 read the content only: reasoning that deliberates about a
/// function is not an answer. Tool calls with unparseable arguments already
/// fail the reference's rule (any native tool call does).
pub fn call_attempt(exp: &Expected, output: &ModelOutput) -> Option<&'static str> {
    let (reasoning, content) = output.text_parts()?;
    if reasoning.contains(TOOL_CALL_TAG) || content.contains(TOOL_CALL_TAG) {
        return Some("tag");
    }
    let content = strip(content);
    if content.is_empty() {
        return None;
    }
    if tool_calls_json(content).is_some() || function_array(content).is_some() {
        return Some("json");
    }
    if let Some(v @ Value::Dict(_)) = loads(content) {
        let named = matches!(v.get("name"), Some(Value::Str(_)));
        if named && (v.get("arguments").is_some() || v.get("parameters").is_some()) {
            return Some("json");
        }
    }
    if only_calls(content) {
        return Some("text");
    }
    let offered = offered_names(&exp.functions);
    let calls = text_calls(content).ok().flatten().unwrap_or_default();
    calls
        .iter()
        .any(|c| {
            let named = matches!(&c.name, Value::Str(n) if offered.contains(n));
            let with_args = matches!(&c.arguments, Value::Dict(kv) if !kv.is_empty());
            named && with_args
        })
        .then_some("text")
}

/// Each function doc's name as written, with `.` as `_`, and its last
/// dotted part.
fn offered_names(functions: &Value) -> Vec<String> {
    let mut names = Vec::new();
    if let Value::List(docs) = functions {
        for doc in docs {
            if let Some(Value::Str(name)) = doc.get("name") {
                names.push(name.clone());
                names.push(name.replace('.', "_"));
                names.extend(name.rsplit('.').next().map(str::to_owned));
            }
        }
    }
    names
}

/// Scores one sample; `None` output means the sample never completed.
pub fn judge(exp: &Expected, output: Option<&ModelOutput>, settings: &Settings) -> Judgement {
    let Some(output) = output else {
        return Judgement::fail(
            "missing",
            "The sample was issued but never completed.",
            None,
        );
    };
    if exp.is_hallucination() {
        if output.has_native_tool_calls() {
            return Judgement::fail(
                "irrelevance_error:decoder_success",
                CALLED_WHEN_NONE_EXPECTED,
                None,
            );
        }
        if settings.fix_malformed_abstention {
            if let Some(rule) = call_attempt(exp, output) {
                return Judgement::fail(
                    MALFORMED_CALL_ATTEMPT,
                    format!(
                        "Malformed function-call attempt (rule: {rule}); not credited as an abstention."
                    ),
                    None,
                );
            }
        }
        return Judgement::pass(None);
    }
    let calls = match output.extract() {
        Ok(calls) => calls,
        Err(e) => return Judgement::raised(e, "extractor", None),
    };
    if !exp.ground_truth.truthy() {
        return if calls.is_empty() {
            Judgement::pass(None)
        } else {
            Judgement::fail(
                "irrelevance_error:decoder_success",
                CALLED_WHEN_NONE_EXPECTED,
                None,
            )
        };
    }
    // `{call["name"]: args}`, decoding a string `arguments` a second time.
    let mut bfcl_output = Vec::new();
    for call in calls {
        if matches!(call.name, Value::List(_) | Value::Dict(_)) {
            let e = PyErr::new(
                "TypeError",
                format!("unhashable type: '{}'", call.name.type_name()),
            );
            return Judgement::raised(e, "checker", None);
        }
        let args = match call.arguments {
            Value::Str(s) => loads(&s).unwrap_or(Value::Dict(Vec::new())),
            other => other,
        };
        bfcl_output.push(Call {
            name: call.name,
            args,
        });
    }
    let decoded = Some(Value::List(
        bfcl_output.iter().map(Call::as_value).collect(),
    ));
    // `is_function_calling_format_output`: every call's arguments a dict.
    if bfcl_output
        .iter()
        .any(|c| !matches!(c.args, Value::Dict(_)))
    {
        return Judgement::fail(
            "ast_decoder:decoder_wrong_output_format",
            "Did not output in the specified format. Note: the model_result is wrapped in a string to ensure json serializability.",
            decoded,
        );
    }
    let opts = Options {
        language: Language::for_subset(&exp.subset),
        underscore_to_dot: settings.underscore_to_dot,
        int_in_float_arrays: settings.fix_int_in_float_arrays,
    };
    match ast_checker(
        &exp.functions,
        &bfcl_output,
        &exp.ground_truth,
        &exp.subset,
        opts,
    ) {
        Ok(check) if check.valid => Judgement::pass(decoded),
        Ok(check) => Judgement {
            valid: false,
            error_type: check
                .error_type
                .or(Some("simple_function_checker:unclear".into())),
            error: check.error,
            decoded,
        },
        Err(e) => Judgement::raised(e, "checker", decoded),
    }
}

/// The verdict's `detail-json`.
pub fn detail_json(exp: &Expected, j: &Judgement) -> String {
    format!(
        "{{\"id\":{},\"subset\":{},\"category\":{},\"valid\":{},\"error_type\":{},\"error\":{},\"decoded\":{}}}",
        json_string(&exp.id),
        json_string(&exp.subset),
        json_string(&exp.category),
        j.valid,
        j.error_type.as_deref().map_or("null".into(), json_string),
        Value::List(j.error.clone()).to_json(),
        j.decoded.as_ref().map_or("null".into(), Value::to_json),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(subset: &str, gt: &str) -> Expected {
        let json = format!(
            r#"{{"id": "x_0", "subset": "{subset}", "category": "non_live", "language": "python",
               "functions": [{{"name": "f", "description": "", "parameters": {{"type": "dict",
               "properties": {{"a": {{"type": "float"}}}}, "required": ["a"]}}}}],
               "ground_truth": {gt}}}"#
        );
        Expected::parse(&json).unwrap()
    }

    fn tool(name: &str, args: &str) -> ModelOutput {
        ModelOutput::new("", "", vec![(name.into(), args.into())])
    }

    #[test]
    fn ast_path() {
        let s = Settings::default();
        let e = expected("simple_python", r#"[{"f": {"a": [5.0]}}]"#);
        let j = judge(&e, Some(&tool("f", r#"{"a": 5}"#)), &s);
        assert!(j.valid, "{j:?}");
        let j = judge(&e, Some(&tool("f", r#"{"a": "5"}"#)), &s);
        assert_eq!(j.error_type.as_deref(), Some("type_error:simple"));
        let j = judge(&e, Some(&tool("f", "{oops")), &s);
        assert_eq!(
            j.error_type.as_deref(),
            Some("simple_function_checker:missing_required")
        );
        let j = judge(&e, Some(&tool("f", "[1]")), &s);
        assert_eq!(
            j.error_type.as_deref(),
            Some("ast_decoder:decoder_wrong_output_format")
        );
        let j = judge(&e, Some(&ModelOutput::new("No.", "", vec![])), &s);
        assert_eq!(
            j.error_type.as_deref(),
            Some("simple_function_checker:wrong_count")
        );
        let j = judge(&e, Some(&ModelOutput::new("f(a=5.0)", "", vec![])), &s);
        assert!(j.valid);
        let j = judge(&e, None, &s);
        assert_eq!(j.error_type.as_deref(), Some("missing"));
        let d = detail_json(&e, &judge(&e, Some(&tool("f", r#"{"a": 5}"#)), &s));
        let parsed: serde_json::Value = serde_json::from_str(&d).unwrap();
        assert_eq!(parsed["decoded"], serde_json::json!([{"f": {"a": 5}}]));
        assert_eq!(parsed["error_type"], serde_json::Value::Null);
    }

    #[test]
    fn hallucination_and_empty_truth() {
        let s = Settings::default();
        let e = expected("live_irrelevance", "null");
        assert!(judge(&e, Some(&ModelOutput::new("f(a=1)", "", vec![])), &s).valid);
        assert!(!judge(&e, Some(&tool("f", "{}")), &s).valid);
        assert!(!judge(&e, None, &s).valid);
        let e = expected("live_relevance", "null");
        assert!(
            judge(
                &e,
                Some(&ModelOutput::new("nothing to call", "", vec![])),
                &s
            )
            .valid
        );
        assert!(!judge(&e, Some(&tool("f", "{}")), &s).valid);
    }

    fn text(content: &str) -> ModelOutput {
        ModelOutput::new(content, "", vec![])
    }

    #[test]
    fn malformed_abstention_fix() {
        let reference = Settings::default();
        let fixed = Settings {
            fix_malformed_abstention: true,
            ..Settings::default()
        };
        let e = expected("irrelevance", "null");
        let tagged = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>";
        let changed: [(ModelOutput, &str); 9] = [
            (text(tagged), "tag"),
            (text("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>"), "tag"),
            (ModelOutput::new("", "<tool_call>f</tool_call>", vec![]), "tag"),
            (text(r#" [{"name": "f", "arguments": {"a": 1}}] "#), "json"),
            (text(r#"{"name": "f", "arguments": {"a": 1}}"#), "json"),
            (text(r#"{"name": "other", "parameters": {}}"#), "json"),
            // Native JSON after reasoning: the reference reads reasoning +
            // content, which is not JSON, and credits it.
            (ModelOutput::new(r#"[{"function": {"name": "f", "arguments": "{}"}}]"#, "Let me call f.", vec![]), "json"),
            (text("Sure: f(a=1) should do it."), "text"),
            (text("[lookup(query='x'), g()]"), "text"),
        ];
        for (output, rule) in &changed {
            assert!(judge(&e, Some(output), &reference).valid, "{output:?}");
            let j = judge(&e, Some(output), &fixed);
            assert!(!j.valid, "{output:?}");
            assert_eq!(j.error_type.as_deref(), Some(MALFORMED_CALL_ATTEMPT));
            assert_eq!(call_attempt(&e, output), Some(*rule), "{output:?}");
        }
        let unchanged_pass = [
            text("I cannot answer that with the available functions."),
            text("The answer (as computed) is unknown."),
            text("f() cannot help here, and g(a=1) is not offered."),
            text("[1, 2]"),
            text(r#"{"name": "f"}"#),
            text(""),
            ModelOutput::new("No suitable function.", "f(a=1) would not fit", vec![]),
        ];
        for output in &unchanged_pass {
            assert!(judge(&e, Some(output), &reference).valid, "{output:?}");
            assert!(judge(&e, Some(output), &fixed).valid, "{output:?}");
        }
        // Native tool calls, parseable or not, fail either way.
        for output in [tool("f", "{oops"), tool("f", "{}")] {
            for s in [&reference, &fixed] {
                assert_eq!(
                    judge(&e, Some(&output), s).error_type.as_deref(),
                    Some("irrelevance_error:decoder_success")
                );
            }
        }
        // Dotted function names: stage 3 keeps the last part.
        let dotted = Expected::parse(
            r#"{"id": "x", "subset": "live_irrelevance", "category": "hallucination", "language": "python",
               "functions": [{"name": "weather.get_by_city", "parameters": {}}], "ground_truth": null}"#,
        )
        .unwrap();
        for content in [
            "weather.get_by_city(city='Paris')",
            "weather_get_by_city(city='Paris')",
        ] {
            assert_eq!(
                call_attempt(&dotted, &text(content)),
                Some("text"),
                "{content}"
            );
        }
        // Other subsets are untouched.
        let e = expected("simple_python", r#"[{"f": {"a": [5.0]}}]"#);
        let j = judge(&e, Some(&text(tagged)), &fixed);
        assert_eq!(
            j.error_type.as_deref(),
            judge(&e, Some(&text(tagged)), &reference)
                .error_type
                .as_deref()
        );
    }

    #[test]
    fn int_in_float_arrays_fix() {
        let json = r#"{"id": "simple_python_82", "subset": "simple_python", "category": "non_live", "language": "python",
            "functions": [{"name": "calculate_average", "parameters": {"type": "dict",
            "properties": {"numbers": {"type": "array", "items": {"type": "float"}}}, "required": ["numbers"]}}],
            "ground_truth": [{"calculate_average": {"numbers": [[12.0, 15.0, 18.0]]}}]}"#;
        let e = Expected::parse(json).unwrap();
        let reference = Settings::default();
        let fixed = Settings {
            fix_int_in_float_arrays: true,
            ..Settings::default()
        };
        let ints = tool("calculate_average", r#"{"numbers": [12, 15, 18]}"#);
        let j = judge(&e, Some(&ints), &reference);
        assert_eq!(j.error_type.as_deref(), Some("type_error:nested"));
        assert!(judge(&e, Some(&ints), &fixed).valid);
        // The decoded calls in the detail keep the model's ints.
        let d = detail_json(&e, &judge(&e, Some(&ints), &fixed));
        assert!(
            d.contains(r#""decoded":[{"calculate_average":{"numbers":[12,15,18]}}]"#),
            "{d}"
        );
        let wrong = tool("calculate_average", r#"{"numbers": [12, 15, 19]}"#);
        assert_eq!(
            judge(&e, Some(&wrong), &fixed).error_type.as_deref(),
            Some("value_error:list/tuple")
        );
        let floats = tool("calculate_average", r#"{"numbers": [12.0, 15.0, 18.0]}"#);
        assert!(judge(&e, Some(&floats), &reference).valid);
        assert!(judge(&e, Some(&floats), &fixed).valid);
    }
}
