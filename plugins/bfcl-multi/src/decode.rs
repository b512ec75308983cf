//! BFCL's FC decoding of one model step (`OpenAICompletionsHandler.
//! _parse_query_response_FC` then `convert_to_function_call`): each tool
//! call `{name: arguments}` becomes the call string
//! `name(k1=repr(v1),k2=repr(v2))` (arguments through `json.loads`, names as
//! the model sent them); without tool calls the step is the content, which
//! decodes to nothing when empty and fails to decode otherwise.

use crate::py::from_json;
use serde_json::Value;

/// Why a step does not decode (BFCL: an exception in `decode_execute`).
pub type DecodeError = String;

/// The call strings of one step, `Ok(vec![])` for an empty step.
pub fn decode_step<'a>(
    tool_calls: impl IntoIterator<Item = (&'a str, &'a str)>,
    content: &str,
) -> Result<Vec<String>, DecodeError> {
    let calls: Vec<(&str, &str)> = tool_calls.into_iter().collect();
    if calls.is_empty() {
        // `model_responses` is the content string: "" iterates to nothing,
        // any other text fails on `str.items()`.
        return if content.is_empty() {
            Ok(Vec::new())
        } else {
            Err("'str' object has no attribute 'items'".into())
        };
    }
    calls
        .into_iter()
        .map(|(name, arguments)| call_string(name, arguments))
        .collect()
}

/// `f"{name}({','.join(f'{k}={repr(v)}' for k, v in json.loads(arguments).items())})"`.
pub fn call_string(name: &str, arguments: &str) -> Result<String, DecodeError> {
    let v: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("arguments of {name} are not JSON: {e}"))?;
    let Value::Object(map) = v else {
        return Err(format!(
            "'{}' object has no attribute 'items'",
            match v {
                Value::Array(_) => "list",
                Value::String(_) => "str",
                Value::Bool(_) => "bool",
                Value::Null => "NoneType",
                Value::Number(n) if n.is_f64() => "float",
                _ => "int",
            }
        ));
    };
    let args: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", from_json(v).repr()))
        .collect();
    Ok(format!("{name}({})", args.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_convert_to_function_call() {
        assert_eq!(
            decode_step(
                [
                    ("cd", r#"{"folder": "doc's"}"#),
                    (
                        "add",
                        r#"{"a": 1, "b": 2.0, "c": [true, null], "d": {"x": 1e5}}"#
                    )
                ],
                "ignored"
            )
            .unwrap(),
            vec![
                "cd(folder=\"doc's\")".to_string(),
                "add(a=1,b=2.0,c=[True, None],d={'x': 100000.0})".to_string()
            ]
        );
        assert_eq!(decode_step([], "").unwrap(), Vec::<String>::new());
        assert!(decode_step([], "I am done.").is_err());
        assert!(decode_step([("ls", "not json")], "").is_err());
        assert!(decode_step([("ls", "[1]")], "").is_err());
        assert_eq!(decode_step([("pwd", "{}")], "").unwrap(), vec!["pwd()"]);
    }
}
