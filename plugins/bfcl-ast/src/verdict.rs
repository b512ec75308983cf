//! One sample's verdict, as the reference's `BFCLv4Scorer` reaches it:
//! hallucination subsets pass when the output is not native tool-call JSON;
//! every other subset goes through the extractor and BFCL's `ast_checker`
//! (an empty ground truth passes only when no call was extracted). Missing
//! samples score 0.

use crate::checker::{ast_checker, Call, Language, Options};
use crate::extract::ModelOutput;
use crate::pyjson::loads;
use crate::pyvalue::{json_string, PyErr, Value};
use crate::settings::Settings;

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
    pub fn parse(json: &str) -> Result<Expected, String> {
        let v = loads(json).ok_or("expected-json is not valid JSON")?;
        if !matches!(v, Value::Dict(_)) {
            return Err("expected-json must be an object".into());
        }
        let text = |key: &str| -> Result<String, String> {
            match v.get(key) {
                Some(Value::Str(s)) => Ok(s.clone()),
                _ => Err(format!("expected-json needs a string `{key}`")),
            }
        };
        let functions = v
            .get("functions")
            .cloned()
            .ok_or("expected-json needs `functions`")?;
        Ok(Expected {
            id: text("id")?,
            subset: text("subset")?,
            category: text("category")?,
            language: text("language")?,
            functions,
            ground_truth: v.get("ground_truth").cloned().unwrap_or(Value::None),
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
        return if output.has_native_tool_calls() {
            Judgement::fail(
                "irrelevance_error:decoder_success",
                CALLED_WHEN_NONE_EXPECTED,
                None,
            )
        } else {
            Judgement::pass(None)
        };
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
}
